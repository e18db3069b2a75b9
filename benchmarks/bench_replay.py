"""What replay costs per round, against suspend, in the same run (2026-07-28, in-process).

One op = a ``tools/call`` of a tool that asks ``Q`` short forms one after the other
(``Q + 1`` requests, ``Q`` of them ``InputRequiredResult`` rounds), driven to completion by the
memory pair's client, which answers each input request at once. The same server and runtime
serve two connections: one whose continuation registry runs ``mrtr="suspend"`` (the tool stays
parked between rounds; each retry resumes it) and one running ``mrtr="replay"`` (no call is
kept; each retry runs the tool again and answers its earlier questions from the state).
Each round times ``n`` ops on both, back to back, in alternating order; figures are medians
of the per-round values.

Keys per ``Q``: ``suspend_ms`` / ``replay_ms`` (one op), ``ratio`` (replay / suspend, per
round), ``added_ms_per_round`` = (replay - suspend) / Q: what replay adds to each retry, and
``state_chars``: the size of the last round's ``requestState`` under replay. The work replay
repeats grows with the round (round k re-asks k - 1 questions), so the added cost per round
grows with Q.

    python benchmarks/bench_replay.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Mapping
from typing import Any

import trio
from _baseline import quiet_logs

from erlmcp_py.actors.api import RuntimeConfig
from erlmcp_py.client import MemoryClient, ServerRequest, open_memory_client
from erlmcp_py.core.outcomes import Accepted
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.server import Server

VERSION = "2026-07-28"
FORM = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}


def build_server() -> Server:
    server = Server("bench-replay", "1.0", runtime_config=RuntimeConfig(rate=10**9))

    @server.tool()
    async def ask(ctx: Context, questions: int) -> str:
        names = []
        for n in range(questions):
            outcome = await ctx.elicit(f"Person {n}?", FORM)
            if isinstance(outcome, Accepted):
                names.append(outcome.content["name"])
        return ",".join(names)

    return server


def answer(_request: ServerRequest) -> Mapping[str, Any]:
    return {"action": "accept", "content": {"name": "Ada", "age": 36}}


async def one_op(client: MemoryClient, questions: int) -> None:
    result = await client.call_tool("ask", {"questions": questions}, max_rounds=questions + 2)
    if result["content"][0]["text"] != ",".join(["Ada"] * questions):
        raise RuntimeError(f"unexpected {result!r}")


async def last_state_chars(client: MemoryClient, questions: int) -> int:
    """The size of the state the last round of a replayed op carries."""
    params: dict[str, Any] = {"name": "ask", "arguments": {"questions": questions}}
    size = 0
    while True:
        result = await client.request("tools/call", params)
        if result["resultType"] != "input_required":
            return size
        size = len(result["requestState"])
        params["requestState"] = result["requestState"]
        params["inputResponses"] = {key: answer(key) for key in result["inputRequests"]}  # type: ignore[arg-type]


async def main(rounds: int, n: int, question_counts: list[int]) -> dict[str, Any]:
    quiet_logs()
    server = build_server()
    out: dict[str, Any] = {"rounds": rounds, "ops_per_round": n}
    async with server.running() as runtime:
        clients = {}
        async with trio.open_nursery() as nursery:

            async def connect(mode: str, task_status: trio.TaskStatus[MemoryClient]) -> None:
                async with open_memory_client(
                    server,
                    handler=answer,
                    protocol_version=VERSION,
                    initialize=False,
                    runtime=runtime,
                    keep_history=False,
                    continuations={"mrtr": mode},
                ) as client:
                    task_status.started(client)
                    await trio.sleep_forever()

            for mode in ("suspend", "replay"):
                clients[mode] = await nursery.start(connect, mode)
            for questions in question_counts:
                times: dict[str, list[float]] = {"suspend": [], "replay": []}
                ratios = []
                for _ in range(3):  # warm-up
                    for client in clients.values():
                        await one_op(client, questions)
                for r in range(rounds):
                    order = ("suspend", "replay") if r % 2 == 0 else ("replay", "suspend")
                    this: dict[str, float] = {}
                    for mode in order:
                        start = time.perf_counter()
                        for _ in range(n):
                            await one_op(clients[mode], questions)
                        this[mode] = (time.perf_counter() - start) / n * 1000
                        times[mode].append(this[mode])
                    ratios.append(this["replay"] / this["suspend"])
                suspend = statistics.median(times["suspend"])
                replay = statistics.median(times["replay"])
                out[f"Q={questions}"] = {
                    "suspend_ms": round(suspend, 3),
                    "replay_ms": round(replay, 3),
                    "ratio": round(statistics.median(ratios), 2),
                    "added_ms_per_round": round((replay - suspend) / questions, 3),
                    "state_chars": await last_state_chars(clients["replay"], questions),
                }
            nursery.cancel_scope.cancel()
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few seconds, rough figures")
    args = parser.parse_args()
    rounds, n = (3, 20) if args.quick else (15, 100)
    figures = trio.run(main, rounds, n, [1, 3, 10])
    json.dump(figures, sys.stdout, indent=2)
    print()
