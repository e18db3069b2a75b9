"""10 000 concurrent Streamable HTTP sessions on one erlmcp-py server process, each with one
pending form elicitation, answered at a steady rate.

The server is a subprocess on 127.0.0.1: ``serve_http`` (as ``erlmcp-py serve --transport
http``, start-up frozen out of the garbage collector's full passes) with ``bench_vs_sdk.py``'s
``ask`` tool (``await ctx.elicit`` of the 3-field ``Person`` form), rate and pending caps
lifted and
``HttpConfig.max_sessions`` raised above the session count (the command's default is 1024).
Log level warning.

The client is this process: a small HTTP/1.1 client on trio sockets and h11 (the SDK's client
costs far too much per session for 10 000 of them). Per session, on one connection:
``initialize`` (2025-11-25), ``notifications/initialized``, then ``tools/call`` of ``ask``,
whose SSE stream carries the ``elicitation/create`` and stays open: the session is now
*pending*. Sessions are opened ``--setup-concurrency`` at a time. Once all are pending, the
server's RSS is read (``/proc/PID/status``), and the answers (``accept`` with the form's
content) are POSTed at a steady ``--rate`` over a small pool of keep-alive connections. For
each answer: answer -> tool result latency (sent to the result event on the session's stream),
and the result is checked. Figures: RSS per pending session (goal <= 64 KiB), latency p50/p99
(goal p99 <= 250 ms at 500 answers/s), errors (goal 0), and per window of the answer phase the
achieved rate and p99, with the server's finished records (retention) growing from 0 to the
session count: the throughput should not fall as retention fills. Also the server CPU per
session set up and per answer (/proc).

    python benchmarks/bench_http_sessions.py [--quick] [--sessions N] [--rate R]

``--quick``: 1 000 sessions at 200 answers/s (~20 s). Loopback only; bounded: every step under
a timeout, the whole run under ``--budget`` seconds; the script raises its own fd limit (soft
to hard) and needs one fd per session in each process. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h11
import trio
from bench_http import ServerProc, free_port, process_cpu_s, stop_server, wait_listening
from bench_vs_sdk import ANSWER, OUR_MODULE, RATE, BenchError

ROOT = Path(__file__).resolve().parent.parent
VERSION = "2025-11-25"
PV = VERSION.encode()
RSS_GOAL_KIB = 64
P99_GOAL_MS = 250.0
STEP_TIMEOUT_S = 60.0
ANSWER_CONNECTIONS = 32
WINDOW_S = 2.0

SERVER_SCRIPT = '''"""erlmcp-py Streamable HTTP server for bench_http_sessions.

argv: port, max sessions, file. Each full (generation 2) garbage collection is appended to the
file as "<wall-clock end> <seconds>"; on SIGUSR1, the count of objects the collector tracks is
appended to "<file>.tracked"."""
import gc
import signal
import sys
import time

import trio

from bench_server import build
from erlmcp_py import RuntimeConfig
from erlmcp_py.logging import configure_logging
from erlmcp_py.transports.http import HttpConfig, PrincipalLimits, serve_http

_started = [0.0]


def _on_gc(phase, info):
    if info["generation"] != 2:
        return
    if phase == "start":
        _started[0] = time.perf_counter()
    else:
        with open(sys.argv[3], "a") as f:
            f.write(f"{{time.time()}} {{time.perf_counter() - _started[0]}}\\n")


gc.callbacks.append(_on_gc)


def _count_tracked(signum, frame):
    with open(sys.argv[3] + ".tracked", "a") as f:
        f.write(f"{{len(gc.get_objects())}}\\n")


signal.signal(signal.SIGUSR1, _count_tracked)
configure_logging("json", "warning")
server = build(RuntimeConfig(rate={rate}))
# every client is on 127.0.0.1, one principal: its caps are the session count too
n = int(sys.argv[2])
config = HttpConfig(
    max_sessions=n, limits=PrincipalLimits(sessions=n, requests=n + 64, suspended=n)
)


async def main() -> None:
    async with trio.open_nursery() as nursery:
        port = int(sys.argv[1])
        await nursery.start(lambda task_status: serve_http(
            server, host="127.0.0.1", port=port, config=config, task_status=task_status
        ))
        # as ``erlmcp-py serve``: what start-up made is frozen out of the full collections
        gc.collect()
        gc.freeze()


trio.run(main)
'''


async def tracked_objects(pid: int, tmp: Path, nth: int) -> int:
    """The server's count of objects the garbage collector tracks (its ``nth`` report)."""
    os.kill(pid, signal.SIGUSR1)
    path = tmp / "gc.log.tracked"
    with trio.fail_after(STEP_TIMEOUT_S):
        while True:  # the signal handler writes it between two bytecodes of the server
            await trio.sleep(0.05)
            if path.exists() and len(path.read_text().split()) >= nth:
                break
    return int(path.read_text().split()[nth - 1])


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


# -- a small HTTP/1.1 client ---------------------------------------------------------------------


class Conn:
    """One keep-alive HTTP/1.1 connection (h11), one request at a time."""

    def __init__(self, stream: trio.SocketStream, port: int) -> None:
        self.stream = stream
        self.h = h11.Connection(h11.CLIENT)
        self.host = f"127.0.0.1:{port}".encode()

    @classmethod
    async def open(cls, port: int) -> Conn:
        return cls(await trio.open_tcp_stream("127.0.0.1", port), port)

    async def _next(self) -> Any:
        while True:
            event = self.h.next_event()
            if event is not h11.NEED_DATA:
                return event
            data = await self.stream.receive_some(65536)
            self.h.receive_data(data)

    async def request(self, body: dict[str, Any], session: str | None) -> h11.Response:
        """Send one POST; return its response head (read the body with ``data``)."""
        if self.h.our_state is h11.DONE and self.h.their_state is h11.DONE:
            self.h.start_next_cycle()
        raw = json.dumps(body).encode()
        headers = [
            (b"host", self.host),
            (b"content-type", b"application/json"),
            (b"accept", b"application/json, text/event-stream"),
            (b"content-length", str(len(raw)).encode()),
        ]
        if session is not None:
            headers += [(b"mcp-session-id", session.encode()), (b"mcp-protocol-version", PV)]
        out = self.h.send(h11.Request(method="POST", target="/mcp", headers=headers))
        out += self.h.send(h11.Data(data=raw)) + self.h.send(h11.EndOfMessage())
        await self.stream.send_all(out)
        event = await self._next()
        if not isinstance(event, h11.Response):
            raise BenchError(f"expected a response, got {event!r}")
        return event

    async def body(self) -> bytes:
        """The rest of the current response's body."""
        chunks = []
        while True:
            event = await self._next()
            if isinstance(event, h11.Data):
                chunks.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                return b"".join(chunks)
            else:
                raise BenchError(f"unexpected {event!r}")

    async def sse_events(self) -> Any:
        """Yield each SSE event's data (parsed JSON) of the current response."""
        buffer = b""
        while True:
            event = await self._next()
            if isinstance(event, h11.EndOfMessage):
                return
            if not isinstance(event, h11.Data):
                raise BenchError(f"unexpected {event!r}")
            buffer += bytes(event.data)
            while b"\n\n" in buffer:
                block, buffer = buffer.split(b"\n\n", 1)
                for line in block.split(b"\n"):
                    if line.startswith(b"data:"):
                        yield json.loads(line[5:])

    async def aclose(self) -> None:
        await self.stream.aclose()


def header(response: h11.Response, name: bytes) -> str | None:
    for key, value in response.headers:
        if key == name:
            return value.decode()
    return None


# -- the load -------------------------------------------------------------------------------------


@dataclass
class Run:
    """Shared state of one run."""

    port: int
    n: int
    pending: list[tuple[str, Any] | None] = field(default_factory=list)  # (session, elicit id)
    all_pending: trio.Event = field(default_factory=trio.Event)
    n_pending: int = 0
    sent_at: dict[int, float] = field(default_factory=dict)
    answered: list[trio.Event] = field(default_factory=list)
    done_at: list[tuple[float, float]] = field(default_factory=list)  # (time, latency)
    errors: list[str] = field(default_factory=list)


def check(ok: bool, what: str) -> None:
    if not ok:
        raise BenchError(what)


async def open_pending(run: Run, i: int) -> tuple[Conn, Any]:
    """Open session ``i`` up to its pending elicitation; its connection and SSE events."""
    conn = await Conn.open(run.port)
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": VERSION,
            "capabilities": {"elicitation": {"form": {}}},
            "clientInfo": {"name": "bench", "version": "1"},
        },
    }
    head = await conn.request(init, None)
    await conn.body()
    session = header(head, b"mcp-session-id")
    check(head.status_code == 200 and session is not None, f"initialize: {head.status_code}")
    assert session is not None
    head = await conn.request({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    await conn.body()
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask"}}
    head = await conn.request(call, session)
    check(head.status_code == 200, f"tools/call: {head.status_code}")
    events = conn.sse_events()
    first = await events.__anext__()
    check(first.get("method") == "elicitation/create", f"not an elicitation: {first!r}")
    run.pending[i] = (session, first["id"])
    return conn, events


async def wait_result(run: Run, i: int, events: Any) -> None:
    """After the answer: read the session's stream up to the tool result and check it."""
    async for message in events:
        if message.get("id") == 1:
            now = time.perf_counter()
            text = message.get("result", {}).get("content", [{}])[0].get("text")
            check(text == "Ada", f"result {message!r}")
            run.done_at.append((now, now - run.sent_at[i]))
            return
    raise BenchError("the stream ended without the result")


async def one_session(run: Run, i: int, limiter: trio.CapacityLimiter) -> None:
    try:
        async with limiter:
            with trio.fail_after(STEP_TIMEOUT_S):
                conn, events = await open_pending(run, i)
        run.n_pending += 1
        if run.n_pending == run.n:
            run.all_pending.set()
        await run.answered[i].wait()
        with trio.fail_after(STEP_TIMEOUT_S):
            await wait_result(run, i, events)
        await conn.aclose()
    except (BenchError, OSError, trio.TooSlowError, h11.ProtocolError, StopAsyncIteration) as exc:
        run.errors.append(f"session {i}: {type(exc).__name__}: {str(exc)[:120]}")
        if run.pending[i] is None:  # a failed setup still settles
            run.n_pending += 1
            if run.n_pending == run.n:
                run.all_pending.set()


async def answer(run: Run, i: int, pool: trio.MemoryReceiveChannel[Conn], back: Any) -> None:
    conn = await pool.receive()
    try:
        entry = run.pending[i]
        if entry is None:
            return
        session, elicit_id = entry
        message = {
            "jsonrpc": "2.0",
            "id": elicit_id,
            "result": {"action": "accept", "content": dict(ANSWER)},
        }
        run.sent_at[i] = time.perf_counter()
        run.answered[i].set()
        with trio.fail_after(STEP_TIMEOUT_S):
            head = await conn.request(message, session)
            await conn.body()
        if head.status_code != 202:
            run.errors.append(f"answer {i}: HTTP {head.status_code}")
    except (OSError, trio.TooSlowError, h11.ProtocolError, BenchError) as exc:
        run.errors.append(f"answer {i}: {type(exc).__name__}: {str(exc)[:120]}")
        conn = await Conn.open(run.port)
    finally:
        back.send_nowait(conn)


def windows(run: Run, start: float) -> list[dict[str, Any]]:
    """Per ``WINDOW_S`` of the answer phase: results/s, p99 and records finished so far."""
    out: list[dict[str, Any]] = []
    if not run.done_at:
        return out
    done = sorted(run.done_at)
    end = done[-1][0]
    t, k = start, 0
    while t < end:
        lat = [lat for when, lat in done if t <= when < t + WINDOW_S]
        k += len(lat)
        if lat:
            lat.sort()
            out.append(
                {
                    "t_s": round(t - start, 1),
                    "results_per_s": round(len(lat) / WINDOW_S),
                    "p99_ms": round(lat[min(len(lat) - 1, int(0.99 * len(lat)))] * 1e3, 1),
                    "finished_records": k,
                }
            )
        t += WINDOW_S
    return out


def spawn(tmp: Path, port: int, n: int, env: dict[str, str]) -> ServerProc:
    gc_log = str(tmp / "gc.log")
    command = [sys.executable, str(tmp / "server.py"), str(port), str(n + 100), gc_log]
    proc = subprocess.Popen(
        command, cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return ServerProc("ours", port, proc)


async def main(n: int, rate: float, setup_concurrency: int, budget: float) -> dict[str, Any]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # the server inherits it
    if hard < n + 512:
        raise SystemExit(f"{n} sessions need {n + 512} file descriptors; the hard limit is {hard}")
    began = time.perf_counter()
    load_start = os.getloadavg()
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench_http_sessions-") as tmpdir:
        tmp = Path(tmpdir)
        (tmp / "bench_server.py").write_text(OUR_MODULE)
        (tmp / "server.py").write_text(SERVER_SCRIPT.format(rate=RATE))
        port = free_port()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(ROOT), str(tmp), env.get("PYTHONPATH", "")) if p
        )
        server = spawn(tmp, port, n, env)
        run = Run(port, n, [None] * n, answered=[trio.Event() for _ in range(n)])
        try:
            with trio.fail_after(budget):
                await wait_listening(server)
                await trio.sleep(0.5)
                rss0 = rss_kib(server.pid)
                tracked0 = await tracked_objects(server.pid, tmp, 1)
                cpu0 = process_cpu_s(server.pid)
                t0 = time.perf_counter()
                limiter = trio.CapacityLimiter(setup_concurrency)
                async with trio.open_nursery() as nursery:
                    for i in range(n):
                        nursery.start_soon(one_session, run, i, limiter)
                    await run.all_pending.wait()
                    setup_s = time.perf_counter() - t0
                    cpu1 = process_cpu_s(server.pid)
                    await trio.sleep(1.0)
                    rss1 = rss_kib(server.pid)
                    tracked1 = await tracked_objects(server.pid, tmp, 2)
                    print(
                        f"{n} sessions pending after {setup_s:.1f} s "
                        f"({len(run.errors)} errors); server RSS {rss0 / 1024:.0f} -> "
                        f"{rss1 / 1024:.0f} MiB",
                        flush=True,
                    )
                    send, pool = trio.open_memory_channel[Conn](ANSWER_CONNECTIONS)
                    for _ in range(ANSWER_CONNECTIONS):
                        send.send_nowait(await Conn.open(port))
                    start = time.perf_counter()
                    wall1 = time.time()
                    own1 = time.process_time()
                    async with trio.open_nursery() as answers:
                        for i in range(n):
                            due = start + i / rate
                            delay = due - time.perf_counter()
                            await trio.sleep(max(0.0, delay))
                            answers.start_soon(answer, run, i, pool, send)
                    send_s = time.perf_counter() - start
                # every session task has ended: results are in
                cpu2 = process_cpu_s(server.pid)
                own2 = time.process_time()
                wall2 = time.time()
                rss2 = rss_kib(server.pid)
                answer_s = (max(t for t, _ in run.done_at) - start) if run.done_at else None
        finally:
            stop_server(server)
        gc_file = tmp / "gc.log"
        gcs = [
            tuple(map(float, line.split()))
            for line in (gc_file.read_text().splitlines() if gc_file.exists() else [])
        ]

    answering = [pause for when, pause in gcs if wall1 <= when <= wall2 + 1]
    lat = sorted(latency for _, latency in run.done_at)

    def pct(q: float) -> float | None:
        return round(lat[min(len(lat) - 1, int(q * len(lat)))] * 1e3, 1) if lat else None

    per = windows(run, start)
    rss_per = (rss1 - rss0) * 1024 / n
    out.update(
        {
            "sessions": n,
            "rate_target": rate,
            "setup_s": round(setup_s, 1),
            "server_rss_mib_start": round(rss0 / 1024, 1),
            "server_rss_mib_pending": round(rss1 / 1024, 1),
            "server_rss_mib_end": round(rss2 / 1024, 1),
            "rss_bytes_per_pending_session": round(rss_per),
            "rss_goal_bytes": RSS_GOAL_KIB * 1024,
            "server_tracked_objects_start": tracked0,
            "server_tracked_objects_per_pending_session": round((tracked1 - tracked0) / n, 1),
            "answer_send_s": round(send_s, 1),
            "results": len(lat),
            "results_per_s": round(len(lat) / answer_s) if answer_s else None,
            "latency_p50_ms": pct(0.5),
            "latency_p99_ms": pct(0.99),
            "latency_max_ms": pct(1.0),
            "p99_goal_ms": P99_GOAL_MS,
            "errors": len(run.errors),
            "error_samples": run.errors[:5],
            "server_full_gcs_answer_phase": len(answering),
            "server_full_gc_s_answer_phase": round(sum(answering), 2),
            "server_longest_full_gc_ms": round(max((p for _, p in gcs), default=0) * 1e3, 1),
            "server_full_gcs_total": len(gcs),
            "server_cpu_ms_per_setup": round((cpu1 - cpu0) / n * 1e3, 3),
            "server_cpu_ms_per_answer": round((cpu2 - cpu1) / n * 1e3, 3),
            "client_cpu_ms_per_answer": round((own2 - own1) / n * 1e3, 3),
            # cores busy during the answer phase: 1.0 = one core saturated
            "server_cores_answer_phase": round((cpu2 - cpu1) / answer_s, 2) if answer_s else None,
            "client_cores_answer_phase": round((own2 - own1) / answer_s, 2) if answer_s else None,
            "windows": per,
            "first_window_results_per_s": per[0]["results_per_s"] if per else None,
            "last_full_window_results_per_s": per[-2]["results_per_s"] if len(per) > 1 else None,
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "fd_limit": [soft, hard],
            "load_avg_start": [round(x, 2) for x in load_start],
            "load_avg_end": [round(x, 2) for x in os.getloadavg()],
            "elapsed_s": round(time.perf_counter() - began, 1),
        }
    )
    print(
        f"RSS per pending session {rss_per / 1024:.1f} KiB (goal <= {RSS_GOAL_KIB} KiB: "
        f"{'met' if rss_per <= RSS_GOAL_KIB * 1024 else 'not met'}); objects tracked by the "
        f"garbage collector: {tracked0} at start (frozen start-up not counted), "
        f"{out['server_tracked_objects_per_pending_session']} per pending session"
    )
    print(
        f"answers at {rate:g}/s: {len(lat)} results, {out['results_per_s']}/s, p50 "
        f"{out['latency_p50_ms']} ms, p99 {out['latency_p99_ms']} ms (goal <= {P99_GOAL_MS:g}: "
        f"{'met' if lat and (out['latency_p99_ms'] or 0) <= P99_GOAL_MS else 'not met'}), "
        f"errors {len(run.errors)} (goal 0)"
    )
    print(
        f"server full garbage collections: {len(gcs)} in all, the longest "
        f"{out['server_longest_full_gc_ms']} ms; while answering {len(answering)}, "
        f"{out['server_full_gc_s_answer_phase']} s in all"
    )
    print("per window (results/s, p99 ms, finished records):")
    for w in per:
        t, r, p99, k = w["t_s"], w["results_per_s"], w["p99_ms"], w["finished_records"]
        print(f"  t={t:>5} s  {r:>5}/s  p99 {p99:>7} ms  {k} finished")
    print(
        f"server CPU per session set up {out['server_cpu_ms_per_setup']} ms, per answer "
        f"{out['server_cpu_ms_per_answer']} ms (client {out['client_cpu_ms_per_answer']} ms); "
        f"cores busy while answering: server {out['server_cores_answer_phase']}, client "
        f"{out['client_cores_answer_phase']}; load average {out['load_avg_start']} -> "
        f"{out['load_avg_end']}"
    )
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 000 sessions at 200/s")
    parser.add_argument("--sessions", type=int, default=None)
    parser.add_argument("--rate", type=float, default=None, help="answers per second")
    parser.add_argument("--setup-concurrency", type=int, default=50)
    parser.add_argument("--budget", type=float, default=600.0, help="seconds, the whole run")
    args = parser.parse_args()
    n = args.sessions or (1000 if args.quick else 10_000)
    rate = args.rate or (200.0 if args.quick else 500.0)
    result = trio.run(main, n, rate, args.setup_concurrency, args.budget)
    print(json.dumps(result))
