"""supervisors.monitor: task-exit watching without a task per watch, cheap unsubscribe, link."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from structlog.testing import capture_logs

from supervisors import MonitorHub, MonitorRef, open_monitor_hub, wait_task_exit
from tests.conftest import count_tasks
from tests.supervisors.helpers import current_task_child
from tests.trio_thread import TrioThread


async def _ending_child(how: str, *, task_status: trio.TaskStatus[trio.lowlevel.Task]) -> None:
    task_status.started(trio.lowlevel.current_task())
    await trio.sleep(1)
    if how == "crash":
        raise RuntimeError("child crashed")


async def _exited_task() -> trio.lowlevel.Task:
    async with trio.open_nursery() as nursery:
        task = await nursery.start(current_task_child)
        nursery.cancel_scope.cancel()
    return task


def _instruments() -> list[trio.abc.Instrument]:
    """The instruments of the current run that hear task exits."""
    runner = trio._core._run.GLOBAL_RUN_CONTEXT.runner
    return list(runner.instruments.get("task_exited", {}))


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
    task = await _exited_task()
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


@pytest.mark.parametrize("how", ["return", "crash", "cancel"])
async def test_down_on_every_kind_of_exit_once_the_outcome_is_known(
    how: str, autojump_clock: trio.testing.MockClock
) -> None:
    fired: list[tuple[trio.lowlevel.Task, bool]] = []
    async with open_monitor_hub() as hub:
        try:
            async with trio.open_nursery() as nursery:
                task = await nursery.start(_ending_child, how)
                # The coroutine is closed when DOWN arrives: the task has really ended.
                hub.monitor(task, lambda t: fired.append((t, t.coro.cr_frame is None)))
                if how == "cancel":
                    nursery.cancel_scope.cancel()
        except ExceptionGroup:
            assert how == "crash"
        assert fired == [(task, True)]
        assert hub.watched_tasks() == 0


async def test_down_is_called_from_the_exit_itself_not_a_later_task_step() -> None:
    fired: list[str] = []
    async with open_monitor_hub() as hub:
        async with trio.open_nursery() as nursery:
            task = await nursery.start(current_task_child)
            hub.monitor(task, lambda _t: fired.append("down"))
            nursery.cancel_scope.cancel()
        # The nursery's exit waited for the task's exit, which delivered the DOWN itself.
        assert fired == ["down"]


async def test_no_task_per_watched_task_however_many_subscribers() -> None:
    fired: list[int] = []
    async with open_monitor_hub() as hub, trio.open_nursery() as nursery:
        owners = [await nursery.start(current_task_child) for _ in range(20)]
        baseline = count_tasks()
        refs = [hub.monitor(owners[i % 20], lambda _t, i=i: fired.append(i)) for i in range(2000)]
        await trio.testing.wait_all_tasks_blocked()
        assert count_tasks() == baseline  # no watcher task, for 20 owners or 2000 watches
        assert hub.watched_tasks() == 20
        assert hub.subscriber_count(owners[0]) == 100
        for ref in refs[:500]:
            ref.cancel()
        refs[0].cancel()  # idempotent
        assert sum(map(hub.subscriber_count, owners)) == 1500
        nursery.cancel_scope.cancel()
    assert sorted(fired) == list(range(500, 2000))  # each remaining subscriber exactly once


async def test_many_subscribers_on_one_task_each_get_down_once_in_order() -> None:
    fired: list[int] = []
    async with open_monitor_hub() as hub, trio.open_nursery() as nursery:
        owner = await nursery.start(current_task_child)
        for i in range(1000):
            hub.monitor(owner, lambda _t, i=i: fired.append(i))
        assert hub.watched_tasks() == 1
        assert hub.subscriber_count(owner) == 1000
        nursery.cancel_scope.cancel()
    assert fired == list(range(1000))


async def test_last_unsubscribe_stops_watching_the_task() -> None:
    async with open_monitor_hub() as hub, trio.open_nursery() as nursery:
        owner = await nursery.start(current_task_child)
        refs = [hub.monitor(owner, lambda _t: None) for _ in range(3)]
        assert hub.is_watching(owner)
        for ref in refs:
            ref.cancel()
        assert not hub.is_watching(owner)
        assert hub.watched_tasks() == 0
        assert hub.subscriber_count(owner) == 0
        nursery.cancel_scope.cancel()


async def test_cancel_before_exit_means_no_down() -> None:
    fired: list[str] = []
    async with open_monitor_hub() as hub, trio.open_nursery() as nursery:
        owner = await nursery.start(current_task_child)
        for _ in range(50):  # one question after another: subscribe, unsubscribe, again
            hub.monitor(owner, lambda _t: fired.append("stale")).cancel()
        hub.monitor(owner, lambda _t: fired.append("down"))
        nursery.cancel_scope.cancel()
    assert fired == ["down"]


async def test_a_callback_cancelling_a_later_subscription_of_the_same_exit_stops_it() -> None:
    fired: list[str] = []
    async with open_monitor_hub() as hub, trio.open_nursery() as nursery:
        owner = await nursery.start(current_task_child)
        refs: list[MonitorRef] = []

        def first(_task: trio.lowlevel.Task) -> None:
            fired.append("first")
            refs[1].cancel()

        refs.append(hub.monitor(owner, first))
        refs.append(hub.monitor(owner, lambda _t: fired.append("second")))
        nursery.cancel_scope.cancel()
    assert fired == ["first"]


async def test_monitor_of_exited_task_fires_soon_not_inline() -> None:
    fired: list[str] = []
    task = await _exited_task()
    async with open_monitor_hub() as hub:
        hub.monitor(task, lambda _t: fired.append("down"))
        hub.monitor(task, lambda _t: fired.append("down"))
        assert fired == []  # never called from inside monitor()
        assert hub.subscriber_count(task) == 2
        await trio.testing.wait_all_tasks_blocked()
        assert fired == ["down", "down"]
        assert hub.watched_tasks() == 0


async def test_monitor_of_exited_task_cancelled_before_delivery_never_fires() -> None:
    fired: list[str] = []
    task = await _exited_task()
    async with open_monitor_hub() as hub:
        hub.monitor(task, lambda _t: fired.append("cancelled")).cancel()
        hub.monitor(task, lambda _t: fired.append("down"))
        await trio.testing.wait_all_tasks_blocked()
        assert fired == ["down"]


async def test_a_raising_callback_is_logged_and_others_and_the_hub_go_on() -> None:
    fired: list[str] = []

    def bad(_task: trio.lowlevel.Task) -> None:
        raise ValueError("callback bug")

    async with open_monitor_hub() as hub:
        with capture_logs() as logs:
            for _ in range(2):  # the second exit shows the instrument is still in place
                async with trio.open_nursery() as nursery:
                    task = await nursery.start(current_task_child)
                    hub.monitor(task, bad)
                    hub.monitor(task, lambda _t: fired.append("ok"))
                    nursery.cancel_scope.cancel()
            hub.monitor(await _exited_task(), bad)  # from the hub's task too
            hub.monitor(await _exited_task(), lambda _t: fired.append("late"))
            await trio.testing.wait_all_tasks_blocked()
    assert fired == ["ok", "ok", "late"]
    assert [e["event"] for e in logs] == ["monitor_callback_failed"] * 3


async def test_link_cancels_scope_when_task_exits(autojump_clock: trio.testing.MockClock) -> None:
    async with open_monitor_hub() as hub, trio.open_nursery() as nursery:
        owner = await nursery.start(_ending_child, "return")
        with trio.CancelScope() as scope:
            hub.link(owner, scope)
            await trio.sleep(100)
        assert scope.cancelled_caught
        assert trio.current_time() == pytest.approx(1)


async def test_closed_hub_delivers_nothing_and_removes_its_instrument() -> None:
    fired: list[str] = []
    before = _instruments()
    async with trio.open_nursery() as nursery:
        owner = await nursery.start(current_task_child)
        async with open_monitor_hub() as hub:
            assert len(_instruments()) == len(before) + 1
            hub.monitor(owner, lambda _t: fired.append("live"))
            hub.monitor(await _exited_task(), lambda _t: fired.append("exited"))
        assert _instruments() == before
        nursery.cancel_scope.cancel()
    await trio.testing.wait_all_tasks_blocked()
    assert fired == []
    with pytest.raises(RuntimeError, match="closed"):
        hub.monitor(trio.lowlevel.current_task(), lambda _t: None)


async def test_hub_closes_when_its_nursery_is_cancelled() -> None:
    fired: list[str] = []
    before = _instruments()
    async with trio.open_nursery() as owners:
        owner = await owners.start(current_task_child)
        async with trio.open_nursery() as hub_nursery:
            hub = MonitorHub(hub_nursery)
            hub.monitor(owner, lambda _t: fired.append("down"))
            hub_nursery.cancel_scope.cancel()
        assert _instruments() == before
        owners.cancel_scope.cancel()
    assert fired == []
    with pytest.raises(RuntimeError, match="closed"):
        hub.monitor(owner, lambda _t: None)


async def test_a_callback_closing_the_hub_stops_the_rest_of_that_exit() -> None:
    fired: list[str] = []
    async with open_monitor_hub() as hub, trio.open_nursery() as nursery:
        owner = await nursery.start(current_task_child)

        def closing(_task: trio.lowlevel.Task) -> None:
            fired.append("closing")
            hub.close()

        hub.monitor(owner, closing)
        hub.monitor(owner, lambda _t: fired.append("after close"))
        nursery.cancel_scope.cancel()
    assert fired == ["closing"]


# -- any order of subscribe, cancel, exit and close -------------------------------------------


@dataclass
class _Watched:
    """A task of the machine's run; it exits (return, raise, cancelled) when told to."""

    task: trio.lowlevel.Task
    scope: trio.CancelScope
    how: list[str]
    go: trio.Event
    alive: bool = True


@dataclass
class _Sub:
    task: int
    ref: MonitorRef
    cancelled: bool = False
    due: bool = False  # its DOWN is owed (the task is gone)
    delivered: bool = False


class MonitorMachine(RuleBasedStateMachine):
    """Each live subscription gets exactly one DOWN, none after cancel or close."""

    rt: TrioThread

    @initialize()
    def open_hub(self) -> None:
        self.rt = TrioThread()
        self.watched: list[_Watched] = []
        self.subs: list[_Sub] = []
        self.fired: Counter[int] = Counter()
        self.closed = False
        self.before = self.rt.run(_instruments_now)
        self.hub_scope = trio.CancelScope()
        self.hub = self.rt.run(self._open_hub)

    async def _open_hub(self) -> MonitorHub:
        async def host(*, task_status: trio.TaskStatus[MonitorHub]) -> None:
            with self.hub_scope:
                async with open_monitor_hub() as hub:
                    task_status.started(hub)
                    await trio.sleep_forever()

        return await self.rt.nursery.start(host)

    async def _spawn(self) -> _Watched:
        async def body(
            how: list[str], go: trio.Event, *, task_status: trio.TaskStatus[trio.lowlevel.Task]
        ) -> None:
            task_status.started(trio.lowlevel.current_task())
            await go.wait()
            if how == ["raise"]:
                raise RuntimeError("watched task crashed")

        async def holder(*, task_status: trio.TaskStatus[_Watched]) -> None:
            how: list[str] = []
            go = trio.Event()
            try:
                async with trio.open_nursery() as nursery:
                    task = await nursery.start(body, how, go)
                    task_status.started(_Watched(task, nursery.cancel_scope, how, go))
            except* RuntimeError:
                pass

        return await self.rt.nursery.start(holder)

    async def _settle(self) -> None:
        await trio.testing.wait_all_tasks_blocked()

    def _down(self, index: int) -> None:
        self.fired[index] += 1

    @precondition(lambda self: len(self.watched) < 6)
    @rule()
    def spawn_task(self) -> None:
        self.watched.append(self.rt.run(self._spawn))

    @precondition(lambda self: self.watched and not self.closed)
    @rule(data=st.data(), cancel_at_once=st.booleans())
    def subscribe(self, data: st.DataObject, cancel_at_once: bool) -> None:
        which = data.draw(st.integers(0, len(self.watched) - 1))
        watched, index = self.watched[which], len(self.subs)

        async def subscribe() -> _Sub:
            ref = self.hub.monitor(watched.task, lambda _t: self._down(index))
            assert self.fired[index] == 0, "DOWN from inside monitor()"
            if cancel_at_once:
                ref.cancel()
            return _Sub(which, ref, cancelled=cancel_at_once, due=not watched.alive)

        self.subs.append(self.rt.run(subscribe))
        self.rt.run(self._settle)
        self._delivered()

    @precondition(lambda self: any(not s.cancelled for s in self.subs))
    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        sub = data.draw(st.sampled_from([s for s in self.subs if not s.cancelled]))
        sub.cancelled = True
        self.rt.run(_call, sub.ref.cancel)
        self.rt.run(_call, sub.ref.cancel)  # idempotent

    @precondition(lambda self: any(w.alive for w in self.watched))
    @rule(data=st.data(), how=st.sampled_from(["return", "raise", "cancelled"]))
    def task_exits(self, data: st.DataObject, how: str) -> None:
        watched = data.draw(st.sampled_from([w for w in self.watched if w.alive]))
        watched.alive = False
        for sub in self.subs:
            if self.watched[sub.task] is watched:
                sub.due = True

        async def end() -> None:
            if how == "cancelled":
                watched.scope.cancel()
            else:
                watched.how.append(how)
                watched.go.set()
            await trio.testing.wait_all_tasks_blocked()

        self.rt.run(end)
        self._delivered()

    @precondition(lambda self: not self.closed)
    @rule()
    def close_hub(self) -> None:
        self.closed = True
        self.rt.run(_call, self.hub_scope.cancel)
        self.rt.run(self._settle)
        assert self.rt.run(_instruments_now) == self.before, "the instrument outlived its hub"

    @precondition(lambda self: self.watched and self.closed)
    @rule()
    def closed_hub_refuses_subscriptions(self) -> None:
        async def subscribe() -> None:
            with pytest.raises(RuntimeError, match="closed"):
                self.hub.monitor(self.watched[0].task, lambda _t: None)

        self.rt.run(subscribe)

    def _delivered(self) -> None:
        """Every owed DOWN of a live subscription arrived; the others never do."""
        for index, sub in enumerate(self.subs):
            if sub.due and not sub.cancelled and not self.closed:
                sub.cancelled = True  # delivered: it can never fire again
                sub.delivered = True
            assert self.fired[index] == int(sub.delivered), (index, sub, self.fired[index])

    @invariant()
    def counts_match_live_subscriptions(self) -> None:
        if not hasattr(self, "rt") or self.closed:
            return
        live = Counter(s.task for s in self.subs if not s.cancelled and self.watched[s.task].alive)
        for i, watched in enumerate(self.watched):
            assert self.hub.subscriber_count(watched.task) == live[i]
        assert self.hub.watched_tasks() == len(live)

    def teardown(self) -> None:
        if not hasattr(self, "rt"):
            return
        try:
            for watched in self.watched:
                if watched.alive:
                    self.task_exits_now(watched)
            self.rt.run(self._settle)
            self._delivered()
        finally:
            self.rt.close()

    def task_exits_now(self, watched: _Watched) -> None:
        watched.alive = False
        for sub in self.subs:
            if self.watched[sub.task] is watched:
                sub.due = True
        self.rt.run(_call, watched.scope.cancel)


async def _call(fn: object) -> None:
    assert callable(fn)
    fn()


async def _instruments_now() -> list[trio.abc.Instrument]:
    return _instruments()


MonitorMachine.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestMonitorMachine = MonitorMachine.TestCase
