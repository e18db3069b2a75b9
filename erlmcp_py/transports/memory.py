"""In-memory client/server pair: our own client talking to a :class:`ServerSession` in-process.

Theory of operation
-------------------
:func:`open_memory_client` opens the server's runtime (unless it is running), one session and
a :class:`MemoryClient`, joined by two trio memory channels that carry encoded JSON-RPC frames,
exactly the bytes a stdio line would hold. Each side has a reader task:

* client → server: the server's reader hands each frame to :meth:`ServerSession.feed`, the
  same entry point (size limit, JSON parse, envelope check) every wire transport uses;
* server → client: the session writes its frames to the client's channel; the client's reader
  parses each one with :func:`~erlmcp_py.mcp.jsonrpc.parse` and ignores (logs and keeps in
  :attr:`MemoryClient.refused`) what it refuses.

The client → server channel is unbounded and the server → client one bounded, so the client's
reader never blocks on the server (it answers ``elicitation/create`` without waiting) and the
server's writes get back-pressure from a client that does not read: neither side can deadlock
the other.

Server requests (``elicitation/create``, ``sampling/createMessage``, ``ping``…) go to the
client's ``handler``. A plain function is answered by the client's reader; a coroutine
function runs in a task of its own (it may take its time, or call the server). The handler
returns the result object, ``None`` to leave the request unanswered, or raises
:class:`~erlmcp_py.mcp.client.ClientRequestError` to answer with that JSON-RPC error.
``ping`` is answered ``{}`` when there is no handler.

Both protocol eras: with ``protocol_version`` 2025-06-18 / 2025-11-25 call
:meth:`MemoryClient.initialize` first (a session); with 2026-07-28 every request carries the
per-request ``_meta`` (version, capabilities, client info) and :meth:`MemoryClient.call_tool`
and :meth:`MemoryClient.get_prompt` (a prompt may ask the user too) drive MRTR
(:mod:`erlmcp_py.mcp.mrtr_client`): an ``InputRequiredResult`` is answered through the same
handler and the request retried with ``inputResponses`` and the ``requestState``, until the
result is complete.

The MCP methods return what the server answered, as JSON objects: a list method
(:meth:`~MemoryClient.list_tools`, :meth:`~MemoryClient.list_resources`,
:meth:`~MemoryClient.list_resource_templates`, :meth:`~MemoryClient.list_prompts`) the items of
every page (``nextCursor`` followed), the others their whole result
(:meth:`~MemoryClient.call_tool`'s ``CallToolResult``, :meth:`~MemoryClient.read_resource`'s
``ReadResourceResult``, :meth:`~MemoryClient.get_prompt`'s ``GetPromptResult``). A JSON-RPC
error is raised as :class:`~erlmcp_py.mcp.client.ClientRequestError`.
"""

from __future__ import annotations

import inspect
import itertools
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from typing import Any, Final

import structlog
import trio

from erlmcp_py.mcp import jsonrpc
from erlmcp_py.mcp.client import MAX_ROUNDS, ClientRequestError, ServerRequest, answer_input
from erlmcp_py.mcp.jsonrpc import ErrorResponse, JsonRpcError, Notification, Request, Response
from erlmcp_py.mcp.meta import MODERN_VERSIONS
from erlmcp_py.mcp.mrtr_client import call_until_complete, with_request_meta
from erlmcp_py.mcp.server import Server
from erlmcp_py.mcp.session import ServerSession, open_session

__all__ = ["MemoryClient", "MemoryHandler", "open_memory_client"]

log = structlog.get_logger("erlmcp.memory")

MemoryHandler = Callable[
    [ServerRequest], Mapping[str, Any] | Awaitable[Mapping[str, Any] | None] | None
]
"""Answers a server request: a result object, or ``None`` to leave it unanswered; may raise
:class:`~erlmcp_py.mcp.client.ClientRequestError`. Plain functions are answered by the reader."""

DEFAULT_VERSION: Final = "2025-11-25"
CLIENT_NAME: Final = {"name": "erlmcp-py-memory-client", "version": "0.1.0"}


class _Waiter:
    """Where the response to one of our requests lands."""

    __slots__ = ("arrived", "response")

    def __init__(self) -> None:
        self.arrived = trio.Event()
        self.response: dict[str, Any] = {}


class MemoryClient:
    """The client end of an in-memory pair. Create with :func:`open_memory_client`.

    Attributes:
        session: The server's side of the connection (read-only: for inspection in tests).
        protocol_version: The version requested (after :meth:`initialize`: the negotiated one).
        capabilities: The client capabilities declared (``initialize`` or every ``_meta``).
        server_info: ``serverInfo`` of the initialize result (``{}`` before).
        notifications: ``(method, params)`` of every notification received.
        server_requests: Every server request received (``keep_history=False``: none kept).
        refused: Frames from the server that failed the JSON-RPC check (should stay empty).
        unmatched: Responses that answer none of our waiting requests — e.g. the ``id: null``
            error answering a message the server refused (``keep_history=False``: none kept).
    """

    def __init__(
        self,
        session: ServerSession,
        to_server: trio.MemorySendChannel[bytes],
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
        self.refused: list[bytes] = []
        self.unmatched: list[dict[str, Any]] = []
        self._to_server = to_server
        self._nursery = nursery
        self._handler = handler
        self._keep = keep_history
        self._ids = itertools.count(1)
        self._waiting: dict[Any, _Waiter] = {}
        self._changed = trio.Event()

    @property
    def modern(self) -> bool:
        """True when this client speaks the stateless era (2026-07-28): no ``initialize``."""
        return self.protocol_version in MODERN_VERSIONS

    # -- sending ------------------------------------------------------------------------------

    async def send(self, message: Any) -> None:
        """Send one frame, unchecked (for tests of bad input): ``bytes`` or ``str`` as they
        are, any other value encoded as JSON.

        Raises:
            trio.BrokenResourceError: the server side is gone.
        """
        if isinstance(message, str):
            message = message.encode()
        elif not isinstance(message, bytes):
            message = jsonrpc.dumps(message)
        await self._to_server.send(message)

    async def request_raw(
        self, method: str, params: Mapping[str, Any] | None = None, *, id: Any = None
    ) -> dict[str, Any]:
        """Send a request; return the whole response message (``result`` or ``error``).

        If the wait is cancelled, the server is sent ``notifications/cancelled``.
        """
        rid = next(self._ids) if id is None else id
        if rid in self._waiting:
            raise ValueError(f"request id {rid!r} is already waiting for its response")
        waiter = self._waiting[rid] = _Waiter()
        try:
            await self.send(
                jsonrpc.request_object(rid, method, None if params is None else dict(params))
            )
            await waiter.arrived.wait()
        except trio.Cancelled:
            if self._waiting.pop(rid, None) is not None:
                self._cancel_nowait(rid)
            raise
        finally:
            self._waiting.pop(rid, None)
        return waiter.response

    def _cancel_nowait(self, rid: Any) -> None:
        frame = jsonrpc.encode_notification(
            "notifications/cancelled", {"requestId": rid, "reason": "the client stopped waiting"}
        )
        with suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            self._to_server.send_nowait(frame)  # unbounded: never blocks

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
        """``params`` with the 2026-07-28 per-request ``_meta`` of this client added
        (:func:`~erlmcp_py.mcp.mrtr_client.with_request_meta`: version, capabilities, client
        info; members already in ``params["_meta"]`` win)."""
        return with_request_meta(
            params,
            protocol_version=self.protocol_version,
            capabilities=self.capabilities,
            client_info=CLIENT_NAME,
        )

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

    async def _list(self, method: str, key: str) -> list[dict[str, Any]]:
        """The ``key`` items of every page of a list method (``nextCursor`` followed)."""
        items: list[dict[str, Any]] = []
        cursor: Any = None
        while True:
            result = await self.request(method, {} if cursor is None else {"cursor": cursor})
            items.extend(result[key])
            cursor = result.get("nextCursor")
            if not cursor:
                return items

    async def list_tools(self) -> list[dict[str, Any]]:
        """The ``tools`` of ``tools/list``."""
        return await self._list("tools/list", "tools")

    async def list_resources(self) -> list[dict[str, Any]]:
        """The ``resources`` of ``resources/list``.

        Raises:
            ClientRequestError: ``-32601`` when the server offers no resources.
        """
        return await self._list("resources/list", "resources")

    async def list_resource_templates(self) -> list[dict[str, Any]]:
        """The ``resourceTemplates`` of ``resources/templates/list``.

        Raises:
            ClientRequestError: ``-32601`` when the server offers no resources.
        """
        return await self._list("resources/templates/list", "resourceTemplates")

    async def read_resource(self, uri: str) -> dict[str, Any]:
        """``resources/read``; returns the ``ReadResourceResult`` (its ``contents``).

        Raises:
            ClientRequestError: an unknown URI (``-32002`` in a session, ``-32602`` on
                2026-07-28), or a resource that failed.
        """
        return await self.request("resources/read", {"uri": uri})

    async def list_prompts(self) -> list[dict[str, Any]]:
        """The ``prompts`` of ``prompts/list``.

        Raises:
            ClientRequestError: ``-32601`` when the server offers no prompts.
        """
        return await self._list("prompts/list", "prompts")

    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        max_rounds: int = MAX_ROUNDS,
    ) -> dict[str, Any]:
        """``prompts/get``; returns the ``GetPromptResult`` (its ``messages``).

        A prompt may ask the user, as a tool does: its ``elicitation/create`` reaches the
        handler (in a session), or on 2026-07-28 its input requests are answered through the
        handler and the request retried, as :meth:`call_tool` does.

        Raises:
            ClientRequestError: a JSON-RPC error (unknown prompt, missing argument…).
            RuntimeError: 2026-07-28 only, as :meth:`call_tool`.
        """
        params = {"name": name, "arguments": dict(arguments or {})}
        return await self._until_complete("prompts/get", params, max_rounds)

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None, *, max_rounds: int = MAX_ROUNDS
    ) -> dict[str, Any]:
        """``tools/call``; returns the ``CallToolResult`` (a tool error is ``isError: true``).

        On 2026-07-28 each input request of an ``InputRequiredResult`` is answered through the
        handler (:func:`~erlmcp_py.mcp.client.answer_input`) and the call retried (at most
        ``max_rounds`` rounds; see :mod:`erlmcp_py.mcp.mrtr_client`).

        Raises:
            ClientRequestError: a JSON-RPC error (unknown tool, ``-32042``…).
            RuntimeError: 2026-07-28 only: more than ``max_rounds`` rounds
                (:class:`~erlmcp_py.mcp.mrtr_client.InputRoundsExhausted`), or an input
                request the handler refused or left unanswered.
        """
        params = {"name": name, "arguments": dict(arguments or {})}
        return await self._until_complete("tools/call", params, max_rounds)

    async def _until_complete(
        self, method: str, params: dict[str, Any], max_rounds: int
    ) -> dict[str, Any]:
        """A ``tools/call`` or ``prompts/get``: one request in a session; on 2026-07-28, the
        input rounds until the result is complete."""
        if not self.modern:
            return await self.request(method, params)

        async def send(retry: dict[str, Any]) -> dict[str, Any]:
            return await self.request(method, retry)

        return await call_until_complete(send, self._answer_input, params, max_rounds=max_rounds)

    async def _answer_input(
        self, key: str, method: str, params: Mapping[str, Any]
    ) -> dict[str, Any]:
        request = ServerRequest(key, method, params)
        self._record_request(request)
        return await answer_input(self._handler, request)

    # -- waiting ------------------------------------------------------------------------------

    async def wait_for(self, predicate: Callable[[], bool]) -> None:
        """Wait until ``predicate()`` holds (re-checked after every inbound message)."""
        while not predicate():
            await self._changed.wait()

    async def next_server_request(self, after: int = 0) -> ServerRequest:
        """Wait for the server request number ``after`` (0-based) and return it."""
        await self.wait_for(lambda: len(self.server_requests) > after)
        return self.server_requests[after]

    # -- receiving ----------------------------------------------------------------------------

    async def _reader(self, from_server: trio.MemoryReceiveChannel[bytes]) -> None:
        async for frame in from_server:
            self._take(frame)
            self._changed.set()
            self._changed = trio.Event()

    def _take(self, frame: bytes) -> None:
        try:
            message = jsonrpc.parse(frame)
        except JsonRpcError as exc:
            self.refused.append(frame)
            log.warning("server_message_refused", code=exc.code, reason=exc.message)
            if exc.response_id is not None:
                self._deliver(
                    exc.response_id,
                    jsonrpc.error_object(exc.response_id, exc.code, exc.message, exc.data),
                )
            return
        if isinstance(message, Response):
            self._deliver(message.id, jsonrpc.response_object(message.id, message.result))
        elif isinstance(message, ErrorResponse):
            error = jsonrpc.error_object(message.id, message.code, message.message, message.data)
            self._deliver(message.id, error)
        elif isinstance(message, Request):
            params = message.params if isinstance(message.params, Mapping) else {}
            request = ServerRequest(message.id, message.method, params)
            self._record_request(request)
            self._dispatch(request)
        else:
            assert isinstance(message, Notification)
            params = message.params if isinstance(message.params, Mapping) else {}
            self.notifications.append((message.method, params))

    def _record_request(self, request: ServerRequest) -> None:
        if self._keep:
            self.server_requests.append(request)

    def _deliver(self, id: Any, response: dict[str, Any]) -> None:
        waiter = self._waiting.pop(id, None) if id is not None else None
        if waiter is None:
            log.info("response_ignored", id=str(id)[:80], why="unknown, late or duplicate")
            if self._keep:
                self.unmatched.append(response)
            return
        waiter.response = response
        waiter.arrived.set()

    def _dispatch(self, request: ServerRequest) -> None:
        handler = self._handler
        if handler is None:
            if request.method == "ping":
                self._reply(jsonrpc.response_object(request.id, {}))
            return
        try:
            result = handler(request)
        except ClientRequestError as exc:
            self._reply(jsonrpc.error_object(request.id, exc.code, exc.message, exc.data))
            return
        if inspect.isawaitable(result):
            self._nursery.start_soon(self._finish_later, request, result)
        elif result is not None:
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
        with suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            self._to_server.send_nowait(jsonrpc.dumps(message))  # unbounded: never blocks


def _result_of(response: dict[str, Any]) -> dict[str, Any]:
    """The ``result`` of a response, or its error raised as :class:`ClientRequestError`."""
    error = response.get("error")
    if error is not None:
        raise ClientRequestError(error["code"], error["message"], error.get("data"))
    result: dict[str, Any] = response["result"]
    return result


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
    continuations: Mapping[str, Any] | None = None,
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
        buffer: Capacity of the server → client channel (frames).
        keep_history: Record every server request in :attr:`MemoryClient.server_requests`.
        continuations: Keyword arguments of the session's 2026-07-28 continuation registry
            (:class:`~erlmcp_py.mcp.mrtr.ContinuationRegistry`: ``mrtr``, ``keyring``…).

    On exit the session closes (tool calls are cancelled; their elicitations end
    ``abandoned``) and the client's tasks end.
    """
    caps = dict(capabilities) if capabilities is not None else {"elicitation": {"form": {}}}
    to_server, from_client = trio.open_memory_channel[bytes](math.inf)
    to_client, from_server = trio.open_memory_channel[bytes](buffer)

    async with AsyncExitStack() as stack:
        if runtime is None:
            runtime = server.runtime
        if runtime is None:
            runtime = await stack.enter_async_context(server.running())
        session = await stack.enter_async_context(
            open_session(
                server, runtime, to_client.send, peer_id=peer_id, continuations=continuations
            )
        )
        # Both readers and the client's handler tasks; cancelled first on exit, then the
        # session closes (its tool tasks are cancelled) and the runtime, if opened here.
        tasks = await stack.enter_async_context(trio.open_nursery())

        async def serve() -> None:
            async for frame in from_client:
                await session.feed(frame)

        tasks.start_soon(serve)
        client = MemoryClient(
            session,
            to_server,
            tasks,
            handler=handler,
            protocol_version=protocol_version,
            capabilities=caps,
            keep_history=keep_history,
        )
        tasks.start_soon(client._reader, from_server)
        try:
            if initialize and not client.modern:
                await client.initialize()
            yield client
        finally:
            tasks.cancel_scope.cancel()
            to_server.close()
            from_server.close()
