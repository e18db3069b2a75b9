"""2026-07-28 end to end: a tool's progress and log messages reach the client with the request
the tool works for — the first ``tools/call``, then the retry that resumes it.

Three ways in: the in-memory pair (:func:`erlmcp_py.testing.open_memory_client`), the byte-frame
session harness (the stdio code path in-process, every frame in wire order), and a real stdio
subprocess running this module (``python -m tests.mcp.test_mrtr_notify_e2e``). In-process
tests run under trio's autojump clock; nothing sleeps.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio
import trio.testing

from erlmcp_py.core.outcomes import Accepted
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.server import Server
from erlmcp_py.testing import open_memory_client
from tests.mcp.harness import connect

V = "2026-07-28"
LOG_LEVEL = "io.modelcontextprotocol/logLevel"
ROOT = Path(__file__).resolve().parents[2]
META = {
    "io.modelcontextprotocol/protocolVersion": V,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
}
YES = {"action": "accept", "content": {"confirm": True}}


def add_export(server: Server) -> None:
    """The ``export`` tool (shared with the Streamable HTTP tests)."""

    @server.tool()
    async def export(ctx: Context, items: int = 3) -> str:
        """Log and report progress, ask, then report progress again."""
        await ctx.log("info", f"scanning {items} items")
        await ctx.report_progress(1, 3, "scanned")
        sure = await ctx.elicit_confirm(f"Export {items} items?")
        if not isinstance(sure, Accepted) or sure.content is not True:
            return "not exported"
        await ctx.report_progress(2, 3, "exporting")
        await ctx.log("info", "exported")
        await ctx.log("debug", "details nobody asked for")
        await ctx.report_progress(3, 3)
        return f"exported {items}"


def build() -> Server:
    server = Server("mrtr-notify", "1.0.0")
    add_export(server)

    @server.tool()
    async def restart(ctx: Context) -> str:
        """Progress 50, ask, then progress 10: allowed only with a new token."""
        await ctx.report_progress(50)
        await ctx.elicit_confirm("Go on?")
        try:
            await ctx.report_progress(10)
        except ValueError:
            return f"refused for {ctx.progress_token!r}"
        return f"sent for {ctx.progress_token!r}"

    return server


def call(
    name: str,
    arguments: Mapping[str, Any],
    meta: Mapping[str, Any],
    previous: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``tools/call`` params; a retry when ``previous`` (an InputRequiredResult) is given."""
    params: dict[str, Any] = {"name": name, "arguments": dict(arguments), "_meta": dict(meta)}
    if previous is not None:
        ((key, _),) = previous["inputRequests"].items()
        params["requestState"] = previous["requestState"]
        params["inputResponses"] = {key: YES}
    return params


def progress(token: str, value: int, message: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"progressToken": token, "progress": value, "total": 3}
    if message is not None:
        params["message"] = message
    return params


def info(data: str) -> dict[str, Any]:
    return {"level": "info", "data": data}


# -- in-memory pair ----------------------------------------------------------------------------


async def test_in_memory_notifications_arrive_with_the_first_call_then_with_the_retry(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_memory_client(build(), protocol_version=V) as client:
        with trio.fail_after(60):
            first = await client.request(
                "tools/call",
                call("export", {"items": 3}, {"progressToken": "p1", LOG_LEVEL: "info"}),
            )
            assert first["resultType"] == "input_required"
            with_first = list(client.notifications)
            assert with_first == [
                ("notifications/message", info("scanning 3 items")),
                ("notifications/progress", progress("p1", 1, "scanned")),
            ]
            final = await client.request(
                "tools/call",
                call("export", {"items": 3}, {"progressToken": "p2", LOG_LEVEL: "info"}, first),
            )
        assert final["resultType"] == "complete"
        assert final["content"][0]["text"] == "exported 3"
        assert client.notifications[len(with_first) :] == [
            ("notifications/progress", progress("p2", 2, "exporting")),
            ("notifications/message", info("exported")),  # the debug one is below "info"
            ("notifications/progress", progress("p2", 3)),
        ]
        registry = client.session._stateless.endpoint.registry  # type: ignore[union-attr]
        assert registry.counters["notifications_sent"] == 5
        assert registry.counters["notifications_dropped"] == 0


async def test_in_memory_a_request_gets_only_what_its_meta_asked_for(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """No logLevel: no log messages; no progressToken: no progress — per request."""
    async with open_memory_client(build(), protocol_version=V) as client:
        with trio.fail_after(60):
            first = await client.request("tools/call", call("export", {}, {}))
            assert client.notifications == []
            final = await client.request(
                "tools/call", call("export", {}, {LOG_LEVEL: "debug"}, first)
            )
        assert final["content"][0]["text"] == "exported 3"
        assert client.notifications == [
            ("notifications/message", info("exported")),
            ("notifications/message", {"level": "debug", "data": "details nobody asked for"}),
        ]


async def test_in_memory_progress_is_monotonic_per_token(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_memory_client(build(), protocol_version=V) as client:
        with trio.fail_after(60):
            # A retry with a new token starts a new sequence: 10 after 50 is fine.
            first = await client.request("tools/call", call("restart", {}, {"progressToken": "a"}))
            final = await client.request(
                "tools/call", call("restart", {}, {"progressToken": "b"}, first)
            )
            assert final["content"][0]["text"] == "sent for 'b'"
            assert client.notifications == [
                ("notifications/progress", {"progressToken": "a", "progress": 50}),
                ("notifications/progress", {"progressToken": "b", "progress": 10}),
            ]
            # The same token continues its sequence: 10 after 50 is refused, nothing sent.
            client.notifications.clear()
            first = await client.request("tools/call", call("restart", {}, {"progressToken": "a"}))
            final = await client.request(
                "tools/call", call("restart", {}, {"progressToken": "a"}, first)
            )
            assert final["content"][0]["text"] == "refused for 'a'"
            assert client.notifications == [
                ("notifications/progress", {"progressToken": "a", "progress": 50}),
            ]


# -- the stdio code path in-process: exact wire order --------------------------------------


async def test_byte_stream_session_writes_each_rounds_notifications_before_its_response(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with connect(build()) as wire:
        meta1 = {**META, "progressToken": "p1", LOG_LEVEL: "info"}
        first = (await wire.request("tools/call", call("export", {}, meta1)))["result"]
        meta2 = {**META, "progressToken": "p2", LOG_LEVEL: "info"}
        final = (await wire.request("tools/call", call("export", {}, meta2, first)))["result"]
        assert final["content"][0]["text"] == "exported 3"
        await trio.testing.wait_all_tasks_blocked()
        assert [(f.get("method") or f"response {f['id']}", f.get("params")) for f in wire.out] == [
            ("notifications/message", info("scanning 3 items")),
            ("notifications/progress", progress("p1", 1, "scanned")),
            ("response 1", None),
            ("notifications/progress", progress("p2", 2, "exporting")),
            ("notifications/message", info("exported")),
            ("notifications/progress", progress("p2", 3)),
            ("response 2", None),
        ]


# -- a real stdio subprocess ------------------------------------------------------------------


class Raw:
    """Newline-delimited JSON-RPC with a subprocess; keeps every frame read, in order."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self.buffer = b""
        self.frames: list[dict[str, Any]] = []

    async def request(self, id: int, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        frame = {"jsonrpc": "2.0", "id": id, "method": method, "params": dict(params)}
        assert self.process.stdin is not None
        await self.process.stdin.send_all(json.dumps(frame).encode() + b"\n")
        with trio.fail_after(20):
            while True:
                line = await self.line()
                assert line is not None, "server closed stdout"
                message = dict(json.loads(line))
                self.frames.append(message)
                if message.get("id") == id and "method" not in message:
                    return message

    async def line(self) -> bytes | None:
        assert self.process.stdout is not None
        while b"\n" not in self.buffer:
            chunk = await self.process.stdout.receive_some(65536)
            if not chunk:
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line


@asynccontextmanager
async def server_process() -> AsyncIterator[Raw]:
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "tests.mcp.test_mrtr_notify_e2e"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
        env=dict(os.environ),
    )
    try:
        yield Raw(process)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_stdio_subprocess_notifications_precede_each_response_and_none_follows() -> None:
    async with server_process() as raw:
        meta1 = {**META, "progressToken": "p1", LOG_LEVEL: "info"}
        first = (await raw.request(1, "tools/call", call("export", {}, meta1)))["result"]
        meta2 = {**META, "progressToken": 2, LOG_LEVEL: "info"}
        final = (await raw.request(2, "tools/call", call("export", {}, meta2, first)))["result"]
        assert final["content"][0]["text"] == "exported 3"

        # EOF: the server exits; anything it wrote after the last response would show here.
        assert raw.process.stdin is not None
        await raw.process.stdin.aclose()
        with trio.fail_after(20):
            while (line := await raw.line()) is not None:
                raw.frames.append(json.loads(line))
            assert await raw.process.wait() == 0

        p2 = {"progressToken": 2, "progress": 2, "total": 3, "message": "exporting"}
        assert [
            (f.get("method") or f"response {f['id']}", f.get("params")) for f in raw.frames
        ] == [
            ("notifications/message", info("scanning 3 items")),
            ("notifications/progress", progress("p1", 1, "scanned")),
            ("response 1", None),
            ("notifications/progress", p2),
            ("notifications/message", info("exported")),
            ("notifications/progress", {"progressToken": 2, "progress": 3, "total": 3}),
            ("response 2", None),
        ]


def main() -> None:  # pragma: no cover - runs in the subprocess
    from tests.mcp.mrtr_stdio_server import serve_over_stdio

    serve_over_stdio(build())


if __name__ == "__main__":
    main()
