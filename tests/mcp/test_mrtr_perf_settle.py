"""MRTR settle: a round ends early once the run is idle but for settling tasks.

The batching guarantee stays: requests that tasks of the call are still on their way to make
(however many scheduler passes the chain takes, as long as something is runnable) are asked in
the same round. These tests use a huge ``settle_checkpoints`` so that only the early end can
finish a round quickly, and count the scheduler passes with an instrument of their own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import pytest
import trio
import trio.testing

from erlmcp_py.actors.peer import PeerResponse
from erlmcp_py.mcp import mrtr
from erlmcp_py.mcp.mrtr import ContinuationRegistry, MrtrPeer, open_continuations
from erlmcp_py.mcp.versions import ClientCapabilities

HUGE = 10_000


class Passes(trio.abc.Instrument):
    def __init__(self) -> None:
        self.count = 0

    def before_io_wait(self, timeout: float) -> None:
        self.count += 1


def ask(peer: MrtrPeer, message: str) -> None:
    def ignore(_: PeerResponse) -> None:
        pass

    peer.send_request_nowait(
        "elicitation/create",
        {"message": message, "requestedSchema": {"type": "object"}},
        request_id=message,
        on_response=ignore,
    )


async def start(
    registry: ContinuationRegistry, run: Callable[[MrtrPeer], Awaitable[Mapping[str, Any]]]
) -> dict[str, Any]:
    return await registry.start(
        principal="alice",
        method="tools/call",
        params={"name": "t", "arguments": {}},
        capabilities=ClientCapabilities(frozenset({"form"})),
        protocol_version="2026-07-28",
        client_id="c1",
        run=run,
    )


def messages(result: Mapping[str, Any]) -> list[str]:
    assert result["resultType"] == "input_required"
    return sorted(r["params"]["message"] for r in result["inputRequests"].values())


async def counted(fn: Callable[[], Awaitable[dict[str, Any]]]) -> tuple[dict[str, Any], int]:
    passes = Passes()
    trio.lowlevel.add_instrument(passes)
    try:
        result = await fn()
    finally:
        trio.lowlevel.remove_instrument(passes)
    return result, passes.count


async def test_idle_run_ends_the_settle_early(autojump_clock: trio.testing.MockClock) -> None:
    async def run(peer: MrtrPeer) -> Mapping[str, Any]:
        ask(peer, "who?")
        await trio.sleep_forever()
        raise AssertionError

    async with open_continuations(settle_checkpoints=HUGE) as registry:
        result, passes = await counted(lambda: start(registry, run))
        assert messages(result) == ["who?"]
        assert passes < 20  # not HUGE


async def test_a_long_chain_of_runnable_tasks_is_still_batched(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # The second request comes after a relay of 300 hand-overs between two tasks: one task
    # runnable at a time, every pass; the round must wait for it (and then end early).
    async def run(peer: MrtrPeer) -> Mapping[str, Any]:
        async def relay(mine: list[trio.Event], theirs: list[trio.Event], n: int) -> None:
            for i in range(n):
                await mine[i].wait()
                theirs[i].set()

        ping = [trio.Event() for _ in range(301)]
        pong = [trio.Event() for _ in range(301)]

        async def last() -> None:
            await ping[300].wait()
            ask(peer, "second?")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(relay, ping, pong, 300)
            nursery.start_soon(relay, pong, ping[1:], 300)
            nursery.start_soon(last)
            ask(peer, "first?")
            ping[0].set()
        await trio.sleep_forever()
        raise AssertionError

    async with open_continuations(settle_checkpoints=HUGE) as registry:
        result, passes = await counted(lambda: start(registry, run))
        assert messages(result) == ["first?", "second?"]
        assert 300 < passes < 1000


async def test_concurrent_settles_each_batch_their_requests(
    autojump_clock: trio.testing.MockClock,
) -> None:
    def tool(name: str, delay: int) -> Callable[[MrtrPeer], Awaitable[Mapping[str, Any]]]:
        async def run(peer: MrtrPeer) -> Mapping[str, Any]:
            ask(peer, f"{name}-1")
            for _ in range(delay):
                await trio.lowlevel.checkpoint()
            ask(peer, f"{name}-2")
            await trio.sleep_forever()
            raise AssertionError

        return run

    results: dict[str, dict[str, Any]] = {}

    async def one(registry: ContinuationRegistry, name: str, delay: int) -> None:
        results[name] = await start(registry, tool(name, delay))

    async with open_continuations(settle_checkpoints=HUGE) as registry:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(one, registry, "a", 50)
            nursery.start_soon(one, registry, "b", 120)
        assert messages(results["a"]) == ["a-1", "a-2"]
        assert messages(results["b"]) == ["b-1", "b-2"]


async def test_the_watch_is_removed_when_nobody_settles(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def run(peer: MrtrPeer) -> Mapping[str, Any]:
        ask(peer, "who?")
        await trio.sleep_forever()
        raise AssertionError

    async with open_continuations() as registry:
        await start(registry, run)
        watch = mrtr._idle_watch()
        assert watch.installed
        assert watch.settlers == 0
        for _ in range(mrtr._UNUSED_PASSES + 1):
            await trio.lowlevel.checkpoint()
        assert not watch.installed
        await start(registry, run)  # installed again, and works
        assert watch.installed


async def test_an_idle_wake_up_needs_no_settle(
    autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The attached request is woken by the request being recorded; when the pass in between
    # found only it runnable, the round is decided in that turn, without settling.
    settles = 0
    settle = ContinuationRegistry._settle

    async def counting(self: ContinuationRegistry, cont: Any) -> None:
        nonlocal settles
        settles += 1
        await settle(self, cont)

    monkeypatch.setattr(ContinuationRegistry, "_settle", counting)

    async def run(peer: MrtrPeer) -> Mapping[str, Any]:
        ask(peer, "who?")
        await trio.sleep_forever()
        raise AssertionError

    async with open_continuations(settle_checkpoints=HUGE) as registry:
        assert messages(await start(registry, run)) == ["who?"]
        assert messages(await start(registry, run)) == ["who?"]
        assert settles == 0
