"""``Record.perform_now``: whoever delivers an answer validates it, unless an effect is in
progress (there is never more than one at a time per elicitation)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import pytest
import trio
import trio.testing

from erlmcp_py import Accepted, ElicitationRequest, Runtime, TimedOut, open_runtime
from erlmcp_py.actors.api import ElicitationHandle
from erlmcp_py.actors.peer import PeerResponse
from erlmcp_py.testing import MemoryPeer, SentRequest
from tests.actors.test_runtime import ALICE, SCHEMA


@pytest.fixture
async def rt() -> AsyncIterator[Runtime]:
    async with open_runtime({"rate": 1000}) as runtime:
        yield runtime


async def asked(rt: Runtime, peer: MemoryPeer) -> tuple[ElicitationHandle, SentRequest]:
    """Ask ``peer`` the SCHEMA form; return once the request is out and the child is parked
    (or inside its send)."""
    handle = await rt.create_elicitation(
        ElicitationRequest("Who?", requested_schema=SCHEMA), peer=peer, tenant=ALICE
    )
    sent = await peer.wait_request()
    await trio.testing.wait_all_tasks_blocked()
    return handle, sent


async def test_an_answer_to_a_parked_elicitation_is_validated_in_the_deliverers_turn(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer()
    handle, sent = await asked(rt, peer)  # the child is parked
    assert peer.answer(sent.id, {"action": "accept", "content": {"name": "Ada"}})
    # No checkpoint since the answer: the outcome was decided in this very turn.
    assert handle.outcome_nowait() == Accepted({"name": "Ada", "age": 30})


async def test_an_invalid_answer_is_reprompted_in_the_deliverers_turn(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer()
    handle, sent = await asked(rt, peer)
    peer.answer(sent.id, {"action": "accept", "content": {"name": ""}})
    assert len(peer.requests) == 2  # the re-prompt went out at once (a nowait peer)
    assert "not accepted" in peer.requests[1].params["message"]
    with pytest.raises(trio.WouldBlock):
        handle.outcome_nowait()
    peer.answer(peer.requests[1].id, {"action": "accept", "content": {"name": "Ada"}})
    assert handle.outcome_nowait() == Accepted({"name": "Ada", "age": 30})


class SlowSendPeer(MemoryPeer):
    """A peer whose send is still in progress when the answer comes back (it registers the
    request first, as a session does, then waits for the wire)."""

    def __init__(self) -> None:
        super().__init__(nowait=False)
        self.wire = trio.Event()

    async def send_request(
        self,
        method: str,
        params: Mapping[str, Any],
        *,
        request_id: str,
        on_response: Callable[[PeerResponse], None],
    ) -> None:
        self._deliver(method, params, request_id, on_response)
        await self.wire.wait()


async def test_an_answer_during_an_effect_in_progress_waits_for_the_child(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = SlowSendPeer()
    handle, sent = await asked(rt, peer)  # the child is inside its send
    assert peer.answer(sent.id, {"action": "accept", "content": {"name": "Ada"}})
    # Validating now would run a second effect beside the send in progress.
    with pytest.raises(trio.WouldBlock):
        handle.outcome_nowait()
    peer.wire.set()
    with trio.fail_after(5):
        assert await handle.outcome() == Accepted({"name": "Ada", "age": 30})


async def test_an_answer_after_the_deadline_fired_does_not_overtake_it(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer()
    handle, sent = await asked(rt, peer)
    record = handle._record
    assert record is not None
    autojump_clock.jump(record.core.deadline - trio.current_time() + 1)
    record.on_timer(trio.current_time())  # the timer task's turn: the child is told
    # The answer arrives before the child's turn: the deadline, already due, wins.
    peer.answer(sent.id, {"action": "accept", "content": {"name": "Ada"}})
    with trio.fail_after(5):
        assert isinstance(await handle.outcome(), TimedOut)
