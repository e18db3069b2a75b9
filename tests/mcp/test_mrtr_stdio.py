"""2026-07-28 end to end over a real stdio subprocess: raw frames, and the official SDK client.

The server is ``tests/mcp/mrtr_stdio_server.py`` (a tool asking two questions with
``await ctx.elicit(...)``; a prompt asking the user, the client's LLM and its roots at once).
``mcp==2.3.0``'s ``Client`` speaks 2026-07-28 and drives MRTR itself (``InputRequiredResult`` →
its callbacks → retry with ``inputResponses``, for ``call_tool`` and ``get_prompt``), so it is
the peer here, pinned to 2026-07-28, in ``auto`` mode (``server/discover`` probe), and in
``legacy`` mode (a 2025 session: server→client requests).
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types
import pytest
import trio

ROOT = Path(__file__).resolve().parents[2]
SERVER = [sys.executable, "-m", "tests.mcp.mrtr_stdio_server"]
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
}


class Raw:
    """Newline-delimited JSON-RPC over a subprocess's stdin/stdout."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self.buffer = b""
        self.ids = itertools.count(1)

    async def request(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        rid = next(self.ids)
        frame = {"jsonrpc": "2.0", "id": rid, "method": method, "params": dict(params)}
        assert self.process.stdin is not None
        await self.process.stdin.send_all(json.dumps(frame).encode() + b"\n")
        with trio.fail_after(20):
            while True:
                line = await self._line()
                message = json.loads(line)
                if message.get("id") == rid:
                    return dict(message)

    async def _line(self) -> bytes:
        assert self.process.stdout is not None
        while b"\n" not in self.buffer:
            chunk = await self.process.stdout.receive_some(65536)
            assert chunk, "server closed stdout"
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    async def call(self, state: str | None = None, responses: Any = None) -> dict[str, Any]:
        params: dict[str, Any] = {"name": "signup", "arguments": {"plan": "pro"}, "_meta": META}
        if state is not None:
            params["requestState"] = state
            params["inputResponses"] = responses
        return await self.request("tools/call", params)


@asynccontextmanager
async def server_process(**env: str) -> AsyncIterator[Raw]:
    process = await trio.lowlevel.open_process(
        SERVER,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
        env={**os.environ, **env},
    )
    try:
        yield Raw(process)
        assert process.stdin is not None
        await process.stdin.aclose()  # EOF: the server ends every suspended call and exits
        with trio.fail_after(10):
            assert await process.wait() == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def only_request(result: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    assert result["resultType"] == "input_required"
    ((key, request),) = result["inputRequests"].items()
    return key, request["params"]


async def test_raw_frames_two_rounds_and_refusals_over_stdio() -> None:
    async with server_process() as raw:
        found = (await raw.request("server/discover", {"_meta": META}))["result"]
        assert found["supportedVersions"][0] == "2026-07-28"

        first = (await raw.call())["result"]
        key, params = only_request(first)
        assert params["mode"] == "form"
        assert params["message"] == "Who are you?"

        token = first["requestState"]
        raw_bytes = bytearray(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        raw_bytes[-1] ^= 0x20
        forged = base64.urlsafe_b64encode(bytes(raw_bytes)).rstrip(b"=").decode()
        answer = {key: {"action": "accept", "content": {"name": "Ada", "age": 36}}}
        error = (await raw.call(forged, answer))["error"]
        assert error["code"] == -32602
        assert error["data"] == {"reason": "invalid"}

        second = (await raw.call(token, answer))["result"]
        key2, params2 = only_request(second)
        assert params2["message"] == "Create a pro account for Ada?"
        final = (
            await raw.call(
                second["requestState"], {key2: {"action": "accept", "content": {"confirm": True}}}
            )
        )["result"]
        assert final["resultType"] == "complete"
        assert final["content"][0]["text"] == "pro: Ada (36) confirmed=True"

        # A suspended call left behind: EOF must still end the server promptly (checked on exit).
        only_request((await raw.call())["result"])


async def test_deadline_between_rounds_over_stdio() -> None:
    async with server_process(MRTR_FORM_DEADLINE="0.3") as raw:
        first = (await raw.call())["result"]
        key, _ = only_request(first)
        await trio.sleep(0.6)  # a real process: real time; the runtime's deadline passes
        late = (
            await raw.call(
                first["requestState"],
                {key: {"action": "accept", "content": {"name": "A", "age": 1}}},
            )
        )["result"]
        assert late["resultType"] == "complete"
        assert late["content"][0]["text"] == "pro: no account (TimedOut)"


# -- the official SDK client as the peer -----------------------------------------------------------


SCENARIOS: list[tuple[dict[str, Any], str]] = [
    (
        {"Who": {"name": "Ada", "age": 36}, "Create": {"confirm": True}},
        "pro: Ada (36) confirmed=True",
    ),
    ({"Who": {"name": "Ada", "age": 36}, "Create": "decline"}, "pro: no account (Declined)"),
    ({"Who": "cancel"}, "pro: no account (Cancelled)"),
]


@pytest.mark.parametrize("mode", ["2026-07-28", "auto"])
async def test_official_sdk_client_drives_imperative_elicitation(mode: str) -> None:
    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters

    asked: list[str] = []
    answers: dict[str, Any] = {}

    async def on_elicit(context: Any, params: Any) -> Any:
        asked.append(params.message)
        answer = answers[params.message.split()[0]]
        if isinstance(answer, str):
            return mcp_types.ElicitResult(action=answer)
        return mcp_types.ElicitResult(action="accept", content=answer)

    params = StdioServerParameters(command=SERVER[0], args=SERVER[1:], cwd=str(ROOT))
    with trio.fail_after(60):
        async with Client(params, mode=mode, elicitation_callback=on_elicit) as client:  # type: ignore[arg-type]
            for scenario, expected in SCENARIOS:
                answers.clear()
                answers.update(scenario)
                asked.clear()
                result = await client.call_tool("signup", {"plan": "pro"})
                assert not result.is_error
                assert result.content[0].text == expected  # type: ignore[union-attr]
                assert asked[0] == "Who are you?"
                assert len(asked) == len(scenario)


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
async def test_official_sdk_client_gets_a_prompt_that_asks_three_things(mode: str) -> None:
    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters

    asked: list[str] = []

    async def on_elicit(context: Any, params: Any) -> Any:
        asked.append("elicitation")
        return mcp_types.ElicitResult(action="accept", content={"name": "Ada", "age": 36})

    async def on_sample(context: Any, params: Any) -> Any:
        asked.append("sampling")
        text = mcp_types.TextContent(type="text", text="Keep TTLs short")
        return mcp_types.CreateMessageResult(role="assistant", content=text, model="test-llm")

    async def on_roots(context: Any) -> Any:
        asked.append("roots")
        return mcp_types.ListRootsResult(roots=[mcp_types.Root(uri="file:///srv", name="srv")])

    params = StdioServerParameters(command=SERVER[0], args=SERVER[1:], cwd=str(ROOT))
    with trio.fail_after(60):
        async with Client(  # type: ignore[arg-type]
            params,
            mode=mode,
            elicitation_callback=on_elicit,
            sampling_callback=on_sample,
            list_roots_callback=on_roots,
        ) as client:
            result = await client.get_prompt("briefing", {"topic": "cache"})
    text = result.messages[0].content.text  # type: ignore[union-attr]
    assert text == "For Ada: Keep TTLs short (roots: file:///srv)"
    assert sorted(asked) == ["elicitation", "roots", "sampling"]
