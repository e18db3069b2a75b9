"""The elicitation lifecycle: table tests of every transition row, unit tests of the
rules, and a hypothesis state machine over random event sequences."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from erlmcp_py.core.lifecycle import (
    EFFECT_TYPES,
    EVENT_TYPES,
    NON_TERMINAL,
    STATUS_OF_OUTCOME,
    TERMINAL,
    TRANSITIONS,
    Answer,
    Cancel,
    DeadlineReached,
    Effect,
    Elicitation,
    Event,
    Extend,
    ExtensionGranted,
    ExtensionRefused,
    OwnerDown,
    Resolve,
    RuntimeRestart,
    SendCancelledNotice,
    SendRequest,
    SendWarning,
    Sent,
    SetDeadline,
    Status,
    TransportFailed,
    ValidateAnswer,
    Validated,
    ValidatorFailed,
    WarningDue,
    status_for_outcome,
)
from erlmcp_py.core.outcomes import (
    Accepted,
    Cancelled,
    Declined,
    Failed,
    TimedOut,
    Unsupported,
)
from erlmcp_py.core.policy import LifecyclePolicy

POLICY = LifecyclePolicy()  # 300 s deadline, warn at 240 s, 2 x 300 s extensions, 3 re-prompts
CONTENT = {"region": "eu"}


# -- setups: one Elicitation in each interesting (status, private phase) ----------------


def fresh() -> Elicitation:
    """pending, start() not called: nothing outstanding."""
    return Elicitation(POLICY, 0.0)


def started() -> Elicitation:
    """pending, request issued but not yet confirmed sent."""
    e = fresh()
    e.start()
    return e


def active() -> Elicitation:
    """active, request outstanding at the client."""
    e = started()
    assert e.handle(Sent(1.0)) == []
    return e


def validating() -> Elicitation:
    """active, an accepted answer is with the validator."""
    e = active()
    assert e.handle(Answer("accept", CONTENT)) == [ValidateAnswer(CONTENT)]
    return e


def reprompted() -> Elicitation:
    """active, re-prompt 1 outstanding."""
    e = validating()
    assert e.handle(Validated(False, ("bad",))) == [SendRequest(2, ("bad",))]
    return e


def last_chance() -> Elicitation:
    """active, validating the answer to the last allowed re-prompt."""
    e = validating()
    for attempt in range(2, POLICY.max_reprompts + 2):
        assert e.handle(Validated(False, ("bad",))) == [SendRequest(attempt, ("bad",))]
        assert e.handle(Answer("accept", CONTENT)) == [ValidateAnswer(CONTENT)]
    return e


SETUPS: dict[str, Callable[[], Elicitation]] = {
    "fresh": fresh,
    "started": started,
    "active": active,
    "validating": validating,
    "reprompted": reprompted,
    "last_chance": last_chance,
}

CANCELLED_NOTICE = SendCancelledNotice()

# (setup, event, expected status, expected effects)
CASES: list[tuple[str, Event, Status, list[Effect]]] = [
    # ---- pending, not started --------------------------------------------------------
    ("fresh", Sent(1.0), Status.PENDING, []),
    ("fresh", Answer("accept", CONTENT), Status.PENDING, []),
    ("fresh", Validated(True, (), CONTENT), Status.PENDING, []),
    ("fresh", ValidatorFailed("KeyError"), Status.PENDING, []),
    ("fresh", WarningDue(240.0), Status.PENDING, [SendWarning(60.0)]),
    ("fresh", DeadlineReached(300.0), Status.TIMED_OUT, [Resolve(TimedOut())]),
    (
        "fresh",
        Extend(5.0),
        Status.PENDING,
        [SetDeadline(600.0, 540.0), ExtensionGranted(600.0, 300.0, 1)],
    ),
    ("fresh", OwnerDown(), Status.ABANDONED, [Resolve(Failed("abandoned"))]),
    ("fresh", Cancel("server"), Status.CANCELLED, [Resolve(Cancelled("server"))]),
    ("fresh", RuntimeRestart(), Status.FAILED, [Resolve(Failed("runtime_restarted"))]),
    ("fresh", TransportFailed("x"), Status.FAILED, [Resolve(Failed("transport", "x"))]),
    # ---- pending, request issued -----------------------------------------------------
    ("started", Sent(1.0), Status.ACTIVE, []),
    ("started", Answer("accept", CONTENT), Status.ACTIVE, [ValidateAnswer(CONTENT)]),
    ("started", Answer("decline"), Status.DECLINED, [Resolve(Declined())]),
    ("started", Answer("cancel"), Status.CANCELLED, [Resolve(Cancelled("client"))]),
    ("started", Validated(True, (), CONTENT), Status.PENDING, []),
    ("started", Validated(False, ("e",)), Status.PENDING, []),
    ("started", WarningDue(240.0), Status.PENDING, [SendWarning(60.0)]),
    ("started", WarningDue(239.0), Status.PENDING, []),
    ("started", WarningDue(300.0), Status.PENDING, []),
    ("started", DeadlineReached(299.9), Status.PENDING, []),
    (
        "started",
        DeadlineReached(300.0),
        Status.TIMED_OUT,
        [Resolve(TimedOut()), CANCELLED_NOTICE],
    ),
    (
        "started",
        Extend(5.0, 30.0),
        Status.PENDING,
        [SetDeadline(330.0, 270.0), ExtensionGranted(330.0, 30.0, 1)],
    ),
    ("started", Extend(300.0), Status.PENDING, [ExtensionRefused("expired", 2)]),
    ("started", OwnerDown(), Status.ABANDONED, [Resolve(Failed("abandoned")), CANCELLED_NOTICE]),
    (
        "started",
        Cancel("server"),
        Status.CANCELLED,
        [Resolve(Cancelled("server")), CANCELLED_NOTICE],
    ),
    ("started", Cancel("client"), Status.CANCELLED, [Resolve(Cancelled("client"))]),
    (
        "started",
        RuntimeRestart(),
        Status.FAILED,
        [Resolve(Failed("runtime_restarted")), CANCELLED_NOTICE],
    ),
    ("started", TransportFailed("eof"), Status.FAILED, [Resolve(Failed("transport", "eof"))]),
    # ---- active, request outstanding -------------------------------------------------
    ("active", Sent(2.0), Status.ACTIVE, []),
    ("active", Answer("accept", CONTENT), Status.ACTIVE, [ValidateAnswer(CONTENT)]),
    ("active", Answer("decline", {"ignored": 1}), Status.DECLINED, [Resolve(Declined())]),
    ("active", Answer("cancel"), Status.CANCELLED, [Resolve(Cancelled("client"))]),
    ("active", Validated(True, (), CONTENT), Status.ACTIVE, []),
    ("active", ValidatorFailed("KeyError"), Status.ACTIVE, []),
    ("active", WarningDue(250.0), Status.ACTIVE, [SendWarning(50.0)]),
    ("active", DeadlineReached(10.0), Status.ACTIVE, []),
    ("active", DeadlineReached(301.0), Status.TIMED_OUT, [Resolve(TimedOut()), CANCELLED_NOTICE]),
    (
        "active",
        Extend(100.0, 10_000.0),
        Status.ACTIVE,
        [SetDeadline(600.0, 540.0), ExtensionGranted(600.0, 300.0, 1)],
    ),
    ("active", OwnerDown(), Status.ABANDONED, [Resolve(Failed("abandoned")), CANCELLED_NOTICE]),
    ("active", Cancel("app"), Status.CANCELLED, [Resolve(Cancelled("app")), CANCELLED_NOTICE]),
    (
        "active",
        RuntimeRestart(),
        Status.FAILED,
        [Resolve(Failed("runtime_restarted")), CANCELLED_NOTICE],
    ),
    ("active", TransportFailed(), Status.FAILED, [Resolve(Failed("transport"))]),
    (
        "active",
        TransportFailed("5 MB > 1 MB", reason="answer_too_large"),
        Status.FAILED,
        [Resolve(Failed("answer_too_large", "5 MB > 1 MB"))],
    ),
    # ---- active, validating (no request outstanding) ---------------------------------
    ("validating", Sent(2.0), Status.ACTIVE, []),
    ("validating", Answer("accept", {"other": 1}), Status.ACTIVE, []),
    ("validating", Answer("decline"), Status.ACTIVE, []),
    ("validating", Answer("cancel"), Status.ACTIVE, []),
    (
        "validating",
        Validated(True, (), {"region": "EU"}),
        Status.COMPLETED,
        [Resolve(Accepted({"region": "EU"}))],
    ),
    ("validating", Validated(False, ("e1", "e2")), Status.ACTIVE, [SendRequest(2, ("e1", "e2"))]),
    (
        "validating",
        ValidatorFailed("KeyError raised by the validator"),
        Status.FAILED,
        [Resolve(Failed("validator_error", "KeyError raised by the validator"))],
    ),
    ("validating", WarningDue(240.0), Status.ACTIVE, [SendWarning(60.0)]),
    ("validating", DeadlineReached(300.0), Status.TIMED_OUT, [Resolve(TimedOut())]),
    (
        "validating",
        Extend(1.0),
        Status.ACTIVE,
        [SetDeadline(600.0, 540.0), ExtensionGranted(600.0, 300.0, 1)],
    ),
    ("validating", OwnerDown(), Status.ABANDONED, [Resolve(Failed("abandoned"))]),
    ("validating", Cancel("server"), Status.CANCELLED, [Resolve(Cancelled("server"))]),
    ("validating", RuntimeRestart(), Status.FAILED, [Resolve(Failed("runtime_restarted"))]),
    ("validating", TransportFailed("x"), Status.FAILED, [Resolve(Failed("transport", "x"))]),
    # ---- active, validating after the last re-prompt ---------------------------------
    (
        "last_chance",
        Validated(False, ("e1", "e2")),
        Status.FAILED,
        [Resolve(Failed("validation", "answer still invalid after 3 re-prompt(s) (2 error(s))"))],
    ),
    ("last_chance", Validated(True, (), CONTENT), Status.COMPLETED, [Resolve(Accepted(CONTENT))]),
    (
        "last_chance",
        ValidatorFailed("TypeError"),
        Status.FAILED,
        [Resolve(Failed("validator_error", "TypeError"))],
    ),
    # ---- active, re-prompt outstanding -----------------------------------------------
    ("reprompted", Sent(3.0), Status.ACTIVE, []),
    ("reprompted", Answer("accept", CONTENT), Status.ACTIVE, [ValidateAnswer(CONTENT)]),
    ("reprompted", Answer("decline"), Status.DECLINED, [Resolve(Declined())]),
    ("reprompted", Validated(False, ("e",)), Status.ACTIVE, []),
    (
        "reprompted",
        DeadlineReached(300.0),
        Status.TIMED_OUT,
        [Resolve(TimedOut()), CANCELLED_NOTICE],
    ),
]


def _case_id(case: tuple[str, Event, Status, list[Effect]]) -> str:
    setup, event, status, _ = case
    return f"{setup}-{type(event).__name__}-{event!r}->{status.value}"


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_transition_case(case: tuple[str, Event, Status, list[Effect]]) -> None:
    setup, event, expected_status, expected_effects = case
    e = SETUPS[setup]()
    before = e.status
    effects = e.handle(event)
    assert effects == expected_effects
    assert e.status is expected_status
    assert expected_status in TRANSITIONS[(before, type(event))].targets
    resolves = [f for f in effects if isinstance(f, Resolve)]
    if e.is_terminal:
        assert len(resolves) == 1
        assert e.outcome == resolves[0].outcome
        assert status_for_outcome(resolves[0].outcome) is e.status
    else:
        assert resolves == []
        assert e.outcome is None


def test_every_table_row_has_a_case() -> None:
    covered = {(SETUPS[setup]().status, type(event)) for setup, event, _, _ in CASES}
    assert set(TRANSITIONS) <= covered


def test_every_table_target_is_reached_by_a_case() -> None:
    reached: dict[tuple[Status, type[Any]], set[Status]] = {}
    for setup, event, status, _ in CASES:
        reached.setdefault((SETUPS[setup]().status, type(event)), set()).add(status)
    for key, row in TRANSITIONS.items():
        assert reached[key] == set(row.targets), key


# -- the table itself -------------------------------------------------------------------


def test_table_is_total_over_live_statuses_and_empty_for_terminal() -> None:
    assert set(TRANSITIONS) == {(s, t) for s in NON_TERMINAL for t in EVENT_TYPES}
    assert all(s not in TERMINAL for s, _ in TRANSITIONS)
    assert set(Status) == NON_TERMINAL | TERMINAL
    assert not NON_TERMINAL & TERMINAL


def test_table_rows_are_well_formed() -> None:
    for (status, event_type), row in TRANSITIONS.items():
        assert row.targets, (status, event_type)
        assert row.targets <= set(Status)
        assert callable(row.handler)
        assert row.handler.__name__.startswith("_on_")
        # status may only move forward: pending -> active -> terminal
        if status is Status.ACTIVE:
            assert Status.PENDING not in row.targets


def test_table_is_read_only() -> None:
    with pytest.raises(TypeError):
        TRANSITIONS[(Status.PENDING, Sent)] = TRANSITIONS[(Status.ACTIVE, Sent)]  # type: ignore[index]


# -- value types -------------------------------------------------------------------------


@pytest.mark.parametrize("cls", EVENT_TYPES + EFFECT_TYPES)
def test_events_and_effects_are_frozen_slotted_dataclasses(cls: type[Any]) -> None:
    assert dataclasses.is_dataclass(cls)
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    assert params.frozen
    assert "__slots__" in cls.__dict__


def test_event_validation() -> None:
    with pytest.raises(ValueError, match=r"Answer\.action"):
        Answer("maybe")  # type: ignore[arg-type]
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match=r"Extend\.seconds"):
            Extend(1.0, bad)
    with pytest.raises(ValueError, match=r"Sent\.now"):
        Sent(float("nan"))
    with pytest.raises(ValueError, match=r"DeadlineReached\.now"):
        DeadlineReached(float("inf"))
    with pytest.raises(ValueError, match=r"WarningDue\.now"):
        WarningDue(True)
    with pytest.raises(ValueError, match="must not carry errors"):
        Validated(True, ("e",))
    with pytest.raises(TypeError, match=r"Validated\.ok"):
        Validated(1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"Cancel\.by"):
        Cancel("")
    with pytest.raises(ValueError, match=r"Elicitation\.now"):
        Elicitation(POLICY, float("nan"))
    with pytest.raises(ValueError, match="mode"):
        Elicitation(POLICY, 0.0, mode="inline")  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [float("-inf"), True, None, "1.0", 1 + 0j])
def test_elicitation_refuses_a_now_that_is_not_a_finite_number(bad: Any) -> None:
    with pytest.raises(ValueError, match=r"Elicitation\.now must be a finite number"):
        Elicitation(POLICY, bad)


def test_integer_now_is_stored_as_float_seconds() -> None:
    e = Elicitation(LifecyclePolicy(form_deadline_s=300.0, warn_before_s=60.0), 7)
    assert type(e.created_at) is float
    assert e.created_at == 7.0
    assert e.deadline == 307.0
    assert e.warn_at == 247.0


def test_readers_are_read_only() -> None:
    e = Elicitation(POLICY, 0.0)
    for name in ("status", "created_at", "sent_at", "deadline", "warn_at", "is_terminal"):
        with pytest.raises(AttributeError):
            setattr(e, name, None)


def test_validated_errors_are_stored_as_a_tuple() -> None:
    v = Validated(False, ["a", "b"])  # type: ignore[arg-type]
    assert v.errors == ("a", "b")
    hash(Validated(False, ("a",)))


def test_status_for_outcome() -> None:
    assert status_for_outcome(Accepted(1)) is Status.COMPLETED
    assert status_for_outcome(Declined()) is Status.DECLINED
    assert status_for_outcome(Cancelled("server")) is Status.CANCELLED
    assert status_for_outcome(TimedOut()) is Status.TIMED_OUT
    assert status_for_outcome(Failed("abandoned")) is Status.ABANDONED
    assert status_for_outcome(Failed("validation")) is Status.FAILED
    with pytest.raises(ValueError, match="Unsupported"):
        status_for_outcome(Unsupported())
    for outcome_type, statuses in STATUS_OF_OUTCOME.items():
        assert statuses <= TERMINAL, outcome_type


# -- rules ------------------------------------------------------------------------------


def test_start_arms_timers_and_sends_first_request() -> None:
    e = Elicitation(POLICY, 10.0)
    assert e.status is Status.PENDING
    assert e.deadline == 310.0
    assert e.warn_at == 250.0
    assert e.start() == [SetDeadline(310.0, 250.0), SendRequest(1, ())]
    assert e.awaiting_answer
    with pytest.raises(RuntimeError, match="twice"):
        e.start()


def test_url_mode_uses_url_deadline() -> None:
    e = Elicitation(POLICY, 0.0, mode="url")
    assert e.mode == "url"
    assert e.start()[0] == SetDeadline(600.0, 540.0)


def test_a_question_deadline_and_its_warning_replace_the_policy_ones() -> None:
    e = Elicitation(POLICY, 10.0, timeout_s=2.0)
    assert e.start()[0] == SetDeadline(12.0, pytest.approx(11.6))
    assert e.handle(WarningDue(11.6)) == [SendWarning(remaining_s=pytest.approx(0.4))]
    assert e.handle(DeadlineReached(12.0))[0] == Resolve(TimedOut())


def test_a_question_deadline_longer_than_the_policy_is_clamped() -> None:
    e = Elicitation(POLICY, 0.0, mode="url", timeout_s=10_000.0)
    assert e.start()[0] == SetDeadline(600.0, 540.0)


def test_an_extension_moves_a_question_deadline_and_keeps_its_warning() -> None:
    e = Elicitation(POLICY, 0.0, timeout_s=100.0)  # warned 20 s before: at 80 s
    e.start()
    assert e.handle(Extend(50.0, 30.0)) == [
        SetDeadline(130.0, 110.0),
        ExtensionGranted(130.0, 30.0, POLICY.max_extensions - 1),
    ]
    assert e.handle(WarningDue(109.0)) == []
    assert e.handle(WarningDue(110.0)) == [SendWarning(remaining_s=20.0)]


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_a_question_deadline_must_be_positive_and_finite(bad: float) -> None:
    with pytest.raises(ValueError, match="positive, finite"):
        Elicitation(POLICY, 0.0, timeout_s=bad)


def test_start_after_early_end_is_a_no_op() -> None:
    e = fresh()
    e.handle(Cancel("server"))
    assert e.start() == []
    assert not e.awaiting_answer


def test_sent_records_first_send_time_only() -> None:
    e = started()
    assert e.sent_at is None
    e.handle(Sent(2.5))
    assert e.sent_at == 2.5
    e.handle(Sent(9.0))
    assert e.sent_at == 2.5


@pytest.mark.parametrize(
    "terminal_event",
    [
        Answer("decline"),
        Answer("cancel"),
        DeadlineReached(300.0),
        OwnerDown(),
        Cancel("server"),
        RuntimeRestart(),
        TransportFailed(),
    ],
)
def test_terminal_statuses_absorb_every_event(terminal_event: Event) -> None:
    e = active()
    e.handle(terminal_event)
    assert e.is_terminal
    snapshot = (e.status, e.outcome, e.deadline, e.extensions_used, e.reprompts_used)
    later: list[Event] = [
        Sent(5.0),
        Answer("accept", CONTENT),
        Answer("decline"),
        Answer("cancel"),
        Validated(True, (), CONTENT),
        Validated(False, ("e",)),
        WarningDue(250.0),
        DeadlineReached(1e9),
        Extend(10.0),
        OwnerDown(),
        Cancel("server"),
        RuntimeRestart(),
        TransportFailed("late"),
    ]
    for event in later:
        assert e.handle(event) == []
    assert (e.status, e.outcome, e.deadline, e.extensions_used, e.reprompts_used) == snapshot


def test_completed_elicitation_absorbs_events() -> None:
    e = validating()
    e.handle(Validated(True, (), CONTENT))
    assert e.status is Status.COMPLETED
    assert e.handle(Cancel("server")) == []
    assert e.handle(DeadlineReached(1e6)) == []
    assert e.outcome == Accepted(CONTENT)


class NotAnEvent:
    pass


@dataclasses.dataclass(frozen=True, slots=True)
class SubclassedSent(Sent):
    pass


@pytest.mark.parametrize("setup", ["fresh", "active", "validating"])
@pytest.mark.parametrize("bad", [NotAnEvent(), "cancel", None, SubclassedSent(1.0)])
def test_unknown_events_raise_type_error(setup: str, bad: object) -> None:
    e = SETUPS[setup]()
    with pytest.raises(TypeError, match="not an elicitation event"):
        e.handle(bad)  # type: ignore[arg-type]


def test_unknown_events_raise_type_error_even_when_terminal() -> None:
    e = active()
    e.handle(OwnerDown())
    with pytest.raises(TypeError):
        e.handle(NotAnEvent())  # type: ignore[arg-type]


def test_reprompts_are_bounded_then_fail_validation() -> None:
    e = active()
    for attempt in range(2, POLICY.max_reprompts + 2):
        assert e.handle(Answer("accept", {"n": attempt})) == [ValidateAnswer({"n": attempt})]
        errors = (f"error {attempt}",)
        assert e.handle(Validated(False, errors)) == [SendRequest(attempt, errors)]
        assert e.reprompts_used == attempt - 1
    e.handle(Answer("accept", {"n": "last"}))
    effects = e.handle(Validated(False, ("still bad",)))
    assert e.status is Status.FAILED
    assert e.reprompts_used == POLICY.max_reprompts
    assert len(effects) == 1
    assert isinstance(effects[0], Resolve)
    outcome = effects[0].outcome
    assert isinstance(outcome, Failed)
    assert outcome.reason == "validation"
    assert "3 re-prompt" in outcome.detail


def test_zero_reprompts_fail_on_first_invalid_answer() -> None:
    e = Elicitation(LifecyclePolicy(max_reprompts=0), 0.0)
    e.start()
    e.handle(Answer("accept", {}))
    effects = e.handle(Validated(False, ("e",)))
    assert effects == [Resolve(Failed("validation", effects[0].outcome.detail))]  # type: ignore[union-attr]
    assert e.status is Status.FAILED


def test_valid_answer_after_reprompt_completes() -> None:
    e = reprompted()
    e.handle(Answer("accept", {"region": "us"}))
    assert e.handle(Validated(True, (), {"region": "us"})) == [Resolve(Accepted({"region": "us"}))]
    assert e.reprompts_used == 1


def test_extensions_are_bounded_and_clamped() -> None:
    e = active()
    assert e.extensions_remaining == 2
    assert e.handle(Extend(10.0, 60.0)) == [
        SetDeadline(360.0, 300.0),
        ExtensionGranted(360.0, 60.0, 1),
    ]
    assert e.handle(Extend(20.0, 1e6)) == [
        SetDeadline(660.0, 600.0),
        ExtensionGranted(660.0, 300.0, 0),
    ]
    assert e.handle(Extend(30.0)) == [ExtensionRefused("max_extensions", 2)]
    assert e.deadline == 660.0
    assert e.extensions_used == 2
    assert e.extensions_remaining == 0


def test_zero_extensions_policy_refuses_every_extension() -> None:
    e = Elicitation(LifecyclePolicy(max_extensions=0), 0.0)
    e.start()
    assert e.handle(Extend(1.0)) == [ExtensionRefused("max_extensions", 0)]
    assert e.deadline == 300.0


def test_extension_after_deadline_passed_is_refused() -> None:
    e = active()
    assert e.handle(Extend(300.0)) == [ExtensionRefused("expired", 2)]
    assert e.extensions_used == 0
    assert e.status is Status.ACTIVE  # DeadlineReached decides the timeout


def test_warning_is_sent_once_per_deadline_and_rearmed_by_extension() -> None:
    e = active()
    assert e.handle(WarningDue(240.0)) == [SendWarning(60.0)]
    assert e.handle(WarningDue(250.0)) == []
    e.handle(Extend(260.0))  # deadline 600, warn at 540
    assert e.warn_at == 540.0
    assert e.handle(WarningDue(260.0)) == []  # the old timer, firing late: stale
    assert e.handle(WarningDue(540.0)) == [SendWarning(60.0)]
    assert e.handle(WarningDue(541.0)) == []


def test_stale_deadline_after_extension_is_ignored() -> None:
    e = active()
    e.handle(Extend(100.0))
    assert e.handle(DeadlineReached(300.0)) == []
    assert e.status is Status.ACTIVE
    assert e.handle(DeadlineReached(600.0)) == [Resolve(TimedOut()), CANCELLED_NOTICE]


def test_warnings_can_be_disabled() -> None:
    e = Elicitation(LifecyclePolicy(warn_before_s=0), 0.0)
    assert e.warn_at is None
    assert e.start()[0] == SetDeadline(300.0, None)
    assert e.handle(WarningDue(299.0)) == []
    assert e.handle(Extend(1.0))[0] == SetDeadline(600.0, None)


def test_answer_while_validating_is_ignored_and_the_first_answer_wins() -> None:
    e = validating()
    assert e.handle(Answer("accept", {"region": "us"})) == []
    assert e.handle(Answer("decline")) == []
    assert e.handle(Validated(True, (), CONTENT)) == [Resolve(Accepted(CONTENT))]


def test_repr_mentions_status() -> None:
    assert "pending" in repr(fresh())
    assert "validating=True" in repr(validating())


# -- hypothesis: random event sequences ---------------------------------------------------

TERMINAL_NOTICE_OUTCOMES = (TimedOut, Cancelled, Failed)


def LIVE(machine: LifecycleMachine) -> bool:
    return not machine.e.is_terminal


LATE_EVENTS: list[Event] = [
    Sent(0.0),
    Answer("accept", CONTENT),
    Answer("decline"),
    Validated(True, (), CONTENT),
    Validated(False, ("e",)),
    ValidatorFailed("late"),
    WarningDue(1e7),
    DeadlineReached(1e7),
    Extend(0.0),
    OwnerDown(),
    Cancel("server"),
    RuntimeRestart(),
    TransportFailed(),
]


class LifecycleMachine(RuleBasedStateMachine):
    """Drive one Elicitation with arbitrary events (including after it ended)."""

    def __init__(self) -> None:
        super().__init__()
        self.e: Elicitation
        self.policy: LifecyclePolicy
        self.now = 0.0
        self.resolves: list[Resolve] = []
        self.last_deadline = 0.0
        self.granted_total = 0.0
        self.next_attempt = 1
        self.warned_for: set[float] = set()
        # reference model of the private phases, driven by the effects only
        self.model_outstanding = False
        self.model_validating = False

    @initialize(
        warn_before=st.sampled_from([0.0, 30.0, 60.0]),
        max_extensions=st.integers(0, 3),
        extension_s=st.sampled_from([1.0, 120.0, 300.0]),
        max_reprompts=st.integers(0, 4),
        mode=st.sampled_from(["form", "url"]),
        start_at=st.floats(-1e4, 1e6, allow_nan=False),
        start_now=st.sampled_from([True, True, True, False]),
        timeout=st.sampled_from([None, None, 0.5, 2.0, 120.0, 10_000.0]),
    )
    def setup(
        self,
        warn_before: float,
        max_extensions: int,
        extension_s: float,
        max_reprompts: int,
        mode: Any,
        start_at: float,
        start_now: bool,
        timeout: float | None,
    ) -> None:
        self.policy = LifecyclePolicy(
            warn_before_s=warn_before,
            max_extensions=max_extensions,
            extension_s=extension_s,
            max_reprompts=max_reprompts,
        )
        self.now = start_at
        self.e = Elicitation(self.policy, start_at, mode=mode, timeout_s=timeout)
        initial = self.policy.deadline_for(mode, timeout)  # a question's own, clamped
        self.initial_deadline = start_at + initial
        self.warn_before = self.policy.warn_before_for(mode, initial)
        self.last_deadline = self.e.deadline
        self.started = False
        if start_now:
            self.start()

    # -- the one place events go in ------------------------------------------------------

    def apply(self, event: Event) -> list[Effect]:
        e = self.e
        before = e.status
        was_terminal = e.is_terminal
        was_outstanding = e.awaiting_answer
        was_validating = e.validating
        deadline_before = e.deadline

        effects = e.handle(event)

        assert all(isinstance(f, EFFECT_TYPES) for f in effects)
        assert was_outstanding == self.model_outstanding
        assert was_validating == self.model_validating
        if isinstance(event, Answer) and self.model_outstanding and not was_terminal:
            assert effects, f"an answer to an outstanding request was dropped: {event!r}"
        if (
            isinstance(event, Validated | ValidatorFailed)
            and self.model_validating
            and not was_terminal
        ):
            assert effects, f"a verdict on the answer in flight was dropped: {event!r}"
        for f in effects:
            if isinstance(f, SendRequest):
                self.model_outstanding = True
            elif isinstance(f, ValidateAnswer):
                self.model_outstanding, self.model_validating = False, True
            elif isinstance(f, Resolve):
                self.model_outstanding = self.model_validating = False
        if isinstance(event, Answer) and effects:
            self.model_outstanding = False
        if isinstance(event, Validated | ValidatorFailed) and effects:
            self.model_validating = False
        if was_terminal:
            assert effects == []
            assert e.status is before
            return effects
        assert e.status in TRANSITIONS[(before, type(event))].targets
        self.check_effects(event, effects, was_outstanding, was_validating, deadline_before)
        return effects

    def check_effects(
        self,
        event: Event,
        effects: list[Effect],
        was_outstanding: bool,
        was_validating: bool,
        deadline_before: float,
    ) -> None:
        e = self.e
        resolves = [f for f in effects if isinstance(f, Resolve)]
        self.resolves.extend(resolves)
        assert len(self.resolves) <= 1
        if resolves:
            assert effects[0] == resolves[0]  # the waiter comes first
            assert e.is_terminal
        notices = [f for f in effects if isinstance(f, SendCancelledNotice)]
        if notices:
            assert len(notices) == 1
            assert resolves
            assert was_outstanding  # only when a request is open at the client
            outcome = resolves[0].outcome
            assert isinstance(outcome, TERMINAL_NOTICE_OUTCOMES)
            assert not (isinstance(outcome, Cancelled) and outcome.by == "client")
            assert not (isinstance(outcome, Failed) and outcome.reason == "transport")
        client_knows = isinstance(event, Answer | TransportFailed) or (
            isinstance(event, Cancel) and event.by == "client"
        )
        if resolves and was_outstanding and not client_knows:
            assert notices, f"the client must drop its request after {event!r}"
        for f in effects:
            if isinstance(f, SendRequest):
                assert f.attempt == self.next_attempt
                self.next_attempt += 1
                assert f.attempt <= self.policy.max_reprompts + 1
                if f.attempt > 1:
                    assert isinstance(event, Validated)
                    assert not event.ok
                    assert f.errors == event.errors
            elif isinstance(f, ValidateAnswer):
                assert isinstance(event, Answer)
                assert event.action == "accept"
                assert was_outstanding
            elif isinstance(f, SendWarning):
                assert isinstance(event, WarningDue)
                assert e.deadline not in self.warned_for
                self.warned_for.add(e.deadline)
                assert 0 < f.remaining_s <= self.warn_before + 1e-9
            elif isinstance(f, SetDeadline):
                assert f.deadline == e.deadline
                assert f.warn_at == e.warn_at
            elif isinstance(f, ExtensionGranted):
                assert isinstance(event, Extend)
                assert f.deadline == e.deadline
                assert 0 < f.granted_s <= self.policy.extension_s
                assert f.deadline == deadline_before + f.granted_s
                self.granted_total += f.granted_s
            elif isinstance(f, ExtensionRefused):
                assert isinstance(event, Extend)
                assert e.deadline == deadline_before
        if isinstance(event, Answer) and not was_outstanding:
            assert effects == []
        if isinstance(event, Validated | ValidatorFailed) and not was_validating:
            assert effects == []
        if isinstance(event, ValidatorFailed) and effects:
            assert effects == [Resolve(Failed("validator_error", event.detail))]
        if resolves and isinstance(resolves[0].outcome, TimedOut):
            assert isinstance(event, DeadlineReached)
            assert event.now >= deadline_before

    # -- rules -----------------------------------------------------------------------------

    @rule(dt=st.integers(0, 120) | st.floats(0, 120, allow_nan=False))
    def advance(self, dt: float) -> None:
        self.now += dt

    @rule(to=st.sampled_from(["warn_at", "deadline", "just_before_deadline"]))
    def jump(self, to: str) -> None:
        """Move the clock to a boundary the machine cares about (never backwards)."""
        warn_at = self.e.warn_at
        if to == "warn_at" and warn_at is not None:
            self.now = max(self.now, warn_at)
        elif to == "deadline":
            self.now = max(self.now, self.e.deadline)
        elif to == "just_before_deadline":
            self.now = max(self.now, self.e.deadline - 1e-3)

    @precondition(lambda self: not self.started)
    @rule()
    def start(self) -> None:
        self.started = True
        effects = self.e.start()
        if self.e.is_terminal:
            assert effects == []
        else:
            assert effects == [SetDeadline(self.e.deadline, self.e.warn_at), SendRequest(1, ())]
            self.next_attempt = 2
            self.model_outstanding = True

    @precondition(LIVE)
    @rule()
    def sent(self) -> None:
        self.apply(Sent(self.now))

    @precondition(LIVE)
    @rule(
        action=st.sampled_from(["accept"] * 6 + ["decline", "cancel"]),
        content=st.none() | st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    )
    def answer(self, action: Any, content: Any) -> None:
        self.apply(Answer(action, content))

    @precondition(LIVE)
    @rule(ok=st.booleans(), errors=st.lists(st.text(max_size=5), min_size=1, max_size=3))
    def validated(self, ok: bool, errors: list[str]) -> None:
        self.apply(Validated(ok, () if ok else tuple(errors), {"v": 1} if ok else None))

    @precondition(LIVE)
    @rule(detail=st.sampled_from(["KeyError raised by the validator", ""]))
    def validator_failed(self, detail: str) -> None:
        self.apply(ValidatorFailed(detail))

    @precondition(LIVE)
    @rule(back=st.sampled_from([0.0, 0.0, 1.0, 500.0]))
    def warning_due(self, back: float) -> None:
        self.apply(WarningDue(self.now - back))

    @precondition(LIVE)
    @rule(back=st.sampled_from([0.0, 0.0, 1.0, 500.0]))
    def deadline_reached(self, back: float) -> None:
        self.apply(DeadlineReached(self.now - back))

    @precondition(LIVE)
    @rule()
    def shell_timers(self) -> None:
        """What the shell does: fire whichever timers are due, warning first."""
        e = self.e
        warn_at = e.warn_at
        if warn_at is not None and self.now >= warn_at:
            due = not e.is_terminal and self.now < e.deadline
            due = due and e.deadline not in self.warned_for
            effects = self.apply(WarningDue(self.now))
            assert effects == ([SendWarning(e.deadline - self.now)] if due else [])
        if self.now >= e.deadline:
            was_live = not e.is_terminal
            effects = self.apply(DeadlineReached(self.now))
            assert e.is_terminal
            assert (Resolve(TimedOut()) in effects) == was_live

    @precondition(LIVE)
    @rule(seconds=st.none() | st.floats(0.001, 1e5, allow_nan=False))
    def extend(self, seconds: float | None) -> None:
        self.apply(Extend(self.now, seconds))

    @precondition(LIVE)
    @rule(
        event=st.sampled_from(
            [
                OwnerDown(),
                Cancel("server"),
                Cancel("client"),
                Cancel("app"),
                RuntimeRestart(),
                TransportFailed("boom"),
            ]
        ),
        roll=st.integers(0, 2),
    )
    def interrupt(self, event: Event, roll: int) -> None:
        """Every way an elicitation can be ended from outside (one rule, and only one roll
        in three applies it, so they stay rare enough for long lives to be explored too)."""
        if roll == 0:
            self.apply(event)

    @precondition(lambda self: self.e.is_terminal)
    @rule(event=st.sampled_from(LATE_EVENTS))
    def after_the_end(self, event: Event) -> None:
        """Anything, once it is over: a no-op (apply() asserts it)."""
        self.apply(event)

    @precondition(LIVE)
    @rule(verdicts=st.lists(st.booleans(), min_size=1, max_size=6))
    def user_answers(self, verdicts: list[bool]) -> None:
        """The shell's normal flow: answer, validate, repeat (re-prompts)."""
        for ok in verdicts:
            effects = self.apply(Answer("accept", {"n": len(self.resolves)}))
            if not effects:
                return
            assert effects == [ValidateAnswer({"n": 0})]
            self.apply(Validated(ok, () if ok else ("invalid",), {"v": 1} if ok else None))

    # -- invariants --------------------------------------------------------------------

    @invariant()
    def status_is_legal(self) -> None:
        assert self.e.status in set(Status)
        assert self.e.is_terminal == (self.e.status in TERMINAL)

    @invariant()
    def one_resolve_iff_terminal_and_consistent(self) -> None:
        e = self.e
        if e.is_terminal:
            assert len(self.resolves) == 1
            outcome = self.resolves[0].outcome
            assert e.outcome == outcome
            assert status_for_outcome(outcome) is e.status
            assert e.status in STATUS_OF_OUTCOME[type(outcome)]
            assert not e.awaiting_answer
            assert not e.validating
        else:
            assert self.resolves == []
            assert e.outcome is None

    @invariant()
    def private_phases_match_the_model(self) -> None:
        assert self.e.awaiting_answer == self.model_outstanding
        assert self.e.validating == self.model_validating

    @invariant()
    def bounds_hold(self) -> None:
        e = self.e
        assert 0 <= e.extensions_used <= self.policy.max_extensions
        assert e.extensions_remaining == self.policy.max_extensions - e.extensions_used
        assert 0 <= e.reprompts_used <= self.policy.max_reprompts
        assert not (e.awaiting_answer and e.validating)

    @invariant()
    def deadline_only_moves_forward_by_granted_extensions(self) -> None:
        e = self.e
        assert e.deadline >= self.last_deadline
        self.last_deadline = e.deadline
        assert e.deadline == pytest.approx(self.initial_deadline + self.granted_total)
        limit = self.initial_deadline + self.policy.max_extensions * self.policy.extension_s
        assert e.deadline <= limit + 1e-6
        if e.warn_at is not None:
            assert e.warn_at == e.deadline - self.warn_before

    def teardown(self) -> None:
        # Whatever happened, a restart must end it: exactly one Resolve over the whole life.
        if hasattr(self, "e"):
            self.apply(RuntimeRestart())
            assert self.e.is_terminal
            assert len(self.resolves) == 1


LifecycleMachine.TestCase.settings = settings(
    max_examples=200,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_lifecycle_machine = LifecycleMachine.TestCase
