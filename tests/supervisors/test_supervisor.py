"""Supervisor behaviour against OTP semantics, on trio's mock clock."""

from __future__ import annotations

import math
from typing import Any

import pytest
import structlog.testing
import trio
import trio.testing

from supervisors import (
    BRUTAL_KILL,
    ChildSpec,
    RestartIntensityExceeded,
    StartError,
    Supervisor,
)
from tests.conftest import count_tasks
from tests.supervisors.helpers import Harness

S, T = "start", "stop"

# strategy, restart type of the middle child "b", how b exits -> expected log after the exit.
# Written out by hand from OTP's documentation, independent of supervisors._policy.
RESTART_TABLE: list[tuple[str, str, str, list[tuple[str, str]]]] = [
    ("one_for_one", "permanent", "crash", [(S, "b")]),
    ("one_for_one", "permanent", "normal", [(S, "b")]),
    ("one_for_one", "transient", "crash", [(S, "b")]),
    ("one_for_one", "transient", "normal", []),
    ("one_for_one", "temporary", "crash", []),
    ("one_for_one", "temporary", "normal", []),
    ("one_for_all", "permanent", "crash", [(T, "c"), (T, "a"), (S, "a"), (S, "b"), (S, "c")]),
    ("one_for_all", "permanent", "normal", [(T, "c"), (T, "a"), (S, "a"), (S, "b"), (S, "c")]),
    ("one_for_all", "transient", "crash", [(T, "c"), (T, "a"), (S, "a"), (S, "b"), (S, "c")]),
    ("one_for_all", "transient", "normal", []),
    ("one_for_all", "temporary", "crash", []),
    ("one_for_all", "temporary", "normal", []),
    ("rest_for_one", "permanent", "crash", [(T, "c"), (S, "b"), (S, "c")]),
    ("rest_for_one", "permanent", "normal", [(T, "c"), (S, "b"), (S, "c")]),
    ("rest_for_one", "transient", "crash", [(T, "c"), (S, "b"), (S, "c")]),
    ("rest_for_one", "transient", "normal", []),
    ("rest_for_one", "temporary", "crash", []),
    ("rest_for_one", "temporary", "normal", []),
]


@pytest.mark.parametrize(("strategy", "restart", "exit_kind", "expected"), RESTART_TABLE)
async def test_restart_table(
    strategy: str, restart: str, exit_kind: str, expected: list[tuple[str, str]]
) -> None:
    h = Harness()
    sup = Supervisor([h.spec("a"), h.spec("b", restart), h.spec("c")], strategy=strategy)
    async with trio.open_nursery() as nursery:
        await nursery.start(sup.run)
        assert h.take_log() == [(S, "a"), (S, "b"), (S, "c")]
        h.controls["b"].order(exit_kind)
        await trio.testing.wait_all_tasks_blocked()
        assert h.take_log() == expected
        ids = [c.id for c in sup.which_children()]
        assert ids == (["a", "c"] if restart == "temporary" else ["a", "b", "c"])
        running = {c.id for c in sup.which_children() if c.running}
        assert running == (
            {"a", "c"} if restart != "permanent" and not expected else {"a", "b", "c"}
        )
        sup.request_stop()
    assert h.take_log() == [(T, c) for c in reversed(sorted(running))]


async def test_restarts_are_counted_per_child() -> None:
    h = Harness()
    sup = Supervisor([h.spec("a"), h.spec("b"), h.spec("c")], strategy="rest_for_one")
    async with trio.open_nursery() as nursery:
        await nursery.start(sup.run)
        h.controls["b"].order("crash")
        await trio.testing.wait_all_tasks_blocked()
        h.controls["c"].order("crash")
        await trio.testing.wait_all_tasks_blocked()
        assert sup.restarts == {"b": 1, "c": 2}
        sup.request_stop()


@pytest.mark.parametrize("restart", ["permanent", "transient", "temporary"])
@pytest.mark.parametrize("strategy", ["one_for_one", "one_for_all", "rest_for_one"])
async def test_terminate_child_is_a_shutdown_never_a_restart(strategy: str, restart: str) -> None:
    h = Harness()
    sup = Supervisor([h.spec("a"), h.spec("b", restart), h.spec("c")], strategy=strategy)
    async with trio.open_nursery() as nursery:
        await nursery.start(sup.run)
        h.take_log()
        await sup.terminate_child("b")
        await trio.testing.wait_all_tasks_blocked()
        assert h.take_log() == [(T, "b")]
        assert ("b" in [c.id for c in sup.which_children()]) == (restart != "temporary")
        sup.request_stop()


async def test_group_restart_drops_temporary_siblings() -> None:
    h = Harness()
    sup = Supervisor([h.spec("a"), h.spec("b"), h.spec("c", "temporary")], strategy="one_for_all")
    async with trio.open_nursery() as nursery:
        await nursery.start(sup.run)
        h.take_log()
        h.controls["a"].order("crash")
        await trio.testing.wait_all_tasks_blocked()
        assert h.take_log() == [(T, "c"), (T, "b"), (S, "a"), (S, "b")]
        assert [c.id for c in sup.which_children()] == ["a", "b"]
        sup.request_stop()


async def test_intensity_escalates_exactly_when_exceeded(
    autojump_clock: trio.testing.MockClock,
) -> None:
    h = Harness()
    sup = Supervisor(
        [h.spec("a"), h.spec("b"), h.spec("c")], max_restarts=2, max_seconds=10, name="root"
    )
    with pytest.raises(ExceptionGroup) as info:
        async with trio.open_nursery() as nursery:
            await nursery.start(sup.run)
            for _ in range(2):  # two restarts are allowed
                h.controls["b"].order("crash")
                await trio.sleep(1)
            h.take_log()
            assert sup.count_children().active == 3
            h.controls["b"].order("crash")  # the third within 10 s is one too many
            await trio.sleep(1)
    assert info.group_contains(RestartIntensityExceeded, match="more than 2 restarts")
    # Escalation stopped the others in reverse order and did not restart b.
    assert h.take_log() == [(T, "c"), (T, "a")]


async def test_intensity_window_slides(autojump_clock: trio.testing.MockClock) -> None:
    h = Harness()
    sup = Supervisor([h.spec("a")], max_restarts=1, max_seconds=5)
    async with trio.open_nursery() as nursery:
        await nursery.start(sup.run)
        for _ in range(10):  # one crash every 6 s never puts two restarts in one 5 s window
            h.controls["a"].order("crash")
            await trio.sleep(6)
        assert sup.count_children().active == 1
        sup.request_stop()


async def test_failed_restart_counts_toward_intensity(
    autojump_clock: trio.testing.MockClock,
) -> None:
    h = Harness()
    sup = Supervisor([h.spec("a"), h.spec("b")], max_restarts=3, max_seconds=60)
    with pytest.raises(ExceptionGroup) as info:
        async with trio.open_nursery() as nursery:
            await nursery.start(sup.run)
            h.take_log()
            h.fail_start.add("b")
            h.controls["b"].order("crash")
    assert info.group_contains(RestartIntensityExceeded)
    assert h.take_log() == [("start-failed", "b")] * 3 + [(T, "a")]


async def test_static_start_failure_stops_started_children_in_reverse() -> None:
    h = Harness()
    h.fail_start.add("c")
    sup = Supervisor([h.spec("a"), h.spec("b"), h.spec("c"), h.spec("d")])
    async with trio.open_nursery() as nursery:
        with pytest.raises(StartError) as info:
            await nursery.start(sup.run)
    assert info.value.child_id == "c"
    assert h.take_log() == [(S, "a"), (S, "b"), ("start-failed", "c"), (T, "b"), (T, "a")]


async def test_outer_cancellation_still_stops_in_reverse_order() -> None:
    h = Harness()
    sup = Supervisor([h.spec(x) for x in "abcd"])
    async with trio.open_nursery() as nursery:
        await nursery.start(sup.run)
        h.take_log()
        nursery.cancel_scope.cancel()
    assert h.take_log() == [(T, "d"), (T, "c"), (T, "b"), (T, "a")]


class Graceful:
    """A started value with request_stop(): the child needs ``need`` seconds to stop."""

    def __init__(self) -> None:
        self.requested = trio.Event()

    def request_stop(self) -> None:
        self.requested.set()


async def graceful_child(
    need: float, log: list[str], *, task_status: trio.TaskStatus[Graceful]
) -> None:
    value = Graceful()
    task_status.started(value)
    try:
        await value.requested.wait()
        await trio.sleep(need)
        log.append(f"graceful@{trio.current_time():g}")
    except trio.Cancelled:
        log.append(f"killed@{trio.current_time():g}")
        raise


@pytest.mark.parametrize(
    ("need", "shutdown", "expected"),
    [(2.0, 5.0, "graceful@2"), (10.0, 5.0, "killed@5"), (2.0, BRUTAL_KILL, "killed@0")],
)
async def test_shutdown_time_then_cancel(
    need: float, shutdown: Any, expected: str, autojump_clock: trio.testing.MockClock
) -> None:
    log: list[str] = []
    sup = Supervisor([ChildSpec("g", graceful_child, (need, log), shutdown=shutdown)])
    async with trio.open_nursery() as nursery:
        await nursery.start(sup.run)
        sup.request_stop()
    assert log == [expected]


async def test_nested_supervisor_escalation_restarts_subtree(
    autojump_clock: trio.testing.MockClock,
) -> None:
    h = Harness()
    inner = Supervisor([h.spec("x"), h.spec("y")], max_restarts=0, name="inner")
    outer = Supervisor(
        [h.spec("a"), ChildSpec("inner", inner.run, shutdown=math.inf)],
        strategy="one_for_one",
        name="outer",
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(outer.run)
        assert h.take_log() == [(S, "a"), (S, "x"), (S, "y")]
        assert outer.count_children().supervisors == 1
        h.controls["x"].order("crash")  # inner allows 0 restarts: escalates to outer
        await trio.testing.wait_all_tasks_blocked()
        assert h.take_log() == [(T, "y"), (S, "x"), (S, "y")]
        assert [c.running for c in outer.which_children()] == [True, True]
        outer.request_stop()
    assert h.take_log() == [(T, "y"), (T, "x"), (T, "a")]


async def test_dynamic_children() -> None:
    h = Harness()
    sup = Supervisor([h.spec("a")])
    async with trio.open_nursery() as nursery:
        await nursery.start(sup.run)
        control = await sup.start_child(h.spec("dyn", "transient"))
        assert control is h.controls["dyn"]
        with pytest.raises(ValueError, match="already exists"):
            await sup.start_child(h.spec("dyn"))
        h.fail_start.add("bad")
        with pytest.raises(StartError):
            await sup.start_child(h.spec("bad"))
        assert [c.id for c in sup.which_children()] == ["a", "dyn"]
        counts = sup.count_children()
        assert (counts.specs, counts.active, counts.workers, counts.supervisors) == (2, 2, 2, 0)
        await sup.terminate_child("dyn")
        assert sup.count_children().active == 1
        with pytest.raises(RuntimeError, match="running"):
            await sup.delete_child("a")
        await sup.restart_child("dyn")
        assert sup.count_children().active == 2
        await sup.terminate_child("dyn")
        await sup.delete_child("dyn")
        with pytest.raises(KeyError):
            await sup.terminate_child("dyn")
        sup.request_stop()


async def test_no_task_leaks_after_many_restarts(autojump_clock: trio.testing.MockClock) -> None:
    h = Harness()
    baseline = count_tasks()
    sup = Supervisor([h.spec(x) for x in "abc"], strategy="one_for_all", max_restarts=1000)
    async with trio.open_nursery() as nursery:
        await nursery.start(sup.run)
        for i in range(50):
            h.controls["abc"[i % 3]].order("crash")
            await trio.testing.wait_all_tasks_blocked()
        # supervisor task + 3 children (+ the nursery's own task is this one)
        assert count_tasks() == baseline + 4
        sup.request_stop()
    assert count_tasks() == baseline


async def test_structlog_events_carry_child_id(autojump_clock: trio.testing.MockClock) -> None:
    h = Harness()
    sup = Supervisor([h.spec("a")], max_restarts=1, name="logs")
    with structlog.testing.capture_logs() as events, pytest.raises(ExceptionGroup):
        async with trio.open_nursery() as nursery:
            await nursery.start(sup.run)
            h.controls["a"].order("crash")
            await trio.testing.wait_all_tasks_blocked()
            h.controls["a"].order("crash")
            await trio.testing.wait_all_tasks_blocked()
    names = [(e["event"], e.get("child_id")) for e in events]
    assert ("supervisor_started", None) in names
    assert names.count(("child_crashed", "a")) == 2
    assert ("child_restarted", "a") in names
    assert ("supervisor_escalating", "a") in names
    crashed = next(e for e in events if e["event"] == "child_crashed")
    assert "a crashed" in crashed["reason"]
    assert crashed["supervisor"] == "logs"


def test_child_spec_validation() -> None:
    async def start(*, task_status: Any) -> None: ...

    with pytest.raises(ValueError, match="id"):
        ChildSpec("", start)
    with pytest.raises(ValueError, match="shutdown"):
        ChildSpec("x", start, shutdown=-1)
    with pytest.raises(ValueError, match="not a valid Restart"):
        ChildSpec("x", start, restart="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="duplicate"):
        Supervisor([ChildSpec("x", start), ChildSpec("x", start)])
    with pytest.raises(ValueError, match="max_restarts"):
        Supervisor([], max_restarts=-1)


async def test_failed_restart_lets_a_queued_sibling_exit_be_handled_first(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """rest_for_one: "b" needs "a" to start. Both die at once and b's exit is handled first:
    b's restart fails while a is down. OTP's try_again queues the retry behind a's exit, which
    restarts a then b — instead of retrying b in a tight loop until intensity escalates."""
    alive: dict[str, bool] = {}
    log: list[str] = []
    controls: dict[str, trio.Event] = {}

    async def child(name: str, *, task_status: trio.TaskStatus[None]) -> None:
        if name == "b" and not alive.get("a"):
            log.append("b-start-failed")
            raise RuntimeError("a is down")
        alive[name] = True
        log.append(f"start-{name}")
        controls[name] = trio.Event()
        task_status.started()
        try:
            await controls[name].wait()
        finally:
            alive[name] = False
        if name == "b":
            controls["a"].set()  # a dies right after b: b's exit is queued first
        raise RuntimeError(f"{name} crashed")

    sup = Supervisor(
        [ChildSpec("a", child, ("a",)), ChildSpec("b", child, ("b",))],
        strategy="rest_for_one",
        max_restarts=5,
        max_seconds=10,
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(sup.run)
        log.clear()
        controls["b"].set()
        await trio.testing.wait_all_tasks_blocked()
        assert [c.running for c in sup.which_children()] == [True, True]
        assert log[-2:] == ["start-a", "start-b"]
        assert log.count("b-start-failed") <= 1  # one failed try, then a is restarted first
        sup.request_stop()
