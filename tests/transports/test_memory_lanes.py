"""The in-memory pair's lanes (``transports/memory.py``: ``_Lane``, ``_Gate``), driven directly.

Each test wires one or two lanes to real trio memory channels and a fake receiving side
(:class:`Taker`) that records every message it is offered, which it takes, and how deeply
takes nest. Nothing here sleeps: a lane is synchronous except :meth:`_Lane.send` on a full
channel, which the tests bound with ``fail_after``.
"""

from __future__ import annotations

import contextvars
import math
from collections.abc import Callable
from typing import Any

import pytest
import trio
import trio.testing

from erlmcp_py.transports.memory import _Gate, _Lane

LIMIT = 5  # seconds any waiting test may take

#: Set by the tests *after* a lane is created: a take must not see it (the lane's own context).
CALLER: contextvars.ContextVar[str] = contextvars.ContextVar("lanes_test_caller", default="unset")


class Taker:
    """A fake receiving side: ``take_now`` for one lane.

    ``accept(message)`` decides whether a message is taken inline (default: always); ``then``
    runs inside the take (after the decision), e.g. to send more messages meanwhile.
    """

    def __init__(
        self,
        accept: Callable[[Any], bool] = lambda _: True,
        then: Callable[[Any], None] | None = None,
    ) -> None:
        self.accept = accept
        self.then = then
        self.offered: list[Any] = []
        self.taken: list[Any] = []
        self.depth = 0
        self.max_depth = 0
        self.seen_caller: list[str] = []

    def __call__(self, message: Any) -> bool:
        self.depth += 1
        self.max_depth = max(self.max_depth, self.depth)
        try:
            self.offered.append(message)
            self.seen_caller.append(CALLER.get())
            if not self.accept(message):
                return False
            self.taken.append(message)
            if self.then is not None:
                self.then(message)
            return True
        finally:
            self.depth -= 1


def on_channel(receive: trio.MemoryReceiveChannel[Any]) -> list[Any]:
    """Everything queued on a channel now (received: the channel is left empty)."""
    found: list[Any] = []
    while True:
        try:
            found.append(receive.receive_nowait())
        except trio.WouldBlock:
            return found


def lane(
    take: Taker, *, gate: _Gate | None = None, holds: bool = True, size: float = math.inf
) -> tuple[_Lane, trio.MemoryReceiveChannel[Any]]:
    send, receive = trio.open_memory_channel[Any](size)
    return _Lane(send, gate or _Gate(), take, holds=holds), receive


# -- inline when idle ----------------------------------------------------------------------------


@pytest.mark.parametrize("holds", [True, False])
async def test_an_idle_lane_takes_inline(holds: bool) -> None:
    take = Taker()
    one, receive = lane(take, holds=holds, size=math.inf if holds else 4)
    one.send_nowait("a")
    one.send_nowait("b")
    assert take.taken == ["a", "b"]
    assert on_channel(receive) == []
    assert one.queued == 0
    assert one.holding == 0
    assert not one.gate.busy


@pytest.mark.parametrize("holds", [True, False])
async def test_a_declined_message_is_queued_and_nothing_overtakes_it(holds: bool) -> None:
    take = Taker(accept=lambda m: m != "first")
    one, receive = lane(take, holds=holds, size=math.inf if holds else 4)
    one.send_nowait("first")  # declined: the reader must take it
    assert one.queued == 1
    one.send_nowait("second")  # would be accepted, but "first" is still queued
    assert take.offered == ["first"]
    assert one.queued == 2
    assert receive.receive_nowait() == "first"
    one.done()
    one.send_nowait("third")  # "second" is still queued (not yet done)
    assert take.offered == ["first"]
    assert receive.receive_nowait() == "second"
    one.done()
    assert receive.receive_nowait() == "third"
    one.done()
    assert one.queued == 0
    one.send_nowait("fourth")  # the reader is idle again: inline
    assert take.taken == ["fourth"]
    assert on_channel(receive) == []
    assert one.queued == 0


async def test_the_reader_counts_a_message_until_it_is_done() -> None:
    # The reader has received a message but not finished it (done() not called yet): the lane
    # is not idle, so the next message waits behind it.
    take = Taker(accept=lambda m: m != "slow")
    one, receive = lane(take)
    one.send_nowait("slow")
    assert receive.receive_nowait() == "slow"  # being taken by the reader...
    one.send_nowait("next")
    assert take.offered == ["slow"]
    assert on_channel(receive) == ["next"]
    one.done()
    one.done()
    one.send_nowait("last")
    assert take.taken == ["last"]


# -- sends during a take: held (never re-entrant) or queued -------------------------------------


async def test_a_send_during_a_take_is_held_then_taken_in_order_in_the_same_call() -> None:
    gate = _Gate()
    sent_inside: dict[Any, list[Any]] = {"outer": ["h1", "h2"], "h1": ["h3"]}
    timeline: list[str] = []

    def then(message: Any) -> None:
        for extra in sent_inside.get(message, []):
            one.send_nowait(extra)  # the take is in progress: held, not taken here
            assert take.taken[-1] == message  # nothing was taken re-entrantly
        timeline.append(f"took {message}")

    take = Taker(then=then)
    one, receive = lane(take, gate=gate, holds=True)
    one.send_nowait("outer")
    timeline.append("send_nowait returned")
    assert take.taken == ["outer", "h1", "h2", "h3"]  # FIFO, h3 (held during h1) after h2
    assert timeline[-1] == "send_nowait returned"  # every held take was before the return
    assert take.max_depth == 1  # never re-entrant
    assert on_channel(receive) == []
    assert one.queued == 0
    assert one.holding == 0
    assert not gate.held
    assert not gate.busy


async def test_the_pair_pattern_client_take_holds_the_answer_for_the_server() -> None:
    # server -> client (holds=False) take: the client answers on client -> server (holds=True),
    # which is held and taken by the server right after, before the server's send returns;
    # what the server sends meanwhile (its take of the answer) is queued for the client.
    gate = _Gate()

    def client_then(message: Any) -> None:
        if message == "elicitation/create":
            to_server.send_nowait("answer")
            assert server.taken == []  # held while the client's take is in progress

    def server_then(message: Any) -> None:
        if message == "answer":
            to_client.send_nowait("re-prompt")  # the gate is busy: queued, not taken

    client = Taker(then=client_then)
    server = Taker(then=server_then)
    to_client, from_server = lane(client, gate=gate, holds=False, size=4)
    to_server, from_client = lane(server, gate=gate, holds=True)
    to_client.send_nowait("elicitation/create")
    assert client.taken == ["elicitation/create"]
    assert server.taken == ["answer"]
    assert on_channel(from_client) == []
    assert on_channel(from_server) == ["re-prompt"]
    assert to_client.queued == 1
    assert (client.max_depth, server.max_depth) == (1, 1)
    assert not gate.held
    # the client's reader has not done "re-prompt" yet: the next server message queues too
    to_client.send_nowait("notification")
    assert client.taken == ["elicitation/create"]
    assert on_channel(from_server) == ["notification"]


@pytest.mark.parametrize("size", [4, math.inf])
async def test_a_send_during_a_take_on_a_non_holding_lane_is_queued(size: float) -> None:
    gate = _Gate()
    other = Taker()
    two, receive_two = lane(other, gate=gate, holds=False, size=size)
    take = Taker(then=lambda m: two.send_nowait("meanwhile") if m == "outer" else None)
    one, _ = lane(take, gate=gate, holds=True)
    one.send_nowait("outer")
    assert other.offered == []  # not taken re-entrantly, and not held either
    assert on_channel(receive_two) == ["meanwhile"]
    assert two.queued == 1
    assert two.holding == 0
    assert not gate.held
    # on its own lane too: a non-holding lane queues what is sent during its own take
    self_take = Taker(then=lambda m: three.send_nowait("echo") if m == "ping" else None)
    three, receive_three = lane(self_take, holds=False, size=size)
    three.send_nowait("ping")
    assert self_take.offered == ["ping"]
    assert on_channel(receive_three) == ["echo"]
    assert three.queued == 1


# -- a take that fails -------------------------------------------------------------------------


async def test_a_failing_held_take_raises_and_the_rest_is_queued_in_order() -> None:
    gate = _Gate()
    other = Taker()
    two, receive_two = lane(other, gate=gate, holds=True)

    def then(message: Any) -> None:
        if message == "outer":
            one.send_nowait("h1")
            two.send_nowait("x1")
            one.send_nowait("h2")
            two.send_nowait("x2")
            one.send_nowait("h3")
        elif message == "h1":
            raise ValueError("the receiving side broke")

    take = Taker(then=then)
    one, receive_one = lane(take, gate=gate, holds=True)
    with pytest.raises(ValueError, match="receiving side broke"):
        one.send_nowait("outer")
    assert take.taken == ["outer", "h1"]
    assert other.offered == []  # after the failure nothing more is taken inline
    assert on_channel(receive_one) == ["h2", "h3"]  # queued on their own channels, in order
    assert on_channel(receive_two) == ["x1", "x2"]
    assert (one.queued, two.queued) == (2, 2)
    assert (one.holding, two.holding) == (0, 0)
    assert not gate.held
    assert not gate.busy
    # order kept afterwards: the next message waits behind the queued ones
    one.send_nowait("h4")
    assert take.offered == ["outer", "h1"]
    assert receive_one.receive_nowait() == "h4"


async def test_a_failing_outer_take_does_not_strand_held_messages() -> None:
    gate = _Gate()

    def then(message: Any) -> None:
        if message == "outer":
            one.send_nowait("held")
            raise ValueError("the receiving side broke")

    take = Taker(then=then)
    one, receive = lane(take, gate=gate, holds=True)
    with pytest.raises(ValueError, match="receiving side broke"):
        one.send_nowait("outer")
    assert not gate.busy
    one.send_nowait("next")
    # "held" must be taken or queued (in order, before "next"), not kept in gate.held
    assert take.taken[1:] + on_channel(receive) == ["held", "next"]
    assert not gate.held


def test_a_failing_held_take_goes_to_on_error_not_to_the_sender() -> None:
    errors: list[Exception] = []
    gate = _Gate(errors.append)

    def then(message: Any) -> None:
        if message == "outer":
            one.send_nowait("h1")
            one.send_nowait("h2")
        elif message == "h1":
            raise ValueError("the receiving side broke")

    take = Taker(then=then)
    one, receive = lane(take, gate=gate, holds=True)
    one.send_nowait("outer")  # the sender's own take succeeded: it sees no error
    assert [str(e) for e in errors] == ["the receiving side broke"]
    assert take.taken == ["outer", "h1"]
    assert on_channel(receive) == ["h2"]  # the rest queued in order, not lost
    assert not gate.held
    assert not gate.busy


# -- waiting sends -----------------------------------------------------------------------------


async def test_send_on_a_full_channel_waits_and_counts_as_queued() -> None:
    take = Taker(accept=lambda m: m != "blocked")
    one, receive = lane(take, holds=False, size=0)
    finished: list[str] = []

    async def sender(message: Any) -> None:
        await one.send(message)
        finished.append(message)

    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sender, "blocked")  # declined; nobody receives: waits
            await trio.testing.wait_all_tasks_blocked()
            assert finished == []
            assert one.queued == 1  # counted while it waits
            with pytest.raises(trio.WouldBlock):
                one.send_nowait("later")  # must not go inline past the waiting message
            assert take.offered == ["blocked"]
            assert await receive.receive() == "blocked"
            one.done()
        assert finished == ["blocked"]
        assert one.queued == 0
        one.send_nowait("now")  # idle again: inline
        assert take.taken == ["now"]


async def test_a_cancelled_waiting_send_is_no_longer_counted() -> None:
    take = Taker(accept=lambda m: m != "blocked")
    one, receive = lane(take, holds=False, size=0)
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(one.send, "blocked")
            await trio.testing.wait_all_tasks_blocked()
            assert one.queued == 1
            nursery.cancel_scope.cancel()
    assert one.queued == 0
    one.send_nowait("after")
    assert take.taken == ["after"]
    assert on_channel(receive) == []


async def test_send_on_an_idle_lane_takes_inline_without_waiting() -> None:
    take = Taker()
    one, receive = lane(take, holds=False, size=0)
    with trio.fail_after(LIMIT):
        await one.send("a")
    assert take.taken == ["a"]
    assert one.queued == 0
    assert on_channel(receive) == []


# -- closed lanes ------------------------------------------------------------------------------


async def test_a_closed_lane_never_takes_inline() -> None:
    take = Taker()
    one, _ = lane(take)
    one.close()
    assert one.closed
    with pytest.raises(trio.ClosedResourceError):
        one.send_nowait("a")
    with pytest.raises(trio.ClosedResourceError), trio.fail_after(LIMIT):
        await one.send("b")
    assert take.offered == []
    assert one.queued == 0


async def test_a_lane_marked_closed_whose_reader_is_gone_raises_the_channels_error() -> None:
    # How the pair closes its server -> client lane: closed = True and the far end closed.
    take = Taker()
    one, receive = lane(take, holds=False, size=4)
    one.closed = True
    receive.close()
    with pytest.raises(trio.BrokenResourceError):
        one.send_nowait("a")
    with pytest.raises(trio.BrokenResourceError), trio.fail_after(LIMIT):
        await one.send("b")
    assert take.offered == []


async def test_a_closed_holding_lane_is_not_held_during_a_take() -> None:
    gate = _Gate()
    errors: list[BaseException] = []
    closed_take = Taker()
    closed, _ = lane(closed_take, gate=gate, holds=True)
    closed.close()

    def then(message: Any) -> None:
        try:
            closed.send_nowait("too late")
        except trio.ClosedResourceError as exc:
            errors.append(exc)

    busy, _ = lane(Taker(then=then), gate=gate, holds=False, size=4)
    busy.send_nowait("take")
    assert len(errors) == 1  # the sender learns the pair is closed at once
    assert not gate.held
    assert closed.holding == 0
    assert closed_take.offered == []


# -- context -----------------------------------------------------------------------------------


async def test_a_take_runs_in_the_lanes_own_context() -> None:
    seen_inside: list[str] = []

    def then(message: Any) -> None:
        seen_inside.append(CALLER.get())
        CALLER.set(f"set by take {message}")  # must not leak into the sender

    take = Taker(then=then)
    one, _ = lane(take)  # its context is copied here, before the caller sets CALLER
    token = CALLER.set("caller")
    try:
        one.send_nowait("a")
        assert CALLER.get() == "caller"
        one.send_nowait("b")
        assert CALLER.get() == "caller"
    finally:
        CALLER.reset(token)
    assert seen_inside[0] == "unset"  # the caller's value is not visible
    assert "caller" not in seen_inside


async def test_a_lane_created_after_a_value_is_set_sees_it() -> None:
    token = CALLER.set("before the lane")
    try:
        take = Taker()
        one, _ = lane(take)
        CALLER.set("after the lane")
        one.send_nowait("a")
    finally:
        CALLER.reset(token)
    assert take.seen_caller == ["before the lane"]
