"""Both protocol eras over each wire against real servers: ``erlmcp-py serve`` as a subprocess
(stdio), ``serve_http`` on 127.0.0.1, a server in memory, and the official MCP SDK's server
(``mcp`` 2.3.0) over stdio; cancellation both ways and a server that dies mid-request.

The server is ``tests/mcp/asking_server.py``: ``greet`` asks once, ``signup`` twice. Subprocess
and socket tests are bounded by ``fail_after``.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from erlmcp_py.actors.api import RuntimeConfig
from erlmcp_py.client import (
    ClientSession,
    ConnectionLost,
    ServerExited,
    ServerRequest,
    connect_http,
    connect_in_memory,
    connect_stdio,
    open_client_session,
    open_stdio_wire,
)
from erlmcp_py.mcp.server import Server
from erlmcp_py.transports.http import Listening, serve_http
from tests.mcp.asking_server import build

LIMIT = 20.0  # seconds any subprocess or socket test may take
SESSION, STATELESS = "2025-11-25", "2026-07-28"
ERAS = pytest.mark.parametrize("era", [SESSION, STATELESS])
SERVE = [
    *(sys.executable, "-m", "erlmcp_py.app", "serve", "--dev", "--log-level", "warning"),
    *("--rate", "100000", "--server", "tests.mcp.asking_server:build"),
]
ADA = {"name": "Ada", "age": 36}

Opener = Callable[..., AbstractAsyncContextManager[ClientSession]]


def asking_server() -> Server:
    return build(RuntimeConfig.model_validate({"rate": 100000}))


def answers(*contents: Mapping[str, Any]) -> Callable[[ServerRequest], Mapping[str, Any]]:
    left = list(contents)

    def answer(request: ServerRequest) -> Mapping[str, Any]:
        assert request.method == "elicitation/create"
        return {"action": "accept", "content": left.pop(0)}

    return answer


@asynccontextmanager
async def over_http(**options: Any) -> AsyncIterator[ClientSession]:
    server = asking_server()
    async with server.running(), trio.open_nursery() as nursery:
        listening: Listening = await nursery.start(
            partial(serve_http, server, host="127.0.0.1", port=0)
        )
        async with connect_http(listening.url, **options) as session:
            yield session
        nursery.cancel_scope.cancel()


def over_stdio(**options: Any) -> AbstractAsyncContextManager[ClientSession]:
    return connect_stdio(SERVE, **options)


def in_memory(**options: Any) -> AbstractAsyncContextManager[ClientSession]:
    return connect_in_memory(asking_server(), **options)


WIRES = pytest.mark.parametrize(
    "opener", [over_stdio, over_http, in_memory], ids=["stdio", "http", "memory"]
)


def text(result: Mapping[str, Any]) -> str:
    return str(result["content"][0]["text"])


@WIRES
@ERAS
async def test_a_tool_that_asks_twice_is_answered_in_either_era_over_each_wire(
    opener: Opener, era: str
) -> None:
    confirmed = {"confirm": True}
    with trio.fail_after(LIMIT):
        async with opener(protocol_version=era, handler=answers(ADA, confirmed)) as session:
            assert session.protocol_version == era
            assert session.server_info["name"] == "asking"
            assert "tools" in session.server_capabilities
            tools = {tool["name"] for tool in await session.list_tools()}
            assert tools == {"greet", "signup", "pester"}
            result = await session.call_tool("signup", {"plan": "pro"})
            assert text(result) == "pro: Ada (36) confirmed=True"
            if era == SESSION:
                await session.ping()  # 2026-07-28 has no ping


@WIRES
@ERAS
async def test_concurrent_calls_over_one_session_each_get_their_answer(
    opener: Opener, era: str
) -> None:
    def by_name(request: ServerRequest) -> Mapping[str, Any]:
        return {"action": "accept", "content": {"name": "Ada", "age": 20}}

    with trio.fail_after(LIMIT):
        async with opener(protocol_version=era, handler=by_name) as session:
            results: list[str] = []
            async with trio.open_nursery() as nursery:
                for _ in range(5):
                    nursery.start_soon(lambda: _collect(session, results))
            assert results == ["hello Ada (20)"] * 5


async def _collect(session: ClientSession, results: list[str]) -> None:
    results.append(text(await session.call_tool("greet")))


async def test_a_cancelled_call_withdraws_its_question_over_stdio() -> None:
    asked = trio.Event()
    withdrawn = trio.Event()

    async def human(request: ServerRequest) -> Mapping[str, Any]:
        asked.set()
        try:
            await trio.sleep_forever()
        finally:
            withdrawn.set()  # the server cancelled its elicitation/create
        raise AssertionError("unreachable")

    seen: list[str] = []
    with trio.fail_after(LIMIT):
        async with connect_stdio(
            SERVE, handler=human, on_notification=lambda m, p: seen.append(m)
        ) as session:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(session.call_tool, "greet")
                await asked.wait()
                nursery.cancel_scope.cancel()  # the caller stops waiting
            await withdrawn.wait()
            assert "notifications/cancelled" in seen
            assert [t["name"] for t in await session.list_tools()]  # still serving


async def test_a_server_that_dies_mid_request_fails_the_call_and_nothing_hangs() -> None:
    with trio.fail_after(LIMIT):
        async with open_stdio_wire(SERVE) as wire:

            def kill(request: ServerRequest) -> None:
                wire.process.kill()  # the server dies while the user is being asked

            async with open_client_session(wire, handler=kill) as session:
                await session.initialize()
                with pytest.raises(ServerExited):
                    await session.call_tool("greet")
                with pytest.raises(ConnectionLost):
                    await session.list_tools()


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


@ERAS
async def test_the_official_sdks_server_over_stdio(tmp_path: Path, era: str) -> None:
    pytest.importorskip("mcp")
    script = tmp_path / "sdk_server.py"
    script.write_text(SDK_SERVER)
    asked: list[ServerRequest] = []

    def answer(request: ServerRequest) -> Mapping[str, Any]:
        asked.append(request)
        return {"action": "accept", "content": ADA}

    with trio.fail_after(LIMIT):
        async with connect_stdio(
            [sys.executable, str(script)], protocol_version=era, handler=answer
        ) as session:
            assert session.server_info["name"] == "sdk"
            assert [tool["name"] for tool in await session.list_tools()] == ["greet"]
            assert text(await session.call_tool("greet")) == "hello Ada (36)"
    assert [(r.method, r.params["message"]) for r in asked] == [
        ("elicitation/create", "Who are you?")
    ]
