"""ActorRef.call_nowait: the inline fast path keeps every guarantee of a mailbox call."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from supervisors import ActorGone, ActorRef, ChildSpec, ErrorReply, Supervisor, start_actor
from supervisors.actor import NOREPLY, Actor, ReplyTo, actor_starter


class Counter(Actor):
    """Counts in its own task or inline; ``seen`` records the order handlers ran in."""

    name = "counter"

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []
        self.tasks: list[trio.lowlevel.Task] = []

    async def handle_call(self, msg: Any, reply_to: ReplyTo) -> Any:
        self.tasks.append(trio.lowlevel.current_task())
        if isinstance(msg, tuple) and msg[0] == "sleep":
            await trio.sleep(msg[1])
        self.seen.append(("mailbox", msg))
        return msg

    async def handle_cast(self, msg: Any) -> None:
        self.seen.append(("cast", msg))

    def handle_call_nowait(self, msg: Any) -> Any:
        self.tasks.append(trio.lowlevel.current_task())
        if msg == "async-only":
            raise trio.WouldBlock
        if msg == "boom":
            raise RuntimeError("inline boom")
        if msg == "refuse":
            return ErrorReply(KeyError("refused"))
        if msg == "noreply":
            return NOREPLY
        if msg == "nested":
            return self.ref.call_nowait("inner")
        self.seen.append(("inline", msg))
        return msg


async def test_idle_actor_answers_in_the_callers_task() -> None:
    actor = Counter()
    async with trio.open_nursery() as nursery:
        ref = await start_actor(nursery, actor)
        await trio.testing.wait_all_tasks_blocked()
        assert ref.call_nowait("a") == "a"
        assert actor.tasks == [trio.lowlevel.current_task()]
        assert await ref.call("b") == "b"  # the mailbox path still works after it
        assert ref.call_nowait("c") == "c"
        assert actor.seen == [("inline", "a"), ("mailbox", "b"), ("inline", "c")]
        ref.request_stop()


async def test_busy_actor_refuses_so_no_handler_overlaps(
    autojump_clock: trio.testing.MockClock,
) -> None:
    actor = Counter()
    async with trio.open_nursery() as nursery:
        ref = await start_actor(nursery, actor)
        nursery.start_soon(ref.call, ("sleep", 5), None)
        await trio.testing.wait_all_tasks_blocked()  # the handler is mid-await
        with pytest.raises(trio.WouldBlock):
            ref.call_nowait("x")
        await trio.sleep(10)
        assert ref.call_nowait("x") == "x"
        ref.request_stop()


async def test_queued_mail_keeps_its_turn() -> None:
    actor = Counter()
    async with trio.open_nursery() as nursery:
        ref = await start_actor(nursery, actor)
        await trio.testing.wait_all_tasks_blocked()
        ref.cast("first")  # posted; the actor has not taken it yet
        with pytest.raises(trio.WouldBlock):
            ref.call_nowait("second")
        await trio.testing.wait_all_tasks_blocked()
        assert ref.call_nowait("second") == "second"
        assert actor.seen == [("cast", "first"), ("inline", "second")]
        ref.request_stop()


async def test_messages_without_a_sync_handler_fall_back() -> None:
    async with trio.open_nursery() as nursery:
        ref = await start_actor(nursery, Counter())
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(trio.WouldBlock):
            ref.call_nowait("async-only")
        assert await ref.call("async-only") == "async-only"
        ref.request_stop()


async def test_error_reply_raises_and_the_actor_lives() -> None:
    async with trio.open_nursery() as nursery:
        ref = await start_actor(nursery, Counter())
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(KeyError):
            ref.call_nowait("refuse")
        assert ref.call_nowait("ok") == "ok"
        with pytest.raises(TypeError, match="NOREPLY"):
            ref.call_nowait("noreply")
        assert ref.alive
        ref.request_stop()


async def test_nested_inline_call_on_the_same_actor_is_refused() -> None:
    async with trio.open_nursery() as nursery:
        ref = await start_actor(nursery, Counter())
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(trio.WouldBlock):
            ref.call_nowait("nested")
        assert ref.call_nowait("after") == "after"  # the refusal left it idle
        ref.request_stop()


async def test_inline_crash_kills_the_actor_and_its_supervisor_restarts_it() -> None:
    refs: list[ActorRef] = []
    actors: list[Counter] = []

    def make() -> Counter:
        actors.append(Counter())
        return actors[-1]

    sup = Supervisor([ChildSpec("counter", actor_starter(make))], strategy="one_for_one")
    async with trio.open_nursery() as nursery:
        await nursery.start(sup.run)
        await trio.testing.wait_all_tasks_blocked()
        refs.append(actors[0].ref)
        with pytest.raises(ActorGone) as info:
            refs[0].call_nowait("boom")
        assert isinstance(info.value.reason, RuntimeError)
        # Dying: no more inline turns, and a queued call is failed, not lost.
        with pytest.raises(ActorGone):
            refs[0].call_nowait("late")
        await trio.testing.wait_all_tasks_blocked()
        assert not refs[0].alive
        assert isinstance(refs[0].exit_reason, RuntimeError)
        assert len(actors) == 2  # restarted with a fresh actor
        assert actors[1].ref.call_nowait("fresh") == "fresh"
        sup.request_stop()


async def test_gone_and_stopping_actors() -> None:
    async with trio.open_nursery() as nursery:
        ref = await start_actor(nursery, Counter())
        await trio.testing.wait_all_tasks_blocked()
        ref.request_stop()
        with pytest.raises(trio.WouldBlock):  # stopping: the mailbox path reports the exit
            ref.call_nowait("x")
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(ActorGone):
            ref.call_nowait("x")
