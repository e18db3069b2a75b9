"""Streamable HTTP transport: an ASGI app on an HTTP/1.1 server layer of its own (``_server``).

One endpoint (default ``/mcp``) takes POST, GET and DELETE. What it guarantees (sessions and
their ids, the checks and their statuses, authentication, the client's address and principal,
the shares per principal and the eviction of idle holdings, draining, the hosted page,
``/healthz``, ``/readyz``, ``/metrics``) is in docs/architecture.md ("Invariants", "Policy
defaults"), docs/scaling.md and, for 2026-07-28 requests, docs/mrtr.md ("Over Streamable
HTTP"). This docstring keeps how the frames travel.

*Routing a session's frames.* The session writes every frame through one callback,
:meth:`_HttpSession.write`, which picks exactly one channel per frame:

1. a response goes to the POST that carried its request, which then completes;
2. a request or notification related to a client request (:data:`RELATED_REQUEST`: set by
   :class:`~erlmcp_py.mcp.session.RequestPeer` for the runtime's ``elicitation/create`` and
   inherited by tool tasks from the POST handler that fed the ``tools/call``) goes on that
   POST's SSE stream while it is open;
3. anything else goes on the GET stream, or waits in a bounded backlog for one.

Writes never block the session: each stream has a bounded queue, and a stream whose client
does not keep up is ended (a slow client only hurts itself). A ``tools/call`` or
``prompts/get`` POST is answered as an SSE stream (the response head goes out with the first
event), other requests as ``application/json``; several POST streams of one session may be
open at once, and a POST stream that closes while its call runs cancels the call as
``notifications/cancelled`` does.

*A stateless POST* (2026-07-28: :func:`~erlmcp_py.mcp.meta.is_stateless_request`, or a request
without ``Mcp-Session-Id`` whose ``MCP-Protocol-Version`` names a stateless version) is
answered by the :class:`~erlmcp_py.mcp.stateless.StatelessEndpoint`. A ``tools/call`` or
``prompts/get`` is given a notification sink: its first progress or log notification switches
the answer to an SSE stream (same events as a session's, no ids) whose last event is the
response; once the stream has started, an error response goes out as that last event under
200 instead of its 4xx. Notifications are queued without blocking the tool (bounded by
``stream_queue``; past it they are dropped and counted). The POST's task waits as a session
POST does (:class:`_StatelessPost`: parked in ``receive()``, woken by a queued notification,
which it writes, or by a change of the call). One continuation registry lives as long as
:meth:`HttpTransport.run`; its end cancels every suspended tool.
"""

from __future__ import annotations

import json
import secrets
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field, replace
from functools import lru_cache, partial
from typing import Any, Final

import structlog
import trio

from erlmcp_py.core.outcomes import Tenant
from erlmcp_py.core.shares import Refuse, Shares, Shed
from erlmcp_py.core.versions import STATELESS_VERSIONS
from erlmcp_py.mcp import jsonrpc
from erlmcp_py.mcp.jsonrpc import JsonRpcError, Notification, Request, RequestId
from erlmcp_py.mcp.meta import is_stateless_request
from erlmcp_py.mcp.mrtr import PRINCIPAL_BUSY, ContinuationRegistry, open_continuations
from erlmcp_py.mcp.server import Server
from erlmcp_py.mcp.session import RELATED_REQUEST, ServerSession, open_session
from erlmcp_py.mcp.stateless import INPUT_METHODS, StatelessEndpoint, state_ttl_for
from erlmcp_py.mcp.tasks import (
    TASK_MOVING,
    TASKS_BUSY,
    TASKS_PRINCIPAL_BUSY,
    TaskRegistry,
    open_tasks,
)
from erlmcp_py.transports import _server
from erlmcp_py.transports._frame_head import HEAD_BYTES, frame_head
from erlmcp_py.transports._limits import (
    DEFAULT_BODY_BYTES,
    BodyPolicy,
    BodyTooLarge,
    BodyTooSlow,
    PrincipalCounter,
    PrincipalLimits,
    frame_limit,
    read_body,
)
from erlmcp_py.transports._ops import OPS_PATHS, answer_ops, metrics_registry
from erlmcp_py.transports._page import ElicitationPage, is_page_path
from erlmcp_py.transports._plain_errors import cannot_listen, plain_errors
from erlmcp_py.transports.auth import AuthConfig, AuthRefused, BearerVerifier, metadata_paths
from erlmcp_py.transports.forwarded import TrustedProxies, resolve_client
from erlmcp_py.transports.http_checks import (
    HEADER_MISMATCH,
    HostPolicy,
    accepts,
    check_protocol_version_header,
    check_stateless_headers,
    http_status_for,
    public_origin,
)
from erlmcp_py.transports.principal import principal_for_address

#: The principal of a client address (an ``ipaddress`` parse), kept for the addresses seen last.
_principal_for_address: Final = lru_cache(maxsize=4096)(principal_for_address)

__all__ = ["HttpConfig", "HttpTransport", "Listening", "PrincipalLimits", "serve_http"]

log = structlog.get_logger("erlmcp.http")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

JSON: Final = "application/json"
SSE: Final = "text/event-stream"
#: JSON-RPC code of transport-level refusals without a better one (as the reference SDK).
SERVER_ERROR: Final = -32000
SESSION_NOT_FOUND: Final = -32001


@dataclass(frozen=True, slots=True)
class HttpConfig:
    """Policy of the Streamable HTTP transport.

    Attributes:
        path: The MCP endpoint.
        allowed_hosts: Host names accepted besides the loopback ones (DNS-rebinding guard).
        allowed_origins: Exact origins accepted besides those on an allowed host.
        public_url: Where browsers and clients reach the server when a load balancer or proxy
            stands in front of it (``https://mcp.example.com``; http or https, a host and
            port, no path): the hosted page's links name it (unless the application set
            ``runtime.pages.base_url``), its host is accepted in ``Host`` and its origin in
            ``Origin``. ``None``: the server's own bind address.
        max_frame_bytes: Largest POST body (413 beyond it), at most the server's
            ``frame_bytes`` policy. 1 MiB by default: a JSON parse holds the event loop for
            its whole length (see :data:`~erlmcp_py.transports._limits.DEFAULT_BODY_BYTES`).
        max_sessions: Open sessions at most, over all principals: the last resort behind
            ``limits.sessions``. At it, ``initialize`` evicts the least recently used idle
            session of the principal holding the most, and gets 503 with ``Retry-After`` only
            when no session is idle.
        idle_timeout: Seconds a session without an open stream lives on.
        keep_alive_s: Seconds an idle connection stays open, and the longest a request
            head may take to arrive (:data:`~erlmcp_py.transports._server.KEEP_ALIVE_S`).
        write_timeout_s: Seconds a response write may wait for a client that does not read
            it, plus one per 32 KiB written, before its connection is closed
            (:data:`~erlmcp_py.transports._server.WRITE_TIMEOUT_S`).
        body_grace_s: Seconds a request body may take beyond what ``body_min_rate`` allows.
        body_min_rate: Bytes per second a request body must keep up (408 and close, else).
        limits: Caps per principal; past one, 429 with ``Retry-After`` (at its session share,
            ``initialize`` first evicts the principal's least recently used idle session).
        retry_after_s: The ``Retry-After`` of a 429 or 503.
        ops_port: Serve ``/healthz``, ``/readyz`` and ``/metrics`` on this port of the same
            host instead of beside the MCP endpoint (0: any free one; ``None``: beside it).
        auth: Bearer-token authentication (:mod:`~erlmcp_py.transports.auth`); ``None``: none,
            the principal is the client's address.
        stream_queue: Frames buffered per stream before a slow client's stream is ended.
        backlog: Frames kept for a GET stream that is not connected yet.
        principal_header: Request header naming the principal of 2026-07-28 requests (their
            ``requestState`` is bound to it). Only behind a trusted proxy that authenticates
            the client and sets it; unset or absent, the client's IP address is the principal.
        forwarded_allow_ips: The proxies trusted to name the client: IP addresses, CIDR
            networks, or ``*`` for any peer (a comma-separated string, or one entry per
            item). From such a peer the client's address is the right-most address of
            ``X-Forwarded-For`` (or ``Forwarded: for=``) that is not itself trusted; from any
            other peer those headers are ignored (:mod:`~erlmcp_py.transports.forwarded`).
            Empty (the default): no one; the client's address is the connection's peer.
        continuations: Keyword arguments of the 2026-07-28 continuation registry
            (:class:`~erlmcp_py.mcp.mrtr.ContinuationRegistry`: ``keyring``, ``state_ttl``,
            ``max_continuations``, ``hold_s``); ``state_ttl`` defaults to
            :func:`~erlmcp_py.mcp.stateless.state_ttl_for` the runtime's deadlines.
    """

    path: str = "/mcp"
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    public_url: str | None = None
    max_frame_bytes: int = DEFAULT_BODY_BYTES
    max_sessions: int = 1024
    idle_timeout: float = 300.0
    keep_alive_s: float = _server.KEEP_ALIVE_S
    write_timeout_s: float = _server.WRITE_TIMEOUT_S
    body_grace_s: float = 10.0
    body_min_rate: int = 32 * 1024
    limits: PrincipalLimits = field(default_factory=PrincipalLimits)
    retry_after_s: int = 5
    ops_port: int | None = None
    auth: AuthConfig | None = None
    stream_queue: int = 256
    backlog: int = 256
    principal_header: str | None = None
    forwarded_allow_ips: str | tuple[str, ...] = ()
    continuations: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        try:
            TrustedProxies.parse(self.forwarded_allow_ips)
        except ValueError as exc:
            raise ValueError(f"forwarded_allow_ips: {exc}") from None
        if self.public_url is not None:
            try:
                public_origin(self.public_url)
            except ValueError as exc:
                raise ValueError(f"public_url {exc}") from None


@dataclass(frozen=True, slots=True)
class Listening:
    """What :func:`serve_http` reports once it accepts connections.

    Attributes:
        url: The MCP endpoint URL (first bound address).
        urls: One endpoint URL per bound address.
        transport: The ASGI app (its sessions, for operations and tests).
        ops_url: The operations endpoints' base URL when they have a port of their own.
    """

    url: str
    urls: tuple[str, ...]
    transport: HttpTransport
    ops_url: str | None = None


#: Where a request's verified principal (and its token's subject) is kept in its ASGI scope.
_PRINCIPAL: Final = "erlmcp.principal"
_SUBJECT: Final = "erlmcp.subject"

#: ``data.reason`` of a refusal the client retries later (a full continuation registry or
#: share of tasks, a task whose holder does not answer) -> (HTTP status, refusal counted).
_REGISTRY_FULL: Final[Mapping[str, tuple[int, str]]] = {
    PRINCIPAL_BUSY: (429, "principal_suspended"),
    "busy": (503, "suspended"),
    TASKS_PRINCIPAL_BUSY: (429, "principal_tasks"),
    TASKS_BUSY: (503, "tasks"),
    TASK_MOVING: (503, "task_moving"),  # its holder does not answer: retry (elsewhere)
}


#: What the startup log says of the tasks' records, by whether the store is shared.
_TASKS_KEPT: Final = {
    False: "in this process (the embedded store), for the life of the process at most: "
    "a restart loses every task; --store redis://... keeps them across restarts and replicas",
    True: "in the shared store: another replica takes a task over when this one is gone",
}


class _HttpError(Exception):
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


class _Stream:
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


async def _relay(
    stream: _Stream, receive: Receive, send: Send, headers: list[tuple[bytes, bytes]]
) -> bool:
    """One turn of the wait of a POST answered as an SSE stream: wait (:meth:`_Stream.wait`),
    then write the frames queued, the SSE head (``headers`` in it) with the first; frames
    queued on an ended stream are left to go out with its end. False: the client went away."""
    if not await stream.wait(receive):
        return False
    if stream.frames and not stream.closed:
        if stream.started:
            await _send_events(send, stream.take())
        else:
            stream.started = True
            await HttpTransport._start_sse(send, headers, stream.take())
    return True


class _ClientLeft(Exception):
    """The client closed the POST of a 2026-07-28 call (raised out of its wait)."""


class _StatelessPost:
    """A 2026-07-28 ``tools/call`` or ``prompts/get`` POST: the notification sink of its call
    and the :class:`~erlmcp_py.mcp.mrtr.Waiter` its answer is awaited in.

    The POST's task waits as a session POST does (:func:`_relay`): parked in ``receive()``,
    woken by a notification queued or by a change of the call, writing the notifications
    as they come (the SSE head with the first). The client's disconnect raises
    :class:`_ClientLeft` out of the wait, which cancels the call.
    """

    __slots__ = ("receive", "send", "stream")

    def __init__(self, stream: _Stream, receive: Receive, send: Send) -> None:
        self.stream = stream
        self.receive = receive
        self.send = send

    async def notify(self, method: str, params: Mapping[str, Any]) -> None:
        """The call's sink: queue the notification without blocking the tool; past the
        stream's capacity the client does not keep up, and it and every later one are
        dropped (raised: the registry counts them)."""
        frame = jsonrpc.encode_notification(method, params)  # EncodeError: dropped
        stream = self.stream
        if stream.overflowed or len(stream.frames) >= stream.capacity:
            stream.overflowed = True
            raise trio.BrokenResourceError("the POST's notification stream is full")
        stream.push(frame)

    def wake(self) -> None:
        self.stream.wake()

    async def park(self) -> None:
        if not await _relay(self.stream, self.receive, self.send, []):
            raise _ClientLeft


#: How every frame of our encoder with an id starts (:mod:`~erlmcp_py.mcp.jsonrpc` writes
#: ``jsonrpc``, then ``id``, then ``result``, ``error`` or ``method``).
_WITH_ID: Final = b'{"jsonrpc":"2.0","id":'
_DECODER: Final = json.JSONDecoder()


def _classify(frame: bytes) -> tuple[bool, RequestId | None]:
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


class _HttpSession:
    """A :class:`ServerSession` and the HTTP streams its frames go to."""

    def __init__(
        self,
        transport: HttpTransport,
        session_id: str,
        principal: str,
        accept_language: str | None = None,
    ) -> None:
        self.id = session_id
        self.transport = transport
        self.principal = principal
        self.accept_language = accept_language  # of the initialize POST: the session's locale
        self.session: ServerSession | None = None
        self.posts: dict[RequestId, _Stream] = {}
        self.get_stream: _Stream | None = None
        self.backlog: deque[bytes] = deque()
        self.closed = False
        self._wake: trio.CancelScope | None = None  # the host task's wait, cancelled by close
        self.last_active = trio.current_time()
        self.log = log.bind(peer=None)

    def touch(self) -> None:
        """The client used the session now: its idle time starts again, and it is its
        principal's most recently used session."""
        self.last_active = trio.current_time()
        self.transport._sessions.touch(self.id)

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
        is_response, id = _classify(frame)
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
        if len(self.backlog) >= self.transport.config.backlog:
            self.log.info("backlog_full", dropped=1)
            self.backlog.popleft()
        self.backlog.append(frame)

    def close(self) -> None:
        """End the session and every open stream, and give back its place (idempotent)."""
        self.closed = True
        self.transport._sessions.remove(self.id)
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
        transport = self.transport
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


def _evictable(hs: _HttpSession) -> bool:
    return hs.evictable


def _resumes(message: Request) -> bool:
    """Whether a request continues a suspended 2026-07-28 call (carries ``requestState``)."""
    params = message.params
    return isinstance(params, Mapping) and "requestState" in params


#: Where a request's headers, by lower-case name, are kept in its scope once looked up.
_HEADERS: Final = "erlmcp.headers"


def _header(scope: Scope, name: bytes) -> str | None:
    """The first value of header ``name`` (lower case), from a table built once per request."""
    table = scope.get(_HEADERS)
    if table is None:  # reversed: the first value of a name is the one kept
        table = {
            bytes(key).lower(): bytes(value).decode("latin-1")
            for key, value in reversed(list(scope.get("headers", ())))
        }
        scope[_HEADERS] = table
    return table.get(name)


async def _dispatch_related(session: ServerSession, message: Request) -> None:
    """Dispatch ``message`` with :data:`RELATED_REQUEST` naming it, so the frames of the call
    it starts go on its POST's stream."""
    token = RELATED_REQUEST.set(message.id)
    try:
        await session.dispatch(message)
    finally:
        RELATED_REQUEST.reset(token)


async def _send_events(send: Send, frames: list[bytes], *, more: bool = True) -> None:
    """Queued SSE events of an open stream in one body message (``more=False``: the last)."""
    body = b"".join([b"event: message\ndata: " + f + b"\n\n" for f in frames])
    await send({"type": "http.response.body", "body": body, "more_body": more})


class HttpTransport:
    """The ASGI application of the Streamable HTTP transport.

    Run it with :meth:`run` in a nursery (it hosts the sessions), then serve it with any ASGI
    server on trio; :func:`serve_http` does both with :mod:`~erlmcp_py.transports._server`.

    Args:
        server: The MCP server.
        runtime: Its elicitation runtime.
        config: Transport policy.
    """

    def __init__(self, server: Server, runtime: Any, config: HttpConfig | None = None) -> None:
        self.server = server
        self.runtime = runtime
        self.config = config or HttpConfig()
        self.policy = HostPolicy.build(
            self.config.allowed_hosts, self.config.allowed_origins, self.config.public_url
        )
        limits = self.config.limits
        self._trusted_proxies = TrustedProxies.parse(self.config.forwarded_allow_ips)
        #: Open sessions by id, each principal's within its share, all within max_sessions.
        self._sessions: Shares[str, _HttpSession] = Shares(
            limits.sessions, self.config.max_sessions
        )
        self._nursery: trio.Nursery | None = None
        self._stateless: StatelessEndpoint | None = None
        self._request_shares = PrincipalCounter(limits.requests)
        #: The frame limit applied: ``config.max_frame_bytes`` within the server's policy.
        self.max_frame_bytes = frame_limit(server, self.config.max_frame_bytes)
        self._body = BodyPolicy(
            self.max_frame_bytes, self.config.body_grace_s, self.config.body_min_rate
        )
        self._draining = False
        self._calls_ended: list[trio.Event] = []  # given by calls_ended(), set at zero calls
        self._refusals: Counter[str] = Counter()
        self._evictions: Counter[str] = Counter()
        self._metrics = metrics_registry(self)
        auth = self.config.auth
        self._verifier = BearerVerifier(auth) if auth is not None else None
        self._metadata_paths = metadata_paths(auth) if auth is not None else frozenset()
        self.page = ElicitationPage(runtime, self.policy, self._body)

    @property
    def draining(self) -> bool:
        """True once :meth:`drain` was called: new sessions and calls are refused (503)."""
        return self._draining

    def drain(self) -> None:
        """Refuse new sessions and new calls (503 with ``Retry-After``; ``/readyz`` 503).

        Requests under way, answers to the server's own requests, notifications and the
        retries of suspended 2026-07-28 calls still pass, so running calls can finish.
        """
        self._draining = True

    def calls_ended(self) -> trio.Event:
        """An event set when no call is in progress (:attr:`calls_in_progress` is 0): at once
        if none is, else when the last one in flight ends (its answer sent, or its POST gone,
        or its 2026-07-28 call finished). What a graceful stop waits on while it drains."""
        event = trio.Event()
        if self.calls_in_progress:
            self._calls_ended.append(event)
        else:
            event.set()
        return event

    def _calls_may_have_ended(self) -> None:
        """A call may have ended (a request ended, a 2026-07-28 call finished): set the
        events of :meth:`calls_ended` when none is left."""
        if self._calls_ended and not self.calls_in_progress:
            waiting, self._calls_ended = self._calls_ended, []
            for event in waiting:
                event.set()

    @property
    def refusals(self) -> Mapping[str, int]:
        """Requests refused by the transport's limits, by reason."""
        return self._refusals

    @property
    def evictions(self) -> Mapping[str, int]:
        """Idle sessions and suspended 2026-07-28 calls ended to make room for a new one, by
        the cap reached (the reasons of :attr:`refusals`): ``principal_sessions``,
        ``sessions``, ``suspended``."""
        evicted = Counter(self._evictions)
        registry = self.continuations
        if registry is not None and registry.counters["evicted"]:
            evicted["suspended"] = registry.counters["evicted"]
        return evicted

    @property
    def suspended_calls(self) -> int:
        """2026-07-28 tool calls alive in the continuation registry."""
        registry = self.continuations
        return len(registry) if registry is not None else 0

    @property
    def tasks(self) -> Mapping[str, int]:
        """The task registry's gauges and counters (see
        :meth:`~erlmcp_py.mcp.tasks.TaskRegistry.snapshot`); empty while not running."""
        endpoint = self._stateless
        if endpoint is None or endpoint.tasks is None:
            return {}
        return endpoint.tasks.snapshot()

    @property
    def task_registry(self) -> TaskRegistry | None:
        """The tasks of this server while :meth:`run` runs (e.g. for
        :meth:`~erlmcp_py.mcp.tasks.TaskRegistry.page_links`); ``None`` before and after."""
        endpoint = self._stateless
        return endpoint.tasks if endpoint is not None else None

    @property
    def calls_in_progress(self) -> int:
        """Calls not yet answered: session requests awaiting their answer, and 2026-07-28
        tool calls running or suspended between rounds."""
        posts = sum(len(s.posts) for s in self._sessions.values())
        registry = self.continuations
        return posts + (registry.snapshot()["unfinished"] if registry is not None else 0)

    def _refuse(self, reason: str, status: int, message: str, **fields: Any) -> _HttpError:
        self._refusals[reason] += 1
        retry = str(self.config.retry_after_s).encode()
        return _HttpError(status, message, headers=[(b"retry-after", retry)], **fields)

    @property
    def session_count(self) -> int:
        """Open sessions."""
        return len(self._sessions)

    @property
    def open_streams(self) -> int:
        """POST requests awaiting their answer plus open GET streams, over all sessions."""
        return sum(len(s.posts) + (s.get_stream is not None) for s in self._sessions.values())

    @property
    def continuations(self) -> ContinuationRegistry | None:
        """The 2026-07-28 continuation registry while :meth:`run` runs."""
        return self._stateless.registry if self._stateless is not None else None

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Host sessions and 2026-07-28 continuations until cancelled; then end them all."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                self._stateless = await nursery.start(self._host_continuations)
                task_status.started()
                await trio.sleep_forever()
        finally:
            self._nursery = None
            self._stateless = None

    async def _host_continuations(
        self, task_status: trio.TaskStatus[StatelessEndpoint] = trio.TASK_STATUS_IGNORED
    ) -> None:
        options = dict(self.config.continuations)
        config = getattr(self.runtime, "config", None)
        if "state_ttl" not in options and config is not None:
            options["state_ttl"] = state_ttl_for(config)
        options.setdefault("max_per_principal", self.config.limits.suspended)
        options["on_call_end"] = self._calls_may_have_ended
        # With a shared store, tasks outlive this replica: another takes them over by replay
        # (unless calls are never replayed: then they end failed when it is gone).
        durable = self.runtime.store.shared
        replay = options.get("mrtr", "auto") != "suspend"
        async with (
            open_continuations(**options) as registry,
            open_tasks(self.runtime, durable=durable, replay=replay) as tasks,
        ):
            # Where tasks live decides what a restart loses: the operator is told once.
            log.info("tasks_store", durable=durable, kept=_TASKS_KEPT[durable])
            task_status.started(self.server.stateless_endpoint(self.runtime, registry, tasks=tasks))
            await trio.sleep_forever()

    def close_all(self) -> None:
        """End every session and every suspended 2026-07-28 call (their tools are cancelled)."""
        for session in list(self._sessions.values()):
            session.close()
        if self._stateless is not None:
            self._stateless.registry.close()

    def principal_of(self, scope: Scope) -> str:
        """The principal of a request: it keys the fair limits and binds ``requestState``.

        With :attr:`HttpConfig.auth`, the verified token's ``sub:<sub>@<issuer>``. Else
        ``header:<value>`` from :attr:`HttpConfig.principal_header` when configured and present
        (at most 256 visible characters), else the client's address
        (:func:`~erlmcp_py.transports.principal.principal_for_address`: IPv6 grouped by /64);
        see the module docstring for the trust assumptions and limits.
        """
        verified = scope.get(_PRINCIPAL)
        if isinstance(verified, str):
            return verified
        name = self.config.principal_header
        if name:
            value = (_header(scope, name.strip().lower().encode("latin-1")) or "").strip()
            if value and len(value) <= 256 and value.isprintable() and value.isascii():
                return f"header:{value}"
        client = scope.get("client")
        host = client[0] if client else None
        return _principal_for_address(host if isinstance(host, str) else None)

    # -- ASGI ---------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI entry point."""
        kind = scope.get("type")
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        if kind != "http":
            return
        if self._trusted_proxies:
            self._settle_client(scope)
        if (
            self.config.ops_port is None
            and scope.get("path") in OPS_PATHS
            and scope.get("path") != self.config.path
        ):
            await self._ops(scope, send)
            return
        if scope.get("path") in self._metadata_paths:
            await self._resource_metadata(scope, send)
            return
        if is_page_path(scope.get("path")):  # the hosted elicitation page (its own checks)
            await self.page(scope, receive, send)
            return
        if self._verifier is not None and scope.get("path") == self.config.path:
            try:
                subject = await self._verifier.verify(scope.get("headers", ()))
            except AuthRefused as refused:
                self._refusals[f"auth_{refused.status}"] += 1
                body = jsonrpc.encode_error(None, SERVER_ERROR, refused.description)
                headers = [(b"www-authenticate", refused.challenge.encode())]
                await self._send_simple(send, refused.status, body, JSON, headers)
                return
            scope[_PRINCIPAL] = subject.principal
            scope[_SUBJECT] = subject
        principal = self.principal_of(scope)
        if not self._request_shares.acquire(principal):
            exc = self._refuse(
                "principal_requests", 429, "Too Many Requests: too many requests in flight"
            )
            await self._send_simple(send, exc.status, exc.body, JSON, exc.headers)
            return
        try:
            method = self._endpoint_method(scope)
            if method == "POST":
                await self._post(scope, receive, send)
            elif method == "GET":
                await self._get(scope, receive, send)
            else:
                await self._delete(scope, send)
        except _HttpError as exc:
            await self._send_simple(send, exc.status, exc.body, JSON, exc.headers)
        finally:
            self._request_shares.release(principal)
            self._calls_may_have_ended()  # a request's end: its call answered, or gone

    def _settle_client(self, scope: Scope) -> None:
        """The client's address behind a trusted proxy, in the scope's ``client`` for
        everything downstream (the principal, its shares, the elicitation rate)."""
        peer = scope.get("client")
        found = resolve_client(peer, scope.get("headers", ()), self._trusted_proxies)
        if found.problem is not None:
            log.info("forwarded_ignored", peer=peer[0] if peer else None, why=found.problem)
        scope["client"] = found.client

    def _check_tool_scopes(self, scope: Scope, message: Request) -> None:
        """A ``tools/call`` of a tool with scopes of its own: 403 unless the token has them."""
        assert self._verifier is not None
        params = message.params
        tool = params.get("name") if isinstance(params, Mapping) else None
        if message.method != "tools/call" or not isinstance(tool, str):
            return
        try:
            self._verifier.check_tool(scope[_SUBJECT], tool)
        except AuthRefused as refused:
            self._refusals["auth_403"] += 1
            raise _HttpError(
                refused.status,
                refused.description,
                id=message.id,
                headers=[(b"www-authenticate", refused.challenge.encode())],
            ) from None

    async def _resource_metadata(self, scope: Scope, send: Send) -> None:
        """The protected resource metadata (RFC 9728), for clients to find the issuer."""
        assert self.config.auth is not None
        if scope.get("method") not in ("GET", "HEAD"):
            await self._send_simple(send, 405, b"", None, [(b"allow", b"GET")])
            return
        body = json.dumps(self.config.auth.metadata()).encode()
        await self._send_simple(send, 200, body, JSON, [(b"cache-control", b"max-age=300")])

    async def ops_app(self, scope: Scope, receive: Receive, send: Send) -> None:
        """An ASGI app of the operations endpoints alone (for :attr:`HttpConfig.ops_port`)."""
        if scope.get("type") == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope.get("type") != "http":
            return
        if scope.get("path") not in OPS_PATHS:
            await self._send_simple(send, 404, b"Not Found\n", "text/plain")
            return
        await self._ops(scope, send)

    async def _ops(self, scope: Scope, send: Send) -> None:
        """``/healthz``, ``/readyz``, ``/metrics`` (GET only; the Host check applies)."""
        reason = self.policy.check_host(_header(scope, b"host"))
        if reason is not None:
            await self._send_simple(send, 403, f"Forbidden: {reason}\n".encode(), "text/plain")
            return
        if scope.get("method") not in ("GET", "HEAD"):
            await self._send_simple(send, 405, b"", None, [(b"allow", b"GET")])
            return
        answer = answer_ops(self, str(scope.get("path")), self._metrics)
        await self._send_simple(send, answer.status, answer.body, answer.content_type)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                self.close_all()
                await send({"type": "lifespan.shutdown.complete"})
                return

    @staticmethod
    async def _send_simple(
        send: Send,
        status: int,
        body: bytes = b"",
        content_type: str | None = None,
        headers: Iterable[tuple[bytes, bytes]] = (),
    ) -> None:
        out = list(headers)
        if content_type is not None:
            out.append((b"content-type", content_type.encode()))
        out.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": status, "headers": out})
        await send({"type": "http.response.body", "body": body, "more_body": False})

    def _endpoint_method(self, scope: Scope) -> str:
        """The method of a request to the MCP endpoint, once the path, ``Host``, ``Origin``
        and method checks pass (else :class:`_HttpError`)."""
        if scope.get("path") != self.config.path:
            raise _HttpError(404, "Not Found")
        reason = self.policy.check_host(_header(scope, b"host")) or self.policy.check_origin(
            _header(scope, b"origin")
        )
        if reason is not None:
            log.info("request_refused", why=reason)
            raise _HttpError(403, f"Forbidden: {reason}")
        method = str(scope.get("method"))
        if method in ("GET", "DELETE") and self._stateless_without_session(scope):
            # 2026-07-28 has neither the GET stream nor sessions to delete
            raise _HttpError(405, "Method Not Allowed", headers=[(b"allow", b"POST")])
        if method not in ("POST", "GET", "DELETE"):
            raise _HttpError(405, "Method Not Allowed", headers=[(b"allow", b"GET, POST, DELETE")])
        return method

    def _session_for(self, scope: Scope) -> _HttpSession:
        session_id = _header(scope, b"mcp-session-id")
        if session_id is None:
            raise _HttpError(400, "Bad Request: Mcp-Session-Id header is required")
        hs = self._sessions.get(session_id)
        if hs is None or hs.closed or hs.session is None:
            raise _HttpError(404, "Session not found", code=SESSION_NOT_FOUND)
        if self._verifier is not None and hs.principal != self.principal_of(scope):
            # another subject's session: as unknown to this one as a made-up id
            raise _HttpError(404, "Session not found", code=SESSION_NOT_FOUND)
        reason = check_protocol_version_header(
            _header(scope, b"mcp-protocol-version"), hs.session.protocol_version
        )
        if reason is not None:
            raise _HttpError(400, f"Bad Request: {reason}")
        hs.touch()
        return hs

    async def _read_body(self, scope: Scope, receive: Receive) -> bytes | None:
        """The POST body within the size cap and the minimum rate; refused: the answer
        closes the connection (the rest of the body is never read)."""
        length = (_header(scope, b"content-length") or "").strip()
        close = [(b"connection", b"close")]
        in_session = _header(scope, b"mcp-session-id") is not None
        try:
            return await read_body(
                receive,
                int(length) if length.isdigit() else None,
                self._body,
                head_bytes=HEAD_BYTES if in_session else 0,
            )
        except BodyTooLarge as exc:
            self._refusals["body_too_large"] += 1
            head = frame_head(exc.head)
            if head.kind == "response" and head.id is not None:
                self._answer_too_large(scope, head.id, exc)
            too_large = jsonrpc.FrameTooLarge(exc.size, exc.limit)
            message = f"Payload Too Large: the body exceeds the limit of {exc.limit} bytes"
            raise _HttpError(
                413,
                message,
                code=too_large.code,
                id=head.id if head.kind == "request" else None,
                data=too_large.data,
                headers=close,
            ) from None
        except BodyTooSlow:
            self._refusals["body_too_slow"] += 1
            raise _HttpError(
                408, "Request Timeout: the body came too slowly", headers=close
            ) from None

    def _answer_too_large(self, scope: Scope, id: RequestId, exc: BodyTooLarge) -> None:
        """An oversized body answers request ``id`` of the POST's session: end that request
        (and its elicitation) now. Only the session the request names, and only for its
        principal, as for any other POST."""
        try:
            hs = self._session_for(scope)
        except _HttpError:
            return  # no such session (or not this principal's): nothing to end
        assert hs.session is not None
        known = hs.session.answer_too_large(id, exc.size, exc.limit)
        log.info("answer_too_large", size=exc.size, limit=exc.limit, open_request=known)

    async def _post(self, scope: Scope, receive: Receive, send: Send) -> None:
        accept = _header(scope, b"accept")
        if not accepts(accept, JSON, SSE):
            raise _HttpError(
                406, "Not Acceptable: Accept must list application/json and text/event-stream"
            )
        content_type = (_header(scope, b"content-type") or "").split(";")[0].strip().lower()
        if content_type != JSON:
            raise _HttpError(415, "Unsupported Media Type: Content-Type must be application/json")
        body = await self._read_body(scope, receive)
        if body is None:
            return  # the client left before sending its message
        try:
            message = jsonrpc.parse(body, max_bytes=self.max_frame_bytes)
        except JsonRpcError as exc:
            if exc.response_id is not None and _header(scope, b"mcp-session-id") is not None:
                # a malformed answer to one of our requests: fail that request
                hs = self._session_for(scope)
                assert hs.session is not None
                await hs.session.feed(body)
                await self._send_simple(send, 202)
                return
            raise _HttpError(400, exc.message, code=exc.code, id=exc.id, data=exc.data) from None
        if self._verifier is not None and isinstance(message, Request):
            self._check_tool_scopes(scope, message)
        if self._draining and isinstance(message, Request) and not _resumes(message):
            raise self._refuse(
                "draining", 503, "Service Unavailable: the server is stopping", id=message.id
            )
        if isinstance(message, Request) and self._is_stateless(scope, message):
            # first: a 2026-07-28 ``initialize`` is a removed method (-32601, HTTP 404)
            await self._serve_stateless(scope, message, receive, send)
            return
        if isinstance(message, Request) and message.method == "initialize":
            await self._initialize(scope, message, send)
            return
        if not isinstance(message, Request) and self._stateless_without_session(scope):
            # 2026-07-28 defines no client notifications over HTTP (a closed stream is the
            # cancel); a stray one is accepted and ignored, never tied to a session.
            await self._send_simple(send, 202)
            return
        hs = self._session_for(scope)
        assert hs.session is not None
        if not isinstance(message, Request):
            await hs.session.dispatch(message)
            await self._send_simple(send, 202)
            return
        if message.id in hs.posts:
            raise _HttpError(
                400,
                "Invalid Request: a request with this id is already in progress",
                code=jsonrpc.INVALID_REQUEST,
                id=message.id,
            )
        sse = message.method in INPUT_METHODS  # their functions may ask the client
        stream = _Stream(self.config.stream_queue, sse=sse)
        hs.posts[message.id] = stream
        await _dispatch_related(hs.session, message)
        if sse and stream.final is None:  # refused at once (bad params…): a plain JSON answer
            await self._stream_post(hs, message.id, stream, receive, send)
        else:
            await self._answer_json(hs, message.id, stream, receive, send)

    @staticmethod
    def _stateless_without_session(scope: Scope) -> bool:
        version = (_header(scope, b"mcp-protocol-version") or "").strip()
        return version in STATELESS_VERSIONS and _header(scope, b"mcp-session-id") is None

    def _is_stateless(self, scope: Scope, message: Request) -> bool:
        return is_stateless_request(message) or self._stateless_without_session(scope)

    async def _serve_stateless(
        self, scope: Scope, message: Request, receive: Receive, send: Send
    ) -> None:
        """Answer one 2026-07-28 request statelessly (no session): ``application/json``, or an
        SSE stream once a ``tools/call`` sends a notification before its answer."""
        endpoint = self._stateless
        if endpoint is None:
            raise _HttpError(503, "Service Unavailable: the transport is not running")
        reason = check_stateless_headers(scope.get("headers", ()), message.method, message.params)
        if reason is not None:
            log.info("stateless_header_mismatch", why=reason, method=message.method[:80])
            raise _HttpError(400, f"Header mismatch: {reason}", code=HEADER_MISMATCH, id=message.id)
        principal = self.principal_of(scope)
        result: dict[str, Any] | None = None
        error: JsonRpcError | None = None
        # A tools/call's notifications queue on its stream and are written while the POST
        # waits for its answer (the SSE response starts with the first); none sent: the
        # answer stays application/json.
        stream: _Stream | None = None
        try:
            if message.method in INPUT_METHODS:  # the ones that notify
                stream = _Stream(self.config.stream_queue, sse=True)
                post = _StatelessPost(stream, receive, send)
                attached = endpoint.accept(
                    message,
                    principal=principal,
                    tenant=Tenant(user=principal),
                    client_id=principal,
                    notify=post.notify,
                    accept_language=_header(scope, b"accept-language"),
                )
                result = await endpoint.answer(attached, post)
            else:
                result = await endpoint.handle(
                    message,
                    principal=principal,
                    tenant=Tenant(user=principal),
                    client_id=principal,
                    accept_language=_header(scope, b"accept-language"),
                )
        except _ClientLeft:  # the client closed the POST: the call is cancelled
            log.info("stateless_request_abandoned", method=message.method[:80])
            return
        except JsonRpcError as exc:
            error = exc.with_id(message.id)
        except Exception as exc:  # a bug: answered, and the server keeps serving
            log.exception("request_failed", method=message.method[:80], error=type(exc).__name__)
            error = jsonrpc.internal_error("Internal error", None, message.id)
        if error is None:
            assert result is not None
            try:
                body = jsonrpc.encode_response(message.id, result)
            except jsonrpc.EncodeError:
                log.warning("result_unencodable", method=message.method[:80])
                error = jsonrpc.internal_error("Result could not be encoded", None, message.id)
        extra: list[tuple[bytes, bytes]] = []
        if error is not None:
            body = error.encode()
            status = http_status_for(error.code)
            reason = error.data.get("reason") if isinstance(error.data, Mapping) else None
            # a full registry: one principal's share (429), or the whole of it (503)
            if isinstance(reason, str) and reason in _REGISTRY_FULL:
                status, counted = _REGISTRY_FULL[reason]
                self._refusals[counted] += 1
                extra.append((b"retry-after", str(self.config.retry_after_s).encode()))
        else:
            status = 200
        frames = stream.take() if stream is not None else []
        if stream is not None and stream.started:  # the status went out: the answer is an event
            await _send_events(send, [*frames, body], more=False)
        elif frames:  # notifications queued: the same, in one write
            await self._start_sse(send, [], [*frames, body], more=False)
        else:
            await self._send_simple(send, status, body, JSON, extra)

    async def _initialize(self, scope: Scope, message: Request, send: Send) -> None:
        if _header(scope, b"mcp-session-id") is not None:
            raise _HttpError(
                400,
                "Invalid Request: initialize must not carry an Mcp-Session-Id",
                code=jsonrpc.INVALID_REQUEST,
                id=message.id,
            )
        if self._nursery is None:
            raise _HttpError(503, "Service Unavailable: the transport is not running")
        principal = self.principal_of(scope)
        admission = self._sessions.admit(principal, _evictable)
        if isinstance(admission, Refuse):  # every session that could make room is busy
            if admission.scope == "principal":
                raise self._refuse(
                    "principal_sessions",
                    429,
                    "Too Many Requests: too many sessions for this client",
                )
            raise self._refuse("sessions", 503, "Service Unavailable: too many sessions")
        if isinstance(admission, Shed):
            self._evict(admission)
        session_id = secrets.token_urlsafe(32)
        hs = _HttpSession(self, session_id, principal, _header(scope, b"accept-language"))
        self._sessions.add(principal, session_id, hs)
        await self._nursery.start(hs.run)
        assert hs.session is not None
        stream = _Stream(1, sse=False)
        hs.posts[message.id] = stream
        await hs.session.dispatch(message)
        hs.posts.pop(message.id, None)
        frame = stream.final
        if frame is None or hs.session.phase == "new":
            hs.close()  # refused initialize: no session
            body = frame or jsonrpc.encode_error(message.id, jsonrpc.INTERNAL_ERROR, "no answer")
            await self._send_simple(send, 200, body, JSON)
            return
        hs.log.info("session_opened")
        headers = [(b"mcp-session-id", session_id.encode())]
        await self._send_simple(send, 200, frame, JSON, headers)

    def _evict(self, shed: Shed[str, _HttpSession]) -> None:
        """End an idle session to make room for a new one (its next request gets 404)."""
        reason = "principal_sessions" if shed.scope == "principal" else "sessions"
        self._evictions[reason] += 1
        victim = shed.value
        victim.log.info(
            "session_evicted",
            why="principal_share" if shed.scope == "principal" else "max_sessions",
            idle_s=round(trio.current_time() - victim.last_active, 3),
            held=self._sessions.held(shed.principal),
        )
        victim.close()

    async def _client_left(self, hs: _HttpSession, id: RequestId) -> None:
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
        hs: _HttpSession,
        id: RequestId,
        stream: _Stream,
        receive: Receive,
        send: Send,
    ) -> None:
        while not stream.closed:
            if not await stream.wait(receive):
                await self._client_left(hs, id)
                return
            stream.frames.clear()  # nothing is queued on a JSON answer
        if stream.final is None:
            raise _HttpError(404, "Session not found", code=SESSION_NOT_FOUND)
        await self._send_simple(send, 200, stream.final, JSON, hs.id_header)

    async def _stream_post(
        self,
        hs: _HttpSession,
        id: RequestId,
        stream: _Stream,
        receive: Receive,
        send: Send,
    ) -> None:
        while not stream.closed:  # the head goes out with the first frame, or with the response
            if not await _relay(stream, receive, send, hs.id_header):
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
            await _send_events(send, frames, more=False)
        else:
            await self._start_sse(send, hs.id_header, frames, more=False)

    @staticmethod
    async def _start_sse(
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
        await _send_events(send, frames or [], more=more)

    async def _get(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not accepts(_header(scope, b"accept"), SSE):
            raise _HttpError(406, "Not Acceptable: Accept must list text/event-stream")
        hs = self._session_for(scope)
        if hs.get_stream is not None:
            raise _HttpError(409, "Conflict: a GET stream is already open for this session")
        stream = _Stream(self.config.stream_queue, sse=True)
        while hs.backlog and stream.push(hs.backlog[0]):
            hs.backlog.popleft()
        hs.get_stream = stream
        await self._start_sse(send, hs.id_header, stream.take())
        gone = False
        while not stream.closed:
            if not await stream.wait(receive):
                gone = True
                break
            if stream.frames:
                await _send_events(send, stream.take())
        if hs.get_stream is stream:
            hs.get_stream = None
        hs.touch()
        if not gone:
            await _send_events(send, stream.take(), more=False)

    async def _delete(self, scope: Scope, send: Send) -> None:
        hs = self._session_for(scope)
        hs.log.info("session_deleted")
        hs.close()
        await self._send_simple(send, 200)


async def serve_http(
    server: Server,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    config: HttpConfig | None = None,
    shutdown_trigger: Callable[[], Awaitable[object]] | None = None,
    task_status: trio.TaskStatus[Listening] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``server`` over Streamable HTTP until cancelled
    (:mod:`~erlmcp_py.transports._server`: one task per connection).

    Opens the server's elicitation runtime unless it is already running. With
    ``nursery.start``, returns a :class:`Listening` (port 0 picks a free port).

    A graceful stop: when ``shutdown_trigger`` returns, no new connection is accepted, idle
    ones are closed, requests in flight get up to 1 s to finish (end the sessions with
    :meth:`HttpTransport.close_all` to end their streams sooner), and this returns.

    Args:
        server: The MCP server.
        host: Address to bind (loopback by default; another host name is added to the
            allowed ``Host`` names).
        port: TCP port (0: any free one).
        config: Transport policy.
        shutdown_trigger: Returns to stop gracefully.
        task_status: For ``nursery.start``.

    Raises:
        OSError: a port cannot be listened on (``cannot listen on 127.0.0.1:8000: address
            already in use``), as itself, not in an exception group.
        KeyboardInterrupt: Ctrl-C, as itself, not in an exception group.
    """
    config = config or HttpConfig()
    bind_name = host.strip("[]").lower()
    if bind_name not in ("0.0.0.0", "::", "") and bind_name not in config.allowed_hosts:
        config = _with_host(config, bind_name)
    listen = partial(
        _server.serve,
        host=host,
        keep_alive_s=config.keep_alive_s,
        write_timeout_s=config.write_timeout_s,
        graceful_s=1.0,
        shutdown_trigger=shutdown_trigger,
    )

    async def run(runtime: Any) -> None:
        transport = HttpTransport(server, runtime, config)
        stopped = trio.Event()
        async with trio.open_nursery() as nursery:
            await nursery.start(transport.run)
            try:
                try:
                    binds = await nursery.start(
                        _until_stopped, partial(listen, transport, port=port), stopped
                    )
                except OSError as exc:
                    raise cannot_listen(exc, host, port) from None
                urls = tuple(f"{b}{config.path}" for b in binds)
                transport.page.serve_at(transport.policy.public or binds[0])
                ops_url: str | None = None
                if config.ops_port is not None:
                    ops = partial(listen, transport.ops_app, port=config.ops_port)
                    try:
                        ops_url = (await nursery.start(_until_stopped, ops, trio.Event()))[0]
                    except OSError as exc:
                        raise cannot_listen(exc, host, config.ops_port) from None
                log.info("http_listening", urls=urls, ops=ops_url)
                task_status.started(Listening(urls[0], urls, transport, ops_url))
                await stopped.wait()
            finally:
                transport.close_all()
                nursery.cancel_scope.cancel()

    with plain_errors():
        if server.runtime is not None:
            await run(server.runtime)
            return
        async with server.running() as runtime:
            await run(runtime)


async def _until_stopped(
    serve: Callable[..., Awaitable[None]],
    stopped: trio.Event,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    try:
        await serve(task_status=task_status)
    finally:
        stopped.set()


def _with_host(config: HttpConfig, host: str) -> HttpConfig:
    return replace(config, allowed_hosts=(*config.allowed_hosts, host))
