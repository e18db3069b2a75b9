"""What both sides of the Streamable HTTP endpoint answer with: one open response
(:class:`Stream`), the ASGI writes of a whole response or an SSE stream, a refusal
(:class:`HttpError`) and the count of refusals by reason.

Writes never block the code that produces frames: each stream has a bounded queue, and a
stream whose client does not keep up is ended (a slow client only hurts itself).
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any, Final

import trio

from erlmcp_py.mcp import jsonrpc
from erlmcp_py.mcp.jsonrpc import RequestId

__all__ = [
    "JSON",
    "SERVER_ERROR",
    "SSE",
    "HttpError",
    "Message",
    "Receive",
    "Refusals",
    "Scope",
    "Send",
    "Stream",
    "header",
    "relay",
    "send_events",
    "send_simple",
    "start_sse",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

JSON: Final = "application/json"
SSE: Final = "text/event-stream"
#: JSON-RPC code of transport-level refusals without a better one (as the reference SDK).
SERVER_ERROR: Final = -32000


class HttpError(Exception):
    """A refusal answered with an HTTP status and a JSON-RPC error body."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: int = SERVER_ERROR,
        id: RequestId | None = None,
        data: Any = None,
        headers: Iterable[tuple[bytes, bytes]] = (),
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = jsonrpc.encode_error(id, code, message, data)
        self.headers = list(headers)


class Refusals:
    """The requests the transport's limits refused, counted by reason (``/metrics``)."""

    __slots__ = ("counts", "retry_after")

    def __init__(self, retry_after_s: int) -> None:
        self.counts: Counter[str] = Counter()
        #: The ``Retry-After`` header of a 429 or 503.
        self.retry_after = (b"retry-after", str(retry_after_s).encode())

    def refuse(self, reason: str, status: int, message: str, **fields: Any) -> HttpError:
        """Count a refusal and build its answer (with ``Retry-After``)."""
        self.counts[reason] += 1
        return HttpError(status, message, headers=[self.retry_after], **fields)


class Stream:
    """One open response: a POST waiting for its answer (of a session, or a 2026-07-28
    ``tools/call`` or ``prompts/get``), or a session's GET stream.

    Frames are queued without blocking, up to ``capacity``; the final response of a POST is
    kept aside so that it is never lost to a full queue. The task answering the request
    waits in :meth:`wait`, which also watches for the client going away: while it waits in the
    server's ``receive()`` (which returns only at a disconnect), a push, the end or
    :meth:`wake` wakes it by cancelling that wait, so no task of its own watches the
    connection.
    """

    __slots__ = (
        "_waiter",
        "capacity",
        "closed",
        "final",
        "frames",
        "overflowed",
        "sse",
        "started",
    )

    def __init__(self, capacity: int, *, sse: bool) -> None:
        self.frames: deque[bytes] = deque()
        self.capacity = capacity
        self.sse = sse
        self.final: bytes | None = None
        self.overflowed = False
        self.closed = False
        self.started = False  # the SSE head went out (with the first frame)
        self._waiter: trio.CancelScope | None = None

    def push(self, frame: bytes) -> bool:
        """Queue a frame; False when the stream is closed or its client does not keep up."""
        if self.closed:
            return False
        if len(self.frames) >= self.capacity:
            self.overflowed = True
            self.finish()
            return False
        self.frames.append(frame)
        self.wake()
        return True

    def finish(self, frame: bytes | None = None) -> None:
        """End the stream, after ``frame`` (the response) when given."""
        if frame is not None:
            self.final = frame
        self.closed = True
        self.wake()

    def wake(self) -> None:
        """End the answering task's :meth:`wait` (if it waits)."""
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            waiter.cancel()

    def take(self) -> list[bytes]:
        """Every queued frame, oldest first."""
        frames = list(self.frames)
        self.frames.clear()
        return frames

    async def wait(self, receive: Receive) -> bool:
        """Until a frame is queued, the stream has ended or :meth:`wake` is called; False if
        the client went away."""
        while not self.frames and not self.closed:
            with trio.CancelScope() as waiter:
                self._waiter = waiter
                if (await receive())["type"] == "http.disconnect":
                    self._waiter = None
                    return False
            self._waiter = None
            if waiter.cancelled_caught:
                break
        return True


async def relay(
    stream: Stream, receive: Receive, send: Send, headers: list[tuple[bytes, bytes]]
) -> bool:
    """One turn of the wait of a POST answered as an SSE stream: wait (:meth:`Stream.wait`),
    then write the frames queued, the SSE head (``headers`` in it) with the first; frames
    queued on an ended stream are left to go out with its end. False: the client went away."""
    if not await stream.wait(receive):
        return False
    if stream.frames and not stream.closed:
        if stream.started:
            await send_events(send, stream.take())
        else:
            stream.started = True
            await start_sse(send, headers, stream.take())
    return True


#: Where a request's headers, by lower-case name, are kept in its scope once looked up.
_HEADERS: Final = "erlmcp.headers"


def header(scope: Scope, name: bytes) -> str | None:
    """The first value of header ``name`` (lower case), from a table built once per request."""
    table = scope.get(_HEADERS)
    if table is None:  # reversed: the first value of a name is the one kept
        table = {
            bytes(key).lower(): bytes(value).decode("latin-1")
            for key, value in reversed(list(scope.get("headers", ())))
        }
        scope[_HEADERS] = table
    return table.get(name)


async def send_events(send: Send, frames: list[bytes], *, more: bool = True) -> None:
    """Queued SSE events of an open stream in one body message (``more=False``: the last)."""
    body = b"".join([b"event: message\ndata: " + f + b"\n\n" for f in frames])
    await send({"type": "http.response.body", "body": body, "more_body": more})


async def start_sse(
    send: Send,
    headers: list[tuple[bytes, bytes]],
    frames: list[bytes] | None = None,
    *,
    more: bool = True,
) -> None:
    """The head of an SSE response, sent at once with ``frames`` (none: the head alone;
    ``more=False``: the whole response)."""
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", SSE.encode()),
                (b"cache-control", b"no-cache, no-transform"),
                (b"x-accel-buffering", b"no"),
                *headers,
            ],
        }
    )
    await send_events(send, frames or [], more=more)


async def send_simple(
    send: Send,
    status: int,
    body: bytes = b"",
    content_type: str | None = None,
    headers: Iterable[tuple[bytes, bytes]] = (),
) -> None:
    """A whole response in one write."""
    out = list(headers)
    if content_type is not None:
        out.append((b"content-type", content_type.encode()))
    out.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": out})
    await send({"type": "http.response.body", "body": body, "more_body": False})
