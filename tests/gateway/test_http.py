"""The gateway over Streamable HTTP, both sides: an HTTP upstream (the SDK under uvicorn), and
``erlmcp-py gateway --transport http`` driven by the official client: questions on the call's
stream, a secret asked on the gateway's hosted page, a client that leaves its call."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import trio
from mcp import Client, types

from erlmcp_py.client import ServerRequest, connect_http
from erlmcp_py.gateway import Upstream
from tests.gateway.support import (
    EVERYTHING,
    LIMIT,
    REPO,
    alive,
    environment,
    free_port,
    gateway_command,
    poll,
    recorded,
    sdk_over_http,
    text,
    through_gateway,
    wait_listening,
)
from tests.transports.test_http import McpHttp, call

PERSON = {"name": "Ada", "age": 36}
CSRF = re.compile(r'name="_csrf" value="([^"]+)"')


def accept_person(request: ServerRequest) -> dict[str, Any]:
    assert request.method == "elicitation/create"
    return {"action": "accept", "content": PERSON}


async def test_an_http_upstream_is_relayed_and_its_questions_asked_through_the_runtime(
    tmp_path: Path,
) -> None:
    with sdk_over_http(tmp_path) as (url, _):
        async with through_gateway(accept_person, upstream=Upstream(url=url)) as (_, client):
            assert client.server_info["name"] == "sdk-upstream"
            assert text(await client.call_tool("echo", {"text": "over http"})) == "over http"
            assert text(await client.call_tool("ask_person")) == "accept: Ada (36)"
    assert recorded(tmp_path, "answers.jsonl") == [{"action": "accept", "data": PERSON}]


@pytest.fixture
def gateway_url(tmp_path: Path) -> Iterator[str]:
    """``erlmcp-py gateway --transport http -- the SDK upstream over stdio``."""
    port = free_port()
    log = (tmp_path / "gateway.log").open("wb")
    process = subprocess.Popen(
        gateway_command("--transport", "http", "--port", str(port), "--log-level", "info"),
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


async def test_the_official_client_is_asked_the_upstreams_question_on_its_calls_stream(
    gateway_url: str, tmp_path: Path
) -> None:
    asked: list[Any] = []

    async def on_elicit(_ctx: Any, params: Any) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content=PERSON)

    with trio.fail_after(LIMIT):
        async with Client(gateway_url, mode="legacy", elicitation_callback=on_elicit) as client:  # type: ignore[arg-type]
            assert client.server_info is not None
            assert client.server_info.name == "sdk-upstream"
            result = await client.call_tool("ask_person", {})
    assert isinstance(result.content[0], types.TextContent)
    assert result.content[0].text == "accept: Ada (36)"
    (question,) = asked
    assert question.message == "Who are you?"
    assert "title" not in question.requested_schema
    async with httpx2.AsyncClient(timeout=10) as http:
        metrics = (await http.get(gateway_url.replace("/mcp", "/metrics"))).text
    assert 'erlmcp_elicitations_ended_total{mode="form",outcome="Accepted"} 1.0' in metrics


async def test_a_secret_is_asked_on_the_gateways_page_and_only_its_answer_reaches_the_upstream(
    gateway_url: str, tmp_path: Path
) -> None:
    pages: list[str] = []
    completed: list[Any] = []

    async def on_elicit(_ctx: Any, params: Any) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestURLParams), params  # never a form
        pages.append(params.url)
        return types.ElicitResult(action="accept")  # the user agrees to open the page

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ServerNotification):
            completed.append(message)

    results: list[types.CallToolResult] = []
    with trio.fail_after(LIMIT):
        async with (
            Client(
                gateway_url,
                mode="legacy",
                elicitation_callback=on_elicit,  # type: ignore[arg-type]
                message_handler=on_message,
            ) as client,
            httpx2.AsyncClient(timeout=10) as http,
            trio.open_nursery() as nursery,
        ):

            async def call() -> None:
                results.append(await client.call_tool("ask_key", {}))

            nursery.start_soon(call)
            await poll(lambda: pages, "the page's URL")
            (url,) = pages
            assert re.fullmatch(r"http://127\.0\.0\.1:\d+/elicit/[A-Za-z0-9_-]{43}", url)
            page = await http.get(url)
            assert page.status_code == 200
            assert 'type="password"' in page.text
            assert 'name="api_key"' in page.text
            (csrf,) = CSRF.findall(page.text)
            sent = await http.post(
                url, data={"_csrf": csrf, "_action": "accept", "api_key": "k-12345"}
            )
            assert sent.status_code == 200
            await poll(lambda: results, "the tool's result")
    (result,) = results
    assert isinstance(result.content[0], types.TextContent)
    assert result.content[0].text == "accept: key of 7 characters"
    (answer,) = recorded(tmp_path, "answers.jsonl")
    assert answer == {"action": "accept", "data": {"api_key": "k-12345"}}


async def test_a_client_that_leaves_its_call_cancels_the_upstreams(
    gateway_url: str, tmp_path: Path
) -> None:
    started = trio.Event()

    with trio.fail_after(LIMIT):
        async with connect_http(gateway_url, capabilities=EVERYTHING) as client:
            async with trio.open_nursery() as nursery:

                async def call() -> None:
                    await client.call_tool(
                        "slow", {"seconds": 30}, on_progress=lambda _: started.set()
                    )

                nursery.start_soon(call)
                await started.wait()  # the upstream's tool runs
                nursery.cancel_scope.cancel()  # the client leaves: its POST is closed
            await poll(lambda: (tmp_path / "cancelled-slow").exists(), "the upstream's cancel")
            # the session and its upstream go on
            assert text(await client.call_tool("echo", {"text": "again"})) == "again"


@pytest.fixture
def idle_gateway_url(tmp_path: Path) -> Iterator[str]:
    """``erlmcp-py gateway --transport http --session-idle-timeout 1``."""
    port = free_port()
    command = gateway_command("--transport", "http", "--port", str(port))
    command[command.index("--") : command.index("--")] = ["--session-idle-timeout", "1"]
    process = subprocess.Popen(command, env=environment(tmp_path), cwd=REPO)
    try:
        wait_listening(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(15)


async def test_an_idle_session_is_reaped_and_its_upstream_process_with_it(
    idle_gateway_url: str,
) -> None:
    """A client that goes away without ending its session (no DELETE, no stream left open):
    the session ends after the idle timeout, and its upstream process with it."""
    with trio.fail_after(LIMIT):
        async with httpx2.AsyncClient(timeout=10) as http:
            client = McpHttp(http, idle_gateway_url)
            await client.initialize()
            answer = (await client.post(call(1, "pid"))).text
            upstream = int(
                json.loads(answer.split("data: ", 1)[-1])["result"]["content"][0]["text"]
            )
            assert alive(upstream)
            await poll(lambda: not alive(upstream), "the idle upstream's end", timeout=15)
            gone = await client.post(call(2, "pid"))
    assert gone.status_code == 404  # the session ended: its client would start another
