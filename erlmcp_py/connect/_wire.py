"""The two ways the terminal client reaches a server: a subprocess's stdio, or Streamable HTTP.

Theory of operation
-------------------
A wire sends one JSON-RPC request and returns its response frame (:meth:`Wire.request`), sends
notifications (:meth:`Wire.notify`), and meanwhile hands what the server says on its own to two
callbacks: a server *request* (``elicitation/create``, ``ping``…) to the ``on_request``
coroutine, whose result (or :class:`RpcError`) is sent back as the response, each in a task of
the wire's nursery; a *notification* to ``on_notification``. A ``notifications/cancelled``
naming a request being answered cancels that ``on_request`` task first (nothing is sent back).

:class:`StdioWire` runs the server command in a session of its own (so the terminal's Ctrl-C
reaches the client only) and speaks newline-delimited JSON on its stdin/stdout; one reader task
routes every frame. End of output fails every waiting request with :class:`ConnectionLost`; a
request whose caller is cancelled is withdrawn with ``notifications/cancelled``. (On HTTP,
cancelling a request closes its POST, which is how Streamable HTTP withdraws it.)

:class:`HttpWire` POSTs each message on a connection of its own (HTTP/1.1 with ``h11``, TLS for
``https``). The answer is ``application/json`` (one frame) or ``text/event-stream``, whose
events (server requests, notifications, and at last the response) are routed as they arrive,
so an ``elicitation/create`` that arrives mid-call is answered (by another POST) while the call's
stream stays open. The session era's ``Mcp-Session-Id`` and ``MCP-Protocol-Version`` are sent
once known; a 2026-07-28 request carries the ``MCP-Protocol-Version``, ``Mcp-Method`` and
``Mcp-Name`` headers its body implies. Every request carries the user's ``Accept-Language``.
:meth:`HttpWire.close` ends the session (DELETE). A 404 to a request that names no session
(a session's 404 means the session ended) is :class:`EndpointNotFound`, unless its body is a
JSON-RPC "method not found" (the endpoint is there, the method is not): the URL's path is not
an MCP endpoint, and :func:`endpoint_suggestion` offers the one ``erlmcp-py serve`` has.
"""

from __future__ import annotations

import base64
import itertools
import json
import ssl
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

import h11
import trio

from erlmcp_py.mcp.client import say_goodbye

__all__ = [
    "ENDPOINT_PATH",
    "ConnectionLost",
    "EndpointNotFound",
    "HttpWire",
    "OnNotification",
    "OnRequest",
    "RpcError",
    "StdioWire",
    "Wire",
    "endpoint_suggestion",
    "open_http_wire",
    "open_stdio_wire",
]

OnRequest = Callable[[str, Mapping[str, Any]], Awaitable[Mapping[str, Any]]]
OnNotification = Callable[[str, Mapping[str, Any]], None]

_NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
_READ = 65536
#: The path of ``erlmcp-py serve``'s MCP endpoint.
ENDPOINT_PATH = "/mcp"
_METHOD_NOT_FOUND = -32601


class RpcError(Exception):
    """A JSON-RPC error: the server's answer to our request, or ours to one of its requests."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.data = data


class ConnectionLost(Exception):
    """The server went away before it answered: its output ended (no message), or an HTTP
    exchange failed (the message says how)."""


class EndpointNotFound(ConnectionLost):
    """The URL answered 404 to a request that named no session: no MCP endpoint is there.

    Attributes:
        url: The URL.
        suggestion: The same host's :data:`ENDPOINT_PATH`, when the URL has another path.
    """

    def __init__(self, url: str) -> None:
        super().__init__(f"{url}: HTTP 404")
        self.url = url
        self.suggestion = endpoint_suggestion(url)


def endpoint_suggestion(url: str) -> str | None:
    """``url`` with ``erlmcp-py serve``'s endpoint path (:data:`ENDPOINT_PATH`), or ``None``
    when it already has that path (nothing else is plausible)."""
    parts = urlsplit(url)
    if parts.path == ENDPOINT_PATH:
        return None
    return urlunsplit((parts.scheme, parts.netloc, ENDPOINT_PATH, "", ""))


class Wire(Protocol):
    """One connection to a server (see the module docstring)."""

    async def request(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """Send a request; its result.

        Raises:
            RpcError: the server answered with an error.
            ConnectionLost: no answer can come.
        """
        ...

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification."""
        ...

    def set_protocol(self, version: str) -> None:
        """Remember the negotiated protocol version (sent as a header where the wire has one)."""
        ...


def _result(frame: Mapping[str, Any]) -> dict[str, Any]:
    if "error" in frame:
        err = frame["error"] if isinstance(frame["error"], Mapping) else {}
        raise RpcError(int(err.get("code", -32603)), str(err.get("message", "")), err.get("data"))
    result = frame.get("result")
    return dict(result) if isinstance(result, Mapping) else {}


def _response(id: Any, outcome: Mapping[str, Any] | RpcError) -> dict[str, Any]:
    if isinstance(outcome, RpcError):
        error: dict[str, Any] = {"code": outcome.code, "message": outcome.message}
        return {"jsonrpc": "2.0", "id": id, "error": error}
    return {"jsonrpc": "2.0", "id": id, "result": dict(outcome)}


async def _answer(on_request: OnRequest, frame: Mapping[str, Any]) -> dict[str, Any]:
    params = frame.get("params")
    try:
        result: Mapping[str, Any] | RpcError = await on_request(
            str(frame["method"]), params if isinstance(params, Mapping) else {}
        )
    except RpcError as exc:
        result = exc
    return _response(frame["id"], result)


@dataclass(eq=False)
class _Serving:
    """The server requests being answered, by id, so that ``notifications/cancelled`` can stop
    one (its prompt closes and nothing is sent back, as the specification asks)."""

    scopes: dict[Any, trio.CancelScope] = field(default_factory=dict)

    async def answer(
        self, on_request: OnRequest, frame: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        key = json.dumps(frame["id"])
        with trio.CancelScope() as scope:
            self.scopes[key] = scope
            try:
                return await _answer(on_request, frame)
            finally:
                self.scopes.pop(key, None)
        return None

    def cancelled(self, params: Mapping[str, Any]) -> None:
        scope = self.scopes.get(json.dumps(params.get("requestId")))
        if scope is not None:
            scope.cancel()

    def route(
        self,
        frame: Mapping[str, Any],
        wire: StdioWire | HttpWire,
        send: Callable[[Mapping[str, Any]], Awaitable[Any]],
    ) -> bool:
        """Take a request or notification from the server (a request is answered through
        ``send`` in a task of ``wire``'s); ``False``: a response, the caller's to match."""
        if "method" not in frame:
            return False
        if "id" in frame:
            wire.nursery.start_soon(self._answer_and_send, wire.on_request, frame, send)
            return True
        params = frame.get("params")
        params = params if isinstance(params, Mapping) else {}
        if frame["method"] == "notifications/cancelled":
            self.cancelled(params)
        wire.on_notification(str(frame["method"]), params)
        return True

    async def _answer_and_send(
        self,
        on_request: OnRequest,
        frame: Mapping[str, Any],
        send: Callable[[Mapping[str, Any]], Awaitable[Any]],
    ) -> None:
        response = await self.answer(on_request, frame)
        if response is not None:
            with suppress(ConnectionLost):
                await send(response)


@dataclass(eq=False)
class _Waiter:
    arrived: trio.Event = field(default_factory=trio.Event)
    frame: Mapping[str, Any] | None = None


# --------------------------------------------------------------------------------------------
# stdio
# --------------------------------------------------------------------------------------------


@dataclass(eq=False)
class StdioWire:
    """A server subprocess spoken to over its stdin/stdout. Open with :func:`open_stdio_wire`."""

    process: trio.Process
    nursery: trio.Nursery
    on_request: OnRequest
    on_notification: OnNotification
    _ids: Any = field(default_factory=lambda: itertools.count(1))
    _waiting: dict[Any, _Waiter] = field(default_factory=dict)
    _lock: trio.Lock = field(default_factory=trio.Lock)
    _serving: _Serving = field(default_factory=_Serving)
    _closed: bool = False

    async def _send(self, message: Mapping[str, Any]) -> None:
        assert self.process.stdin is not None
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        try:
            async with self._lock:
                await self.process.stdin.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise ConnectionLost(str(exc)) from None

    async def request(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """See :class:`Wire`."""
        if self._closed:
            raise ConnectionLost  # the server has exited
        rid = next(self._ids)
        waiter = self._waiting[rid] = _Waiter()
        try:
            await self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
            await waiter.arrived.wait()
        except trio.Cancelled:
            # Stopped here (Ctrl-C, or the client leaving): tell the server, briefly.
            with trio.CancelScope(shield=True), trio.move_on_after(1), suppress(ConnectionLost):
                await self.notify("notifications/cancelled", {"requestId": rid})
            raise
        finally:
            self._waiting.pop(rid, None)
        if waiter.frame is None:
            raise ConnectionLost  # the server has exited
        return _result(waiter.frame)

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """See :class:`Wire`."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = dict(params)
        await self._send(message)

    def set_protocol(self, version: str) -> None:
        """See :class:`Wire` (stdio has no header to carry it)."""

    def _route(self, frame: Any) -> None:
        if not isinstance(frame, Mapping) or self._serving.route(frame, self, self._send):
            return
        waiter = self._waiting.get(frame.get("id"))
        if waiter is not None:
            waiter.frame = frame
            waiter.arrived.set()

    async def read_frames(self) -> None:
        """Route every frame the server writes, until its output ends."""
        assert self.process.stdout is not None
        buffer = b""
        try:
            async for chunk in self.process.stdout:
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        with suppress(ValueError):
                            self._route(json.loads(line))
        finally:
            self._closed = True
            for waiter in list(self._waiting.values()):
                waiter.arrived.set()


@asynccontextmanager
async def open_stdio_wire(
    command: Sequence[str],
    on_request: OnRequest,
    on_notification: OnNotification,
    *,
    stderr: int | None = subprocess.DEVNULL,
    close_timeout: float = 5.0,
) -> AsyncIterator[StdioWire]:
    """Start ``command`` in a session of its own and speak MCP over its stdio.

    On exit its stdin is closed (the stdio goodbye) and it is waited for, then killed after
    ``close_timeout`` seconds.

    Raises:
        OSError: the command cannot be started.
    """
    process = await trio.lowlevel.open_process(
        list(command),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        start_new_session=True,  # the terminal's Ctrl-C is for the client, not the server
    )
    try:
        async with trio.open_nursery() as nursery:
            wire = StdioWire(process, nursery, on_request, on_notification)
            nursery.start_soon(wire.read_frames)
            try:
                yield wire
            finally:
                await say_goodbye(process, close_timeout)
                nursery.cancel_scope.cancel()
    finally:
        if process.returncode is None:
            process.kill()
            with trio.CancelScope(shield=True):
                await process.wait()


# --------------------------------------------------------------------------------------------
# Streamable HTTP
# --------------------------------------------------------------------------------------------


def _header_value(text: str) -> str:
    """``Mcp-Name`` as sent: plain when printable ASCII, else ``=?base64?…?=``."""
    if text.isascii() and text.isprintable() and text.strip() == text:
        return text
    return f"=?base64?{base64.b64encode(text.encode()).decode()}?="


@dataclass(frozen=True, slots=True)
class _Response:
    status: int
    headers: Mapping[str, str]


class _Events:
    """Server-sent events from a byte stream: each event's joined ``data`` lines."""

    def __init__(self) -> None:
        self._buffer = ""
        self._data: list[str] = []

    def feed(self, text: str) -> list[str]:
        self._buffer += text
        out: list[str] = []
        while True:
            line, sep, rest = self._buffer.partition("\n")
            if not sep:
                return out
            self._buffer = rest
            line = line.rstrip("\r")
            if line == "":
                if self._data:
                    out.append("\n".join(self._data))
                self._data = []
            elif line.startswith("data:"):
                value = line[5:]
                self._data.append(value[1:] if value.startswith(" ") else value)


def _method_not_found(frame: object) -> bool:
    error = frame.get("error") if isinstance(frame, Mapping) else None
    return isinstance(error, Mapping) and error.get("code") == _METHOD_NOT_FOUND


@dataclass(eq=False)
class HttpWire:
    """A Streamable HTTP endpoint. Open with :func:`open_http_wire`."""

    url: str
    nursery: trio.Nursery
    on_request: OnRequest
    on_notification: OnNotification
    modern: bool = False
    extra_headers: Sequence[tuple[str, str]] = ()
    accept_language: str | None = None
    session_id: str | None = None
    protocol: str | None = None
    timeout: float = 30.0
    _ids: Any = field(default_factory=lambda: itertools.count(1))
    _serving: _Serving = field(default_factory=_Serving)

    def set_protocol(self, version: str) -> None:
        """See :class:`Wire`."""
        self.protocol = version

    def _headers(self, message: Mapping[str, Any] | None) -> list[tuple[str, str]]:
        parts = urlsplit(self.url)
        headers = [
            ("Host", parts.netloc),
            ("Accept", "application/json, text/event-stream"),
            ("User-Agent", "erlmcp-py-connect"),
            *self.extra_headers,
        ]
        if self.accept_language is not None and not any(
            name.lower() == "accept-language" for name, _ in self.extra_headers
        ):
            headers.append(("Accept-Language", self.accept_language))
        if message is not None:
            headers.append(("Content-Type", "application/json"))
        if self.protocol is not None:
            headers.append(("MCP-Protocol-Version", self.protocol))
        if self.session_id is not None and not self.modern:
            headers.append(("Mcp-Session-Id", self.session_id))
        if self.modern and message is not None and "method" in message:
            method = str(message["method"])
            headers.append(("Mcp-Method", method))
            params = message.get("params")
            named = params.get(_NAMED.get(method, "")) if isinstance(params, Mapping) else None
            if isinstance(named, str):
                headers.append(("Mcp-Name", _header_value(named)))
        return headers

    async def _connect(self) -> trio.abc.Stream:
        parts = urlsplit(self.url)
        secure = parts.scheme == "https"
        port = parts.port or (443 if secure else 80)
        stream: trio.abc.Stream = await trio.open_tcp_stream(parts.hostname or "", port)
        if secure:
            stream = trio.SSLStream(
                stream,
                ssl.create_default_context(),
                server_hostname=parts.hostname,
                https_compatible=True,  # HTTP servers may close without a TLS close_notify
            )
        return stream

    @asynccontextmanager
    async def _exchange(
        self, verb: str, message: Mapping[str, Any] | None
    ) -> AsyncIterator[tuple[_Response, AsyncIterator[bytes]]]:
        """One HTTP exchange on a connection of its own: the response head and its body."""
        parts = urlsplit(self.url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        body = b"" if message is None else json.dumps(message, ensure_ascii=False).encode()
        headers = [*self._headers(message), ("Content-Length", str(len(body)))]
        headers.append(("Connection", "close"))
        try:
            with trio.fail_after(self.timeout):
                stream = await self._connect()
        except (OSError, trio.TooSlowError) as exc:
            raise ConnectionLost(f"{self.url}: {exc}") from None
        conn = h11.Connection(h11.CLIENT)
        async with stream:
            try:
                request = h11.Request(method=verb, target=target, headers=headers)
                await stream.send_all(conn.send(request) or b"")
                await stream.send_all(conn.send(h11.Data(data=body)) or b"")
                await stream.send_all(conn.send(h11.EndOfMessage()) or b"")
                while True:
                    event = conn.next_event()
                    if event is h11.NEED_DATA:
                        conn.receive_data(bytes(await stream.receive_some(_READ)))
                        continue
                    if isinstance(event, h11.Response):
                        break
            except (OSError, trio.BrokenResourceError, h11.ProtocolError) as exc:
                raise ConnectionLost(f"{self.url}: {exc}") from None
            head = _Response(
                event.status_code,
                {k.decode().lower(): v.decode("latin-1") for k, v in event.headers},
            )

            async def body_chunks() -> AsyncIterator[bytes]:
                while True:
                    try:
                        ev = conn.next_event()
                        if ev is h11.NEED_DATA:
                            conn.receive_data(bytes(await stream.receive_some(_READ)))
                            continue
                    except (OSError, trio.BrokenResourceError, h11.ProtocolError) as exc:
                        raise ConnectionLost(f"{self.url}: {exc}") from None
                    if isinstance(ev, h11.Data):
                        yield bytes(ev.data)
                    elif isinstance(ev, h11.EndOfMessage | h11.ConnectionClosed):
                        return

            yield head, body_chunks()

    async def _post(self, message: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """POST one message; the response frame to it (``None`` for a 202)."""
        async with self._exchange("POST", message) as (head, chunks):
            if head.status == 202:
                return None
            session = head.headers.get("mcp-session-id")
            if session is not None and not self.modern:
                self.session_id = session
            kind = head.headers.get("content-type", "").split(";")[0].strip().lower()
            if kind == "text/event-stream":
                events = _Events()
                async for chunk in chunks:
                    for data in events.feed(chunk.decode("utf-8", "replace")):
                        with suppress(ValueError):
                            frame = self._route(json.loads(data), message.get("id"))
                            if frame is not None:
                                return frame
                raise ConnectionLost(f"{self.url}: the event stream ended without an answer")
            body = b"".join([chunk async for chunk in chunks])
            try:
                frame = json.loads(body) if body else None
            except ValueError:
                frame = None
            if head.status == 404 and self.session_id is None and not _method_not_found(frame):
                raise EndpointNotFound(self.url)
            if isinstance(frame, Mapping) and ("result" in frame or "error" in frame):
                return frame
            raise ConnectionLost(f"{self.url}: HTTP {head.status}")

    def _route(self, frame: Any, waiting_for: Any) -> Mapping[str, Any] | None:
        if not isinstance(frame, Mapping) or self._serving.route(frame, self, self._post):
            return None
        return frame if frame.get("id") == waiting_for else None

    async def request(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """See :class:`Wire`."""
        message = {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": params}
        frame = await self._post(message)
        if frame is None:
            raise ConnectionLost(f"{self.url}: the request was not answered")
        return _result(frame)

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """See :class:`Wire`."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = dict(params)
        await self._post(message)

    async def close(self) -> None:
        """End the session, if one was opened (DELETE)."""
        if self.session_id is None:
            return
        with suppress(ConnectionLost), trio.move_on_after(self.timeout):
            async with self._exchange("DELETE", None) as (_, chunks):
                async for _ in chunks:
                    pass


@asynccontextmanager
async def open_http_wire(
    url: str,
    on_request: OnRequest,
    on_notification: OnNotification,
    *,
    modern: bool,
    headers: Sequence[tuple[str, str]] = (),
    accept_language: str | None = None,
) -> AsyncIterator[HttpWire]:
    """Speak MCP to the Streamable HTTP endpoint at ``url``.

    Args:
        url: ``http://`` or ``https://`` endpoint (``…/mcp``).
        on_request: Answers the server's requests.
        on_notification: Receives its notifications.
        modern: 2026-07-28 (stateless: no session; the routing headers on every request).
        headers: Sent on every request (``Authorization: Bearer …`` for a server that wants a
            token).
        accept_language: The user's locale, sent as ``Accept-Language`` on every request
            (unless ``headers`` names one).

    Raises:
        ValueError: ``url`` is not an http(s) URL.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url}")
    async with trio.open_nursery() as nursery:
        wire = HttpWire(
            url,
            nursery,
            on_request,
            on_notification,
            modern=modern,
            extra_headers=headers,
            accept_language=accept_language,
        )
        try:
            yield wire
        finally:
            with trio.CancelScope(shield=True):
                await wire.close()
            nursery.cancel_scope.cancel()
