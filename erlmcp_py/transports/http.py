"""Streamable HTTP transport: an ASGI app on an HTTP/1.1 server layer of its own (``_server``).

One endpoint (default ``/mcp``) takes POST, GET and DELETE. What it guarantees (sessions and
their ids, the checks and their statuses, authentication, the client's address and principal,
the shares per principal and the eviction of idle holdings, draining, the hosted page,
``/healthz``, ``/readyz``, ``/metrics``) is in docs/architecture.md ("Streamable HTTP",
"Invariants", "Policy defaults"), docs/scaling.md and, for 2026-07-28 requests, docs/mrtr.md
("Over Streamable HTTP").

:class:`HttpTransport` runs the checks every request passes (``Host``, ``Origin``, the
client's address, the bearer token, the principal's share of requests in flight, the body's
size and rate) and routes what is left: a stateless POST to the stateless side
(:mod:`~erlmcp_py.transports._http_stateless`), everything else to the session side
(:mod:`~erlmcp_py.transports._http_session`), the hosted page and the operations endpoints to
their own handlers. Both sides answer through :mod:`~erlmcp_py.transports._http_streams`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache, partial
from typing import Any, Final

import structlog
import trio

from erlmcp_py.actors.runtime import Runtime
from erlmcp_py.mcp import jsonrpc
from erlmcp_py.mcp.jsonrpc import JsonRpcError, Request
from erlmcp_py.mcp.mrtr import ContinuationRegistry
from erlmcp_py.mcp.server import Server
from erlmcp_py.mcp.tasks import TaskRegistry
from erlmcp_py.transports import _server
from erlmcp_py.transports._frame_head import HEAD_BYTES, frame_head
from erlmcp_py.transports._http_session import HttpSessions
from erlmcp_py.transports._http_stateless import (
    StatelessPosts,
    is_stateless,
    resumes,
    stateless_without_session,
)
from erlmcp_py.transports._http_streams import (
    JSON,
    SERVER_ERROR,
    SSE,
    HttpError,
    Receive,
    Refusals,
    Scope,
    Send,
    header,
    send_simple,
)
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
from erlmcp_py.transports._principal import principal_for_address
from erlmcp_py.transports.auth import AuthConfig, AuthRefused, BearerVerifier, metadata_paths
from erlmcp_py.transports.forwarded import TrustedProxies, resolve_client
from erlmcp_py.transports.http_checks import HostPolicy, accepts, public_origin

#: The principal of a client address (an ``ipaddress`` parse), kept for the addresses seen last.
_principal_for_address: Final = lru_cache(maxsize=4096)(principal_for_address)

__all__ = ["HttpConfig", "HttpTransport", "Listening", "PrincipalLimits", "serve_http"]

log = structlog.get_logger("erlmcp.http")


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
        proxy_protocol: Every connection from a peer in ``forwarded_allow_ips`` starts with a
            PROXY protocol header (v1 or v2, as a TCP-mode balancer such as HAProxy with
            ``send-proxy-v2`` or an AWS NLB writes it), whose source address is the client's
            from then on; such a connection without a valid header is closed unanswered.
            Other peers' connections are plain HTTP (a header they send is a bad request).
            :func:`serve_http`'s MCP port only: the ``ops_port`` listener takes none.
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
    proxy_protocol: bool = False
    continuations: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        try:
            trusted = TrustedProxies.parse(self.forwarded_allow_ips)
        except ValueError as exc:
            raise ValueError(f"forwarded_allow_ips: {exc}") from None
        if self.proxy_protocol and not trusted:
            raise ValueError(
                "proxy_protocol needs forwarded_allow_ips: the balancers that send the header"
            )
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


class HttpTransport:
    """The ASGI application of the Streamable HTTP transport.

    Run it with :meth:`run` in a nursery (it hosts the sessions), then serve it with any ASGI
    server on trio; :func:`serve_http` does both with :mod:`~erlmcp_py.transports._server`.

    Args:
        server: The MCP server.
        runtime: Its elicitation runtime.
        config: Transport policy.
    """

    def __init__(self, server: Server, runtime: Runtime, config: HttpConfig | None = None) -> None:
        self.server = server
        self.runtime = runtime
        self.config = config or HttpConfig()
        self.policy = HostPolicy.build(
            self.config.allowed_hosts, self.config.allowed_origins, self.config.public_url
        )
        limits = self.config.limits
        self._trusted_proxies = TrustedProxies.parse(self.config.forwarded_allow_ips)
        self._refusals = Refusals(self.config.retry_after_s)
        #: The frame limit applied: ``config.max_frame_bytes`` within the server's policy.
        self.max_frame_bytes = frame_limit(server, self.config.max_frame_bytes)
        #: The two sides of the endpoint: sessions, and the stateless POST.
        self._sessions = HttpSessions(self, self._refusals)
        self._stateless = StatelessPosts(self, self._refusals, self._calls_may_have_ended)
        self._request_shares = PrincipalCounter(limits.requests)
        self._body = BodyPolicy(
            self.max_frame_bytes, self.config.body_grace_s, self.config.body_min_rate
        )
        self._draining = False
        self._calls_ended: list[trio.Event] = []  # given by calls_ended(), set at zero calls
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
        return self._refusals.counts

    @property
    def evictions(self) -> Mapping[str, int]:
        """Idle sessions and suspended 2026-07-28 calls ended to make room for a new one, by
        the cap reached (the reasons of :attr:`refusals`): ``principal_sessions``,
        ``sessions``, ``suspended``."""
        evicted = Counter(self._sessions.evictions)
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
        tasks = self._stateless.tasks
        return tasks.snapshot() if tasks is not None else {}

    @property
    def task_registry(self) -> TaskRegistry | None:
        """The tasks of this server while :meth:`run` runs (e.g. for
        :meth:`~erlmcp_py.mcp.tasks.TaskRegistry.page_links`); ``None`` before and after."""
        return self._stateless.tasks

    @property
    def calls_in_progress(self) -> int:
        """Calls not yet answered: session requests awaiting their answer, and 2026-07-28
        tool calls running or suspended between rounds."""
        posts = sum(len(s.posts) for s in self._sessions.values())
        registry = self.continuations
        return posts + (registry.snapshot()["unfinished"] if registry is not None else 0)

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
        return self._stateless.registry

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Host sessions and 2026-07-28 continuations until cancelled; then end them all."""
        async with trio.open_nursery() as nursery:
            await nursery.start(self._sessions.run)
            await nursery.start(self._stateless.run)
            task_status.started()
            await trio.sleep_forever()

    def close_all(self) -> None:
        """End every session and every suspended 2026-07-28 call (their tools are cancelled)."""
        self._sessions.close_all()
        self._stateless.close_all()

    def principal_of(self, scope: Scope) -> str:
        """The principal of a request: it keys the fair limits and binds ``requestState``.

        With :attr:`HttpConfig.auth`, the verified token's ``sub:<sub>@<issuer>``. Else
        ``header:<value>`` from :attr:`HttpConfig.principal_header` when configured and present
        (at most 256 visible characters), else the client's address
        (:func:`~erlmcp_py.transports._principal.principal_for_address`: IPv6 grouped by /64);
        see docs/architecture.md ("Streamable HTTP") for the trust assumptions and limits.
        """
        verified = scope.get(_PRINCIPAL)
        if isinstance(verified, str):
            return verified
        name = self.config.principal_header
        if name:
            value = (header(scope, name.strip().lower().encode("latin-1")) or "").strip()
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
                self._refusals.counts[f"auth_{refused.status}"] += 1
                body = jsonrpc.encode_error(None, SERVER_ERROR, refused.description)
                headers = [(b"www-authenticate", refused.challenge.encode())]
                await send_simple(send, refused.status, body, JSON, headers)
                return
            scope[_PRINCIPAL] = subject.principal
            scope[_SUBJECT] = subject
        principal = self.principal_of(scope)
        if not self._request_shares.acquire(principal):
            exc = self._refusals.refuse(
                "principal_requests", 429, "Too Many Requests: too many requests in flight"
            )
            await send_simple(send, exc.status, exc.body, JSON, exc.headers)
            return
        try:
            method = self._endpoint_method(scope)
            if method == "POST":
                await self._post(scope, receive, send)
            elif method == "GET":
                await self._sessions.get(scope, receive, send)
            else:
                await self._sessions.delete(scope, send)
        except HttpError as exc:
            await send_simple(send, exc.status, exc.body, JSON, exc.headers)
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
            self._refusals.counts["auth_403"] += 1
            raise HttpError(
                refused.status,
                refused.description,
                id=message.id,
                headers=[(b"www-authenticate", refused.challenge.encode())],
            ) from None

    async def _resource_metadata(self, scope: Scope, send: Send) -> None:
        """The protected resource metadata (RFC 9728), for clients to find the issuer."""
        assert self.config.auth is not None
        if scope.get("method") not in ("GET", "HEAD"):
            await send_simple(send, 405, b"", None, [(b"allow", b"GET")])
            return
        body = json.dumps(self.config.auth.metadata()).encode()
        await send_simple(send, 200, body, JSON, [(b"cache-control", b"max-age=300")])

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
            await send_simple(send, 404, b"Not Found\n", "text/plain")
            return
        await self._ops(scope, send)

    async def _ops(self, scope: Scope, send: Send) -> None:
        """``/healthz``, ``/readyz``, ``/metrics`` (GET only; the Host check applies)."""
        reason = self.policy.check_host(header(scope, b"host"))
        if reason is not None:
            await send_simple(send, 403, f"Forbidden: {reason}\n".encode(), "text/plain")
            return
        if scope.get("method") not in ("GET", "HEAD"):
            await send_simple(send, 405, b"", None, [(b"allow", b"GET")])
            return
        answer = answer_ops(self, str(scope.get("path")), self._metrics)
        await send_simple(send, answer.status, answer.body, answer.content_type)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                self.close_all()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def _endpoint_method(self, scope: Scope) -> str:
        """The method of a request to the MCP endpoint, once the path, ``Host``, ``Origin``
        and method checks pass (else :class:`HttpError`)."""
        if scope.get("path") != self.config.path:
            raise HttpError(404, "Not Found")
        reason = self.policy.check_host(header(scope, b"host")) or self.policy.check_origin(
            header(scope, b"origin")
        )
        if reason is not None:
            log.info("request_refused", why=reason)
            raise HttpError(403, f"Forbidden: {reason}")
        method = str(scope.get("method"))
        if method in ("GET", "DELETE") and stateless_without_session(scope):
            # 2026-07-28 has neither the GET stream nor sessions to delete
            raise HttpError(405, "Method Not Allowed", headers=[(b"allow", b"POST")])
        if method not in ("POST", "GET", "DELETE"):
            raise HttpError(405, "Method Not Allowed", headers=[(b"allow", b"GET, POST, DELETE")])
        return method

    async def _read_body(self, scope: Scope, receive: Receive) -> bytes | None:
        """The POST body within the size cap and the minimum rate; refused: the answer
        closes the connection (the rest of the body is never read)."""
        length = (header(scope, b"content-length") or "").strip()
        close = [(b"connection", b"close")]
        in_session = header(scope, b"mcp-session-id") is not None
        try:
            return await read_body(
                receive,
                int(length) if length.isdigit() else None,
                self._body,
                head_bytes=HEAD_BYTES if in_session else 0,
            )
        except BodyTooLarge as exc:
            self._refusals.counts["body_too_large"] += 1
            head = frame_head(exc.head)
            if head.kind == "response" and head.id is not None:
                self._sessions.answer_too_large(scope, head.id, exc)
            too_large = jsonrpc.FrameTooLarge(exc.size, exc.limit)
            message = f"Payload Too Large: the body exceeds the limit of {exc.limit} bytes"
            raise HttpError(
                413,
                message,
                code=too_large.code,
                id=head.id if head.kind == "request" else None,
                data=too_large.data,
                headers=close,
            ) from None
        except BodyTooSlow:
            self._refusals.counts["body_too_slow"] += 1
            raise HttpError(
                408, "Request Timeout: the body came too slowly", headers=close
            ) from None

    async def _post(self, scope: Scope, receive: Receive, send: Send) -> None:
        accept = header(scope, b"accept")
        if not accepts(accept, JSON, SSE):
            raise HttpError(
                406, "Not Acceptable: Accept must list application/json and text/event-stream"
            )
        content_type = (header(scope, b"content-type") or "").split(";")[0].strip().lower()
        if content_type != JSON:
            raise HttpError(415, "Unsupported Media Type: Content-Type must be application/json")
        body = await self._read_body(scope, receive)
        if body is None:
            return  # the client left before sending its message
        try:
            message = jsonrpc.parse(body, max_bytes=self.max_frame_bytes)
        except JsonRpcError as exc:
            if exc.response_id is not None and header(scope, b"mcp-session-id") is not None:
                # a malformed answer to one of our requests: fail that request
                await self._sessions.feed_malformed(scope, body, send)
                return
            raise HttpError(400, exc.message, code=exc.code, id=exc.id, data=exc.data) from None
        if self._verifier is not None and isinstance(message, Request):
            self._check_tool_scopes(scope, message)
        if self._draining and isinstance(message, Request) and not resumes(message):
            raise self._refusals.refuse(
                "draining", 503, "Service Unavailable: the server is stopping", id=message.id
            )
        if isinstance(message, Request) and is_stateless(scope, message):
            # first: a 2026-07-28 ``initialize`` is a removed method (-32601, HTTP 404)
            await self._stateless.serve(scope, message, receive, send)
            return
        if isinstance(message, Request) and message.method == "initialize":
            await self._sessions.initialize(scope, message, send)
            return
        if not isinstance(message, Request) and stateless_without_session(scope):
            # 2026-07-28 defines no client notifications over HTTP (a closed stream is the
            # cancel); a stray one is accepted and ignored, never tied to a session.
            await send_simple(send, 202)
            return
        await self._sessions.post(scope, message, receive, send)


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
    trusted = TrustedProxies.parse(config.forwarded_allow_ips)
    proxy_from = trusted.trusts_peer if config.proxy_protocol else None

    async def run(runtime: Runtime) -> None:
        transport = HttpTransport(server, runtime, config)
        stopped = trio.Event()
        async with trio.open_nursery() as nursery:
            await nursery.start(transport.run)
            try:
                try:
                    mcp = partial(listen, transport, port=port, proxy_from=proxy_from)
                    binds = await nursery.start(_until_stopped, mcp, stopped)
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
