"""The session-era tool task (``_run_tool``: bind, the Context, ``call_tool_fn``) against
``bind`` + ``call_tool_fn`` called directly, for every way a tool can end — the same response
(result or error) and the same log events, for sync and async tools, awaitable objects, bad
arguments, raising tools and unencodable results."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest
import structlog.testing
import trio
import trio.testing
from pydantic import BaseModel

from erlmcp_py.actors.api import RuntimeConfig
from erlmcp_py.mcp.errors import ToolError, UrlElicitationRequired
from erlmcp_py.mcp.jsonrpc import JsonRpcError, invalid_params
from erlmcp_py.mcp.server import Server
from erlmcp_py.mcp.tools import ToolArgumentsError, ToolSpec, call_tool_fn, text_result
from erlmcp_py.testing import open_memory_client


class Point(BaseModel):
    x: int
    y: int = 0


class Later:
    """An awaitable object that is not a coroutine."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __await__(self) -> Generator[Any, None, Any]:
        yield from ()
        return self.value


def build() -> Server:
    server = Server("tools-pin", "1.0.0", runtime_config=RuntimeConfig.model_validate({}))
    tool = server.tool

    @tool()
    async def text(a: int) -> str:
        return f"a={a}"

    @tool()
    async def nothing() -> None:
        return None

    @tool()
    async def whole() -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "as is"}], "isError": False}

    @tool()
    async def blocks() -> list[dict[str, Any]]:
        return [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]

    @tool()
    async def model() -> Point:
        return Point(x=1)

    @tool()
    async def number() -> int:
        return 42

    @tool()
    async def mapping() -> dict[str, Any]:
        return {"k": [1, 2]}

    @tool()
    async def unencodable() -> object:
        return object()

    @tool()
    async def raises() -> str:
        raise ValueError("bad value")

    @tool()
    async def raises_empty() -> str:
        raise KeyError

    @tool()
    async def tool_error() -> str:
        raise ToolError("it broke")

    @tool()
    async def arguments_error() -> str:
        raise ToolArgumentsError("raised by the tool itself")

    @tool()
    def sync_text(a: int = 2) -> str:
        return f"sync {a}"

    @tool()
    def sync_raises() -> str:
        raise RuntimeError("sync broke")

    @tool()
    def awaitable() -> Any:
        return Later("later")

    @tool()
    async def rpc_error() -> str:
        raise invalid_params("no such thing", {"why": "test"})

    @tool()
    async def url_required() -> str:
        raise UrlElicitationRequired(
            [{"url": "https://example.com/x", "message": "go", "elicitationId": "e1"}]
        )

    return server


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("text", {"a": 1}),
    ("text", {"a": "not a number"}),
    ("text", {}),
    ("nothing", {}),
    ("whole", {}),
    ("blocks", {}),
    ("model", {}),
    ("number", {}),
    ("mapping", {}),
    ("unencodable", {}),
    ("raises", {}),
    ("raises_empty", {}),
    ("tool_error", {}),
    ("arguments_error", {}),
    ("sync_text", {}),
    ("sync_text", {"a": 5}),
    ("sync_raises", {}),
    ("awaitable", {}),
    ("rpc_error", {}),
    ("url_required", {}),
]

_TOOL_EVENTS = ("tool_error", "tool_result_unencodable")


def _events(logs: list[dict[str, Any]]) -> list[tuple[str, str, Any, Any]]:
    return [
        (e["log_level"], e["event"], e.get("tool"), e.get("error"))
        for e in logs
        if e["event"] in _TOOL_EVENTS
    ]


async def reference(spec: ToolSpec, arguments: dict[str, Any], rid: int) -> dict[str, Any]:
    """The response the tool task wrote before: ``_invoke`` + ``call_tool_fn``."""
    log = structlog.get_logger("erlmcp.session")
    try:
        kwargs = spec.bind(arguments)
    except ToolArgumentsError as exc:
        return {"jsonrpc": "2.0", "id": rid, "result": text_result(str(exc), is_error=True)}
    try:
        result = await call_tool_fn(spec, kwargs, log)
    except UrlElicitationRequired as exc:
        return exc.to_jsonrpc().with_id(rid).to_object()
    except JsonRpcError as exc:
        return exc.with_id(rid).to_object()
    return {"jsonrpc": "2.0", "id": rid, "result": result}


@pytest.mark.parametrize(("name", "arguments"), CALLS)
async def test_tool_task_answers_as_call_tool_fn(
    name: str, arguments: dict[str, Any], autojump_clock: trio.testing.MockClock
) -> None:
    server = build()
    async with open_memory_client(server) as client:
        with structlog.testing.capture_logs() as got_logs:
            got = await client.request_raw(
                "tools/call", {"name": name, "arguments": arguments}, id=7
            )
        with structlog.testing.capture_logs() as want_logs:
            want = await reference(server.tools[name], arguments, 7)
    assert got == want
    assert _events(got_logs) == _events(want_logs)


async def test_every_ending_is_covered(autojump_clock: trio.testing.MockClock) -> None:
    """The cases above reach every branch: results, isError results of both kinds, both
    JSON-RPC errors, and both log events."""
    server = build()
    seen: set[str] = set()
    with structlog.testing.capture_logs() as logs:
        for name, arguments in CALLS:
            response = await reference(server.tools[name], arguments, 1)
            if "error" in response:
                seen.add(f"error {response['error']['code']}")
            else:
                seen.add("isError" if response["result"].get("isError") else "result")
    seen.update(e[1] for e in _events(logs))
    assert seen == {"result", "isError", "error -32602", "error -32042", *_TOOL_EVENTS}
