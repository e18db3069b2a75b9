"""The gateway: erlmcp-py's elicitation runtime in front of any MCP server.

A :class:`Gateway` is served like any server (stdio, Streamable HTTP); each of its client
sessions has a session with the *upstream* server (a subprocess spoken to over stdio, or a
Streamable HTTP endpoint), supervised and restarted with backoff. Requests and notifications
pass through unchanged; every ``elicitation/create`` of the upstream is asked through the
runtime, as a local ``ctx.elicit`` is. ``erlmcp-py gateway`` is its command; docs/gateway.md
says what it does and what the upstream sees.

Each job lives in its own private module:

* ``_upstream`` -- :class:`Upstream` (where the server is), :class:`UpstreamPolicy`, opening
  one connection and watching it;
* ``_link`` -- one downstream session's supervised upstream connection;
* ``_stateless_upstream`` -- a 2026-07-28 upstream behind a session-era client: the handshake (the
  upstream's era found out), each request's ``_meta``, the input rounds;
* ``_pool`` -- session-era upstream connections lent to one call at a time (for 2026-07-28
  clients, which have no session);
* ``_session`` -- :class:`GatewaySession`: the downstream server session, relayed upstream;
* ``_asking`` -- an upstream's ``elicitation/create`` through the runtime;
* ``_arguments`` -- a ``tools/call``'s missing required arguments, asked from its schema;
* ``_peer`` -- the downstream client as an upstream question sees it;
* ``_endpoint`` -- 2026-07-28 requests (refused: the client speaks the session era);
* ``_server`` -- :class:`Gateway`.
"""

from erlmcp_py.gateway._asking import TIMEOUT_META as TIMEOUT_META
from erlmcp_py.gateway._server import Gateway as Gateway
from erlmcp_py.gateway._session import (
    GatewaySession as GatewaySession,
    upstream_capabilities as upstream_capabilities,
)
from erlmcp_py.gateway._upstream import (
    ERAS as ERAS,
    Upstream as Upstream,
    UpstreamPolicy as UpstreamPolicy,
    parse_header as parse_header,
)

__all__ = [
    "ERAS",
    "Gateway",
    "GatewaySession",
    "TIMEOUT_META",
    "Upstream",
    "UpstreamPolicy",
    "parse_header",
    "upstream_capabilities",
]
