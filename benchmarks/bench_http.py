"""erlmcp-py versus the official MCP Python SDK (``mcp`` 2.3.0) over Streamable HTTP: the same
SDK client drives both servers, each a real subprocess on 127.0.0.1, in the same run.

One op = ``tools/call`` of a tool that asks the 3-field ``Person`` form of ``bench_vs_sdk.py``
(``name``, ``age`` 0..150, ``subscribe``) and returns the accepted name; the SDK client's
elicitation callback accepts at once. Every result is checked. Servers:

* ours: the real command, ``python -m erlmcp_py.app serve --transport http --host 127.0.0.1
  --port P --rate N --server bench_server:build --log-level warning`` (its own HTTP/1.1 layer;
  ``bench_server.py`` is ``bench_vs_sdk.py``'s module: the ``ask`` tool, ``await ctx.elicit``,
  the same code in both eras).
* SDK: ``MCPServer.streamable_http_app()`` under uvicorn (asyncio, h11; what
  ``MCPServer.run("streamable-http")`` runs) with access logging off and log level warning;
  2025-11-25 calls ``ask`` (``ctx.elicit``), 2026-07-28 calls ``ask_resolve`` (the stateless
  ``Resolve(Elicit(...))`` resolver: the SDK's ``ctx.elicit`` cannot ask on that era).

Clients (in this process, trio): ``mcp.Client("http://127.0.0.1:P/mcp", mode=...)``,
``mode="legacy"`` (initialize, ``Mcp-Session-Id``, the elicitation on the POST's SSE stream,
the answer POSTed back) or ``mode="2026-07-28"`` (no session: ``InputRequiredResult``, then the
retry carrying ``inputResponses`` and ``requestState``). Sequential: one client, one call at a
time. Concurrent: 50 clients (each its own ``Client``: its own session and connections), each
calling in a loop.

Rounds are interleaved: in each round every server, in alternating order, gets one sequential
slice and one 50-client slice of the same wall time (``slice_s``), so drift on this shared box
hits both alike. Server CPU per op = the server process's utime + stime (``/proc/PID/stat``)
over the slice / the ops of the slice. Figures are medians over rounds (latency percentiles over
every op of every slice); a ratio is the median of the per-round ratios. Keys:
``<side>_<era>_{seq,c50}_{ops_s,p50_ms,p99_ms,server_cpu_ms_per_op,client_cpu_ms_per_op}``,
``cpu_ratio_<era>`` / ``cpu_ratio_<era>_c50`` = SDK / ours server CPU per op (higher is better
for us), ``ops_ratio_<era>[_c50]`` = ours / SDK ops/s, ``p99_ratio_<era>_c50`` = ours / SDK p99
at 50 clients (lower is better for us). Goals (printed, not pass/fail): server CPU per op
>= 5x lower than the SDK's in both eras; p99 at 50 clients no worse than the SDK's.

``--profile DIR`` instead runs only our server, under ``python -m cProfile -o DIR/<era>.prof``
and with a trio ``Instrument`` counting task spawns, task steps and scheduler passes, drives the
same load, and prints where one op's server time goes by layer (trio, the HTTP/1.1 layer, our
transport, ``erlmcp_py.mcp``, the runtime, ...) and the counts per op.

``--instructions N`` instead runs only our server, under valgrind (``--tool=callgrind``, its
instrumentation switched on by ``callgrind_control`` for the measured ops alone, hash seed 0),
and prints the instructions the server executes per op over ``N`` sequential ops (after 20
unmeasured) in each era: a count, not a time, so two commits compare on a busy machine to
within about 0.3 %. Needs valgrind; about 20 s per era for ``N`` = 200.

    python benchmarks/bench_http.py [--quick] [--profile DIR] [--instructions N]

``--quick`` is about 30 s. Loopback only; bounded: every op under a timeout, every slice bounded
in time, the servers are stopped (SIGINT, then SIGKILL) on the way out. The last line is one
JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import pstats
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from importlib.metadata import version as dist_version
from pathlib import Path
from typing import Any

import trio
from bench_vs_sdk import (
    MESSAGE,
    OUR_MODULE,
    PERSON_SRC,
    RATE,
    SDK_TOOLS_SRC,
    BenchError,
    layer_of,
    process_cpu_s,
    sdk_answer,
    sdk_client_op,
)
from mcp import Client

from erlmcp_py.core.versions import V_2026_07_28

ROOT = Path(__file__).resolve().parent.parent
LEGACY = "2025-11-25"
ERAS = (LEGACY, V_2026_07_28)
CLIENTS = 50
OP_TIMEOUT_S = 30.0  # one op; a slower one is a failure, not a figure
START_TIMEOUT_S = 60.0
CPU_GOAL = 5.0
PER_CLIENT = 10_000  # the per-address caps of `serve` (one address here: 127.0.0.1)

SDK_HTTP_SCRIPT = (
    '''"""SDK (mcp 2.3.0) Streamable HTTP server for bench_http. argv: port."""
import sys
from typing import Annotated

import uvicorn
from pydantic import BaseModel, Field
from mcp.server.elicitation import AcceptedElicitation
from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve
'''
    + PERSON_SRC
    + f"""
MESSAGE = {MESSAGE!r}
server = MCPServer("sdk-bench", log_level="WARNING")
"""
    + SDK_TOOLS_SRC
    + """

app = server.streamable_http_app(host="127.0.0.1", max_sessions=None)
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)
"""
)

# Profile mode: our server runs under this wrapper. Two windows, each opened by SIGUSR1 and
# closed by SIGUSR2 (which writes its files): the first samples the stack on every tick of the
# process's CPU time (ITIMER_PROF, 4 ms at this kernel's 250 Hz: no cost per call, waiting in
# epoll is not sampled; the CPU per op comes from /proc over the same window) and
# writes argv[1].samples.json; the second runs cProfile (call counts) and writes argv[1]
# (pstats). Each window also writes the trio Instrument's counts, argv[1].w<k>.counts.json.
PROFILE_WRAPPER = '''"""Profile our server between SIGUSR1 and SIGUSR2. argv: out, cli args."""
import cProfile
import json
import runpy
import signal
import sys
from collections import Counter

import bench_counts

INTERVAL = 0.001  # rounded up to the kernel's tick
out = sys.argv[1]
prof = cProfile.Profile()
own = Counter()
incl = Counter()
lib = Counter()  # the innermost frame that is not the standard library
root = Counter()  # the task's outermost coroutine (the frame trio's run loop resumed)
LIBS = ("site-packages/", "erlmcp_py/", "supervisors/", "bench_")
window = [0]


def key(code):
    return f"{code.co_filename}:{code.co_firstlineno}({code.co_name})"


def sample(signum, frame):
    if frame is None:
        return
    own[key(frame.f_code)] += 1
    seen = set()
    attributed = False
    outer = "scheduler (no task running)"
    while frame is not None:
        back = frame.f_back
        if back is not None and back.f_code.co_name == "unrolled_run":
            outer = key(frame.f_code)
        k = key(frame.f_code)
        if not attributed and any(p in k for p in LIBS):
            lib[k] += 1
            attributed = True
        if k not in seen:
            seen.add(k)
            incl[k] += 1
        frame = frame.f_back
    root[outer] += 1


def start(signum, frame):
    bench_counts.reset()
    if window[0] == 0:
        signal.signal(signal.SIGPROF, sample)
        signal.setitimer(signal.ITIMER_PROF, INTERVAL, INTERVAL)
    else:
        prof.enable()


def stop(signum, frame):
    if window[0] == 0:
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
        with open(out + ".samples.json", "w") as f:
            json.dump({"own": own, "incl": incl, "lib": lib, "root": root}, f)
    else:
        prof.disable()
        prof.dump_stats(out)
    with open(f"{out}.w{window[0]}.counts.json", "w") as f:
        json.dump(bench_counts.COUNTS, f)
    window[0] += 1


signal.signal(signal.SIGUSR1, start)
signal.signal(signal.SIGUSR2, stop)
sys.argv = ["erlmcp-py", *sys.argv[2:]]
runpy.run_module("erlmcp_py.app", run_name="__main__")
'''

INSTRUMENT_MODULE = '''"""A trio Instrument counting task spawns, task steps and scheduler
passes (``after_io_wait``: one per pass of the run loop); installed on the bench tool\'s first
call when $BENCH_COUNTS is set."""
import os

import trio

COUNTS = {"spawned": 0, "steps": 0, "passes": 0, "scheduled": 0}


def reset():
    for key in COUNTS:
        COUNTS[key] = 0


class Counter(trio.abc.Instrument):
    def task_spawned(self, task):
        COUNTS["spawned"] += 1

    def before_task_step(self, task):
        COUNTS["steps"] += 1

    def task_scheduled(self, task):
        COUNTS["scheduled"] += 1

    def after_io_wait(self, timeout):
        COUNTS["passes"] += 1


_installed = False


def install():
    global _installed
    if _installed:
        return
    _installed = True
    if os.environ.get("BENCH_COUNTS"):
        trio.lowlevel.add_instrument(Counter())
'''

# Our bench module plus, in profile mode, the instrument installed on the first call.
OUR_HTTP_MODULE = OUR_MODULE.replace(
    "        outcome = await ctx.elicit(MESSAGE, Person)",
    "        bench_counts.install()\n        outcome = await ctx.elicit(MESSAGE, Person)",
).replace("from pathlib import Path\n", "from pathlib import Path\n\nimport bench_counts\n")


# -- servers --------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class ServerProc:
    """One server subprocess on 127.0.0.1."""

    side: str
    port: int
    proc: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def pid(self) -> int:
        return self.proc.pid


def our_command(port: int, profile_to: Path | None, tmp: Path) -> list[str]:
    if profile_to is None:
        head = [sys.executable, "-m", "erlmcp_py.app"]
    else:
        head = [sys.executable, str(tmp / "profile_wrapper.py"), str(profile_to)]
    return [
        *head,
        "serve",
        "--transport",
        "http",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--rate",
        str(RATE),
        # every client is on 127.0.0.1, one principal: lift its caps over the 50 clients
        "--sessions-per-client",
        str(PER_CLIENT),
        "--requests-per-client",
        str(PER_CLIENT),
        "--suspended-per-client",
        str(PER_CLIENT),
        "--server",
        "bench_server:build",
        "--log-level",
        "warning",
    ]


def start_server(side: str, tmp: Path, profile_to: Path | None = None) -> ServerProc:
    port = free_port()
    env = dict(os.environ)
    # this checkout's code and the temp dir's modules, whatever is installed in the venv
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), str(tmp), env.get("PYTHONPATH", "")) if p
    )
    if profile_to is not None:
        env["BENCH_COUNTS"] = "1"
    if side == "ours":
        command = our_command(port, profile_to, tmp)
    else:
        command = [sys.executable, str(tmp / "sdk_http_server.py"), str(port)]
    proc = subprocess.Popen(
        command, cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return ServerProc(side, port, proc)


async def wait_listening(server: ServerProc) -> None:
    with trio.fail_after(START_TIMEOUT_S):
        while True:
            if server.proc.poll() is not None:
                raise BenchError(f"{server.side} server exited with {server.proc.returncode}")
            try:
                stream = await trio.open_tcp_stream("127.0.0.1", server.port)
            except OSError:
                await trio.sleep(0.1)
                continue
            await stream.aclose()
            return


def stop_server(server: ServerProc) -> None:
    if server.proc.poll() is None:
        server.proc.send_signal(signal.SIGINT)
        try:
            server.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.proc.kill()
            server.proc.wait()


# -- measurement ----------------------------------------------------------------------------------


@dataclass
class Target:
    """One server in one era: its clients and what was measured."""

    key: str
    label: str
    server: ServerProc
    tool: str
    mode: str
    ops: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    seq_rate: list[float] = field(default_factory=list)
    conc_rate: list[float] = field(default_factory=list)
    seq_lat: list[float] = field(default_factory=list)
    conc_lat: list[float] = field(default_factory=list)
    seq_cpu: list[float] = field(default_factory=list)  # server CPU s per op, per round
    conc_cpu: list[float] = field(default_factory=list)
    seq_client_cpu: list[float] = field(default_factory=list)
    conc_client_cpu: list[float] = field(default_factory=list)


async def timed(op: Callable[[], Awaitable[None]]) -> float:
    start = time.perf_counter()
    with trio.fail_after(OP_TIMEOUT_S):
        await op()
    return time.perf_counter() - start


async def run_slice(target: Target, slice_s: float, width: int) -> None:
    """Run ``width`` clients, each calling in a loop until ``slice_s`` has passed."""
    ops = target.ops[:width]
    latencies: list[float] = []
    cpu0, own0 = process_cpu_s(target.server.pid), time.process_time()
    start = time.perf_counter()
    deadline = start + slice_s

    async def worker(op: Callable[[], Awaitable[None]]) -> None:
        while time.perf_counter() < deadline:
            latencies.append(await timed(op))

    async with trio.open_nursery() as nursery:
        for op in ops:
            nursery.start_soon(worker, op)
    elapsed = time.perf_counter() - start
    n = max(1, len(latencies))
    server_cpu = (process_cpu_s(target.server.pid) - cpu0) / n
    client_cpu = (time.process_time() - own0) / n
    if width == 1:
        target.seq_rate.append(len(latencies) / elapsed)
        target.seq_lat += latencies
        target.seq_cpu.append(server_cpu)
        target.seq_client_cpu.append(client_cpu)
    else:
        target.conc_rate.append(len(latencies) / elapsed)
        target.conc_lat += latencies
        target.conc_cpu.append(server_cpu)
        target.conc_client_cpu.append(client_cpu)


async def measure(targets: list[Target], rounds: int, slice_s: float, warmup: int) -> None:
    """Warm up, then ``rounds`` rounds: every target, in alternating order, one sequential and
    one concurrent slice of ``slice_s`` seconds each."""
    for target in targets:
        for op in target.ops:  # every client once: sessions warm, schemas cached
            await timed(op)
        for _ in range(warmup):
            await timed(target.ops[0])
    for r in range(rounds):
        for target in targets if r % 2 == 0 else targets[::-1]:
            await run_slice(target, slice_s, 1)
            await run_slice(target, slice_s, CLIENTS)


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summarize(target: Target, out: dict[str, Any]) -> None:
    k = target.key
    for kind, rate, lat, cpu, own in (
        ("seq", target.seq_rate, target.seq_lat, target.seq_cpu, target.seq_client_cpu),
        ("c50", target.conc_rate, target.conc_lat, target.conc_cpu, target.conc_client_cpu),
    ):
        out[f"{k}_{kind}_ops_s"] = round(statistics.median(rate)) if rate else None
        for name, q in (("p50", 0.5), ("p99", 0.99)):
            v = pct(lat, q)
            out[f"{k}_{kind}_{name}_ms"] = round(v * 1e3, 2) if v is not None else None
        out[f"{k}_{kind}_server_cpu_ms_per_op"] = (
            round(statistics.median(cpu) * 1e3, 3) if cpu else None
        )
        out[f"{k}_{kind}_client_cpu_ms_per_op"] = (
            round(statistics.median(own) * 1e3, 3) if own else None
        )
        out[f"{k}_{kind}_ops"] = len(lat)


def paired(xs: list[float], ys: list[float]) -> float | None:
    """Median over rounds of ``xs[i] / ys[i]``."""
    if not xs or len(xs) != len(ys) or not all(ys):
        return None
    return round(statistics.median(x / y for x, y in zip(xs, ys, strict=True)), 3)


def show(target: Target, out: dict[str, Any]) -> None:
    k = target.key
    print(
        f"  {target.label:<44} seq {out[f'{k}_seq_ops_s'] or 0:>5}/s "
        f"p50 {out[f'{k}_seq_p50_ms']} p99 {out[f'{k}_seq_p99_ms']} ms "
        f"cpu/op {out[f'{k}_seq_server_cpu_ms_per_op']} ms | "
        f"{CLIENTS} clients {out[f'{k}_c50_ops_s'] or 0:>5}/s "
        f"p50 {out[f'{k}_c50_p50_ms']} p99 {out[f'{k}_c50_p99_ms']} ms "
        f"cpu/op {out[f'{k}_c50_server_cpu_ms_per_op']} ms",
        flush=True,
    )


async def open_clients(
    stack: AsyncExitStack, server: ServerProc, mode: str, tool: str, n: int
) -> list[Callable[[], Awaitable[None]]]:
    """``n`` SDK clients of ``server`` in ``mode``, held open by ``stack``, as checked ops."""
    ops = []
    for _ in range(n):  # no timeout scope here: the clients' task groups outlive this call
        client = Client(server.url, mode=mode, elicitation_callback=sdk_answer)
        ops.append(sdk_client_op(await stack.enter_async_context(client), tool))
    return ops


async def probe(op: Callable[[], Awaitable[None]]) -> str | None:
    try:
        await timed(op)
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc)[:200]}"
    return None


# -- profile --------------------------------------------------------------------------------------

_LAYERS = (
    ("trio/_core/_instrumentation", "the instrument (profile only)"),
    ("bench_counts", "the instrument (profile only)"),
    ("erlmcp_py/transports/_server", "erlmcp_py HTTP/1.1 server layer"),
    ("erlmcp_py/transports/_http11", "erlmcp_py HTTP/1.1 server layer"),
    ("erlmcp_py/transports", "erlmcp_py.transports (http.py, http_checks.py)"),
    ("erlmcp_py/mcp", "erlmcp_py.mcp (session, stateless, mrtr, context, jsonrpc)"),
    ("erlmcp_py/actors", "erlmcp_py.actors (runtime)"),
    ("erlmcp_py/core", "erlmcp_py.core (pure)"),
    ("erlmcp_py/", "erlmcp_py other"),
    ("supervisors", "supervisors (actor kernel)"),
    ("trio/_socket.py", "socket I/O (trio's socket layer and the syscalls)"),
    ("trio/_highlevel_socket.py", "socket I/O (trio's socket layer and the syscalls)"),
    ("trio/_core/_io_epoll.py", "epoll (trio's I/O manager and the syscall)"),
    ("site-packages/trio", "trio (scheduler, cancel scopes, channels, tasks)"),
    ("site-packages/outcome", "trio (scheduler, cancel scopes, channels, tasks)"),
    ("site-packages/sniffio", "trio (scheduler, cancel scopes, channels, tasks)"),
    ("site-packages/structlog", "structlog"),
    ("site-packages/pydantic/", "pydantic (py)"),
    ("pydantic_core", "pydantic-core"),
    ("site-packages/jsonschema", "jsonschema"),
    ("site-packages/referencing", "jsonschema"),
    ("bench_server", "the bench tool"),
    ("/json/", "json (stdlib)"),
    ("contextlib.py", "contextlib (stdlib: context managers)"),
    ("contextvars", "contextvars"),
    ("/hmac.py", "hmac/hashlib (stdlib)"),
    ("/secrets.py", "secrets (stdlib)"),
    ("/re/", "re (stdlib)"),
    ("/logging/", "logging (stdlib)"),
)


def _short(where: str) -> str:
    return where.replace(str(ROOT) + "/", "").split("site-packages/")[-1]


def report_profile(
    prof_file: Path, ops: dict[str, int], cpu_ms: float, label: str
) -> dict[str, Any]:
    """Print and return where one op's server CPU goes: sampled shares by layer, the hottest
    functions, inclusive time of our code, and counts per op (trio Instrument,
    cProfile calls)."""
    samples = json.loads(Path(f"{prof_file}.samples.json").read_text())
    n_ops = ops["sampled"]
    own: dict[str, int] = samples["own"]
    total = sum(own.values())
    tick_us = cpu_ms * 1e3 * n_ops / max(1, total)  # CPU per sample, from /proc
    by_layer: dict[str, int] = {}
    lib: dict[str, int] = samples["lib"]
    for where, n in lib.items():
        filename, _, func = where.rpartition(":")
        name = layer_of(filename, func, _LAYERS)
        by_layer[name] = by_layer.get(name, 0) + n
    if total > sum(lib.values()):  # a sample with no library frame at all
        by_layer["stdlib only"] = total - sum(lib.values())
    print(
        f"\nprofile of our server, {label}: {n_ops} ops sampled, {total} samples, "
        f"server CPU {cpu_ms:.2f} ms/op over the window (/proc)"
    )
    print("  CPU by layer (the innermost non-stdlib frame when sampled: stdlib calls count for")
    print("  their caller):")
    layers: dict[str, float] = {}
    for name, n in sorted(by_layer.items(), key=lambda kv: -kv[1]):
        layers[name] = round(n / total, 3)
        if n / total >= 0.01:
            print(f"    {n / total:6.1%}  {n * tick_us / n_ops:7.1f} us/op  {name}")
    print("  CPU by task (the coroutine trio's run loop was running when sampled):")
    tasks: dict[str, float] = {}
    for where, n in sorted(samples["root"].items(), key=lambda kv: -kv[1])[:12]:
        tasks[_short(where)] = round(n / total, 3)
        print(f"    {n / total:6.1%}  {n * tick_us / n_ops:7.1f} us/op  {_short(where)}")
    print("  hottest functions (own, % of samples):")
    for where, n in sorted(own.items(), key=lambda kv: -kv[1])[:20]:
        print(f"    {n / total:6.1%}  {_short(where)}")
    print("  inclusive (% of samples with it on the stack), our code:")
    incl: dict[str, int] = samples["incl"]
    ours = [(w, n) for w, n in incl.items() if any(p in w for p in ("erlmcp_py/", "supervisors/"))]
    for where, n in sorted(ours, key=lambda kv: -kv[1])[:30]:
        print(f"    {n / total:6.1%}  {_short(where)}")

    stats = pstats.Stats(str(prof_file))
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    c_ops = ops["cprofiled"]

    def calls(file_part: str, func: str) -> float:
        n = sum(v[1] for (f, _l, fn), v in raw.items() if file_part in f and fn == func)
        return round(n / c_ops, 1)

    counts = json.loads(Path(f"{prof_file}.w0.counts.json").read_text())
    per_op = {
        "task_spawns": round(counts["spawned"] / n_ops, 1),
        "task_steps": round(counts["steps"] / n_ops, 1),
        "scheduler_passes": round(counts["passes"] / n_ops, 1),
        "cancel_scopes": calls("trio/_core/_run.py", "__enter__"),
        "nurseries": calls("trio/_core/_run.py", "open_nursery"),
        "socket_sends": calls("~", "<method 'send' of '_socket.socket' objects>"),
        "socket_recvs": calls("~", "<method 'recv' of '_socket.socket' objects>"),
        "http_requests": calls("erlmcp_py/transports/_http11.py", "parse_head"),
        "connections": calls("~", "<method 'setblocking' of '_socket.socket' objects>"),
        "json_dumps": calls("json/__init__.py", "dumps"),
        "json_loads": calls("json/__init__.py", "loads"),
        "structlog_calls": calls("structlog/_native.py", "meth"),
    }
    print(f"  per op (trio Instrument; the rest cProfile calls of plain functions): {per_op}")
    print("  cProfile, most calls per op:")
    for (filename, line, func), (_cc, nc, _tt, _ct, _callers) in sorted(
        raw.items(), key=lambda kv: -kv[1][1]
    )[:12]:
        print(f"    {nc / c_ops:6.1f}  {_short(filename)}:{line}({func})")
    return {
        "layers": layers,
        "tasks": tasks,
        "per_op": per_op,
        "ops_sampled": n_ops,
        "samples": total,
        "server_cpu_ms_per_op_sampled_window": round(cpu_ms, 3),
    }


async def profiled_window(target: Target, slice_s: float, width: int) -> int:
    """Open one profiling window (SIGUSR1 .. SIGUSR2) around one slice; the ops it ran."""
    before = len(target.seq_lat) + len(target.conc_lat)
    target.server.proc.send_signal(signal.SIGUSR1)
    await trio.sleep(0.5)  # the server is idle: the handler runs at its next wake-up
    await run_slice(target, slice_s, width)
    await trio.sleep(0.5)
    target.server.proc.send_signal(signal.SIGUSR2)
    await trio.sleep(1.0)  # the handler writes its files
    return len(target.seq_lat) + len(target.conc_lat) - before


async def profile_ours(tmp: Path, out_dir: Path, seq_s: float, conc_s: float) -> dict[str, Any]:
    """Our server alone: per era and load (one server process each), an unprofiled slice (server
    CPU per op from /proc), then the same slice sampled, then the same slice under cProfile."""
    results: dict[str, Any] = {}
    for era in ERAS:
        mode = "legacy" if era == LEGACY else V_2026_07_28
        for load_kind in ("seq", "c50"):
            prof_file = out_dir / f"ours_{era}_{load_kind}.prof"
            server = start_server("ours", tmp, profile_to=prof_file)
            width = 1 if load_kind == "seq" else CLIENTS
            slice_s = seq_s if load_kind == "seq" else conc_s
            ops: dict[str, int] = {}
            try:
                await wait_listening(server)
                async with AsyncExitStack() as stack:
                    client_ops = await open_clients(stack, server, mode, "ask", CLIENTS)
                    target = Target("p", "p", server, "ask", mode, client_ops)
                    await measure([target], rounds=0, slice_s=slice_s, warmup=100)
                    await run_slice(target, slice_s, width)  # unprofiled: the baseline
                    base = (target.seq_cpu or target.conc_cpu)[0] * 1e3
                    ops["sampled"] = await profiled_window(target, slice_s, width)
                    cpu_ms = (target.seq_cpu or target.conc_cpu)[-1] * 1e3
                    ops["cprofiled"] = await profiled_window(target, slice_s, width)
            finally:
                stop_server(server)
            label = f"{era}, {'sequential' if width == 1 else f'{CLIENTS} clients'}"
            report = report_profile(prof_file, ops, cpu_ms, label)
            report["server_cpu_ms_per_op_unprofiled"] = round(base, 3)
            print(f"  server CPU per op without a profiler (/proc): {base:.3f} ms")
            results[f"{era}_{load_kind}"] = report
    return results


# -- main -----------------------------------------------------------------------------------------


async def main(quick: bool, profile_dir: Path | None) -> dict[str, Any]:
    if quick:
        cfg = {"rounds": 3, "slice_s": 0.6, "warmup": 10}
    else:
        cfg = {"rounds": 10, "slice_s": 1.5, "warmup": 50}
    began = time.perf_counter()
    load_start = os.getloadavg()
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench_http-") as tmpdir:
        tmp = Path(tmpdir)
        (tmp / "sdk_http_server.py").write_text(SDK_HTTP_SCRIPT)
        (tmp / "bench_server.py").write_text(OUR_HTTP_MODULE)
        (tmp / "bench_counts.py").write_text(INSTRUMENT_MODULE)
        (tmp / "profile_wrapper.py").write_text(PROFILE_WRAPPER)
        if profile_dir is not None:
            span = 3.0 if quick else 10.0
            prof = await profile_ours(tmp, profile_dir, span, span)
            return {"profile": prof, "elapsed_s": round(time.perf_counter() - began, 1)}
        servers = {side: start_server(side, tmp) for side in ("sdk", "ours")}
        try:
            for s in servers.values():
                await wait_listening(s)
            groups: dict[str, list[Target]] = {}
            for era in ERAS:
                mode = "legacy" if era == LEGACY else V_2026_07_28
                tag = "legacy" if era == LEGACY else "2026"
                sdk_tool = "ask" if era == LEGACY else "ask_resolve"
                targets = [
                    Target(
                        f"sdk_{tag}",
                        f"SDK  MCPServer (uvicorn) {era}",
                        servers["sdk"],
                        sdk_tool,
                        mode,
                    ),
                    Target(
                        f"ours_{tag}",
                        f"ours erlmcp-py serve {era}",
                        servers["ours"],
                        "ask",
                        mode,
                    ),
                ]
                print(f"Streamable HTTP, {era}, the SDK client on both servers:", flush=True)
                async with AsyncExitStack() as stack:
                    for t in targets:
                        t.ops = await open_clients(stack, t.server, t.mode, t.tool, CLIENTS)
                        why = await probe(t.ops[0])
                        if why is not None:
                            raise BenchError(f"{t.label}: probe failed: {why}")
                    await measure(targets, **cfg)
                for t in targets:
                    summarize(t, out)
                    show(t, out)
                groups[tag] = targets
        finally:
            for s in servers.values():
                stop_server(s)

    results: dict[str, Any] = {}
    for tag, (sdk, ours) in ((k, (v[0], v[1])) for k, v in groups.items()):
        results[f"cpu_ratio_{tag}"] = paired(sdk.seq_cpu, ours.seq_cpu)
        results[f"cpu_ratio_{tag}_c50"] = paired(sdk.conc_cpu, ours.conc_cpu)
        results[f"ops_ratio_{tag}"] = paired(ours.seq_rate, sdk.seq_rate)
        results[f"ops_ratio_{tag}_c50"] = paired(ours.conc_rate, sdk.conc_rate)
        p99_s, p99_o = out[f"sdk_{tag}_c50_p99_ms"], out[f"ours_{tag}_c50_p99_ms"]
        results[f"p99_ratio_{tag}_c50"] = round(p99_o / p99_s, 3) if p99_s and p99_o else None
    results["cpu_goal"] = CPU_GOAL
    results.update(out)
    results.update(
        {
            "clients": CLIENTS,
            "rounds": cfg["rounds"],
            "slice_s": cfg["slice_s"],
            "quick": quick,
            "sdk_version": dist_version("mcp"),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_avg_start": [round(x, 2) for x in load_start],
            "load_avg_end": [round(x, 2) for x in os.getloadavg()],
            "elapsed_s": round(time.perf_counter() - began, 1),
        }
    )
    print()
    for tag, era in (("legacy", LEGACY), ("2026", V_2026_07_28)):
        cr, crc = results[f"cpu_ratio_{tag}"], results[f"cpu_ratio_{tag}_c50"]
        p99 = results[f"p99_ratio_{tag}_c50"]
        met = cr is not None and crc is not None and min(cr, crc) >= CPU_GOAL
        print(
            f"{era}: server CPU per op SDK / ours = {cr} sequential, {crc} at {CLIENTS} clients "
            f"(goal >= {CPU_GOAL:g}: {'met' if met else 'not met'}); ops/s ours / SDK = "
            f"{results[f'ops_ratio_{tag}']} sequential, {results[f'ops_ratio_{tag}_c50']} at "
            f"{CLIENTS}; p99 at {CLIENTS} clients ours / SDK = {p99} (goal <= 1: "
            f"{'met' if p99 is not None and p99 <= 1 else 'not met'})"
        )
    print(
        f"load average {results['load_avg_start']} -> {results['load_avg_end']} "
        f"on {results['cpus']} CPUs, {results['elapsed_s']} s"
    )
    return results


def start_under_callgrind(tmp: Path, out: Path) -> ServerProc:
    """Our server under callgrind, its instrumentation off until switched on."""
    valgrind = shutil.which("valgrind")
    if valgrind is None or shutil.which("callgrind_control") is None:
        raise BenchError("--instructions needs valgrind (and its callgrind_control)")
    port = free_port()
    env = dict(os.environ, PYTHONHASHSEED="0")
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), str(tmp), env.get("PYTHONPATH", "")) if p
    )
    command = [
        valgrind,
        "--tool=callgrind",
        "--instr-atstart=no",
        f"--callgrind-out-file={out}",
        *our_command(port, None, tmp),
    ]
    proc = subprocess.Popen(
        command, cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return ServerProc("ours", port, proc)


def callgrind_instrument(server: ServerProc, on: bool) -> None:
    command = ["callgrind_control", "-i", "on" if on else "off", str(server.pid)]
    subprocess.run(command, check=True, capture_output=True, timeout=60)


def callgrind_total(out: Path) -> int:
    """The instructions counted, from the files callgrind wrote at exit."""
    total = 0
    for path in out.parent.glob(f"{out.name}*"):
        for line in path.read_text().splitlines():
            if line.startswith(("summary:", "totals:")):
                total = max(total, int(line.split()[1]))
    if not total:
        raise BenchError(f"no instruction count in {out}")
    return total


async def server_instructions(tmp: Path, era: str, ops: int) -> int:
    """Instructions our server executes per op over ``ops`` sequential ops (callgrind)."""
    out = tmp / f"callgrind-{era}.out"
    server = start_under_callgrind(tmp, out)
    try:
        with trio.fail_after(10 * START_TIMEOUT_S):  # start-up under valgrind is slow
            while True:
                try:
                    await wait_listening(server)
                    break
                except trio.TooSlowError:
                    continue
        mode = "legacy" if era == LEGACY else V_2026_07_28
        async with AsyncExitStack() as stack:
            (op,) = await open_clients(stack, server, mode, "ask", 1)
            for _ in range(20):
                await timed(op)
            callgrind_instrument(server, on=True)
            for _ in range(ops):
                await timed(op)
            callgrind_instrument(server, on=False)
    finally:
        stop_server(server)
    return round(callgrind_total(out) / ops)


async def instructions_main(ops: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench_http-") as tmpdir:
        tmp = Path(tmpdir)
        (tmp / "bench_server.py").write_text(OUR_HTTP_MODULE)
        (tmp / "bench_counts.py").write_text(INSTRUMENT_MODULE)  # installed only in profiles
        for era in ERAS:
            tag = "legacy" if era == LEGACY else "2026"
            out[f"ours_{tag}_instructions_per_op"] = n = await server_instructions(tmp, era, ops)
            print(f"ours erlmcp-py serve {era}: {n:,} instructions per op ({ops} ops)", flush=True)
    return {**out, "ops": ops}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter rounds (~30 s)")
    parser.add_argument(
        "--profile",
        type=Path,
        metavar="DIR",
        help="profile our server alone (cProfile + trio counts into DIR) instead",
    )
    parser.add_argument(
        "--instructions",
        type=int,
        metavar="N",
        help="count our server's instructions per op over N sequential ops (valgrind) instead",
    )
    args = parser.parse_args()
    if args.instructions is not None:
        print(json.dumps(trio.run(instructions_main, args.instructions)))
        sys.exit(0)
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
    result = trio.run(main, args.quick, args.profile)
    print(json.dumps(result))
