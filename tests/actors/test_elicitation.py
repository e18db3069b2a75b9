"""The elicitation actor's shape: mailbox messages, one child task per elicitation that owns
its deadline scope and reacts to its owner's exit.

All under trio's autojump clock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio
import trio.testing

from erlmcp_py import (
    Accepted,
    ElicitationRequest,
    Failed,
    Runtime,
    Tenant,
    TimedOut,
    open_runtime,
)
from erlmcp_py.actors.elicitation import ElicitationActor
from erlmcp_py.actors.ratelimiter import Acquire, Release
from erlmcp_py.actors.record import Create, Record
from erlmcp_py.actors.validator import Validate
from erlmcp_py.testing import MemoryPeer

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
ALICE = Tenant("alice", "ws1", "conv1")
REQUEST = ElicitationRequest("Who are you?", requested_schema=SCHEMA)


@pytest.fixture
async def rt() -> AsyncIterator[Runtime]:
    async with open_runtime({"rate": 1000}) as runtime:
        yield runtime


def actor_of(rt: Runtime) -> ElicitationActor:
    actor = rt.actor("elicitation")._shared.actor  # read-only inspection
    assert isinstance(actor, ElicitationActor)
    return actor


def children(rt: Runtime) -> list[trio.lowlevel.Task]:
    return [t for t in actor_of(rt).nursery.child_tasks if t.name.endswith(".child")]


async def test_every_ask_travels_through_the_actors_mailboxes(
    rt: Runtime, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: Counter[str] = Counter()
    channel_sends = 0
    real_send_nowait = trio.MemorySendChannel.send_nowait
    real_send = trio.MemorySendChannel.send

    def send_nowait(self: Any, value: Any) -> None:
        nonlocal channel_sends
        channel_sends += 1
        sent[type(getattr(value, "msg", value)).__name__] += 1
        real_send_nowait(self, value)

    async def send(self: Any, value: Any) -> None:
        nonlocal channel_sends
        channel_sends += 1
        sent[type(getattr(value, "msg", value)).__name__] += 1
        await real_send(self, value)

    monkeypatch.setattr(trio.MemorySendChannel, "send_nowait", send_nowait)
    monkeypatch.setattr(trio.MemorySendChannel, "send", send)
    peer = MemoryPeer(auto=lambda r: {"action": "accept", "content": {"name": "Ada"}})
    for _ in range(100):
        assert await rt.ask(REQUEST, peer=peer, tenant=ALICE) == Accepted({"name": "Ada"})
    await trio.testing.wait_all_tasks_blocked()
    for message in (Create, Acquire, Validate, Release):
        assert sent[message.__name__] == 100, sent
    assert channel_sends >= 400


async def test_each_pending_elicitation_is_a_child_task_owning_its_deadline_scope(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer()  # never answers
    start = trio.current_time()
    handles = [await rt.create_elicitation(REQUEST, peer=peer, tenant=ALICE) for _ in range(3)]
    await peer.wait_request(3)
    assert len(children(rt)) == 3
    records = [actor_of(rt).records[h.id] for h in handles]

    def scope_deadline(record: Record) -> float:
        assert record.scope is not None
        return record.scope.deadline - start

    # First the warning (60 s before the 300 s deadline), then the deadline.
    assert [scope_deadline(r) for r in records] == pytest.approx([240, 240, 240])
    await trio.sleep(250)
    assert [scope_deadline(r) for r in records] == pytest.approx([300, 300, 300])
    assert len([n for n in peer.notifications if n[0] == "notifications/message"]) == 3
    # An extension moves the child's scope: the next warning, 60 s before the new deadline.
    await rt.extend_timeout(handles[0].id, tenant=ALICE)
    assert scope_deadline(records[0]) == pytest.approx(540)
    assert [await h.outcome() for h in handles[1:]] == [TimedOut(), TimedOut()]
    assert trio.current_time() - start == pytest.approx(300)
    await trio.testing.wait_all_tasks_blocked()
    assert len(children(rt)) == 1  # each child ends with its elicitation
    assert await handles[0].outcome() == TimedOut()
    assert trio.current_time() - start == pytest.approx(600)
    await trio.testing.wait_all_tasks_blocked()
    assert children(rt) == []


async def test_owner_death_ends_the_elicitation_as_abandoned_through_its_child(
    rt: Runtime, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    fed_by: list[str] = []
    real = Record.feed_owner_down

    def feed_owner_down(self: Record) -> None:
        fed_by.append(trio.lowlevel.current_task().name)
        real(self)

    monkeypatch.setattr(Record, "feed_owner_down", feed_owner_down)
    peer = MemoryPeer()
    handles = []

    async def owner(task_status: trio.TaskStatus[None]) -> None:
        for _ in range(2):
            handles.append(await rt.create_elicitation(REQUEST, peer=peer, tenant=ALICE))
        task_status.started()
        await trio.sleep_forever()

    async with trio.open_nursery() as nursery:
        await nursery.start(owner)
        await peer.wait_request(2)
        assert actor_of(rt).hub.watched_tasks() == 1  # one watched owner for its two
        nursery.cancel_scope.cancel()
    assert [await h.outcome() for h in handles] == [Failed("abandoned")] * 2
    assert fed_by == [f"{ElicitationActor.__module__}.ElicitationActor.child"] * 2
    await trio.testing.wait_all_tasks_blocked()
    assert sorted(p["requestId"] for _, p in peer.notifications) == sorted(
        r.id for r in peer.requests
    )
    assert children(rt) == []
    assert rt.metrics()["pending"] == 0


async def test_a_warning_waits_for_a_send_in_progress_but_the_deadline_cuts_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    class SlowPeer(MemoryPeer):
        """A transport that takes 270 s to take the request (back-pressure)."""

        async def send_request(self, method: str, params: Any, **kwargs: Any) -> None:
            await trio.sleep(270)
            await super().send_request(method, params, **kwargs)

    class StuckPeer(MemoryPeer):
        """A transport that never takes the request."""

        async def send_request(self, method: str, params: Any, **kwargs: Any) -> None:
            await trio.sleep_forever()

    peer = SlowPeer()
    async with open_runtime() as rt:
        start = trio.current_time()
        handle = await rt.create_elicitation(REQUEST, peer=peer, tenant=ALICE)
        await peer.wait_request()
        assert trio.current_time() - start == pytest.approx(270)
        await trio.testing.wait_all_tasks_blocked()
        # The warning was due at 240 s: it goes out right after the send.
        ((method, params),) = peer.notifications
        assert method == "notifications/message"
        assert params["data"]["remainingSeconds"] == 30
        assert await handle.outcome() == TimedOut()

        stuck = StuckPeer()
        start = trio.current_time()
        handle = await rt.create_elicitation(REQUEST, peer=stuck, tenant=ALICE)
        assert await handle.outcome() == TimedOut()
        assert trio.current_time() - start == pytest.approx(300)
        await trio.testing.wait_all_tasks_blocked()
        assert stuck.notifications == []  # nothing reached the client: nothing to withdraw
