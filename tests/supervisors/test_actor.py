"""Each guarantee of supervisors.Actor, with a test that fails without it."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from supervisors import ActorGone, Busy, CallTimeout, start_actor
from tests.supervisors.helpers import Echo


async def test_call_cast_info_round_trip() -> None:
    log: list[Any] = []
    async with trio.open_nursery() as nursery:
        ref = await start_actor(nursery, Echo(log))
        assert await ref.call("ping") == "ping"
        ref.cast("c1")
        ref.send("i1")
        assert await ref.call("sync") == "sync"  # mailbox is FIFO: cast and info ran first
        assert log == ["init", ("cast", "c1"), ("info", "i1")]
        ref.request_stop()
    assert not ref.alive
    assert ref.exit_reason == "shutdown"


async def test_error_reply_raises_in_caller_and_actor_lives() -> None:
    async with trio.open_nursery() as nursery:
        ref = await start_actor(nursery, Echo())
        with pytest.raises(KeyError):
            await ref.call(("error", KeyError("nope")))
        assert ref.alive
        assert await ref.call("still here") == "still here"
        ref.request_stop()


async def test_full_mailbox_answers_busy_at_once(autojump_clock: trio.testing.MockClock) -> None:
    async with trio.open_nursery() as nursery:
        ref = await start_actor(nursery, Echo())
        nursery.start_soon(ref.call, ("sleep", 100), None)
        await trio.testing.wait_all_tasks_blocked()  # handler is busy sleeping
        for i in range(Echo.mailbox_size):
            ref.cast(i)  # fills the mailbox
        before = trio.current_time()
        with pytest.raises(Busy):
            await ref.call("one more")
        with pytest.raises(Busy):
            ref.cast("one more")
        with pytest.raises(Busy):
            ref.send("one more")
        assert trio.current_time() == before  # answered at once, no waiting
        ref.request_stop()


async def test_caller_timeout_covers_wait_and_never_harms_actor(
    autojump_clock: trio.testing.MockClock,
) -> None:
    actor = Echo()
    async with trio.open_nursery() as nursery:
        ref = await start_actor(nursery, actor)
        start = trio.current_time()
        with pytest.raises(CallTimeout) as info:
            await ref.call(("sleep", 10), timeout=1.5)
        assert trio.current_time() - start == pytest.approx(1.5)
        assert info.value.timeout == 1.5
        # The actor finishes the slow handler, its late reply is dropped, it keeps serving.
        assert await ref.call("after", timeout=60) == "after"
        assert ref.alive
        ref.request_stop()


async def test_cancelled_caller_never_harms_actor(autojump_clock: trio.testing.MockClock) -> None:
    async with trio.open_nursery() as nursery:
        ref = await start_actor(nursery, Echo())
        with trio.move_on_after(1):
            await ref.call(("sleep", 5), timeout=None)
        assert await ref.call("next") == "next"
        ref.request_stop()


async def test_deferred_reply_from_another_task_first_write_wins() -> None:
    actor = Echo()
    async with trio.open_nursery() as nursery:
        ref = await start_actor(nursery, actor)
        results: list[Any] = []

        async def caller() -> None:
            results.append(await ref.call(("defer",)))

        nursery.start_soon(caller)
        await trio.testing.wait_all_tasks_blocked()
        assert len(actor.deferred) == 1
        # The actor serves other calls while the deferred one waits.
        assert await ref.call("meanwhile") == "meanwhile"
        slot = actor.deferred[0]
        assert slot.reply("later") is True
        assert slot.reply("too late") is False  # dropped silently
        await trio.testing.wait_all_tasks_blocked()
        assert results == ["later"]
        ref.request_stop()


async def test_crash_fails_in_flight_queued_and_deferred_callers() -> None:
    log: list[Any] = []
    actor = Echo(log)
    outcomes: dict[str, Any] = {}

    async def caller(label: str, msg: Any) -> None:
        try:
            outcomes[label] = await ref.call(msg, timeout=None)
        except ActorGone as exc:
            outcomes[label] = exc

    with pytest.raises(ExceptionGroup) as group:
        async with trio.open_nursery() as nursery:
            ref = await start_actor(nursery, actor)
            # Enqueue one by one (trio shuffles start order): deferred, busy, queued, crash, after.
            gate = trio.Event()
            for label, msg in [
                ("deferred", ("defer",)),
                ("crasher", ("wait", gate)),
                ("queued", "q"),
                ("crash", ("crash",)),
                ("after-crash", "a"),
            ]:
                nursery.start_soon(caller, label, msg)
                await trio.testing.wait_all_tasks_blocked()
            gate.set()
    assert group.group_contains(RuntimeError, match="boom")
    assert outcomes["crasher"] == "waited"
    assert outcomes["queued"] == "q"
    for label in ("deferred", "crash", "after-crash"):
        err = outcomes[label]
        assert isinstance(err, ActorGone), label
        assert isinstance(err.reason, RuntimeError)
    assert ("terminate", "RuntimeError") in log
    with pytest.raises(ActorGone):
        await ref.call("anyone?")
    with pytest.raises(ActorGone):
        ref.cast("anyone?")


async def test_terminate_runs_on_cancellation() -> None:
    log: list[Any] = []
    async with trio.open_nursery() as nursery:
        ref = await start_actor(nursery, Echo(log))
        nursery.cancel_scope.cancel()
    assert ("terminate", "killed") in log
    assert not ref.alive


async def test_terminate_is_shielded_and_time_bounded(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[Any] = []
    actor = Echo(log, terminate_sleep=3)  # shorter than terminate_timeout: completes, shielded
    async with trio.open_nursery() as nursery:
        await start_actor(nursery, actor)
        nursery.cancel_scope.cancel()
    assert log[-1] == "terminate-finished"

    log2: list[Any] = []
    slow = Echo(log2, terminate_sleep=1000)  # longer than terminate_timeout: abandoned
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        ref = await start_actor(nursery, slow)
        ref.request_stop()
    assert ("terminate", "shutdown") in log2
    assert "terminate-finished" not in log2
    assert trio.current_time() - start == pytest.approx(Echo.terminate_timeout)


async def test_init_failure_raises_from_start_and_skips_terminate() -> None:
    log: list[Any] = []

    class BadInit(Echo):
        async def init(self) -> None:
            raise ValueError("bad config")

    async with trio.open_nursery() as nursery:
        with pytest.raises(ValueError, match="bad config"):
            await start_actor(nursery, BadInit(log))
    assert not any(isinstance(e, tuple) and e[0] == "terminate" for e in log)


async def test_crash_in_cast_crashes_actor_and_fails_waiters() -> None:
    with pytest.raises(ExceptionGroup) as group:
        async with trio.open_nursery() as nursery:
            ref = await start_actor(nursery, Echo())
            ref.cast("crash")
            with pytest.raises(ActorGone):
                await ref.call("x", timeout=None)
    assert group.group_contains(RuntimeError, match="cast boom")


async def test_self_stop_with_reason() -> None:
    class Quitter(Echo):
        async def handle_cast(self, msg: Any) -> None:
            self.stop("done")

    async with trio.open_nursery() as nursery:
        ref = await start_actor(nursery, Quitter())
        ref.cast("quit")
    assert ref.exit_reason == "done"


class WhereAmI(Echo):
    """Answers every call with the name of the task that ran the handler."""

    async def handle_call(self, msg: Any, reply_to: Any) -> Any:
        return trio.lowlevel.current_task().name


async def test_every_call_is_handled_in_the_actors_own_task() -> None:
    async with trio.open_nursery() as nursery:
        ref = await start_actor(nursery, WhereAmI())
        await trio.testing.wait_all_tasks_blocked()  # the actor is idle: still its own task
        assert await ref.call("where?") == "actor:WhereAmI"
        ref.request_stop()


class CallLog(Echo):
    """Logs every call it handles."""

    async def handle_call(self, msg: Any, reply_to: Any) -> Any:
        self.log.append(("call", msg))
        return msg


async def test_a_cancelled_caller_sends_nothing() -> None:
    log: list[Any] = []
    async with trio.open_nursery() as nursery:
        ref = await start_actor(nursery, CallLog(log))
        with trio.CancelScope() as scope:
            scope.cancel()
            await ref.call("never delivered")
        assert scope.cancelled_caught
        assert await ref.call("sync") == "sync"
        ref.request_stop()
    assert log == ["init", ("call", "sync"), ("terminate", "shutdown")]


async def test_a_stopped_actor_refuses_every_message() -> None:
    async with trio.open_nursery() as nursery:
        ref = await start_actor(nursery, Echo())
        ref.request_stop()
    for send in (ref.cast, ref.send):
        with pytest.raises(ActorGone):
            send("late")
    with pytest.raises(ActorGone):
        await ref.call("late")
