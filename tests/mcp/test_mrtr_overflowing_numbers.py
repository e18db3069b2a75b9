"""request_digest at the wire boundary: a 2026-07-28 ``tools/call`` whose params hold values the
JSON decoder produces but strict JSON cannot encode must be answered, not crash the session.

The frame decoder turns a number literal that overflows a double (``1e400``) into ``inf``.
``request_digest`` digests it, so ``ContinuationRegistry.start`` and ``resume`` never raise on
such a request and the client's session stays up.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pydantic_core
import trio
import trio.testing

from erlmcp_py.actors.runtime import open_runtime
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.server import Server
from erlmcp_py.mcp.session import open_session

V = "2026-07-28"
META: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": V,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
}


class _Client:
    def __init__(self) -> None:
        self.out: list[dict[str, Any]] = []
        self.changed = trio.Event()

    async def write(self, frame: bytes) -> None:
        self.out.append(pydantic_core.from_json(frame))
        self.changed.set()
        self.changed = trio.Event()

    async def response(self, rid: int) -> dict[str, Any]:
        while True:
            for frame in self.out:
                if frame.get("id") == rid and "method" not in frame:
                    return frame
            await self.changed.wait()


def _server() -> Server:
    server = Server("state-token-boundary", "1.0.0")

    @server.tool()
    async def echo(ctx: Context, x: Any = None) -> str:
        """Asks once, then answers."""
        said = await ctx.elicit_string("Say something")
        return f"{type(x).__name__}:{type(said).__name__}"

    @server.tool()
    async def plain(x: int) -> int:
        return x * 2

    return server


@asynccontextmanager
async def _connect() -> AsyncIterator[tuple[_Client, Any]]:
    client = _Client()
    server = _server()
    async with open_runtime({"rate": 10_000}) as runtime:
        server.runtime = runtime
        async with open_session(server, runtime, client.write, peer_id="t") as session:
            yield client, session
            session.close()


def _frame(rid: int, arguments_json: str, extra: str = "") -> bytes:
    return (
        f'{{"jsonrpc":"2.0","id":{rid},"method":"tools/call","params":{{"name":"echo",'
        f'"arguments":{arguments_json},"_meta":{json.dumps(META)}{extra}}}}}'
    ).encode()


async def test_overflowing_number_in_arguments_is_answered(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with _connect() as (client, session):
        # First call: the call suspends in ctx.elicit; the state is bound to a digest of inf.
        await session.feed(_frame(1, '{"x":1e400}'))
        first = await client.response(1)
        assert first["result"]["resultType"] == "input_required", first
        state = first["result"]["requestState"]
        ((key, _),) = first["result"]["inputRequests"].items()
        answer = {key: {"action": "accept", "content": {"value": "hi"}}}
        extra = f',"requestState":{json.dumps(state)},"inputResponses":{json.dumps(answer)}'

        # A retry with other arguments is refused as a mismatch (the digests differ) ...
        await session.feed(_frame(2, '{"x":-1e400}', extra))
        mismatch = await client.response(2)
        assert mismatch["error"]["data"]["reason"] == "request_mismatch", mismatch
        # ... and the exact retry resumes the same call.
        await session.feed(_frame(3, '{"x":1e400}', extra))
        done = await client.response(3)
        assert done["result"]["resultType"] == "complete", done
        assert done["result"]["content"][0]["text"] == "float:Accepted"

        # The session is still alive: an ordinary call is answered.
        await session.feed(
            b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"plain",'
            b'"arguments":{"x":21},"_meta":' + json.dumps(META).encode() + b"}}"
        )
        plain = await client.response(4)
        assert plain["result"]["content"][0]["text"] == "42"


async def test_overflowing_number_in_a_retry_is_answered(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with _connect() as (client, session):
        await session.feed(_frame(1, "{}"))
        first = await client.response(1)
        state = first["result"]["requestState"]
        # The retry's own params hold the overflowing literal (resume digests them first).
        await session.feed(_frame(2, '{"x":1e999}', f',"requestState":{json.dumps(state)}'))
        refused = await client.response(2)
        assert refused["error"]["data"]["reason"] == "request_mismatch", refused
