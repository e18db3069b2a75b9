"""Everything but elicitation passes through the gateway unchanged, both ways: ``erlmcp-py
gateway -- python sdk_upstream.py stdio`` as a real process, driven by the official ``mcp``
client and by the client stack, compared with the same upstream spoken to directly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio
from mcp import Client, StdioServerParameters, types

from erlmcp_py.client import ClientRequestError, ClientSession, connect_stdio
from erlmcp_py.mcp.jsonrpc import ErrorResponse, Response
from tests.gateway.support import (
    EVERYTHING,
    LIMIT,
    REPO,
    environment,
    gateway_command,
    poll,
    recorded,
    text,
    upstream_command,
)

#: Requests whose answers must be the upstream's own, byte for byte (results and errors).
SAME_ANSWERS: list[tuple[str, dict[str, Any] | None]] = [
    ("tools/list", {}),
    ("tools/call", {"name": "echo", "arguments": {"text": "hi"}}),
    ("tools/call", {"name": "fails", "arguments": {}}),  # a tool error: isError
    ("tools/call", {"name": "no_such_tool", "arguments": {}}),
    ("tools/call", {"name": "echo", "arguments": {"text": 3}}),  # bad arguments
    ("resources/list", {}),
    ("resources/templates/list", {}),
    ("resources/read", {"uri": "test://motd"}),
    ("resources/read", {"uri": "test://items/42"}),
    ("resources/read", {"uri": "test://nothing"}),
    ("prompts/list", {}),
    ("prompts/get", {"name": "review", "arguments": {"code": "x = 1", "language": "rust"}}),
    ("prompts/get", {"name": "review", "arguments": {}}),  # a missing argument
    (
        "completion/complete",
        {
            "ref": {"type": "ref/prompt", "name": "review"},
            "argument": {"name": "language", "value": "r"},
        },
    ),
    ("logging/setLevel", {"level": "debug"}),
    ("ping", None),
    ("no/such/method", {"x": 1}),
]  # fmt: skip


def params(*options: str, marks: Path | None = None) -> StdioServerParameters:
    """The gateway, as the official client starts a stdio server."""
    command = gateway_command("--log-level", "warning", *options)
    return StdioServerParameters(
        command=command[0], args=command[1:], env=environment(marks), cwd=str(REPO)
    )


def raw(answer: Response | ErrorResponse) -> dict[str, Any]:
    if isinstance(answer, Response):
        return {"result": answer.result}
    return {"error": [answer.code, answer.message, answer.data]}


async def answers(session: ClientSession) -> list[dict[str, Any]]:
    return [
        raw(await session.request_raw(m, p, id=f"q{i}")) for i, (m, p) in enumerate(SAME_ANSWERS)
    ]


async def test_every_answer_is_the_upstreams_own_results_and_errors_alike() -> None:
    with trio.fail_after(LIMIT):
        async with connect_stdio(list(upstream_command())) as direct:
            expected = await answers(direct)
            direct_init = (direct.server_info, direct.instructions, direct.server_capabilities)
        async with connect_stdio(gateway_command("--log-level", "warning"), cwd=REPO) as via:
            got = await answers(via)
            via_init = (via.server_info, via.instructions, via.server_capabilities)
    assert via_init == direct_init  # serverInfo, instructions, capabilities: the upstream's
    assert via_init[0]["name"] == "sdk-upstream"
    for (method, _), want, have in zip(SAME_ANSWERS, expected, got, strict=True):
        assert have == want, method
    assert any("error" in a for a in got)  # errors passed through too


async def test_the_official_client_sees_the_upstream_through_the_gateway(tmp_path: Path) -> None:
    with trio.fail_after(LIMIT):
        async with Client(params(marks=tmp_path), mode="legacy") as client:
            assert client.server_info is not None
            assert client.server_info.name == "sdk-upstream"
            assert client.instructions == "An SDK server behind the gateway."
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert tools["echo"].input_schema["required"] == ["text"]
            result = await client.call_tool("echo", {"text": "through"})
            assert isinstance(result.content[0], types.TextContent)
            assert result.content[0].text == "through"
            motd = await client.read_resource("test://motd")
            assert isinstance(motd.contents[0], types.TextResourceContents)
            assert motd.contents[0].text == "Welcome."
            prompt = await client.get_prompt("review", {"code": "x", "language": "python"})
            assert "Please review this python" in str(prompt.messages[0].content)


async def test_meta_and_progress_pass_through_with_the_clients_token() -> None:
    progress: list[dict[str, Any]] = []
    logs: list[dict[str, Any]] = []

    def seen(method: str, params: Any) -> None:
        if method == "notifications/message":
            logs.append(dict(params))

    with trio.fail_after(LIMIT):
        async with connect_stdio(
            gateway_command("--log-level", "warning"), cwd=REPO, on_notification=seen
        ) as via:
            meta = {"io.example/trace": "t-1", "progressToken": "p-9"}
            got = await via.request("tools/call", {"name": "meta", "arguments": {}, "_meta": meta})
            assert json.loads(text(got)) == {"io.example/trace": "t-1", "progress_token": "p-9"}
            done = await via.call_tool("slow", {"seconds": 0}, on_progress=progress.append)
            assert text(done) == "done"
            await poll(lambda: logs, "the upstream's log message")
    (report,) = progress
    assert (report["progress"], report["total"], report["message"]) == (1, 3, "started")
    assert logs[0]["data"] == "slow is running"
    assert logs[0]["level"] == "info"


# the SDK warns that 2026-07-28 has no ping; this client speaks the session era, which has
@pytest.mark.filterwarnings("ignore:ping is removed as of 2026-07-28")
async def test_sampling_roots_and_pings_from_the_upstream_reach_the_client() -> None:
    asked: list[str] = []

    async def on_sampling(
        ctx: Any, p: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        asked.append("sampling")
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="sampled!"), model="m"
        )

    async def on_roots(ctx: Any) -> types.ListRootsResult:
        asked.append("roots")
        return types.ListRootsResult(roots=[types.Root(uri="file:///work", name="work")])

    with trio.fail_after(LIMIT):
        async with Client(
            params(),
            mode="legacy",
            sampling_callback=on_sampling,
            list_roots_callback=on_roots,
        ) as client:
            assert text_of(await client.call_tool("sample")) == "sampled!"
            assert text_of(await client.call_tool("roots")) == "file:///work"
            assert text_of(await client.call_tool("ping_client")) == "pong"
            await client.send_ping()  # and the client's ping reaches the upstream
    assert asked == ["sampling", "roots"]


def text_of(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def test_a_clients_error_answer_goes_back_to_the_upstream() -> None:
    def refuse(request: Any) -> Any:
        from erlmcp_py.client import ClientRequestError

        raise ClientRequestError(-32600, "no model here")

    with trio.fail_after(LIMIT):
        async with connect_stdio(
            gateway_command("--log-level", "warning"),
            cwd=REPO,
            handler=refuse,
            capabilities=EVERYTHING,
        ) as via:
            answer = await via.request_raw("tools/call", {"name": "sample", "arguments": {}})
    assert isinstance(answer, ErrorResponse)
    assert answer.message == "no model here"  # the SDK tool raised the client's error


async def test_subscriptions_and_list_changes_reach_the_client(tmp_path: Path) -> None:
    notes: list[tuple[str, dict[str, Any]]] = []
    with trio.fail_after(LIMIT):
        async with connect_stdio(
            gateway_command("--log-level", "warning"),
            cwd=REPO,
            env=environment(tmp_path),
            on_notification=lambda m, p: notes.append((m, dict(p))),
        ) as via:
            await via.subscribe("test://motd")
            assert recorded(tmp_path, "subscribed.jsonl") == ["test://motd"]
            assert text(await via.call_tool("changes")) == "announced"
            await poll(lambda: len(notes) >= 4, "four notifications")
    assert notes == [
        ("notifications/tools/list_changed", {}),
        ("notifications/resources/list_changed", {}),
        ("notifications/prompts/list_changed", {}),
        ("notifications/resources/updated", {"uri": "test://motd"}),
    ]


async def test_a_call_the_client_cancels_is_cancelled_upstream(tmp_path: Path) -> None:
    with trio.fail_after(LIMIT):
        async with connect_stdio(
            gateway_command("--log-level", "warning"), cwd=REPO, env=environment(tmp_path)
        ) as via:
            with trio.move_on_after(1.0):
                await via.call_tool("slow", {"seconds": 30})
            # the upstream's tool was cancelled while the gateway and the upstream run on
            await poll(lambda: (tmp_path / "cancelled-slow").exists(), "the upstream's cancel")
            assert text(await via.call_tool("echo", {"text": "still here"})) == "still here"


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
async def test_the_version_the_upstream_negotiates_is_the_clients(version: str) -> None:
    with trio.fail_after(LIMIT):
        async with connect_stdio(
            gateway_command("--log-level", "warning"), cwd=REPO, protocol_version=version
        ) as via:
            assert via.protocol_version == version
            assert text(await via.call_tool("echo", {"text": version})) == version


async def test_a_2026_07_28_request_is_refused_naming_the_session_versions() -> None:
    with trio.fail_after(LIMIT):
        async with connect_stdio(
            gateway_command("--log-level", "warning"),
            cwd=REPO,
            protocol_version="2026-07-28",
            handshake=False,
        ) as stateless:
            for method in ("server/discover", "tools/list", "tools/call"):
                params = (
                    {"name": "echo", "arguments": {"text": "x"}} if method == "tools/call" else {}
                )
                with pytest.raises(ClientRequestError) as refused:
                    await stateless.request(method, params)
                assert refused.value.code == -32022, method
                assert refused.value.data == {"supported": ["2025-11-25", "2025-06-18"]}
