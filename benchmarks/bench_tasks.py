"""Tasks at rest: what a task waiting for a person costs, in the process and in the store, and
``tasks/get`` latency over Streamable HTTP at a fixed request rate.

1. **In the process** (embedded store): ``n`` tasks (10 000) created through the 2026-07-28
   endpoint, each a tool parked in one form question (``await ctx.elicit``), as a client
   declaring the extension calls it. Bytes per waiting task: the RSS delta (in a fresh
   process of its own) and, over ``traced_n`` tasks, the tracemalloc delta. The limit,
   measured in the same run: bytes per pending elicitation (the same question asked through
   ``Runtime.create_elicitation`` of a client that never answers, no tool around it):
   ``process_ratio`` = task / elicitation, what the task adds around its question (the
   tool's coroutine, its task state, its record). The files holding most of a task's bytes
   are printed.
2. **In the store** (``redis-server`` on loopback, started by the script): the same ``n``
   tasks on a durable registry: Redis's ``used_memory`` delta per task, and ``MEMORY USAGE``
   of one task's keys (its record; its journal once answered) against the JSON the record
   carries (``store_ratio`` = bytes in Redis / bytes of the record's JSON).
3. **``tasks/get`` latency**: a real ``erlmcp-py serve --transport http`` process with
   ``waiting`` tasks (100); ``tasks/get`` of them in turn at ``rate`` requests per second (500)
   for ``seconds`` (10), open loop: request *i* is due at ``start + i / rate`` and its latency
   is counted from then (a late send counts against the server), over a pool of keep-alive
   connections. The limits, at the same rate on the same server, interleaved in rounds:
   ``server/discover`` (a JSON-RPC request answered from the transport's cache) and
   ``GET /healthz`` (the HTTP layer alone). Ratios: tasks/get p50 and p99 / discover's.

    python benchmarks/bench_tasks.py [--quick] [--n N] [--rate R] [--seconds S]

``--quick``: n = 2 000, 3 s per latency slice. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio
import trio.testing
from _baseline import quiet_logs

from erlmcp_py import ElicitationRequest, RuntimeConfig, Tenant, open_runtime
from erlmcp_py.actors.runtime import Runtime
from erlmcp_py.core.schema import RequestedSchema
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.jsonrpc import Request
from erlmcp_py.mcp.mrtr import open_continuations
from erlmcp_py.mcp.server import Server
from erlmcp_py.mcp.stateless import StatelessEndpoint
from erlmcp_py.mcp.tasks import TaskRegistry, open_tasks
from erlmcp_py.testing import MemoryPeer

ROOT = Path(__file__).resolve().parent.parent
EXT = "io.modelcontextprotocol/tasks"
VERSION = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientCapabilities": {
        "elicitation": {"form": {}},
        "extensions": {EXT: {}},
    },
}
APPROVAL: Mapping[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "approver": {"type": "string"}},
    "required": ["approved", "approver"],
}
QUESTION = "Approve invoice INV-0001?"
WARM = 200  # tasks (and elicitations) created before measuring: every code path once
START_TIMEOUT_S = 60.0


def build(config: RuntimeConfig | None = None) -> Server:
    """The benchmark's server (also ``erlmcp-py serve --server bench_tasks:build``): one tool
    that runs as a task and waits for an approval."""
    server = Server("bench-tasks", "1.0", runtime_config=config)

    @server.tool(task=True)
    async def approve(ctx: Context, invoice: str) -> str:
        """Ask the approver; may take a day."""
        answer = await ctx.elicit(f"Approve invoice {invoice}?", APPROVAL, key="approval")
        return f"{invoice}: {type(answer).__name__}"

    return server


def config_for(n: int, store: str | None = None) -> dict[str, Any]:
    """Caps above ``n`` for one principal, long deadlines, and the store."""
    config: dict[str, Any] = {
        "rate": 10**6,  # the shared store's bucket takes at most this
        "max_pending_per_client": 10**9,
        "max_tasks_per_client": n + WARM + 1,
        "max_tasks": n + WARM + 1,
        "form_deadline_s": 86_400.0,
        "warn_before_s": 0.0,
    }
    if store is not None:
        config["store"] = store
    return config


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def settle() -> None:
    """Until every child task has sent its request and parked."""
    await trio.testing.wait_all_tasks_blocked(cushion=0.01)


# -- 1 and 2: tasks at rest ----------------------------------------------------------------------


@asynccontextmanager
async def task_endpoint(
    n: int, store: str | None = None
) -> AsyncIterator[tuple[Runtime, TaskRegistry, Callable[[int], Awaitable[str]]]]:
    """A runtime, a task registry (durable on a shared store) and the endpoint; yields them
    and ``create(i)``, which makes one waiting task and returns its id."""
    config = config_for(n, store)
    server = build(RuntimeConfig.model_validate(config))
    async with open_runtime(config) as runtime:
        server.runtime = runtime
        async with (
            open_continuations() as registry,
            open_tasks(runtime, durable=store is not None) as tasks,
        ):
            endpoint = StatelessEndpoint(server, runtime, registry, tasks=tasks)

            async def create(i: int) -> str:
                params = {
                    "name": "approve",
                    "arguments": {"invoice": f"INV-{i:05d}"},
                    "_meta": META,
                }
                result = await endpoint.handle(
                    Request(i, "tools/call", params),
                    principal="approver",
                    tenant=Tenant(user="approver"),
                    client_id="approver",
                )
                assert result["resultType"] == "task", result
                task_id: str = result["taskId"]
                return task_id

            yield runtime, tasks, create


async def all_waiting(tasks: TaskRegistry, count: int) -> None:
    """Until ``count`` tasks each have their question out."""
    with trio.fail_after(120):
        while tasks.snapshot()["questions"] < count:  # noqa: ASYNC110 - a gauge, no event
            await trio.sleep(0.01)
    await settle()


async def process_cost(n: int, traced: bool) -> dict[str, float]:
    """Bytes per waiting task in the process (RSS, or tracemalloc when ``traced``)."""
    async with task_endpoint(n) as (_, tasks, create):
        for i in range(WARM):
            await create(i)
        await all_waiting(tasks, WARM)
        gc.collect()
        if traced:
            tracemalloc.start(1)
        before = tracemalloc.get_traced_memory()[0] if traced else rss_bytes()
        for i in range(WARM, WARM + n):
            await create(i)
        await all_waiting(tasks, WARM + n)
        gc.collect()
        after = tracemalloc.get_traced_memory()[0] if traced else rss_bytes()
        by_file: dict[str, float] = {}
        if traced:
            stats = tracemalloc.take_snapshot().statistics("filename")
            tracemalloc.stop()
            for stat in stats[:6]:
                name = stat.traceback[0].filename.split("/site-packages/")[-1]
                by_file[name.replace(str(ROOT) + "/", "")] = round(stat.size / n)
        assert tasks.snapshot()["running"] == WARM + n
    return {"bytes_per_task": (after - before) / n, "by_file": by_file}


async def elicitation_cost(n: int, traced: bool) -> float:
    """Bytes per pending elicitation: the same question, no task around it."""
    request = ElicitationRequest(QUESTION, requested_schema=RequestedSchema(APPROVAL))
    async with open_runtime(config_for(n)) as runtime, trio.open_nursery() as nursery:
        owner = await nursery.start(park)
        peer = MemoryPeer(peer_id="silent")  # never answers
        tenant = Tenant(user="approver")
        for _ in range(WARM):
            await runtime.create_elicitation(request, peer=peer, tenant=tenant, owner=owner)
        await settle()
        gc.collect()
        if traced:
            tracemalloc.start(1)
        before = tracemalloc.get_traced_memory()[0] if traced else rss_bytes()
        for _ in range(n):
            await runtime.create_elicitation(request, peer=peer, tenant=tenant, owner=owner)
        await settle()
        gc.collect()
        after = tracemalloc.get_traced_memory()[0] if traced else rss_bytes()
        if traced:
            tracemalloc.stop()
        assert runtime.metrics()["pending"] == WARM + n
        nursery.cancel_scope.cancel()
    return (after - before) / n


async def park(task_status: trio.TaskStatus[trio.lowlevel.Task]) -> None:
    task_status.started(trio.lowlevel.current_task())
    await trio.sleep_forever()


class Redis:
    """A ``redis-server`` on a free loopback port, no persistence; ``cli`` runs a command."""

    def __init__(self, directory: str) -> None:
        executable = shutil.which("redis-server")
        if executable is None:
            raise SystemExit("bench_tasks: redis-server is not installed")
        self.port = free_port()
        self.process = subprocess.Popen(
            [executable, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", directory],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def cli(self, *args: str) -> list[str]:
        done = subprocess.run(
            ["redis-cli", "-p", str(self.port), "--raw", *args],
            capture_output=True, text=True, timeout=30, check=True,
        )  # fmt: skip
        return done.stdout.splitlines()

    def used_memory(self) -> int:
        info = dict(line.split(":", 1) for line in self.cli("INFO", "memory") if ":" in line)
        return int(info["used_memory"])

    def stop(self) -> None:
        self.process.kill()
        self.process.wait(10)


async def store_cost(n: int, redis: Redis) -> dict[str, float]:
    """Redis bytes per waiting task (``used_memory`` delta), and one record's bytes."""
    # a long call timeout: a full collection of the process's heap, which holds the ``n``
    # waiting tasks, may outlast the default 0.5 s, and this measures bytes, not time
    url = f"redis://127.0.0.1:{redis.port}/0?prefix=bt&timeout=5"
    async with task_endpoint(n, url) as (runtime, tasks, create):
        for i in range(WARM):
            await create(i)
        await all_waiting(tasks, WARM)
        before = await trio.to_thread.run_sync(redis.used_memory)
        ids = [await create(i) for i in range(WARM, WARM + n)]
        await all_waiting(tasks, WARM + n)
        after = await written(runtime, ids[-1], redis)
        record = f"bt:task:{ids[-1]}"
        usage = int((await trio.to_thread.run_sync(redis.cli, "MEMORY", "USAGE", record))[0])
        loaded = await runtime.store.load_task(ids[-1])
        assert loaded is not None
        payload = len(json.dumps(loaded[0].detailed, separators=(",", ":")))
        record_json = len((await trio.to_thread.run_sync(redis.cli, "HGET", record, "j"))[0])
    return {
        "store_bytes_per_task": (after - before) / n,
        "record_memory_usage": usage,
        "record_json_bytes": record_json,
        "detailed_task_json_bytes": payload,
    }


async def written(runtime: Runtime, last: str, redis: Redis) -> int:
    """Redis's ``used_memory`` once the records are rewritten with their questions (the
    last task's shows its question, and the figure holds still for half a second)."""
    with trio.fail_after(120):
        while True:
            shared = await runtime.store.get_task(last, "approver")
            if shared is not None and shared.detailed["status"] == "input_required":
                break
            await trio.sleep(0.05)
        used = [await trio.to_thread.run_sync(redis.used_memory)]
        while len(used) < 3 or len(set(used[-3:])) > 1:
            await trio.sleep(0.25)
            used.append(await trio.to_thread.run_sync(redis.used_memory))
    return used[-1]


# -- 3: tasks/get latency over HTTP --------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Connection:
    """One keep-alive HTTP/1.1 connection: a request out, its whole response in."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.buffer = b""

    async def exchange(self, request: bytes) -> tuple[int, bytes]:
        await self.stream.send_all(request)
        while b"\r\n\r\n" not in self.buffer:
            self.buffer += await self._more()
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        lines = head.split(b"\r\n")
        status = int(lines[0].split()[1])
        headers = dict(line.lower().split(b": ", 1) for line in lines[1:])
        length = int(headers[b"content-length"])
        while len(self.buffer) < length:
            self.buffer += await self._more()
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        return status, body

    async def _more(self) -> bytes:
        data = await self.stream.receive_some(65536)
        if not data:
            raise ConnectionError("the server closed the connection")
        return data


def post(port: int, method: str, params: Mapping[str, Any], name: str | None) -> bytes:
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": META}}
    ).encode()
    headers = [
        "POST /mcp HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        "Accept: application/json, text/event-stream",
        "Content-Type: application/json",
        f"MCP-Protocol-Version: {VERSION}",
        f"Mcp-Method: {method}",
        *([f"Mcp-Name: {name}"] if name else []),
        f"Content-Length: {len(body)}",
    ]
    return ("\r\n".join(headers) + "\r\n\r\n").encode() + body


async def paced(
    port: int, requests: list[bytes], rate: float, seconds: float, pool: int
) -> list[float]:
    """Send ``requests`` in turn at ``rate`` per second for ``seconds``, open loop, over
    ``pool`` connections; each latency from the request's due time to its answer."""
    connections = [Connection(await trio.open_tcp_stream("127.0.0.1", port)) for _ in range(pool)]
    idle_send, idle = trio.open_memory_channel[Connection](pool)
    for connection in connections:
        idle_send.send_nowait(connection)
    latencies: list[float] = []
    total = int(rate * seconds)

    async def one(request: bytes, due: float) -> None:
        connection = await idle.receive()
        status, body = await connection.exchange(request)
        latencies.append(trio.current_time() - due)
        assert status == 200, body[:300]
        idle_send.send_nowait(connection)

    async with trio.open_nursery() as nursery:
        start = trio.current_time() + 0.05
        for i, request in zip(range(total), itertools.cycle(requests), strict=False):
            due = start + i / rate
            await trio.sleep_until(due)
            nursery.start_soon(one, request, due)
    for connection in connections:
        await connection.stream.aclose()
    return latencies


def quantile(samples: list[float], q: int) -> float:
    return statistics.quantiles(samples, n=100, method="inclusive")[q - 1] * 1e3


async def get_latency(rate: float, seconds: float, rounds: int, waiting: int) -> dict[str, Any]:
    """``tasks/get`` against its limits on one ``serve`` process (module docstring, 3)."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "benchmarks"), str(ROOT)])}
    command = [sys.executable, "-m", "erlmcp_py.app", "serve", "--transport", "http",
               "--host", "127.0.0.1", "--port", str(port), "--rate", "100000",
               "--requests-per-client", "10000", "--server", "bench_tasks:build",
               "--log-level", "warning"]  # fmt: skip
    server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)  # noqa: ASYNC220
    try:
        with trio.fail_after(START_TIMEOUT_S):
            while True:
                try:
                    stream = await trio.open_tcp_stream("127.0.0.1", port)
                    break
                except OSError:
                    await trio.sleep(0.1)
        connection = Connection(stream)
        ids = []
        for i in range(waiting):
            arguments = {"name": "approve", "arguments": {"invoice": f"INV-{i:05d}"}}
            status, body = await connection.exchange(post(port, "tools/call", arguments, "approve"))
            assert status == 200, body
            ids.append(json.loads(body)["result"]["taskId"])
        last = post(port, "tasks/get", {"taskId": ids[-1]}, ids[-1])
        with trio.fail_after(START_TIMEOUT_S):  # every tool has asked
            while json.loads((await connection.exchange(last))[1])["result"]["status"] != (  # noqa: ASYNC110 - another process's state
                "input_required"
            ):
                await trio.sleep(0.05)
        await stream.aclose()
        kinds = {
            "tasks_get": [post(port, "tasks/get", {"taskId": t}, t) for t in ids],
            "discover": [post(port, "server/discover", {}, None)],
            "healthz": [f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()],
        }
        samples: dict[str, list[float]] = {kind: [] for kind in kinds}
        order = list(kinds)
        for n in range(rounds):
            for kind in order[n % 3 :] + order[: n % 3]:  # each kind first in turn
                samples[kind] += await paced(port, kinds[kind], rate, seconds, pool=32)
    finally:
        server.terminate()
        server.wait(15)
    out: dict[str, Any] = {"rate": rate, "requests_per_kind": len(samples["tasks_get"])}
    for kind, values in samples.items():
        out[f"{kind}_p50_ms"] = round(quantile(values, 50), 3)
        out[f"{kind}_p99_ms"] = round(quantile(values, 99), 3)
    out["get_p50_ratio"] = round(out["tasks_get_p50_ms"] / out["discover_p50_ms"], 2)
    out["get_p99_ratio"] = round(out["tasks_get_p99_ms"] / out["discover_p99_ms"], 2)
    return out


def rss_pass(kind: str, n: int) -> float:
    """An RSS delta in a fresh process (this one's heap holds the arenas of earlier passes,
    which a later pass would reuse unseen): bytes per waiting task or pending elicitation."""
    done = subprocess.run(
        [sys.executable, __file__, "--rss-of", kind, "--n", str(n)],
        capture_output=True, text=True, check=True, timeout=600,
    )  # fmt: skip
    return float(done.stdout.split()[-1])


async def rss_of(kind: str, n: int) -> None:
    quiet_logs()
    if kind == "task":
        print((await process_cost(n, traced=False))["bytes_per_task"])
    else:
        print(await elicitation_cost(n, traced=False))


async def main(n: int, traced_n: int, rate: float, seconds: float, rounds: int) -> dict[str, Any]:
    quiet_logs()
    out: dict[str, Any] = {"n": n, "traced_n": traced_n}
    task_rss = await trio.to_thread.run_sync(rss_pass, "task", n)
    elicitation_rss = await trio.to_thread.run_sync(rss_pass, "elicitation", n)
    traced = await process_cost(traced_n, traced=True)
    task_traced = traced["bytes_per_task"]
    out["task_bytes_by_file"] = traced["by_file"]
    elicitation_traced = await elicitation_cost(traced_n, traced=True)
    out.update(
        task_bytes_rss=round(task_rss),
        task_bytes_traced=round(task_traced),
        elicitation_bytes_rss=round(elicitation_rss),
        elicitation_bytes_traced=round(elicitation_traced),
        process_ratio=round(
            max(task_rss, task_traced) / max(elicitation_rss, elicitation_traced), 2
        ),
    )
    print(f"in the process, per waiting task: {out['task_bytes_rss']} B (RSS), "
          f"{out['task_bytes_traced']} B (tracemalloc, {traced_n}); per pending elicitation: "
          f"{out['elicitation_bytes_rss']} / {out['elicitation_bytes_traced']} B; "
          f"task / elicitation {out['process_ratio']}")  # fmt: skip
    print(f"  where a task's bytes are (tracemalloc, by file): {out['task_bytes_by_file']}")
    with tempfile.TemporaryDirectory(prefix="bench-tasks-redis-") as directory:
        redis = Redis(directory)
        try:
            store = await store_cost(n, redis)
        finally:
            redis.stop()
    out.update({k: round(v) for k, v in store.items()})
    out["store_ratio"] = round(store["record_memory_usage"] / store["record_json_bytes"], 2)
    print(f"in Redis, per waiting task: {out['store_bytes_per_task']} B (used_memory delta); "
          f"one record: MEMORY USAGE {out['record_memory_usage']} B for "
          f"{out['record_json_bytes']} B of JSON "
          f"(its DetailedTask {out['detailed_task_json_bytes']} B); "
          f"ratio {out['store_ratio']}")  # fmt: skip
    latency = await get_latency(rate, seconds, rounds, waiting=100)
    out.update(latency)
    print(f"at {rate:g}/s, open loop, {latency['requests_per_kind']} requests each: "
          f"tasks/get p50 {latency['tasks_get_p50_ms']} ms p99 {latency['tasks_get_p99_ms']} ms; "
          f"server/discover p50 {latency['discover_p50_ms']} p99 {latency['discover_p99_ms']} ms; "
          f"GET /healthz p50 {latency['healthz_p50_ms']} p99 {latency['healthz_p99_ms']} ms; "
          f"tasks/get / discover: p50 {latency['get_p50_ratio']}, "
          f"p99 {latency['get_p99_ratio']}")  # fmt: skip
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--n", type=int, default=None)
    parser.add_argument("--traced-n", type=int, default=None)
    parser.add_argument("--rate", type=float, default=500.0)
    parser.add_argument("--seconds", type=float, default=None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rss-of", choices=["task", "elicitation"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rss_of:
        trio.run(rss_of, args.rss_of, args.n)
        sys.exit(0)
    n = args.n or (2_000 if args.quick else 10_000)
    traced_n = args.traced_n or min(n, 3_000)
    seconds = args.seconds or (3.0 if args.quick else 10.0)
    result = trio.run(main, n, traced_n, args.rate, seconds, args.rounds)
    print(json.dumps(result))
