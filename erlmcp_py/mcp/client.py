"""A small scripted MCP client over a server subprocess's stdio (demo, tests, benchmarks).

Not a general-purpose client: it speaks raw JSON-RPC, answers server requests through one
handler, records notifications, and lets a script send anything (including garbage). A
coroutine-function handler runs in a task of its own per request; a plain function is answered
by the reader task (no task of its own).

Both protocol eras: with ``protocol_version`` 2025-06-18 / 2025-11-25 call
:meth:`StdioClient.initialize` first (a session); with 2026-07-28 :meth:`StdioClient.request`
adds the per-request ``_meta`` (version, capabilities, client info) and
:meth:`StdioClient.call_tool` drives the input rounds (:mod:`erlmcp_py.mcp.mrtr_client`): each
input request of an ``InputRequiredResult`` is answered by the same handler, in the caller's
task, and the call retried until its result is complete.
"""

from __future__ import annotations

import inspect
import itertools
import os
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

import pydantic_core
import trio

from erlmcp_py.mcp import jsonrpc
from erlmcp_py.mcp.meta import MODERN_VERSIONS
from erlmcp_py.mcp.mrtr_client import call_until_complete, with_request_meta

__all__ = [
    "DEFAULT_CAPABILITIES",
    "MAX_ROUNDS",
    "ClientRequestError",
    "ServerRequest",
    "StdioClient",
    "answer_input",
    "open_stdio_client",
    "say_goodbye",
]

#: What a scripted client declares unless told otherwise: form elicitation.
DEFAULT_CAPABILITIES: Mapping[str, Any] = {"elicitation": {"form": {}}}
#: Most rounds a scripted client's 2026-07-28 ``call_tool`` sends before it gives up.
MAX_ROUNDS = 16
CLIENT_INFO: Mapping[str, Any] = {"name": "erlmcp-py-scripted-client", "version": "0.1.0"}


class ClientRequestError(Exception):
    """The server answered one of our requests with an error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.data = data


@dataclass(frozen=True, slots=True)
class ServerRequest:
    """A request the server sent us (e.g. ``elicitation/create``)."""

    id: jsonrpc.RequestId
    method: str
    params: Mapping[str, Any]


Handler = Callable[[ServerRequest], Awaitable[Mapping[str, Any] | None] | Mapping[str, Any] | None]
"""Answers a server request: a result object, or ``None`` to leave it unanswered. A plain
function is called by the reader task; a coroutine function runs in a task of its own."""


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


class _Slot:
    """Where the response to one request lands."""

    __slots__ = ("arrived", "response")

    def __init__(self) -> None:
        self.arrived = trio.Event()
        self.response: dict[str, Any] = {}

    def deliver(self, response: dict[str, Any]) -> None:
        self.response = response
        self.arrived.set()


@dataclass
class StdioClient:
    """The client side of one stdio connection. Create with :func:`open_stdio_client`.

    Attributes:
        protocol_version: The version spoken: a session era's (after :meth:`initialize`: the
            negotiated one) or 2026-07-28 (stateless: every :meth:`request` carries ``_meta``).
        capabilities: The client capabilities declared (``initialize`` or every ``_meta``).
    """

    process: trio.Process
    handler: Handler | None = None
    protocol_version: str = "2025-11-25"
    capabilities: Mapping[str, Any] = field(default_factory=lambda: dict(DEFAULT_CAPABILITIES))
    notifications: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)
    server_requests: list[ServerRequest] = field(default_factory=list)
    frames: list[Any] = field(default_factory=list)
    keep_history: bool = True  # False: server_requests and frames stay empty
    _ids: Any = field(default_factory=lambda: itertools.count(1))
    _waiting: dict[Any, _Slot] = field(default_factory=dict)
    _event: trio.Event = field(default_factory=trio.Event)
    _lock: trio.Lock = field(default_factory=trio.Lock)
    _nursery: trio.Nursery | None = None

    async def send_raw(self, data: bytes) -> None:
        """Write bytes as they are (add the newline yourself)."""
        assert self.process.stdin is not None
        async with self._lock:
            await self.process.stdin.send_all(data)

    async def send(self, message: Mapping[str, Any]) -> None:
        """Write one JSON-RPC message."""
        await self.send_raw(pydantic_core.to_json(dict(message)) + b"\n")

    def next_id(self) -> int:
        """A fresh request id."""
        return int(next(self._ids))

    @property
    def modern(self) -> bool:
        """True when this client speaks the stateless era (2026-07-28): no ``initialize``."""
        return self.protocol_version in MODERN_VERSIONS

    def with_meta(self, params: Mapping[str, Any] | None) -> dict[str, Any]:
        """``params`` with the 2026-07-28 per-request ``_meta`` of this client added
        (:func:`~erlmcp_py.mcp.mrtr_client.with_request_meta`)."""
        return with_request_meta(
            params,
            protocol_version=self.protocol_version,
            capabilities=self.capabilities,
            client_info=CLIENT_INFO,
        )

    async def request(
        self, method: str, params: Mapping[str, Any] | None = None, *, id: Any = None
    ) -> dict[str, Any]:
        """Send a request and wait for its response.

        On 2026-07-28 the request's ``_meta`` is filled in (see :meth:`with_meta`).

        Raises:
            ClientRequestError: the server answered with an error.
        """
        if self.modern:
            params = self.with_meta(params)
        raw = await self.request_raw(method, params, id=id)
        if "error" in raw:
            err = raw["error"]
            raise ClientRequestError(err["code"], err["message"], err.get("data"))
        result: dict[str, Any] = raw["result"]
        return result

    async def request_raw(
        self, method: str, params: Mapping[str, Any] | None = None, *, id: Any = None
    ) -> dict[str, Any]:
        """Send a request; return the whole response frame (result or error)."""
        rid = self.next_id() if id is None else id
        slot = self._waiting[rid] = _Slot()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = dict(params)
        try:
            await self.send(message)
            await slot.arrived.wait()
        finally:
            self._forget(rid, slot)
        return slot.response

    async def expect_response(self, id: Any) -> dict[str, Any]:
        """Wait for the response to ``id`` (for requests written with :meth:`send`)."""
        slot = self._waiting[id] = _Slot()
        try:
            await slot.arrived.wait()
        finally:
            self._forget(id, slot)
        return slot.response

    def _forget(self, id: Any, slot: _Slot) -> None:
        if self._waiting.get(id) is slot:
            del self._waiting[id]

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = dict(params)
        await self.send(message)

    async def initialize(
        self,
        capabilities: Mapping[str, Any] | None = None,
        version: str | None = None,
    ) -> dict[str, Any]:
        """``initialize`` then ``notifications/initialized`` (session era only).

        Args:
            capabilities: Declared instead of :attr:`capabilities`.
            version: Asked for instead of :attr:`protocol_version`.

        Returns:
            The initialize result; :attr:`protocol_version` becomes the negotiated version.
        """
        if self.modern:
            raise RuntimeError(f"{self.protocol_version} has no initialize (stateless)")
        result = await self.request(
            "initialize",
            {
                "protocolVersion": version or self.protocol_version,
                "capabilities": dict(
                    capabilities if capabilities is not None else self.capabilities
                ),
                "clientInfo": dict(CLIENT_INFO),
            },
        )
        self.protocol_version = str(result.get("protocolVersion", self.protocol_version))
        await self.notify("notifications/initialized")
        return result

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        id: Any = None,
        max_rounds: int = MAX_ROUNDS,
    ) -> dict[str, Any]:
        """``tools/call``; returns the ``CallToolResult`` (a tool error is ``isError: true``).

        On 2026-07-28 each input request of an ``InputRequiredResult`` is answered by the
        handler (:func:`answer_input`) and the call retried (at most ``max_rounds`` rounds).

        Args:
            name: The tool.
            arguments: Its arguments.
            id: The request id of the (first) ``tools/call``; default: a fresh one.
            max_rounds: 2026-07-28: most times the call is sent.

        Raises:
            ClientRequestError: a JSON-RPC error (unknown tool, a refused ``requestState``…).
            RuntimeError: 2026-07-28 only: more than ``max_rounds`` rounds
                (:class:`~erlmcp_py.mcp.mrtr_client.InputRoundsExhausted`), or an input
                request the handler refused or left unanswered.
        """
        params = {"name": name, "arguments": dict(arguments or {})}
        if not self.modern:
            return await self.request("tools/call", params, id=id)

        async def send(retry: dict[str, Any]) -> dict[str, Any]:
            nonlocal id  # the first round's; the retries take fresh ones
            rid, id = id, None
            return await self.request("tools/call", retry, id=rid)

        return await call_until_complete(send, self._answer_input, params, max_rounds=max_rounds)

    async def _answer_input(
        self, key: str, method: str, params: Mapping[str, Any]
    ) -> dict[str, Any]:
        request = ServerRequest(key, method, params)
        if self.keep_history:
            self.server_requests.append(request)
        return await answer_input(self.handler, request)

    async def answer(self, id: Any, result: Mapping[str, Any]) -> None:
        """Answer a server request by hand."""
        await self.send({"jsonrpc": "2.0", "id": id, "result": dict(result)})

    async def wait_for(self, predicate: Callable[[], bool]) -> None:
        """Wait until ``predicate()`` holds (re-checked after every inbound frame)."""
        while not predicate():
            await self._event.wait()

    async def next_server_request(self, after: int = 0) -> ServerRequest:
        """Wait for the server request number ``after`` (0-based) and return it."""
        await self.wait_for(lambda: len(self.server_requests) > after)
        return self.server_requests[after]

    async def _reader(self) -> None:
        assert self.process.stdout is not None
        buf = b""
        async for chunk in self.process.stdout:
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for line in lines:
                if line.strip():
                    await self._on_frame(pydantic_core.from_json(line))
        self._event.set()

    async def _on_frame(self, frame: Any) -> None:
        if self.keep_history:
            self.frames.append(frame)
        if "method" in frame and "id" in frame:
            request = ServerRequest(frame["id"], frame["method"], frame.get("params") or {})
            if self.keep_history:
                self.server_requests.append(request)
            handler = self.handler
            if handler is not None and self._nursery is not None:
                if inspect.iscoroutinefunction(handler):
                    self._nursery.start_soon(self._handle, request)
                else:
                    result = handler(request)
                    if inspect.isawaitable(result):
                        self._nursery.start_soon(self._finish, request, result)
                    elif result is not None:
                        with suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                            await self.answer(request.id, result)
        elif "method" in frame:
            self.notifications.append((frame["method"], frame.get("params") or {}))
        else:
            waiter = self._waiting.pop(frame.get("id"), None)
            if waiter is not None:
                waiter.deliver(frame)
        self._event.set()
        self._event = trio.Event()

    async def _handle(self, request: ServerRequest) -> None:
        assert self.handler is not None
        await self._finish(request, self.handler(request))

    async def _finish(
        self,
        request: ServerRequest,
        pending: Awaitable[Mapping[str, Any] | None] | Mapping[str, Any] | None,
    ) -> None:
        result = await pending if inspect.isawaitable(pending) else pending
        if result is not None:
            with suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                await self.answer(request.id, result)


async def say_goodbye(process: trio.Process, close_timeout: float) -> None:
    """End a stdio server the stdio way: close its stdin, then wait up to ``close_timeout``
    seconds for it to exit (shielded: this runs on the way out, cancelled or not). The caller
    kills a server still running after that."""
    assert process.stdin is not None
    with trio.CancelScope(shield=True):
        with suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await process.stdin.aclose()
        with trio.move_on_after(close_timeout):
            await process.wait()


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
    protocol_version: str = "2025-11-25",
    capabilities: Mapping[str, Any] | None = None,
) -> AsyncIterator[StdioClient]:
    """Start ``command`` and talk MCP to it over its stdin/stdout.

    On exit stdin is closed (the stdio way of saying goodbye) and the process is waited for
    (killed after ``close_timeout`` seconds).

    Args:
        command: The server command line.
        handler: Answers server requests (see :data:`Handler`).
        stderr: Where the server's stderr goes (default: ``/dev/null``).
        close_timeout: Seconds to wait for the server to exit after EOF.
        cwd: The server's working directory.
        env: The server's environment (default: this process's).
        keep_history: Record every frame and server request (``frames``,
            ``server_requests``); ``False`` for long runs.
        protocol_version: ``2025-06-18`` / ``2025-11-25`` (session: call
            :meth:`StdioClient.initialize`) or ``2026-07-28`` (stateless, input rounds).
        capabilities: Client capabilities; default :data:`DEFAULT_CAPABILITIES`.
    """
    process = await trio.lowlevel.open_process(
        list(command),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        cwd=cwd,
        env=dict(env) if env is not None else None,
    )
    client = StdioClient(
        process,
        handler,
        protocol_version,
        dict(capabilities if capabilities is not None else DEFAULT_CAPABILITIES),
        keep_history=keep_history,
    )
    try:
        async with trio.open_nursery() as nursery:
            client._nursery = nursery
            nursery.start_soon(client._reader)
            try:
                yield client
            finally:
                await say_goodbye(process, close_timeout)
                nursery.cancel_scope.cancel()
    finally:
        if process.returncode is None:
            process.kill()
            with trio.CancelScope(shield=True):
                await process.wait()
