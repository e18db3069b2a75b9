"""An HTTP/1.1 server on trio sockets that runs an ASGI-style application.

Theory of operation
-------------------
One task per connection. It reads a request head, parses it (:func:`parse_head`), calls the
application in that same task with a ``scope``, a ``receive`` and a ``send``, and once the
application returns reads the next head (keep-alive), until the client closes, the connection
is refused or the server stops. No task is started per request and nothing is queued between
the socket and the application:

* ``receive()`` reads the request body from the connection's buffer and the socket directly
  (``Content-Length`` or chunked), one ``http.request`` message per read. Once the body is
  complete it waits for the client to go away and then returns ``http.disconnect``; bytes the
  client sends meanwhile (a pipelined request) are kept for after the response. The wait may be
  cancelled (the application cancels it to wake up, see
  :class:`~erlmcp_py.transports._http_streams.Stream`): a socket read that is cancelled loses
  nothing.
* The scope's ``path`` is the target's path percent-decoded except ``%2F`` (kept encoded, so
  no decoding adds a path segment), ``raw_path`` and ``query_string`` as sent; for an
  absolute-form target the ``host`` header is the target's authority (RFC 9112 §3.2.2).
* ``send()`` writes ``http.response.start`` together with the first body message (a stream
  with nothing to say yet sends an empty one to get its head out): a whole response (the
  first body message is the last) is one ``send_all`` with its ``Content-Length``; a stream is
  sent chunked (HTTP/1.1) or until the connection closes (HTTP/1.0), one ``send_all`` per body
  message. A 204 or 304 goes out without a body or its framing. ``100 Continue`` is written
  when the application first reads a body the client waits to send, unless its response has
  begun (no interim response after it). Every response carries a ``date``. Once a write
  fails the client is gone: later writes are dropped and ``receive()`` answers
  ``http.disconnect``.

Deadlines: one for each request head (``keep_alive_s``, from the end of the last response), none
for reads while the application runs (it bounds its body reads,
:func:`~erlmcp_py.transports._limits.read_body`), one for each write (``write_timeout_s`` plus
a second per :data:`WRITE_MIN_RATE` bytes, from its first wait; per message on a stream); the
values and what they guarantee: docs/architecture.md ("Policy defaults", the invariants
"Connections are released" and "Every request is framed unambiguously").

The socket is read and written directly (:class:`_SocketWire`): a call waits only when the
kernel has nothing to read or no room to write, a deadline is armed only for such a wait, and
a request read with no wait since the one before yields to the scheduler first, so a busy
client cannot starve the others.

Refused without calling the application, the connection closed after the answer: a head over
:data:`MAX_HEAD_BYTES` (431); a head :mod:`~erlmcp_py.transports._http11` cannot frame
unambiguously (400); a transfer coding before ``chunked``, and ``CONNECT`` (501); a major
version other than HTTP/1 (505). A head not yet complete is refused as soon as
a bare CR or LF shows in it; empty lines before a request line are skipped. A malformed
chunked body is answered 400 and closed (cut short once the response has started), as is a
body the client ends the connection inside when the application answered nothing. A response
whose request body was not read to its end closes the connection, as does HTTP/1.0 without
``keep-alive`` and ``connection: close``; such a close lingers (:data:`LINGER_S`, RFC 9112
§9.6). Pipelined requests are answered one after the other, in order. The last resort for an
exception a client's bytes cause logs it (``http_connection_failed``), answers 400 when
nothing was answered yet and closes that connection alone.

Behind a TCP-mode balancer (:func:`serve` with ``proxy_from``) a connection from a trusted
balancer first reads the PROXY protocol header (:mod:`~erlmcp_py.transports._proxy_protocol`)
under the request head's deadline; its client is the connection's ``client``. A missing or
invalid header closes the connection without an answer.

Stopping (:func:`serve` with ``shutdown_trigger``): the listeners close, idle connections are
closed at once, a connection in a request closes after its response, and whatever still runs
``graceful_s`` later is cancelled.
"""

from __future__ import annotations

import errno
import math
import socket as stdlib_socket
import time
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from email.utils import formatdate
from typing import Any, Final

import structlog
import trio

from erlmcp_py.transports._http11 import (
    MAX_HEAD_BYTES,
    MAX_LENGTH_DIGITS,
    ChunkedBody,
    HttpRequestError,
    RequestHead,
    decode_path,
    find_bare_line_end,
    parse_head,
)
from erlmcp_py.transports._proxy_protocol import ProxyHeaderError, parse_proxy_header

__all__ = [
    "KEEP_ALIVE_S",
    "LINGER_S",
    "MAX_HEAD_BYTES",
    "MAX_LENGTH_DIGITS",
    "WRITE_MIN_RATE",
    "WRITE_TIMEOUT_S",
    "HttpRequestError",
    "RequestHead",
    "parse_head",
    "serve",
    "serve_stream",
]

#: Seconds an idle connection stays open by default: longer than the idle expiry of the common
#: HTTP client pools (httpx, which the official MCP SDK uses: 5 s; Node's undici: 4 s; aiohttp:
#: 15 s), so the client ends an idle connection, never the server while a request may be on its
#: way (the client then sees "disconnected without a response"). Also the longest a request
#: head may take to arrive.
KEEP_ALIVE_S: Final = 20.0
#: Seconds a response write may wait for a client that does not take it (plus a second per
#: :data:`WRITE_MIN_RATE` bytes written) before the connection is given up on and closed: a
#: client that stops reading (or reads too slowly) holds its connection no longer than that.
#: nginx and Apache allow 60 s between two writes; this bounds each write whole.
WRITE_TIMEOUT_S: Final = 30.0
#: Bytes per second a client must at least read a response at (as a request body must
#: arrive: 32 KiB/s).
WRITE_MIN_RATE: Final = 32 * 1024
#: Seconds a connection closed after its last response reads on what the client still sends,
#: waiting for the client to close its side (RFC 9112 §9.6).
LINGER_S: Final = 2.0

log = structlog.get_logger("erlmcp.http.server")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

_READ: Final = 65536
#: accept() errors that mean "out of resources for now": wait and accept again.
_ACCEPT_RETRY: Final = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})
#: accept() errors of the one connection being accepted (gone already, or a network error
#: Linux reports on it): accept the next one.
_ACCEPT_GONE: Final = frozenset(
    getattr(errno, name)
    for name in (
        "ECONNABORTED",
        "EPROTO",
        "ENETDOWN",
        "ENOPROTOOPT",
        "EHOSTDOWN",
        "ENONET",
        "EHOSTUNREACH",
        "EOPNOTSUPP",
        "ENETUNREACH",
    )
    if hasattr(errno, name)
)
_REASONS: Final = {
    100: b"Continue",
    200: b"OK",
    202: b"Accepted",
    204: b"No Content",
    400: b"Bad Request",
    401: b"Unauthorized",
    403: b"Forbidden",
    404: b"Not Found",
    405: b"Method Not Allowed",
    406: b"Not Acceptable",
    408: b"Request Timeout",
    409: b"Conflict",
    413: b"Payload Too Large",
    415: b"Unsupported Media Type",
    429: b"Too Many Requests",
    431: b"Request Header Fields Too Large",
    500: b"Internal Server Error",
    501: b"Not Implemented",
    503: b"Service Unavailable",
    505: b"HTTP Version Not Supported",
}
_ASGI: Final = {"version": "3.0", "spec_version": "2.3"}
#: Response phases of the request being served.
_NOTHING, _STARTED, _STREAMING, _DONE = range(4)


_date_cache: list[Any] = [0, b""]


def _status_line(version: str, status: int) -> bytes:
    """The status line and the ``date`` header (formatted once a second)."""
    now = int(time.time())
    if now != _date_cache[0]:
        _date_cache[:] = [now, b"date: %s\r\n" % formatdate(now, usegmt=True).encode()]
    reason = _REASONS.get(status, b"")
    return b"HTTP/%s %d %s\r\n%s" % (version.encode(), status, reason, _date_cache[1])


class _Gone(Exception):
    """The client went away (read side)."""


class _Wire(trio.abc.AsyncResource):
    """What a connection reads and writes: a client socket (:class:`_SocketWire`) or any trio
    stream (:class:`_StreamWire`).

    A read given a ``deadline`` waits for the client at most until then, a write given a
    ``timeout`` at most that long from its first wait; they return ``None`` (a read) or
    ``False`` (a write) when it passes or :meth:`interrupt` is called. Without one they wait
    as long as it takes. ``waited`` is set whenever a call yields to the scheduler; the
    connection clears it.
    """

    __slots__ = ("_timer", "waited")

    def __init__(self) -> None:
        self._timer: trio.CancelScope | None = None  # the deadline of a wait under way
        self.waited = True  # the connection task just started: that was a yield

    def interrupt(self) -> None:
        """End a wait under a deadline now, as if the deadline had passed."""
        if self._timer is not None:
            self._timer.cancel()

    async def receive(self, deadline: float = math.inf) -> bytes | None:
        """Some bytes (``b""`` at the end of the stream); ``None``: the deadline passed."""
        raise NotImplementedError

    async def send_all(self, data: bytes, timeout: float = math.inf) -> bool:
        """Write ``data``; ``False``: the client did not take it within ``timeout`` seconds."""
        raise NotImplementedError

    async def close_write(self) -> bool:
        """Close the sending side alone (the client reads the end); False: cannot."""
        raise NotImplementedError

    async def close_now(self) -> None:
        """Close at once, even in a cancelled scope (the connection's last step)."""
        raise NotImplementedError

    async def aclose(self) -> None:
        raise NotImplementedError


class _SocketWire(_Wire):
    """An accepted TCP connection (a non-blocking socket).

    A read or write is the syscall, and waits for the socket only when the kernel has
    nothing to give or no room: unlike trio's ``SocketStream`` it does not yield to the
    scheduler after a call that did not block, and arms a deadline only for a wait. The
    connection yields before a request when nothing waited since the one before
    (:meth:`_Connection.run`), so a client that keeps it busy cannot starve the others. A
    read that follows one which took less than it asked for (the kernel had no more) waits
    for the socket first instead of trying a read that would fail. ``TCP_NODELAY`` and
    ``TCP_NOTSENT_LOWAT`` come from the listening socket.
    """

    __slots__ = ("_drained", "_sock")

    def __init__(self, sock: stdlib_socket.socket) -> None:
        super().__init__()
        self._sock = sock
        self._drained = False  # the last read took all the kernel had

    async def _wait(self, ready: Callable[[Any], Awaitable[None]], deadline: float) -> bool:
        """Wait for the socket (``ready``: trio's wait_readable or wait_writable) at most until
        ``deadline``; False when it passed first."""
        with trio.move_on_at(deadline) as timer:
            self._timer = timer
            try:
                await ready(self._sock)
            finally:
                self._timer = None
        return not timer.cancelled_caught

    async def receive(self, deadline: float = math.inf) -> bytes | None:
        sock = self._sock
        while True:
            if self._drained:
                self.waited = True
                if deadline == math.inf:  # (waited for here: a parked read keeps one frame less)
                    await trio.lowlevel.wait_readable(sock)
                elif not await self._wait(trio.lowlevel.wait_readable, deadline):
                    return None
            try:
                data = sock.recv(_READ)
            except BlockingIOError:
                self._drained = True  # waited for outside the handler: no exception kept
                continue
            except OSError as exc:
                if sock.fileno() == -1:
                    raise trio.ClosedResourceError from None
                raise trio.BrokenResourceError(exc) from exc
            self._drained = len(data) < _READ
            return data

    async def send_all(self, data: bytes, timeout: float = math.inf) -> bool:
        sock = self._sock
        deadline = math.inf  # armed at the first wait
        with memoryview(data) as view:
            sent = 0
            while sent < len(view):
                try:
                    sent += sock.send(view[sent:])
                    continue
                except BlockingIOError:
                    pass
                except OSError as exc:
                    if sock.fileno() == -1:
                        raise trio.ClosedResourceError from None
                    raise trio.BrokenResourceError(exc) from exc
                self.waited = True
                if timeout == math.inf:
                    await trio.lowlevel.wait_writable(sock)
                    continue
                if deadline == math.inf:
                    deadline = trio.current_time() + timeout
                if not await self._wait(trio.lowlevel.wait_writable, deadline):
                    return False
        return True

    async def close_write(self) -> bool:
        try:
            self._sock.shutdown(stdlib_socket.SHUT_WR)
        except OSError:  # gone already
            return False
        return True

    async def close_now(self) -> None:
        # a close never waits: no cancel scope nor yield around it (the task ends next)
        if self._sock.fileno() != -1:
            trio.lowlevel.notify_closing(self._sock)
            self._sock.close()

    async def aclose(self) -> None:
        await self.close_now()
        await trio.lowlevel.checkpoint()


class _StreamWire(_Wire):
    """Any trio stream (whose calls yield, as trio's streams do: each one sets ``waited``)."""

    __slots__ = ("_stream",)

    def __init__(self, stream: trio.abc.Stream) -> None:
        super().__init__()
        self._stream = stream

    async def receive(self, deadline: float = math.inf) -> bytes | None:
        self.waited = True
        with trio.move_on_at(deadline) as timer:
            self._timer = timer
            try:
                return bytes(await self._stream.receive_some(_READ))
            finally:
                self._timer = None
        return None

    async def send_all(self, data: bytes, timeout: float = math.inf) -> bool:
        self.waited = True
        with trio.move_on_after(timeout) as timer:
            self._timer = timer
            try:
                await self._stream.send_all(data)
            finally:
                self._timer = None
            return True
        return False

    async def close_write(self) -> bool:
        stream = self._stream
        if not isinstance(stream, trio.abc.HalfCloseableStream):
            return False
        try:
            await stream.send_eof()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return False
        return True

    async def close_now(self) -> None:
        await trio.aclose_forcefully(self._stream)

    async def aclose(self) -> None:
        await self._stream.aclose()


class _Connection:
    """One client connection: its buffer, its current request's body state, its deadline."""

    __slots__ = (
        "_app",
        "_body_done",
        "_broken",
        "_buffer",
        "_chunks",
        "_client",
        "_continue",
        "_cut_short",
        "_delivered",
        "_eof",
        "_head_only",
        "_headers",
        "_keep_alive_s",
        "_left",
        "_lingers",
        "_phase",
        "_proxied",
        "_refused",
        "_server",
        "_status",
        "_stream",
        "_version",
        "_will_close",
        "_write_timeout_s",
        "closing",
        "idle",
    )

    def __init__(
        self,
        stream: _Wire,
        app: App,
        client: tuple[str, int] | None,
        server: tuple[str, int] | None,
        keep_alive_s: float,
        write_timeout_s: float,
        proxied: bool = False,
    ) -> None:
        self._stream = stream
        self._proxied = proxied  # starts with a PROXY protocol header naming the client
        self._app = app
        self._client = client
        self._server = server
        self._keep_alive_s = keep_alive_s
        self._write_timeout_s = write_timeout_s
        self._buffer = bytearray()
        self._eof = False  # the client closed its side
        self._broken = False  # a write failed or timed out: the client is given up on
        self._lingers = False  # a last response went out: half-close, then drain (§9.6)
        self.idle = True
        self.closing = False
        self._reset()

    def _reset(self) -> None:
        self._left = 0
        self._chunks: ChunkedBody | None = None  # a chunked body's decoder
        self._body_done = True
        self._delivered = False
        self._continue = False
        self._phase = _NOTHING
        self._status = 200
        self._headers: Iterable[tuple[bytes, bytes]] = ()
        self._head_only = False
        self._will_close = False
        self._refused = False  # the body was refused: the application's answer is dropped
        self._cut_short = False  # the client ended the connection inside the body
        self._version = "1.1"

    def stop_when_idle(self) -> None:
        """Close now when between requests, else after the current response."""
        self.closing = True
        if self.idle:
            self._stream.interrupt()

    async def run(self, connections: set[_Connection] | None = None) -> None:
        """Serve requests until the connection closes (listed in ``connections`` meanwhile)."""
        stream = self._stream
        if connections is not None:
            connections.add(self)
        try:
            if self._proxied and not await self._read_proxy_header(
                trio.current_time() + self._keep_alive_s
            ):
                return
            while not self.closing:
                self._reset()
                self.idle = True
                head = await self._read_head(trio.current_time() + self._keep_alive_s)
                self.idle = False
                if head is None:
                    return
                if not stream.waited:
                    # nothing waited since the last request was read (a pipelined or eager
                    # client): let the others run before serving this one
                    await trio.lowlevel.checkpoint()
                stream.waited = False
                if not await self._serve(head):
                    return
        except (trio.BrokenResourceError, trio.ClosedResourceError, _Gone):
            pass
        except Exception:
            # the last resort: bytes this layer did not foresee end this connection alone (the
            # server goes on serving the others), with a 400 when nothing was answered yet
            log.exception("http_connection_failed", client=self._client)
            if self._phase in (_NOTHING, _STARTED):
                self._phase = _DONE
                await self._refuse(400, "bad request")
        finally:
            try:
                if self._lingers and not (self._eof or self._broken or self.closing):
                    self.idle = True  # a stop ends the lingering at once
                    await self._linger()
            finally:
                if connections is not None:
                    connections.discard(self)
                await stream.close_now()

    async def _linger(self) -> None:
        """Close after a last response as RFC 9112 §9.6 asks: the sending side first, then read
        (and drop) what the client still sends until it closes, at most :data:`LINGER_S`.
        Closed at once with bytes unread, the connection would be reset, and a reset can
        destroy the response before the client reads it."""
        stream = self._stream
        if not await stream.close_write():
            return
        deadline = trio.current_time() + LINGER_S
        while True:
            try:
                if not await stream.receive(deadline):  # the client closed, or the deadline
                    return
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return

    async def _fill(self, deadline: float = math.inf) -> None:
        """Read once from the socket into the buffer (``_Gone`` at the end of the stream or
        once ``deadline`` passed)."""
        if self._eof:
            raise _Gone
        try:
            data = await self._stream.receive(deadline)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            data = b""
        if data is None:
            raise _Gone
        if not data:
            self._eof = True
            raise _Gone
        self._buffer += data

    async def _read_proxy_header(self, deadline: float) -> bool:
        """Read the PROXY protocol header a trusted balancer starts the connection with, by
        ``deadline``; the client it names becomes the connection's. False: it did not come or
        is invalid, and the connection closes without an answer (the protocol's receiver must
        not guess)."""
        while True:
            try:
                header = parse_proxy_header(self._buffer)
            except ProxyHeaderError as exc:
                log.info("proxy_header_refused", peer=self._client, why=str(exc))
                return False
            if header is not None:
                break
            try:
                await self._fill(deadline)
            except _Gone:
                return False
        del self._buffer[: header.length]
        if header.client is not None:
            self._client = header.client
        return True

    async def _read_head(self, deadline: float) -> RequestHead | None:
        """The next request head, read by ``deadline`` (else ``None``: the connection closes,
        as after a head refused, answered here)."""
        buffer = self._buffer
        start = 0
        while True:
            while buffer.startswith(b"\r\n"):  # empty lines before a request: ignored (§2.2)
                del buffer[:2]
                start = 0
            end = buffer.find(b"\r\n\r\n", start)
            if end >= 0:
                break
            if buffer and find_bare_line_end(buffer, start):  # refused now, not at the deadline
                await self._refuse(400, "bare CR or LF in the request head")
                return None
            if len(buffer) > MAX_HEAD_BYTES:
                await self._refuse(431, "request head too large")
                return None
            start = max(0, len(buffer) - 3)
            try:
                await self._fill(deadline)
            except _Gone:
                return None
        if end > MAX_HEAD_BYTES:
            await self._refuse(431, "request head too large")
            return None
        raw = bytes(buffer[:end])
        del buffer[: end + 4]
        try:
            return parse_head(raw)
        except HttpRequestError as refused:
            await self._refuse(refused.status, refused.reason)
            return None

    async def _refuse(self, status: int, reason: str) -> None:
        log.info("http_request_refused", status=status, why=reason)
        body = f"{reason}\n".encode()
        head = _status_line("1.1", status) + (
            b"content-type: text/plain\r\ncontent-length: %d\r\nconnection: close\r\n\r\n"
            % len(body)
        )
        await self._write(head + body)
        self._will_close = self._lingers = True

    async def _write(self, data: bytes) -> None:
        """Write ``data`` within the write timeout (plus a second per :data:`WRITE_MIN_RATE`
        bytes), else give up on the client."""
        if self._broken:
            return
        timeout = self._write_timeout_s + len(data) / WRITE_MIN_RATE
        try:
            if not await self._stream.send_all(data, timeout):
                log.info("http_write_timed_out", client=self._client, size=len(data))
                self._broken = True  # the client does not read: given up on
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self._broken = True

    async def _serve(self, head: RequestHead) -> bool:
        """Run the application for one request; whether the connection stays open."""
        self._version = head.version
        self._left = head.length
        self._chunks = ChunkedBody() if head.chunked else None
        self._body_done = not head.chunked and not head.length
        self._continue = head.expect_continue and not self._body_done
        self._head_only = head.method == "HEAD"
        scope: Scope = {
            "type": "http",
            "asgi": _ASGI,
            "http_version": head.version,
            "method": head.method,
            "scheme": "http",
            "path": decode_path(head.path),
            "raw_path": head.path,
            "query_string": head.query,
            "root_path": "",
            "headers": head.headers,
            "client": self._client,
            "server": self._server,
        }
        if not head.keep_alive or self.closing:
            self._will_close = True
        try:
            await self._app(scope, self._receive, self._send)
        except Exception:
            log.exception("http_app_failed", method=head.method)
            if self._phase == _NOTHING and not self._refused:
                self._status, self._headers = 500, [(b"content-type", b"text/plain")]
                self._will_close = True
                await self._write_head(b"Internal Server Error\n", more=False)
            return False
        if self._refused:  # answered already (or cut short)
            return False
        if self._phase == _NOTHING and self._cut_short:  # an incomplete request (RFC 9112 §8)
            await self._refuse(400, "request body cut short")
            return False
        if self._phase == _NOTHING:  # the application answered nothing
            self._status, self._headers = 500, [(b"content-type", b"text/plain")]
            await self._write_head(b"no response\n", more=False)
        elif self._phase == _STARTED:  # a start without a body: an empty one
            await self._write_head(b"", more=False)
        elif self._phase == _STREAMING:  # a streamed response left open: ended here
            self._phase = _DONE
            await self._write(self._frame(b"", more=False))
        return not (self._will_close or self._broken or self._eof or self.closing)

    # -- receive ------------------------------------------------------------------------------

    async def _receive(self) -> Message:
        if self._refused:
            return {"type": "http.disconnect"}
        if self._body_done:
            if not self._delivered:  # a request without a body: one empty message first
                self._delivered = True
                return {"type": "http.request", "body": b"", "more_body": False}
            # the body is read: wait for the client to go away, keeping what it sends meanwhile
            while not (self._eof or self._broken):
                if len(self._buffer) > MAX_HEAD_BYTES:
                    await trio.sleep_forever()  # a client far ahead: stop reading, keep waiting
                try:
                    data = await self._stream.receive()
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    data = b""
                if not data:
                    self._eof = True
                    break
                self._buffer += data
            return {"type": "http.disconnect"}
        if self._continue:
            self._continue = False
            if self._phase == _NOTHING:  # never once the response has begun (RFC 9110 §15.2)
                await self._write(b"HTTP/1.1 100 Continue\r\n\r\n")  # interim: no date
        try:
            chunks = self._chunks
            body = await (self._read_length() if chunks is None else self._read_chunked(chunks))
        except _Gone:
            self._body_done = self._delivered = self._cut_short = True
            return {"type": "http.disconnect"}
        except Exception as exc:  # a malformed body (or bytes the reader did not foresee)
            refused = exc if isinstance(exc, HttpRequestError) else None
            if refused is None:
                log.exception("http_connection_failed", client=self._client)
                refused = HttpRequestError(400, "bad request")
            # refused (unless a response already started: then cut short), and the
            # application told the client is gone; what it sends next is dropped
            self._body_done = self._delivered = self._refused = self._will_close = True
            if self._phase in (_NOTHING, _STARTED):
                await self._refuse(refused.status, refused.reason)
            else:
                log.info("http_request_refused", status=refused.status, why=refused.reason)
            return {"type": "http.disconnect"}
        self._delivered = self._body_done
        return {"type": "http.request", "body": body, "more_body": not self._body_done}

    async def _read_length(self) -> bytes:
        if not self._buffer:
            await self._fill()
        take = min(self._left, len(self._buffer))
        body = bytes(self._buffer[:take])
        del self._buffer[:take]
        self._left -= take
        self._body_done = not self._left
        return body

    async def _read_chunked(self, chunks: ChunkedBody) -> bytes:
        """The body bytes of the chunks now in the buffer (reading once when there are none)."""
        while True:
            body = chunks.read(self._buffer)
            if body or chunks.done:
                self._body_done = chunks.done
                return body
            await self._fill()

    # -- send ---------------------------------------------------------------------------------

    async def _send(self, message: Message) -> None:
        if self._refused:
            return
        kind = message["type"]
        phase = self._phase
        if kind == "http.response.start":
            if phase != _NOTHING:
                raise RuntimeError("http.response.start sent twice")
            self._phase = _STARTED
            self._status = int(message["status"])
            self._headers = message.get("headers", ())
            return
        if kind != "http.response.body":
            raise RuntimeError(f"unexpected ASGI message {kind!r}")
        body = bytes(message.get("body", b""))
        more = bool(message.get("more_body", False))
        if phase == _STARTED:
            await self._write_head(body, more=more)
        elif phase == _STREAMING:
            if not more:
                self._phase = _DONE
            await self._write(self._frame(body, more=more))
        elif phase == _NOTHING:
            raise RuntimeError("http.response.body before http.response.start")
        # _DONE: the response is complete; a late body message is dropped

    def _closes_after(self) -> bool:
        if not self._body_done and self._chunks is None and self._left <= len(self._buffer):
            del self._buffer[: self._left]  # a body of known length wholly buffered: skipped
            self._left = 0
            self._body_done = True
        if not self._body_done:
            self._will_close = True
        return self._will_close or self.closing

    async def _write_head(self, body: bytes, *, more: bool) -> None:
        """The status line and headers with the first body message."""
        out = bytearray(_status_line(self._version, self._status))
        length = None
        for name, value in self._headers:
            lower = name.lower()
            if lower == b"content-length":
                length = value
                continue
            if lower == b"connection":
                if b"close" in value.lower():
                    self._will_close = True
                continue
            if lower == b"transfer-encoding":
                continue
            out += name + b": " + value + b"\r\n"
        self._headers = ()  # sent: not kept while the response streams
        bodiless = self._status in (204, 304)  # never a body, nor its framing (RFC 9110 §8.6)
        if bodiless:
            self._phase = _DONE
        elif not more:
            self._phase = _DONE
            # the length of the body sent (a HEAD answer: the one the application declared)
            declared = length if self._head_only and length is not None else b"%d" % len(body)
            out += b"content-length: " + declared + b"\r\n"
        else:
            self._phase = _STREAMING
            if self._version == "1.0":
                self._will_close = True  # the body ends with the connection
            else:
                out += b"transfer-encoding: chunked\r\n"
        if self._closes_after():
            out += b"connection: close\r\n"
            self._lingers = True
        out += b"\r\n"
        if self._head_only or bodiless:
            self._phase = _DONE
            await self._write(bytes(out))
            return
        await self._write(bytes(out) + (self._frame(body, more=True) if more else body))

    def _frame(self, body: bytes, *, more: bool) -> bytes:
        if self._version == "1.0":
            return body
        out = b"%x\r\n%s\r\n" % (len(body), body) if body else b""
        return out if more else out + b"0\r\n\r\n"


class _Server:
    """The listeners and the connections of one :func:`serve`."""

    def __init__(
        self,
        app: App,
        keep_alive_s: float,
        write_timeout_s: float,
        proxy_from: Callable[[str], bool] | None = None,
    ) -> None:
        self.app = app
        self.proxy_from = proxy_from
        self.keep_alive_s = keep_alive_s
        self.write_timeout_s = write_timeout_s
        self.connections: set[_Connection] = set()

    async def accept_loop(self, listener: stdlib_socket.socket, nursery: trio.Nursery) -> None:
        """Accept connections, one task each; each accept after a wait for the listener."""
        server_addr = listener.getsockname()
        addr = (str(server_addr[0]), int(server_addr[1]))
        while True:
            await trio.lowlevel.wait_readable(listener)
            try:
                sock, peer = listener.accept()
            except BlockingIOError:  # another process took it
                continue
            except OSError as exc:
                if exc.errno in _ACCEPT_GONE:
                    continue
                if exc.errno not in _ACCEPT_RETRY:
                    raise
                log.warning("http_accept_failed", error=errno.errorcode.get(exc.errno or 0))
                await trio.sleep(0.1)
                continue
            try:
                sock.setblocking(False)
            except OSError:  # already gone
                sock.close()
                continue
            client = (str(peer[0]), int(peer[1]))
            proxied = self.proxy_from is not None and self.proxy_from(client[0])
            connection = _Connection(
                _SocketWire(sock),
                self.app,
                client,
                addr,
                self.keep_alive_s,
                self.write_timeout_s,
                proxied,
            )
            nursery.start_soon(connection.run, self.connections)


async def serve_stream(
    app: App,
    stream: trio.abc.Stream,
    *,
    keep_alive_s: float = KEEP_ALIVE_S,
    write_timeout_s: float = WRITE_TIMEOUT_S,
    client: tuple[str, int] | None = None,
    server: tuple[str, int] | None = None,
) -> None:
    """Serve the requests of one connection until it closes or is closed.

    Args:
        app: The ASGI-style application.
        stream: The connection (a socket, or any trio stream).
        keep_alive_s: Seconds an idle connection stays open, and the longest a request head
            may take to arrive.
        write_timeout_s: Seconds a response write may wait for the client (plus one per
            :data:`WRITE_MIN_RATE` bytes) before the connection is closed.
        client: The peer's address (the scope's ``client``).
        server: The local address (the scope's ``server``).
    """
    wire = _StreamWire(stream)
    await _Connection(wire, app, client, server, keep_alive_s, write_timeout_s).run()


async def _bind_socket(host: str, port: int, backlog: int) -> stdlib_socket.socket:
    """A listening, non-blocking socket; its accepted sockets inherit ``TCP_NODELAY`` and
    ``TCP_NOTSENT_LOWAT`` (what trio's ``SocketStream`` sets on each)."""
    name = host.strip("[]")
    family = stdlib_socket.AF_INET6 if ":" in name else stdlib_socket.AF_INET
    sock = trio.socket.socket(family, stdlib_socket.SOCK_STREAM)
    try:
        # an IPv6 address keeps the system's dual-stack default ("::" takes IPv4 too)
        sock.setsockopt(stdlib_socket.SOL_SOCKET, stdlib_socket.SO_REUSEADDR, 1)
        sock.setsockopt(stdlib_socket.IPPROTO_TCP, stdlib_socket.TCP_NODELAY, 1)
        if hasattr(stdlib_socket, "TCP_NOTSENT_LOWAT"):
            sock.setsockopt(stdlib_socket.IPPROTO_TCP, stdlib_socket.TCP_NOTSENT_LOWAT, 2**14)
        await sock.bind((name, port))
        sock.listen(backlog)
    except BaseException:
        sock.close()
        raise
    listener = stdlib_socket.socket(family, stdlib_socket.SOCK_STREAM, fileno=sock.detach())
    listener.setblocking(False)
    return listener


def _repr_addr(sock: stdlib_socket.socket) -> str:
    address = sock.getsockname()
    if sock.family == stdlib_socket.AF_INET6:
        return f"http://[{address[0]}]:{address[1]}"
    return f"http://{address[0]}:{address[1]}"


async def serve(
    app: App,
    host: str,
    port: int,
    *,
    keep_alive_s: float = KEEP_ALIVE_S,
    write_timeout_s: float = WRITE_TIMEOUT_S,
    graceful_s: float = 1.0,
    backlog: int = 1024,
    proxy_from: Callable[[str], bool] | None = None,
    shutdown_trigger: Callable[[], Awaitable[object]] | None = None,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``app`` on ``host:port`` until cancelled or ``shutdown_trigger`` returns.

    Args:
        app: The ASGI-style application (``http`` scopes only; no lifespan).
        host: Address to bind (an IPv6 one with or without brackets).
        port: TCP port (0: any free one).
        keep_alive_s: Seconds an idle connection stays open, and the longest a request
            head may take to arrive.
        write_timeout_s: Seconds a response write may wait for the client (plus one per
            :data:`WRITE_MIN_RATE` bytes) before the connection is closed.
        graceful_s: Seconds requests in flight get to finish once stopping.
        backlog: The listen backlog.
        proxy_from: Whether a peer's address is a balancer that starts each connection with
            a PROXY protocol header (:mod:`~erlmcp_py.transports._proxy_protocol`, v1 or v2);
            from such a peer the header is required (else the connection closes unanswered,
            within ``keep_alive_s``) and its client is the scope's ``client``. ``None``: none.
        shutdown_trigger: Returns to stop gracefully.
        task_status: Started with the bound base URLs (``http://host:port``).
    """
    listener = await _bind_socket(host, port, backlog)
    with listener:
        server = _Server(app, keep_alive_s, write_timeout_s, proxy_from)
        async with trio.open_nursery() as connections:
            async with trio.open_nursery() as accepting:
                accepting.start_soon(server.accept_loop, listener, connections)
                task_status.started([_repr_addr(listener)])
                if shutdown_trigger is None:
                    await trio.sleep_forever()
                await shutdown_trigger()
                accepting.cancel_scope.cancel()
            # stopping: no new connection; idle ones close now, busy ones after their answer
            trio.lowlevel.notify_closing(listener)
            listener.close()
            for connection in list(server.connections):
                connection.stop_when_idle()
            connections.cancel_scope.deadline = trio.current_time() + graceful_s
