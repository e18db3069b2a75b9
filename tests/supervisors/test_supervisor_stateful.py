"""Hypothesis state machine: crash, exit, stop and add children in random order; compare every
start and stop against an independent model of OTP supervision."""

from __future__ import annotations

from dataclasses import dataclass

import trio
import trio.testing
from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from supervisors import RestartIntensityExceeded, Supervisor
from tests.conftest import count_tasks
from tests.supervisors.helpers import Harness
from tests.trio_thread import TrioThread

RESTARTS = st.sampled_from(["permanent", "transient", "temporary"])


@dataclass
class ModelChild:
    id: str
    restart: str
    running: bool = True


class SupervisorMachine(RuleBasedStateMachine):
    rt: TrioThread

    @initialize(
        strategy=st.sampled_from(["one_for_one", "one_for_all", "rest_for_one"]),
        restarts=st.lists(RESTARTS, min_size=1, max_size=5),
        max_restarts=st.integers(0, 4),
        max_seconds=st.integers(1, 10),
    )
    def setup(
        self, strategy: str, restarts: list[str], max_restarts: int, max_seconds: int
    ) -> None:
        self.rt = TrioThread()
        self.h = Harness()
        self.strategy, self.max_restarts, self.max_seconds = strategy, max_restarts, max_seconds
        self.children = [ModelChild(f"c{i}", r) for i, r in enumerate(restarts)]
        self.next_id = len(restarts)
        self.now = 0.0
        self.stamps: list[float] = []
        self.escalated = False
        self.error: BaseException | None = None
        self.done = trio.Event()
        self.sup = Supervisor(
            [self.h.spec(c.id, c.restart) for c in self.children],
            strategy=strategy,
            max_restarts=max_restarts,
            max_seconds=max_seconds,
        )
        self.baseline = self.rt.run(self._start)
        assert self.h.take_log() == [("start", c.id) for c in self.children]

    async def _start(self) -> int:
        baseline = await _count()

        async def runner(*, task_status: trio.TaskStatus[Supervisor]) -> None:
            try:
                await self.sup.run(task_status=task_status)
            except RestartIntensityExceeded as exc:
                self.error = exc
            finally:
                self.done.set()

        await self.rt.nursery.start(runner)
        return baseline

    async def _settle(self) -> None:
        await trio.testing.wait_all_tasks_blocked()

    async def _order(self, cid: str, kind: str) -> None:
        self.h.controls[cid].order(kind)
        await trio.testing.wait_all_tasks_blocked()

    # ---------------------------------------------------------------- the model

    def _model_exit(self, child: ModelChild, kind: str) -> list[tuple[str, str]]:
        child.running = False
        if child.restart == "temporary":
            self.children.remove(child)
            return []
        if child.restart == "transient" and kind == "normal":
            return []
        self.stamps = [t for t in self.stamps if t > self.now - self.max_seconds] + [self.now]
        if len(self.stamps) > self.max_restarts:
            self.escalated = True
            expected = [("stop", c.id) for c in reversed(self.children) if c.running]
            for c in self.children:
                c.running = False
            return expected
        index = self.children.index(child)
        group = {
            "one_for_one": [child],
            "one_for_all": list(self.children),
            "rest_for_one": self.children[index:],
        }[self.strategy]
        expected = []
        for c in reversed(group):
            if c is not child and c.running:
                expected.append(("stop", c.id))
                c.running = False
        for c in group:
            if c is not child and c.restart == "temporary":
                self.children.remove(c)
        for c in group:
            if c in self.children:
                expected.append(("start", c.id))
                c.running = True
        return expected

    def _running(self) -> list[str]:
        return [c.id for c in self.children if c.running]

    # ---------------------------------------------------------------- rules

    @precondition(lambda self: not self.escalated and any(c.running for c in self.children))
    @rule(data=st.data(), kind=st.sampled_from(["crash", "normal"]))
    def child_exits(self, data: st.DataObject, kind: str) -> None:
        cid = data.draw(st.sampled_from(self._running()))
        child = next(c for c in self.children if c.id == cid)
        expected = self._model_exit(child, kind)
        self.rt.run(self._order, cid, kind)
        assert self.h.take_log() == expected
        assert (self.error is not None) == self.escalated

    @precondition(lambda self: not self.escalated)
    @rule(seconds=st.sampled_from([0.5, 1.0, 3.0, 11.0]))
    def time_passes(self, seconds: float) -> None:
        self.now += seconds
        self.rt.jump(seconds)

    @precondition(lambda self: not self.escalated and any(c.running for c in self.children))
    @rule(data=st.data())
    def terminate_child(self, data: st.DataObject) -> None:
        cid = data.draw(st.sampled_from(self._running()))
        child = next(c for c in self.children if c.id == cid)
        self.rt.run(self.sup.terminate_child, cid)
        assert self.h.take_log() == [("stop", cid)]
        child.running = False
        if child.restart == "temporary":
            self.children.remove(child)

    @precondition(lambda self: not self.escalated and any(not c.running for c in self.children))
    @rule(data=st.data())
    def restart_child(self, data: st.DataObject) -> None:
        cid = data.draw(st.sampled_from([c.id for c in self.children if not c.running]))
        self.rt.run(self.sup.restart_child, cid)
        assert self.h.take_log() == [("start", cid)]
        next(c for c in self.children if c.id == cid).running = True

    @precondition(lambda self: not self.escalated and len(self.children) < 7)
    @rule(restart=RESTARTS)
    def add_child(self, restart: str) -> None:
        cid = f"c{self.next_id}"
        self.next_id += 1
        self.rt.run(self.sup.start_child, self.h.spec(cid, restart))
        assert self.h.take_log() == [("start", cid)]
        self.children.append(ModelChild(cid, restart))

    @precondition(lambda self: self.escalated)
    @rule()
    def escalated_supervisor_is_down(self) -> None:
        assert isinstance(self.error, RestartIntensityExceeded)
        assert self.done.is_set()
        assert self.h.take_log() == []

    @invariant()
    def children_match_model(self) -> None:
        if self.escalated:
            return
        rows = [(c.id, c.running) for c in self.sup.which_children()]
        assert rows == [(c.id, c.running) for c in self.children]

    def teardown(self) -> None:
        if not hasattr(self, "rt"):
            return
        try:
            if not self.escalated:
                expected = [("stop", cid) for cid in reversed(self._running())]
                trio.from_thread.run_sync(self.sup.request_stop, trio_token=self.rt.token)
            else:
                expected = []
            self.rt.run(self._settle)
            assert self.done.is_set(), "supervisor did not stop"
            assert self.h.take_log() == expected
            assert self.rt.run(_count) == self.baseline  # no leaked tasks
        finally:
            self.rt.close()


async def _count() -> int:
    return count_tasks() - 1  # minus the from_thread task running this


SupervisorMachine.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestSupervisorMachine = SupervisorMachine.TestCase
