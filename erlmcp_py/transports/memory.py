"""In-memory client/server pair: our own client talking to a :class:`ServerSession` in-process.

Theory of operation
-------------------
:func:`open_memory_client` opens the server's runtime (unless it is running), one session and
a :class:`MemoryClient`, joined by two trio memory channels that carry JSON-RPC *message
objects* (the dicts a JSON parser would produce), never JSON text — as the official SDK's
``InMemoryTransport`` carries message objects. What crosses is still checked at the same
boundary as on a wire:

* client → server: each message goes to :meth:`ServerSession.feed_message` (from the
  server's reader task, or inline: see below), which runs
  :func:`~erlmcp_py.mcp.jsonrpc.validate_message` — the check every decoded wire frame goes
  through: one object, ``"jsonrpc": "2.0"``, ids a string or an integer, params an object or
  an array, no batches… A refused message gets the same ``-32600`` error response a refused
  frame gets. There is no byte size to limit (no bytes exist); the runtime's own limits
  (answer size, schema size) apply as always.
* server → client: the session writes its messages unencoded (``send_message``); frames other
  layers encode themselves (2026-07-28 answers) are decoded. The client checks every message
  with ``validate_message`` too, and ignores what it refuses (logged).

The client → server channel is unbounded and the server → client one bounded, so the client's
reader never blocks on the server (it answers ``elicitation/create`` without waiting) and the
server's writes get back-pressure from a client that does not read: neither side can deadlock
the other.

Inline delivery. Each direction is a *lane* (:class:`_Lane`): when the receiving side's
reader is idle — nothing queued on the channel, nothing being taken — a message is taken
inline, in the sender's turn, exactly as the reader would take it: the server takes
responses, notifications and ``tools/call`` requests
(:meth:`ServerSession.feed_message_nowait`; everything it must answer, it leaves to its
reader), the client takes everything. Nothing overtakes a queued message, so order is kept
as on a wire. A message sent *while* a take is in progress (the client's handler answering
``elicitation/create``) is never taken re-entrantly: client → server it is held and taken
right after, in the same turn; server → client it is queued. So a tool call whose
elicitation is answered at once costs four task steps — the tool (twice), the elicitation's
child, the caller — instead of nine; a plain-function handler then runs in the turn of the
server task that sent the request (an exception from it is still raised in the client's
tasks). Each side runs inline in a copy of the context it was opened in: the server's tool
tasks never inherit the calling client task's context variables.

Server requests (``elicitation/create``, ``sampling/createMessage``, ``ping``…) go to the
client's ``handler``. A plain function is answered at once, where the request is taken; a
coroutine function runs in a task of its own (it may take its time, or call the server). The
handler returns the result object, ``None`` to leave the request unanswered, or raises
:class:`~erlmcp_py.mcp.client.ClientRequestError` to answer with that JSON-RPC error.
``ping`` is answered ``{}`` when there is no handler.

Both protocol eras: with ``protocol_version`` 2025-06-18 / 2025-11-25 call
:meth:`MemoryClient.initialize` first (a session); with 2026-07-28 every request carries the
per-request ``_meta`` (version, capabilities, client info) and :meth:`MemoryClient.call_tool`
drives MRTR itself: an ``InputRequiredResult`` is answered through the same handler and the
call retried with ``inputResponses`` and the ``requestState``, until the result is complete.
"""

from __future__ import annotations

import contextvars
import inspect
import itertools
import math
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from typing import Any, Final, TypeGuard

import outcome
import pydantic_core
import structlog
import trio

from erlmcp_py.mcp import jsonrpc
from erlmcp_py.mcp.client import ClientRequestError, ServerRequest
from erlmcp_py.mcp.jsonrpc import (
    _REQUEST,
    _RESULT,
    ErrorResponse,
    JsonRpcError,
    Notification,
    Request,
    Response,
    _fast_kind,
)
from erlmcp_py.mcp.meta import CLIENT_CAPABILITIES, CLIENT_INFO, MODERN_VERSIONS, PROTOCOL_VERSION
from erlmcp_py.mcp.server import Server
from erlmcp_py.mcp.session import ServerSession, open_session

__all__ = ["MemoryClient", "MemoryHandler", "open_memory_client"]

log = structlog.get_logger("erlmcp.memory")

MemoryHandler = Callable[
    [ServerRequest], Mapping[str, Any] | Awaitable[Mapping[str, Any] | None] | None
]
"""Answers a server request: a result object, or ``None`` to leave it unanswered; may raise
:class:`~erlmcp_py.mcp.client.ClientRequestError`. Plain functions are answered inline."""

DEFAULT_VERSION: Final = "2025-11-25"
CLIENT_NAME: Final = {"name": "erlmcp-py-memory-client", "version": "0.1.0"}


#: What :meth:`MemoryClient._deliver` finds for an id none of our requests waits on.
_UNKNOWN: Final = object()


class _Gate:
    """Shared by both lanes of a pair: ``busy`` while a message is being taken inline.

    A message sent meanwhile is never taken re-entrantly: on the client → server lane it is
    held here and taken once the take in progress is over (:meth:`drain`, still in the same
    turn); on the bounded server → client lane it is queued on the channel.

    A held message is the *receiving* side's business, not the sender's: if taking one fails
    (a bug over there), the rest are queued in order and the error goes to ``on_error`` — the
    pair raises it in its own tasks, as the reader task would have — never to the sender
    whose send happened to drain it. Without ``on_error`` it is raised from :meth:`drain`.
    """

    __slots__ = ("busy", "held", "on_error")

    def __init__(self, on_error: Callable[[Exception], None] | None = None) -> None:
        self.busy = False
        self.held: deque[tuple[_Lane, Any]] = deque()
        self.on_error = on_error

    def drain(self) -> None:
        held = self.held
        try:
            while held:
                lane, message = held.popleft()
                lane.holding -= 1
                try:  # noqa: SIM105 (not suppress(): runs on every answer)
                    lane.deliver(message)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    pass  # the pair is closing: nobody is left to take it
        except BaseException as exc:
            # Queue the rest, in order, so that nothing is stranded behind the failure.
            while held:
                lane, message = held.popleft()
                lane.holding -= 1
                with suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                    lane.enqueue(message)
            if self.on_error is None or not isinstance(exc, Exception):
                raise
            self.on_error(exc)


class _Lane:
    """One direction of the pair.

    A message is taken by the receiving side inline, in the sender's turn, when that side's
    reader is idle (nothing queued, nothing being taken) and ``take_now`` accepts it —
    exactly as the reader would have taken it, minus trips through the scheduler. Else it
    is queued on the channel for the reader task, which calls :meth:`done` after each.
    Nothing overtakes a queued or held message, so order is kept as on a wire.
    """

    __slots__ = ("channel", "closed", "context", "gate", "holding", "holds", "queued", "take_now")

    def __init__(
        self,
        channel: trio.MemorySendChannel[Any],
        gate: _Gate,
        take_now: Callable[[Any], bool],
        *,
        holds: bool,
    ) -> None:
        self.channel = channel
        self.gate = gate
        self.take_now = take_now
        self.holds = holds  # may hold messages during a take (only an unbounded lane may)
        # The receiving side runs inline in a context of its own: the server's tool tasks
        # (spawned from here) must not inherit the client task's context variables.
        self.context = contextvars.copy_context()
        self.queued = 0  # on the channel, not yet taken by the reader
        self.holding = 0  # held by the gate
        self.closed = False

    def send_nowait(self, message: Any) -> None:
        """Hand over ``message`` without waiting.

        Raises:
            trio.WouldBlock: the channel is full (nothing sent).
            trio.BrokenResourceError, trio.ClosedResourceError: the pair is closed.
        """
        gate = self.gate
        if not (gate.busy or self.holding or self.queued or self.closed):
            # Idle, the common case: deliver()'s inline take without its re-checks (the
            # same steps as the general path below takes for an idle lane).
            gate.busy = True
            try:
                try:
                    taken = self.context.run(self.take_now, message)
                finally:
                    gate.busy = False
                if not taken:
                    self.enqueue(message)
            finally:
                if gate.held:  # sent during this take: taken now (even if this take failed)
                    gate.drain()
            return
        if self.holding or (gate.busy and self.holds and not self.closed):
            self.holding += 1
            gate.held.append((self, message))
            return
        if gate.busy:
            self.deliver(message)  # queued: a take is in progress
            return
        try:
            self.deliver(message)
        finally:
            if gate.held:  # sent during this take: taken now (even if this take failed)
                gate.drain()

    def deliver(self, message: Any) -> None:
        gate = self.gate
        if not self.queued and not gate.busy and not self.closed:
            gate.busy = True
            try:
                taken = self.context.run(self.take_now, message)
            finally:
                gate.busy = False
            if taken:
                return
        self.enqueue(message)

    def enqueue(self, message: Any) -> None:
        self.channel.send_nowait(message)
        self.queued += 1

    async def send(self, message: Any) -> None:
        """Hand over ``message``, waiting for room in the channel if it is full."""
        try:
            self.send_nowait(message)
        except trio.WouldBlock:
            self.queued += 1  # counted while it waits: nothing may go inline past it
            try:
                await self.channel.send(message)
            except BaseException:
                self.queued -= 1
                raise

    def done(self) -> None:
        """The reader has taken one queued message."""
        self.queued -= 1

    def close(self) -> None:
        self.closed = True
        self.channel.close()


class MemoryClient:
    """The client end of an in-memory pair. Create with :func:`open_memory_client`.

    Attributes:
        session: The server's side of the connection (read-only: for inspection in tests).
        protocol_version: The version requested (after :meth:`initialize`: the negotiated one).
        capabilities: The client capabilities declared (``initialize`` or every ``_meta``).
        server_info: ``serverInfo`` of the initialize result (``{}`` before).
        notifications: ``(method, params)`` of every notification received.
        server_requests: Every server request received (``keep_history=False``: none kept).
        refused: Messages from the server that failed the JSON-RPC check (should stay empty).
        unmatched: Responses that answer none of our waiting requests — e.g. the ``id: null``
            error answering a message the server refused (``keep_history=False``: none kept).
    """

    def __init__(
        self,
        session: ServerSession,
        to_server: _Lane,
        nursery: trio.Nursery,
        *,
        handler: MemoryHandler | None,
        protocol_version: str,
        capabilities: Mapping[str, Any],
        keep_history: bool,
    ) -> None:
        self.session = session
        self.protocol_version = protocol_version
        self.capabilities: dict[str, Any] = dict(capabilities)
        self.server_info: dict[str, Any] = {}
        self.notifications: list[tuple[str, Mapping[str, Any]]] = []
        self.server_requests: list[ServerRequest] = []
        self.refused: list[Any] = []
        self.unmatched: list[dict[str, Any]] = []
        self._to_server = to_server
        self._nursery = nursery
        self._handler = handler
        self._handler_is_async = handler is not None and (
            inspect.iscoroutinefunction(handler)
            or inspect.iscoroutinefunction(getattr(handler, "__call__", None))  # noqa: B004
        )
        self._keep = keep_history
        self._ids = itertools.count(1)
        # Our requests waiting for a response: the parked task (None: not parked yet).
        self._waiting: dict[Any, trio.lowlevel.Task | None] = {}
        self._early: dict[Any, dict[str, Any]] = {}  # responses that came before the park
        self._changed: trio.Event | None = None  # created when someone waits

    @property
    def modern(self) -> bool:
        """True when this client speaks the stateless era (2026-07-28): no ``initialize``."""
        return self.protocol_version in MODERN_VERSIONS

    # -- sending ------------------------------------------------------------------------------

    async def send(self, message: Any) -> None:
        """Send any value as one message, unchecked (for tests of bad input).

        Raises:
            trio.BrokenResourceError: the server side is gone.
        """
        await self._to_server.send(message)

    async def request_raw(
        self, method: str, params: Mapping[str, Any] | None = None, *, id: Any = None
    ) -> dict[str, Any]:
        """Send a request; return the whole response message (``result`` or ``error``).

        If the wait is cancelled, the server is sent ``notifications/cancelled``.
        """
        rid = next(self._ids) if id is None else id
        message = jsonrpc.request_object(rid, method, None if params is None else dict(params))
        return await self._exchange(rid, message)

    async def _exchange(self, rid: Any, message: dict[str, Any]) -> dict[str, Any]:
        await trio.lowlevel.checkpoint_if_cancelled()
        response: dict[str, Any] = await self._send_and_wait(rid, message)
        return response

    def _send_and_wait(self, rid: Any, message: dict[str, Any]) -> Awaitable[Any]:
        """Send request ``rid`` and return what waits for its response: await it at once.

        Not a coroutine itself: the caller awaits trio's wait directly, so a parked request
        costs no coroutine layer of its own. ``_waiting[rid]`` is ``None`` until the caller
        parks, then its task (a response for an unparked request goes to ``_early``).
        """
        waiting = self._waiting
        if rid in waiting:
            raise ValueError(f"request id {rid!r} is already waiting for its response")
        waiting[rid] = None
        try:
            self._to_server.send_nowait(message)  # unbounded: never blocks
        except BaseException:  # the pair is closed
            del waiting[rid]
            raise
        if rid not in waiting:  # the server answered inline (not done today)
            return _answered(self._early.pop(rid))
        # Park until the response is delivered (it comes as the task's next value).
        waiting[rid] = trio.lowlevel.current_task()

        def abort(_: Any) -> trio.lowlevel.Abort:
            if self._waiting.pop(rid, None) is not None:
                with suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                    self._to_server.send_nowait(
                        jsonrpc.notification_object(
                            "notifications/cancelled",
                            {"requestId": rid, "reason": "the client stopped waiting"},
                        )
                    )
            return trio.lowlevel.Abort.SUCCEEDED

        return trio.lowlevel.wait_task_rescheduled(abort)  # noqa: ASYNC105 (awaited by the caller)

    async def request(
        self, method: str, params: Mapping[str, Any] | None = None, *, id: Any = None
    ) -> dict[str, Any]:
        """Send a request and return its ``result``.

        On 2026-07-28 the request's ``_meta`` is filled in (see :meth:`with_meta`).

        Raises:
            ClientRequestError: the server answered with an error.
        """
        if self.modern:
            params = self.with_meta(params)
        return _result_of(await self.request_raw(method, params, id=id))

    def with_meta(self, params: Mapping[str, Any] | None) -> dict[str, Any]:
        """``params`` with the 2026-07-28 per-request ``_meta`` added (version, capabilities,
        client info); members already in ``params["_meta"]`` win."""
        out = dict(params or {})
        meta = {
            PROTOCOL_VERSION: self.protocol_version,
            CLIENT_CAPABILITIES: self.capabilities,
            CLIENT_INFO: CLIENT_NAME,
        }
        meta.update(out.get("_meta") or {})
        out["_meta"] = meta
        return out

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification."""
        await self.send(
            jsonrpc.notification_object(method, None if params is None else dict(params))
        )

    async def answer(self, id: Any, result: Mapping[str, Any]) -> None:
        """Answer a server request by hand."""
        await self.send(jsonrpc.response_object(id, dict(result)))

    async def answer_error(self, id: Any, code: int, message: str, data: Any = None) -> None:
        """Answer a server request with a JSON-RPC error by hand."""
        await self.send(jsonrpc.error_object(id, code, message, data))

    # -- MCP ----------------------------------------------------------------------------------

    async def initialize(self) -> dict[str, Any]:
        """``initialize`` then ``notifications/initialized`` (session era only).

        Returns:
            The initialize result; :attr:`protocol_version` becomes the negotiated version.
        """
        if self.modern:
            raise RuntimeError(f"{self.protocol_version} has no initialize (stateless)")
        result = await self.request(
            "initialize",
            {
                "protocolVersion": self.protocol_version,
                "capabilities": self.capabilities,
                "clientInfo": CLIENT_NAME,
            },
        )
        self.protocol_version = str(result.get("protocolVersion", self.protocol_version))
        self.server_info = dict(result.get("serverInfo") or {})
        await self.notify("notifications/initialized")
        return result

    async def discover(self) -> dict[str, Any]:
        """``server/discover`` (2026-07-28): versions, capabilities and server info."""
        return await self.request("server/discover", {})

    async def ping(self) -> None:
        """``ping``; raises :class:`ClientRequestError` if the server answers an error."""
        await self.request("ping")

    async def list_tools(self) -> list[dict[str, Any]]:
        """The ``tools`` of ``tools/list``."""
        tools: list[dict[str, Any]] = (await self.request("tools/list", {}))["tools"]
        return tools

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None, *, max_rounds: int = 16
    ) -> dict[str, Any]:
        """``tools/call``; returns the ``CallToolResult`` (a tool error is ``isError: true``).

        On 2026-07-28 an ``InputRequiredResult`` is answered through the handler and the call
        retried (at most ``max_rounds`` rounds).

        Raises:
            ClientRequestError: a JSON-RPC error (unknown tool, ``-32042``…).
            RuntimeError: 2026-07-28 only: more than ``max_rounds`` rounds, or an input request
                the handler left unanswered.
        """
        params: dict[str, Any] = {
            "name": name,
            "arguments": dict(arguments) if arguments else {},  # one dict, not two
        }
        if not self.modern:  # request() minus its re-checks and copies: the hot path
            rid = next(self._ids)
            # jsonrpc.request_object(rid, "tools/call", params), built here.
            message = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}
            await trio.lowlevel.checkpoint_if_cancelled()  # _exchange(), one coroutine fewer
            return _result_of(await self._send_and_wait(rid, message))
        for _ in range(max_rounds):
            result = await self.request("tools/call", params)
            if result.get("resultType") != "input_required":
                return result
            responses: dict[str, Any] = {}
            for key, asked in (result.get("inputRequests") or {}).items():
                request = ServerRequest(key, asked["method"], asked.get("params") or {})
                self._record_request(request)
                try:
                    answer = await self._run_handler(request)
                except ClientRequestError as exc:
                    raise RuntimeError(f"input request {key!r} refused: {exc}") from exc
                if answer is None:
                    raise RuntimeError(f"input request {key!r} was left unanswered")
                responses[key] = dict(answer)
            params = {
                "name": name,
                "arguments": dict(arguments or {}),
                "requestState": result.get("requestState"),
                "inputResponses": responses,
            }
        raise RuntimeError(f"tools/call {name!r}: no complete result after {max_rounds} rounds")

    # -- waiting ------------------------------------------------------------------------------

    async def wait_for(self, predicate: Callable[[], bool]) -> None:
        """Wait until ``predicate()`` holds (re-checked after every inbound message)."""
        while not predicate():
            if self._changed is None:
                self._changed = trio.Event()
            await self._changed.wait()

    async def next_server_request(self, after: int = 0) -> ServerRequest:
        """Wait for the server request number ``after`` (0-based) and return it."""
        await self.wait_for(lambda: len(self.server_requests) > after)
        return self.server_requests[after]

    # -- receiving ----------------------------------------------------------------------------

    async def _reader(self, from_server: trio.MemoryReceiveChannel[Any], lane: _Lane) -> None:
        async for obj in from_server:
            try:
                self._take(obj)
            finally:
                lane.done()

    def _take_now(self, obj: Any) -> bool:
        """Take a server message inline, in the sending server task's turn. An error raised
        by the handler is the client's, not that task's: it is raised in the client's
        tasks, as if the reader had taken the message."""
        try:
            self._take(obj)
        except Exception as exc:
            self._nursery.start_soon(_reraise, exc)
        return True

    def _take(self, obj: Any) -> None:
        # The two common shapes read straight from the object (no Request or Response value
        # built only to be unpacked here), exactly as the general path below handles them.
        kind = _fast_kind(obj)
        if kind == _RESULT:
            self._deliver(obj["id"], obj)
        elif kind == _REQUEST:
            self._take_request(obj["id"], obj["method"], obj["params"])
        else:
            self._take_other(obj)
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    def _take_other(self, obj: Any) -> None:
        try:
            message = jsonrpc.validate_message(obj)
        except JsonRpcError as exc:
            self.refused.append(obj)
            log.warning("server_message_refused", code=exc.code, reason=exc.message)
            if exc.response_id is not None:
                self._deliver(
                    exc.response_id,
                    jsonrpc.error_object(exc.response_id, exc.code, exc.message, exc.data),
                )
        else:
            kind = type(message)
            if kind is Response or kind is ErrorResponse:
                self._deliver(message.id, obj)  # type: ignore[union-attr]
            elif type(message) is Request:
                self._take_request(message.id, message.method, message.params)
            else:
                assert isinstance(message, Notification)
                params = message.params if _is_mapping(message.params) else {}
                self.notifications.append((message.method, params))

    def _take_request(self, id: Any, method: str, params: Any) -> None:
        """A request from the server (its params: an object, or an array taken as none)."""
        request = ServerRequest(id, method, params if _is_mapping(params) else {})
        self._record_request(request)
        self._dispatch(request)

    def _record_request(self, request: ServerRequest) -> None:
        if self._keep:
            self.server_requests.append(request)

    def _deliver(self, id: Any, response: dict[str, Any]) -> None:
        task = self._waiting.pop(id, _UNKNOWN)
        if task is _UNKNOWN:
            log.info("response_ignored", id=str(id)[:80], why="unknown, late or duplicate")
            if self._keep:
                self.unmatched.append(response)
            return
        if task is None:  # its requester has not parked yet
            self._early[id] = response
        else:
            trio.lowlevel.reschedule(task, outcome.Value(response))  # type: ignore[arg-type]

    def _dispatch(self, request: ServerRequest) -> None:
        handler = self._handler
        if handler is None:
            if request.method == "ping":
                self._reply(jsonrpc.response_object(request.id, {}))
            return
        if self._handler_is_async:
            self._nursery.start_soon(self._answer_later, request)
            return
        try:
            result = handler(request)
        except ClientRequestError as exc:
            self._reply(jsonrpc.error_object(request.id, exc.code, exc.message, exc.data))
            return
        if type(result) is not dict and inspect.isawaitable(result):  # a callable object
            self._nursery.start_soon(self._finish_later, request, result)
        elif result is not None:
            self._reply(jsonrpc.response_object(request.id, dict(result)))

    async def _run_handler(self, request: ServerRequest) -> Mapping[str, Any] | None:
        if self._handler is None:
            return {} if request.method == "ping" else None
        result = self._handler(request)
        if inspect.isawaitable(result):
            result = await result
        return result

    async def _answer_later(self, request: ServerRequest) -> None:
        try:
            result = await self._run_handler(request)
        except ClientRequestError as exc:
            self._reply(jsonrpc.error_object(request.id, exc.code, exc.message, exc.data))
            return
        if result is not None:
            self._reply(jsonrpc.response_object(request.id, dict(result)))

    async def _finish_later(
        self, request: ServerRequest, pending: Awaitable[Mapping[str, Any] | None]
    ) -> None:
        try:
            result = await pending
        except ClientRequestError as exc:
            self._reply(jsonrpc.error_object(request.id, exc.code, exc.message, exc.data))
            return
        if result is not None:
            self._reply(jsonrpc.response_object(request.id, dict(result)))

    def _reply(self, message: dict[str, Any]) -> None:
        try:  # noqa: SIM105 (not suppress(): a context manager object per answer)
            self._to_server.send_nowait(message)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass


def _result_of(response: dict[str, Any]) -> dict[str, Any]:
    """The ``result`` of a response, or its error raised as :class:`ClientRequestError`."""
    error = response.get("error")
    if error is not None:
        raise ClientRequestError(error["code"], error["message"], error.get("data"))
    result: dict[str, Any] = response["result"]
    return result


async def _answered(response: dict[str, Any]) -> dict[str, Any]:
    await trio.lowlevel.cancel_shielded_checkpoint()
    return response


def _is_mapping(value: object) -> TypeGuard[Mapping[str, Any]]:
    return type(value) is dict or isinstance(value, Mapping)  # the ABC check only if needed


async def _reraise(exc: BaseException) -> None:
    raise exc


@asynccontextmanager
async def open_memory_client(
    server: Server,
    *,
    handler: MemoryHandler | None = None,
    protocol_version: str = DEFAULT_VERSION,
    capabilities: Mapping[str, Any] | None = None,
    initialize: bool = True,
    runtime: Any = None,
    peer_id: str | None = None,
    buffer: int = 16,
    keep_history: bool = True,
) -> AsyncIterator[MemoryClient]:
    """Connect a :class:`MemoryClient` to ``server`` in-process (see the module docstring).

    Example:
        >>> async def main(server):
        ...     def accept(request):
        ...         return {"action": "accept", "content": {"name": "Ada"}}
        ...
        ...     async with open_memory_client(server, handler=accept) as client:
        ...         result = await client.call_tool("greet")

    Args:
        server: The server.
        handler: Answers server requests (``elicitation/create``…); see :data:`MemoryHandler`.
        protocol_version: ``2025-06-18`` / ``2025-11-25`` (session) or ``2026-07-28``
            (stateless, MRTR).
        capabilities: Client capabilities; default ``{"elicitation": {"form": {}}}``.
        initialize: Session era: send ``initialize`` and ``notifications/initialized`` first.
        runtime: The elicitation runtime to use; default: ``server.runtime`` if it is running,
            else one opened (and closed) here.
        peer_id: The session id (the rate-limit key); default: a fresh one.
        buffer: Capacity of the server → client channel (messages).
        keep_history: Record every server request in :attr:`MemoryClient.server_requests`.

    On exit the session closes (tool calls are cancelled; their elicitations end
    ``abandoned``) and the client's tasks end.
    """
    caps = dict(capabilities) if capabilities is not None else {"elicitation": {"form": {}}}
    to_server, from_client = trio.open_memory_channel[Any](math.inf)
    to_client, from_server = trio.open_memory_channel[Any](buffer)
    tasks_ready: list[trio.Nursery] = []

    def held_take_failed(exc: Exception) -> None:
        # Raised in the pair's tasks (the reader task's place before inline delivery).
        tasks_ready[0].start_soon(_reraise, exc)

    gate = _Gate(held_take_failed)

    def no_client_yet(message: Any) -> bool:
        return False  # queued for the client's reader (the lane takes inline once it exists)

    to_client_lane = _Lane(to_client, gate, no_client_yet, holds=False)

    async def send(frame: bytes) -> None:  # frames encoded by other layers (2026-07-28)
        await to_client_lane.send(pydantic_core.from_json(frame))

    async with AsyncExitStack() as stack:
        if runtime is None:
            runtime = server.runtime
        if runtime is None:
            runtime = await stack.enter_async_context(server.running())
        session = await stack.enter_async_context(
            open_session(
                server,
                runtime,
                send,
                peer_id=peer_id,
                send_message=to_client_lane.send,
                # With send_message, the session hands send_nowait message objects only
                # (never bytes): the lane takes them as they are (raises WouldBlock when full).
                send_nowait=to_client_lane.send_nowait,
            )
        )
        # Both readers and the client's handler tasks; cancelled first on exit, then the
        # session closes (its tool tasks are cancelled) and the runtime, if opened here.
        tasks = await stack.enter_async_context(trio.open_nursery())
        tasks_ready.append(tasks)

        to_server_lane = _Lane(to_server, gate, session.feed_message_nowait, holds=True)

        async def serve() -> None:
            async for message in from_client:
                try:
                    await session.feed_message(message)
                finally:
                    to_server_lane.done()

        tasks.start_soon(serve)
        client = MemoryClient(
            session,
            to_server_lane,
            tasks,
            handler=handler,
            protocol_version=protocol_version,
            capabilities=caps,
            keep_history=keep_history,
        )
        to_client_lane.take_now = client._take_now
        tasks.start_soon(client._reader, from_server, to_client_lane)
        try:
            if initialize and not client.modern:
                await client.initialize()
            yield client
        finally:
            tasks.cancel_scope.cancel()
            to_server_lane.close()
            to_client_lane.closed = True  # its channel's far end closes: sends then fail
            from_server.close()
