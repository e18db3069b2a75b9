"""``--rate N`` on three replicas sharing one store, through HAProxy (round-robin): the
replicas take one client's tokens from one bucket in the store, so the client's (N+1)th new
elicitation is refused on whichever replica it lands, although its first N were admitted on
different replicas. Every call of this module comes from 127.0.0.1 (which HAProxy forwards as
the client's address): one client.
"""

from __future__ import annotations

import re
from typing import Any

import trio

from tests.cluster.harness import Cluster, http_get

VERSION = "2026-07-28"
LIMIT = 30.0  # seconds: bound of the module's calls (far below a token's refill, 20 s)
RATE = 3  # new elicitations per client per minute
REPLICA_ARGS = ("--rate", str(RATE))


def rate_refusals(cluster: Cluster) -> dict[str, int]:
    """Each replica's new elicitations refused by the rate limit (its ``/metrics``)."""
    counts = {}
    for name, replica in cluster.replicas.items():
        status, body = http_get(replica.port, "/metrics")
        assert status == 200, body
        found = re.search(r'^erlmcp_refusals_total\{reason="elicitation_rate"\} (\S+)$', body, re.M)
        counts[name] = int(float(found[1])) if found else 0
    return counts


def first_run(cluster: Cluster, tag: str) -> str:
    """The replica that ran the call tagged ``tag`` first (where its question was admitted;
    a replay elsewhere asks it again without a token)."""
    runs = [
        (event["timestamp"], name)
        for name, replica in cluster.replicas.items()
        for event in replica.events(event="tool_run", tag=tag)
    ]
    assert runs, tag
    return min(runs)[1]


async def test_the_rate_holds_across_replicas(cluster: Cluster) -> None:
    from mcp import Client, types

    async def decline(_ctx: Any, _params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    refused_before = rate_refusals(cluster)
    refused: list[str] = []
    with trio.fail_after(LIMIT):
        async with Client(cluster.url, mode=VERSION, elicitation_callback=decline) as client:  # type: ignore[arg-type]
            for n in range(RATE):  # one new elicitation each, declined: admitted
                result = await client.call_tool("signup", {"tag": f"admitted-{n}"})
                assert not result.is_error, result
                assert result.content[0].text == "free: no account"  # type: ignore[union-attr]
            # the next one, and every one after it, is refused, on every replica in turn
            for n in range(2 * len(cluster.replicas)):
                result = await client.call_tool("signup", {"tag": f"refused-{n}"})
                assert result.is_error, result
                refused.append(result.content[0].text)  # type: ignore[union-attr]
                counts = rate_refusals(cluster)
                if all(counts[name] > refused_before[name] for name in cluster.replicas):
                    break
    admitted_on = {first_run(cluster, f"admitted-{n}") for n in range(RATE)}
    assert len(admitted_on) > 1, admitted_on  # the N tokens were taken on different replicas
    after = rate_refusals(cluster)
    assert all(after[name] > refused_before[name] for name in cluster.replicas), after
    assert sum(after.values()) - sum(refused_before.values()) == len(refused)
    for text in refused:  # the runtime's refusal, as the tool's error result
        found = re.search(r"rate limited: retry after ([0-9.]+) s", text)
        assert found, text
        assert 0 < float(found[1]) <= 60 / RATE  # at most one token's refill away
