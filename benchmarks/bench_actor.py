"""Actor call round trip and cast throughput versus a raw trio memory-channel ping-pong.

Both are measured in the same run, on the same loop, so the ratio is what matters.
The last line of output is one JSON object (keys: actor_calls_per_s, raw_calls_per_s,
ratio, actor_casts_per_s, raw_sends_per_s, cast_ratio, n). Not a test: nothing fails.

    python benchmarks/bench_actor.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

import trio
from _baseline import quiet_logs, raw_ping_pong

from supervisors import Actor, ReplyTo, start_actor


class Pong(Actor):
    mailbox_size = 1024

    async def handle_call(self, msg: Any, reply_to: ReplyTo) -> Any:
        return msg

    async def handle_cast(self, msg: Any) -> None:
        self.count += 1
        if self.count == self.expect:
            self.done.set()

    async def init(self) -> None:
        self.count = 0
        self.expect = -1
        self.done = trio.Event()


async def actor_calls(n: int, timeout: float | None = 5.0) -> float:
    """``ActorRef.call`` with the default 5 s timeout (a cancel scope per call) or none."""
    async with trio.open_nursery() as nursery:
        ref = await start_actor(nursery, Pong())
        start = time.perf_counter()
        for i in range(n):
            await ref.call(i, timeout=timeout)
        elapsed = time.perf_counter() - start
        ref.request_stop()
    return n / elapsed


async def raw_sends(n: int) -> float:
    send, recv = trio.open_memory_channel[Any](1024)
    done = trio.Event()

    async def consumer() -> None:
        count = 0
        async for _ in recv:
            count += 1
            if count == n:
                done.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(consumer)
        start = time.perf_counter()
        for i in range(n):
            await send.send(i)
        await done.wait()
        elapsed = time.perf_counter() - start
        await send.aclose()
    return n / elapsed


async def actor_casts(n: int) -> float:
    async with trio.open_nursery() as nursery:
        actor = Pong()
        ref = await start_actor(nursery, actor)
        actor.expect = n
        start = time.perf_counter()
        for i in range(n):
            while True:
                try:
                    ref.cast(i)
                    break
                except Exception:  # Busy: let the actor drain, as a real producer would
                    await trio.lowlevel.checkpoint()
            if i % 512 == 0:
                await trio.lowlevel.checkpoint()
        await actor.done.wait()
        elapsed = time.perf_counter() - start
        ref.request_stop()
    return n / elapsed


async def main(quick: bool) -> dict[str, Any]:
    n = 20_000 if quick else 200_000
    rounds = 3 if quick else 5
    results: dict[str, list[float]] = {k: [] for k in ("actor", "raw", "cast", "send", "nt")}
    for _ in range(rounds):  # interleave so drift affects both sides alike
        results["raw"].append(await raw_ping_pong(n))
        results["actor"].append(await actor_calls(n))
        results["nt"].append(await actor_calls(n, timeout=None))
        results["send"].append(await raw_sends(n))
        results["cast"].append(await actor_casts(n))
    med = {k: statistics.median(v) for k, v in results.items()}
    return {
        "n": n,
        "rounds": rounds,
        "actor_calls_per_s": round(med["actor"]),
        "raw_calls_per_s": round(med["raw"]),
        "ratio": round(med["actor"] / med["raw"], 3),
        "actor_calls_no_timeout_per_s": round(med["nt"]),
        "ratio_no_timeout": round(med["nt"] / med["raw"], 3),
        "actor_casts_per_s": round(med["cast"]),
        "raw_sends_per_s": round(med["send"]),
        "cast_ratio": round(med["cast"] / med["send"], 3),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small n, finishes in seconds")
    args = parser.parse_args()
    quiet_logs()
    out = trio.run(main, args.quick)
    print(
        f"actor call round trip: {out['actor_calls_per_s']:,}/s vs raw ping-pong "
        f"{out['raw_calls_per_s']:,}/s -> ratio {out['ratio']}"
    )
    print(
        f"actor cast: {out['actor_casts_per_s']:,}/s vs raw channel send "
        f"{out['raw_sends_per_s']:,}/s -> ratio {out['cast_ratio']}"
    )
    print(json.dumps(out))
