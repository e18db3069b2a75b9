"""Round trips per second of the two trio-capable Redis/Valkey clients, under trio, in the same
run: valkey-glide (the official Valkey client, trio through anyio) and coredis (anyio).

What chose the store's client (``erlmcp_py.store``). One client at a time against a
``redis-server`` this script starts on a free loopback port: ``SET``, ``GET`` and ``EVALSHA``
(a one-line ``INCR`` script, called through each client's script object) one after the other
from one task, then ``SET`` from 16 tasks sharing the client. Runs in the project's venv with
coredis added, which the project does not install (``pip install -e '.[redis]' coredis``);
not a ``bench_*`` script for that reason.

    python benchmarks/compare_store_clients.py [--n 3000] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

import trio
from bench_store import start_redis

LUA = "return redis.call('INCR', KEYS[1])"


async def rate(n: int, call: Callable[[], Awaitable[Any]], tasks: int = 1) -> float:
    """Calls per second, ``n`` calls over ``tasks`` tasks."""
    each = n // tasks

    async def worker() -> None:
        for _ in range(each):
            await call()

    start = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for _ in range(tasks):
            nursery.start_soon(worker)
    return each * tasks / (time.perf_counter() - start)


async def glide(port: int, n: int) -> dict[str, float]:
    from glide import GlideClient, GlideClientConfiguration, NodeAddress, Script

    config = GlideClientConfiguration([NodeAddress("127.0.0.1", port)], request_timeout=1000)
    client = await GlideClient.create(config)
    script = Script(LUA)
    try:
        await client.invoke_script(script, keys=["n"])
        return {
            "SET": await rate(n, lambda: client.set("k", "v")),
            "GET": await rate(n, lambda: client.get("k")),
            "EVALSHA": await rate(n, lambda: client.invoke_script(script, keys=["n"])),
            "SET_16_tasks": await rate(n, lambda: client.set("k", "v"), tasks=16),
        }
    finally:
        await client.close()


async def coredis(port: int, n: int) -> dict[str, float]:
    import coredis

    async with coredis.Redis("127.0.0.1", port, stream_timeout=1, connect_timeout=1) as client:
        script = client.register_script(LUA)
        await script(keys=["n"])
        return {
            "SET": await rate(n, lambda: client.set("k", "v")),
            "GET": await rate(n, lambda: client.get("k")),
            "EVALSHA": await rate(n, lambda: script(keys=["n"])),
            "SET_16_tasks": await rate(n, lambda: client.set("k", "v"), tasks=16),
        }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=3000, help="calls per figure")
    parser.add_argument("--runs", type=int, default=3, help="runs per client, alternating")
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"valkey-glide": [], "coredis": []}
    with tempfile.TemporaryDirectory(prefix="store-clients-") as directory:
        server, port = start_redis(directory)
        try:
            for _ in range(args.runs):
                runs["valkey-glide"].append(trio.run(glide, port, args.n))
                runs["coredis"].append(trio.run(coredis, port, args.n))
        finally:
            server.kill()
            server.wait()
    medians = {
        client: {key: round(statistics.median(r[key] for r in results)) for key in results[0]}
        for client, results in runs.items()
    }
    for client, figures in medians.items():
        print(client, ", ".join(f"{key} {value}/s" for key, value in figures.items()))
    json.dump(medians, sys.stdout)
    print()
