"""Per-client shares through HAProxy: the shipped configuration forwards each client's address
(``option forwardfor``) and the replicas trust HAProxy to name it (``--forwarded-allow-ips``,
as ``deploy/`` ships them), so each client address has its own session share and its own
``--rate``, across the replicas. ``test_client_addresses_untrusted.py`` is the control: the
same clients, replicas that do not trust HAProxy, one shared share.
"""

from __future__ import annotations

import trio

from tests.cluster.clients import ask_signup, lives, open_session, peer
from tests.cluster.harness import Cluster

LIMIT = 20.0  # seconds: bound of each test (below a token's refill, 30 s)
RATE = 2  # new elicitations per client per minute
SESSIONS = 2  # sessions per client, on each replica
REPLICA_ARGS = ("--rate", str(RATE), "--sessions-per-client", str(SESSIONS))


async def test_each_client_address_has_its_own_session_share(cluster: Cluster) -> None:
    cluster.only("r1")  # a replica counts the sessions it holds: one replica holds them all
    with trio.fail_after(LIMIT):
        async with peer("127.0.0.2") as first, peer("127.0.0.3") as second:
            mine = [await open_session(first, cluster.url) for _ in range(SESSIONS)]
            other = await open_session(second, cluster.url)  # another address: its own share
            assert await lives(*mine, other) == [True] * (SESSIONS + 1)
            async with peer("127.0.0.9") as claimed:
                untouched = await open_session(claimed, cluster.url)
                # what a client writes itself is not read: HAProxy's entry is right of it,
                # and its Forwarded header never reaches the replicas
                claims = {"x-forwarded-for": "127.0.0.9", "forwarded": "for=127.0.0.9"}
                spoofed = await open_session(first, cluster.url, **claims)
                # the spoofing client's share was full: its own oldest session made room
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
