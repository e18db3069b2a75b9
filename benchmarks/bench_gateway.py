"""What ``erlmcp-py gateway`` costs: one tool call with one form elicitation against the same
upstream (the official SDK's ``MCPServer``), directly and through the gateway, measured in the
same run, over stdio and over Streamable HTTP.

One op = ``tools/call`` of the upstream's ``ask``, whose body awaits ``ctx.elicit`` of a
3-field form (``name``, ``age`` 0..150, ``subscribe``) and returns the name; the client (this
process, ``erlmcp_py.client``, a session-era client at 2025-11-25) accepts at once. Every
result is checked. Per transport, three targets, interleaved round by round:

* ``direct``: the client -> the SDK upstream (stdio: its process; HTTP: uvicorn).
* ``gateway``: the client -> ``erlmcp-py gateway`` -> the same upstream (stdio: the gateway
  on stdio, its upstream a command; HTTP: the gateway on HTTP, ``--upstream`` the uvicorn
  server the ``direct`` target uses).
* ``ours``: the client -> ``erlmcp-py serve`` with the same tool written on this library: a
  server doing the same op over the same transport, the yardstick of the gateway's CPU.

Figures: the gateway's own CPU per op (user + system time of the gateway process from /proc,
its upstream process not included) against ``ours``'s server CPU per op (``cpu_ratio`` =
gateway / ours; the goal is <= 1: the gateway does a server's work plus a client's), and the
latency the gateway adds: p50 and p99 of ``gateway`` minus those of ``direct``, at 1 client and
at 50 (HTTP: 50 client sessions; stdio, where a process has one client: 50 calls in flight on
the one session); the goal is p99 added <= 2 ms at 50. A 2026-07-28 client row is printed
``n/a`` (that client meets the gateway's 2026-07-28 bridge, not measured here). Ratios are
printed, not judged. The last line is one JSON object.

    python benchmarks/bench_gateway.py [--quick] [--rounds N] [--no-http] [--no-stdio]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from erlmcp_py.client import ClientSession, ServerRequest, connect_http, connect_stdio

LEGACY = "2025-11-25"
ANSWER: dict[str, Any] = {"name": "Ada", "age": 36, "subscribe": True}
WIDE = 50
RATE = 10**9
CAPS = {"elicitation": {"form": {}}}
_TICK = os.sysconf("SC_CLK_TCK")

UPSTREAM_SRC = """
import sys
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, Field

class Person(BaseModel):
    name: str
    age: int = Field(ge=0, le=150)
    subscribe: bool = False

server = MCPServer("sdk-bench", log_level="WARNING")

@server.tool()
async def ask(ctx: Context) -> str:
    outcome = await ctx.elicit("Who are you?", Person)
    if outcome.action != "accept":
        raise TypeError("not accepted")
    return outcome.data.name

if sys.argv[1] == "stdio":
    server.run()
else:
    import uvicorn
    app = server.streamable_http_app(host="127.0.0.1", max_sessions=None)
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning",
                access_log=False)
"""

OURS_SRC = """
from pydantic import BaseModel, Field
from erlmcp_py import Accepted, Context, Server
from erlmcp_py.actors.api import RuntimeConfig

class Person(BaseModel):
    name: str
    age: int = Field(ge=0, le=150)
    subscribe: bool = False

def build(config: RuntimeConfig) -> Server:
    server = Server("erlmcp-bench", "1.0.0", runtime_config=config)

    @server.tool()
    async def ask(ctx: Context) -> str:
        outcome = await ctx.elicit("Who are you?", Person)
        if not isinstance(outcome, Accepted):
            raise TypeError("not accepted")
        return str(outcome.content.name)

    return server
"""


def answer(request: ServerRequest) -> dict[str, Any]:
    assert request.method == "elicitation/create", request.method
    return {"action": "accept", "content": ANSWER}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def process_cpu_s(pid: int | None) -> float:
    """User + system CPU seconds of ``pid`` alone (its children not counted)."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def wait_listening(port: int, process: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args!r} exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listened on {port}")


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "erlmcp_py.app", *args]


@dataclass
class Target:
    """One way to make the op: its sessions (the first for 1 client), the process whose CPU
    is counted (``None``: none), and what was measured."""

    name: str
    sessions: list[ClientSession]
    pid: Callable[[], int | None]
    lat1: list[float] = field(default_factory=list)
    lat50: list[float] = field(default_factory=list)
    cpu_per_op: list[float] = field(default_factory=list)


async def call(session: ClientSession) -> float:
    start = time.perf_counter()
    result = await session.call_tool("ask", {})
    elapsed = time.perf_counter() - start
    if result.get("isError") or result["content"][0]["text"] != "Ada":
        raise RuntimeError(f"unexpected result {result!r}")
    return elapsed


async def block(target: Target, n1: int, n50: int) -> None:
    """``n1`` calls one at a time, then ``n50`` calls 50 at a time; the process's CPU per op
    over both."""
    before = process_cpu_s(target.pid())
    first = target.sessions[0]
    for _ in range(n1):
        target.lat1.append(await call(first))
    per_worker = max(1, n50 // WIDE)

    async def worker(session: ClientSession) -> None:
        for _ in range(per_worker):
            target.lat50.append(await call(session))

    async with trio.open_nursery() as nursery:
        for i in range(WIDE):
            nursery.start_soon(worker, target.sessions[i % len(target.sessions)])
    ops = n1 + per_worker * WIDE
    target.cpu_per_op.append((process_cpu_s(target.pid()) - before) / ops)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


@asynccontextmanager
async def stdio_targets(folder: Path) -> AsyncIterator[list[Target]]:
    upstream = [sys.executable, str(folder / "upstream.py"), "stdio"]
    gateway = command("gateway", "--rate", str(RATE), "--log-level", "warning", "--", *upstream)
    ours = command(
        "serve", "--rate", str(RATE), "--server", "bench_server:build", "--log-level", "warning"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(folder), *sys.path]))
    targets = []
    async with AsyncExitStack() as stack:
        for name, argv in (("direct", upstream), ("gateway", gateway), ("ours", ours)):
            session = await stack.enter_async_context(
                connect_stdio(
                    argv, env=env, cwd=str(folder), handler=answer, capabilities=CAPS,
                    protocol_version=LEGACY,
                )
            )  # fmt: skip
            pid = session.wire.process.pid  # type: ignore[attr-defined]
            targets.append(Target(name, [session], lambda pid=pid: pid))
        yield targets


@asynccontextmanager
async def http_targets(folder: Path) -> AsyncIterator[list[Target]]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(folder), *sys.path]))
    ports = {name: free_port() for name in ("direct", "gateway", "ours")}
    up_url = f"http://127.0.0.1:{ports['direct']}/mcp"
    limits = ["--sessions-per-client", "1000", "--requests-per-client", "1000"]
    argvs = {
        "direct": [sys.executable, str(folder / "upstream.py"), "http", str(ports["direct"])],
        "gateway": command(
            "gateway", "--transport", "http", "--port", str(ports["gateway"]), "--rate",
            str(RATE), *limits, "--log-level", "warning", "--upstream", up_url,
        ),
        "ours": command(
            "serve", "--transport", "http", "--port", str(ports["ours"]), "--rate", str(RATE),
            *limits, "--server", "bench_server:build", "--log-level", "warning",
        ),
    }  # fmt: skip
    processes = {}
    try:
        for name, argv in argvs.items():
            processes[name] = subprocess.Popen(  # noqa: ASYNC220 - before anything is measured
                argv, env=env, cwd=folder, stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            wait_listening(ports[name], processes[name])
        targets = []
        async with AsyncExitStack() as stack:
            for name, process in processes.items():
                url = f"http://127.0.0.1:{ports[name]}/mcp"
                sessions = [
                    await stack.enter_async_context(
                        connect_http(
                            url, handler=answer, capabilities=CAPS, protocol_version=LEGACY
                        )
                    )
                    for _ in range(WIDE)
                ]
                targets.append(Target(name, sessions, lambda pid=process.pid: pid))
            yield targets
    finally:
        for process in processes.values():
            process.terminate()
        for process in processes.values():
            process.wait(15)


async def measure(opened: Any, folder: Path, rounds: int, n1: int, n50: int) -> dict[str, Any]:
    async with opened(folder) as targets:
        for target in targets:  # warm-up, not counted
            for _ in range(20):
                await call(target.sessions[0])
        for _ in range(rounds):
            for target in targets:
                await block(target, n1, n50)
    out: dict[str, Any] = {}
    for t in targets:
        out[t.name] = {
            "p50_ms_1": pct(t.lat1, 0.5),
            "p99_ms_1": pct(t.lat1, 0.99),
            "p50_ms_50": pct(t.lat50, 0.5),
            "p99_ms_50": pct(t.lat50, 0.99),
            "cpu_ms_per_op": statistics.median(t.cpu_per_op) * 1000,
        }
    gw, direct, ours = out["gateway"], out["direct"], out["ours"]
    out["added_ms"] = {
        k: gw[k] - direct[k] for k in ("p50_ms_1", "p99_ms_1", "p50_ms_50", "p99_ms_50")
    }
    out["cpu_ratio"] = (
        gw["cpu_ms_per_op"] / ours["cpu_ms_per_op"] if ours["cpu_ms_per_op"] else None
    )
    return out


def show(transport: str, out: dict[str, Any]) -> None:
    print(f"\n{transport}, session-era client ({LEGACY}):")
    print(f"  {'target':<9}{'cpu ms/op':>10}{'p50@1':>8}{'p99@1':>8}{'p50@50':>9}{'p99@50':>9}")
    for name in ("direct", "gateway", "ours"):
        f = out[name]
        cpu = f"{f['cpu_ms_per_op']:.3f}" if name != "direct" else "-"
        print(
            f"  {name:<9}{cpu:>10}{f['p50_ms_1']:>8.2f}{f['p99_ms_1']:>8.2f}"
            f"{f['p50_ms_50']:>9.2f}{f['p99_ms_50']:>9.2f}"
        )
    a = out["added_ms"]
    print(
        f"  gateway added: p50@1 {a['p50_ms_1']:+.2f} ms, p99@1 {a['p99_ms_1']:+.2f} ms, "
        f"p50@50 {a['p50_ms_50']:+.2f} ms, p99@50 {a['p99_ms_50']:+.2f} ms"
    )
    ratio = out["cpu_ratio"]
    print(f"  gateway CPU/op over our server's: {ratio:.2f}" if ratio else "  cpu ratio: n/a")
    print(f"{transport}, 2026-07-28 client: n/a (the gateway's 2026-07-28 bridge)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer ops, one round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-http", action="store_true")
    parser.add_argument("--no-stdio", action="store_true")
    args = parser.parse_args()
    rounds, n1, n50 = (1, 50, 200) if args.quick else (args.rounds, 200, 1000)
    print(
        f"bench_gateway: python {platform.python_version()}, {os.cpu_count()} cpus, "
        f"{rounds} rounds of {n1} calls at 1 client and {n50} at {WIDE}"
    )
    result: dict[str, Any] = {"rounds": rounds, "n1": n1, "n50": n50}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "upstream.py").write_text(UPSTREAM_SRC)
        (folder / "bench_server.py").write_text(OURS_SRC)
        for transport, opened, skip in (
            ("stdio", stdio_targets, args.no_stdio),
            ("http", http_targets, args.no_http),
        ):
            if skip:
                continue
            out = trio.run(measure, opened, folder, rounds, n1, n50)
            show(transport, out)
            result[transport] = out
    result["stateless"] = None
    print(json.dumps(result))


if __name__ == "__main__":
    main()
