"""2025-11-25 sessions through the same HAProxy frontend as 2026-07-28 calls: the replica that
answers ``initialize`` sets ``Mcp-Session-Id``, HAProxy stores it (``stick store-response``)
and sends every later request of the session there (``stick match``), while requests without
the header are balanced round-robin. A session lives in one replica's memory only; the
official ``mcp`` client's session calls, with their elicitations, complete through HAProxy.
"""

from __future__ import annotations

from typing import Any

import trio

from tests.cluster.harness import Cluster

LIMIT = 30.0  # seconds: bound of one test's calls
#: Every call of this module comes from 127.0.0.1 (HAProxy's address, as the replicas see
#: it): the per-client rate is raised so that the module's calls measure routing, not rate.
REPLICA_ARGS = ("--rate", "600")

ANSWERS = [
    {"name": "Ada", "age": "thirty-six"},  # invalid: asked again, in the same session
    {"name": "Ada", "age": 36},
    {"city": "Lisbon"},
    {"confirm": True},
]


async def session_signups(cluster: Cluster, tag: str, calls: int) -> list[str]:
    """Open a 2025 session through HAProxy and call ``signup`` ``calls`` times in it; the
    results' texts."""
    from mcp import Client, types

    answers: list[dict[str, Any]] = []

    async def on_elicit(_ctx: Any, _params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content=answers.pop(0))

    texts = []
    with trio.fail_after(LIMIT):
        async with Client(cluster.url, mode="legacy", elicitation_callback=on_elicit) as client:  # type: ignore[arg-type]
            assert client.protocol_version == "2025-11-25"
            for n in range(calls):
                answers[:] = ANSWERS
                result = await client.call_tool("signup", {"tag": f"{tag}-{n}", "plan": "pro"})
                assert not result.is_error, result
                texts.append(result.content[0].text)  # type: ignore[union-attr]
                assert not answers  # every question was asked, the invalid answer twice
    return texts


def replicas_with(cluster: Cluster, **match: Any) -> set[str]:
    return {name for name, replica in cluster.replicas.items() if replica.events(**match)}


async def test_a_session_stays_on_the_replica_that_opened_it(cluster: Cluster) -> None:
    opened = {name: len(r.events(event="session_opened")) for name, r in cluster.replicas.items()}
    texts = await session_signups(cluster, "sticky", calls=3)
    assert texts == ["pro: Ada, 36, Lisbon, confirmed=True"] * 3
    now = {name: len(r.events(event="session_opened")) for name, r in cluster.replicas.items()}
    [home] = [name for name in cluster.replicas if now[name] > opened[name]]
    # every request of the session (its calls, the answers to their elicitations, its GET
    # stream) on one replica: any other would have answered 404 (unknown session)
    for n in range(3):
        assert replicas_with(cluster, tag=f"sticky-{n}") == {home}


async def test_sessions_are_spread_and_each_stays_home(cluster: Cluster) -> None:
    async with trio.open_nursery() as nursery:
        for n in range(3):
            nursery.start_soon(session_signups, cluster, f"spread-{n}", 1)
    homes = [replicas_with(cluster, tag=f"spread-{n}-0") for n in range(3)]
    assert all(len(home) == 1 for home in homes), homes
    # three sessions opened at once, initialize balanced round-robin: one per replica
    assert set().union(*homes) == set(cluster.replicas)


async def test_session_and_stateless_requests_share_one_frontend(cluster: Cluster) -> None:
    from mcp import Client, types

    answers = [{"name": "Ada", "age": 36}, {"city": "Lisbon"}, {"confirm": True}]

    async def on_elicit(_ctx: Any, _params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content=answers.pop(0))

    with trio.fail_after(LIMIT):
        async with (
            Client(cluster.url, mode="legacy") as session,
            Client(cluster.url, mode="2026-07-28", elicitation_callback=on_elicit) as modern,
        ):
            tools = await session.list_tools()
            result = await modern.call_tool("signup", {"tag": "beside", "plan": "pro"})
            assert [tool.name for tool in tools.tools] == ["signup"]
            assert (await session.list_tools()).tools == tools.tools
    assert result.content[0].text == "pro: Ada, 36, Lisbon, confirmed=True"  # type: ignore[union-attr]
    assert replicas_with(cluster, tag="beside") == set(cluster.replicas)
