"""The Streamable HTTP wire: an MCP endpoint reached with POST, GET and DELETE.

Theory of operation
-------------------
Every message goes out as a POST of its own, on a connection of its own (HTTP/1.1 with
``h11`` on trio's sockets, TLS for ``https``). What comes back goes to one inbox that
:meth:`HttpWire.receive` reads:

* a *request*'s POST is answered ``application/json`` (one message) or ``text/event-stream``,
  whose events (server requests, notifications, and at last the response) are read by a task
  of the wire as they arrive, so an ``elicitation/create`` that comes mid-call is answered (by
  another POST) while the call's stream stays open. :meth:`HttpWire.send` returns once the
  answer has begun; it raises when the exchange fails before that (:class:`ConnectionLost`,
  :class:`EndpointNotFound`). A stream that breaks or ends without the answer is an
  :class:`~._wire.Undeliverable` notice for that request. An error answer whose ``id`` is
  ``null`` (the server could not tell which message it answers: a 404 for an ended session)
  answers the request of that POST.
* a notification's or response's POST is accepted (202) before :meth:`HttpWire.send`
  returns.
* in a session (2025-06-18 / 2025-11-25), once ``notifications/initialized`` is sent, a GET
  stream carries what the server says outside any request (list changes, resource updates);
  a server without one (405) is fine.

The session era's ``Mcp-Session-Id`` and ``MCP-Protocol-Version`` are sent once known; a
2026-07-28 request carries the ``MCP-Protocol-Version``, ``Mcp-Method`` and ``Mcp-Name``
headers its body implies (``Mcp-Name``: the tool's or prompt's name, the resource's URI, the
task id of a ``tasks/*`` request). Every request carries the caller's headers (``Authorization``…)
and the user's ``Accept-Language`` when one is given. ``notifications/cancelled`` for a
request whose stream is open closes that POST, which is how Streamable HTTP withdraws a
request; in a session the notification is POSTed too. :meth:`HttpWire.aclose` ends the session
(DELETE). A 404 to a request that names no session (a session's 404 means the session ended)
is :class:`EndpointNotFound`, unless its body is a JSON-RPC "method not found" (the endpoint is
there, the method is not): the URL's path is not an MCP endpoint, and
:func:`endpoint_suggestion` offers the one ``erlmcp-py serve`` has.
"""

from __future__ import annotations

import base64
import codecs
import ssl
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

import h11
import trio

from erlmcp_py.client._stdio import MAX_INBOUND_BYTES
from erlmcp_py.client._wire import (
    ConnectionLost,
    Inbound,
    Refused,
    Undeliverable,
    read_frame,
)
from erlmcp_py.mcp.jsonrpc import (
    METHOD_NOT_FOUND,
    ErrorResponse,
    Message,
    Notification,
    Request,
    RequestId,
    Response,
    dumps,
    message_object,
)
from erlmcp_py.mcp.meta import MODERN_VERSIONS

__all__ = [
    "ENDPOINT_PATH",
    "EndpointNotFound",
    "HttpWire",
    "endpoint_suggestion",
    "open_http_wire",
]

#: The path of ``erlmcp-py serve``'s MCP endpoint.
ENDPOINT_PATH: Final = "/mcp"
_NAMED: Final = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}
_READ: Final = 65536
_INBOX: Final = 64  # messages read ahead of the session


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


def _header_value(text: str) -> str:
    """``Mcp-Name`` as sent: plain when printable ASCII, else ``=?base64?…?=``."""
    if text.isascii() and text.isprintable() and text.strip() == text:
        return text
    return f"=?base64?{base64.b64encode(text.encode()).decode()}?="


def _why(exc: BaseException) -> str:
    """What went wrong, in words: trio's stream errors carry the reason (a TLS certificate
    refused, a reset) as their cause."""
    reason = exc.__cause__ if exc.__cause__ is not None else exc
    return str(reason) or type(reason).__name__


def _key(id: object) -> str:
    """A request id as a dictionary key that keeps ``1`` and ``"1"`` apart."""
    return f"{type(id).__name__}:{id}"


@dataclass(frozen=True, slots=True)
class _Head:
    status: int
    headers: Mapping[str, str]

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0].strip().lower()


class _Events:
    """Server-sent events from a byte stream: each event's joined ``data`` lines."""

    def __init__(self) -> None:
        self._buffer = ""
        self._data: list[str] = []
        # a character may be split between two reads
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def feed(self, chunk: bytes) -> list[str]:
        self._buffer += self._decoder.decode(chunk)
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


class HttpWire:
    """A Streamable HTTP endpoint (see the module docstring). Open with :func:`open_http_wire`.

    Attributes:
        url: The endpoint.
        protocol: The protocol version in use, once set (sent as ``MCP-Protocol-Version``).
        timeout: Seconds to connect, and to end the session on close.
    """

    def __init__(
        self,
        url: str,
        nursery: trio.Nursery,
        *,
        headers: Sequence[tuple[str, str]] = (),
        accept_language: str | None = None,
        timeout: float = 30.0,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.url = url
        self.protocol: str | None = None
        self.timeout = timeout
        self._nursery = nursery
        self._extra = list(headers)
        self._accept_language = accept_language
        self._ssl = ssl_context
        self._session_id: str | None = None
        self._inbox_in, self._inbox = trio.open_memory_channel[Inbound](_INBOX)
        self._streams: dict[str, trio.CancelScope] = {}
        self._listening = False
        self._closed = False

    @property
    def session_id(self) -> str | None:
        """The ``Mcp-Session-Id`` the server gave (session era), once it has."""
        return self._session_id

    @property
    def modern(self) -> bool:
        """Whether the protocol in use is the stateless era's (2026-07-28)."""
        return self.protocol in MODERN_VERSIONS

    def set_protocol(self, version: str) -> None:
        """Send ``MCP-Protocol-Version: version`` from now on."""
        self.protocol = version

    # -- sending ------------------------------------------------------------------------------

    async def send(self, message: Message) -> None:
        """POST one message (see the module docstring).

        Raises:
            ConnectionLost: the exchange failed before an answer began (the message says how).
            EndpointNotFound: the URL is no MCP endpoint.
        """
        if self._closed:
            raise ConnectionLost(f"{self.url}: the connection is closed")
        if isinstance(message, Request):
            await self._nursery.start(self._request, message)
            return
        if isinstance(message, Notification) and message.method == "notifications/cancelled":
            params = message.params if isinstance(message.params, Mapping) else {}
            scope = self._streams.get(_key(params.get("requestId")))
            if scope is not None:
                scope.cancel()  # closing the POST withdraws the request
            if self.modern:
                return  # no session for the notification to reach
        await self._post(message_object(message))
        if (
            isinstance(message, Notification)
            and message.method == "notifications/initialized"
            and self._session_id is not None
            and not self._listening
        ):
            self._listening = True
            self._nursery.start_soon(self._listen)

    async def _post(self, body: Mapping[str, Any]) -> None:
        """POST a notification or a response: accepted, or an error."""
        async with self._exchange("POST", body) as (head, chunks):
            if 200 <= head.status < 300:
                return
            frame = read_frame(b"".join([chunk async for chunk in chunks]), MAX_INBOUND_BYTES)
            if self._no_endpoint(head, frame):
                raise EndpointNotFound(self.url)
            if not isinstance(frame, Response | ErrorResponse):
                raise ConnectionLost(f"{self.url}: HTTP {head.status}")

    async def _request(
        self, request: Request, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """One request's exchange; ``started`` once its answer has begun."""
        key = _key(request.id)
        started = False
        with trio.CancelScope() as scope:
            self._streams[key] = scope
            try:
                async with self._exchange("POST", message_object(request)) as (head, chunks):
                    if head.content_type == "text/event-stream" and head.status == 200:
                        task_status.started()
                        started = True
                        await self._stream(request.id, chunks)
                        return
                    frame = await self._json_answer(request.id, head, chunks)
                    await self._deliver(frame)
                    task_status.started()
                    started = True
            except ConnectionLost as exc:
                if not started:
                    raise
                await self._deliver(Undeliverable(request.id, exc))
            finally:
                self._streams.pop(key, None)
        if not started:  # closed (or withdrawn) before its answer began
            raise ConnectionLost(f"{self.url}: the request was withdrawn")

    async def _stream(self, id: RequestId, chunks: AsyncIterator[bytes]) -> None:
        """Route a request's event stream until its answer."""
        events = _Events()
        async for chunk in chunks:
            for data in events.feed(chunk):
                item = read_frame(data.encode(), MAX_INBOUND_BYTES)
                await self._deliver(item)
                if isinstance(item, Response | ErrorResponse) and item.id == id:
                    return
        raise ConnectionLost(f"{self.url}: the event stream ended without an answer")

    async def _json_answer(
        self, id: RequestId, head: _Head, chunks: AsyncIterator[bytes]
    ) -> Message | Refused:
        """The one answer of a request's JSON body."""
        if head.status == 202:
            raise ConnectionLost(f"{self.url}: the request was not answered")
        frame = read_frame(b"".join([chunk async for chunk in chunks]), MAX_INBOUND_BYTES)
        if self._no_endpoint(head, frame):
            raise EndpointNotFound(self.url)
        if isinstance(frame, ErrorResponse) and frame.id is None:
            # The server could not tell what it answers: it answers this POST's request.
            return ErrorResponse(id, frame.code, frame.message, frame.data)
        if isinstance(frame, Response | ErrorResponse):
            return frame
        raise ConnectionLost(f"{self.url}: HTTP {head.status}")

    def _no_endpoint(self, head: _Head, frame: Message | Refused) -> bool:
        """A 404 naming no session, that is not a JSON-RPC "method not found"."""
        method_not_found = isinstance(frame, ErrorResponse) and frame.code == METHOD_NOT_FOUND
        return head.status == 404 and self._session_id is None and not method_not_found

    async def _listen(self) -> None:
        """The session's GET stream: what the server says outside any request."""
        with suppress(ConnectionLost):
            async with self._exchange("GET", None) as (head, chunks):
                if head.status != 200 or head.content_type != "text/event-stream":
                    return  # the server offers none
                events = _Events()
                async for chunk in chunks:
                    for data in events.feed(chunk):
                        await self._deliver(read_frame(data.encode(), MAX_INBOUND_BYTES))

    async def _deliver(self, item: Inbound) -> None:
        with suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await self._inbox_in.send(item)

    # -- receiving ----------------------------------------------------------------------------

    async def receive(self) -> Inbound:
        """The next message (or notice) from any of the open streams.

        Raises:
            ConnectionLost: the wire is closed.
        """
        try:
            return await self._inbox.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            raise ConnectionLost(f"{self.url}: the connection is closed") from None

    async def aclose(self) -> None:
        """End the session, if one was opened (DELETE), and stop reading."""
        if self._closed:
            return
        self._closed = True
        if self._session_id is not None and not self.modern:
            with suppress(ConnectionLost), trio.move_on_after(self.timeout):
                async with self._exchange("DELETE", None) as (_, chunks):
                    async for _ in chunks:
                        pass
        for scope in self._streams.values():
            scope.cancel()
        self._inbox_in.close()

    # -- one exchange -------------------------------------------------------------------------

    def _headers(self, body: Mapping[str, Any] | None) -> list[tuple[str, str]]:
        parts = urlsplit(self.url)
        headers = [
            ("Host", parts.netloc),
            ("Accept", "application/json, text/event-stream"),
            ("User-Agent", "erlmcp-py-client"),
            *self._extra,
        ]
        if self._accept_language is not None and not any(
            name.lower() == "accept-language" for name, _ in self._extra
        ):
            headers.append(("Accept-Language", self._accept_language))
        if body is not None:
            headers.append(("Content-Type", "application/json"))
        if self.protocol is not None:
            headers.append(("MCP-Protocol-Version", self.protocol))
        if self._session_id is not None and not self.modern:
            headers.append(("Mcp-Session-Id", self._session_id))
        if self.modern and body is not None and "method" in body:
            method = str(body["method"])
            headers.append(("Mcp-Method", method))
            params = body.get("params")
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
                self._ssl or ssl.create_default_context(),
                server_hostname=parts.hostname,
                https_compatible=True,  # HTTP servers may close without a TLS close_notify
            )
        return stream

    @asynccontextmanager
    async def _exchange(
        self, verb: str, body: Mapping[str, Any] | None
    ) -> AsyncIterator[tuple[_Head, AsyncIterator[bytes]]]:
        """One HTTP exchange on a connection of its own: the response head and its body."""
        parts = urlsplit(self.url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        data = b"" if body is None else dumps(body)
        headers = [*self._headers(body), ("Content-Length", str(len(data)))]
        headers.append(("Connection", "close"))
        try:
            with trio.fail_after(self.timeout):
                stream = await self._connect()
        except (OSError, trio.TooSlowError) as exc:
            raise ConnectionLost(f"{self.url}: {_why(exc)}") from None
        conn = h11.Connection(h11.CLIENT)
        async with stream:
            try:
                request = h11.Request(method=verb, target=target, headers=headers)
                await stream.send_all(conn.send(request) or b"")
                await stream.send_all(conn.send(h11.Data(data=data)) or b"")
                await stream.send_all(conn.send(h11.EndOfMessage()) or b"")
                while True:
                    event = conn.next_event()
                    if event is h11.NEED_DATA:
                        conn.receive_data(bytes(await stream.receive_some(_READ)))
                        continue
                    if isinstance(event, h11.Response):
                        break
                    if isinstance(event, h11.ConnectionClosed):
                        raise ConnectionLost(f"{self.url}: the server closed the connection")
            except (OSError, trio.BrokenResourceError, h11.ProtocolError) as exc:
                raise ConnectionLost(f"{self.url}: {_why(exc)}") from None
            head = _Head(
                event.status_code,
                {k.decode().lower(): v.decode("latin-1") for k, v in event.headers},
            )
            session = head.headers.get("mcp-session-id")
            if session is not None and not self.modern:
                self._session_id = session

            async def body_chunks() -> AsyncIterator[bytes]:
                while True:
                    try:
                        ev = conn.next_event()
                        if ev is h11.NEED_DATA:
                            conn.receive_data(bytes(await stream.receive_some(_READ)))
                            continue
                    except (OSError, trio.BrokenResourceError, h11.ProtocolError) as exc:
                        raise ConnectionLost(f"{self.url}: {_why(exc)}") from None
                    if isinstance(ev, h11.Data):
                        yield bytes(ev.data)
                    elif isinstance(ev, h11.EndOfMessage | h11.ConnectionClosed):
                        return

            yield head, body_chunks()


@asynccontextmanager
async def open_http_wire(
    url: str,
    *,
    headers: Sequence[tuple[str, str]] = (),
    accept_language: str | None = None,
    timeout: float = 30.0,
    ssl_context: ssl.SSLContext | None = None,
) -> AsyncIterator[HttpWire]:
    """Speak MCP to the Streamable HTTP endpoint at ``url`` (see the module docstring).

    Args:
        url: ``http://`` or ``https://`` endpoint (``…/mcp``).
        headers: Sent on every request (``Authorization: Bearer …`` for a server that wants a
            token).
        accept_language: The user's locale, sent as ``Accept-Language`` on every request
            (unless ``headers`` names one).
        timeout: Seconds to connect, and to end the session on the way out.
        ssl_context: For ``https``: the TLS settings (default: the system's trust store).

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
            headers=headers,
            accept_language=accept_language,
            timeout=timeout,
            ssl_context=ssl_context,
        )
        try:
            yield wire
        finally:
            with trio.CancelScope(shield=True):
                await wire.aclose()
            nursery.cancel_scope.cancel()
