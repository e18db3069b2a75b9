"""One elicitation's whole life versus a raw trio memory-channel ping-pong, in the same run.

A lifecycle is: ``runtime.ask`` — what ``Context.elicit`` calls: ``create_elicitation`` and
``await handle.outcome()`` — sends ``CreateElicitation`` to the elicitation actor's mailbox,
which asks the rate limiter through its mailbox, registers the record and starts the child task
-> the child sends ``elicitation/create`` to a :class:`~erlmcp_py.testing.MemoryPeer` that
answers at once with valid content -> the child asks the validator through its mailbox -> the
outcome reaches the waiter -> the child casts the release of the rate-limit slot. Every message
between the runtime and its three actors travels through a mailbox. One lifecycle at a time,
like ``bench_actor``'s call round trip, so the ratio compares one lifecycle with one raw
ping-pong round trip. The figure is reported, not a goal.

Also reported: ``lifecycles_per_s_concurrent`` with 64 waiters in flight.

Human-readable lines first; the last line is one JSON object (keys: lifecycles_per_s,
raw_calls_per_s, ratio, ratio_min, ratio_max, lifecycles_per_s_concurrent,
ratio_concurrent, n, rounds). ``--profile`` prints the top functions of one lifecycle run
(cProfile) before the figures.

    python benchmarks/bench_lifecycle.py [--quick] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import pstats
import statistics
import time
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import trio
from _baseline import quiet_logs, raw_ping_pong

from erlmcp_py import Accepted, ElicitationRequest, RuntimeConfig, Tenant, open_runtime
from erlmcp_py.core.schema import RequestedSchema
from erlmcp_py.testing import MemoryPeer, SentRequest

ROOT = Path(__file__).resolve().parent.parent

# Frozen, as ``FormType.schema`` is: the validator cache finds it by its remembered digest.
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
ANSWER: Mapping[str, Any] = {"action": "accept", "content": {"region": "eu", "n": 3}}
CONFIG = RuntimeConfig.model_validate({"rate": 10**9, "max_pending_per_client": 10**9})


def answering_peer() -> MemoryPeer:
    def auto(_sent: SentRequest) -> Mapping[str, Any]:
        return ANSWER

    return MemoryPeer(peer_id="bench", auto=auto)


async def lifecycles(n: int, concurrency: int = 1) -> float:
    """``n`` full lifecycles (``runtime.ask``), ``concurrency`` of them in flight at a time."""
    request = ElicitationRequest("Pick a region", requested_schema=SCHEMA)
    tenant = Tenant("bench", "ws", "conv")
    async with open_runtime(CONFIG) as runtime:
        peer = answering_peer()

        async def one() -> None:
            outcome = await runtime.ask(request, peer=peer, tenant=tenant)
            assert type(outcome) is Accepted, outcome

        await one()  # warm the validator cache
        gc.collect()  # every segment starts from the same heap (GC inside it still counts)
        start = time.perf_counter()
        if concurrency == 1:
            for _ in range(n):
                await one()
        else:

            async def worker(count: int) -> None:
                for _ in range(count):
                    await one()

            async with trio.open_nursery() as nursery:
                for w in range(concurrency):
                    nursery.start_soon(worker, n // concurrency + (w < n % concurrency))
        elapsed = time.perf_counter() - start
        metrics = runtime.metrics()
        assert metrics["pending"] == 0, metrics
    return n / elapsed


async def main(quick: bool) -> dict[str, Any]:
    """Many short rounds; in each, the raw ping-pong runs right before and right after the
    lifecycles, and the round's ratio uses their mean. The median of the per-round ratios is
    robust to a loaded machine (another process stealing the CPU hits one round, not the
    figure); ``ratio_min``/``ratio_max`` show the spread."""
    n = 1_000 if quick else 4_000
    rounds = 9 if quick else 15
    rates: dict[str, list[float]] = {"life": [], "raw": [], "conc": []}
    ratios: dict[str, list[float]] = {"life": [], "conc": []}
    for _ in range(rounds):
        before = await raw_ping_pong(n * 4)
        life = await lifecycles(n)
        conc = await lifecycles(n, concurrency=64)
        raw = (before + await raw_ping_pong(n * 4)) / 2
        measured = {"life": life, "conc": conc, "raw": raw}
        for key, rate in measured.items():
            rates[key].append(rate)
            if key != "raw":
                ratios[key].append(rate / raw)
    med = {k: statistics.median(v) for k, v in rates.items()}
    ratio = {k: statistics.median(v) for k, v in ratios.items()}
    return {
        "n": n,
        "rounds": rounds,
        "lifecycles_per_s": round(med["life"]),
        "raw_calls_per_s": round(med["raw"]),
        "ratio": round(ratio["life"], 4),
        "ratio_min": round(min(ratios["life"]), 4),
        "ratio_max": round(max(ratios["life"]), 4),
        "lifecycles_per_s_concurrent": round(med["conc"]),
        "ratio_concurrent": round(ratio["conc"], 4),
    }


def profile(n: int) -> None:
    """Where a lifecycle's time goes: own time per source file, in µs per lifecycle."""
    profiler = cProfile.Profile()
    profiler.enable()
    trio.run(lifecycles, n)
    profiler.disable()
    stats: dict[Any, Any] = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    by_file: Counter[str] = Counter()
    for (filename, _line, _func), (_cc, _nc, own, _cum, _callers) in stats.items():
        name = filename.split("/site-packages/")[-1].split(str(ROOT) + "/")[-1]
        if name == "~":
            name = "builtins (C functions)"
        elif name.startswith("trio/_core/"):
            name = "trio/_core (scheduler, tasks, cancel scopes)"
        by_file[name] += own
    total = sum(by_file.values())
    print(f"profile of {n} sequential lifecycles (cProfile inflates every figure):")
    for name, own in by_file.most_common(15):
        print(f"  {own / total:6.1%} {own / n * 1e6:8.1f} µs/lifecycle  {name}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small n, finishes in seconds")
    parser.add_argument("--profile", action="store_true", help="cProfile one lifecycle run")
    args = parser.parse_args()
    # The runtime logs every lifecycle event at info; a benchmark measures the runtime.
    quiet_logs()
    if args.profile:
        profile(2_000)
    out = trio.run(main, args.quick)
    print(
        f"elicitation lifecycle (create -> answer -> validate -> outcome): "
        f"{out['lifecycles_per_s']:,}/s vs raw ping-pong {out['raw_calls_per_s']:,}/s "
        f"-> ratio {out['ratio']} (rounds {out['ratio_min']}-{out['ratio_max']})"
    )
    print(
        f"64 lifecycles in flight: {out['lifecycles_per_s_concurrent']:,}/s "
        f"-> ratio {out['ratio_concurrent']}"
    )
    print(json.dumps(out))
