"""Scripted clients for tests, demos and benchmarks: a :class:`~._session.ClientSession` that
records everything and lets a script send anything.

:class:`StdioClient` (a server subprocess, :func:`open_stdio_client`) and :class:`MemoryClient`
(a server in this process, :func:`open_memory_client`) are one :class:`ScriptedClient` over two
wires. Each keeps what the server said (``notifications``, ``server_requests``, ``frames``,
``unmatched``, ``refused``), answers server requests through one ``handler`` and lets a
script wait for any of it (:meth:`ScriptedClient.wait_for`), answer by hand
(:meth:`ScriptedClient.answer`) or write anything, garbage included
(:meth:`ScriptedClient.send`): every message its session sends goes through
:meth:`ScriptedClient.send` too.

The handler is the session's (see :mod:`~._session`): the result, ``None`` to leave the request
to the script (``ping`` is answered ``{}`` when there is no handler), or
:class:`~erlmcp_py.mcp.errors.ClientRequestError` raised to answer that error. On 2026-07-28 a
scripted client is strict where a person's client is lenient: an input request the handler
refuses or leaves unanswered ends the call (:func:`answer_input`), and a call gives up after
:data:`~._session.MAX_ROUNDS` rounds.
"""

from __future__ import annotations

import inspect
import os
import subprocess
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final

import trio

from erlmcp_py.client._memory import MemoryWire, open_memory_wire
from erlmcp_py.client._session import (
    DEFAULT_CAPABILITIES,
    MAX_ROUNDS,
    ClientSession,
    Handler,
    ServerRequest,
    open_client_session,
)
from erlmcp_py.client._stdio import StdioWire, open_stdio_wire
from erlmcp_py.client._wire import ConnectionLost, Inbound, Refused, Undeliverable
from erlmcp_py.core.versions import LATEST_SESSION_VERSION
from erlmcp_py.mcp.errors import ClientRequestError
from erlmcp_py.mcp.jsonrpc import (
    ErrorResponse,
    Message,
    RequestId,
    Response,
    dumps,
    message_object,
    response_object,
)
from erlmcp_py.mcp.server import Server

__all__ = [
    "MemoryClient",
    "ScriptedClient",
    "StdioClient",
    "answer_input",
    "open_memory_client",
    "open_stdio_client",
]

STDIO_CLIENT_INFO: Final[Mapping[str, Any]] = {
    "name": "erlmcp-py-scripted-client",
    "version": "0.1.0",
}
MEMORY_CLIENT_INFO: Final[Mapping[str, Any]] = {
    "name": "erlmcp-py-memory-client",
    "version": "0.1.0",
}


async def answer_input(handler: Handler | None, request: ServerRequest) -> dict[str, Any]:
    """A scripted client's answer to one 2026-07-28 input request: what ``handler`` returns.

    ``request.id`` is the input request's key. The handler runs in the caller's task.

    Raises:
        RuntimeError: the handler raised :class:`ClientRequestError` (refused the request),
            returned ``None``, or there is no handler: the request is left unanswered.
    """
    try:
        answer = handler(request) if handler is not None else None
        if inspect.isawaitable(answer):
            answer = await answer
    except ClientRequestError as exc:
        raise RuntimeError(f"input request {request.id!r} refused: {exc}") from exc
    if answer is None:
        raise RuntimeError(f"input request {request.id!r} was left unanswered")
    return dict(answer)


class _Through:
    """The wire as the scripted client's session sees it: what the session sends goes through
    :meth:`ScriptedClient.send`, and what arrives is recorded on its way in."""

    def __init__(self, client: ScriptedClient, wire: StdioWire | MemoryWire) -> None:
        self._client = client
        self._wire = wire

    @property
    def session_id(self) -> str | None:
        return self._wire.session_id

    def set_protocol(self, version: str) -> None:
        self._wire.set_protocol(version)

    async def send(self, message: Message) -> None:
        await self._client.send(message_object(message))

    async def receive(self) -> Inbound:
        try:
            item = await self._wire.receive()
        except ConnectionLost:
            self._client._bump()  # a script waiting for more sees that nothing more comes
            raise
        self._client._arrived(item)
        return item

    async def aclose(self) -> None:
        await self._wire.aclose()


class ScriptedClient:
    """The client side of one connection, for a script (see the module docstring).

    Attributes:
        handler: Answers server requests (may be replaced at any time).
        client_session: The session underneath.
        keep_history: ``False``: ``server_requests``, ``frames`` and ``unmatched`` stay empty.
        notifications: ``(method, params)`` of every notification received.
        server_requests: Every server request and 2026-07-28 input request received.
        frames: Every message received, as its JSON object.
        unmatched: Answers no request waited for (the ``id: null`` error answering a message
            the server refused, late and duplicate answers), as JSON objects.
        refused: Frames from the server that failed the JSON-RPC check (should stay empty).
    """

    client_session: ClientSession

    def __init__(
        self, wire: StdioWire | MemoryWire, handler: Handler | None, keep_history: bool
    ) -> None:
        self.handler = handler
        self.keep_history = keep_history
        self.notifications: list[tuple[str, Mapping[str, Any]]] = []
        self.server_requests: list[ServerRequest] = []
        self.frames: list[dict[str, Any]] = []
        self.unmatched: list[dict[str, Any]] = []
        self.refused: list[bytes] = []
        self._wire = wire
        self._changed = trio.Event()

    @asynccontextmanager
    async def _attached(
        self,
        protocol_version: str,
        capabilities: Mapping[str, Any] | None,
        client_info: Mapping[str, Any],
    ) -> AsyncIterator[None]:
        async with open_client_session(
            _Through(self, self._wire),
            protocol_version=protocol_version,
            capabilities=DEFAULT_CAPABILITIES if capabilities is None else capabilities,
            client_info=client_info,
            handler=self._serve,
            input_handler=self._answer_input,
            on_notification=self._notified,
            on_unmatched=self._unmatched,
            max_rounds=MAX_ROUNDS,
        ) as session:
            self.client_session = session
            yield

    # -- what the session knows ----------------------------------------------------------------

    @property
    def protocol_version(self) -> str:
        """The version spoken (after :meth:`initialize`: the negotiated one)."""
        return self.client_session.protocol_version

    @property
    def capabilities(self) -> dict[str, Any]:
        """The client capabilities declared (``initialize`` or every ``_meta``)."""
        return self.client_session.capabilities

    @property
    def server_info(self) -> dict[str, Any]:
        """``serverInfo`` of the initialize result (``{}`` before)."""
        return self.client_session.server_info

    @property
    def stateless(self) -> bool:
        """True when this client speaks the stateless era (2026-07-28): no ``initialize``."""
        return self.client_session.stateless

    def next_id(self) -> int:
        """A fresh request id."""
        return self.client_session.next_id()

    def with_meta(self, params: Mapping[str, Any] | None) -> dict[str, Any]:
        """``params`` with the 2026-07-28 per-request ``_meta`` of this client added."""
        return self.client_session.with_meta(params)

    # -- sending -------------------------------------------------------------------------------

    async def send(self, message: Any) -> None:
        """Send one frame, unchecked (for tests of bad input): ``bytes`` or ``str`` as they
        are, any other value encoded as JSON.

        Raises:
            ConnectionLost: the server side is gone.
        """
        if isinstance(message, str):
            message = message.encode()
        elif not isinstance(message, bytes):
            message = dumps(message)
        await self._wire.send_frame(message)

    async def request_raw(
        self, method: str, params: Mapping[str, Any] | None = None, *, id: RequestId | None = None
    ) -> dict[str, Any]:
        """Send a request as given; return the whole answer (``result`` or ``error``)."""
        return message_object(await self.client_session.request_raw(method, params, id=id))

    async def request(
        self, method: str, params: Mapping[str, Any] | None = None, *, id: RequestId | None = None
    ) -> dict[str, Any]:
        """Send a request and return its ``result`` (2026-07-28: with the ``_meta``).

        Raises:
            ClientRequestError: the server answered with an error.
        """
        return await self.client_session.request(method, params, id=id)

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification."""
        await self.client_session.notify(method, params)

    async def answer(self, id: Any, result: Mapping[str, Any]) -> None:
        """Answer a server request by hand (sent as it is, whatever the server asked)."""
        await self.send(response_object(id, dict(result)))

    # -- MCP -----------------------------------------------------------------------------------

    async def initialize(
        self, capabilities: Mapping[str, Any] | None = None, version: str | None = None
    ) -> dict[str, Any]:
        """``initialize`` then ``notifications/initialized`` (session era only)."""
        return await self.client_session.initialize(capabilities=capabilities, version=version)

    async def discover(self) -> dict[str, Any]:
        """``server/discover`` (2026-07-28): versions, capabilities and server info."""
        return await self.client_session.discover()

    async def ping(self) -> None:
        """``ping``; raises :class:`ClientRequestError` if the server answers an error."""
        await self.client_session.ping()

    async def list_tools(self) -> list[dict[str, Any]]:
        """The ``tools`` of every page of ``tools/list``."""
        return await self.client_session.list_tools()

    async def list_resources(self) -> list[dict[str, Any]]:
        """The ``resources`` of every page of ``resources/list``."""
        return await self.client_session.list_resources()

    async def list_resource_templates(self) -> list[dict[str, Any]]:
        """The ``resourceTemplates`` of every page of ``resources/templates/list``."""
        return await self.client_session.list_resource_templates()

    async def read_resource(self, uri: str) -> dict[str, Any]:
        """``resources/read``; returns the ``ReadResourceResult``."""
        return await self.client_session.read_resource(uri)

    async def list_prompts(self) -> list[dict[str, Any]]:
        """The ``prompts`` of every page of ``prompts/list``."""
        return await self.client_session.list_prompts()

    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        max_rounds: int = MAX_ROUNDS,
    ) -> dict[str, Any]:
        """``prompts/get``; returns the ``GetPromptResult`` (2026-07-28: as
        :meth:`call_tool`)."""
        return await self.client_session.get_prompt(name, arguments, max_rounds=max_rounds)

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        id: RequestId | None = None,
        max_rounds: int = MAX_ROUNDS,
    ) -> dict[str, Any]:
        """``tools/call``; returns the ``CallToolResult`` (a tool error is ``isError: true``).

        On 2026-07-28 each input request of an ``InputRequiredResult`` is answered by the
        handler (:func:`answer_input`) and the call retried (at most ``max_rounds`` rounds).

        Raises:
            ClientRequestError: a JSON-RPC error (unknown tool, a refused ``requestState``…).
            RuntimeError: 2026-07-28 only: more than ``max_rounds`` rounds
                (:class:`~._rounds.InputRoundsExhausted`), or an input request the handler
                refused or left unanswered.
        """
        return await self.client_session.call_tool(name, arguments, id=id, max_rounds=max_rounds)

    # -- waiting -------------------------------------------------------------------------------

    async def wait_for(self, predicate: Callable[[], bool]) -> None:
        """Wait until ``predicate()`` holds (re-checked after every inbound message)."""
        while True:
            # A change sets the event; a waiter takes a fresh one before it looks, so a change
            # after the look wakes it (what arrives costs one set, no event of its own).
            if self._changed.is_set():
                self._changed = trio.Event()
            changed = self._changed
            if predicate():
                return
            await changed.wait()

    async def next_server_request(self, after: int = 0) -> ServerRequest:
        """Wait for the server request number ``after`` (0-based) and return it."""
        await self.wait_for(lambda: len(self.server_requests) > after)
        return self.server_requests[after]

    # -- what arrives --------------------------------------------------------------------------

    def _bump(self) -> None:
        self._changed.set()

    def _arrived(self, item: Inbound) -> None:
        if isinstance(item, Refused):
            self.refused.append(item.frame)
        elif self.keep_history and not isinstance(item, Undeliverable):
            self.frames.append(message_object(item))
        self._bump()

    def _record(self, request: ServerRequest) -> None:
        if self.keep_history:
            self.server_requests.append(request)
        self._bump()

    def _serve(self, request: ServerRequest) -> Any:
        self._record(request)
        if self.handler is None:
            return {} if request.method == "ping" else None
        return self.handler(request)

    async def _answer_input(self, request: ServerRequest) -> dict[str, Any]:
        self._record(request)
        return await answer_input(self.handler, request)

    def _notified(self, method: str, params: Mapping[str, Any]) -> None:
        self.notifications.append((method, params))
        self._bump()

    def _unmatched(self, answer: Response | ErrorResponse) -> None:
        if self.keep_history:
            self.unmatched.append(message_object(answer))
        self._bump()


class StdioClient(ScriptedClient):
    """A scripted client of a server subprocess. Open with :func:`open_stdio_client`.

    Attributes:
        process: The server process.
    """

    def __init__(self, wire: StdioWire, handler: Handler | None, keep_history: bool) -> None:
        super().__init__(wire, handler, keep_history)
        self.process = wire.process
        self._stdio = wire

    async def send_raw(self, data: bytes) -> None:
        """Write bytes as they are (add the newline yourself)."""
        await self._stdio.send_raw(data)


class MemoryClient(ScriptedClient):
    """A scripted client of a server in this process. Open with :func:`open_memory_client`.

    Attributes:
        session: The server's side of the connection (for inspection in tests).
    """

    def __init__(self, wire: MemoryWire, handler: Handler | None, keep_history: bool) -> None:
        super().__init__(wire, handler, keep_history)
        self.session = wire.server_session


@asynccontextmanager
async def open_stdio_client(
    command: Sequence[str],
    *,
    handler: Handler | None = None,
    stderr: int | None = subprocess.DEVNULL,
    close_timeout: float = 10.0,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    keep_history: bool = True,
    protocol_version: str = LATEST_SESSION_VERSION,
    capabilities: Mapping[str, Any] | None = None,
) -> AsyncIterator[StdioClient]:
    """Start ``command`` and talk MCP to it over its stdin/stdout.

    On exit stdin is closed (the stdio way of saying goodbye) and the process is waited for
    (killed after ``close_timeout`` seconds).

    Args:
        command: The server command line.
        handler: Answers server requests (see the module docstring).
        stderr: Where the server's stderr goes (default: ``/dev/null``).
        close_timeout: Seconds to wait for the server to exit after EOF.
        cwd: The server's working directory.
        env: The server's environment (default: this process's).
        keep_history: Record every frame and server request; ``False`` for long runs.
        protocol_version: ``2025-06-18`` / ``2025-11-25`` (session: call
            :meth:`StdioClient.initialize`) or ``2026-07-28`` (stateless, input rounds).
        capabilities: Client capabilities; default ``{"elicitation": {"form": {}}}``.
    """
    async with open_stdio_wire(
        command, stderr=stderr, cwd=cwd, env=env, close_timeout=close_timeout
    ) as wire:
        client = StdioClient(wire, handler, keep_history)
        async with client._attached(protocol_version, capabilities, STDIO_CLIENT_INFO):
            yield client


@asynccontextmanager
async def open_memory_client(
    server: Server,
    *,
    handler: Handler | None = None,
    protocol_version: str = LATEST_SESSION_VERSION,
    capabilities: Mapping[str, Any] | None = None,
    initialize: bool = True,
    runtime: Any = None,
    peer_id: str | None = None,
    buffer: int = 16,
    keep_history: bool = True,
    continuations: Mapping[str, Any] | None = None,
) -> AsyncIterator[MemoryClient]:
    """Connect a :class:`MemoryClient` to ``server`` in this process, through the boundary
    stdio uses (:func:`~._memory.open_memory_wire`).

    Example:
        >>> async def main(server):
        ...     def accept(request):
        ...         return {"action": "accept", "content": {"name": "Ada"}}
        ...
        ...     async with open_memory_client(server, handler=accept) as client:
        ...         result = await client.call_tool("greet")

    Args:
        server: The server.
        handler: Answers server requests (``elicitation/create``…; see the module docstring).
        protocol_version: ``2025-06-18`` / ``2025-11-25`` (session) or ``2026-07-28``
            (stateless, MRTR).
        capabilities: Client capabilities; default ``{"elicitation": {"form": {}}}``.
        initialize: Session era: send ``initialize`` and ``notifications/initialized`` first.
        runtime: The elicitation runtime to use; default: ``server.runtime`` if it is running,
            else one opened (and closed) here.
        peer_id: The server session's id (the rate-limit key); default: a fresh one.
        buffer: Capacity of the server → client channel (frames).
        keep_history: Record every server request in :attr:`MemoryClient.server_requests`.
        continuations: Keyword arguments of the server session's 2026-07-28 continuation
            registry (:class:`~erlmcp_py.mcp.mrtr.ContinuationRegistry`: ``mrtr``,
            ``keyring``…).

    On exit the session closes (tool calls are cancelled; their elicitations end
    ``abandoned``) and the client's tasks end.
    """
    async with open_memory_wire(
        server, runtime=runtime, peer_id=peer_id, buffer=buffer, continuations=continuations
    ) as wire:
        client = MemoryClient(wire, handler, keep_history)
        async with client._attached(protocol_version, capabilities, MEMORY_CLIENT_INFO):
            if initialize and not client.stateless:
                await client.initialize()
            yield client
