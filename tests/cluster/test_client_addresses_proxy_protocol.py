"""Per-client shares through a TCP-mode HAProxy: the shipped ``deploy/haproxy/erlmcp-py-tcp.cfg``
forwards bytes without reading HTTP and opens each connection to a replica with a PROXY
protocol v2 header (``send-proxy-v2``); the replicas trust HAProxy's address to send it
(``--proxy-protocol --forwarded-allow-ips 127.0.0.1``), so each client address has its own
session share and its own ``--rate`` across the replicas, as with ``option forwardfor`` in
HTTP mode (``test_client_addresses.py``). HAProxy's health checks reach the replicas through
the same header (the LOCAL command), so every replica is seen up.

The tests are those of ``test_client_addresses.py``, run against this cluster. A client's own
``X-Forwarded-For``/``Forwarded`` is not read here either: HAProxy's header names the
connection's source, and HAProxy (the trusted peer) adds no such field.
"""

from __future__ import annotations

from tests.cluster.test_client_addresses import (
    REPLICA_ARGS,
    test_each_client_address_has_its_own_rate_across_replicas,
    test_each_client_address_has_its_own_session_share,
)

__all__ = [
    "REPLICA_ARGS",
    "test_each_client_address_has_its_own_rate_across_replicas",
    "test_each_client_address_has_its_own_session_share",
]

PROXY_PROTOCOL = True
