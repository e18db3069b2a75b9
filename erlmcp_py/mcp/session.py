"""One client connection of the session era (2025-06-18, 2025-11-25), on trio.

Theory of operation
-------------------
A transport feeds every inbound frame to :meth:`ServerSession.feed` from its reader task and
gives the session one ``send(frame)`` coroutine. ``feed`` never waits on a tool: a
``tools/call`` is checked, then started as its own task in the session's nursery (that task is
the *owner* of the elicitations it creates), and ``feed`` returns. Everything else is answered
at once.

Phases: ``new`` (only ``initialize`` and ``ping``) → ``initializing`` (answered ``initialize``;
client requests are served, but no server→client request is sent) → ``ready`` (after
``notifications/initialized``) → ``closed`` (transport EOF or error).

Our own requests (``elicitation/create``, sent by the runtime through the :class:`Peer`
interface) are correlated in ``_pending`` by the id the runtime chose. A response whose id is
not there — unknown, duplicate, late after a timeout — is logged and dropped. When the
session closes, every tool task is cancelled (so the runtime's owner watch ends their
elicitations ``abandoned``) and every pending callback gets :class:`PeerGone`.

``resources/read``, ``prompts/get`` and ``completion/complete`` (and the lists) call
application functions, so they run as tasks too (:mod:`~erlmcp_py.mcp._features` answers them);
a prompt function that takes a ``Context`` asks the client through this session, as a tool
does, related to its ``prompts/get``;
``resources/subscribe`` and ``unsubscribe`` only touch this session's set of subscribed URIs,
which :meth:`ServerSession.resource_updated` consults.

Cancellation both ways: a client ``notifications/cancelled`` naming an in-flight
``tools/call`` (or another request running as a task) cancels that task and no response is
sent; the runtime sends
``notifications/cancelled`` for its own requests through :meth:`send_notification`.
"""

from __future__ import annotations

import itertools
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from contextlib import AbstractContextManager, asynccontextmanager, nullcontext, suppress
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final

import structlog
import trio

from erlmcp_py.actors.peer import AnswerTooLarge, PeerError, PeerGone, PeerResponse
from erlmcp_py.actors.runtime import Runtime
from erlmcp_py.core.i18n import LOCALE_META_KEY, client_locale
from erlmcp_py.mcp import _features as features, jsonrpc
from erlmcp_py.mcp._tools import ToolSpec
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.errors import UrlElicitationRequired
from erlmcp_py.mcp.jsonrpc import (
    ErrorResponse,
    JsonRpcError,
    Notification,
    Params,
    Request,
    RequestId,
    Response,
)
from erlmcp_py.mcp.meta import request_meta
from erlmcp_py.mcp.params import (
    LOG_LEVELS,
    CallToolParams,
    CancelledParams,
    InitializeParams,
    ListToolsParams,
    ProgressParams,
    SetLevelParams,
    parse_params,
)
from erlmcp_py.mcp.stateless import SessionStateless, open_for_session
from erlmcp_py.mcp.stopwatch import ToolClock, run_tool
from erlmcp_py.mcp.versions import ClientCapabilities, negotiate_version

if TYPE_CHECKING:
    from erlmcp_py.core.outcomes import Tenant
    from erlmcp_py.mcp.server import Server

__all__ = ["RELATED_REQUEST", "RequestPeer", "ServerSession", "open_session"]

log = structlog.get_logger("erlmcp.session")

Send = Callable[[bytes], Awaitable[None]]

#: The client request the frame being written relates to, as a transport's ``send`` sees it:
#: set by :class:`RequestPeer` while it writes (the runtime's elicitation tasks) and inherited
#: by tool tasks from the task that fed their ``tools/call`` (Streamable HTTP sets it there).
RELATED_REQUEST: ContextVar[RequestId | None] = ContextVar("erlmcp_related_request", default=None)

NEW: Final = "new"
INITIALIZING: Final = "initializing"
READY: Final = "ready"
CLOSED: Final = "closed"

#: How many URIs one session may be subscribed to at once.
MAX_SUBSCRIPTIONS: Final = 1024

_session_numbers = itertools.count(1)

#: What a transport's send raises when the connection is gone.
_TRANSPORT_ERRORS: Final = (trio.BrokenResourceError, trio.ClosedResourceError, OSError)


class _Call:
    """One in-flight request running as its own task (``tools/call``, ``resources/read``…)."""

    __slots__ = ("cancelled_by_client", "scope")

    def __init__(self) -> None:
        self.scope = trio.CancelScope()
        self.cancelled_by_client = False


class ServerSession:
    """A client connection; implements the runtime's ``Peer`` interface.

    Create with :func:`open_session`. Attributes are read-only for users.

    Attributes:
        protocol_version: Negotiated version (``""`` before ``initialize``).
        client_capabilities: What the client declared.
        client_info: ``clientInfo`` as sent.
        phase: ``new``, ``initializing``, ``ready`` or ``closed``.
        log_level: Minimum level of ``notifications/message`` sent to the client.
        subscriptions: URIs the client subscribed to (``resources/subscribe``).
        user: The authenticated user of the connection when its transport knows one.
        client_key: The key of the runtime's per-client limits (elicitation rate, pending
            count) for this session's elicitations: the session's id, unless the transport
            names the client (over HTTP, its principal, so that several sessions share them).
        locale: The language the client asked for, decided at ``initialize``: the one its
            ``_meta`` declares under :data:`~erlmcp_py.core.i18n.LOCALE_META_KEY`, else the
            ``Accept-Language`` of the HTTP request that opened the session; ``None`` when
            neither names ``en-US`` or ``pt-BR`` (the runtime's default applies).
    """

    def __init__(
        self,
        server: Server,
        runtime: Runtime,
        send: Send,
        nursery: trio.Nursery,
        *,
        peer_id: str | None = None,
        max_frame_bytes: int = jsonrpc.MAX_FRAME_BYTES,
        user: str | None = None,
        client_key: str | None = None,
        continuations: Mapping[str, Any] | None = None,
        accept_language: str | None = None,
    ) -> None:
        self._server = server
        self._accept_language = accept_language
        self.locale: str | None = client_locale(None, accept_language)
        self.user = user
        self._continuations = dict(continuations or {})
        self._runtime = runtime
        self._send = send
        self._nursery = nursery
        self._peer_id = peer_id or f"session-{next(_session_numbers)}-{secrets.token_hex(4)}"
        self.client_key = client_key or self._peer_id
        self.max_frame_bytes = max_frame_bytes
        self.protocol_version = ""
        self.client_capabilities = ClientCapabilities()
        self.client_info: Mapping[str, Any] = {}
        self.phase = NEW
        self.log_level = "info"
        self.subscriptions: set[str] = set()
        self._initialized = trio.Event()
        self._closed = trio.Event()
        self._write_lock = trio.Lock()
        self._pending: dict[RequestId, Callable[[PeerResponse], None]] = {}
        self._calls: dict[RequestId, _Call] = {}
        self._stopping = False  # stop_calls(): the server is shutting down
        self._calls_ended: list[trio.Event] = []  # given by calls_ended(), set at zero calls
        self._tenant: Tenant | None = None
        self._stateless: SessionStateless | None = None  # 2026-07-28 requests (mcp/stateless)
        self._log = log.bind(peer=self._peer_id)

    # -- Peer ---------------------------------------------------------------------------------

    @property
    def peer_id(self) -> str:
        """Stable id of this connection (the default rate-limit key)."""
        return self._peer_id

    def supports(self, mode: str) -> bool:
        """Whether the client declared elicitation in ``mode``."""
        return self.client_capabilities.supports(mode)

    @property
    def tenant(self) -> Tenant:
        """The tenant scope of this client (from ``Server(tenant=...)``)."""
        if self._tenant is None:
            self._tenant = self._server.tenant_for(self)
        return self._tenant

    @property
    def closed(self) -> bool:
        """True once the transport is gone."""
        return self.phase == CLOSED

    @property
    def working(self) -> bool:
        """Whether a request of the client is being served (a call running: ``tools/call``,
        ``prompts/get``, ``resources/read``…, with whatever it waits for) or a request of the
        server awaits the client's answer (``elicitation/create``, sampling, roots)."""
        return bool(self._calls) or bool(self._pending)

    async def send_request(
        self,
        method: str,
        params: Mapping[str, Any],
        *,
        request_id: str,
        on_response: Callable[[PeerResponse], None],
    ) -> None:
        """Send a server→client request (waits for ``notifications/initialized`` first).

        Raises:
            PeerGone: the session is closed, or closed while waiting; nothing was sent.
        """
        if self.phase != READY:
            await self._wait_ready()
        frame = self._request_frame(request_id, method, params)
        self._pending[request_id] = on_response
        try:
            await self._write(frame)
        except BaseException:
            self._pending.pop(request_id, None)
            raise

    def _request_frame(self, request_id: str, method: str, params: Mapping[str, Any]) -> bytes:
        if request_id in self._pending:
            raise ValueError(f"request id {request_id!r} is already pending")
        return jsonrpc.encode_request(request_id, method, dict(params))

    def forget_request(self, request_id: str) -> None:
        """Stop waiting for ``request_id``; a later answer is ignored."""
        self._pending.pop(request_id, None)

    async def send_notification(self, method: str, params: Mapping[str, Any]) -> None:
        """Send a notification to this client. A checkpoint whatever the transport, and whether
        or not the log level lets the message through: a tool that reports progress in a loop
        stays cancellable and lets other tasks run. As in trio's own operations, cancellation
        is checked before the frame is written and the yield comes after it, so the frame
        keeps its place among the writes of other tasks.

        Raises:
            PeerGone: the session is closed.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        if method != "notifications/message" or self._level_enabled(params.get("level")):
            await self._write(jsonrpc.encode_notification(method, dict(params)))
        await trio.lowlevel.cancel_shielded_checkpoint()

    async def send_raw(self, frame: bytes) -> None:
        """Write an already encoded frame (e.g. a transport-level refusal).

        Raises:
            PeerGone: the session is closed.
        """
        await self._write(frame)

    async def notify(self, method: str, params: Mapping[str, Any]) -> None:
        """Like :meth:`send_notification`, but silently drops it when the client is gone."""
        with suppress(PeerGone):
            await self.send_notification(method, params)

    async def resource_updated(self, uri: str) -> bool:
        """Send ``notifications/resources/updated`` if the client subscribed to ``uri``.

        The notification relates to no request of this client (on Streamable HTTP it goes on
        the GET stream). Returns whether it was sent (best effort: False when not subscribed,
        not yet initialized, or gone).
        """
        if uri not in self.subscriptions or self.phase != READY:
            return False
        token = RELATED_REQUEST.set(None)
        try:
            await self.send_notification("notifications/resources/updated", {"uri": uri})
        except PeerGone:
            return False
        finally:
            RELATED_REQUEST.reset(token)
        return True

    # -- plumbing -----------------------------------------------------------------------------

    def _level_enabled(self, level: object) -> bool:
        if level not in LOG_LEVELS:
            return True
        return LOG_LEVELS.index(str(level)) >= LOG_LEVELS.index(self.log_level)

    async def _wait_ready(self) -> None:
        if self.phase == CLOSED:
            raise PeerGone("session closed")
        async with trio.open_nursery() as nursery:

            async def closed() -> None:
                await self._closed.wait()
                nursery.cancel_scope.cancel()

            nursery.start_soon(closed)
            await self._initialized.wait()
            nursery.cancel_scope.cancel()
        if self.phase == CLOSED:
            raise PeerGone("session closed")

    async def _write(self, frame: bytes) -> None:
        """Write one frame; frames go out one at a time, in the order their writers took the
        write lock.

        A writer that finds the lock free and nobody waiting takes it without yielding: the
        transport's ``send`` is the write's only yield (a stream or channel send is a
        checkpoint; Streamable HTTP's routing to a queued stream never blocks). Otherwise it
        waits its turn; the lock passes to the longest waiter when released.

        Raises:
            PeerGone: the session is closed, or the transport failed (the session closes).
        """
        if self.phase == CLOSED:
            raise PeerGone("session closed")
        lock = self._write_lock
        try:
            lock.acquire_nowait()
        except trio.WouldBlock:
            await lock.acquire()
        try:
            if self.phase == CLOSED:
                raise PeerGone("session closed")
            try:
                await self._send(frame)
            except _TRANSPORT_ERRORS as exc:
                raise self._transport_lost(exc) from exc
        finally:
            lock.release()

    def _transport_lost(self, exc: BaseException) -> PeerGone:
        """A write failed: the session is closed; the error to raise to the writer."""
        self._log.info("transport_write_failed", error=type(exc).__name__)
        self._mark_closed()
        return PeerGone("transport closed")

    async def _respond(self, id: RequestId, result: Mapping[str, Any]) -> None:
        with suppress(PeerGone):
            await self._write(jsonrpc.encode_response(id, result))

    async def _respond_error(self, error: JsonRpcError) -> None:
        with suppress(PeerGone):
            await self._write(error.encode())

    @property
    def calls_in_progress(self) -> int:
        """Requests of the client whose answer is not yet written: calls running
        (``tools/call``, ``resources/read``…, and the 2026-07-28 calls of this connection)
        or writing their answer."""
        stateless = self._stateless.calls_in_progress if self._stateless is not None else 0
        return len(self._calls) + stateless

    def calls_ended(self) -> trio.Event:
        """An event set when no call is in progress (:attr:`calls_in_progress` is 0): at once
        if none is, else when the last one ends (its answer written, or dropped). What a
        graceful stop waits on before it ends the session."""
        event = trio.Event()
        if self.calls_in_progress:
            self._calls_ended.append(event)
        else:
            event.set()
        return event

    def _calls_may_have_ended(self) -> None:
        if self._calls_ended and not self.calls_in_progress:
            waiting, self._calls_ended = self._calls_ended, []
            for event in waiting:
                event.set()

    def stop_calls(self) -> int:
        """Cancel every request in progress; each is answered with a JSON-RPC internal error
        ("The server is shutting down") while the transport still stands — what a graceful
        stop does before it closes the session (``erlmcp-py serve`` on SIGTERM).

        Returns:
            How many requests were in progress.
        """
        self._stopping = True
        for call in self._calls.values():
            call.scope.cancel()
        return len(self._calls)

    def _shutting_down(self, id: RequestId) -> bytes:
        return jsonrpc.internal_error("The server is shutting down", None, id).encode()

    def _mark_closed(self) -> None:
        if self.phase == CLOSED:
            return
        self.phase = CLOSED
        self._closed.set()
        for call in self._calls.values():
            call.scope.cancel()
        if self._stateless is not None:
            self._stateless.close()

    def _fail_pending(self) -> None:
        pending, self._pending = self._pending, {}
        for callback in pending.values():
            callback(PeerGone("session closed"))

    def close(self) -> None:
        """End the session: cancel every tool call, so that the runtime's owner watch ends
        their elicitations ``abandoned``; nothing more is sent. Idempotent.

        Requests still pending when :func:`open_session` exits get ``PeerGone``.
        """
        self._mark_closed()

    # -- inbound ------------------------------------------------------------------------------

    async def feed(self, frame: bytes | bytearray | str) -> None:
        """Handle one inbound frame; returns without waiting on any tool."""
        if self.phase == CLOSED:
            return
        try:
            message = jsonrpc.parse(frame, max_bytes=self.max_frame_bytes)
        except JsonRpcError as exc:
            await self._refuse(exc)
            return
        await self.dispatch(message)

    async def _refuse(self, exc: JsonRpcError) -> None:
        if exc.response_id is not None:
            self._deliver(exc.response_id, PeerError(exc.code, exc.message, exc.data))
            return
        self._log.info("bad_frame", code=exc.code, reason=exc.message)
        await self._respond_error(exc)

    async def dispatch(self, message: jsonrpc.Message) -> None:
        """Handle one parsed message (transports that parse themselves call this)."""
        if isinstance(message, Request):
            try:
                await self._on_request(message)
            except JsonRpcError as exc:
                await self._respond_error(exc.with_id(message.id))
        elif isinstance(message, Notification):
            self._notification(message)
        else:
            self._response(message)

    def _notification(self, note: Notification) -> None:
        try:
            self._on_notification(note)
        except JsonRpcError as exc:
            self._log.info("bad_notification", method=note.method, reason=exc.message)

    def _response(self, message: Response | ErrorResponse) -> None:
        if isinstance(message, Response):
            self._deliver(message.id, message.result)
        elif message.id is None:
            self._log.info("client_error_without_id", code=message.code)
        else:
            self._deliver(message.id, PeerError(message.code, message.message, message.data))

    def answer_too_large(self, id: RequestId, size: int, limit: int) -> bool:
        """The client's answer to our request ``id`` was over the transport's frame limit and
        was discarded unread: end that request with :class:`AnswerTooLarge` (its elicitation
        fails ``answer_too_large`` at once). Only this session's own open requests can be
        named.

        Returns:
            Whether ``id`` named an open request of this session.
        """
        known = id in self._pending
        self._deliver(id, AnswerTooLarge(size, limit))
        return known

    def _deliver(self, id: RequestId, response: PeerResponse) -> None:
        callback = self._pending.pop(id, None)
        if callback is None:
            self._log.info("response_ignored", id=str(id)[:80], why="unknown, late or duplicate")
            return
        callback(response)

    async def _on_request(self, req: Request) -> None:
        meta = request_meta(req)  # the era, and a 2026-07-28 request's checked _meta
        if meta is not None:  # 2026-07-28: per-request _meta, no initialize
            if self._stateless is None:
                self._stateless = await open_for_session(
                    self._server,
                    self._runtime,
                    nursery=self._nursery,
                    send=self.send_raw,
                    tenant=self.tenant,
                    peer_id=self._peer_id,
                    on_call_end=self._calls_may_have_ended,
                    **self._continuations,
                )
            await self._stateless.dispatch(req, meta)
            return
        method = req.method
        if method == "ping":
            await self._respond(req.id, {})
            return
        if method == "initialize":
            await self._initialize(req)
            return
        handler = _HANDLERS.get(method)
        if handler is None and not features.offered(self._server, method):
            raise jsonrpc.method_not_found(method, req.id)
        if self.phase == NEW:
            raise jsonrpc.invalid_request("session not initialized: send initialize first")
        if req.id in self._calls:
            raise jsonrpc.invalid_request("a request with this id is already in progress")
        if handler is None:  # resources/*, prompts/*, completion/complete
            self.start_call(req.id, self._feature_answer(req))
            return
        await handler(self, req)

    async def _initialize(self, req: Request) -> None:
        if self.phase != NEW:
            raise jsonrpc.invalid_request("initialize was already received")
        params = parse_params(InitializeParams, req.params, req.id)
        version = negotiate_version(params.protocolVersion)
        self.protocol_version = version
        self.client_capabilities = ClientCapabilities.parse(params.capabilities, version)
        if params.clientInfo is not None:
            self.client_info = params.clientInfo.model_dump()
        declared = (params.meta or {}).get(LOCALE_META_KEY)  # the parsed params' _meta
        self.locale = client_locale(declared, self._accept_language)
        self.phase = INITIALIZING
        self._log = self._log.bind(version=version)
        self._log.info(
            "initialize",
            requested=params.protocolVersion[:40],
            elicitation=sorted(self.client_capabilities.elicitation_modes),
            client=str(self.client_info.get("name", ""))[:80],
        )
        await self._respond(req.id, self._server.initialize_result(version))

    async def _tools_list(self, req: Request) -> None:
        parse_params(ListToolsParams, req.params, req.id)
        await self._respond(req.id, {"tools": self._server.tool_definitions()})

    async def _resources_subscribe(self, req: Request) -> None:
        uri = features.subscribable(self._server, req)
        if uri not in self.subscriptions and len(self.subscriptions) >= MAX_SUBSCRIPTIONS:
            raise jsonrpc.invalid_params(
                f"Too many subscriptions: at most {MAX_SUBSCRIPTIONS} per session", None, req.id
            )
        self.subscriptions.add(uri)
        await self._respond(req.id, {})

    async def _resources_unsubscribe(self, req: Request) -> None:
        self.subscriptions.discard(features.subscribable(self._server, req))
        await self._respond(req.id, {})

    def start_call(self, id: RequestId, answer: Coroutine[Any, Any, bytes]) -> None:
        """Run the client's request ``id`` as a call: ``answer`` (the coroutine giving its
        response frame) in a task of its own, in progress until that frame is written. A call
        is what ``notifications/cancelled`` cancels (no answer is written then), what
        :meth:`stop_calls` answers with the shutdown error and what :meth:`calls_ended` and
        :attr:`working` count. The tools, prompts and resources of this session run as calls;
        a subclass that answers other requests (a gateway relaying them) starts them here."""
        call = _Call()
        self._calls[id] = call
        self._nursery.start_soon(self._run_call, id, call, answer)

    async def _run_call(
        self, id: RequestId, call: _Call, answer: Coroutine[Any, Any, bytes]
    ) -> None:
        """Run one request's task (``tools/call``, ``resources/read``…): await ``answer``
        (the request's coroutine, made by the caller: a pending request keeps no callable
        besides it) and write its answer, nothing when the client cancelled it or is gone,
        or the shutdown error when :meth:`stop_calls` cancelled it."""
        try:
            with call.scope:
                frame = await answer
            if call.scope.cancelled_caught:
                if call.cancelled_by_client or self.phase == CLOSED:
                    self._log.info("request_cancelled", id=str(id)[:80])
                    return
                self._log.info("request_stopped", id=str(id)[:80])
                frame = self._shutting_down(id)
            with suppress(PeerGone):
                await self._write(frame)
        finally:  # in progress until its answer is written
            self._calls.pop(id, None)
            self._calls_may_have_ended()

    async def _feature_answer(self, req: Request) -> bytes:
        token = _progress_token(req.params)

        def context(name: str) -> Context:  # a prompt that asks the client (prompts/get)
            return self._context(req.id, name, ToolClock(trio.CancelScope(), None), token)

        try:
            result = await features.answer(self._server, req, context)
            return jsonrpc.encode_response(req.id, result)
        except JsonRpcError as exc:
            return exc.with_id(req.id).encode()
        except jsonrpc.EncodeError:
            self._log.warning("result_unencodable", method=req.method[:80])
            return jsonrpc.internal_error("Result could not be encoded", None, req.id).encode()

    async def _logging_set_level(self, req: Request) -> None:
        params = parse_params(SetLevelParams, req.params, req.id)
        self.log_level = params.level
        await self._respond(req.id, {})

    async def _tools_call(self, req: Request) -> None:
        self._start_tool(req.id, req.params)

    def _start_tool(self, id: RequestId, raw: Params | None) -> None:
        """Check a ``tools/call`` (its ``id`` and ``params``) and start its task (raises the
        JSON-RPC error to answer)."""
        params = parse_params(CallToolParams, raw, id)
        spec = self._server.tools.get(params.name)
        if spec is None:
            raise jsonrpc.invalid_params(
                f"Unknown tool: {params.name[:200]}", {"name": params.name[:200]}, id
            )
        self.start_call(id, self._tool_answer(id, spec, params))

    def _on_notification(self, note: Notification) -> None:
        method = note.method
        if method == "notifications/initialized":
            if self.phase == INITIALIZING:
                self.phase = READY
                self._initialized.set()
        elif method == "notifications/cancelled":
            params = parse_params(CancelledParams, note.params)
            call = self._calls.get(params.requestId) if params.requestId is not None else None
            if call is None:
                stateless, rid = self._stateless, params.requestId
                if stateless is not None and rid is not None and stateless.cancel(rid):
                    return
                self._log.info("cancel_ignored", why="no such request in progress")
                return
            call.cancelled_by_client = True
            call.scope.cancel()
        elif method == "notifications/progress":
            parse_params(ProgressParams, note.params)  # nothing of ours reports progress
        else:
            self._log.debug("notification_ignored", method=method[:80])

    # -- tool calls ---------------------------------------------------------------------------

    def _context(
        self, id: RequestId, name: str, clock: ToolClock, progress_token: str | int | None
    ) -> Context:
        """The ``Context`` of the tool or prompt request ``id``: it asks through this session,
        related to that request."""
        server = self._server
        return Context(
            peer=RequestPeer(self, id, progress_token),
            runtime=self._runtime,
            url_policy=server.url_policy,
            server=server,
            tenant=self.tenant,
            request_id=id,
            tool_name=name,
            clock=clock,
            locale=self.locale,
        )

    async def _tool_answer(self, id: RequestId, spec: ToolSpec, params: CallToolParams) -> bytes:
        def context(clock: ToolClock) -> Context:
            return self._context(id, spec.name, clock, params.progress_token)

        try:
            result = await run_tool(spec, params.arguments, context, self._log)
        except UrlElicitationRequired as exc:
            return exc.to_jsonrpc().with_id(id).encode()
        except JsonRpcError as exc:
            return exc.with_id(id).encode()
        return jsonrpc.encode_response(id, result)


_HANDLERS: Final[dict[str, Callable[[ServerSession, Request], Awaitable[None]]]] = {
    "tools/list": ServerSession._tools_list,
    "tools/call": ServerSession._tools_call,
    "logging/setLevel": ServerSession._logging_set_level,
    "resources/subscribe": ServerSession._resources_subscribe,
    "resources/unsubscribe": ServerSession._resources_unsubscribe,
}


def _progress_token(params: Params | None) -> str | int | None:
    """``params._meta.progressToken``, when the client asked for progress."""
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    token = meta.get("progressToken") if isinstance(meta, Mapping) else None
    return token if type(token) in (str, int) else None


class RequestPeer:
    """The session as seen by one ``tools/call`` (or ``prompts/get``): the
    :class:`~erlmcp_py.mcp.call_peer.CallPeer` its ``Context`` and its elicitations go through.

    It carries the id of the originating request, so that a transport that can (Streamable
    HTTP) sends ``elicitation/create`` on that request's stream, and the request's progress
    token. A session has no rounds: every question is charged, keys are not sent (requests
    have JSON-RPC ids), and the call stays in this process while it asks.
    """

    __slots__ = ("_session", "progress_token", "related_request_id")

    #: A session's call stays in this process while it asks (the hosted page may answer it).
    keeps_call: Final = True
    #: A session's call is answered on its own request: never a task.
    task_id: Final = None
    #: A session has no rounds to count questions for.
    asking: Final[AbstractContextManager[None]] = nullcontext()

    def __init__(
        self,
        session: ServerSession,
        related_request_id: RequestId | None,
        progress_token: str | int | None = None,
    ) -> None:
        self._session = session
        #: The client request its requests and notifications relate to; ``None`` when there
        #: is none to name (on Streamable HTTP they then travel on the session's GET stream).
        self.related_request_id = related_request_id
        self.progress_token = progress_token

    @property
    def peer_id(self) -> str:
        """The session's client key (the runtime's rate-limit key; its id by default)."""
        return self._session.client_key

    @property
    def protocol_version(self) -> str:
        """The session's negotiated protocol version."""
        return self._session.protocol_version

    @property
    def capabilities(self) -> ClientCapabilities:
        """What the client declared in ``initialize``."""
        return self._session.client_capabilities

    def supports(self, mode: str) -> bool:
        """Whether the client declared elicitation in ``mode``."""
        return self._session.client_capabilities.supports(mode)

    def count_question(self) -> bool:
        """Every question of a session is charged."""
        return True

    def with_key(self, key: str) -> RequestPeer:
        """Itself: a session's requests are named by their JSON-RPC ids."""
        return self

    async def send_request(
        self,
        method: str,
        params: Mapping[str, Any],
        *,
        request_id: str,
        on_response: Callable[[PeerResponse], None],
    ) -> None:
        """See :meth:`ServerSession.send_request`."""
        token = RELATED_REQUEST.set(self.related_request_id)
        try:
            await self._session.send_request(
                method, params, request_id=request_id, on_response=on_response
            )
        finally:
            RELATED_REQUEST.reset(token)

    def forget_request(self, request_id: str) -> None:
        """See :meth:`ServerSession.forget_request`."""
        self._session.forget_request(request_id)

    async def send_notification(self, method: str, params: Mapping[str, Any]) -> None:
        """See :meth:`ServerSession.send_notification`."""
        token = RELATED_REQUEST.set(self.related_request_id)
        try:
            await self._session.send_notification(method, params)
        finally:
            RELATED_REQUEST.reset(token)

    async def notify(self, method: str, params: Mapping[str, Any]) -> None:
        """See :meth:`ServerSession.notify` (the tool's progress and log messages), on the
        stream of the related request."""
        token = RELATED_REQUEST.set(self.related_request_id)
        try:
            await self._session.notify(method, params)
        finally:
            RELATED_REQUEST.reset(token)


@asynccontextmanager
async def open_session(
    server: Server,
    runtime: Runtime,
    send: Send,
    *,
    peer_id: str | None = None,
    max_frame_bytes: int = jsonrpc.MAX_FRAME_BYTES,
    user: str | None = None,
    client_key: str | None = None,
    continuations: Mapping[str, Any] | None = None,
    accept_language: str | None = None,
) -> AsyncIterator[ServerSession]:
    """Run a session for one connection; on exit, tools are cancelled and the session closed.

    Args:
        server: The server whose tools are served.
        runtime: The elicitation runtime (from ``open_runtime``).
        send: Writes one frame to the client (the transport adds framing).
        peer_id: Connection id; default: a fresh random one.
        max_frame_bytes: Inbound frame limit.
        user: The authenticated user of the connection, when the transport knows one (the
            default tenant's ``user``).
        client_key: The key of the runtime's per-client limits (default: ``peer_id``).
        continuations: Keyword arguments of the connection's 2026-07-28 continuation
            registry (:class:`~erlmcp_py.mcp.mrtr.ContinuationRegistry`: ``keyring``,
            ``mrtr``, ``state_ttl``…).
        accept_language: The ``Accept-Language`` header of the HTTP request that opened the
            session, when there is one (see :attr:`ServerSession.locale`).
    """
    async with trio.open_nursery() as nursery:
        session = server.session_class(
            server,
            runtime,
            send,
            nursery,
            peer_id=peer_id,
            max_frame_bytes=max_frame_bytes,
            user=user,
            client_key=client_key,
            continuations=continuations,
            accept_language=accept_language,
        )
        server.sessions.add(session)
        try:
            yield session
        finally:
            server.sessions.discard(session)
            session.close()
    # The tool tasks have exited: let the owner watches run first (their elicitations end
    # ``abandoned`` and are forgotten), then fail whatever is still pending.
    for _ in range(2):
        await trio.lowlevel.checkpoint()
    session._fail_pending()
