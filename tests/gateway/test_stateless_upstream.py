"""A session-era client in front of a 2026-07-28 upstream: an erlmcp-py server spoken to without a
session (``--upstream-era 2026-07-28``, or found out when it refuses ``initialize``), whose
``InputRequiredResult`` the gateway asks on the client's session through the runtime and answers
in the retry, under the upstream's keys with its ``requestState``. Driven by the official ``mcp``
client in legacy mode, by ``erlmcp-py connect`` and by our own client, everything a real
process on 127.0.0.1."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pexpect
import pytest
import trio
from mcp import Client, StdioServerParameters, types
from mcp.shared.exceptions import MCPError

from erlmcp_py.client import ClientRequestError, ServerRequest, connect_stdio
from tests.gateway.support import (
    LIMIT,
    REPO,
    environment,
    free_port,
    recorded,
    wait_listening,
)

PERSON = {"name": "Ada", "age": 36}
UPSTREAM = "tests.gateway.stateless_upstream:server"


def serve_upstream(*options: str) -> list[str]:
    """``erlmcp-py serve`` with the 2026-07-28 test server."""
    serve = [sys.executable, "-m", "erlmcp_py.app", "serve", "--log-level", "warning"]
    return [*serve, "--server", UPSTREAM, *options]


@pytest.fixture
def upstream_url(tmp_path: Path) -> Iterator[str]:
    """The test server over Streamable HTTP, recording into ``tmp_path``."""
    port = free_port()
    process = subprocess.Popen(
        serve_upstream("--transport", "http", "--port", str(port)),
        env=environment(tmp_path),
        cwd=REPO,
        stdin=subprocess.DEVNULL,
    )
    try:
        wait_listening(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(15)


def gateway(marks: Path, *options: str, tail: list[str]) -> StdioServerParameters:
    """``erlmcp-py gateway OPTIONS TAIL`` as the official client starts it."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "erlmcp_py.app", "gateway", "--log-level", "warning", *options, *tail],
        env=environment(marks),
        cwd=str(REPO),
    )


def over_http(marks: Path, url: str, *options: str) -> StdioServerParameters:
    """The gateway in front of the HTTP upstream, told its era."""
    return gateway(marks, "--upstream-era", "2026-07-28", *options, tail=["--upstream", url])


def text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent), result
    return block.text


async def test_the_official_client_is_asked_again_and_only_the_valid_answer_reaches_the_upstream(
    upstream_url: str, tmp_path: Path
) -> None:
    asked: list[types.ElicitRequestFormParams] = []
    answers = [{"name": "Ada", "age": 200}, PERSON]  # 200: over the server's maximum

    async def on_elicit(_ctx: Any, params: Any) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content=answers.pop(0))

    params = over_http(tmp_path, upstream_url)
    with trio.fail_after(LIMIT):
        async with Client(params, mode="legacy", elicitation_callback=on_elicit) as client:  # type: ignore[arg-type]
            assert client.server_info is not None
            assert client.server_info.name == "stateless-upstream"
            result = await client.call_tool("ask_person", {})
    assert text(result) == "accept: Ada (36)"
    first, second = asked
    assert first.message == "Who are you?"
    assert first.requested_schema["properties"]["age"]["maximum"] == 150
    assert "age" in second.message  # asked again by the gateway, saying what was wrong
    # one retry, under the upstream's own key, with the valid answer only
    assert recorded(tmp_path, "input_responses.jsonl") == [
        {"person": {"action": "accept", "content": PERSON}}
    ]
    assert recorded(tmp_path, "answers.jsonl") == [{"outcome": "Accepted", "content": PERSON}]


async def test_a_decline_is_sent_to_the_upstream_as_a_decline(
    upstream_url: str, tmp_path: Path
) -> None:
    async def on_elicit(_ctx: Any, _params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    params = over_http(tmp_path, upstream_url)
    with trio.fail_after(LIMIT):
        async with Client(params, mode="legacy", elicitation_callback=on_elicit) as client:  # type: ignore[arg-type]
            result = await client.call_tool("ask_person", {})
    assert text(result) == "declined"
    assert recorded(tmp_path, "input_responses.jsonl") == [{"person": {"action": "decline"}}]


async def test_a_question_past_its_deadline_is_answered_cancel_in_the_retry(
    upstream_url: str, tmp_path: Path
) -> None:
    withdrawn: list[bool] = []

    async def never(_ctx: Any, _params: Any) -> types.ElicitResult:
        try:
            await anyio.sleep(LIMIT)  # the user never answers
        except anyio.get_cancelled_exc_class():  # the gateway told the client to drop it
            withdrawn.append(True)
            raise
        raise AssertionError("the question should have ended first")

    params = over_http(tmp_path, upstream_url, "--elicitation-timeout", "1")
    with trio.fail_after(LIMIT):
        async with Client(params, mode="legacy", elicitation_callback=never) as client:  # type: ignore[arg-type]
            result = await client.call_tool("ask_person", {})
    assert text(result) == "cancelled"
    assert withdrawn == [True]
    assert recorded(tmp_path, "input_responses.jsonl") == [{"person": {"action": "cancel"}}]
    assert recorded(tmp_path, "answers.jsonl") == [{"outcome": "Cancelled"}]


async def test_a_client_that_leaves_mid_question_sends_the_upstream_no_further_round(
    upstream_url: str, tmp_path: Path
) -> None:
    asked = trio.Event()

    async def on_elicit(_ctx: Any, _params: Any) -> types.ElicitResult:
        asked.set()
        await anyio.sleep(LIMIT)
        raise AssertionError("the client left first")

    params = over_http(tmp_path, upstream_url)
    with trio.fail_after(LIMIT):
        async with (
            Client(params, mode="legacy", elicitation_callback=on_elicit) as client,  # type: ignore[arg-type]
            trio.open_nursery() as nursery,
        ):
            nursery.start_soon(client.call_tool, "ask_person", {})
            await asked.wait()
            nursery.cancel_scope.cancel()
        # the client is gone, and its gateway process with it: nothing more can reach the
        # upstream, which got the first round only
    assert recorded(tmp_path, "input_responses.jsonl") == []
    assert recorded(tmp_path, "answers.jsonl") == []


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_prompts_completion_resources_and_the_removed_methods_through_the_gateway(
    upstream_url: str, tmp_path: Path
) -> None:
    async def on_elicit(_ctx: Any, params: Any) -> types.ElicitResult:
        assert params.message == "Your name?"
        return types.ElicitResult(action="accept", content=PERSON)

    params = over_http(tmp_path, upstream_url)
    with trio.fail_after(LIMIT):
        async with Client(params, mode="legacy", elicitation_callback=on_elicit) as client:  # type: ignore[arg-type]
            assert client.server_capabilities is not None
            assert client.server_capabilities.prompts is not None
            tools = await client.list_tools()
            assert {t.name for t in tools.tools} == {"ask_person", "echo"}
            assert text(await client.call_tool("echo", {"text": "hi"})) == "hi"
            prompt = await client.get_prompt("greeting", {"language": "French"})
            (message,) = prompt.messages
            assert isinstance(message.content, types.TextContent)
            assert message.content.text == "Greet Ada in French."
            completion = await client.complete(
                types.PromptReference(type="ref/prompt", name="greeting"),
                {"name": "language", "value": "E"},
            )
            assert completion.completion.values == ["English", "Esperanto"]
            read = await client.read_resource("test://motto")
            (contents,) = read.contents
            assert isinstance(contents, types.TextResourceContents)
            assert contents.text == "Ask once, answer well."
            await client.send_ping()
            await client.set_logging_level("debug")
            with pytest.raises(MCPError) as refused:
                await client.subscribe_resource("test://motto")
            assert refused.value.error.code == -32601
            assert "2026-07-28" in refused.value.error.message
    assert recorded(tmp_path, "input_responses.jsonl") == [
        {"who": {"action": "accept", "content": PERSON}}
    ]


async def test_an_upstream_that_refuses_initialize_for_its_version_is_spoken_to_on_2026_07_28(
    tmp_path: Path,
) -> None:
    def fill_in(request: ServerRequest) -> dict[str, Any]:
        assert request.method == "elicitation/create"
        return {"action": "accept", "content": PERSON}

    command = serve_upstream()  # over stdio; it refuses initialize with -32022
    env = dict(environment(tmp_path), STATELESS_UPSTREAM_ONLY="1")
    auto = [sys.executable, "-m", "erlmcp_py.app", "gateway", "--log-level", "warning"]
    with trio.fail_after(LIMIT):
        async with connect_stdio([*auto, "--", *command], env=env, handler=fill_in) as session:
            assert session.protocol_version == "2025-11-25"
            assert session.server_info["name"] == "stateless-upstream"
            assert session.instructions == "A 2026-07-28 server."
            result = await session.call_tool("ask_person")
            assert result["content"][0]["text"] == "accept: Ada (36)"
            assert "resultType" not in result
        session_only = [*auto, "--upstream-era", "session", "--", *command]
        async with connect_stdio(session_only, env=env, handshake=False) as refused:
            with pytest.raises(ClientRequestError) as error:
                await refused.initialize()
    assert error.value.code == -32022  # the upstream's own refusal, passed on
    assert recorded(tmp_path, "input_responses.jsonl") == [
        {"person": {"action": "accept", "content": PERSON}}
    ]
    # a server of both eras keeps its session: it is asked on it, with no input rounds
    with trio.fail_after(LIMIT):
        async with connect_stdio(
            [*auto, "--", *command], env=environment(tmp_path), handler=fill_in
        ) as session:
            result = await session.call_tool("ask_person")
    assert result["content"][0]["text"] == "accept: Ada (36)"
    assert len(recorded(tmp_path, "input_responses.jsonl")) == 1
    assert len(recorded(tmp_path, "answers.jsonl")) == 2


def test_the_terminal_client_answers_a_2026_07_28_servers_question_through_the_gateway(
    upstream_url: str, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LC_")}
    env.update(LANG="C.UTF-8", PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1", TERM="xterm")
    gateway_argv = [sys.executable, "-m", "erlmcp_py.app", "gateway", "--log-level", "warning"]
    gateway_argv += ["--upstream-era", "2026-07-28", "--upstream", upstream_url]
    child = pexpect.spawn(
        sys.executable,
        ["-m", "erlmcp_py.app", "connect", "--", *gateway_argv],
        env=env,
        cwd=str(REPO),
        encoding="utf-8",
        timeout=LIMIT,
        dimensions=(60, 200),
    )
    child.expect_exact("Connected to stateless-upstream 1.0 (protocol 2025-11-25, stdio).")
    child.expect_exact("mcp> ")
    child.sendline("call ask_person")
    child.expect_exact("Who are you?")
    child.expect_exact("Name * — Your name")
    child.sendline("Ada")
    child.expect_exact("[whole number; 0 to 150] > ")
    child.sendline("200")  # out of the bounds the upstream sent: asked again
    child.expect_exact("[whole number; 0 to 150] > ")
    child.sendline("36")
    child.expect_exact("[1] Submit  [2] Reject  [3] Cancel ")
    child.sendline("1")
    child.expect_exact("Answer sent.")
    child.expect_exact("accept: Ada (36)")
    child.expect_exact("mcp> ")
    child.sendline("quit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert recorded(tmp_path, "input_responses.jsonl") == [
        {"person": {"action": "accept", "content": PERSON}}
    ]


async def test_a_2026_07_28_client_is_asked_the_upstreams_input_requests_in_rounds_of_its_own(
    upstream_url: str, tmp_path: Path
) -> None:
    asked: list[Any] = []
    answers = [{"name": "Ada", "age": 200}, PERSON]

    async def on_elicit(_ctx: Any, params: Any) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content=answers.pop(0))

    params = over_http(tmp_path, upstream_url)
    with trio.fail_after(LIMIT):
        async with Client(params, mode="2026-07-28", elicitation_callback=on_elicit) as client:  # type: ignore[arg-type]
            assert client.protocol_version == "2026-07-28"
            result = await client.call_tool("ask_person", {})
    assert text(result) == "accept: Ada (36)"
    assert len(asked) == 2  # the invalid answer asked again by the gateway, in its own round
    assert recorded(tmp_path, "input_responses.jsonl") == [
        {"person": {"action": "accept", "content": PERSON}}
    ]
