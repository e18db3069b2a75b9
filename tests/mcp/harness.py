"""An in-process client for one ServerSession: frames in, frames out, on trio's clock."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import pydantic_core
import trio

from erlmcp_py.actors.api import RuntimeConfig
from erlmcp_py.core.urlpolicy import UrlPolicy
from erlmcp_py.mcp.server import Server
from erlmcp_py.mcp.session import ServerSession, open_session


class Wire:
    """The client end: send frames into the session, wait for frames it wrote."""

    def __init__(self) -> None:
        self.out: list[dict[str, Any]] = []
        self.changed = trio.Event()
        self.session: ServerSession
        self.ids = itertools.count(1)
        self.seen = 0

    async def write(self, frame: bytes) -> None:
        assert b"\n" not in frame
        self.out.append(pydantic_core.from_json(frame))
        self.changed.set()
        self.changed = trio.Event()

    async def feed(self, message: Mapping[str, Any] | bytes) -> None:
        frame = message if isinstance(message, bytes) else pydantic_core.to_json(dict(message))
        await self.session.feed(frame)

    async def wait(self, predicate: Any) -> dict[str, Any]:
        """The first frame (from the start) matching ``predicate`` (fails after an hour of
        virtual time: a test waiting for a frame that never comes fails instead of hanging)."""
        with trio.fail_after(3600):
            while True:
                for frame in self.out:
                    if predicate(frame):
                        return frame
                await self.changed.wait()

    async def response(self, id: Any) -> dict[str, Any]:
        return await self.wait(lambda f: f.get("id") == id and "method" not in f)

    async def server_request(self, n: int = 0) -> dict[str, Any]:
        """The n-th (0-based) request the server sent."""
        with trio.fail_after(3600):
            while True:
                found = [f for f in self.out if "method" in f and "id" in f]
                if len(found) > n:
                    return found[n]
                await self.changed.wait()

    def notifications(self, method: str) -> list[dict[str, Any]]:
        return [
            f.get("params", {}) for f in self.out if f.get("method") == method and "id" not in f
        ]

    async def request(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        rid = next(self.ids)
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = dict(params)
        await self.feed(msg)
        return await self.response(rid)

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = dict(params)
        await self.feed(msg)

    async def initialize(
        self, capabilities: Mapping[str, Any] | None = None, version: str = "2025-11-25"
    ) -> dict[str, Any]:
        caps = {"elicitation": {}} if capabilities is None else dict(capabilities)
        response = await self.request(
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": caps,
                "clientInfo": {"name": "t", "version": "1"},
            },
        )
        await self.notify("notifications/initialized")
        return response

    async def answer(self, id: Any, result: Mapping[str, Any]) -> None:
        await self.feed({"jsonrpc": "2.0", "id": id, "result": dict(result)})

    def start_call(
        self, nursery: trio.Nursery, name: str, arguments: Mapping[str, Any] | None = None
    ) -> int:
        rid = next(self.ids)
        msg = {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "tools/call",
            "params": {"name": name, "arguments": dict(arguments or {})},
        }
        nursery.start_soon(self.feed, msg)
        return rid

    async def call(self, name: str, arguments: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return await self.request("tools/call", {"name": name, "arguments": dict(arguments or {})})


@asynccontextmanager
async def connect(server: Server, config: Mapping[str, Any] | None = None) -> AsyncIterator[Wire]:
    wire = Wire()
    if config is not None:
        merged = {**server.runtime_config.model_dump(), **config}
        server.runtime_config = RuntimeConfig.model_validate(merged)
        server.url_policy = UrlPolicy(allow_http_loopback_dev=server.runtime_config.url_dev)
    async with (
        server.running() as runtime,
        open_session(server, runtime, wire.write, peer_id="test") as session,
    ):
        wire.session = session
        yield wire
