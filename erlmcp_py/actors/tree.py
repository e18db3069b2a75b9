"""The supervision tree (DESIGN.md §2) and the runtime API on top of it.

    root Supervisor (rest_for_one, 5 restarts / 10 s)
    ├── RateLimiterActor   permanent
    ├── ValidatorActor     permanent
    └── ElicitationActor   permanent — one child task per elicitation

Actors find each other through a small registry (Erlang's registered names): each actor
registers its ref in ``init``. rest_for_one guarantees that when the rate limiter or the
validator restarts, the elicitation actor restarts after it and picks up the fresh refs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import trio

from erlmcp_py.actors.api import (
    ElicitationHandle,
    ElicitationInfo,
    ElicitationRequest,
    RuntimeConfig,
)
from erlmcp_py.actors.elicitation import (
    CancelIt,
    CompleteIt,
    Create,
    ElicitationActor,
    ExtendIt,
    GetStatus,
    ListAll,
    Record,
)
from erlmcp_py.actors.metrics import Metrics
from erlmcp_py.actors.peer import Peer
from erlmcp_py.actors.ratelimiter import RateLimiterActor
from erlmcp_py.actors.urlcheck import Resolver, check_url
from erlmcp_py.actors.validator import ValidatorActor
from erlmcp_py.core.errors import RequestTooLarge
from erlmcp_py.core.outcomes import Outcome, Tenant, Unsupported
from erlmcp_py.core.schema import FrozenDict, check_requested_schema
from erlmcp_py.core.urlpolicy import UrlPolicy
from supervisors import ActorGone, ActorRef, ChildSpec, Supervisor, actor_starter

__all__ = ["Runtime", "open_runtime"]


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
    like an unknown id (``ElicitationNotFound``).
    """

    def __init__(self, config: RuntimeConfig, resolver: Resolver | None = None) -> None:
        self.config = config
        self.resolver = resolver
        self.policy = config.to_policy()
        self.url_policy = UrlPolicy(allow_http_loopback_dev=config.url_dev)
        self._metrics = Metrics()
        self._registry = Registry()
        self._checked: set[tuple[str, str]] = set()
        self.supervisor = Supervisor(
            [
                ChildSpec(
                    "ratelimiter",
                    actor_starter(lambda: RateLimiterActor(self.policy.rate, self._registry)),
                ),
                ChildSpec("validator", actor_starter(lambda: ValidatorActor(self._registry))),
                ChildSpec(
                    "elicitation",
                    actor_starter(
                        lambda: ElicitationActor(
                            self.policy,
                            self._registry,
                            self._metrics,
                            self.url_policy,
                            self.resolver,
                        )
                    ),
                ),
            ],
            strategy="rest_for_one",
            max_restarts=config.max_restarts,
            max_seconds=config.restart_period_s,
            name="erlmcp",
        )

    def _check_schema(self, schema: Mapping[str, Any], version: str) -> None:
        """``check_requested_schema``, remembered for frozen schemas (the ones built from
        types and forms, reused on every call) so the hot path does not walk them again."""
        if type(schema) is FrozenDict:
            key = (schema.digest, version)
            if key in self._checked:
                return
            check_requested_schema(schema, version)
            if len(self._checked) >= 4096:
                self._checked.clear()
            self._checked.add(key)
        else:
            check_requested_schema(schema, version)

    async def _call(self, msg: Any, *, schedule_point: bool = True) -> Any:
        """Call the elicitation actor, riding out one restart of it.

        An idle actor answers inline (``call_nowait``: same turn, no task switch); a busy
        one through its mailbox under the call timeout. ``schedule_point=False``: the caller
        yields right after anyway, so an inline answer skips its own.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        try:
            reply = self._registry["elicitation"].call_nowait(msg)
        except (trio.WouldBlock, ActorGone):
            return await self._call_mailbox(msg)  # busy, or restarting: wait for it
        if not schedule_point:
            return reply
        # A schedule point, as every trio call is: a loop of creates must not starve the
        # other tasks (the new child takes its first turn). Shielded: what was done is
        # done, and the caller gets its reply.
        await trio.lowlevel.cancel_shielded_checkpoint()
        return reply

    async def _call_mailbox(self, msg: Any) -> Any:
        """:meth:`_call` through the mailbox, under the call timeout, riding out one restart."""
        deadline = trio.current_time() + self.config.call_timeout_s
        while True:
            ref = self._registry["elicitation"]
            try:
                return await ref.call(msg, timeout=max(deadline - trio.current_time(), 0.001))
            except ActorGone:
                # Restarting: wait for the new incarnation to register, within our timeout.
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
    ) -> ElicitationHandle:
        """Ask ``peer``'s user; return a handle whose ``outcome()`` yields exactly once.

        Args:
            request: what to ask.
            peer: the client to ask.
            tenant: the caller's scope.
            owner: the task whose exit abandons the elicitation; default: the caller.
            client_id: rate-limit key; default ``peer.peer_id``.

        Raises:
            RequestTooLarge: the message exceeds the size policy.
            SchemaNotAllowed: the requestedSchema is not allowed for the peer's version.
            UnsafeURLError: URL mode with a refused URL.
            RateLimited, TooManyElicitations: the client's limits.
        """
        return await self._create(request, peer, tenant, owner, client_id)

    def _check_size(self, request: ElicitationRequest) -> None:
        sizes = self.policy.sizes
        message_size = len(request.message.encode())
        if message_size > sizes.message_bytes:
            raise RequestTooLarge("message", message_size, sizes.message_bytes)

    def _create_message(
        self,
        request: ElicitationRequest,
        peer: Peer,
        tenant: Tenant,
        owner: trio.lowlevel.Task | None,
        client_id: str | None,
        watch_owner: bool,
    ) -> Create | None:
        """The actor's ``Create`` for a checked request; ``None`` (counted) when the peer
        cannot be asked at all — never a fake decline."""
        if not peer.supports(request.mode):
            self._metrics.on_unsupported(request.mode)
            return None
        return Create(
            request,
            peer,
            tenant,
            owner if owner is not None else trio.lowlevel.current_task(),
            client_id if client_id is not None else peer.peer_id,
            watch_owner,
        )

    async def _create(
        self,
        request: ElicitationRequest,
        peer: Peer,
        tenant: Tenant,
        owner: trio.lowlevel.Task | None,
        client_id: str | None,
        *,
        ask: bool = False,
    ) -> ElicitationHandle:
        self._check_size(request)
        if request.mode == "form":
            assert request.requested_schema is not None
            self._check_schema(request.requested_schema, peer.protocol_version)
        else:
            assert request.url is not None
            url = await check_url(request.url, self.url_policy, resolver=self.resolver)
            if url != request.url:
                request = ElicitationRequest(
                    request.message, "url", url=url, validator=request.validator
                )
        msg = self._create_message(request, peer, tenant, owner, client_id, not ask)
        if msg is None:
            return ElicitationHandle("", request.mode, None, Unsupported(request.mode))
        handle: ElicitationHandle = await self._call(
            msg,
            schedule_point=not ask,  # ask parks on the outcome right after: that is its yield
        )
        return handle

    async def ask(
        self,
        request: ElicitationRequest,
        *,
        peer: Peer,
        tenant: Tenant,
        client_id: str | None = None,
    ) -> Outcome:
        """``create_elicitation`` and ``await handle.outcome()`` in one call; the caller owns it.

        For a caller that waits at once (``Context.elicit``). While it waits here it cannot
        exit, so its exit is watched only if it stops waiting (cancelled: it may be on its
        way out) — from then on exactly as ``create_elicitation`` watches it. That saves the
        owner-watcher task of a one-question tool call.

        Raises:
            as :meth:`create_elicitation`.
        """
        if request.mode != "form":  # URL checks await the resolver: the general path
            handle = await self._create(request, peer, tenant, None, client_id, ask=True)
            try:
                return await handle.outcome()
            except BaseException:
                if handle._record is not None:
                    handle._record.watch_owner()
                raise
        # A form: _create and _call written out, and the wait on the record itself (an
        # inline create answers with the Record, not a handle): no coroutine, handle or
        # outcome() layer per question — this is every Context.elicit.
        self._check_size(request)
        assert request.requested_schema is not None
        self._check_schema(request.requested_schema, peer.protocol_version)
        task = trio.lowlevel.current_task()  # the owner, and the waiter
        msg = self._create_message(request, peer, tenant, task, client_id, False)
        if msg is None:
            await trio.lowlevel.checkpoint()
            return Unsupported("form")
        await trio.lowlevel.checkpoint_if_cancelled()
        try:
            record: Record = self._registry["elicitation"].call_nowait(msg)
        except (trio.WouldBlock, ActorGone):
            record = (await self._call_mailbox(msg))._record  # watched from the start
        try:
            if record.outcome is None:
                # Parked as the record's one asker (it made the record; no waiters list, no
                # abort closure): the Resolve effect reschedules it.
                record.asker = task
                await trio.lowlevel.wait_task_rescheduled(record._abort_ask)
            else:
                await trio.lowlevel.checkpoint()
        except BaseException:
            record.watch_owner()  # see the docstring
            raise
        outcome = record.outcome
        assert outcome is not None
        return outcome

    async def get_elicitation_status(
        self, elicitation_id: str, *, tenant: Tenant
    ) -> ElicitationInfo:
        """Status of one elicitation (terminal ones stay visible for the retention period).

        Raises:
            ElicitationNotFound: unknown, evicted, or another tenant's.
        """
        info: ElicitationInfo = await self._call(GetStatus(elicitation_id, tenant))
        return info

    async def list_elicitations(self, *, tenant: Tenant) -> list[ElicitationInfo]:
        """Every retained elicitation of ``tenant``."""
        rows: list[ElicitationInfo] = await self._call(ListAll(tenant))
        return rows

    async def cancel_elicitation(self, elicitation_id: str, *, tenant: Tenant) -> ElicitationInfo:
        """Cancel (outcome ``Cancelled(by="server")``; the client is told to drop it).

        Raises:
            ElicitationNotFound, AlreadyTerminal.
        """
        info: ElicitationInfo = await self._call(CancelIt(elicitation_id, tenant))
        return info

    async def complete_elicitation(
        self, elicitation_id: str, content: Mapping[str, Any] | None, *, tenant: Tenant
    ) -> ElicitationInfo:
        """Complete from the application side (URL mode: the out-of-band flow finished).

        The content is validated like a client answer. A URL-mode completion sends
        ``notifications/elicitation/complete`` to the initiating client.

        Raises:
            ElicitationNotFound, AlreadyTerminal, ResultTooLarge, InvalidAnswer.
        """
        info: ElicitationInfo = await self._call(CompleteIt(elicitation_id, tenant, content))
        return info

    async def extend_timeout(
        self, elicitation_id: str, *, tenant: Tenant, seconds: float | None = None
    ) -> ElicitationInfo:
        """Move the deadline (bounded by policy: at most ``max_extensions`` times ``extension_s``).

        Raises:
            ElicitationNotFound, AlreadyTerminal, ExtensionDenied.
        """
        info: ElicitationInfo = await self._call(ExtendIt(elicitation_id, tenant, seconds))
        return info

    def metrics(self) -> dict[str, Any]:
        """Counters per outcome and mode, the pending gauge, the human-latency histogram."""
        return self._metrics.snapshot()

    def actor(self, name: str) -> ActorRef:
        """The current ref of ``ratelimiter``, ``validator`` or ``elicitation`` (for ops/tests)."""
        return self._registry[name]


@asynccontextmanager
async def open_runtime(
    config: RuntimeConfig | Mapping[str, Any] | None = None,
    *,
    resolver: Resolver | None = None,
) -> AsyncIterator[Runtime]:
    """Start the supervision tree; stop it (in reverse order) when the block exits.

    Args:
        config: a :class:`RuntimeConfig`, a mapping of its fields, or ``None`` for defaults.
        resolver: host-name resolver for URL checks (default: the system's, via trio).

    Raises:
        pydantic.ValidationError: the configuration is invalid (raised before anything starts).
    """
    if not isinstance(config, RuntimeConfig):
        config = RuntimeConfig.model_validate(dict(config or {}))
    runtime = Runtime(config, resolver)
    async with trio.open_nursery() as nursery:
        await nursery.start(runtime.supervisor.run)
        try:
            yield runtime
        finally:
            runtime.supervisor.request_stop()
