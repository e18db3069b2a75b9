"""What every benchmark here measures against, and how it quiets the runtime's logs.

Imported by the ``bench_*.py`` scripts (run as ``python benchmarks/bench_x.py``, so this
folder is on ``sys.path``).
"""

from __future__ import annotations

import gc
import logging
import time
from typing import Any

import structlog
import trio


async def raw_ping_pong(n: int) -> float:
    """The trio limit for a request/reply: two rendezvous channels, one server task.

    Returns:
        Round trips per second.
    """
    req_send, req_recv = trio.open_memory_channel[Any](0)
    rep_send, rep_recv = trio.open_memory_channel[Any](0)

    async def server() -> None:
        async for msg in req_recv:
            await rep_send.send(msg)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(server)
        gc.collect()  # as the measured side does: the same heap state before timing
        start = time.perf_counter()
        for i in range(n):
            await req_send.send(i)
            await rep_recv.receive()
        elapsed = time.perf_counter() - start
        await req_send.aclose()
    return n / elapsed


def quiet_logs() -> None:
    """Only warnings and errors: the runtime logs every lifecycle step at info."""
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        cache_logger_on_first_use=True,  # as erlmcp_py.logging.configure_logging does
    )
