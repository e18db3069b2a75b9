"""Per-client shares through a TCP-mode HAProxy: the shipped ``deploy/haproxy/erlmcp-py-tcp.cfg``
forwards bytes without reading HTTP and opens each connection to a replica with a PROXY
protocol v2 header (``send-proxy-v2``); the replicas trust HAProxy's address to send it
(``--proxy-protocol --forwarded-allow-ips 127.0.0.1``), so each client address has its own
session share and its own ``--rate`` across the replicas, as with ``option forwardfor`` in
HTTP mode (``test_client_addresses.py``). HAProxy's health checks reach the replicas through
the same header (the LOCAL command), so every replica is seen up.
"""

from __future__ import annotations

import trio

from tests.cluster.clients import ask_signup, lives, open_session, peer
from tests.cluster.harness import Cluster
from tests.cluster.test_client_addresses import LIMIT, RATE, REPLICA_ARGS, SESSIONS

__all__ = ["REPLICA_ARGS"]

PROXY_PROTOCOL = True


async def test_each_client_address_has_its_own_session_share(cluster: Cluster) -> None:
    cluster.only("r1")  # a replica counts the sessions it holds: one replica holds them all
    with trio.fail_after(LIMIT):
        async with peer("127.0.0.2") as first, peer("127.0.0.3") as second:
            mine = [await open_session(first, cluster.url) for _ in range(SESSIONS)]
            other = await open_session(second, cluster.url)  # another address: its own share
            assert await lives(*mine, other) == [True] * (SESSIONS + 1)
            async with peer("127.0.0.9") as claimed:
                untouched = await open_session(claimed, cluster.url)
                # HAProxy's header names the connection's source: what a client writes in
                # its requests is not read (HAProxy, the trusted peer, adds no such header)
                claims = {"x-forwarded-for": "127.0.0.9", "forwarded": "for=127.0.0.9"}
                spoofed = await open_session(first, cluster.url, **claims)
                assert await lives(*mine, spoofed, other, untouched) == [
                    False,
                    *[True] * (SESSIONS - 1),
                    True,
                    True,
                    True,
                ]


async def test_each_client_address_has_its_own_rate_across_replicas(cluster: Cluster) -> None:
    with trio.fail_after(LIMIT):
        async with peer("127.0.0.4") as first, peer("127.0.0.5") as second:
            asked = [await ask_signup(first, cluster.url, f"first-{n}") for n in range(RATE + 1)]
            other = await ask_signup(second, cluster.url, "second-0")
    assert asked == ["asked"] * RATE + ["rate limited"]
    assert other == "asked"  # another client address: its own bucket in the shared store
