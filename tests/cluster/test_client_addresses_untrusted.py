"""The control of ``test_client_addresses.py``: the same clients at distinct addresses, through
the same HAProxy, to replicas that trust no proxy (``--forwarded-allow-ips ""``, the
default). Every request reaches them from HAProxy's address, so every client shares one
session share and one ``--rate``.
"""

from __future__ import annotations

import trio

from tests.cluster.clients import ask_signup, lives, open_session, peer
from tests.cluster.harness import Cluster
from tests.cluster.test_client_addresses import LIMIT, RATE, SESSIONS

REPLICA_ARGS = (
    "--forwarded-allow-ips",
    "",
    "--rate",
    str(RATE),
    "--sessions-per-client",
    str(SESSIONS),
)


async def test_without_trust_every_client_shares_the_balancers_session_share(
    cluster: Cluster,
) -> None:
    cluster.only("r1")
    with trio.fail_after(LIMIT):
        async with peer("127.0.0.2") as first, peer("127.0.0.3") as second:
            mine = [await open_session(first, cluster.url) for _ in range(SESSIONS)]
            other = await open_session(second, cluster.url)
            # one share for both: the second client's session ended the first's oldest
            assert await lives(*mine, other) == [False, *[True] * (SESSIONS - 1), True]


async def test_without_trust_every_client_shares_the_balancers_rate(cluster: Cluster) -> None:
    with trio.fail_after(LIMIT):
        async with peer("127.0.0.4") as first, peer("127.0.0.5") as second:
            asked = [await ask_signup(first, cluster.url, f"first-{n}") for n in range(RATE + 1)]
            other = await ask_signup(second, cluster.url, "second-0")
    assert asked == ["asked"] * RATE + ["rate limited"]
    assert other == "rate limited"
