"""Tasks (the ``io.modelcontextprotocol/tasks`` extension) over a real stdio subprocess:
``erlmcp-py serve`` with the bundled example server (its conformance fixtures), raw frames.
A task that works and completes, one whose question ``tasks/update`` answers, one cancelled,
the required-task error, and the connection's end ending its tasks."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

ROOT = Path(__file__).resolve().parents[2]
SERVER = [sys.executable, "-m", "erlmcp_py.app", "serve", "--transport", "stdio"]
EXT = "io.modelcontextprotocol/tasks"
CAPS: dict[str, Any] = {"elicitation": {"form": {}}, "extensions": {EXT: {}}}


class Raw:
    """Newline-delimited JSON-RPC over a subprocess's stdin/stdout."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self.buffer = b""
        self.ids = itertools.count(1)

    async def request(
        self, method: str, params: Mapping[str, Any], caps: Mapping[str, Any] = CAPS
    ) -> dict[str, Any]:
        rid = next(self.ids)
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": dict(caps),
        }
        frame = {"jsonrpc": "2.0", "id": rid, "method": method,
                 "params": {**params, "_meta": meta}}  # fmt: skip
        assert self.process.stdin is not None
        await self.process.stdin.send_all(json.dumps(frame).encode() + b"\n")
        with trio.fail_after(20):
            while True:
                message = json.loads(await self._line())
                if message.get("id") == rid:
                    return dict(message)

    async def _line(self) -> bytes:
        assert self.process.stdout is not None
        while b"\n" not in self.buffer:
            chunk = await self.process.stdout.receive_some(65536)
            assert chunk, "server closed stdout"
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    async def result(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        frame = await self.request(method, params)
        assert "result" in frame, frame
        result: dict[str, Any] = frame["result"]
        return result

    async def until(self, task_id: str, *statuses: str) -> dict[str, Any]:
        with trio.fail_after(20):
            while True:
                task = await self.result("tasks/get", {"taskId": task_id})
                if task["status"] in statuses:
                    return task
                await trio.sleep(0.05)


@asynccontextmanager
async def server_process() -> AsyncIterator[Raw]:
    process = await trio.lowlevel.open_process(
        SERVER,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
        env=dict(os.environ),
    )
    try:
        yield Raw(process)
        assert process.stdin is not None
        await process.stdin.aclose()  # EOF: the connection's tasks end, the server exits
        with trio.fail_after(10):
            assert await process.wait() == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_tasks_over_stdio_work_ask_cancel_and_end_with_the_connection() -> None:
    async with server_process() as raw:
        found = await raw.result("server/discover", {})
        assert found["capabilities"]["extensions"] == {EXT: {}}

        created = await raw.result(
            "tools/call", {"name": "slow_compute", "arguments": {"seconds": 0.2, "label": "a"}}
        )
        assert created["resultType"] == "task"
        done = await raw.until(created["taskId"], "completed")
        assert done["result"]["content"][0]["text"] == "Computed a in 0.2 s"

        asking_id = (
            await raw.result(
                "tools/call", {"name": "confirm_delete", "arguments": {"filename": "x.txt"}}
            )
        )["taskId"]
        asking = await raw.until(asking_id, "input_required")
        ((key, request),) = asking["inputRequests"].items()
        assert request["params"]["message"] == "Delete x.txt?"
        answer = {key: {"action": "accept", "content": {"confirm": True}}}
        await raw.result("tasks/update", {"taskId": asking_id, "inputResponses": answer})
        deleted = await raw.until(asking_id, "completed")
        assert deleted["result"]["content"][0]["text"] == "Deleted x.txt"

        long_id = (
            await raw.result("tools/call", {"name": "slow_compute", "arguments": {"seconds": 600}})
        )["taskId"]
        assert (await raw.result("tasks/cancel", {"taskId": long_id}))["resultType"] == "complete"
        assert (await raw.until(long_id, "cancelled", "completed"))["status"] == "cancelled"

        refused = await raw.request(
            "tools/call", {"name": "failing_job", "arguments": {}}, caps={"elicitation": {}}
        )
        assert refused["error"]["code"] == -32021
        # one still running when the connection closes: it ends with it (clean exit below)
        await raw.result("tools/call", {"name": "slow_compute", "arguments": {"seconds": 600}})
