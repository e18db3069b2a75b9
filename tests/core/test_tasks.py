"""A task's pure state: status from the facts, unique keys, partial answers, one end, its
wire form, its restoration from its record; and a hypothesis state machine against a plain
model."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from erlmcp_py.core.store_wire import StoreTask, decode_task, encode_task, task_visible_to
from erlmcp_py.core.tasks import (
    TERMINAL_STATUSES,
    TaskState,
    TaskStatus,
    iso_time,
    parse_iso_time,
)

T0 = 1_785_000_000.0  # 2026-07-25T17:20:00Z
FORM = {"message": "Sure?", "requestedSchema": {"type": "object", "properties": {}}}


def new(ttl_s: float | None = 3600.0) -> TaskState:
    return TaskState.new("t1", T0, ttl_s=ttl_s, poll_interval_s=2.0)


def test_a_new_task_is_working_and_its_create_result_has_the_wire_fields() -> None:
    state = new()
    assert state.status is TaskStatus.WORKING
    assert state.created() == {
        "taskId": "t1",
        "status": "working",
        "createdAt": iso_time(T0),
        "lastUpdatedAt": iso_time(T0),
        "ttlMs": 3_600_000,
        "pollIntervalMs": 2000,
    }
    assert iso_time(T0) == "2026-07-25T17:20:00.000Z"
    assert state.detailed() == state.created()  # nothing to inline while working
    assert new(ttl_s=None).created()["ttlMs"] is None
    assert new(ttl_s=None).expires_at() == math.inf


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan])
def test_a_task_refuses_a_ttl_or_poll_interval_that_is_not_a_positive_finite_number(
    bad: float,
) -> None:
    with pytest.raises(ValueError, match="ttl_s"):
        TaskState.new("t", T0, ttl_s=bad, poll_interval_s=1.0)
    with pytest.raises(ValueError, match="poll_interval_s"):
        TaskState.new("t", T0, ttl_s=1.0, poll_interval_s=bad)
    with pytest.raises(ValueError, match="id"):
        TaskState.new("", T0, ttl_s=1.0, poll_interval_s=1.0)


def test_asking_makes_it_input_required_with_the_request_under_its_key() -> None:
    state = new()
    key = state.ask("confirm", "elicitation/create", FORM, T0 + 1)
    assert key == "confirm"
    assert state.status is TaskStatus.INPUT_REQUIRED
    wire = state.detailed()
    assert wire["inputRequests"] == {"confirm": {"method": "elicitation/create", "params": FORM}}
    assert wire["lastUpdatedAt"] == iso_time(T0 + 1)
    assert "inputRequests" not in state.created()  # a CreateTaskResult never carries them


def test_a_key_is_never_reused_over_the_life_of_the_task() -> None:
    state = new()
    first = state.ask("confirm", "elicitation/create", FORM, T0)
    assert state.take_answers({first: {"action": "accept"}}, T0) == {first: {"action": "accept"}}
    again = state.ask("confirm", "elicitation/create", FORM, T0)  # a re-prompt, say
    assert again != first
    assert again.startswith("confirm-")
    withdrawn = state.ask("other", "roots/list", {}, T0)
    assert state.withdraw(withdrawn, T0)
    assert state.ask("other", "roots/list", {}, T0) not in {withdrawn, first, again}


def test_partial_answers_take_only_outstanding_keys_and_the_rest_stay() -> None:
    state = new()
    a = state.ask("a", "elicitation/create", FORM, T0)
    b = state.ask("b", "elicitation/create", FORM, T0)
    taken = state.take_answers({a: {"action": "decline"}, "never-issued": {}}, T0 + 5)
    assert taken == {a: {"action": "decline"}}
    assert state.status is TaskStatus.INPUT_REQUIRED
    assert list(state.detailed()["inputRequests"]) == [b]
    assert state.take_answers({a: {"action": "accept"}}, T0 + 6) == {}  # answered already
    assert state.updated_at == T0 + 5  # an update that took nothing changes nothing
    assert state.take_answers({b: {"action": "cancel"}}, T0 + 7) == {b: {"action": "cancel"}}
    assert state.status is TaskStatus.WORKING


def test_a_request_asked_again_keeps_its_key_and_shows_its_params_as_asked_now() -> None:
    state = new()
    key = state.ask("confirm", "elicitation/create", {**FORM, "_meta": {"link": "old"}}, T0)
    assert state.reask(key, {**FORM, "_meta": {"link": "new"}}, T0 + 3)
    assert state.detailed()["inputRequests"] == {
        key: {"method": "elicitation/create", "params": {**FORM, "_meta": {"link": "new"}}}
    }
    assert state.updated_at == T0 + 3
    assert not state.reask(key, {**FORM, "_meta": {"link": "new"}}, T0 + 4)  # no change
    assert state.updated_at == T0 + 3
    assert state.take_answers({key: {"action": "decline"}}, T0 + 5)
    assert not state.reask(key, FORM, T0 + 6)  # answered: not asked any more
    assert "inputRequests" not in state.detailed()


def test_the_first_end_wins_and_an_ended_task_never_changes() -> None:
    state = new()
    state.ask("q", "elicitation/create", FORM, T0)
    assert state.complete({"content": [{"type": "text", "text": "ok"}]}, T0 + 1)
    assert state.status is TaskStatus.COMPLETED
    assert state.requests == {}  # nothing outstanding once ended
    assert not state.fail({"code": -32603, "message": "late"}, T0 + 2)
    assert not state.cancel(T0 + 2)
    assert not state.request_cancel(T0 + 2)
    with pytest.raises(ValueError, match="ended"):
        state.ask("x", "elicitation/create", FORM, T0 + 2)
    wire = state.detailed()
    assert wire["status"] == "completed"
    assert wire["result"] == {"content": [{"type": "text", "text": "ok"}]}
    assert "error" not in wire
    assert "inputRequests" not in wire
    assert wire["lastUpdatedAt"] == iso_time(T0 + 1)


def test_a_failed_task_inlines_its_error_and_says_it_in_the_status_message() -> None:
    state = new()
    assert state.fail({"code": -32603, "message": "boom", "data": {"x": 1}}, T0 + 1)
    wire = state.detailed()
    assert wire["status"] == "failed"
    assert wire["error"] == {"code": -32603, "message": "boom", "data": {"x": 1}}
    assert wire["statusMessage"] == "boom"
    assert "result" not in wire
    with pytest.raises(TypeError, match="JSON-RPC error"):
        new().fail({"message": "no code"}, T0)


def test_a_cancelled_task_carries_neither_result_nor_error() -> None:
    state = new()
    assert state.request_cancel(T0)
    assert not state.request_cancel(T0)  # asked once
    assert state.status is TaskStatus.WORKING  # asking is not ending (cooperative)
    assert state.cancel(T0 + 1)
    assert state.detailed() == {**state.created(), "status": "cancelled"}


def test_a_warning_shows_until_its_request_leaves_the_map() -> None:
    state = new()
    a = state.ask("a", "elicitation/create", FORM, T0)
    b = state.ask("b", "elicitation/create", FORM, T0)
    state.warn(a, "This request expires in 60 seconds.", T0 + 1)
    assert state.detailed()["statusMessage"] == "This request expires in 60 seconds."
    state.take_answers({b: {"action": "decline"}}, T0 + 2)  # another question: it stays
    assert state.status_message == "This request expires in 60 seconds."
    state.withdraw(a, T0 + 3)  # its deadline passed
    assert "statusMessage" not in state.detailed()
    state.warn("not-outstanding", "ignored", T0 + 4)
    assert state.status_message is None


def test_a_task_record_round_trips_through_the_store_format_and_binds_its_principal() -> None:
    state = new()
    state.ask("q", "elicitation/create", FORM, T0)
    record = StoreTask("t1", state.detailed(), "addr:10.0.0.1", "r1")
    back = decode_task(encode_task(record))
    assert back == record
    assert not back.terminal
    assert task_visible_to(back, "addr:10.0.0.1") is back
    assert task_visible_to(back, "addr:10.0.0.2") is None
    state.cancel(T0)
    assert StoreTask("t1", state.detailed(), "p", "r").terminal
    with pytest.raises(TypeError):
        decode_task('{"id": "t1", "task": {}, "principal": 1, "replica": "r"}')
    with pytest.raises(TypeError):
        decode_task("[]")


def restored(state: TaskState) -> TaskState:
    """``state`` as another replica restores it from its record."""
    return TaskState.restore(
        state.detailed(),
        issued=state.issued_keys,
        cancel_requested=state.cancel_requested,
        message_key=state.message_key,
    )


def test_a_task_restored_from_its_record_asks_on_and_never_reuses_a_key() -> None:
    state = new()
    state.ask("approval", "elicitation/create", FORM, T0 + 1.2345)
    state.ask("approval", "elicitation/create", FORM, T0 + 2)
    state.take_answers({"approval": {"action": "accept"}}, T0 + 3)
    state.warn("approval-1", "This request expires in 900 seconds.", T0 + 4)
    back = restored(state)
    assert back.detailed() == state.detailed()
    assert back.status is TaskStatus.INPUT_REQUIRED
    assert back.requests == state.requests
    assert back.status_message == "This request expires in 900 seconds."
    back.take_answers({"approval-1": {"action": "decline"}}, T0 + 5)
    assert back.status_message is None  # the warning was about the request that left
    assert back.ask("approval", "elicitation/create", FORM, T0 + 6) not in state.issued_keys
    assert back.expires_at() == state.expires_at()


def test_an_ended_task_restores_as_it_ended() -> None:
    for end in ("complete", "fail", "cancel"):
        state = new()
        state.request_cancel(T0)
        if end == "complete":
            state.complete({"content": [{"type": "text", "text": "ok"}]}, T0 + 1)
        elif end == "fail":
            state.fail({"code": -32603, "message": "boom", "data": {"why": 1}}, T0 + 1)
        else:
            state.cancel(T0 + 1)
        back = restored(state)
        assert back.status is state.status
        assert back.detailed() == state.detailed()
        assert back.cancel_requested
        assert not back.complete({"content": []}, T0 + 2)  # ended: it never changes


def test_a_record_that_is_no_detailed_task_is_refused() -> None:
    good = new().detailed()
    for bad in (
        {**good, "status": "sleeping"},
        {**good, "ttlMs": "60000"},
        {**good, "createdAt": "2026-07-25T17:20:00"},  # no zone
        {**good, "inputRequests": {"k": {"method": 1, "params": {}}}},
        {key: value for key, value in good.items() if key != "taskId"},
    ):
        with pytest.raises((ValueError, TypeError, KeyError)):
            TaskState.restore(bad)
    assert parse_iso_time(iso_time(T0 + 0.25)) == T0 + 0.25


# -- the state machine ---------------------------------------------------------------------------

METHODS = st.sampled_from(["elicitation/create", "sampling/createMessage", "roots/list"])
HINTS = st.sampled_from(["confirm", "name", "elicitation", "q"])


class TaskMachine(RuleBasedStateMachine):
    """A task's state against a plain model: each task ends in exactly one terminal state and
    then never changes, no key is issued twice, no request is answered twice, the status is
    always the one the facts give, and the clock of its changes never goes back."""

    def __init__(self) -> None:
        super().__init__()
        self.now = T0
        self.state = TaskState.new("t", T0, ttl_s=60.0, poll_interval_s=1.0)
        self.issued: list[str] = []
        self.outstanding: dict[str, str] = {}  # key -> method
        self.answered: set[str] = set()
        self.ended: TaskStatus | None = None
        self.last_update = T0

    def tick(self, seconds: float) -> float:
        self.now += seconds
        return self.now

    @rule(hint=HINTS, method=METHODS, dt=st.floats(0, 10))
    def ask(self, hint: str, method: str, dt: float) -> None:
        if self.ended is not None:
            with pytest.raises(ValueError, match="ended"):
                self.state.ask(hint, method, {}, self.tick(dt))
            return
        key = self.state.ask(hint, method, {}, self.tick(dt))
        assert key not in self.issued  # unique over the task's life
        assert key == hint or key.startswith(f"{hint}-")
        self.issued.append(key)
        self.outstanding[key] = method

    @rule(data=st.data(), dt=st.floats(0, 10))
    def answer(self, data: st.DataObject, dt: float) -> None:
        keys = data.draw(
            st.lists(st.sampled_from([*self.issued, "unknown", "x-1"]), max_size=4, unique=True)
        )
        responses: dict[str, Any] = {key: {"action": "accept"} for key in keys}
        taken = self.state.take_answers(responses, self.tick(dt))
        expected = {k for k in keys if k in self.outstanding}
        assert set(taken) == expected
        assert not (set(taken) & self.answered)  # never answered twice
        self.answered |= set(taken)
        for key in taken:
            del self.outstanding[key]

    @precondition(lambda self: bool(self.issued))
    @rule(data=st.data(), dt=st.floats(0, 10))
    def withdraw(self, data: st.DataObject, dt: float) -> None:
        key = data.draw(st.sampled_from(self.issued))
        assert self.state.withdraw(key, self.tick(dt)) == (key in self.outstanding)
        self.outstanding.pop(key, None)

    @rule(dt=st.floats(0, 10))
    def warn(self, dt: float) -> None:
        key = next(iter(self.outstanding), None)
        self.state.warn(key, "expires soon", self.tick(dt))
        if self.ended is None and key is not None:
            assert self.state.status_message == "expires soon"

    @rule(dt=st.floats(0, 10))
    def request_cancel(self, dt: float) -> None:
        was = self.state.cancel_requested
        news = self.state.request_cancel(self.tick(dt))
        assert news == (self.ended is None and not was)

    @rule(
        end=st.sampled_from(["complete", "fail", "cancel"]),
        dt=st.floats(0, 10),
    )
    def end(self, end: str, dt: float) -> None:
        now = self.tick(dt)
        if end == "complete":
            ended = self.state.complete({"content": []}, now)
            status = TaskStatus.COMPLETED
        elif end == "fail":
            ended = self.state.fail({"code": -32603, "message": "x"}, now)
            status = TaskStatus.FAILED
        else:
            ended = self.state.cancel(now)
            status = TaskStatus.CANCELLED
        assert ended == (self.ended is None)  # exactly one end
        if ended:
            self.ended = status
            self.outstanding.clear()

    @invariant()
    def status_is_what_the_facts_give(self) -> None:
        state = self.state
        if self.ended is not None:
            assert state.status is self.ended
            assert state.status in TERMINAL_STATUSES
            assert state.requests == {}
        elif self.outstanding:
            assert state.status is TaskStatus.INPUT_REQUIRED
        else:
            assert state.status is TaskStatus.WORKING
        assert set(state.requests) == set(self.outstanding)
        ends = [state.result is not None, state.error is not None, state.cancelled]
        assert sum(ends) == (self.ended is not None)

    @invariant()
    def the_wire_form_matches_the_status(self) -> None:
        wire = self.state.detailed()
        assert wire["status"] == str(self.state.status)
        assert ("inputRequests" in wire) == (self.state.status is TaskStatus.INPUT_REQUIRED)
        assert ("result" in wire) == (self.state.status is TaskStatus.COMPLETED)
        assert ("error" in wire) == (self.state.status is TaskStatus.FAILED)
        assert wire["createdAt"] <= wire["lastUpdatedAt"]

    @invariant()
    def its_record_restores_the_same_task(self) -> None:
        back = restored(self.state)
        assert back.detailed() == self.state.detailed()
        assert back.status is self.state.status
        assert back.cancel_requested == self.state.cancel_requested
        assert set(back.issued_keys) == set(self.issued)
        if not back.terminal:  # asking on never reuses a key issued before it was restored
            assert back.ask("q", "roots/list", {}, self.now) not in self.issued

    @invariant()
    def the_clock_of_changes_never_goes_back(self) -> None:
        assert self.state.updated_at >= self.last_update
        assert self.state.updated_at <= self.now
        self.last_update = self.state.updated_at


TaskMachine.TestCase.settings = settings(max_examples=300, stateful_step_count=40)
test_task_state_machine = TaskMachine.TestCase
