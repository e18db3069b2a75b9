"""supervisors.monitor: task-exit watching, shared watchers, cheap unsubscribe, link."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from supervisors import MonitorHub, open_monitor_hub, wait_task_exit
from tests.conftest import count_tasks
from tests.supervisors.helpers import current_task_child


async def _ending_child(how: str, *, task_status: trio.TaskStatus[trio.lowlevel.Task]) -> None:
    task_status.started(trio.lowlevel.current_task())
    await trio.sleep(1)
    if how == "crash":
        raise RuntimeError("child crashed")


@pytest.mark.parametrize("how", ["return", "crash", "cancel"])
async def test_wait_task_exit_sees_every_kind_of_exit(
    how: str, autojump_clock: trio.testing.MockClock
) -> None:
    seen = trio.Event()

    async def watcher(task: trio.lowlevel.Task) -> None:
        await wait_task_exit(task)
        seen.set()

    async with trio.open_nursery() as outer:
        try:
            async with trio.open_nursery() as inner:
                task = await inner.start(_ending_child, how)
                outer.start_soon(watcher, task)
                if how == "cancel":
                    inner.cancel_scope.cancel()
        except ExceptionGroup:
            assert how == "crash"
        with trio.fail_after(5):
            await seen.wait()


async def test_wait_task_exit_returns_at_once_for_exited_task() -> None:
    async with trio.open_nursery() as nursery:
        task = await nursery.start(current_task_child)
        nursery.cancel_scope.cancel()
    with trio.fail_after(1):
        await wait_task_exit(task)


async def test_cancelled_waiter_deregisters_breaker() -> None:
    async with trio.open_nursery() as nursery:
        task = await nursery.start(current_task_child)
        with trio.move_on_after(0.01):
            await wait_task_exit(task)
        # A stale breaker would raise RuntimeError on remove; none must be left behind.
        from trio._core._parking_lot import GLOBAL_PARKING_LOT_BREAKER

        assert task not in GLOBAL_PARKING_LOT_BREAKER
        nursery.cancel_scope.cancel()


async def test_one_watcher_per_task_however_many_subscribers() -> None:
    fired: list[int] = []
    async with open_monitor_hub() as hub, trio.open_nursery() as nursery:
        owner = await nursery.start(current_task_child)
        baseline = count_tasks()
        refs = [hub.monitor(owner, lambda _t, i=i: fired.append(i)) for i in range(2000)]
        await trio.testing.wait_all_tasks_blocked()
        assert hub.watched_tasks() == 1
        assert hub.subscriber_count(owner) == 2000
        assert count_tasks() == baseline + 1  # one watcher task, not 2000
        for ref in refs[:500]:
            ref.cancel()
        refs[0].cancel()  # idempotent
        assert hub.subscriber_count(owner) == 1500
        nursery.cancel_scope.cancel()
    assert sorted(fired) == list(range(500, 2000))  # each remaining subscriber exactly once


async def test_last_unsubscribe_stops_the_watcher() -> None:
    async with open_monitor_hub() as hub, trio.open_nursery() as nursery:
        owner = await nursery.start(current_task_child)
        baseline = count_tasks()
        refs = [hub.monitor(owner, lambda _t: None) for _ in range(3)]
        await trio.testing.wait_all_tasks_blocked()
        assert count_tasks() == baseline + 1
        for ref in refs:
            ref.cancel()
        await trio.testing.wait_all_tasks_blocked()
        assert hub.watched_tasks() == 0
        assert count_tasks() == baseline
        nursery.cancel_scope.cancel()


async def test_keep_idle_watchers_reuses_one_watcher_until_the_task_exits() -> None:
    fired: list[str] = []
    async with trio.open_nursery() as hub_nursery, trio.open_nursery() as nursery:
        hub = MonitorHub(hub_nursery, keep_idle_watchers=True)
        owner = await nursery.start(current_task_child)
        baseline = count_tasks()
        for _ in range(50):  # subscribe, unsubscribe, again: one question after another
            hub.monitor(owner, lambda _t: fired.append("stale")).cancel()
            await trio.testing.wait_all_tasks_blocked()
            assert count_tasks() == baseline + 1  # the same watcher, never respawned
        assert hub.is_watching(owner)
        assert hub.subscriber_count(owner) == 0
        hub.monitor(owner, lambda _t: fired.append("down"))
        nursery.cancel_scope.cancel()  # the owner exits: its watcher goes with it
    assert fired == ["down"]  # cancelled subscriptions never fire
    assert hub.watched_tasks() == 0


async def test_monitor_of_exited_task_fires_soon_not_inline() -> None:
    fired: list[str] = []
    async with trio.open_nursery() as nursery:
        task = await nursery.start(current_task_child)
        nursery.cancel_scope.cancel()
    async with open_monitor_hub() as hub:
        hub.monitor(task, lambda _t: fired.append("down"))
        assert fired == []  # never called from inside monitor()
        await trio.testing.wait_all_tasks_blocked()
        assert fired == ["down"]


async def test_broken_callback_does_not_stop_others() -> None:
    fired: list[str] = []

    def bad(_task: trio.lowlevel.Task) -> None:
        raise ValueError("callback bug")

    async with open_monitor_hub() as hub, trio.open_nursery() as nursery:
        task = await nursery.start(current_task_child)
        hub.monitor(task, bad)
        hub.monitor(task, lambda _t: fired.append("ok"))
        await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()
    assert fired == ["ok"]


async def test_link_cancels_scope_when_task_exits(autojump_clock: trio.testing.MockClock) -> None:
    async with open_monitor_hub() as hub, trio.open_nursery() as nursery:
        owner = await nursery.start(_ending_child, "return")
        with trio.CancelScope() as scope:
            hub.link(owner, scope)
            await trio.sleep(100)
        assert scope.cancelled_caught
        assert trio.current_time() == pytest.approx(1)


async def test_closed_hub_refuses_new_monitors() -> None:
    async with open_monitor_hub() as hub:
        pass
    with pytest.raises(RuntimeError, match="closed"):
        hub.monitor(trio.lowlevel.current_task(), lambda _t: None)
