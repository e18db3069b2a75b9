"""Upstreams nobody here wrote, each a subprocess behind ``erlmcp-py gateway``: a fastmcp 4.x
server whose tool asks with ``ctx.elicit``, and a TypeScript SDK 1.32 server whose tool asks
with ``server.elicitInput``, each over stdio and over Streamable HTTP (``.ci/upstreams.sh``
installs them; ``tests/components.py`` finds them).

The official ``mcp`` client (legacy mode) and ``erlmcp-py connect`` drive them through the
gateway: the question is asked with the server's own schema accepted, an invalid answer is
asked again, only the valid answer reaches the server's tool, and a question nobody answers
is answered ``cancel`` to the server at the deadline. What the tool received is what it
recorded (``answers.jsonl``).
"""

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

from erlmcp_py.core.schema import RequestedSchema
from tests.components import require_upstreams
from tests.gateway.support import (
    LIMIT,
    REPO,
    environment,
    free_port,
    recorded,
    wait_listening,
)

HERE = Path(__file__).parent
PERSON = {"name": "Ada", "age": 36}
KINDS = ("fastmcp-stdio", "fastmcp-http", "ts-stdio", "ts-http")
NAMES = {"fastmcp": "fastmcp-upstream", "ts": "ts-upstream"}


@pytest.fixture(scope="module")
def installed() -> dict[str, str]:
    """Where fastmcp's interpreter, Node 22 and the TypeScript SDK are."""
    return require_upstreams()


def upstream_env(marks: Path, installed: dict[str, str]) -> dict[str, str]:
    """The environment of the gateway and its upstream: the marks directory, the SDK's
    modules for Node."""
    return dict(environment(marks), NODE_PATH=installed["sdk"])


def upstream_argv(sdk: str, installed: dict[str, str], *transport: str) -> list[str]:
    if sdk == "fastmcp":
        return [installed["python"], str(HERE / "fastmcp_upstream.py"), *transport]
    return [installed["node"], str(HERE / "ts_upstream.cjs"), *transport]


class Foreign:
    """One upstream kind: its server's name and the gateway options that reach it."""

    def __init__(self, kind: str, tail: list[str]) -> None:
        self.sdk = kind.split("-")[0]
        self.server_name = NAMES[self.sdk]
        self.tail = tail


@pytest.fixture(params=KINDS)
def foreign(
    request: pytest.FixtureRequest, installed: dict[str, str], tmp_path: Path
) -> Iterator[Foreign]:
    """The upstream: a command the gateway starts (stdio), or a server already listening on
    127.0.0.1 that the gateway reaches with ``--upstream URL``."""
    kind: str = request.param
    sdk, transport = kind.split("-")
    if transport == "stdio":
        yield Foreign(kind, ["--", *upstream_argv(sdk, installed, "stdio")])
        return
    port = free_port()
    process = subprocess.Popen(
        upstream_argv(sdk, installed, "http", str(port)),
        env=upstream_env(tmp_path, installed),
        stdin=subprocess.DEVNULL,
    )
    try:
        wait_listening(port, process)
        yield Foreign(kind, ["--upstream", f"http://127.0.0.1:{port}/mcp"])
    finally:
        process.kill()
        process.wait(10)


def gateway_params(
    foreign: Foreign, marks: Path, installed: dict[str, str], *options: str
) -> StdioServerParameters:
    """``erlmcp-py gateway OPTIONS`` in front of ``foreign``, as the official client starts it."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "erlmcp_py.app", "gateway", "--log-level", "warning", *options, *foreign.tail],
        env=upstream_env(marks, installed),
        cwd=str(REPO),
    )


async def test_the_official_client_is_asked_again_until_only_a_valid_answer_reaches_the_tool(
    foreign: Foreign, installed: dict[str, str], tmp_path: Path
) -> None:
    asked: list[types.ElicitRequestFormParams] = []
    answers = [{"name": "Ada", "age": 200}, PERSON]  # 200: over the server's maximum

    async def on_elicit(_ctx: Any, params: Any) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content=answers.pop(0))

    params = gateway_params(foreign, tmp_path, installed)
    with trio.fail_after(LIMIT):
        async with Client(params, mode="legacy", elicitation_callback=on_elicit) as client:  # type: ignore[arg-type]
            assert client.server_info is not None
            assert client.server_info.name == foreign.server_name
            result = await client.call_tool("ask_person", {})
    assert isinstance(result.content[0], types.TextContent)
    assert result.content[0].text == "accept: Ada (36)"
    first, second = asked
    assert first.message == "Who are you?"
    schema = first.requested_schema
    RequestedSchema(schema, "2025-11-25")  # the server's schema, as the client gets it
    assert schema["required"] == ["name", "age"]
    assert schema["properties"]["age"]["maximum"] == 150
    assert "Who are you?" in second.message
    assert "age" in second.message  # asked again, saying what was wrong
    assert recorded(tmp_path, "answers.jsonl") == [{"action": "accept", "data": PERSON}]


async def test_a_question_nobody_answers_is_answered_cancel_to_the_server_at_its_deadline(
    foreign: Foreign, installed: dict[str, str], tmp_path: Path
) -> None:
    async def never(_ctx: Any, _params: Any) -> types.ElicitResult:
        await anyio.sleep(LIMIT)  # the user never answers
        raise AssertionError("the question should have ended first")

    params = gateway_params(foreign, tmp_path, installed, "--elicitation-timeout", "1")
    with trio.fail_after(LIMIT):
        async with Client(params, mode="legacy", elicitation_callback=never) as client:  # type: ignore[arg-type]
            result = await client.call_tool("ask_person", {})
    assert isinstance(result.content[0], types.TextContent)
    assert result.content[0].text == "cancel"
    assert recorded(tmp_path, "answers.jsonl") == [{"action": "cancel"}]


def test_the_terminal_client_answers_the_servers_question_field_by_field(
    foreign: Foreign, installed: dict[str, str], tmp_path: Path
) -> None:
    env = {k: v for k, v in upstream_env(tmp_path, installed).items() if not k.startswith("LC_")}
    env.update(LANG="C.UTF-8", PYTHONUNBUFFERED="1", TERM="xterm")
    gateway = [sys.executable, "-m", "erlmcp_py.app", "gateway", "--log-level", "warning"]
    child = pexpect.spawn(
        sys.executable,
        ["-m", "erlmcp_py.app", "connect", "--", *gateway, *foreign.tail],
        env=env,
        cwd=str(REPO),
        encoding="utf-8",
        timeout=LIMIT,
        dimensions=(60, 200),
    )
    child.expect_exact(f"Connected to {foreign.server_name}")  # and its version, if it has one
    child.expect_exact("(protocol 2025-11-25, stdio).")
    child.expect_exact("mcp> ")
    child.sendline("call ask_person")
    child.expect_exact("Who are you?")
    child.expect_exact("Name * — Your name")
    child.sendline("Ada")
    child.expect_exact("[whole number; 0 to 150] > ")
    child.sendline("200")  # out of the bounds the server sent: asked again
    child.expect_exact("[whole number; 0 to 150] > ")
    child.sendline("36")
    child.expect_exact("[1] Submit  [2] Reject  [3] Cancel ")
    child.sendline("1")
    child.expect_exact("accept: Ada (36)")
    child.expect_exact("mcp> ")
    child.sendline("quit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert recorded(tmp_path, "answers.jsonl") == [{"action": "accept", "data": PERSON}]


def test_the_upstreams_run_on_their_own_interpreters(installed: dict[str, str]) -> None:
    """fastmcp is 4.x in its own virtualenv; the TypeScript SDK is 1.32 on Node 22."""
    version = subprocess.run(
        [installed["python"], "-c", "import fastmcp; print(fastmcp.__version__)"],
        capture_output=True,
        text=True,
        check=True,
        timeout=LIMIT,
    ).stdout.strip()
    assert version.startswith("4.")
    node = subprocess.run(
        [installed["node"], "--version"], capture_output=True, text=True, check=True
    ).stdout
    assert node.startswith("v22.")
    sdk = Path(installed["sdk"]) / "@modelcontextprotocol" / "sdk" / "package.json"
    assert '"version": "1.32.' in sdk.read_text()
    assert os.path.isfile(HERE / "ts_upstream.cjs")
