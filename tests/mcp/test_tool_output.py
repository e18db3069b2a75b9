"""A tool's declared output: ``outputSchema`` from its return annotation, results checked against
it as ``structuredContent``; and the ``ctx`` log shortcuts. In memory, both eras, and with the
official SDK client (which checks ``structuredContent`` against the schema it was given) over
stdio."""

from __future__ import annotations

import dataclasses
import sys
from typing import Annotated, Any

import jsonschema
import pytest
import trio
import trio.testing
from mcp import Client, StdioServerParameters
from pydantic import BaseModel, Field
from typing_extensions import TypedDict  # pydantic reads typing.TypedDict from 3.12 on

from erlmcp_py.actors.api import RuntimeConfig
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.server import Server
from erlmcp_py.testing import open_memory_client

ERAS = pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])


class Expense(BaseModel):
    amount: float = Field(ge=0)
    currency: str = "EUR"


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Totals(TypedDict):
    count: int
    sum: float


def build(config: RuntimeConfig | None = None) -> Server:
    server = Server("output-test", "1.0.0", runtime_config=config)

    @server.tool()
    async def expense(amount: float) -> Expense:
        return Expense(amount=amount)

    @server.tool()
    async def point() -> Point:
        return Point(1, 2)

    @server.tool()
    async def totals() -> Totals:
        return {"count": 2, "sum": 3.5}

    @server.tool()
    async def counts() -> dict[str, int]:
        return {"a": 1}

    @server.tool()
    async def broken() -> Expense:
        return {"amount": "lots"}  # type: ignore[return-value]

    @server.tool()
    async def annotated() -> Annotated[Expense, "docs"]:
        return Expense(amount=1)

    @server.tool()
    async def whole() -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "built by hand"}]}

    @server.tool()
    async def plain() -> str:
        return "just text"

    @server.tool()
    async def chatty(ctx: Context) -> str:
        await ctx.debug("d")
        await ctx.info("i")
        await ctx.warning("w", logger="app")
        await ctx.error({"code": 7})
        return "done"

    return server


def definitions(tools: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {tool["name"]: tool for tool in tools}


@ERAS
async def test_object_shaped_return_types_declare_an_output_schema_their_results_fit(
    version: str, autojump_clock: trio.testing.MockClock
) -> None:
    async with open_memory_client(build(), protocol_version=version) as client:
        tools = definitions(await client.list_tools())
        for undeclared in ("plain", "chatty", "whole"):  # dict[str, Any]: a whole result
            assert "outputSchema" not in tools[undeclared]
        schema = tools["expense"]["outputSchema"]
        assert schema["type"] == "object"
        assert set(schema["properties"]) == {"amount", "currency"}
        for name, expected in {
            "expense": {"amount": 4.5, "currency": "EUR"},
            "point": {"x": 1, "y": 2},
            "totals": {"count": 2, "sum": 3.5},
            "counts": {"a": 1},
            "annotated": {"amount": 1.0, "currency": "EUR"},
        }.items():
            result = await client.call_tool(name, {"amount": 4.5} if name == "expense" else {})
            assert result.get("isError") is not True, result
            assert result["structuredContent"] == expected
            jsonschema.validate(result["structuredContent"], tools[name]["outputSchema"])
            assert result["content"][0]["type"] == "text"  # for clients that read only content


@ERAS
async def test_a_result_that_does_not_fit_the_declared_output_is_a_tool_error(
    version: str, autojump_clock: trio.testing.MockClock
) -> None:
    async with open_memory_client(build(), protocol_version=version) as client:
        result = await client.call_tool("broken")
        assert result["isError"] is True
        assert "structuredContent" not in result
        message = result["content"][0]["text"]
        assert "does not fit its declared output" in message
        assert "amount" in message
        assert "lots" not in message  # the value is never repeated
        built = await client.call_tool("whole")  # a whole result is the tool's own
        assert built["content"][0]["text"] == "built by hand"


async def test_the_log_shortcuts_send_each_level(autojump_clock: trio.testing.MockClock) -> None:
    async with open_memory_client(build()) as client:
        await client.request("logging/setLevel", {"level": "debug"})
        assert (await client.call_tool("chatty"))["content"][0]["text"] == "done"
        sent = [
            params for method, params in client.notifications if method == "notifications/message"
        ]
        assert sent == [
            {"level": "debug", "data": "d"},
            {"level": "info", "data": "i"},
            {"level": "warning", "data": "w", "logger": "app"},
            {"level": "error", "data": {"code": 7}},
        ]


async def test_the_official_client_accepts_the_structured_results() -> None:
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "erlmcp_py.app", "serve", "--server", "tests.mcp.test_tool_output:build"],
    )
    with trio.fail_after(30):
        async with Client(server, mode="legacy") as client:
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert listed["expense"].output_schema is not None
            result = await client.call_tool("expense", {"amount": 2})
            assert result.structured_content == {"amount": 2.0, "currency": "EUR"}
            point = await client.call_tool("point", {})
            assert point.structured_content == {"x": 1, "y": 2}


def test_a_return_type_that_cannot_be_a_schema_fails_at_registration() -> None:
    server = Server("output-test", "1.0.0")
    with pytest.raises(TypeError, match="tool 'bad': return type"):

        @server.tool()
        async def bad() -> dict[str, type]:
            return {}
