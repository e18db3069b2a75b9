"""The elicitation actor's shape: mailbox messages, one child task per elicitation that owns
its deadline scope and reacts to its owner's exit.

All under trio's autojump clock.
"""

from __future__ import annotations

import dataclasses
import gc
import itertools
import weakref
from collections import Counter
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import trio
import trio.testing

from erlmcp_py import (
    Accepted,
    AlreadyTerminal,
    AnswerInFlight,
    Declined,
    ElicitationHandle,
    ElicitationInfo,
    ElicitationNotFound,
    ElicitationRequest,
    Failed,
    Runtime,
    Tenant,
    TimedOut,
    open_runtime,
)
from erlmcp_py.actors._elicitation import ElicitationActor
from erlmcp_py.actors._ratelimiter import Acquire, Release
from erlmcp_py.actors._record import CreateElicitation, Record, info_row
from erlmcp_py.actors._validator import Validate
from erlmcp_py.core.forms import compile_form
from erlmcp_py.core.store_wire import StoreRecord
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
    for message in (CreateElicitation, Acquire, Validate, Release):
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


# -- the lifecycle decides, the child executes -------------------------------------------------

WEBHOOK = compile_form(
    {
        "id": "hook",
        "title": "Where should we post?",
        "fields": [{"id": "webhook_url", "type": "url", "label": "Webhook URL", "required": True}],
    },
    "2025-11-25",
)
HOOK = {"webhook_url": "https://api.example.com/hook"}
URL_REQUEST = ElicitationRequest("Sign in", mode="url", url="https://93.184.216.34/login")


def webhook_request() -> ElicitationRequest:
    assert WEBHOOK.requested_schema is not None
    return ElicitationRequest(
        "Webhook?", requested_schema=WEBHOOK.requested_schema, validator=WEBHOOK
    )


async def test_an_application_answer_waits_for_the_client_answer_in_flight(
    autojump_clock: trio.testing.MockClock,
) -> None:
    resolving, release = trio.Event(), trio.Event()

    async def slow_resolver(host: str) -> list[str]:  # the answer's URL check: in flight
        resolving.set()
        await release.wait()
        return ["93.184.215.14"]

    async with open_runtime({"rate": 1000}, resolver=slow_resolver) as rt:
        peer = MemoryPeer(auto=lambda r: {"action": "accept", "content": HOOK})
        handle = await rt.create_elicitation(webhook_request(), peer=peer, tenant=ALICE)
        await resolving.wait()
        other = {"webhook_url": "https://other.example.com/x"}
        with pytest.raises(AnswerInFlight):
            await rt.complete_elicitation(handle.id, other, tenant=ALICE)
        with pytest.raises(AnswerInFlight):
            await rt.answer_elicitation(handle.id, "decline", tenant=ALICE)
        assert (await rt.get_elicitation_status(handle.id, tenant=ALICE)).status == "active"
        release.set()
        assert await handle.outcome() == Accepted(HOOK)  # the client's answer came first
        await trio.testing.wait_all_tasks_blocked()
        assert peer.notifications == []


async def test_a_deadline_that_overtakes_the_answer_in_flight_withdraws_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def stuck_resolver(host: str) -> list[str]:
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    async with open_runtime({"rate": 1000}, resolver=stuck_resolver) as rt:
        peer = MemoryPeer(auto=lambda r: {"action": "accept", "content": HOOK})
        start = trio.current_time()
        request = dataclasses.replace(webhook_request(), timeout=1.0)  # warned at 0.8 s
        handle = await rt.create_elicitation(request, peer=peer, tenant=ALICE)
        assert await handle.outcome() == TimedOut()
        assert trio.current_time() - start == pytest.approx(1.0)
        await trio.testing.wait_all_tasks_blocked()
        # The warning waited for the check in progress, which the deadline cut short; the
        # client has answered, so it has no request to drop either.
        assert peer.notifications == []


async def test_after_a_url_consent_the_deadline_withdraws_nothing(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer(auto=lambda r: {"action": "accept"})
    start = trio.current_time()
    handle = await rt.create_elicitation(URL_REQUEST, peer=peer, tenant=ALICE)
    assert await handle.outcome() == TimedOut()
    assert trio.current_time() - start == pytest.approx(600)
    await trio.testing.wait_all_tasks_blocked()
    assert [method for method, _ in peer.notifications] == ["notifications/message"]


async def test_after_a_url_consent_the_user_may_still_decline_through_the_page(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer(auto=lambda r: {"action": "accept"})
    handle = await rt.create_elicitation(URL_REQUEST, peer=peer, tenant=ALICE)
    await peer.wait_request()
    await trio.testing.wait_all_tasks_blocked()
    assert (await rt.answer_elicitation(handle.id, "decline", tenant=ALICE)).status == "declined"
    assert await handle.outcome() == Declined()
    await trio.testing.wait_all_tasks_blocked()
    assert peer.notifications == []


async def test_a_runtime_stop_withdraws_only_the_requests_open_at_the_client(
    autojump_clock: trio.testing.MockClock,
) -> None:
    resolving = trio.Event()

    async def stuck_resolver(host: str) -> list[str]:
        resolving.set()
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    asking = MemoryPeer()  # never answers: its form is open
    consenting = MemoryPeer(auto=lambda r: {"action": "accept"})  # answered: nothing open
    validated = MemoryPeer(auto=lambda r: {"action": "accept", "content": HOOK})  # answered
    async with open_runtime({"rate": 1000}, resolver=stuck_resolver) as rt:
        handles = [
            await rt.create_elicitation(REQUEST, peer=asking, tenant=ALICE),
            await rt.create_elicitation(URL_REQUEST, peer=consenting, tenant=ALICE),
            await rt.create_elicitation(webhook_request(), peer=validated, tenant=ALICE),
        ]
        request = await asking.wait_request()
        await consenting.wait_request()
        await resolving.wait()  # the third answer is being checked
    for handle in handles:
        assert await handle.outcome() == Failed("runtime_restarted")
    assert asking.notifications == [
        (
            "notifications/cancelled",
            {"requestId": request.id, "reason": "elicitation failed (runtime_restarted)"},
        )
    ]
    assert consenting.notifications == []
    assert validated.notifications == []


# -- what the registry keeps of an ended elicitation -------------------------------------------

BOB = Tenant("bob", "ws1", "conv1")


def _ended_rows(monkeypatch: pytest.MonkeyPatch) -> dict[str, ElicitationInfo]:
    """The status row of every record at the moment it ends (its live ``Record``'s)."""
    rows: dict[str, ElicitationInfo] = {}
    on_resolved = ElicitationActor.on_resolved

    def spy(self: ElicitationActor, record: Record) -> None:
        on_resolved(self, record)
        rows[record.id] = record.info()

    monkeypatch.setattr(ElicitationActor, "on_resolved", spy)
    return rows


async def _end_one_of_each(rt: Runtime, peer: MemoryPeer) -> list[ElicitationHandle]:
    """Five elicitations, ended five ways: accepted, declined, cancelled by the client and by
    the server, timed out."""
    handles = [await rt.create_elicitation(REQUEST, peer=peer, tenant=ALICE) for _ in range(5)]
    await peer.wait_request(5)
    peer.answer(peer.requests[0].id, {"action": "accept", "content": {"name": "Ada"}})
    peer.answer(peer.requests[1].id, {"action": "decline"})
    peer.answer(peer.requests[2].id, {"action": "cancel"})
    await rt.cancel_elicitation(handles[3].id, tenant=ALICE)
    await trio.sleep(301)  # the last one times out
    await trio.testing.wait_all_tasks_blocked()
    assert not children(rt)
    return handles


async def test_an_ended_elicitation_reports_the_status_row_it_ended_with(
    rt: Runtime, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = _ended_rows(monkeypatch)
    handles = await _end_one_of_each(rt, MemoryPeer())
    registry = actor_of(rt).records
    assert not any(isinstance(registry[h.id], Record) for h in handles)
    statuses = [(await rt.get_elicitation_status(h.id, tenant=ALICE)) for h in handles]
    assert statuses == [rows[h.id] for h in handles]
    assert [s.status for s in statuses] == [
        "completed", "declined", "cancelled", "cancelled", "timed_out",
    ]  # fmt: skip
    assert sorted(await rt.list_elicitations(tenant=ALICE), key=lambda r: r.created_at) == sorted(
        statuses, key=lambda r: r.created_at
    )


async def test_a_late_waiter_of_an_ended_elicitation_gets_the_same_outcome_object(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer()
    handle = await rt.create_elicitation(REQUEST, peer=peer, tenant=ALICE)
    await peer.wait_request()
    peer.answer(peer.last().id, {"action": "accept", "content": {"name": "Ada"}})
    first = await handle.outcome()
    await trio.testing.wait_all_tasks_blocked()
    assert not isinstance(actor_of(rt).records[handle.id], Record)  # the registry's row only
    assert first == Accepted({"name": "Ada"})
    assert await handle.outcome() is first
    assert handle.outcome_nowait() is first


@pytest.mark.parametrize(
    ("call", "argument"),
    [("complete", {"name": "Eve"}), ("cancel", None), ("extend", None), ("answer", "decline")],
)
async def test_a_call_that_would_change_an_ended_elicitation_is_refused_as_terminal(
    rt: Runtime, autojump_clock: trio.testing.MockClock, call: str, argument: Any
) -> None:
    handles = await _end_one_of_each(rt, MemoryPeer())

    async def run(elicitation_id: str, tenant: Tenant) -> Any:
        if call == "complete":
            return await rt.complete_elicitation(elicitation_id, argument, tenant=tenant)
        if call == "cancel":
            return await rt.cancel_elicitation(elicitation_id, tenant=tenant)
        if call == "extend":
            return await rt.extend_timeout(elicitation_id, tenant=tenant)
        return await rt.answer_elicitation(elicitation_id, argument, tenant=tenant)

    for handle, status in zip(
        handles, ["completed", "declined", "cancelled", "cancelled", "timed_out"], strict=True
    ):
        with pytest.raises(AlreadyTerminal) as terminal:
            await run(handle.id, ALICE)
        assert terminal.value.status == status
        assert str(terminal.value) == f"elicitation already terminal ({status})"
        with pytest.raises(ElicitationNotFound) as missing:  # another tenant's: unknown
            await run(handle.id, BOB)
        assert str(missing.value) == str(ElicitationNotFound(handle.id))
        status_row = await rt.get_elicitation_status(handle.id, tenant=ALICE)
        assert status_row.status == status  # the refused call changed nothing


async def test_an_ended_elicitation_is_another_tenants_unknown_id(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    handles = await _end_one_of_each(rt, MemoryPeer())
    for handle in handles:
        with pytest.raises(ElicitationNotFound):
            await rt.get_elicitation_status(handle.id, tenant=BOB)
        for other in (Tenant("alice", "ws2", "conv1"), Tenant("alice", "ws1", "conv2")):
            with pytest.raises(ElicitationNotFound):
                await rt.get_elicitation_status(handle.id, tenant=other)
    assert await rt.list_elicitations(tenant=BOB) == []
    assert len(await rt.list_elicitations(tenant=ALICE)) == 5


async def test_the_retention_evicts_ended_elicitations_by_count_and_by_age(
    autojump_clock: trio.testing.MockClock,
) -> None:
    config = {"rate": 1000, "retention_max_records": 3, "retention_max_age_s": 100.0}
    async with open_runtime(config) as rt:
        peer = MemoryPeer(auto=lambda r: {"action": "decline"})
        ids = [(await rt.create_elicitation(REQUEST, peer=peer, tenant=ALICE)).id for _ in range(4)]
        await trio.testing.wait_all_tasks_blocked()
        assert not any(isinstance(e, Record) for e in actor_of(rt).records.values())
        with pytest.raises(ElicitationNotFound):  # the oldest, over the count
            await rt.get_elicitation_status(ids[0], tenant=ALICE)
        rows = await rt.list_elicitations(tenant=ALICE)
        assert {r.id for r in rows} == set(ids[1:])
        await trio.sleep(100)
        assert await rt.list_elicitations(tenant=ALICE) == []
        for elicitation_id in ids:
            with pytest.raises(ElicitationNotFound):
                await rt.get_elicitation_status(elicitation_id, tenant=ALICE)
        assert actor_of(rt).records == {}
        assert len(actor_of(rt).retention) == 0


async def test_an_ended_elicitation_holds_no_peer_request_or_waiter(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer()
    handle = await rt.create_elicitation(REQUEST, peer=peer, tenant=ALICE)
    await peer.wait_request()
    peer.answer(peer.last().id, {"action": "decline"})
    outcome = await handle.outcome()
    assert outcome == Declined()
    await trio.testing.wait_all_tasks_blocked()
    elicitation_id = handle.id
    peer_ref = weakref.ref(peer)
    del peer  # the client went away; the tool still holds its handle
    # The actor has served another call since (it holds the message it last served).
    assert (await rt.get_elicitation_status(elicitation_id, tenant=ALICE)).status == "declined"
    gc.collect()
    assert peer_ref() is None, gc.get_referrers(peer_ref())
    assert not [o for o in gc.get_objects() if type(o) is Record and o.id == elicitation_id]
    entry = actor_of(rt).records[elicitation_id]
    assert all(type(v) in (str, int, float, type(None)) for v in entry)  # plain values only
    assert not gc.is_tracked(entry)  # nothing for the garbage collector to walk
    assert await handle.outcome() is outcome  # the handle kept its outcome, and only that


async def test_the_store_is_told_of_each_change_of_an_elicitation_once(
    rt: Runtime, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    published: list[tuple[str, str]] = []

    def changed(elicitation_id: str, snapshot: Callable[[], StoreRecord]) -> None:
        published.append((elicitation_id, snapshot().row["status"]))

    monkeypatch.setattr(rt.store, "changed", changed)
    peer = MemoryPeer()  # answered by hand below
    handle = await rt.create_elicitation(REQUEST, peer=peer, tenant=ALICE)
    assert published == [(handle.id, "pending")]  # as it is created
    await peer.wait_request()
    await trio.testing.wait_all_tasks_blocked()
    assert peer.answer(peer.requests[0].id, {"action": "decline"})
    assert await handle.outcome() == Declined()
    await trio.testing.wait_all_tasks_blocked()
    assert published[0] == (handle.id, "pending")
    assert published[-1] == (handle.id, "declined")
    assert all(a != b for a, b in itertools.pairwise(published))  # no repeats


async def test_the_store_publishes_an_ended_elicitations_row_again_on_rejoin(
    rt: Runtime, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = _ended_rows(monkeypatch)
    handles = await _end_one_of_each(rt, MemoryPeer())
    published: dict[str, StoreRecord] = {}

    def changed(elicitation_id: str, snapshot: Callable[[], StoreRecord]) -> None:
        published[elicitation_id] = snapshot()

    monkeypatch.setattr(rt.store, "changed", changed)
    rt.rejoined()
    await trio.testing.wait_all_tasks_blocked()
    assert published == {
        h.id: StoreRecord(info_row(rows[h.id]), ALICE, rt.store.replica) for h in handles
    }
    assert all(published[h.id].terminal for h in handles)
