"""The gateway's 2026-07-28 requests: refused, so that the client speaks the session era.

A 2026-07-28 request carries everything in its ``_meta`` and needs no ``initialize``; the
transports hand it to the server's :meth:`~erlmcp_py.mcp.server.Server.stateless_endpoint`
(Streamable HTTP for every request without a session, stdio for each connection). The
gateway's is :class:`GatewayEndpoint`: it answers every such request ``-32022`` (unsupported
protocol version) naming the session versions it speaks, so the client starts a session
(``initialize``) instead, which the gateway relays to its upstream (HTTP: 400).

This is where the 2026-07-28 bridge goes: a ``tools/call`` or ``prompts/get`` taken by the
continuation registry (:meth:`~erlmcp_py.mcp.stateless.StatelessEndpoint.accept`) with a run
that leases a session-era upstream session from the bounded
:class:`~erlmcp_py.gateway._pool.UpstreamPool` (``pool.lease(upstream_capabilities(peer
.capabilities, version), events)``, the events answering the upstream's questions with
:meth:`~erlmcp_py.gateway._asking.Asker.elicit` and ``relay`` over the call's
:class:`~erlmcp_py.mcp.mrtr.MrtrPeer`: an input round), and the other requests relayed on a
leased session.
"""

from __future__ import annotations

from typing import Any

from erlmcp_py.mcp.jsonrpc import JsonRpcError, Request
from erlmcp_py.mcp.meta import UNSUPPORTED_PROTOCOL_VERSION
from erlmcp_py.mcp.mrtr import Attached
from erlmcp_py.mcp.stateless import StatelessEndpoint
from erlmcp_py.mcp.versions import SESSION_VERSIONS

__all__ = ["GatewayEndpoint", "sessions_only"]


def sessions_only(request: Request) -> JsonRpcError:
    """The ``-32022`` answer to a 2026-07-28 request of the gateway."""
    return JsonRpcError(
        UNSUPPORTED_PROTOCOL_VERSION,
        "Unsupported protocol version: this gateway serves sessions (initialize)",
        {"supported": list(reversed(SESSION_VERSIONS))},
        request.id,
    )


class GatewayEndpoint(StatelessEndpoint):
    """The gateway's endpoint of 2026-07-28 requests (see the module docstring)."""

    async def handle(self, request: Request, **options: Any) -> dict[str, Any]:
        """Refuse the request (``-32022``).

        Raises:
            JsonRpcError: always.
        """
        raise sessions_only(request)

    def accept(self, request: Request, **options: Any) -> Attached:
        """Refuse the call (``-32022``).

        Raises:
            JsonRpcError: always.
        """
        raise sessions_only(request)
