"""``Actor._idle``, the one flag ``call_nowait`` tests, always says what trio says.

``call_nowait`` runs a call inline only when the actor is parked in its mailbox receive with
nothing queued, not stopping and not crashed. The actor keeps that as one cached flag
(``_idle``); here random sequences of calls, casts, inline self-posts, stops and crashes
check the flag against an independent reading of the same facts: the mailbox channel's own
statistics (the actor task is the one receiver waiting, the buffer is empty).
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import given, settings, strategies as st

from supervisors import ActorGone, ActorRef, start_actor
from supervisors.actor import Actor, ReplyTo


class Echo(Actor):
    name = "echo"

    async def handle_call(self, msg: Any, reply_to: ReplyTo) -> Any:
        if msg == "sleep":
            await trio.lowlevel.checkpoint()
        return msg

    async def handle_cast(self, msg: Any) -> None:
        pass

    def handle_call_nowait(self, msg: Any) -> Any:
        if msg == "cast-self":
            self.ref.cast("from-inside")  # mail queued while the inline call runs
        elif msg == "stop-self":
            self.stop()
        elif msg == "boom":
            raise RuntimeError("inline boom")
        elif msg == "would-block":
            raise trio.WouldBlock
        elif msg == "nested":
            return self.ref.call_nowait("inner")
        return msg


def _idle_by_trio(actor: Actor, ref: ActorRef) -> bool:
    stats = ref.mailbox_statistics()
    return (
        stats.tasks_waiting_receive == 1
        and stats.current_buffer_used == 0
        and actor._stop_reason is None
        and actor._inline_crash is None
    )


OPS = st.sampled_from(
    [
        "call_nowait",
        "cast-self",
        "would-block",
        "nested",
        "cast",
        "call",
        "call-sleep",
        "checkpoint",
        "settle",
        "stop-self",
        "boom",
    ]
)


async def _step(op: str, ref: ActorRef, nursery: trio.Nursery) -> None:
    if op in ("call_nowait", "cast-self", "would-block", "nested", "stop-self", "boom"):
        msg = "ping" if op == "call_nowait" else op
        with contextlib.suppress(trio.WouldBlock, ActorGone):
            assert ref.call_nowait(msg) == msg
    elif op == "cast":
        ref.cast("x")
    elif op in ("call", "call-sleep"):
        nursery.start_soon(_call, ref, "sleep" if op == "call-sleep" else "ping")
    elif op == "checkpoint":
        await trio.lowlevel.checkpoint()
    else:
        await trio.testing.wait_all_tasks_blocked()


async def _call(ref: ActorRef, msg: str) -> None:
    with contextlib.suppress(ActorGone):
        await ref.call(msg, timeout=None)


@settings(max_examples=500, deadline=None)
@given(st.lists(OPS, max_size=25))
def test_idle_flag_matches_the_mailbox(ops: list[str]) -> None:
    crashed: list[str] = []

    async def main() -> None:
        actor = Echo()
        try:
            async with trio.open_nursery() as nursery:
                ref = await start_actor(nursery, actor)
                for op in [*ops, "settle"]:
                    await _step(op, ref, nursery)
                    if ref._shared.actor is None:
                        break  # gone: call_nowait raises ActorGone, checked below
                    assert (actor._idle is True) == _idle_by_trio(actor, ref), op
                if ref.alive:
                    ref.request_stop()
        except* RuntimeError as group:  # the "boom" crash, propagated as from a linked task
            crashed.extend(str(exc) for exc in group.exceptions)
        assert actor._idle is not True
        with pytest.raises(ActorGone):
            ref.call_nowait("ping")

    trio.run(main)
    assert crashed in ([], ["inline boom"])


async def test_an_inline_call_that_posts_to_its_own_actor_leaves_it_busy() -> None:
    actor = Echo()
    async with trio.open_nursery() as nursery:
        ref = await start_actor(nursery, actor)
        await trio.testing.wait_all_tasks_blocked()
        assert ref.call_nowait("cast-self") == "cast-self"
        with pytest.raises(trio.WouldBlock):  # its own cast is queued: that goes first
            ref.call_nowait("ping")
        await trio.testing.wait_all_tasks_blocked()
        assert ref.call_nowait("ping") == "ping"
        ref.request_stop()


async def test_an_inline_call_that_stops_its_actor_leaves_it_stopping() -> None:
    actor = Echo()
    async with trio.open_nursery() as nursery:
        ref = await start_actor(nursery, actor)
        await trio.testing.wait_all_tasks_blocked()
        assert ref.call_nowait("stop-self") == "stop-self"
        with pytest.raises(trio.WouldBlock):
            ref.call_nowait("ping")
    with pytest.raises(ActorGone):
        ref.call_nowait("ping")
