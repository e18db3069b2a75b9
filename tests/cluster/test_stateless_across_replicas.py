"""2026-07-28 tool calls through HAProxy (round-robin, no stickiness) on three replicas that share
one key ring and one store: the official ``mcp`` client answers every round, and the rounds land
on different replicas, around a replica killed between rounds, on one restarted in the middle of
the call, and around one draining on SIGTERM. A suspended call lives in one replica's memory: a
retry that reaches a replica that does not hold its call is replayed there from the answers
sealed in ``requestState``. An elicitation lives on one replica too, and the store makes it
reachable from the others: its status, and the application's completion of a URL-mode one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import trio

from tests.cluster.harness import BACKEND, POLL, Cluster, until

VERSION = "2026-07-28"
LIMIT = 60.0  # seconds: bound of one test's calls (a replica restart included)
#: Every call of this module comes from 127.0.0.1 (HAProxy's address, as the replicas see
#: it): the per-client rate is raised so that the module's calls measure routing, not rate.
#: ``--dev``: the example server's sign-in page is on http://127.0.0.1.
REPLICA_ARGS = ("--rate", "600", "--dev")

INVALID_WHO = {"name": "Ada", "age": "thirty-six"}
WHO = {"name": "Ada", "age": 36}
DONE = "pro: Ada, 36, Lisbon, confirmed=True"


async def signup(
    cluster: Cluster,
    tag: str,
    answers: list[dict[str, Any]],
    between_rounds: Callable[[int], Awaitable[None]] | None = None,
) -> tuple[str, list[str]]:
    """Call ``signup`` through HAProxy with the official client, accepting ``answers`` in
    turn; ``between_rounds(n)`` runs before the ``n``-th answer is given (from 0). The
    result's text and the questions asked."""
    from mcp import Client, types

    asked: list[str] = []

    async def on_elicit(_ctx: Any, params: Any) -> types.ElicitResult:
        if between_rounds is not None:
            await between_rounds(len(asked))
        asked.append(params.message)
        return types.ElicitResult(action="accept", content=answers[len(asked) - 1])

    with trio.fail_after(LIMIT):
        async with Client(cluster.url, mode=VERSION, elicitation_callback=on_elicit) as client:  # type: ignore[arg-type]
            assert client.protocol_version == VERSION
            result = await client.call_tool("signup", {"tag": tag, "plan": "pro"})
    assert not result.is_error, result
    text: str = result.content[0].text  # type: ignore[union-attr]
    return text, asked


def served_by(cluster: Cluster, tag: str) -> set[str]:
    """The replicas whose logs show a round of the call tagged ``tag`` (the tool ran there,
    or received an answer there)."""
    return {name for name, replica in cluster.replicas.items() if replica.events(tag=tag)}


async def test_rounds_land_on_every_replica_and_the_call_completes(cluster: Cluster) -> None:
    before = cluster.requests()
    text, asked = await signup(
        cluster, "spread", [INVALID_WHO, WHO, {"city": "Lisbon"}, {"confirm": True}]
    )
    assert text == DONE
    assert asked[0] == "Who are you?"
    assert "not accepted" in asked[1]  # the invalid answer is asked again, on another replica
    assert asked[2:] == ["Where do you live, Ada?", "Create a pro account for Ada?"]
    # five rounds, one request each, round-robin: every replica served some of them
    assert served_by(cluster, "spread") == set(cluster.replicas)
    after = cluster.requests()
    assert all(after[name] > before[name] for name in cluster.replicas), (before, after)


async def test_a_replica_killed_between_rounds_does_not_end_the_call(cluster: Cluster) -> None:
    killed: list[str] = []

    async def kill_the_first_rounds_replica(n: int) -> None:
        if n == 0:
            [first] = served_by(cluster, "killed")
            cluster.kill(first)  # SIGKILL: its suspended call dies with it
            killed.append(first)

    text, asked = await signup(
        cluster,
        "killed",
        [WHO, {"city": "Lisbon"}, {"confirm": True}],
        kill_the_first_rounds_replica,
    )
    assert text == DONE
    assert len(asked) == 3
    [victim] = killed
    assert not cluster.replicas[victim].running
    # the other two replicas answered the remaining rounds, replaying the call from its state
    assert served_by(cluster, "killed") == set(cluster.replicas)
    for name, replica in cluster.replicas.items():
        if name != victim:
            assert replica.events(tag="killed", event="tool_run"), name


async def test_a_replica_restarted_with_the_same_key_ring_replays_the_call(
    cluster: Cluster,
) -> None:
    cluster.only("r1")  # every round goes to r1: its first incarnation, then its second
    old_pid = cluster.replicas["r1"].pid
    restarted: list[int] = []

    async def restart_r1(n: int) -> None:
        if n == 1:
            restarted.append(cluster.restart("r1"))  # SIGTERM, then the same command again
            cluster.wait_states({"r1": "UP"})

    text, asked = await signup(
        cluster, "restarted", [WHO, {"city": "Lisbon"}, {"confirm": True}], restart_r1
    )
    assert text == DONE
    assert asked == ["Who are you?", "Where do you live, Ada?", "Create a pro account for Ada?"]
    [new_pid] = restarted
    assert new_pid != old_pid
    runs = cluster.replicas["r1"].events(tag="restarted", event="tool_run")
    # the first process ran the tool once; the second replayed it from the state, with the
    # first answer it never saw, and resumed it for the last round
    assert len(runs) == 2


async def test_a_replica_draining_on_sigterm_costs_no_request_an_error(cluster: Cluster) -> None:
    """A rolling restart's first step: a replica stopped with SIGTERM drains (it refuses new
    work with 503 while its own calls go on, then stops), and HAProxy retries what it refuses
    on another replica: no client sees an error."""
    from mcp import Client

    cluster.only("r1")
    cluster.admin("set server erlmcp-py/r2 state ready")
    cluster.wait_states({"r1": "UP", "r2": "UP", "r3": "MAINT"})  # round-robin: r1, r2, r1 …
    retried = cluster.retried()
    drained: list[str] = []
    listed: list[bool] = []

    async def list_tools_while_the_first_rounds_replica_drains(n: int) -> None:
        if n == 0:
            [first] = served_by(cluster, "draining")
            cluster.replicas[first].terminate()  # SIGTERM: it drains, holding this call
            drained.append(first)
            async with Client(cluster.url, mode=VERSION) as client:
                for _ in range(4):  # every other one reaches the draining replica
                    tools = await client.list_tools(cache_mode="bypass")
                    listed.append("signup" in {tool.name for tool in tools.tools})

    text, _ = await signup(
        cluster,
        "draining",
        [WHO, {"city": "Lisbon"}, {"confirm": True}],
        list_tools_while_the_first_rounds_replica_drains,
    )
    assert text == DONE
    assert listed == [True] * 4
    [first] = drained
    assert cluster.replicas[first].wait() == 0  # its drain ended, then a clean stop
    assert cluster.retried() > retried  # what the draining replica refused went elsewhere


def text(result: Any) -> str:
    value: str = result.content[0].text
    return value


async def test_a_url_completion_sent_to_another_replica_completes_the_elicitation_waiting_there(
    cluster: Cluster,
) -> None:
    """The example server's URL-mode sign-in waits on r1 for the application's completion.
    The call's rounds go to r1 only: a URL-mode request carries the id of that replica's
    elicitation, so a replay elsewhere would send the user to a new one. The completion (the
    example server's ``demo_complete_sign_in``) goes through HAProxy to r2, which sees the
    elicitation's status in the store and forwards the completion to r1: the sign-in ends
    there, and the held retry answers the call."""
    from mcp import Client, types

    cluster.only("r1")
    holder, other = cluster.replicas["r1"], cluster.replicas["r2"]
    asked: list[str] = []

    async def open_the_page(_ctx: Any, params: Any) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestURLParams), params
        assert params.elicitation_id is not None
        asked.append(params.elicitation_id)
        return types.ElicitResult(action="accept")  # the user agreed to open the page

    results: list[Any] = []
    with trio.fail_after(LIMIT):
        async with (
            Client(cluster.url, mode=VERSION, elicitation_callback=open_the_page) as client,  # type: ignore[arg-type]
            trio.open_nursery() as nursery,
        ):

            async def sign_in() -> None:
                results.append(await client.call_tool("demo_url_sign_in", {}))

            nursery.start_soon(sign_in)
            await until(  # the retry carrying the consent is held on r1
                lambda: bool(asked and holder.events(event="consented", elicitation_id=asked[0])),
                "r1 to log the user's consent",
            )
            [elicitation_id] = asked
            cluster.admin(f"set server {BACKEND}/r1 state maint")
            cluster.admin(f"set server {BACKEND}/r2 state ready")
            cluster.wait_states({"r1": "MAINT", "r2": "UP", "r3": "MAINT"})
            before = cluster.requests()
            async with Client(cluster.url, mode=VERSION) as application:
                arguments = {"elicitation_id": elicitation_id, "tag": "url-status"}
                while (
                    status := text(await application.call_tool("elicitation_status", arguments))
                ) != "active":
                    assert status == "unknown", status  # r1 publishes its record in the background
                    await trio.sleep(POLL)
                done = await application.call_tool(
                    "demo_complete_sign_in", {"elicitation_id": elicitation_id}
                )
            assert text(done) == f"completed {elicitation_id}: completed"
            after = cluster.requests()
    [result] = results
    assert text(result) == "sign-in: action=accept, content=null"
    assert after["r1"] == before["r1"], (before, after)  # the completion went to r2 alone
    assert served_by(cluster, "url-status") == {"r2"}
    # r1 created the elicitation and ended it; r2 never held it
    assert holder.events(event="created", elicitation_id=elicitation_id)
    assert holder.events(event="outcome", elicitation_id=elicitation_id, outcome="Accepted")
    assert not other.events(elicitation_id=elicitation_id)
