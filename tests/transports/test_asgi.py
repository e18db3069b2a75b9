"""``McpApp``: the Streamable HTTP endpoint served by another ASGI server on trio (hypercorn's
trio worker), alone or mounted beside other routes of a Starlette application; the official
``mcp`` client drives it on 127.0.0.1 in both protocol eras."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from mcp import types
from mcp.client.client import Client
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from erlmcp_py import Accepted, Context, McpApp, Server
from erlmcp_py.transports.http import HttpConfig

TIMEOUT = 30.0


class Person(BaseModel):
    name: str


def build() -> Server:
    server = Server("asgi-test", "1.0.0")

    @server.tool()
    async def greet(ctx: Context) -> str:
        who = await ctx.elicit("Who are you?", Person)
        return f"hello {who.content.name}" if isinstance(who, Accepted) else "nobody"

    return server


@asynccontextmanager
async def hypercorn(app: Callable[..., Awaitable[None]]) -> AsyncIterator[str]:
    """``app`` under hypercorn's trio worker on a free port of 127.0.0.1; its base URL."""
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    config.errorlog = None
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        (base,) = await nursery.start(
            lambda task_status: serve(
                app, config, shutdown_trigger=stop.wait, task_status=task_status
            )
        )
        try:
            yield base
        finally:
            stop.set()


async def answer_ada(_ctx: Any, _params: Any) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"name": "Ada"})


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_official_client_elicits_through_hypercorn(mode: str) -> None:
    app = McpApp(build())
    with trio.fail_after(TIMEOUT):
        async with hypercorn(app) as base:
            async with Client(f"{base}/mcp", mode=mode, elicitation_callback=answer_ada) as sdk:
                result = await sdk.call_tool("greet", {})
            assert result.content[0].text == "hello Ada"
    assert app.transport is None  # the lifespan's shutdown ended it


async def test_mounted_beside_other_routes_under_the_frameworks_lifespan() -> None:
    mcp = McpApp(build(), HttpConfig(path="/tools/mcp"))

    async def health(_request: Request) -> PlainTextResponse:
        return PlainTextResponse("fine")

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with mcp.running():  # a Mount does not pass the lifespan on
            yield

    app = Starlette(routes=[Route("/health", health), Mount("/tools", app=mcp)], lifespan=lifespan)
    with trio.fail_after(TIMEOUT):
        async with hypercorn(app) as base:
            async with httpx2.AsyncClient() as http:
                assert (await http.get(f"{base}/health")).text == "fine"
            async with Client(
                f"{base}/tools/mcp", mode="legacy", elicitation_callback=answer_ada
            ) as sdk:
                result = await sdk.call_tool("greet", {})
            assert result.content[0].text == "hello Ada"


async def test_a_request_before_the_lifespan_started_is_answered_503() -> None:
    app = McpApp(build())
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app({"type": "http", "method": "POST", "path": "/mcp", "headers": []}, receive, send)
    assert sent[0]["status"] == 503
    assert b"not running" in sent[1]["body"]
