"""``Gateway``: a server whose sessions are answered by an upstream MCP server."""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, ClassVar

import trio

from erlmcp_py.actors.api import RuntimeConfig
from erlmcp_py.actors.runtime import Runtime
from erlmcp_py.actors.urlcheck import Resolver
from erlmcp_py.core.outcomes import Tenant
from erlmcp_py.core.urlpolicy import UrlPolicy
from erlmcp_py.gateway._endpoint import GatewayEndpoint
from erlmcp_py.gateway._forward import FORWARD_KIND, error_answer, holder_gone
from erlmcp_py.gateway._link import UpstreamSlots
from erlmcp_py.gateway._pool import UpstreamPool
from erlmcp_py.gateway._session import GatewaySession
from erlmcp_py.gateway._upstream import Upstream, UpstreamPolicy
from erlmcp_py.mcp.mrtr import ContinuationRegistry
from erlmcp_py.mcp.server import Server
from erlmcp_py.mcp.session import ServerSession
from erlmcp_py.mcp.stateless import StatelessEndpoint
from erlmcp_py.store import NoteSink

__all__ = ["Gateway"]


class Gateway(Server):
    """An MCP server that stands in front of another one, the *upstream*: every request of
    a client is relayed to it and its answer relayed back, while every question the upstream
    asks the user (``elicitation/create``) is asked through this server's elicitation runtime
    (deadlines, validation and re-prompts, URL and secret policy, limits per client). Serve it
    as any :class:`~erlmcp_py.mcp.server.Server` (``serve_stdio``, ``serve_http``,
    ``erlmcp-py gateway``). See ``docs/gateway.md``.

    Example:
        >>> gateway = Gateway(Upstream(command=("python", "server.py")))

    Args:
        upstream: Where the upstream server is.
        policy: How upstream connections are run (limits, restarts, timeouts).
        runtime_config: The elicitation runtime's policy (as for ``Server``).
        url_policy: The URL policy of URL-mode questions (as for ``Server``).
        url_resolver: The resolver of the URL checks (tests inject one).
        tenant: Maps a session to its tenant scope (as for ``Server``).
        name: The server's name in logs and on the hosted page before any upstream has
            answered; clients see the upstream's ``serverInfo``.
        ask_missing_arguments: Ask the user for the required arguments a ``tools/call``
            lacks, with a form built from the tool's ``inputSchema``, instead of relaying a
            call the upstream would refuse (:mod:`~erlmcp_py.gateway._arguments`).
    """

    session_class: ClassVar[type[ServerSession]] = GatewaySession

    def __init__(
        self,
        upstream: Upstream,
        *,
        policy: UpstreamPolicy | None = None,
        runtime_config: RuntimeConfig | Mapping[str, Any] | None = None,
        url_policy: UrlPolicy | None = None,
        url_resolver: Resolver | None = None,
        tenant: Callable[[ServerSession], Tenant] | None = None,
        name: str = "erlmcp-py gateway",
        ask_missing_arguments: bool = False,
    ) -> None:
        super().__init__(
            name,
            "0.1.0",
            runtime_config=runtime_config,
            url_policy=url_policy,
            url_resolver=url_resolver,
            tenant=tenant,
        )
        self.upstream = upstream
        self.upstream_policy = policy or UpstreamPolicy()
        self.upstream_slots = UpstreamSlots(self.upstream_policy.max_upstreams)
        self.ask_missing_arguments = ask_missing_arguments
        pooled = self.upstream_policy
        #: The upstream sessions 2026-07-28 calls run on (session-era upstreams).
        self.pool = UpstreamPool(
            upstream,
            pooled,
            self.upstream_slots,
            size=pooled.pool_size,
            idle_s=pooled.pool_idle_s,
            wait_s=pooled.pool_wait_s,
        )
        #: What the upstream said of itself in its latest ``initialize`` answer.
        self.upstream_info: dict[str, Any] = {}
        #: This process's 2026-07-28 endpoints by key: where a forwarded retry goes.
        self.endpoints: weakref.WeakValueDictionary[str, GatewayEndpoint] = (
            weakref.WeakValueDictionary()
        )

    def learn(self, initialize_result: Mapping[str, Any]) -> None:
        """Keep what the upstream says of itself (its ``serverInfo``, capabilities,
        instructions), for 2026-07-28 clients, who have no ``initialize`` of their own."""
        if initialize_result:
            self.upstream_info = dict(initialize_result)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Runtime]:
        """The server's runtime (see :meth:`~erlmcp_py.mcp.server.Server.running`), with the
        pool of upstream sessions running and this process taking the retries other
        replicas forward to its endpoints."""
        async with super().running() as runtime, trio.open_nursery() as nursery:
            await nursery.start(self.pool.run)
            runtime.handle_requests(FORWARD_KIND, self._take_forwarded)
            try:
                yield runtime
            finally:
                runtime.handle_requests(FORWARD_KIND, None)
                nursery.cancel_scope.cancel()

    async def _take_forwarded(self, body: Mapping[str, Any], note: NoteSink) -> Mapping[str, Any]:
        endpoint = self.endpoints.get(str(body.get("endpoint")))
        if endpoint is None:
            return error_answer(holder_gone("its endpoint has closed"))
        return await endpoint.take_forwarded(body, note)

    def stateless_endpoint(
        self, runtime: Runtime, registry: ContinuationRegistry, **options: Any
    ) -> StatelessEndpoint:
        """The gateway's 2026-07-28 requests, answered by the upstream through the era bridge
        (:class:`~erlmcp_py.gateway._endpoint.GatewayEndpoint`)."""
        return GatewayEndpoint(self, runtime, registry, **options)
