"""The shared store's added latency per elicitation: the in-memory store against Redis, in
the same run.

One op = one elicitation's whole life, as ``bench_lifecycle.py`` measures it
(``Runtime.ask``: admission by the rate limiter through the store, the child sends to a
:class:`~erlmcp_py.testing.MemoryPeer` that answers at once, validation, the outcome, the
release), on two runtimes opened side by side: one on the embedded in-memory store, one on a
``redis-server`` this script starts on a free loopback port (no persistence). On Redis an
op adds the admission script's round trip to the op and, in the background, the release and
the publication of the record (a second replica could read it at once). Each round times
``n`` ops on both, back to back, in alternating order; figures are medians of the
per-round values.

Also reported: ``in_flight_16`` (16 ops at a time), and ``remote_status_ms``: one
``get_elicitation_status`` answered from the store for an id another runtime holds.

Keys: ``memory_ms`` / ``redis_ms`` (one op), ``ratio`` (redis / memory, per round),
``added_ms`` (redis - memory), and the same for 16 in flight (per op, so the throughput is
``1000 / ms``).

    python benchmarks/bench_store.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from typing import Any

import trio
from _baseline import quiet_logs

from erlmcp_py import Accepted, ElicitationRequest, Runtime, Tenant, open_runtime
from erlmcp_py.core.schema import RequestedSchema
from erlmcp_py.testing import MemoryPeer, SentRequest

SCHEMA: Mapping[str, Any] = RequestedSchema(
    {"type": "object", "properties": {"region": {"type": "string"}}, "required": ["region"]}
)
ANSWER: Mapping[str, Any] = {"action": "accept", "content": {"region": "eu"}}
CONFIG = {"rate": 10**6, "max_pending_per_client": 10**9}  # no refusal in the run
TENANT = Tenant("bench")


def answer(_request: SentRequest) -> Mapping[str, Any]:
    return ANSWER


async def one_op(runtime: Runtime, peer: MemoryPeer) -> None:
    request = ElicitationRequest("Region?", requested_schema=SCHEMA)
    outcome = await runtime.ask(request, peer=peer, tenant=TENANT)
    if not isinstance(outcome, Accepted):
        raise TypeError(f"unexpected {outcome!r}")


async def timed(runtime: Runtime, n: int, concurrency: int) -> float:
    """Milliseconds per op, ``n`` ops, ``concurrency`` at a time."""
    peer = MemoryPeer(peer_id=f"client-{concurrency}", auto=answer)
    start = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for _ in range(concurrency):

            async def worker() -> None:
                for _ in range(n // concurrency):
                    await one_op(runtime, peer)

            nursery.start_soon(worker)
    return (time.perf_counter() - start) / (n // concurrency * concurrency) * 1000


def start_redis(directory: str) -> tuple[subprocess.Popen[bytes], int]:
    """A ``redis-server`` without persistence on a free loopback port, keeping its files in
    ``directory``; the process and its port once it accepts connections."""
    executable = shutil.which("redis-server")
    if executable is None:
        sys.exit("needs redis-server (Debian package redis-server)")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [
            executable,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            directory,
        ],
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return process, port
        except OSError:
            time.sleep(0.02)
    raise RuntimeError("redis-server did not start")


async def main(rounds: int, n: int, port: int) -> dict[str, Any]:
    quiet_logs()
    url = f"redis://127.0.0.1:{port}/0?prefix=bench"
    out: dict[str, Any] = {"rounds": rounds, "ops_per_round": n}
    async with (
        open_runtime(CONFIG) as memory,
        open_runtime({**CONFIG, "store": url}) as redis,
        open_runtime({**CONFIG, "store": url}) as other,
    ):
        runtimes = {"memory": memory, "redis": redis}
        for concurrency in (1, 16):
            for runtime in runtimes.values():  # warm-up
                await timed(runtime, 50, concurrency)
            times: dict[str, list[float]] = {"memory": [], "redis": []}
            ratios = []
            for r in range(rounds):
                order = ("memory", "redis") if r % 2 == 0 else ("redis", "memory")
                this = {name: await timed(runtimes[name], n, concurrency) for name in order}
                for name, ms in this.items():
                    times[name].append(ms)
                ratios.append(this["redis"] / this["memory"])
            mem, red = statistics.median(times["memory"]), statistics.median(times["redis"])
            out["sequential" if concurrency == 1 else "in_flight_16"] = {
                "memory_ms": round(mem, 4),
                "redis_ms": round(red, 4),
                "ratio": round(statistics.median(ratios), 2),
                "added_ms": round(red - mem, 4),
            }
        held = await redis.create_elicitation(
            ElicitationRequest("Region?", requested_schema=SCHEMA),
            peer=MemoryPeer(peer_id="held"),
            tenant=TENANT,
        )
        with trio.fail_after(5):
            while True:  # published in the background
                try:
                    await other.get_elicitation_status(held.id, tenant=TENANT)
                    break
                except Exception:
                    await trio.sleep(0.01)
        reads = []
        for _ in range(rounds):
            start = time.perf_counter()
            for _ in range(n):
                await other.get_elicitation_status(held.id, tenant=TENANT)
            reads.append((time.perf_counter() - start) / n * 1000)
        out["remote_status_ms"] = round(statistics.median(reads), 4)
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few seconds, rough figures")
    args = parser.parse_args()
    rounds, n = (3, 200) if args.quick else (15, 1000)
    with tempfile.TemporaryDirectory(prefix="bench-store-") as directory:
        server, redis_port = start_redis(directory)
        try:
            figures = trio.run(main, rounds, n, redis_port)
        finally:
            server.kill()
            server.wait()
    for key in ("sequential", "in_flight_16"):
        f = figures[key]
        print(
            f"{key}: memory {f['memory_ms']:.3f} ms/op, redis {f['redis_ms']:.3f} ms/op, "
            f"ratio {f['ratio']:.2f}, added {f['added_ms']:.3f} ms per elicitation"
        )
    print(f"remote status (store read): {figures['remote_status_ms']:.3f} ms")
    json.dump(figures, sys.stdout)
    print()
