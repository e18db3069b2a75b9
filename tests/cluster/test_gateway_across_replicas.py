"""The gateway's era bridge on three replicas (``erlmcp-py gateway --transport http``, each in
front of its own official SDK ``MCPServer`` over stdio) sharing one key ring and one Redis, behind
HAProxy (round-robin, no stickiness): a 2026-07-28 call holds its upstream request on the replica
it reached, and a retry that lands on another replica is forwarded to that holder through the
store, never replayed (the upstream's tool must not run twice). A retry whose holder died ends
with a clear error.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import httpx2
import trio

from tests.cluster.harness import Cluster, Replica
from tests.gateway.support import SDK_UPSTREAM, poll

VERSION = "2026-07-28"
LIMIT = 60.0
REPLICA_COMMAND = ("gateway",)
REPLICA_ARGS = ("--rate", "600")
REPLICA_TAIL = ("--", sys.executable, str(SDK_UPSTREAM), "stdio")
PERSON = {"name": "Ada", "age": 36}
META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "cluster-test", "version": "1"},
}


async def call(
    port: int,
    id: int,
    state: str | None = None,
    answers: dict[str, Any] | None = None,
    tool: str = "ask_person",
    arguments: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One ``tools/call`` of ``tool`` (``ask_person``) POSTed to the replica on ``port``; its
    JSON-RPC answer."""
    return (await call_streamed(port, id, state, answers, tool, arguments))[-1]


async def call_streamed(
    port: int,
    id: int,
    state: str | None = None,
    answers: dict[str, Any] | None = None,
    tool: str = "ask_person",
    arguments: dict[str, Any] | None = None,
    meta: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Like :func:`call` (with ``meta`` added to the request's ``_meta``): every message of
    its response, in order (an SSE stream's events, the answer last)."""
    params: dict[str, Any] = {
        "name": tool,
        "arguments": arguments or {},
        "_meta": {**META, **(meta or {})},
    }
    if state is not None:
        params["requestState"] = state
    if answers is not None:
        params["inputResponses"] = answers
    async with httpx2.AsyncClient(timeout=30) as http:
        answer = await http.post(
            f"http://127.0.0.1:{port}/mcp",
            json={"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params},
            headers={
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": VERSION,
                "Mcp-Method": "tools/call",
                "Mcp-Name": tool,
            },
        )
    if not answer.headers.get("content-type", "").startswith("text/event-stream"):
        return [answer.json()]
    return [
        json.loads(line.removeprefix("data:"))
        for line in answer.text.splitlines()
        if line.startswith("data:")
    ]


def forwarded_by(cluster: Cluster) -> dict[str, int]:
    """How many retries each replica forwarded to a holder so far."""
    return {name: len(r.events(event="retry_forwarded")) for name, r in cluster.replicas.items()}


def abandoned(replica: Replica) -> list[dict[str, Any]]:
    """The requests whose client left them on ``replica`` so far."""
    return replica.events(event="stateless_request_abandoned")


def asked_by(cluster: Cluster) -> dict[str, int]:
    """How many upstream questions each replica asked so far."""
    return {name: len(r.events(event="gateway_question")) for name, r in cluster.replicas.items()}


async def test_a_2026_07_28_client_completes_the_sdk_servers_question_across_two_replicas(
    cluster: Cluster,
) -> None:
    from mcp import Client, types

    before = sum(forwarded_by(cluster).values())

    async def on_elicit(_ctx: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content=PERSON)

    with trio.fail_after(LIMIT):
        async with Client(cluster.url, mode=VERSION, elicitation_callback=on_elicit) as client:  # type: ignore[arg-type]
            result = await client.call_tool("ask_person", {})
    assert not result.is_error, result
    assert result.content[0].text == "accept: Ada (36)"  # type: ignore[union-attr]
    # round-robin: the call and its retry reached two replicas; the retry went to the holder
    assert sum(forwarded_by(cluster).values()) == before + 1


async def test_a_retry_on_another_replica_is_forwarded_to_the_holder_and_asked_again_there(
    cluster: Cluster,
) -> None:
    r1, r2, r3 = (cluster.replicas[name].port for name in ("r1", "r2", "r3"))
    forwarded, asked = forwarded_by(cluster), asked_by(cluster)
    with trio.fail_after(LIMIT):
        first = (await call(r1, 1))["result"]
        assert first["resultType"] == "input_required"
        (key,) = first["inputRequests"]
        invalid = {key: {"action": "accept", "content": {"name": "Ada", "age": "old"}}}
        second = (await call(r2, 2, first["requestState"], invalid))["result"]
        assert second["resultType"] == "input_required"  # re-prompted by the holder
        (again,) = second["inputRequests"]
        message = second["inputRequests"][again]["params"]["message"]
        assert "age: must be a whole number" in message
        done = await call(
            r3, 3, second["requestState"], {again: {"action": "accept", "content": PERSON}}
        )
    assert done["result"]["content"][0]["text"] == "accept: Ada (36)"
    # one upstream question, asked (and asked again) on the holder: the others forwarded
    after = forwarded_by(cluster)
    assert (after["r1"], after["r2"], after["r3"]) == (
        forwarded["r1"],
        forwarded["r2"] + 1,
        forwarded["r3"] + 1,
    )
    assert asked_by(cluster) == {**asked, "r1": asked["r1"] + 1}


async def test_a_retry_whose_holder_died_ends_with_holder_gone_and_is_never_replayed(
    cluster: Cluster,
) -> None:
    r1, r2 = (cluster.replicas[name].port for name in ("r1", "r2"))
    asked = asked_by(cluster)["r2"]
    with trio.fail_after(LIMIT):
        first = (await call(r1, 1))["result"]
        (key,) = first["inputRequests"]
        cluster.kill("r1")
        answers = {key: {"action": "accept", "content": PERSON}}
        error = (await call(r2, 2, first["requestState"], answers))["error"]
    assert error["code"] == -32603
    assert error["data"] == {"reason": "holder_gone"}
    assert "not run again" in error["message"]
    assert asked_by(cluster)["r2"] == asked  # nothing was asked (or run) again there


async def test_a_forwarded_retry_its_client_abandons_is_cancelled_on_the_holder(
    cluster: Cluster, tmp_path: Path
) -> None:
    r1, r2 = (cluster.replicas[name].port for name in ("r1", "r2"))
    arguments = {"marks": str(tmp_path)}
    cancelled = tmp_path / "cancelled-ask_then_wait"
    forwarded = forwarded_by(cluster)["r2"]
    r2_log = cluster.replicas["r2"]
    left, failed = abandoned(r2_log), len(r2_log.events(event="request_failed"))
    with trio.fail_after(LIMIT):
        first = (await call(r1, 1, tool="ask_then_wait", arguments=arguments))["result"]
        (key,) = first["inputRequests"]
        answers = {key: {"action": "accept", "content": PERSON}}
        # the retry, forwarded to r1, waits there while the upstream's tool runs on: its
        # client gives up and closes the request
        with trio.move_on_after(2):
            await call(r2, 2, first["requestState"], answers, "ask_then_wait", arguments)
        assert forwarded_by(cluster)["r2"] == forwarded + 1
        # the holder cancels the call, as when the client left a retry it received itself:
        # the upstream request is cancelled long before the round's hold (30 s) would end
        await poll(cancelled.exists, "the upstream's cancel", timeout=15)
        # the replica the client left saw it leave, as for a retry it held itself
        await poll(lambda: len(abandoned(r2_log)) > len(left), "the abandoned retry's log")
    assert len(r2_log.events(event="request_failed")) == failed


async def test_a_forwarded_retry_streams_the_holders_progress_and_logs_before_its_answer(
    cluster: Cluster,
) -> None:
    r1, r2 = (cluster.replicas[name].port for name in ("r1", "r2"))
    forwarded = forwarded_by(cluster)["r2"]
    arguments = {"steps": 3}
    with trio.fail_after(LIMIT):
        (first,) = await call_streamed(
            r1, 1, tool="ask_then_report", arguments=arguments, meta={"progressToken": "p-1"}
        )
        (key,) = first["result"]["inputRequests"]
        answers = {key: {"action": "accept", "content": PERSON}}
        # the retry reaches r2, which forwards it to r1, where the upstream's tool reports
        # its steps once it has its answer
        messages = await call_streamed(
            r2,
            2,
            first["result"]["requestState"],
            answers,
            "ask_then_report",
            arguments,
            meta={"progressToken": "p-2", "io.modelcontextprotocol/logLevel": "info"},
        )
    assert forwarded_by(cluster)["r2"] == forwarded + 1
    *notes, done = messages
    assert done["id"] == 2
    assert done["result"]["content"][0]["text"] == "accept: 3 steps"
    # on r2's response stream, before the answer, in the order the upstream sent them
    assert [(n["method"], n["params"].get("progressToken")) for n in notes] == [
        ("notifications/progress", "p-2"),  # the retry's own token
        ("notifications/message", None),
    ] * 3
    assert [n["params"]["progress"] for n in notes[::2]] == [1, 2, 3]
    assert [n["params"]["data"] for n in notes[1::2]] == [f"step {s} of 3" for s in (1, 2, 3)]
