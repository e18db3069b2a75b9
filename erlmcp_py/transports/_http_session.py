"""The session side of the Streamable HTTP endpoint (2025-06-18, 2025-11-25): ``initialize``
opens a :class:`~erlmcp_py.mcp.session.ServerSession` named by ``Mcp-Session-Id``, later POSTs
feed it, GET opens its stream, DELETE ends it (docs/architecture.md, "Streamable HTTP").

*Routing a session's frames.* The session writes every frame through one callback,
:meth:`HttpSession.write`, which picks exactly one channel per frame:

1. a response goes to the POST that carried its request, which then completes;
2. a request or notification related to a client request (:data:`RELATED_REQUEST`: set by
   :class:`~erlmcp_py.mcp.session.RequestPeer` for the runtime's ``elicitation/create`` and
   inherited by tool tasks from the POST handler that fed the ``tools/call``) goes on that
   POST's SSE stream while it is open;
3. anything else goes on the GET stream, or waits in a bounded backlog for one.

A ``tools/call`` or ``prompts/get`` POST is answered as an SSE stream (the response head goes
out with the first event), other requests as ``application/json``; several POST streams of one
session may be open at once, and a POST stream that closes while its call runs cancels the
call as ``notifications/cancelled`` does.
"""

from __future__ import annotations

import json
import secrets
from collections import Counter, deque
from collections.abc import Iterator
from typing import TYPE_CHECKING, Final

import structlog
import trio

from erlmcp_py.core.shares import Refuse, Shares, Shed
from erlmcp_py.mcp import jsonrpc
from erlmcp_py.mcp.jsonrpc import Message as JsonRpcMessage, Notification, Request, RequestId
from erlmcp_py.mcp.session import RELATED_REQUEST, ServerSession, open_session
from erlmcp_py.mcp.stateless import INPUT_METHODS
from erlmcp_py.transports._http_streams import (
    JSON,
    SSE,
    HttpError,
    Receive,
    Refusals,
    Scope,
    Send,
    Stream,
    header,
    relay,
    send_events,
    send_simple,
    start_sse,
)
from erlmcp_py.transports._limits import BodyTooLarge
from erlmcp_py.transports.http_checks import accepts, check_protocol_version_header

if TYPE_CHECKING:
    from erlmcp_py.transports.http import HttpTransport

__all__ = ["SESSION_NOT_FOUND", "HttpSession", "HttpSessions", "classify"]

log = structlog.get_logger("erlmcp.http")

SESSION_NOT_FOUND: Final = -32001

#: How every frame of our encoder with an id starts (:mod:`~erlmcp_py.mcp.jsonrpc` writes
#: ``jsonrpc``, then ``id``, then ``result``, ``error`` or ``method``).
_WITH_ID: Final = b'{"jsonrpc":"2.0","id":'
_DECODER: Final = json.JSONDecoder()


def classify(frame: bytes) -> tuple[bool, RequestId | None]:
    """``(is_response, id)`` of an outgoing frame (our own encoder's output): only its id is
    decoded, not the whole frame."""
    if not frame.startswith(_WITH_ID):
        return False, None  # a notification
    text = frame.decode()
    try:
        id, end = _DECODER.raw_decode(text, len(_WITH_ID))
    except ValueError:  # pragma: no cover - our encoder writes JSON
        return False, None
    if text.startswith(',"method"', end):
        return False, None  # a request
    return True, id if isinstance(id, str | int) and not isinstance(id, bool) else None


class HttpSession:
    """A :class:`ServerSession` and the HTTP streams its frames go to."""

    def __init__(
        self,
        sessions: HttpSessions,
        session_id: str,
        principal: str,
        accept_language: str | None = None,
    ) -> None:
        self.id = session_id
        self.sessions = sessions
        self.principal = principal
        self.accept_language = accept_language  # of the initialize POST: the session's locale
        self.session: ServerSession | None = None
        self.posts: dict[RequestId, Stream] = {}
        self.get_stream: Stream | None = None
        self.backlog: deque[bytes] = deque()
        self.closed = False
        self._wake: trio.CancelScope | None = None  # the host task's wait, cancelled by close
        self.last_active = trio.current_time()
        self.log = log.bind(peer=None)

    def touch(self) -> None:
        """The client used the session now: its idle time starts again, and it is its
        principal's most recently used session."""
        self.last_active = trio.current_time()
        self.sessions.shares.touch(self.id)

    @property
    def id_header(self) -> list[tuple[bytes, bytes]]:
        """The ``Mcp-Session-Id`` header of the session's answers."""
        return [(b"mcp-session-id", self.id.encode())]

    @property
    def busy(self) -> bool:
        """Whether a stream is open (the idle timeout does not run meanwhile)."""
        return bool(self.posts) or self.get_stream is not None

    @property
    def evictable(self) -> bool:
        """Whether ending the session now loses no work of its client: it is running, no POST
        of it awaits its answer, no call of it runs, no request of the server awaits the
        client's answer (an elicitation, a sampling or roots request), and no GET stream of it
        is doing work (open while the session has resource subscriptions, or with frames
        queued). A GET stream open for nothing else is no work: the client learns of the end
        when it reconnects (404), as after any other end of a session."""
        session = self.session
        if session is None or self.closed or self.posts or session.working:
            return False
        stream = self.get_stream
        return stream is None or not (session.subscriptions or stream.frames)

    async def write(self, frame: bytes) -> None:
        """The session's ``send``: route one frame to exactly one channel (never blocks)."""
        is_response, id = classify(frame)
        if is_response:
            stream = self.posts.pop(id, None) if id is not None else None
            if stream is not None:
                stream.finish(frame)
            else:
                self.log.info("response_dropped", id=str(id)[:80], why="its POST is gone")
            return
        related = RELATED_REQUEST.get()
        if related is not None:
            stream = self.posts.get(related)
            if stream is not None and stream.sse:
                if stream.push(frame):
                    return
                self.log.info("post_stream_overflow", id=str(related)[:80])
        self._to_get_stream(frame)

    def _to_get_stream(self, frame: bytes) -> None:
        stream = self.get_stream
        if stream is not None:
            if stream.push(frame):
                return
            self.log.info("get_stream_overflow")
            self.get_stream = None
        if len(self.backlog) >= self.sessions.transport.config.backlog:
            self.log.info("backlog_full", dropped=1)
            self.backlog.popleft()
        self.backlog.append(frame)

    def close(self) -> None:
        """End the session and every open stream, and give back its place (idempotent)."""
        self.closed = True
        self.sessions.shares.remove(self.id)
        if self._wake is not None:
            self._wake.cancel()
        if self.session is not None:
            self.session.close()
        for stream in self.posts.values():
            stream.finish()
        self.posts.clear()
        if self.get_stream is not None:
            self.get_stream.finish()
            self.get_stream = None

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Host the session until DELETE, idleness or transport shutdown."""
        transport = self.sessions.transport
        try:
            async with open_session(
                transport.server,
                transport.runtime,
                self.write,
                max_frame_bytes=transport.max_frame_bytes,
                user=self.principal if transport.config.auth is not None else None,
                client_key=self.principal,
                accept_language=self.accept_language,
            ) as session:
                self.session = session
                self.log = log.bind(peer=session.peer_id)
                task_status.started()
                del task_status  # the start handshake is not kept while the session lives
                idle = transport.config.idle_timeout
                while not self.closed:
                    with trio.CancelScope(deadline=self.last_active + idle) as self._wake:
                        await trio.sleep_forever()
                    if self.closed:
                        break
                    if self.busy:  # an open stream keeps it alive (no use by the client)
                        self.last_active = trio.current_time()
                    elif trio.current_time() >= self.last_active + idle:
                        self.log.info("session_idle_expired")
                        break
        finally:
            self.close()
            self.log.info("session_ended")


def _evictable(hs: HttpSession) -> bool:
    return hs.evictable


async def _dispatch_related(session: ServerSession, message: Request) -> None:
    """Dispatch ``message`` with :data:`RELATED_REQUEST` naming it, so the frames of the call
    it starts go on its POST's stream."""
    token = RELATED_REQUEST.set(message.id)
    try:
        await session.dispatch(message)
    finally:
        RELATED_REQUEST.reset(token)


class HttpSessions:
    """The transport's open sessions, each principal's within its share and all within
    ``max_sessions``, and the requests that name one (or open one: ``initialize``).

    Args:
        transport: The transport they belong to (its server, runtime, policy, principals).
        refusals: Where the transport counts its refusals.
    """

    def __init__(self, transport: HttpTransport, refusals: Refusals) -> None:
        self.transport = transport
        limits = transport.config.limits
        self.shares: Shares[str, HttpSession] = Shares(
            limits.sessions, transport.config.max_sessions
        )
        self.evictions: Counter[str] = Counter()
        self._refusals = refusals
        self._nursery: trio.Nursery | None = None

    def __len__(self) -> int:
        return len(self.shares)

    def values(self) -> Iterator[HttpSession]:
        """Every open session."""
        return iter(self.shares.values())

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Host the sessions until cancelled (``initialize`` is refused while this is not
        running)."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                task_status.started()
                await trio.sleep_forever()
        finally:
            self._nursery = None

    def close_all(self) -> None:
        """End every session."""
        for session in list(self.shares.values()):
            session.close()

    def session_for(self, scope: Scope) -> HttpSession:
        """The session a request names in ``Mcp-Session-Id``, once its checks pass (else
        :class:`HttpError`)."""
        session_id = header(scope, b"mcp-session-id")
        if session_id is None:
            raise HttpError(400, "Bad Request: Mcp-Session-Id header is required")
        hs = self.shares.get(session_id)
        if hs is None or hs.closed or hs.session is None:
            raise HttpError(404, "Session not found", code=SESSION_NOT_FOUND)
        if self.transport.config.auth is not None and hs.principal != self.transport.principal_of(
            scope
        ):
            # another subject's session: as unknown to this one as a made-up id
            raise HttpError(404, "Session not found", code=SESSION_NOT_FOUND)
        reason = check_protocol_version_header(
            header(scope, b"mcp-protocol-version"), hs.session.protocol_version
        )
        if reason is not None:
            raise HttpError(400, f"Bad Request: {reason}")
        hs.touch()
        return hs

    def answer_too_large(self, scope: Scope, id: RequestId, exc: BodyTooLarge) -> None:
        """An oversized body answers request ``id`` of the POST's session: end that request
        (and its elicitation) now. Only the session the request names, and only for its
        principal, as for any other POST."""
        try:
            hs = self.session_for(scope)
        except HttpError:
            return  # no such session (or not this principal's): nothing to end
        assert hs.session is not None
        known = hs.session.answer_too_large(id, exc.size, exc.limit)
        log.info("answer_too_large", size=exc.size, limit=exc.limit, open_request=known)

    async def feed_malformed(self, scope: Scope, body: bytes, send: Send) -> None:
        """A malformed answer to one of the session's requests: the session fails that
        request."""
        hs = self.session_for(scope)
        assert hs.session is not None
        await hs.session.feed(body)
        await send_simple(send, 202)

    async def initialize(self, scope: Scope, message: Request, send: Send) -> None:
        """Open a session for an ``initialize`` POST, answered with its ``Mcp-Session-Id``."""
        if header(scope, b"mcp-session-id") is not None:
            raise HttpError(
                400,
                "Invalid Request: initialize must not carry an Mcp-Session-Id",
                code=jsonrpc.INVALID_REQUEST,
                id=message.id,
            )
        if self._nursery is None:
            raise HttpError(503, "Service Unavailable: the transport is not running")
        principal = self.transport.principal_of(scope)
        admission = self.shares.admit(principal, _evictable)
        if isinstance(admission, Refuse):  # every session that could make room is busy
            if admission.scope == "principal":
                raise self._refusals.refuse(
                    "principal_sessions",
                    429,
                    "Too Many Requests: too many sessions for this client",
                )
            raise self._refusals.refuse("sessions", 503, "Service Unavailable: too many sessions")
        if isinstance(admission, Shed):
            self._evict(admission)
        session_id = secrets.token_urlsafe(32)
        hs = HttpSession(self, session_id, principal, header(scope, b"accept-language"))
        self.shares.add(principal, session_id, hs)
        await self._nursery.start(hs.run)
        assert hs.session is not None
        stream = Stream(1, sse=False)
        hs.posts[message.id] = stream
        await hs.session.dispatch(message)
        hs.posts.pop(message.id, None)
        frame = stream.final
        if frame is None or hs.session.phase == "new":
            hs.close()  # refused initialize: no session
            body = frame or jsonrpc.encode_error(message.id, jsonrpc.INTERNAL_ERROR, "no answer")
            await send_simple(send, 200, body, JSON)
            return
        hs.log.info("session_opened")
        headers = [(b"mcp-session-id", session_id.encode())]
        await send_simple(send, 200, frame, JSON, headers)

    def _evict(self, shed: Shed[str, HttpSession]) -> None:
        """End an idle session to make room for a new one (its next request gets 404)."""
        reason = "principal_sessions" if shed.scope == "principal" else "sessions"
        self.evictions[reason] += 1
        victim = shed.value
        victim.log.info(
            "session_evicted",
            why="principal_share" if shed.scope == "principal" else "max_sessions",
            idle_s=round(trio.current_time() - victim.last_active, 3),
            held=self.shares.held(shed.principal),
        )
        victim.close()

    async def post(
        self, scope: Scope, message: JsonRpcMessage, receive: Receive, send: Send
    ) -> None:
        """A POST of a session's message other than ``initialize``: a request answered on
        its POST (JSON, or an SSE stream for the methods that may ask the client), anything
        else fed to the session and answered 202."""
        hs = self.session_for(scope)
        assert hs.session is not None
        if not isinstance(message, Request):
            await hs.session.dispatch(message)
            await send_simple(send, 202)
            return
        if message.id in hs.posts:
            raise HttpError(
                400,
                "Invalid Request: a request with this id is already in progress",
                code=jsonrpc.INVALID_REQUEST,
                id=message.id,
            )
        sse = message.method in INPUT_METHODS  # their functions may ask the client
        stream = Stream(self.transport.config.stream_queue, sse=sse)
        hs.posts[message.id] = stream
        await _dispatch_related(hs.session, message)
        if sse and stream.final is None:  # refused at once (bad params…): a plain JSON answer
            await self._stream_post(hs, message.id, stream, receive, send)
        else:
            await self._answer_json(hs, message.id, stream, receive, send)

    async def _client_left(self, hs: HttpSession, id: RequestId) -> None:
        """The client dropped the POST of request ``id``: cancel its call (if still running)."""
        if hs.posts.pop(id, None) is not None and hs.session is not None:
            hs.log.info("client_disconnected", id=str(id)[:80])
            await hs.session.dispatch(
                Notification(
                    "notifications/cancelled",
                    {"requestId": id, "reason": "client disconnected"},
                )
            )

    async def _answer_json(
        self,
        hs: HttpSession,
        id: RequestId,
        stream: Stream,
        receive: Receive,
        send: Send,
    ) -> None:
        while not stream.closed:
            if not await stream.wait(receive):
                await self._client_left(hs, id)
                return
            stream.frames.clear()  # nothing is queued on a JSON answer
        if stream.final is None:
            raise HttpError(404, "Session not found", code=SESSION_NOT_FOUND)
        await send_simple(send, 200, stream.final, JSON, hs.id_header)

    async def _stream_post(
        self,
        hs: HttpSession,
        id: RequestId,
        stream: Stream,
        receive: Receive,
        send: Send,
    ) -> None:
        while not stream.closed:  # the head goes out with the first frame, or with the response
            if not await relay(stream, receive, send, hs.id_header):
                await self._client_left(hs, id)
                return
        frames = stream.take()
        if stream.final is not None:
            frames.append(stream.final)
        elif stream.overflowed and hs.posts.pop(id, None) is not None:
            # the client does not keep up: give up on the call, as on a disconnect
            assert hs.session is not None
            await hs.session.dispatch(
                Notification(
                    "notifications/cancelled",
                    {"requestId": id, "reason": "stream overflow"},
                )
            )
        if stream.started:
            await send_events(send, frames, more=False)
        else:
            await start_sse(send, hs.id_header, frames, more=False)

    async def get(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The session's GET stream: what the session sends unrelated to a request."""
        if not accepts(header(scope, b"accept"), SSE):
            raise HttpError(406, "Not Acceptable: Accept must list text/event-stream")
        hs = self.session_for(scope)
        if hs.get_stream is not None:
            raise HttpError(409, "Conflict: a GET stream is already open for this session")
        stream = Stream(self.transport.config.stream_queue, sse=True)
        while hs.backlog and stream.push(hs.backlog[0]):
            hs.backlog.popleft()
        hs.get_stream = stream
        await start_sse(send, hs.id_header, stream.take())
        gone = False
        while not stream.closed:
            if not await stream.wait(receive):
                gone = True
                break
            if stream.frames:
                await send_events(send, stream.take())
        if hs.get_stream is stream:
            hs.get_stream = None
        hs.touch()
        if not gone:
            await send_events(send, stream.take(), more=False)

    async def delete(self, scope: Scope, send: Send) -> None:
        """End the session a DELETE names."""
        hs = self.session_for(scope)
        hs.log.info("session_deleted")
        hs.close()
        await send_simple(send, 200)
