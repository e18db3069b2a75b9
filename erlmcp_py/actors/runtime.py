"""The supervision tree and the runtime API on top of it.

    root Supervisor (rest_for_one, 5 restarts / 10 s)
    ├── RateLimiterActor   permanent
    ├── ValidatorActor     permanent
    └── ElicitationActor   permanent — one child task per elicitation

Actors find each other through a small registry (Erlang's registered names): each actor
registers its ref in ``init``. rest_for_one guarantees that when the rate limiter or the
validator restarts, the elicitation actor restarts after it and picks up the fresh refs.

Every runtime API call is one message to the elicitation actor's mailbox (``Runtime._call``);
:meth:`Runtime.ask` is :meth:`Runtime.create_elicitation` followed by ``handle.outcome()``.

The runtime opens the store (``RuntimeConfig.store``; ``erlmcp_py.store``) before the tree and
closes it after. An id this replica does not hold is looked up in the store
(``Runtime._elsewhere``): its status row, or a cancel, extend, complete or the hosted page's
decline or cancel forwarded to the replica that holds it. The hosted page's tickets are in
the store too (``PageRegistry``), so the page answers on every replica. The runtime is the
store's host: it runs the calls other replicas forward here.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import trio

from erlmcp_py.actors._elicitation import ElicitationActor
from erlmcp_py.actors._metrics import Metrics
from erlmcp_py.actors._ratelimiter import RateLimiterActor
from erlmcp_py.actors._record import (
    AnswerElicitation,
    CancelElicitation,
    CompleteElicitation,
    CreateElicitation,
    ExtendTimeout,
    GetElicitationStatus,
    ListElicitations,
    RepublishRecords,
    info_row,
    json_size,
)
from erlmcp_py.actors._validator import ValidatorActor
from erlmcp_py.actors.api import (
    ElicitationHandle,
    ElicitationInfo,
    ElicitationRequest,
    RuntimeConfig,
)
from erlmcp_py.actors.pages import PageRegistry
from erlmcp_py.actors.peer import Peer
from erlmcp_py.actors.urlcheck import Resolver, check_url
from erlmcp_py.core.errors import (
    AlreadyTerminal,
    ElicitationNotFound,
    RequestTooLarge,
    SchemaNotAllowed,
    StoreUnavailable,
)
from erlmcp_py.core.outcomes import Outcome, Tenant, Unsupported
from erlmcp_py.core.schema import RequestedSchema, checked_schema
from erlmcp_py.core.sensitive import DEFAULT_SENSITIVE_NAMES
from erlmcp_py.core.store_wire import CallOp
from erlmcp_py.core.typeschema import FormType, schema_for
from erlmcp_py.core.urlpolicy import UrlPolicy
from erlmcp_py.core.versions import LATEST_VERSION
from erlmcp_py.store import NoteSink, Store, open_store
from supervisors import ActorGone, ActorRef, Busy, ChildSpec, Supervisor, actor_starter

__all__ = ["RequestHandler", "Runtime", "open_runtime"]

RequestHandler = Callable[[Mapping[str, Any], NoteSink], Awaitable[Mapping[str, Any]]]
"""Answers one request another replica forwarded (:meth:`Runtime.handle_requests`): a JSON
object in, a JSON object out; what it passes to its :data:`~erlmcp_py.store.NoteSink`
meanwhile (JSON objects) reaches the caller before the answer."""


class Registry(dict[str, ActorRef]):
    """Registered names -> current actor refs; ``changed`` fires on every registration."""

    def __init__(self) -> None:
        super().__init__()
        self.changed = trio.Event()

    def __setitem__(self, name: str, ref: ActorRef) -> None:
        super().__setitem__(name, ref)
        self.changed.set()
        self.changed = trio.Event()


class Runtime:
    """The elicitation runtime's API. Get one from :func:`open_runtime`.

    Every call takes the caller's tenant; another tenant's elicitation id behaves exactly
    like an unknown id (``ElicitationNotFound``). An argument of the wrong type or value (an
    id that is not a ``str``, a tenant that is not a ``Tenant``, bad ``seconds``, content
    with no JSON encoding) is the caller's ``TypeError`` or ``ValueError``, raised before
    anything reaches the actors every user shares.

    Attributes:
        sensitive_names: The name list that makes a field sensitive (the documented list with
            the config's ``sensitive_names`` added and ``not_sensitive_names`` removed).
        pages: The hosted elicitation page's tickets (its ``base_url`` is ``None`` until a
            transport serves the page).
    """

    def __init__(
        self,
        config: RuntimeConfig,
        resolver: Resolver | None = None,
        url_policy: UrlPolicy | None = None,
    ) -> None:
        self.config = config
        self.resolver = resolver
        self.policy = config.to_policy()
        self.url_policy = url_policy or UrlPolicy(allow_http_loopback_dev=config.url_dev)
        self.sensitive_names = DEFAULT_SENSITIVE_NAMES.with_changes(
            config.sensitive_names, config.not_sensitive_names
        )
        # A ticket lives as long as the longest question it may be opened for: a secret's
        # (URL mode), or a task's form question (its link).
        self.pages = PageRegistry(
            ttl_s=max(
                max(lifecycle.url_deadline_s, lifecycle.form_deadline_s)
                + lifecycle.max_extensions * lifecycle.extension_s
                for lifecycle in (self.policy.lifecycle, self.policy.task_lifecycle)
            )
        )
        self._metrics = Metrics()
        self._registry = Registry()
        self._request_handlers: dict[str, RequestHandler] = {}
        self.store: Store  # set by open_runtime before the tree starts
        self.supervisor = Supervisor(
            [
                ChildSpec(
                    "ratelimiter",
                    actor_starter(lambda: RateLimiterActor(self.store, self._registry)),
                ),
                ChildSpec("validator", actor_starter(lambda: ValidatorActor(self._registry))),
                ChildSpec(
                    "elicitation",
                    actor_starter(
                        lambda: ElicitationActor(
                            self.policy,
                            self._registry,
                            self._metrics,
                            self.store,
                            self.url_policy,
                            self.resolver,
                            locale=config.locale,
                        )
                    ),
                ),
            ],
            strategy="rest_for_one",
            max_restarts=config.max_restarts,
            max_seconds=config.restart_period_s,
            name="erlmcp",
        )

    async def _call(self, msg: Any) -> Any:
        """Call the elicitation actor through its mailbox under the call timeout, riding
        out a restart of it (the new incarnation registers within the timeout)."""
        deadline = trio.current_time() + self.config.call_timeout_s
        while True:
            ref = self._registry["elicitation"]
            try:
                return await ref.call(msg, timeout=max(deadline - trio.current_time(), 0.001))
            except ActorGone:
                with trio.move_on_at(deadline):
                    while self._registry["elicitation"] is ref:
                        await self._registry.changed.wait()
                if self._registry["elicitation"] is ref:
                    raise

    async def create_elicitation(
        self,
        request: ElicitationRequest,
        *,
        peer: Peer,
        tenant: Tenant,
        owner: trio.lowlevel.Task | None = None,
        client_id: str | None = None,
        charge: bool = True,
        for_task: bool = False,
    ) -> ElicitationHandle:
        """Ask ``peer``'s user; return a handle whose ``outcome()`` yields exactly once.

        Args:
            request: what to ask.
            peer: the client to ask.
            tenant: the caller's scope.
            owner: the task whose exit abandons the elicitation; default: the caller.
            client_id: rate-limit key; default ``peer.peer_id``.
            charge: take a rate token; ``False`` when this client was already charged for
                this question (an MRTR replay asks it again; the pending caps still apply).
            for_task: a task asks it (the ``io.modelcontextprotocol/tasks`` extension: the
                client polls for its questions instead of holding a request open): its
                deadline and warning are the task policy's (``task_form_deadline_s``,
                ``task_url_deadline_s``, ``task_warn_before_s``), which also clamps its own
                ``timeout``.

        Raises:
            RequestTooLarge: the message (``message_bytes``) or the requestedSchema
                (``schema_bytes``, its compact JSON encoding) exceeds the size policy; the
                error names the part, its size and the limit, never the content.
            SchemaNotAllowed: the requestedSchema is not allowed for the peer's version (a
                :class:`~erlmcp_py.core.schema.RequestedSchema` checked for it, or for an
                older version, is taken as it is; any other schema is checked here).
            UnsafeURLError: URL mode with a refused URL.
            TypeError: ``request``, ``tenant``, ``owner`` or the client id (``client_id``,
                else ``peer.peer_id``: a ``str``) is of the wrong type.
            RateLimited, TooManyElicitations: the client's limits.
            StoreUnavailable: the shared store cannot admit it now.
            Busy, ActorGone, CallTimeout: the runtime cannot take the request now.
        """
        sizes = self.policy.sizes
        message_size = len(request.message.encode())
        if message_size > sizes.message_bytes:
            raise RequestTooLarge("message", message_size, sizes.message_bytes)
        schema: RequestedSchema | None = None
        if request.mode == "form":
            assert request.requested_schema is not None
            # Every way of asking (a type, a form definition, a raw schema, a request built
            # by hand) reaches the wire through here. What a type or a form builds is a
            # RequestedSchema already, checked once when it was built; a raw schema is
            # checked for the peer's version here. The record keeps the checked one.
            try:
                schema = checked_schema(request.requested_schema, _version_of(peer))
            except SchemaNotAllowed:
                # A schema over the size policy is refused for its size, allowed or not.
                size = json_size(request.requested_schema)
                if size > sizes.schema_bytes:
                    raise RequestTooLarge("requestedSchema", size, sizes.schema_bytes) from None
                raise
            if schema.size > sizes.schema_bytes:
                raise RequestTooLarge("requestedSchema", schema.size, sizes.schema_bytes)
        elif not self.pages.owns(request.url or ""):  # the server's own page needs no check
            assert request.url is not None
            url = await check_url(request.url, self.url_policy, resolver=self.resolver)
            if url != request.url:
                request = dataclasses.replace(request, url=url)
        if not peer.supports(request.mode):
            # Never a fake decline: the peer cannot be asked at all.
            self._metrics.on_unsupported(request.mode)
            await trio.lowlevel.checkpoint()
            return ElicitationHandle("", request.mode, None, Unsupported(request.mode))
        message = CreateElicitation(
            request,
            schema,
            peer,
            tenant,
            owner if owner is not None else trio.lowlevel.current_task(),
            client_id if client_id is not None else peer.peer_id,
            charge,
            for_task,
        )
        handle: ElicitationHandle = await self._call(message)
        return handle

    async def ask(
        self,
        request: ElicitationRequest | str,
        form: type[Any] | FormType[Any] | None = None,
        *,
        peer: Peer,
        tenant: Tenant,
        client_id: str | None = None,
        charge: bool = True,
        timeout: float | None = None,
    ) -> Outcome:
        """Ask and wait: :meth:`create_elicitation`, then ``await handle.outcome()``.

        The caller owns the elicitation (its exit abandons it).

        Args:
            request: an :class:`ElicitationRequest`, or the message text when ``form`` is
                given.
            form: a Python type (pydantic model, dataclass, TypedDict, or a bare field type
                such as ``bool`` or ``Literal[...]``) or a :class:`FormType`; the
                requestedSchema is built for the peer's protocol version and the answer is
                validated against it.
            peer: the client to ask.
            tenant: the caller's scope.
            client_id: rate-limit key; default ``peer.peer_id``.
            charge: as for :meth:`create_elicitation`.
            timeout: with a message text, the question's deadline in seconds
                (:attr:`ElicitationRequest.timeout`: clamped to the policy); a request
                carries its own.

        Returns:
            ``Accepted(content)`` — with ``form``, an instance of the type (or the bare
            value), made once, by the validation that ran the type's own validators; with a
            request, what its validator made of the answer (the validated dict; a
            ``FormType``'s instance) — | ``Declined`` | ``Cancelled`` | ``TimedOut`` |
            ``Unsupported`` | ``Failed(reason)``.

        Raises:
            TypeError: ``form`` cannot be a form, or is missing for a message text; ``form``
                or ``timeout`` given with a request.
            ValueError: ``timeout`` is not a positive, finite number of seconds.
            as :meth:`create_elicitation`.
        """
        if isinstance(request, ElicitationRequest):
            if form is not None or timeout is not None:
                raise TypeError(
                    "pass form and timeout only with a message text, not with a request"
                )
        else:
            if form is None:
                raise TypeError("ask(message, form): a message text needs a form type")
            form_type = form if isinstance(form, FormType) else schema_for(form)
            request = ElicitationRequest(
                request,
                "form",
                requested_schema=form_type.requested_schema(_version_of(peer)),
                validator=form_type,
                timeout=timeout,
            )
        handle = await self.create_elicitation(
            request, peer=peer, tenant=tenant, client_id=client_id, charge=charge
        )
        return await handle.outcome()

    async def get_elicitation_status(
        self, elicitation_id: str, *, tenant: Tenant
    ) -> ElicitationInfo:
        """Status of one elicitation (terminal ones stay visible for the retention period).

        Raises:
            ElicitationNotFound: unknown, evicted, or another tenant's.
            StoreUnavailable: not held here, and the shared store cannot say.
        """
        try:
            info: ElicitationInfo = await self._call(GetElicitationStatus(elicitation_id, tenant))
        except ElicitationNotFound:
            return await self._elsewhere(None, elicitation_id, tenant)
        return info

    async def list_elicitations(self, *, tenant: Tenant) -> list[ElicitationInfo]:
        """Every retained elicitation of ``tenant``, of every replica sharing the store.

        Raises:
            StoreUnavailable: the shared store cannot list the other replicas'.
        """
        rows: list[ElicitationInfo] = await self._call(ListElicitations(tenant))
        held = {row.id for row in rows}
        for record in await self.store.list_for(tenant):
            if record.row["id"] not in held:
                rows.append(ElicitationInfo(**record.row))
        return rows

    async def cancel_elicitation(self, elicitation_id: str, *, tenant: Tenant) -> ElicitationInfo:
        """Cancel (outcome ``Cancelled(by="server")``; the client is told to drop it).

        Raises:
            ElicitationNotFound, AlreadyTerminal, StoreUnavailable.
        """
        try:
            info: ElicitationInfo = await self._call(CancelElicitation(elicitation_id, tenant))
        except ElicitationNotFound:
            return await self._elsewhere("cancel", elicitation_id, tenant)
        return info

    async def complete_elicitation(
        self,
        elicitation_id: str,
        content: Mapping[str, Any] | None,
        *,
        tenant: Tenant,
        replica: str | None = None,
    ) -> ElicitationInfo:
        """Complete from the application side (URL mode: the out-of-band flow finished).

        The content is validated like a client answer. A URL-mode completion sends
        ``notifications/elicitation/complete`` to the initiating client.

        The replica holding the elicitation may be another one sharing the store: the call is
        forwarded to it; ``replica``, when the caller knows the holder (the hosted page's
        ticket names it), sends it there without looking for its row in the store.

        Raises:
            TypeError: ``content`` has no JSON encoding.
            ValidatorError: the elicitation's validator failed (raised, or returned no
                verdict); the elicitation has ended ``Failed("validator_error")``.
            ElicitationNotFound, AlreadyTerminal, ResultTooLarge, InvalidAnswer,
            StoreUnavailable.
        """
        try:
            info: ElicitationInfo = await self._call(
                CompleteElicitation(elicitation_id, tenant, content)
            )
        except ElicitationNotFound:
            return await self._elsewhere("complete", elicitation_id, tenant, content, replica)
        return info

    async def answer_elicitation(
        self, elicitation_id: str, action: str, *, tenant: Tenant, replica: str | None = None
    ) -> ElicitationInfo:
        """Decline or cancel on the user's behalf, as the client would (the hosted page's
        Reject and Cancel): the outcome is ``Declined`` or ``Cancelled(by="client")``.

        The replica holding the elicitation may be another one sharing the store: the call is
        forwarded to it (to ``replica`` at once when the caller knows it holds it).

        Raises:
            ValueError: ``action`` is neither ``"decline"`` nor ``"cancel"``.
            ElicitationNotFound, AlreadyTerminal, AnswerInFlight, StoreUnavailable.
        """
        message = AnswerElicitation(elicitation_id, tenant, action)
        try:
            info: ElicitationInfo = await self._call(message)
        except ElicitationNotFound:
            return await self._elsewhere("answer", elicitation_id, tenant, action, replica)
        return info

    async def extend_timeout(
        self, elicitation_id: str, *, tenant: Tenant, seconds: float | None = None
    ) -> ElicitationInfo:
        """Move the deadline (bounded by policy: at most ``max_extensions`` times ``extension_s``).

        Raises:
            TypeError, ValueError: ``seconds`` is not ``None`` or a positive, finite number.
            ElicitationNotFound, AlreadyTerminal, ExtensionDenied, StoreUnavailable.
        """
        try:
            info: ElicitationInfo = await self._call(ExtendTimeout(elicitation_id, tenant, seconds))
        except ElicitationNotFound:
            return await self._elsewhere("extend", elicitation_id, tenant, seconds)
        return info

    async def time_left(
        self, elicitation_id: str, *, tenant: Tenant, replica: str
    ) -> tuple[str, float]:
        """The status of an elicitation held by ``replica`` (this one or another sharing the
        store) and its seconds left, measured on the holder's clock (the hosted page's
        countdown, wherever the page is served).

        Raises:
            ElicitationNotFound: unknown, or another tenant's.
            StoreUnavailable: another replica holds it, and neither it nor the store answers.
        """
        if replica == self.store.replica:
            info: ElicitationInfo = await self._call(GetElicitationStatus(elicitation_id, tenant))
            return str(info.status), float(info.deadline - trio.current_time())
        try:
            row = await self.store.forward(replica, "left", elicitation_id, tenant, None)
        except StoreUnavailable:
            record = await self.store.find(elicitation_id, tenant)  # its holder is gone?
            if record is None or not record.terminal:
                raise
            return str(record.row["status"]), 0.0
        return str(row["status"]), float(row["left"])

    async def _elsewhere(
        self,
        op: CallOp | None,
        elicitation_id: str,
        tenant: Tenant,
        argument: Any = None,
        holder: str | None = None,
    ) -> ElicitationInfo:
        """An id this replica does not hold: its row in the store (``op`` ``None``), or the
        call forwarded to the replica that holds it. A ``holder`` the caller names gets the
        call at once: the store's row is written a moment after each change, so a call made
        just after the elicitation began may find none there yet."""
        if op is not None and holder is not None and holder != self.store.replica:
            try:
                row = await self.store.forward(holder, op, elicitation_id, tenant, argument)
            except StoreUnavailable:
                record = await self.store.find(elicitation_id, tenant)  # its holder is gone?
                if record is None or not record.terminal:
                    raise  # or not listening yet: the caller may try again
                raise AlreadyTerminal(str(record.row["status"])) from None
            return ElicitationInfo(**row)
        record = await self.store.find(elicitation_id, tenant)
        if record is None:
            raise ElicitationNotFound(elicitation_id)
        if op is None:
            return ElicitationInfo(**record.row)
        if record.replica == self.store.replica:  # ours, and no longer held
            raise ElicitationNotFound(elicitation_id)
        if record.terminal:
            raise AlreadyTerminal(str(record.row["status"]))
        row = await self.store.forward(record.replica, op, elicitation_id, tenant, argument)
        return ElicitationInfo(**row)

    async def forwarded(
        self, op: CallOp, elicitation_id: str, tenant: Tenant, argument: Any
    ) -> Mapping[str, Any]:
        """Run a call another replica forwarded here (the store's host)."""
        message: CancelElicitation | ExtendTimeout | CompleteElicitation | AnswerElicitation
        if op == "cancel":
            message = CancelElicitation(elicitation_id, tenant)
        elif op == "extend":
            message = ExtendTimeout(elicitation_id, tenant, argument)
        elif op == "left":
            status, left = await self.time_left(
                elicitation_id, tenant=tenant, replica=self.store.replica
            )
            return {"status": status, "left": left}
        elif op == "answer":
            message = AnswerElicitation(elicitation_id, tenant, argument)
        else:
            message = CompleteElicitation(elicitation_id, tenant, argument)
        info: ElicitationInfo = await self._call(message)
        return info_row(info)

    def handle_requests(self, kind: str, handler: RequestHandler | None) -> None:
        """Answer the requests of ``kind`` other replicas forward here with ``handler``
        (``None``: stop). What a layer above the runtime keeps in this process's memory (a
        gateway's 2026-07-28 calls) is reached this way from the replica a request landed on
        (:meth:`forward_request`)."""
        if handler is None:
            self._request_handlers.pop(kind, None)
        else:
            self._request_handlers[kind] = handler

    async def forward_request(
        self,
        replica: str,
        kind: str,
        request: Mapping[str, Any],
        timeout_s: float,
        on_note: NoteSink | None = None,
    ) -> Mapping[str, Any]:
        """Send ``request`` to the handler of ``kind`` on ``replica`` (this one included) and
        return its answer, waiting at most ``timeout_s``. The notes the handler sends
        meanwhile reach ``on_note`` (a sync call that never blocks), in order, before the
        answer: called by the handler itself on this replica, carried by the store from
        another, where a note that cannot be carried is dropped
        (:meth:`~erlmcp_py.store.Store.forward_request`); without ``on_note`` they are
        dropped.

        Raises:
            StoreUnavailable: the replica is gone or unreachable, did not answer in time, or
                has no handler of ``kind``; with the embedded store, any other replica.
        """
        if replica == self.store.replica:
            handler = self._request_handlers.get(kind)
            if handler is None:
                raise StoreUnavailable(f"forward: no handler of {kind[:40]} here")
            with trio.move_on_after(timeout_s):
                return await handler(request, on_note or _no_note)
            raise StoreUnavailable("forward: no answer in time")
        message = {"to": kind, "body": dict(request)}
        return await self.store.forward_request(replica, message, timeout_s, on_note)

    async def forwarded_request(
        self, request: Mapping[str, Any], note: NoteSink
    ) -> Mapping[str, Any]:
        """Answer a request another replica forwarded here (the store's host); ``note``
        carries the handler's notes to the caller.

        Raises:
            LookupError: no handler takes its kind.
        """
        handler = self._request_handlers.get(str(request.get("to")))
        body = request.get("body")
        if handler is None or not isinstance(body, Mapping):
            raise LookupError(f"no handler of {str(request.get('to'))[:40]}")
        return await handler(body, note)

    def rejoined(self) -> None:
        """The store lost this replica's records: the elicitation actor publishes them all."""
        with contextlib.suppress(Busy, ActorGone, KeyError):
            self._registry["elicitation"].cast(RepublishRecords())

    def metrics(self) -> dict[str, Any]:
        """Counters per outcome and mode, the pending gauge, the human-latency histogram,
        and the store's (``store``: kind, availability, errors by operation)."""
        snapshot = self._metrics.snapshot()
        snapshot["store"] = self.store.stats()
        return snapshot

    def actor(self, name: str) -> ActorRef:
        """The current ref of ``ratelimiter``, ``validator`` or ``elicitation`` (for ops/tests)."""
        return self._registry[name]


def _no_note(note: Mapping[str, Any]) -> None:
    """The notes of a forwarded request whose caller takes none."""


def _version_of(peer: Peer) -> str:
    """The peer's protocol version; a peer without one (not an MCP client) gets the newest
    requestedSchema subset."""
    version: str | None = getattr(peer, "protocol_version", None)
    return version or LATEST_VERSION


@asynccontextmanager
async def open_runtime(
    config: RuntimeConfig | Mapping[str, Any] | None = None,
    *,
    resolver: Resolver | None = None,
    url_policy: UrlPolicy | None = None,
) -> AsyncIterator[Runtime]:
    """Start the supervision tree; stop it (in reverse order) when the block exits.

    Args:
        config: a :class:`RuntimeConfig`, a mapping of its fields, or ``None`` for defaults.
        resolver: host-name resolver for URL checks (default: the system's, via trio).
        url_policy: the policy of every URL check the runtime makes (the URL of a URL-mode
            request, the ``url`` fields of an answer); default: ``https`` to public hosts,
            with ``http`` to loopback hosts when ``config.url_dev``.

    Raises:
        pydantic.ValidationError: the configuration is invalid (raised before anything starts).
    """
    if not isinstance(config, RuntimeConfig):
        config = RuntimeConfig.model_validate(dict(config or {}))
    runtime = Runtime(config, resolver, url_policy)
    async with open_store(
        config.store,
        policy=runtime.policy,
        host=runtime,
        call_timeout_s=config.call_timeout_s,
    ) as store:
        runtime.store = store
        runtime.pages.store = store
        async with trio.open_nursery() as nursery:
            await nursery.start(runtime.supervisor.run)
            try:
                yield runtime
            finally:
                runtime.supervisor.request_stop()
