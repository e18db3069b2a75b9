"""Our in-process op alone, against the trio limit measured in the same run.

The op of ``bench_vs_sdk.py``'s ``inproc_ratio`` (one ``tools/call`` whose tool asks a 3-field
form through ``open_memory_client``, answered at once by a plain-function handler), without
the SDK: for tracking our own cost between commits on a noisy machine. Each round times, back
to back, the op, a no-op tool call through the same pair, and trio's raw request/reply
(``_baseline.raw_ping_pong``); figures are medians of the per-round values.

Keys: ``op_cpu_ms`` / ``noop_cpu_ms`` (CPU per call), ``elicitation_share`` = (op - no-op) / op,
``ping_pongs_per_op`` = how many raw trio round trips cost as much as one op (lower is better;
load moves both), ``task_steps_per_op`` / ``spawns_per_op`` (a trio ``Instrument``). To compare
with an older commit, run this same file with ``PYTHONPATH`` pointing at a worktree of it.

    python benchmarks/bench_inproc_op.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any

import trio
from _baseline import quiet_logs, raw_ping_pong
from bench_vs_sdk import build_our_server, our_client_op, our_memory_pair

from erlmcp_py.mcp.context import Context


class _Steps(trio.abc.Instrument):
    def __init__(self) -> None:
        self.steps = 0
        self.spawns = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.steps += 1

    def task_spawned(self, task: trio.lowlevel.Task) -> None:
        self.spawns += 1


async def main(rounds: int, n: int) -> dict[str, Any]:
    quiet_logs()
    server = build_our_server()

    @server.tool()
    async def noop(ctx: Context) -> str:
        return "Ada"

    async with our_memory_pair(server) as client:
        op = our_client_op(client)

        async def noop_op() -> None:
            result = await client.call_tool("noop")
            if result["content"][0]["text"] != "Ada":
                raise RuntimeError(f"unexpected {result!r}")

        async def cpu_per_call(fn: Any) -> float:
            start = time.process_time()
            for _ in range(n):
                await fn()
            return (time.process_time() - start) / n * 1e3

        for _ in range(300):  # warm-up: caches, first-use paths
            await op()
            await noop_op()
        ops, noops, ratios = [], [], []
        for _ in range(rounds):
            op_ms = await cpu_per_call(op)
            noop_ms = await cpu_per_call(noop_op)
            raw_ms = 1e3 / await raw_ping_pong(n)
            ops.append(op_ms)
            noops.append(noop_ms)
            ratios.append(op_ms / raw_ms)
        counter = _Steps()
        trio.lowlevel.add_instrument(counter)
        for _ in range(200):
            await op()
        trio.lowlevel.remove_instrument(counter)
    op_ms, noop_ms = statistics.median(ops), statistics.median(noops)
    return {
        "op_cpu_ms": round(op_ms, 4),
        "op_cpu_ms_best": round(min(ops), 4),
        "noop_cpu_ms": round(noop_ms, 4),
        "elicitation_share": round((op_ms - noop_ms) / op_ms, 3),
        "ping_pongs_per_op": round(statistics.median(ratios), 2),
        "task_steps_per_op": counter.steps / 200,
        "spawns_per_op": counter.spawns / 200,
        "rounds": rounds,
        "n": n,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds of 500 calls")
    args = parser.parse_args()
    rounds, n = (3, 500) if args.quick else (9, 2000)
    out = trio.run(main, rounds, n)
    print(
        f"our in-process op: {out['op_cpu_ms']} ms CPU (best {out['op_cpu_ms_best']}), "
        f"no-op tool call {out['noop_cpu_ms']} ms, elicitation share {out['elicitation_share']}, "
        f"= {out['ping_pongs_per_op']} raw trio round trips; "
        f"{out['task_steps_per_op']} task steps, {out['spawns_per_op']} spawns per op",
        file=sys.stderr,
    )
    print(json.dumps(out))
