"""A ``tools/call`` that lacks required arguments is asked, not failed (``ask_missing_arguments``):
the official SDK's ``MCPServer`` as the upstream (a subprocess over stdio), the gateway in this
process, the client stack as the user. What the upstream's tool received is what it recorded.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import structlog

from erlmcp_py.core.schema import RequestedSchema
from erlmcp_py.gateway import Gateway, Upstream
from tests.gateway.support import (
    LIMIT,
    REPO,
    environment,
    recorded,
    text,
    through_gateway,
    upstream_command,
)
from tests.gateway.test_elicitation import User

ASKING = {"ask_missing_arguments": True}


@pytest.fixture
def marks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the upstream (started by the gateway in this process) writes what it received."""
    monkeypatch.setenv("GATEWAY_TEST_MARKS", str(tmp_path))
    return tmp_path


async def test_a_missing_argument_is_asked_with_its_own_constraints_then_the_call_goes_on(
    marks: Path,
) -> None:
    user = User(
        {"action": "accept", "content": {"nights": 0}},  # below the tool's minimum
        {"action": "accept", "content": {"nights": 3}},
    )
    async with through_gateway(user, **ASKING) as (_, client):
        result = await client.call_tool("book", {"city": "Lisbon"})
    assert text(result) == "booked Lisbon for 3 nights"
    first, second = user.asked
    schema = first.params["requestedSchema"]
    assert schema == {
        "type": "object",
        "properties": {
            "nights": {"maximum": 30, "minimum": 1, "title": "Nights", "type": "integer"}
        },
        "required": ["nights"],
    }
    RequestedSchema(schema, "2025-11-25")
    assert first.params["message"] == "The tool book needs more to run: nights."
    assert "nights" in second.params["message"]  # asked again, saying what was wrong
    assert recorded(marks, "booked.jsonl") == [{"city": "Lisbon", "nights": 3, "breakfast": False}]


async def test_every_missing_argument_is_asked_in_one_form(marks: Path) -> None:
    user = User({"action": "accept", "content": {"city": "Porto", "nights": 2}})
    async with through_gateway(user, **ASKING) as (_, client):
        result = await client.call_tool("book", {"breakfast": True})
    assert text(result) == "booked Porto for 2 nights"
    (asked,) = user.asked
    assert asked.params["requestedSchema"]["required"] == ["city", "nights"]
    assert recorded(marks, "booked.jsonl") == [{"city": "Porto", "nights": 2, "breakfast": True}]


async def test_a_declined_question_is_a_tool_error_and_the_upstream_is_not_called(
    marks: Path,
) -> None:
    user = User({"action": "decline"})
    with structlog.testing.capture_logs() as logs:
        async with through_gateway(user, **ASKING) as (_, client):
            result = await client.call_tool("book", {"city": "Lisbon"})
    assert result["isError"] is True
    assert text(result) == "The tool book was not run: the user declined to give nights."
    assert recorded(marks, "booked.jsonl") == []
    (audit,) = [e for e in logs if e["event"] == "gateway_missing_arguments"]
    assert audit["tool"] == "book"
    assert audit["arguments"] == ["nights"]
    assert audit["outcome"] == "Declined"


async def test_a_question_nobody_answers_ends_at_its_deadline_without_calling_upstream(
    marks: Path,
) -> None:
    user = User()  # never answers
    runtime = {"form_deadline_s": 1.0, "warn_before_s": 0.5}
    async with through_gateway(user, runtime=runtime, **ASKING) as (_, client):
        result = await client.call_tool("book", {"city": "Lisbon"})
    assert result["isError"] is True
    assert text(result) == "The tool book was not run: nobody gave nights in time."
    assert recorded(marks, "booked.jsonl") == []


async def test_an_argument_no_form_can_ask_keeps_the_upstreams_own_error(marks: Path) -> None:
    user = User({"action": "accept", "content": {"label": "home"}})
    async with through_gateway(user, **ASKING) as (_, client):
        result = await client.call_tool("locate", {})
    assert user.asked == []  # "where" is an object: the call went as it was
    assert result["isError"] is True
    assert "where" in text(result)  # the SDK's validation error names it
    assert recorded(marks, "located.jsonl") == []


async def test_without_the_option_a_call_missing_arguments_goes_as_it_is(marks: Path) -> None:
    user = User({"action": "accept", "content": {"nights": 3}})
    async with through_gateway(user) as (_, client):
        result = await client.call_tool("book", {"city": "Lisbon"})
    assert user.asked == []
    assert result["isError"] is True
    assert "nights" in text(result)


async def test_a_client_without_elicitation_gets_the_upstreams_own_error(marks: Path) -> None:
    async with through_gateway(capabilities={}, **ASKING) as (_, client):
        result = await client.call_tool("book", {"city": "Lisbon"})
    assert result["isError"] is True
    assert "nights" in text(result)
    assert recorded(marks, "booked.jsonl") == []


async def test_a_tool_the_upstream_adds_later_has_its_arguments_asked(marks: Path) -> None:
    user = User({"action": "accept", "content": {"colour": "green"}})
    async with through_gateway(user, **ASKING) as (_, client):
        assert text(await client.call_tool("book", {"city": "A", "nights": 1})) == (
            "booked A for 1 nights"
        )  # the tools are read (and kept) before "grown" exists
        assert text(await client.call_tool("grow")) == "grew"
        result = await client.call_tool("grown")
    assert text(result) == "grown green"
    (asked,) = user.asked
    prop = asked.params["requestedSchema"]["properties"]["colour"]
    assert prop["enum"] == ["red", "green"]


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_the_gateway_command_asks_missing_arguments_for_the_official_client(
    tmp_path: Path, mode: str
) -> None:
    """``erlmcp-py gateway --ask-missing-arguments`` over stdio, the official ``mcp`` client in
    either era (on 2026-07-28 the question is an input round of the bridged call)."""
    script = f"""
import anyio, json, os, sys
from mcp import Client, StdioServerParameters, types
from mcp.client.stdio import stdio_client

async def answer(context, params):
    return types.ElicitResult(action="accept", content={{"nights": 4}})

async def main():
    server = StdioServerParameters(
        command=sys.executable, args={_gateway_args()!r}, env=dict(os.environ)
    )
    async with Client(stdio_client(server), mode={mode!r}, elicitation_callback=answer) as client:
        result = await client.call_tool("book", {{"city": "Faro"}})
        print(json.dumps(result.content[0].text))

anyio.run(main)
"""
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=environment(tmp_path),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=LIMIT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == "booked Faro for 4 nights"
    assert recorded(tmp_path, "booked.jsonl") == [{"city": "Faro", "nights": 4, "breakfast": False}]


def _gateway_args() -> list[str]:
    return [
        "-m",
        "erlmcp_py.app",
        "gateway",
        "--ask-missing-arguments",
        "--log-level",
        "warning",
        "--",
        *upstream_command(),
    ]


def test_the_option_is_off_unless_asked_for() -> None:
    assert Gateway(Upstream(command=upstream_command())).ask_missing_arguments is False
