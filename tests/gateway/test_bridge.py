"""The era bridge for 2026-07-28 clients: the official SDK's ``MCPServer`` (a subprocess, a
session-era upstream whose tools block in ``ctx.elicit``) in front of clients that have no
session. The gateway holds the upstream call on a pooled upstream session, answers the client
with an ``InputRequiredResult`` whose state it seals, and feeds the retry's answers, through
the runtime, to the waiting upstream request.

What the upstream receives is checked where it lands: the SDK tool's own result, and the
answers it recorded (``answers.jsonl``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from structlog.testing import capture_logs

from erlmcp_py.client import ClientRequestError, ClientSession, ServerRequest, connect_in_memory
from erlmcp_py.core.state_token import KeyRing
from erlmcp_py.core.versions import V_2026_07_28
from erlmcp_py.gateway import Upstream, UpstreamPolicy
from tests.gateway.odd_upstreams import BURST
from tests.gateway.support import (
    EVERYTHING,
    LIMIT,
    REPO,
    SDK_UPSTREAM,
    alive,
    environment,
    free_port,
    gateway_command,
    poll,
    recorded,
    text,
    through_gateway,
    wait_listening,
)

PERSON = {"name": "Ada", "age": 36}
ODD_UPSTREAMS = str(Path(__file__).with_name("odd_upstreams.py"))


@pytest.fixture
def marks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the upstream (started by the gateway in this process) writes what it received."""
    monkeypatch.setenv("GATEWAY_TEST_MARKS", str(tmp_path))
    return tmp_path


def never(request: ServerRequest) -> None:
    """A user who answers nothing (the tests answer the rounds themselves)."""


async def first_round(client: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call ``tool`` once; its ``InputRequiredResult``."""
    result = await client.request("tools/call", {"name": tool, "arguments": arguments})
    assert result["resultType"] == "input_required", result
    return result


async def retry(
    client: ClientSession, tool: str, state: str, answers: dict[str, Any], **arguments: Any
) -> dict[str, Any]:
    """The retry of a call: its state and answers."""
    params = {
        "name": tool,
        "arguments": arguments,
        "requestState": state,
        "inputResponses": answers,
    }
    return await client.request("tools/call", params)


def only_key(result: dict[str, Any]) -> str:
    (key,) = result["inputRequests"]
    return str(key)


# -- the official client, over stdio and Streamable HTTP --------------------------------------


async def test_the_sdk_server_alone_fails_ctx_elicit_on_2026_07_28_the_gateway_completes_it() -> (
    None
):
    from mcp import Client, StdioServerParameters, types
    from mcp.shared.exceptions import MCPError

    async def on_elicit(_ctx: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content=PERSON)

    alone = StdioServerParameters(command=sys.executable, args=[str(SDK_UPSTREAM), "stdio"])
    command = gateway_command("--log-level", "warning")
    gateway = StdioServerParameters(command=command[0], args=command[1:], cwd=str(REPO))
    with trio.fail_after(LIMIT):
        async with Client(alone, mode=V_2026_07_28, elicitation_callback=on_elicit) as client:  # type: ignore[arg-type]
            assert client.protocol_version == V_2026_07_28
            with pytest.raises(MCPError, match="no back-channel"):
                await client.call_tool("ask_person", {})
        async with Client(gateway, mode=V_2026_07_28, elicitation_callback=on_elicit) as client:  # type: ignore[arg-type]
            assert client.protocol_version == V_2026_07_28
            result = await client.call_tool("ask_person", {})
    assert not result.is_error, result
    assert result.content[0].text == "accept: Ada (36)"  # type: ignore[union-attr]


@pytest.fixture
def gateway_url(tmp_path: Path) -> Iterator[str]:
    """``erlmcp-py gateway --transport http -- the SDK upstream over stdio``."""
    port = free_port()
    log = (tmp_path / "gateway.log").open("wb")
    process = subprocess.Popen(
        gateway_command("--transport", "http", "--port", str(port)),
        env=environment(tmp_path),
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stderr=log,
    )
    try:
        wait_listening(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(15)
        log.close()


async def test_over_http_a_2026_07_28_client_sees_the_upstream_and_completes_its_question(
    gateway_url: str, tmp_path: Path
) -> None:
    from mcp import Client, types

    asked: list[str] = []

    async def on_elicit(_ctx: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        if len(asked) == 1:  # invalid: asked again in the next round
            return types.ElicitResult(action="accept", content={"name": "Ada", "age": "old"})
        return types.ElicitResult(action="accept", content=PERSON)

    with trio.fail_after(LIMIT):
        async with Client(gateway_url, mode=V_2026_07_28, elicitation_callback=on_elicit) as client:  # type: ignore[arg-type]
            assert client.protocol_version == V_2026_07_28
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert {"ask_person", "echo"} <= tools
            result = await client.call_tool("ask_person", {})
            echoed = await client.call_tool("echo", {"text": "stateless"})
    assert result.content[0].text == "accept: Ada (36)"  # type: ignore[union-attr]
    assert echoed.content[0].text == "stateless"  # type: ignore[union-attr]
    assert asked[0] == "Who are you?"
    assert "age: must be a whole number" in asked[1]
    assert recorded(tmp_path, "answers.jsonl") == [{"action": "accept", "data": PERSON}]


# -- the rounds, with the client stack -------------------------------------------------------


async def test_discover_and_the_lists_are_the_upstreams_and_other_methods_are_not_2026_07_28(
    marks: Path,
) -> None:
    async with through_gateway(never, protocol_version=V_2026_07_28) as (_, client):
        found = await client.discover()
        assert V_2026_07_28 in found["supportedVersions"]
        assert found["instructions"] == "An SDK server behind the gateway."
        assert client.server_info["name"] == "sdk-upstream"
        assert "ask_person" in {tool["name"] for tool in await client.list_tools()}
        motd = await client.request("resources/read", {"uri": "test://motd"})
        assert motd["contents"][0]["text"] == "Welcome."
        assert motd["cacheScope"] == "public"
        with pytest.raises(ClientRequestError) as unknown:
            await client.request("resources/read", {"uri": "test://nothing"})
        assert unknown.value.code == -32602
        with pytest.raises(ClientRequestError) as ping:
            await client.request("ping")
        assert ping.value.code == -32601


async def test_an_invalid_answer_in_the_retry_is_asked_again_the_upstream_gets_only_the_valid_one(
    marks: Path,
) -> None:
    async with through_gateway(never, protocol_version=V_2026_07_28) as (_, client):
        round1 = await first_round(client, "ask_person")
        key = only_key(round1)
        question = round1["inputRequests"][key]
        assert question["method"] == "elicitation/create"
        assert "title" not in question["params"]["requestedSchema"]  # the SDK's annotation
        invalid = {key: {"action": "accept", "content": {"name": "Ada", "age": "old"}}}
        round2 = await retry(client, "ask_person", round1["requestState"], invalid)
        assert round2["resultType"] == "input_required"
        again = round2["inputRequests"][only_key(round2)]["params"]["message"]
        assert "age: must be a whole number" in again
        assert recorded(marks, "answers.jsonl") == []  # the upstream still waits
        valid = {only_key(round2): {"action": "accept", "content": PERSON}}
        done = await retry(client, "ask_person", round2["requestState"], valid)
    assert done["resultType"] == "complete"
    assert text(done) == "accept: Ada (36)"
    assert recorded(marks, "answers.jsonl") == [{"action": "accept", "data": PERSON}]


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_a_decline_and_a_cancel_in_the_retry_reach_the_upstream(
    marks: Path, action: str
) -> None:
    async with through_gateway(never, protocol_version=V_2026_07_28) as (_, client):
        round1 = await first_round(client, "ask_person")
        answer = {only_key(round1): {"action": action}}
        done = await retry(client, "ask_person", round1["requestState"], answer)
    assert text(done) == action
    assert recorded(marks, "answers.jsonl") == [{"action": action}]


async def test_a_question_nobody_answers_is_answered_cancel_to_the_upstream_at_its_deadline(
    marks: Path,
) -> None:
    runtime = {"form_deadline_s": 1.0, "warn_before_s": 0.5}
    async with through_gateway(never, protocol_version=V_2026_07_28, runtime=runtime) as (
        _,
        client,
    ):
        round1 = await first_round(client, "ask_person")
        await poll(lambda: recorded(marks, "answers.jsonl"), "the upstream's answer")
        assert recorded(marks, "answers.jsonl") == [{"action": "cancel"}]
        late = {only_key(round1): {"action": "accept", "content": PERSON}}
        done = await retry(client, "ask_person", round1["requestState"], late)
    assert text(done) == "cancel"  # the late answer is not delivered: the question ended


async def test_a_client_that_cancels_its_call_cancels_the_upstreams_and_progress_reaches_it(
    marks: Path,
) -> None:
    progress: list[Any] = []
    started = trio.Event()

    def on_progress(*report: Any) -> None:
        progress.append(report)
        started.set()

    async with through_gateway(never, protocol_version=V_2026_07_28) as (_, client):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                lambda: client.call_tool("slow", {"seconds": 30}, on_progress=on_progress)
            )
            await started.wait()  # the upstream's tool runs: its progress reached the client
            nursery.cancel_scope.cancel()  # the client stops waiting: notifications/cancelled
        await poll(lambda: (marks / "cancelled-slow").exists(), "the upstream's cancel")
        assert text(await client.call_tool("echo", {"text": "after"})) == "after"
    assert progress


async def test_a_retry_forwarded_to_the_connection_holding_its_call_and_cancelled_cancels_it(
    tmp_path: Path,
) -> None:
    arguments = {"marks": str(tmp_path)}
    shared = {"keyring": KeyRing("shared", b"k" * 32)}  # as replicas given one --keyring
    async with (
        through_gateway(
            never, protocol_version=V_2026_07_28, peer_id="ada", continuations=shared
        ) as (gateway, holder),
        connect_in_memory(
            gateway,
            peer_id="ada",
            continuations=shared,
            handler=never,
            capabilities=EVERYTHING,
            protocol_version=V_2026_07_28,
        ) as other,
    ):
        first = await first_round(holder, "ask_then_wait", **arguments)
        answers = {only_key(first): {"action": "accept", "content": PERSON}}
        async with trio.open_nursery() as nursery:
            with capture_logs() as logs:
                nursery.start_soon(
                    lambda: retry(
                        other, "ask_then_wait", first["requestState"], answers, **arguments
                    )
                )
                # the retry reached the holder's connection: the upstream's tool got the answer
                await poll((tmp_path / "answered-ask_then_wait").exists, "the answer upstream")
            # the other connection's endpoint forwarded it to the holder's
            assert [e for e in logs if e["event"] == "retry_forwarded"]
            nursery.cancel_scope.cancel()  # the client stops waiting: notifications/cancelled
        # the holder ends the retry as one cancelled there: the upstream's call is cancelled
        await poll((tmp_path / "cancelled-ask_then_wait").exists, "the upstream's cancel")


async def test_a_retry_forwarded_to_the_connection_holding_its_call_relays_its_progress_and_logs(
    tmp_path: Path,
) -> None:
    shared = {"keyring": KeyRing("shared", b"k" * 32)}  # as replicas given one --keyring
    seen: list[tuple[str, Any]] = []  # what the retry's client saw, in order
    async with (
        through_gateway(
            never, protocol_version=V_2026_07_28, peer_id="ada", continuations=shared
        ) as (gateway, holder),
        connect_in_memory(
            gateway,
            peer_id="ada",
            continuations=shared,
            handler=never,
            capabilities=EVERYTHING,
            protocol_version=V_2026_07_28,
            log_level="info",
            on_notification=lambda method, params: seen.append((method, params)),
        ) as other,
    ):
        steps = 20  # all sent by the upstream just before its answer
        call = {"name": "ask_then_report", "arguments": {"steps": steps}}
        first = await holder.request("tools/call", call, on_progress=lambda _: None)
        assert first["resultType"] == "input_required"
        answers = {only_key(first): {"action": "accept", "content": PERSON}}
        with capture_logs() as logs:
            done = await other.request(
                "tools/call",
                {**call, "requestState": first["requestState"], "inputResponses": answers},
                on_progress=lambda params: seen.append(("progress", params)),
            )
            seen.append(("answer", text(done)))
        # the other connection's endpoint forwarded it to the holder's
        assert [e for e in logs if e["event"] == "retry_forwarded"]
    # every progress report (under the retry's own token) and log message of the holder's
    # round reached the retry's connection, in order, before its answer
    progress = [(p["progress"], p["message"]) for kind, p in seen if kind == "progress"]
    assert progress == [(n, f"step {n}") for n in range(1, steps + 1)]
    messages = [p["data"] for kind, p in seen if kind == "notifications/message"]
    assert messages == [f"step {n} of {steps}" for n in range(1, steps + 1)]
    assert [kind for kind, _ in seen] == [
        *("progress", "notifications/message") * steps,
        "answer",
    ]
    assert seen[-1] == ("answer", f"accept: {steps} steps")
    assert not [e for e in logs if e["event"] == "forwarded_notes_dropped"]


async def test_the_notifications_an_upstream_sends_with_its_answer_all_precede_it() -> None:
    upstream = Upstream(command=(sys.executable, ODD_UPSTREAMS, "bursts"))
    seen: list[tuple[str, Any]] = []
    async with through_gateway(
        never,
        upstream=upstream,
        protocol_version=V_2026_07_28,
        log_level="info",
        on_notification=lambda method, params: seen.append((method, params)),
    ) as (_, client):
        call = {"name": "report", "arguments": {}}
        first = await client.request("tools/call", call, on_progress=lambda _: None)
        answers = {only_key(first): {"action": "accept", "content": {"name": "Ada"}}}
        # the upstream writes its 20 steps' notifications and its answer at once
        done = await client.request(
            "tools/call",
            {**call, "requestState": first["requestState"], "inputResponses": answers},
            on_progress=lambda params: seen.append(("progress", params)),
        )
        seen.append(("answer", text(done)))
    assert [kind for kind, _ in seen] == [
        *("progress", "notifications/message") * BURST,
        "answer",
    ]
    assert [p["progress"] for kind, p in seen if kind == "progress"] == list(range(1, BURST + 1))


async def test_an_upstream_that_dies_mid_question_ends_the_call_with_upstream_lost(
    marks: Path,
) -> None:
    policy = UpstreamPolicy(pool_size=1)
    async with through_gateway(never, protocol_version=V_2026_07_28, policy=policy) as (_, client):
        pid = int(text(await client.call_tool("pid")))
        round1 = await first_round(client, "ask_person")
        os.kill(pid, signal.SIGKILL)
        await poll(lambda: not alive(pid), "the upstream's death")
        answer = {only_key(round1): {"action": "accept", "content": PERSON}}
        with pytest.raises(ClientRequestError) as lost:
            await retry(client, "ask_person", round1["requestState"], answer)
        assert lost.value.code == -32603
        assert lost.value.data["reason"] == "upstream_lost"
        # the pool starts another upstream for the next call
        assert int(text(await client.call_tool("pid"))) != pid
    assert recorded(marks, "answers.jsonl") == []


async def test_the_pool_bounds_the_upstream_sessions_that_2026_07_28_calls_hold(
    marks: Path,
) -> None:
    policy = UpstreamPolicy(pool_size=1, pool_wait_s=0.5)
    async with through_gateway(never, protocol_version=V_2026_07_28, policy=policy) as (gw, client):
        round1 = await first_round(client, "ask_person")  # holds the only session
        with pytest.raises(ClientRequestError) as busy:
            await client.call_tool("echo", {"text": "x"})
        assert busy.value.code == -32603
        assert busy.value.data["reason"] == "upstream_unavailable"
        assert "all 1 pooled upstream sessions are busy" in busy.value.message
        answer = {only_key(round1): {"action": "accept", "content": PERSON}}
        done = await retry(client, "ask_person", round1["requestState"], answer)
        assert text(done) == "accept: Ada (36)"
        assert text(await client.call_tool("echo", {"text": "free"})) == "free"
        assert gw.pool.sessions == 1
