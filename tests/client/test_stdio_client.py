"""The scripted stdio client on 2026-07-28, against the real ``erlmcp-py serve`` subprocess.

The server is ``tests/mcp/asking_server.py`` (served with ``--server``): ``greet`` asks once,
``signup`` twice, ``pester`` without end; and the official SDK's stateless server (``mcp``
2.3.0, a ``Resolve`` tool). Subprocess tests are bounded by ``fail_after``.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from erlmcp_py.client import (
    MAX_ROUNDS,
    ClientRequestError,
    InputRoundsExhausted,
    ServerRequest,
    StdioClient,
    open_stdio_client,
)
from erlmcp_py.mcp.meta import CLIENT_CAPABILITIES, CLIENT_INFO, PROTOCOL_VERSION

STATELESS = "2026-07-28"
SERVE = [
    *(sys.executable, "-m", "erlmcp_py.app", "serve", "--dev", "--log-level", "warning"),
    *("--rate", "100000", "--server", "tests.mcp.asking_server:build"),
]
LIMIT = 20.0  # seconds any subprocess test may take
ADA = {"name": "Ada", "age": 36}

Handler = Callable[[ServerRequest], Mapping[str, Any] | None]


@asynccontextmanager
async def serve(handler: Handler | None) -> AsyncIterator[StdioClient]:
    with trio.fail_after(LIMIT):
        async with open_stdio_client(SERVE, handler=handler, protocol_version=STATELESS) as client:
            yield client


def text(result: Mapping[str, Any]) -> str:
    return str(result["content"][0]["text"])


def answers(*contents: Mapping[str, Any] | None) -> Handler:
    """A handler accepting with each of ``contents`` in turn (``None``: declines)."""
    left = list(contents)

    def answer(request: ServerRequest) -> Mapping[str, Any]:
        assert request.method == "elicitation/create"
        content = left.pop(0)
        return (
            {"action": "decline"} if content is None else {"action": "accept", "content": content}
        )

    return answer


async def test_a_one_question_call_is_answered_and_retried_to_its_result() -> None:
    async with serve(answers(ADA)) as client:
        assert text(await client.call_tool("greet")) == "hello Ada (36)"
        (asked,) = client.server_requests  # the input request, under its key
        assert asked.params["message"] == "Who are you?"
    assert client.process.returncode == 0


async def test_every_round_carries_the_memory_clients_meta_and_the_exact_state() -> None:
    sent: list[dict[str, Any]] = []
    async with serve(answers(ADA)) as client:
        send = client.send

        async def recording(message: Mapping[str, Any]) -> None:
            sent.append(dict(message))
            await send(message)

        client.send = recording  # type: ignore[method-assign]
        result = await client.call_tool("greet")
    first, retry = (m["params"] for m in sent)
    for params in (first, retry):
        assert params["_meta"] == {
            PROTOCOL_VERSION: STATELESS,
            CLIENT_CAPABILITIES: {"elicitation": {"form": {}}},
            CLIENT_INFO: {"name": "erlmcp-py-scripted-client", "version": "0.1.0"},
        }
    assert "requestState" not in first
    assert isinstance(retry["requestState"], str)
    (key,) = retry["inputResponses"]
    assert retry["inputResponses"][key] == {"action": "accept", "content": ADA}
    assert text(result) == "hello Ada (36)"


async def test_a_multi_round_call_with_a_reprompt() -> None:
    too_old = {"name": "Ada", "age": 200}
    async with serve(answers(too_old, ADA, {"confirm": True})) as client:
        result = await client.call_tool("signup", {"plan": "pro"})
        assert text(result) == "pro: Ada (36) confirmed=True"
        messages = [r.params["message"] for r in client.server_requests]
    assert len(messages) == 3
    assert messages[0] == "Who are you?"
    assert "age" in messages[1]  # the re-prompt names the error
    assert messages[1] != messages[0]
    assert messages[2] == "Create a pro account for Ada?"


async def test_a_declined_question_ends_the_call_with_the_tools_answer() -> None:
    async with serve(answers(None, None)) as client:
        assert text(await client.call_tool("signup")) == "free: no account (Declined)"
        assert text(await client.call_tool("greet", id="mine")) == "no answer (Declined)"


async def test_a_server_error_mid_loop_reaches_the_caller_and_the_server_keeps_serving() -> None:
    def unshaped(request: ServerRequest) -> Mapping[str, Any]:
        return {"action": "maybe"}  # no answer to an elicitation: the retry is refused

    async with serve(unshaped) as client:
        with pytest.raises(ClientRequestError) as refused:
            await client.call_tool("greet")
        assert refused.value.code == -32602
        assert "inputResponses" in refused.value.message
        client.handler = answers(ADA)
        assert text(await client.call_tool("greet")) == "hello Ada (36)"


async def test_a_server_that_never_completes_ends_the_call_after_max_rounds() -> None:
    async with serve(lambda request: {"action": "accept", "content": {"confirm": True}}) as client:
        with pytest.raises(InputRoundsExhausted) as exhausted:
            await client.call_tool("pester", max_rounds=3)
        assert exhausted.value.rounds == 3
        assert len(client.server_requests) == 3  # every round asked, and was answered
        with pytest.raises(RuntimeError, match=f"after {MAX_ROUNDS} rounds"):
            await client.call_tool("pester")


async def test_an_input_request_the_handler_leaves_unanswered_ends_the_call() -> None:
    async with serve(lambda request: None) as client:
        with pytest.raises(RuntimeError, match="left unanswered"):
            await client.call_tool("greet")


async def test_the_stateless_era_has_no_initialize_and_meta_on_plain_requests() -> None:
    async with serve(None) as client:
        assert client.stateless
        with pytest.raises(RuntimeError, match="no initialize"):
            await client.initialize()
        tools = (await client.request("tools/list"))["tools"]
        assert {t["name"] for t in tools} == {"greet", "signup", "pester"}
        discovered = await client.request("server/discover")
        assert STATELESS in discovered["supportedVersions"]


SDK_SERVER = """
from typing import Annotated

from mcp.server.mcpserver import Elicit, MCPServer, Resolve
from pydantic import BaseModel


class Person(BaseModel):
    name: str
    age: int


def who() -> Elicit[Person]:
    return Elicit("Who are you?", Person)


server = MCPServer("sdk")


@server.tool()
async def greet(person: Annotated[Person, Resolve(who)]) -> str:
    return f"hello {person.name} ({person.age})"


server.run()
"""


async def test_the_input_rounds_of_the_official_sdks_stateless_server(tmp_path: Path) -> None:
    script = tmp_path / "sdk_server.py"
    script.write_text(SDK_SERVER)
    with trio.fail_after(LIMIT):
        async with open_stdio_client(
            [sys.executable, str(script)], handler=answers(ADA), protocol_version=STATELESS
        ) as client:
            assert text(await client.call_tool("greet")) == "hello Ada (36)"
            (asked,) = client.server_requests
            assert asked.params["message"] == "Who are you?"
