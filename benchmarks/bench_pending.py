"""100 000 concurrent pending elicitations: memory per elicitation and create latency growth.

A :class:`~erlmcp_py.testing.MemoryPeer` that never answers, a few owner tasks that outlive
the run, long deadlines, huge rate limits. Elicitations are created one after another; each
is left pending (its child task sent the request and parked).

Two passes over fresh runtimes in one process:

1. timing + RSS (no tracing): the latency of every ``create_elicitation``; p99 over the first
   1 000 (``create_p99_us_1k``) and over the last 1 000, at ~n pending
   (``create_p99_us_100k``); ``p99_growth`` is the second / the first (goal <= 2). The RSS
   delta once all are pending, per elicitation.
2. tracemalloc: the traced-memory delta per elicitation, and the top allocators (source
   lines) for the human lines.

3. finished (``--finished N``, default 10 000; 0 skips it): N elicitations asked and answered
   one after another (accepted, valid), each waiter dropping its handle as a tool that
   returned does; what the runtime still holds of them once every child task is done, while
   the retention keeps them: traced bytes and objects the garbage collector tracks, per
   finished elicitation (``finished_bytes_per_elicitation``,
   ``finished_gc_objects_per_elicitation``).

``bytes_per_elicitation`` is the larger of the two deltas (goal <= 4096). It includes the
MemoryPeer's own bookkeeping of each request (a real session also keeps a correlation per
outstanding request); ``peer_bytes_per_elicitation`` says how much of it that is.

The tracemalloc pass traces ``traced_n`` (default: min(n, 10 000); 3 000 with ``--quick``)
because tracing slows every create ~4x. ``--detail N`` adds a pass over N elicitations with
deep tracebacks that charges every live byte to the innermost runtime source line on its
stack (slow: use N ~ 3 000).

Human-readable lines first; the last line is one JSON object. ``--quick``: n = 15 000.

    python benchmarks/bench_pending.py [--quick] [--n N] [--traced-n N] [--owners K] [--detail N]
        [--finished N]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import linecache
import logging
import math
import os
import statistics
import time
import tracemalloc
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import structlog
import trio
import trio.testing

from erlmcp_py import (
    ElicitationHandle,
    ElicitationNotFound,
    ElicitationRequest,
    Runtime,
    RuntimeConfig,
    Tenant,
    open_runtime,
)
from erlmcp_py.core.schema import RequestedSchema
from erlmcp_py.testing import MemoryPeer

ROOT = Path(__file__).resolve().parent.parent

SCHEMA: Mapping[str, Any] = RequestedSchema(
    {
        "type": "object",
        "properties": {
            "region": {"type": "string", "enum": ["eu", "us"]},
            "n": {"type": "integer"},
        },
        "required": ["region"],
    }
)
REQUEST = ElicitationRequest("Pick a region for the deployment", requested_schema=SCHEMA)
CONFIG = RuntimeConfig.model_validate(
    {
        "rate": 10**9,
        "max_pending_per_client": 10**9,
        "form_deadline_s": 86_400.0,
        "warn_before_s": 0.0,
    }
)
TENANTS = [Tenant(f"user{k}", "ws", "conv") for k in range(4)]


def rss_bytes() -> int:
    """Current resident set size (Linux ``/proc/self/statm``)."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")


def p99(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=100, method="inclusive")[98]


async def with_pending(
    n: int,
    owners: int,
    on_filled: Any,
    latencies: list[float] | None = None,
    close_pending: bool = False,
) -> dict[str, Any]:
    """Open a runtime, create ``n`` pending elicitations, call ``on_filled()``, then end them:
    the owners exit (every elicitation is abandoned) and the runtime closes, or with
    ``close_pending`` the runtime closes with all of them still pending."""
    out: dict[str, Any] = {}
    scopes = [trio.CancelScope() for _ in range(owners)]
    async with trio.open_nursery() as nursery:
        owner_tasks: list[trio.lowlevel.Task] = []

        async def owner(
            scope: trio.CancelScope, task_status: trio.TaskStatus[trio.lowlevel.Task]
        ) -> None:
            with scope:
                task_status.started(trio.lowlevel.current_task())
                await trio.sleep_forever()

        for scope in scopes:
            owner_tasks.append(await nursery.start(owner, scope))
        perf = time.perf_counter
        async with open_runtime(CONFIG) as runtime:
            peer = MemoryPeer(peer_id="silent")  # never answers
            handles: list[ElicitationHandle] = []
            await warm_up(runtime, peer)
            await settle()
            before = on_filled("before")
            for i in range(n):
                start = perf()
                handle = await runtime.create_elicitation(
                    REQUEST, peer=peer, tenant=TENANTS[i & 3], owner=owner_tasks[i % owners]
                )
                if latencies is not None:
                    latencies.append(perf() - start)
                handles.append(handle)
            await settle()
            check(runtime, peer, n)
            out = on_filled("after", before)
            if not close_pending:
                started = perf()
                for scope in scopes:
                    scope.cancel()  # every owner exits: n elicitations abandoned at once
                while runtime.metrics()["pending"]:  # noqa: ASYNC110 (a gauge, no event)
                    await trio.sleep(0.01)
                await settle()  # and every child task has sent its notice and exited
                out["abandon_s"] = round(perf() - started, 2)
            started = perf()
        out["close_s"] = round(perf() - started, 2)
        assert all(h.outcome_nowait() is not None for h in handles)  # nobody left hanging
        out["peer_requests_left"] = len(peer.pending)  # correlations the runtime never dropped
        nursery.cancel_scope.cancel()
    return out


async def warm_up(runtime: Runtime, peer: MemoryPeer, count: int = 1000) -> None:
    """Run every code path once before measuring: ``count`` elicitations, then abandoned."""
    scope = trio.CancelScope()

    async def owner(task_status: trio.TaskStatus[trio.lowlevel.Task]) -> None:
        with scope:
            task_status.started(trio.lowlevel.current_task())
            await trio.sleep_forever()

    async with trio.open_nursery() as nursery:
        task = await nursery.start(owner)
        for _ in range(count):
            await runtime.create_elicitation(REQUEST, peer=peer, tenant=TENANTS[0], owner=task)
        await settle()
        scope.cancel()
    await settle()
    assert runtime.metrics()["pending"] == 0


async def settle() -> None:
    """Until every child task has sent its request and parked."""
    await trio.testing.wait_all_tasks_blocked(cushion=0.01)


def check(runtime: Runtime, peer: MemoryPeer, n: int) -> None:
    metrics = runtime.metrics()
    assert metrics["pending"] == n, metrics
    assert len(peer.pending) == n, len(peer.pending)


async def timing_pass(n: int, owners: int, close_pending: bool) -> dict[str, Any]:
    latencies: list[float] = []

    pauses: list[tuple[int, float]] = []
    clock = {"gc": 0.0, "fill": 0.0}
    recording = [False]  # only the collections the create loop triggers, not ours

    def measure(phase: str, before: int | None = None) -> Any:
        recording[0] = False
        gc.collect()
        if phase == "before":
            rss = rss_bytes()
            recording[0] = True
            clock["fill"] = time.perf_counter()
            return rss
        assert before is not None
        return {
            "rss_delta": rss_bytes() - before,
            "create_loop_s": round(time.perf_counter() - clock["fill"], 2),
        }

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            clock["gc"] = time.perf_counter()
        elif recording[0]:
            pauses.append((info["generation"], time.perf_counter() - clock["gc"]))

    started = time.perf_counter()
    gc.callbacks.append(on_gc)
    try:
        out = await with_pending(n, owners, measure, latencies, close_pending)
    finally:
        gc.callbacks.remove(on_gc)
    out["pass_s"] = round(time.perf_counter() - started, 2)
    full = [d for g, d in pauses if g == 2]
    out["gc_full_collections"] = len(full)
    out["gc_full_max_ms"] = round(max(full, default=0.0) * 1e3, 1)
    out["create_max_us"] = round(max(latencies) * 1e6)
    k = min(1000, n // 10)
    out["p99_first"] = p99(latencies[:k]) * 1e6
    out["p99_last"] = p99(latencies[-k:]) * 1e6
    out["p50_first"] = statistics.median(latencies[:k]) * 1e6
    out["p50_last"] = statistics.median(latencies[-k:]) * 1e6
    out["k"] = k
    return out


def _where(filename: str, lineno: int | None = None) -> str:
    name = filename.split("/site-packages/")[-1].replace(str(ROOT) + "/", "")
    return name if lineno is None else f"{name}:{lineno}"


async def tracemalloc_pass(n: int, owners: int, top: int) -> dict[str, Any]:
    """Traced-memory delta of ``n`` pending elicitations; top allocating source lines."""

    def measure(phase: str, before: Any = None) -> Any:
        gc.collect()
        if phase == "before":
            tracemalloc.start(1)
            return tracemalloc.take_snapshot()
        snapshot = tracemalloc.take_snapshot()
        tracemalloc.stop()
        stats = snapshot.compare_to(before, "lineno")
        by_file: Counter[str] = Counter()
        for stat in stats:
            by_file[_where(stat.traceback[0].filename)] += stat.size_diff
        return {
            "traced_delta": sum(stat.size_diff for stat in stats),
            "peer_bytes": by_file["erlmcp_py/testing.py"],
            "top_lines": [
                (stat.size_diff / n, stat.count_diff / n, _where(fr.filename, fr.lineno))
                for stat in stats[:top]
                for fr in [stat.traceback[0]]
            ],
            "by_file": [(name, size / n) for name, size in by_file.most_common(top)],
        }

    return await with_pending(n, owners, measure)


async def detail_pass(n: int, owners: int, top: int) -> list[tuple[float, float, str]]:
    """Live memory per pending elicitation, charged to the innermost runtime source line
    (``erlmcp_py/`` or ``supervisors/``) on each allocation's stack. Slow: deep tracebacks."""
    rows: list[tuple[float, float, str]] = []

    def measure(phase: str, before: Any = None) -> Any:
        gc.collect()
        if phase == "before":
            tracemalloc.start(32)
            return tracemalloc.take_snapshot()
        snapshot = tracemalloc.take_snapshot()
        tracemalloc.stop()
        size: Counter[str] = Counter()
        count: Counter[str] = Counter()
        runtime_dirs = (str(ROOT / "erlmcp_py"), str(ROOT / "supervisors"))
        for stat in snapshot.compare_to(before, "traceback"):
            frames = list(stat.traceback)  # oldest first
            mine = [fr for fr in frames if fr.filename.startswith(runtime_dirs)]
            fr = mine[-1] if mine else frames[-1]
            code = linecache.getline(fr.filename, fr.lineno).strip()[:60]
            key = f"{_where(fr.filename, fr.lineno)}  {code}"
            size[key] += stat.size_diff
            count[key] += stat.count_diff
        rows.extend((size[k] / n, count[k] / n, k) for k, _ in size.most_common(top))
        return {}

    await with_pending(n, owners, measure)
    return rows


class AnsweringPeer:
    """A client whose requests the benchmark answers from its own task, keeping nothing once
    a request is answered or forgotten."""

    peer_id = "answering"
    protocol_version = "2025-11-25"

    def __init__(self) -> None:
        self.pending: dict[str, Any] = {}
        self._arrived, self.arrivals = trio.open_memory_channel[str](math.inf)

    def supports(self, mode: str) -> bool:
        return mode == "form"

    async def send_request(
        self, method: str, params: Mapping[str, Any], *, request_id: str, on_response: Any
    ) -> None:
        await trio.lowlevel.checkpoint()
        self.pending[request_id] = on_response
        self._arrived.send_nowait(request_id)

    def forget_request(self, request_id: str) -> None:
        self.pending.pop(request_id, None)

    async def send_notification(self, method: str, params: Mapping[str, Any]) -> None:
        await trio.lowlevel.checkpoint()

    def answer(self, request_id: str, response: Mapping[str, Any]) -> None:
        on_response = self.pending.pop(request_id, None)
        if on_response is not None:
            on_response(response)


async def finished_pass(n: int) -> dict[str, Any]:
    """What the runtime keeps of ``n`` answered elicitations once their children are done."""
    config = RuntimeConfig.model_validate(
        {**CONFIG.model_dump(), "retention_max_records": max(n, 1)}
    )
    async with open_runtime(config) as runtime:

        async def ask_and_answer(i: int) -> None:
            # A session of its own, and a question made for this call, as a tool's
            # ``ctx.elicit`` makes it; both dropped with the handle once answered.
            peer = AnsweringPeer()
            request = ElicitationRequest(
                f"Pick a region for deployment {i}", requested_schema=SCHEMA
            )
            handle = await runtime.create_elicitation(request, peer=peer, tenant=TENANTS[i & 3])
            request_id = await peer.arrivals.receive()
            peer.answer(request_id, {"action": "accept", "content": {"region": "eu", "n": 3}})
            assert type(await handle.outcome()).__name__ == "Accepted"
            assert not peer.pending

        async def serve_one_call() -> None:
            """The actors have served a call since: the last message they hold is not ours."""
            with contextlib.suppress(ElicitationNotFound):
                await runtime.get_elicitation_status("unknown", tenant=TENANTS[0])

        for i in range(1000):  # every code path once
            await ask_and_answer(i)
        await settle()
        await serve_one_call()
        gc.collect()
        objects_before = len(gc.get_objects())
        tracemalloc.start(1)
        before = tracemalloc.take_snapshot()
        started = time.perf_counter()
        for i in range(n):
            await ask_and_answer(i)
        elapsed = time.perf_counter() - started
        await settle()
        await serve_one_call()
        gc.collect()
        after = tracemalloc.take_snapshot()
        tracemalloc.stop()
        objects_after = len(gc.get_objects())
        assert runtime.metrics()["pending"] == 0
        stats = after.compare_to(before, "lineno")
        return {
            "n": n,
            "ask_answer_s": round(elapsed, 2),
            "bytes_per": sum(stat.size_diff for stat in stats) / n,
            "gc_objects_per": (objects_after - objects_before) / n,
            "top_lines": [
                (stat.size_diff / n, stat.count_diff / n, _where(fr.filename, fr.lineno))
                for stat in stats[:8]
                for fr in [stat.traceback[0]]
            ],
        }


async def main(
    n: int,
    traced_n: int,
    owners: int,
    top: int,
    detail: int,
    close_pending: bool,
    finished: int,
) -> dict[str, Any]:
    timing = await timing_pass(n, owners, close_pending)
    traced = await tracemalloc_pass(traced_n, owners, top)
    rss_per = timing["rss_delta"] / n
    traced_per = traced["traced_delta"] / traced_n
    print(
        f"{n:,} pending elicitations ({owners} owners): created in {timing['create_loop_s']} s; "
        + (
            f"closing the runtime with all of them pending took {timing['close_s']} s "
            f"({timing['peer_requests_left']:,} requests left correlated at the peer)"
            if close_pending
            else f"the owners exit: all abandoned in {timing['abandon_s']} s; "
            f"closing took {timing['close_s']} s"
        )
    )
    print(
        f"memory per pending elicitation: tracemalloc {traced_per:,.0f} B (at {traced_n:,}), "
        f"RSS {rss_per:,.0f} B (at {n:,}) (goal <= 4096); of which the MemoryPeer's own "
        f"bookkeeping {traced['peer_bytes'] / traced_n:,.0f} B"
    )
    print(
        f"create latency p50/p99: first {timing['k']:,} {timing['p50_first']:.0f}/"
        f"{timing['p99_first']:.0f} µs, last {timing['k']:,} {timing['p50_last']:.0f}/"
        f"{timing['p99_last']:.0f} µs -> p99 growth {timing['p99_last'] / timing['p99_first']:.2f}"
        " (goal <= 2)"
    )
    print(
        f"slowest create {timing['create_max_us']:,} µs; {timing['gc_full_collections']} full "
        f"(gen 2) garbage collections during the creates, the longest "
        f"{timing['gc_full_max_ms']} ms (every task stops meanwhile)"
    )
    print("live memory per pending elicitation by allocating line (bytes, blocks, where):")
    for size, count, where in traced["top_lines"]:
        print(f"  {size:8.1f} B {count:6.2f}  {where}")
    print("... by file:")
    for name, size in traced["by_file"]:
        print(f"  {size:8.1f} B  {name}")
    if detail:
        print(f"... charged to the innermost runtime line on the stack ({detail:,} pending):")
        for size, count, where in await detail_pass(detail, owners, top):
            print(f"  {size:8.1f} B {count:6.2f}  {where}")
    out_finished: dict[str, Any] = {}
    if finished:
        done = await finished_pass(finished)
        print(
            f"{finished:,} finished elicitations (answered, retained): "
            f"{done['bytes_per']:,.0f} B traced and {done['gc_objects_per']:.2f} objects the "
            f"garbage collector tracks, per finished elicitation (asked and answered in "
            f"{done['ask_answer_s']} s, traced)"
        )
        for size, count, where in done["top_lines"]:
            print(f"  {size:8.1f} B {count:6.2f}  {where}")
        out_finished = {
            "finished_n": finished,
            "finished_bytes_per_elicitation": round(done["bytes_per"]),
            "finished_gc_objects_per_elicitation": round(done["gc_objects_per"], 2),
        }
    return {
        **out_finished,
        "n": n,
        "owners": owners,
        "bytes_per_elicitation": round(max(rss_per, traced_per)),
        "tracemalloc_bytes_per_elicitation": round(traced_per),
        "rss_bytes_per_elicitation": round(rss_per),
        "peer_bytes_per_elicitation": round(traced["peer_bytes"] / traced_n),
        "traced_n": traced_n,
        "create_p99_us_1k": round(timing["p99_first"], 1),
        "create_p99_us_100k": round(timing["p99_last"], 1),
        "p99_growth": round(timing["p99_last"] / timing["p99_first"], 3),
        "create_p50_us_1k": round(timing["p50_first"], 1),
        "create_p50_us_100k": round(timing["p50_last"], 1),
        "create_max_us": timing["create_max_us"],
        "gc_full_collections": timing["gc_full_collections"],
        "gc_full_max_ms": timing["gc_full_max_ms"],
        "create_loop_s": timing["create_loop_s"],
        "timing_pass_s": timing["pass_s"],
        "abandon_s": timing.get("abandon_s"),
        "close_s": timing["close_s"],
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 15 000 (under 30 s)")
    parser.add_argument("--n", type=int, default=None, help="pending elicitations")
    parser.add_argument(
        "--traced-n", type=int, default=None, help="pending elicitations under tracemalloc"
    )
    parser.add_argument(
        "--detail", type=int, default=0, metavar="N", help="also charge memory to runtime lines"
    )
    parser.add_argument("--owners", type=int, default=4, help="owner tasks")
    parser.add_argument(
        "--finished",
        type=int,
        default=10_000,
        metavar="N",
        help="also measure what N finished elicitations keep (0: skip)",
    )
    parser.add_argument("--top", type=int, default=15, help="allocator lines to print")
    parser.add_argument(
        "--close-pending",
        action="store_true",
        help="close the runtime with everything pending (default: the owners exit first)",
    )
    args = parser.parse_args()
    # The runtime logs every lifecycle event at info; a benchmark measures the runtime.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    n = args.n or (15_000 if args.quick else 100_000)
    # tracemalloc slows a create ~4x: trace fewer (per-elicitation bytes are linear in n).
    traced_n = args.traced_n or min(n, 3_000 if args.quick else 10_000)
    out = trio.run(
        main, n, traced_n, args.owners, args.top, args.detail, args.close_pending, args.finished
    )
    print(json.dumps(out))
