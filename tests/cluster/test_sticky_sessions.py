"""2025-11-25 sessions through the same HAProxy frontend as 2026-07-28 calls: the replica that
answers ``initialize`` sets ``Mcp-Session-Id``, HAProxy stores it (``stick store-response``)
and sends every later request of the session there (``stick match``), while requests without
the header are balanced round-robin. A session lives in one replica's memory only; the
official ``mcp`` client's session calls, with their elicitations, complete through HAProxy.
The session's elicitations are in the shared store like any other: another replica reads
their status and completes them, for the session's tenant only.
"""

from __future__ import annotations

from typing import Any

import trio

from erlmcp_py import ElicitationInfo, ElicitationNotFound, Runtime, Tenant, open_runtime
from tests.cluster.harness import POLL, Cluster, until

LIMIT = 30.0  # seconds: bound of one test's calls
#: Every call of this module comes from 127.0.0.1 (HAProxy's address, as the replicas see
#: it): the per-client rate is raised so that the module's calls measure routing, not rate.
#: ``--dev``: the example server's sign-in page is on http://127.0.0.1.
REPLICA_ARGS = ("--rate", "600", "--dev")

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
            Client(cluster.url, mode="2026-07-28", elicitation_callback=on_elicit) as stateless,
        ):
            tools = await session.list_tools()
            result = await stateless.call_tool("signup", {"tag": "beside", "plan": "pro"})
            assert "signup" in {tool.name for tool in tools.tools}
            assert (await session.list_tools()).tools == tools.tools
    assert result.content[0].text == "pro: Ada, 36, Lisbon, confirmed=True"  # type: ignore[union-attr]
    assert replicas_with(cluster, tag="beside") == set(cluster.replicas)


async def test_a_sessions_elicitation_is_read_and_completed_from_another_replica(
    cluster: Cluster,
) -> None:
    """A session's URL-mode sign-in (the example server's ``demo_url_sign_in``) waits on the
    session's replica. Its status is scoped to the session's tenant (its conversation is the
    session), so no other client reads it: a 2026-07-28 caller gets ``unknown`` on every
    replica. The application's backend, a runtime on the same store (another replica, in
    this process), reads its status and completes it with the session's tenant; the
    completion is forwarded to the session's replica, and the session's call returns."""
    from mcp import Client, types

    asked: list[str] = []
    results: list[Any] = []

    async def open_the_page(_ctx: Any, params: Any) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestURLParams), params
        assert params.elicitation_id is not None
        asked.append(params.elicitation_id)
        return types.ElicitResult(action="accept")  # the user agreed to open the page

    with trio.fail_after(LIMIT):
        async with (
            Client(cluster.url, mode="legacy", elicitation_callback=open_the_page) as session,  # type: ignore[arg-type]
            trio.open_nursery() as nursery,
        ):
            assert session.protocol_version == "2025-11-25"

            async def sign_in() -> None:
                results.append(await session.call_tool("demo_url_sign_in", {}))

            nursery.start_soon(sign_in)
            await until(lambda: bool(asked and consented(cluster, asked[0])), "the consent")
            [elicitation_id] = asked
            [(home, event)] = created(cluster, elicitation_id)
            tenant = Tenant(event["user"], event["workspace"], event["conversation"])
            async with open_runtime({"store": cluster.redis_url}) as backend:
                while True:  # the home replica publishes its records in the background
                    info = await _status(backend, elicitation_id, tenant)
                    if info is not None:
                        break
                    await trio.sleep(POLL)
                assert info.status == "active"
                async with Client(cluster.url, mode="2026-07-28") as stranger:
                    for n in range(2 * len(cluster.replicas)):  # round-robin: every replica
                        arguments = {"elicitation_id": elicitation_id, "tag": f"stranger-{n}"}
                        status = await stranger.call_tool("elicitation_status", arguments)
                        assert status.content[0].text == "unknown"  # type: ignore[union-attr]
                        if strangers_served(cluster, n + 1) == set(cluster.replicas):
                            break
                done = await backend.complete_elicitation(elicitation_id, None, tenant=tenant)
                assert done.status == "completed"
    [result] = results
    assert result.content[0].text == "sign-in: action=accept, content=null"
    assert replicas_with(cluster, elicitation_id=elicitation_id) == {home}
    assert cluster.replicas[home].events(
        event="outcome", elicitation_id=elicitation_id, outcome="Accepted"
    )
    assert strangers_served(cluster, 2 * len(cluster.replicas)) == set(cluster.replicas)


async def _status(runtime: Runtime, elicitation_id: str, tenant: Tenant) -> ElicitationInfo | None:
    try:
        return await runtime.get_elicitation_status(elicitation_id, tenant=tenant)
    except ElicitationNotFound:
        return None


def consented(cluster: Cluster, elicitation_id: str) -> bool:
    """Whether a replica logged the user's consent to open the page of ``elicitation_id``."""
    return bool(replicas_with(cluster, event="consented", elicitation_id=elicitation_id))


def strangers_served(cluster: Cluster, calls: int) -> set[str]:
    """The replicas that answered the first ``calls`` status reads of the 2026-07-28 caller."""
    return set().union(*(replicas_with(cluster, tag=f"stranger-{n}") for n in range(calls)))


def created(cluster: Cluster, elicitation_id: str) -> list[tuple[str, dict[str, Any]]]:
    """The ``created`` log events of ``elicitation_id``, each with its replica."""
    return [
        (name, event)
        for name, replica in cluster.replicas.items()
        for event in replica.events(event="created", elicitation_id=elicitation_id)
    ]
