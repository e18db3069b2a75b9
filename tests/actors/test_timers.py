"""actors.timers.Timers: one task, many timers, stale entries skipped and compacted."""

from __future__ import annotations

import trio
import trio.testing

from erlmcp_py.actors.timers import Timers


class Target:
    def __init__(self, key: str) -> None:
        self.timer_key = key
        self.timer_at: float | None = None


async def test_fires_each_current_timer_once_at_its_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    fired: list[tuple[str, float]] = []
    timers = Timers(lambda t, now: fired.append((t.timer_key, now)))
    a, b, c = Target("a"), Target("b"), Target("c")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(timers.run)
        timers.arm(a, 30.0)
        timers.arm(b, 10.0)
        timers.arm(c, 20.0)
        timers.arm(c, 25.0)  # re-armed: 20 is stale now
        timers.disarm(a)  # disarmed: 30 never fires
        await trio.sleep(100)
        assert fired == [("b", 10.0), ("c", 25.0)]
        assert timers.live == 0
        assert b.timer_at is None
        nursery.cancel_scope.cancel()


async def test_an_earlier_timer_wakes_a_runner_sleeping_for_a_later_one(
    autojump_clock: trio.testing.MockClock,
) -> None:
    fired: list[float] = []
    timers = Timers(lambda t, now: fired.append(now))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(timers.run)
        timers.arm(Target("late"), 1000.0)
        await trio.sleep(1)  # the runner now sleeps until 1000
        timers.arm(Target("soon"), 5.0)
        await trio.sleep(10)
        assert fired == [5.0]
        nursery.cancel_scope.cancel()


async def test_fire_may_rearm_and_the_new_timer_fires_too(
    autojump_clock: trio.testing.MockClock,
) -> None:
    fired: list[float] = []
    timers: Timers

    def fire(target: Target, now: float) -> None:
        fired.append(now)
        if len(fired) < 3:
            timers.arm(target, now + 7)

    timers = Timers(fire)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(timers.run)
        timers.arm(Target("x"), 1.0)
        await trio.sleep(100)
        assert fired == [1.0, 8.0, 15.0]
        nursery.cancel_scope.cancel()


def test_stale_entries_are_compacted_so_memory_follows_what_is_pending() -> None:
    timers = Timers(lambda t, now: None)
    targets = [Target(f"t{i}") for i in range(100)]
    for round_ in range(1000):  # each re-arm leaves a stale entry behind
        for t in targets:
            timers.arm(t, 1000.0 + round_)
    assert timers.live == 100
    assert len(timers) <= 2 * 100 + 64 + 1
    for t in targets:
        timers.disarm(t)
    assert timers.live == 0
    timers.arm(targets[0], 5.0)
    assert len(timers) <= 2 * 1 + 64 + 1  # disarmed entries were dropped at the next compaction
