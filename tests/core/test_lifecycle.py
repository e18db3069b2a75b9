"""The elicitation lifecycle: table tests of every transition row, unit tests of the
rules (timers, warnings, consent, the answer in flight), and a hypothesis state machine over
random event sequences checked against a reference model."""

from __future__ import annotations

import dataclasses
import math
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
    LIVE_PHASES,
    NON_TERMINAL,
    STATUS_OF_OUTCOME,
    TERMINAL,
    TRANSITIONS,
    Answer,
    AnswerRefused,
    Cancel,
    Complete,
    Consented,
    Dismiss,
    Effect,
    Elicitation,
    Event,
    Extend,
    ExtensionGranted,
    ExtensionRefused,
    OwnerDown,
    Phase,
    Resolve,
    RuntimeRestart,
    SendCancelledNotice,
    SendCompleteNotice,
    SendRequest,
    SendWarning,
    Sent,
    SetDeadline,
    Status,
    TransportFailed,
    ValidateAnswer,
    Validated,
    ValidatorFailed,
    Wakeup,
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
# URL mode: 600 s deadline, warn at 540 s.
CONTENT = {"region": "eu"}


# -- setups: one Elicitation in each interesting (phase, status) ------------------------


def fresh() -> Elicitation:
    """new, pending: start() not called, nothing asked."""
    return Elicitation(POLICY, 0.0)


def started() -> Elicitation:
    """asking, pending: request issued but not yet confirmed sent."""
    e = fresh()
    e.start()
    return e


def active() -> Elicitation:
    """asking, active: request outstanding at the client."""
    e = started()
    assert e.handle(Sent(1.0)) == []
    return e


def validating() -> Elicitation:
    """validating, active: an accepted answer is with the validator."""
    e = active()
    assert e.handle(Answer("accept", CONTENT)) == [ValidateAnswer(CONTENT)]
    return e


def reprompted() -> Elicitation:
    """asking, active: re-prompt 1 outstanding."""
    e = validating()
    assert e.handle(Validated(False, ("bad",))) == [SendRequest(2, ("bad",))]
    return e


def last_chance() -> Elicitation:
    """validating, active: the answer to the last allowed re-prompt."""
    e = validating()
    for attempt in range(2, POLICY.max_reprompts + 2):
        assert e.handle(Validated(False, ("bad",))) == [SendRequest(attempt, ("bad",))]
        assert e.handle(Answer("accept", CONTENT)) == [ValidateAnswer(CONTENT)]
    return e


def url_started() -> Elicitation:
    """asking, pending, URL mode."""
    e = Elicitation(POLICY, 0.0, mode="url")
    e.start()
    return e


def consented_early() -> Elicitation:
    """consented, pending: the user accepted the URL before our send returned."""
    e = url_started()
    assert e.handle(Answer("accept", {"ignored": 1})) == [Consented()]
    return e


def consented() -> Elicitation:
    """consented, active: the user accepted the URL; the application completes it."""
    e = url_started()
    assert e.handle(Sent(1.0)) == []
    assert e.handle(Answer("accept")) == [Consented()]
    return e


SETUPS: dict[str, Callable[[], Elicitation]] = {
    "fresh": fresh,
    "started": started,
    "active": active,
    "validating": validating,
    "reprompted": reprompted,
    "last_chance": last_chance,
    "url_started": url_started,
    "consented_early": consented_early,
    "consented": consented,
}

CANCELLED_NOTICE = SendCancelledNotice()
COMPLETE_NOTICE = SendCompleteNotice()
REFUSED = AnswerRefused()
VALIDATOR_BUG = Complete(validator_failed="KeyError")

# (setup, event, expected status, expected effects)
CASES: list[tuple[str, Event, Status, list[Effect]]] = [
    # ---- new, pending: start() not called --------------------------------------------
    ("fresh", Sent(1.0), Status.PENDING, []),
    ("fresh", Answer("accept", CONTENT), Status.PENDING, []),
    ("fresh", Validated(True, (), CONTENT), Status.PENDING, []),
    ("fresh", ValidatorFailed("KeyError"), Status.PENDING, []),
    ("fresh", Complete(CONTENT), Status.COMPLETED, [Resolve(Accepted(CONTENT))]),
    ("fresh", VALIDATOR_BUG, Status.FAILED, [Resolve(Failed("validator_error", "KeyError"))]),
    ("fresh", Dismiss("decline"), Status.DECLINED, [Resolve(Declined())]),
    ("fresh", Dismiss("cancel"), Status.CANCELLED, [Resolve(Cancelled("client"))]),
    ("fresh", Wakeup(240.0), Status.PENDING, [SendWarning(60.0)]),
    ("fresh", Wakeup(300.0), Status.TIMED_OUT, [Resolve(TimedOut())]),
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
    # ---- asking, pending: request issued ---------------------------------------------
    ("started", Sent(1.0), Status.ACTIVE, []),
    ("started", Answer("accept", CONTENT), Status.ACTIVE, [ValidateAnswer(CONTENT)]),
    ("started", Answer("decline"), Status.DECLINED, [Resolve(Declined())]),
    ("started", Answer("cancel"), Status.CANCELLED, [Resolve(Cancelled("client"))]),
    ("started", Validated(True, (), CONTENT), Status.PENDING, []),
    ("started", Validated(False, ("e",)), Status.PENDING, []),
    ("started", ValidatorFailed("KeyError"), Status.PENDING, []),
    (
        "started",
        Complete(CONTENT),
        Status.COMPLETED,
        [Resolve(Accepted(CONTENT)), CANCELLED_NOTICE],  # the client's form is moot
    ),
    (
        "started",
        VALIDATOR_BUG,
        Status.FAILED,
        [Resolve(Failed("validator_error", "KeyError")), CANCELLED_NOTICE],
    ),
    ("started", Dismiss("decline"), Status.DECLINED, [Resolve(Declined())]),
    ("started", Dismiss("cancel"), Status.CANCELLED, [Resolve(Cancelled("client"))]),
    ("started", Wakeup(240.0), Status.PENDING, [SendWarning(60.0)]),
    ("started", Wakeup(239.0), Status.PENDING, []),
    ("started", Wakeup(299.5), Status.PENDING, [SendWarning(0.5)]),
    ("started", Wakeup(300.0), Status.TIMED_OUT, [Resolve(TimedOut()), CANCELLED_NOTICE]),
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
    # ---- asking, active: request outstanding -----------------------------------------
    ("active", Sent(2.0), Status.ACTIVE, []),
    ("active", Answer("accept", CONTENT), Status.ACTIVE, [ValidateAnswer(CONTENT)]),
    ("active", Answer("decline", {"ignored": 1}), Status.DECLINED, [Resolve(Declined())]),
    ("active", Answer("cancel"), Status.CANCELLED, [Resolve(Cancelled("client"))]),
    ("active", Validated(True, (), CONTENT), Status.ACTIVE, []),
    ("active", ValidatorFailed("KeyError"), Status.ACTIVE, []),
    ("active", Complete(CONTENT), Status.COMPLETED, [Resolve(Accepted(CONTENT)), CANCELLED_NOTICE]),
    ("active", Dismiss("decline"), Status.DECLINED, [Resolve(Declined())]),
    ("active", Wakeup(250.0), Status.ACTIVE, [SendWarning(50.0)]),
    ("active", Wakeup(10.0), Status.ACTIVE, []),
    ("active", Wakeup(301.0), Status.TIMED_OUT, [Resolve(TimedOut()), CANCELLED_NOTICE]),
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
    # ---- validating: the answer in flight (no request outstanding) -------------------
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
    ("validating", Complete({"region": "us"}), Status.ACTIVE, [REFUSED]),
    ("validating", VALIDATOR_BUG, Status.ACTIVE, [REFUSED]),
    ("validating", Dismiss("decline"), Status.ACTIVE, [REFUSED]),
    ("validating", Dismiss("cancel"), Status.ACTIVE, [REFUSED]),
    ("validating", Wakeup(240.0), Status.ACTIVE, [SendWarning(60.0)]),
    ("validating", Wakeup(300.0), Status.TIMED_OUT, [Resolve(TimedOut())]),
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
    # ---- validating after the last re-prompt -----------------------------------------
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
    # ---- asking, active: a re-prompt outstanding -------------------------------------
    ("reprompted", Sent(3.0), Status.ACTIVE, []),
    ("reprompted", Answer("accept", CONTENT), Status.ACTIVE, [ValidateAnswer(CONTENT)]),
    ("reprompted", Answer("decline"), Status.DECLINED, [Resolve(Declined())]),
    ("reprompted", Validated(False, ("e",)), Status.ACTIVE, []),
    ("reprompted", Wakeup(300.0), Status.TIMED_OUT, [Resolve(TimedOut()), CANCELLED_NOTICE]),
    # ---- asking, pending, URL mode ---------------------------------------------------
    ("url_started", Sent(1.0), Status.ACTIVE, []),
    ("url_started", Answer("accept", CONTENT), Status.PENDING, [Consented()]),
    ("url_started", Answer("decline"), Status.DECLINED, [Resolve(Declined())]),
    (
        "url_started",
        Complete(CONTENT),
        Status.COMPLETED,
        [Resolve(Accepted(CONTENT)), COMPLETE_NOTICE],  # the client hears of it this way
    ),
    (
        "url_started",
        VALIDATOR_BUG,
        Status.FAILED,
        [Resolve(Failed("validator_error", "KeyError"))],
    ),
    ("url_started", Wakeup(540.0), Status.PENDING, [SendWarning(60.0)]),
    ("url_started", Wakeup(600.0), Status.TIMED_OUT, [Resolve(TimedOut()), CANCELLED_NOTICE]),
    (
        "url_started",
        Cancel("server"),
        Status.CANCELLED,
        [Resolve(Cancelled("server")), CANCELLED_NOTICE],
    ),
    # ---- consented, pending: the user accepted before our send returned --------------
    ("consented_early", Sent(2.0), Status.ACTIVE, []),
    ("consented_early", Answer("accept", CONTENT), Status.PENDING, []),
    (
        "consented_early",
        Complete(CONTENT),
        Status.COMPLETED,
        [Resolve(Accepted(CONTENT)), COMPLETE_NOTICE],
    ),
    ("consented_early", Wakeup(600.0), Status.TIMED_OUT, [Resolve(TimedOut())]),
    # ---- consented, active: the application completes it -----------------------------
    ("consented", Sent(2.0), Status.ACTIVE, []),
    ("consented", Answer("accept", CONTENT), Status.ACTIVE, []),
    ("consented", Answer("decline"), Status.ACTIVE, []),
    ("consented", Validated(True, (), CONTENT), Status.ACTIVE, []),
    ("consented", ValidatorFailed("KeyError"), Status.ACTIVE, []),
    (
        "consented",
        Complete(CONTENT),
        Status.COMPLETED,
        [Resolve(Accepted(CONTENT)), COMPLETE_NOTICE],
    ),
    ("consented", VALIDATOR_BUG, Status.FAILED, [Resolve(Failed("validator_error", "KeyError"))]),
    ("consented", Dismiss("decline"), Status.DECLINED, [Resolve(Declined())]),
    ("consented", Dismiss("cancel"), Status.CANCELLED, [Resolve(Cancelled("client"))]),
    ("consented", Wakeup(540.0), Status.ACTIVE, [SendWarning(60.0)]),
    ("consented", Wakeup(600.0), Status.TIMED_OUT, [Resolve(TimedOut())]),  # nothing open
    (
        "consented",
        Extend(10.0),
        Status.ACTIVE,
        [SetDeadline(900.0, 840.0), ExtensionGranted(900.0, 300.0, 1)],
    ),
    ("consented", OwnerDown(), Status.ABANDONED, [Resolve(Failed("abandoned"))]),
    ("consented", Cancel("server"), Status.CANCELLED, [Resolve(Cancelled("server"))]),
    ("consented", RuntimeRestart(), Status.FAILED, [Resolve(Failed("runtime_restarted"))]),
    ("consented", TransportFailed("x"), Status.FAILED, [Resolve(Failed("transport", "x"))]),
]


def _case_id(case: tuple[str, Event, Status, list[Effect]]) -> str:
    setup, event, status, _ = case
    return f"{setup}-{type(event).__name__}-{event!r}->{status.value}"


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_transition_case(case: tuple[str, Event, Status, list[Effect]]) -> None:
    setup, event, expected_status, expected_effects = case
    e = SETUPS[setup]()
    before = (e.phase, e.status)
    effects = e.handle(event)
    assert effects == expected_effects
    assert e.status is expected_status
    row = TRANSITIONS[(before[0], type(event))]
    assert e.phase in row.phases
    if e.is_terminal:
        assert e.status in row.ends
    resolves = [f for f in effects if isinstance(f, Resolve)]
    if e.is_terminal:
        assert len(resolves) == 1
        assert e.outcome == resolves[0].outcome
        assert status_for_outcome(resolves[0].outcome) is e.status
        assert e.phase is Phase.ENDED
    else:
        assert resolves == []
        assert e.outcome is None
    if effects == [REFUSED]:
        assert (e.phase, e.status) == before  # a refusal changes nothing


def _reached() -> dict[tuple[Phase, type[Any]], tuple[set[Phase], set[Status]]]:
    reached: dict[tuple[Phase, type[Any]], tuple[set[Phase], set[Status]]] = {}
    for setup, event, _, _ in CASES:
        e = SETUPS[setup]()
        phases, ends = reached.setdefault((e.phase, type(event)), (set(), set()))
        e.handle(event)
        phases.add(e.phase)
        if e.is_terminal:
            ends.add(e.status)
    return reached


def test_every_table_row_has_a_case() -> None:
    assert set(TRANSITIONS) <= set(_reached())


def test_every_table_target_is_reached_by_a_case() -> None:
    reached = _reached()
    for key, row in TRANSITIONS.items():
        assert reached[key] == (set(row.phases), set(row.ends)), key


# -- the table itself -------------------------------------------------------------------


def test_table_is_total_over_live_phases_and_empty_for_the_end() -> None:
    assert set(TRANSITIONS) == {(p, t) for p in LIVE_PHASES for t in EVENT_TYPES}
    assert set(Phase) - {Phase.ENDED} == LIVE_PHASES
    assert set(Status) == NON_TERMINAL | TERMINAL
    assert not NON_TERMINAL & TERMINAL


def test_table_rows_are_well_formed() -> None:
    for (phase, event_type), row in TRANSITIONS.items():
        assert row.phases, (phase, event_type)
        assert row.phases <= set(Phase)
        assert row.ends <= TERMINAL
        # a row ends the elicitation exactly when it may lead to the end
        assert (Phase.ENDED in row.phases) == bool(row.ends), (phase, event_type)
        assert Phase.NEW not in row.phases - {phase}  # nothing leads back before start()
        name = row.handler.__name__
        assert name.startswith("_on_") or name in ("_ignore", "_refuse_answer")
        if name in ("_ignore", "_refuse_answer"):
            assert row.phases == {phase}
            assert not row.ends


def test_only_the_answer_in_flight_refuses_the_application() -> None:
    for (phase, event_type), row in TRANSITIONS.items():
        refuses = row.handler.__name__ == "_refuse_answer"
        assert refuses == (phase is Phase.VALIDATING and event_type in (Complete, Dismiss))


def test_table_is_read_only() -> None:
    with pytest.raises(TypeError):
        TRANSITIONS[(Phase.NEW, Sent)] = TRANSITIONS[(Phase.ASKING, Sent)]  # type: ignore[index]


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
    with pytest.raises(ValueError, match=r"Wakeup\.now"):
        Wakeup(float("inf"))
    with pytest.raises(ValueError, match=r"Wakeup\.now"):
        Wakeup(True)
    with pytest.raises(ValueError, match=r"Dismiss\.action"):
        Dismiss("accept")  # type: ignore[arg-type]
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
    for name in (
        "status",
        "phase",
        "created_at",
        "sent_at",
        "deadline",
        "warn_at",
        "warned",
        "is_terminal",
    ):
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


# -- rules: start, answers, re-prompts --------------------------------------------------


def test_start_arms_timers_and_sends_first_request() -> None:
    e = Elicitation(POLICY, 10.0)
    assert (e.status, e.phase) == (Status.PENDING, Phase.NEW)
    assert e.deadline == 310.0
    assert e.warn_at == 250.0
    assert e.start() == [SetDeadline(310.0, 250.0), SendRequest(1, ())]
    assert (e.status, e.phase) == (Status.PENDING, Phase.ASKING)
    with pytest.raises(RuntimeError, match="twice"):
        e.start()


def test_url_mode_uses_url_deadline() -> None:
    e = Elicitation(POLICY, 0.0, mode="url")
    assert e.mode == "url"
    assert e.start()[0] == SetDeadline(600.0, 540.0)


def test_a_question_deadline_and_its_warning_replace_the_policy_ones() -> None:
    e = Elicitation(POLICY, 10.0, timeout_s=2.0)
    assert e.start()[0] == SetDeadline(12.0, pytest.approx(11.6))
    assert e.next_wakeup() == pytest.approx(11.6)
    assert e.handle(Wakeup(11.6)) == [SendWarning(remaining_s=pytest.approx(0.4))]
    assert e.next_wakeup() == 12.0
    assert e.handle(Wakeup(12.0))[0] == Resolve(TimedOut())


def test_a_question_deadline_longer_than_the_policy_is_clamped() -> None:
    e = Elicitation(POLICY, 0.0, mode="url", timeout_s=10_000.0)
    assert e.start()[0] == SetDeadline(600.0, 540.0)


def test_start_after_early_end_is_a_no_op() -> None:
    e = fresh()
    e.handle(Cancel("server"))
    assert e.start() == []
    assert e.phase is Phase.ENDED


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
        Wakeup(300.0),
        OwnerDown(),
        Cancel("server"),
        RuntimeRestart(),
        TransportFailed(),
        Complete(CONTENT),
        Dismiss("decline"),
    ],
)
def test_terminal_statuses_absorb_every_event(terminal_event: Event) -> None:
    e = active()
    e.handle(terminal_event)
    assert e.is_terminal
    snapshot = (e.status, e.phase, e.outcome, e.deadline, e.extensions_used, e.reprompts_used)
    later: list[Event] = [
        Sent(5.0),
        Answer("accept", CONTENT),
        Answer("decline"),
        Answer("cancel"),
        Validated(True, (), CONTENT),
        Validated(False, ("e",)),
        ValidatorFailed("late"),
        Complete(CONTENT),
        VALIDATOR_BUG,
        Dismiss("cancel"),
        Wakeup(250.0),
        Wakeup(1e9),
        Extend(10.0),
        OwnerDown(),
        Cancel("server"),
        RuntimeRestart(),
        TransportFailed("late"),
    ]
    for event in later:
        assert e.handle(event) == []
    assert (
        e.status,
        e.phase,
        e.outcome,
        e.deadline,
        e.extensions_used,
        e.reprompts_used,
    ) == snapshot
    assert e.next_wakeup() == math.inf


def test_completed_elicitation_absorbs_events() -> None:
    e = validating()
    e.handle(Validated(True, (), CONTENT))
    assert e.status is Status.COMPLETED
    assert e.handle(Cancel("server")) == []
    assert e.handle(Wakeup(1e6)) == []
    assert e.outcome == Accepted(CONTENT)


class NotAnEvent:
    pass


@dataclasses.dataclass(frozen=True, slots=True)
class SubclassedSent(Sent):
    pass


@pytest.mark.parametrize("setup", ["fresh", "active", "validating", "consented"])
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


def test_answer_while_validating_is_ignored_and_the_first_answer_wins() -> None:
    e = validating()
    assert e.handle(Answer("accept", {"region": "us"})) == []
    assert e.handle(Answer("decline")) == []
    assert e.handle(Validated(True, (), CONTENT)) == [Resolve(Accepted(CONTENT))]


# -- rules: extensions, the warning and the one timer -----------------------------------


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
    assert e.status is Status.ACTIVE  # the Wakeup that is due decides the timeout


def test_the_next_wakeup_is_the_warning_then_the_deadline() -> None:
    e = active()
    assert e.next_wakeup() == 240.0
    assert e.next_wakeup(busy=True) == 300.0  # a warning waits for the effect in progress
    assert not e.warned
    assert e.handle(Wakeup(240.0)) == [SendWarning(60.0)]
    assert e.warned
    assert e.next_wakeup() == e.next_wakeup(busy=True) == 300.0
    assert e.handle(Wakeup(300.0)) == [Resolve(TimedOut()), CANCELLED_NOTICE]
    assert e.next_wakeup() == e.next_wakeup(busy=True) == math.inf


def test_a_late_wakeup_past_the_deadline_times_out_without_warning() -> None:
    e = active()
    assert e.handle(Wakeup(1_000.0)) == [Resolve(TimedOut()), CANCELLED_NOTICE]
    assert not e.warned


def test_a_warning_missed_while_busy_goes_out_when_the_shell_wakes() -> None:
    e = active()
    busy_until = 270.0  # a send blocked past the warning time, not past the deadline
    assert e.next_wakeup(busy=True) > busy_until
    assert e.next_wakeup() < busy_until  # after it, the warning is overdue: wake at once
    assert e.handle(Wakeup(busy_until)) == [SendWarning(30.0)]
    assert e.next_wakeup() == 300.0 > busy_until


def test_an_extension_moves_a_question_deadline_and_keeps_its_warning() -> None:
    e = Elicitation(POLICY, 0.0, timeout_s=100.0)  # warned 20 s before: at 80 s
    e.start()
    assert e.handle(Extend(50.0, 30.0)) == [
        SetDeadline(130.0, 110.0),
        ExtensionGranted(130.0, 30.0, POLICY.max_extensions - 1),
    ]
    assert e.next_wakeup() == 110.0
    assert e.handle(Wakeup(109.0)) == []
    assert e.handle(Wakeup(110.0)) == [SendWarning(remaining_s=20.0)]


def test_warning_is_sent_once_per_deadline_and_rearmed_by_extension() -> None:
    e = active()
    assert e.handle(Wakeup(240.0)) == [SendWarning(60.0)]
    assert e.handle(Wakeup(250.0)) == []
    assert e.next_wakeup() == 300.0
    e.handle(Extend(260.0))  # deadline 600, warn at 540
    assert e.warn_at == 540.0
    assert not e.warned
    assert e.next_wakeup() == 540.0
    assert e.handle(Wakeup(260.0)) == []  # the old timer, firing late: stale
    assert e.handle(Wakeup(540.0)) == [SendWarning(60.0)]
    assert e.handle(Wakeup(541.0)) == []
    assert e.next_wakeup() == 600.0


def test_an_extension_after_the_warning_time_rearms_a_warning_already_due() -> None:
    e = Elicitation(LifecyclePolicy(extension_s=30.0), 0.0)
    e.start()
    assert e.handle(Wakeup(250.0)) == [SendWarning(50.0)]
    e.handle(Extend(280.0))  # deadline 330, warn at 270: already past
    assert e.next_wakeup() == 270.0
    assert e.handle(Wakeup(280.0)) == [SendWarning(50.0)]
    assert e.next_wakeup() == 330.0


def test_stale_deadline_after_extension_is_ignored() -> None:
    e = active()
    e.handle(Wakeup(240.0))
    e.handle(Extend(250.0))
    assert e.handle(Wakeup(300.0)) == []  # the old deadline's timer; the new warning is later
    assert e.status is Status.ACTIVE
    assert e.handle(Wakeup(600.0)) == [Resolve(TimedOut()), CANCELLED_NOTICE]


def test_warnings_can_be_disabled() -> None:
    e = Elicitation(LifecyclePolicy(warn_before_s=0), 0.0)
    assert e.warn_at is None
    assert e.start()[0] == SetDeadline(300.0, None)
    assert e.next_wakeup() == 300.0
    assert e.handle(Wakeup(299.0)) == []
    assert e.handle(Extend(1.0))[0] == SetDeadline(600.0, None)
    assert e.next_wakeup() == 600.0


# -- rules: URL consent ------------------------------------------------------------------


def test_a_url_accept_is_a_consent_that_waits_for_the_application() -> None:
    e = url_started()
    assert e.handle(Sent(1.0)) == []
    assert e.handle(Answer("accept", {"ignored": True})) == [Consented()]
    assert (e.phase, e.status) == (Phase.CONSENTED, Status.ACTIVE)
    assert e.handle(Answer("decline")) == []  # the client has answered already
    assert e.handle(Validated(True, (), CONTENT)) == []  # nothing was sent to validate
    assert e.handle(Complete(CONTENT)) == [Resolve(Accepted(CONTENT)), COMPLETE_NOTICE]
    assert (e.phase, e.status) == (Phase.ENDED, Status.COMPLETED)


def test_a_consent_before_the_send_returned_still_records_when_it_was_sent() -> None:
    e = consented_early()
    assert e.status is Status.PENDING
    assert e.handle(Sent(3.0)) == []
    assert (e.status, e.sent_at) == (Status.ACTIVE, 3.0)


@pytest.mark.parametrize(
    ("event", "outcome"),
    [
        (Wakeup(600.0), TimedOut()),
        (Cancel("server"), Cancelled("server")),
        (OwnerDown(), Failed("abandoned")),
        (RuntimeRestart(), Failed("runtime_restarted")),
    ],
)
def test_after_a_consent_the_client_has_no_request_to_drop(event: Event, outcome: Any) -> None:
    e = consented()
    assert e.handle(event) == [Resolve(outcome)]


def test_a_form_accept_is_validated_not_a_consent() -> None:
    e = active()
    assert e.handle(Answer("accept", CONTENT)) == [ValidateAnswer(CONTENT)]
    assert e.phase is Phase.VALIDATING


# -- rules: the answer in flight ----------------------------------------------------------


def test_the_application_waits_for_the_answer_in_flight_then_completes() -> None:
    e = validating()
    assert e.handle(Complete({"region": "us"})) == [REFUSED]
    assert e.handle(Dismiss("decline")) == [REFUSED]
    assert (e.phase, e.status, e.outcome) == (Phase.VALIDATING, Status.ACTIVE, None)
    assert e.handle(Validated(False, ("e",))) == [SendRequest(2, ("e",))]  # a re-prompt
    assert e.handle(Complete({"region": "us"})) == [
        Resolve(Accepted({"region": "us"})),
        CANCELLED_NOTICE,  # the re-prompt is open at the client: moot now
    ]


@pytest.mark.parametrize(
    ("race", "outcome"),
    [
        (Wakeup(300.0), TimedOut()),
        (Cancel("server"), Cancelled("server")),
        (OwnerDown(), Failed("abandoned")),
        (RuntimeRestart(), Failed("runtime_restarted")),
    ],
)
@pytest.mark.parametrize("verdict", [Validated(True, (), CONTENT), Validated(False, ("e",))])
def test_an_end_that_overtakes_the_answer_in_flight_wins_and_its_verdict_is_ignored(
    race: Event, outcome: Any, verdict: Validated
) -> None:
    e = validating()
    assert e.handle(race) == [Resolve(outcome)]  # answered: no request to withdraw
    assert e.handle(verdict) == []
    assert e.outcome == outcome


def test_a_verdict_that_comes_before_the_deadline_wins() -> None:
    e = validating()
    assert e.handle(Wakeup(299.0)) == [SendWarning(1.0)]  # the warning does not interrupt it
    assert e.handle(Validated(True, (), CONTENT)) == [Resolve(Accepted(CONTENT))]
    assert e.handle(Wakeup(300.0)) == []


def test_repr_mentions_status_and_phase() -> None:
    assert "pending new" in repr(fresh())
    assert "active validating" in repr(validating())
    assert "warned=False" in repr(active())


# -- hypothesis: random event sequences against a reference model ------------------------

TERMINAL_NOTICE_OUTCOMES = (TimedOut, Cancelled, Failed, Accepted)
STATUS_RANK = {Status.PENDING: 0, Status.ACTIVE: 1} | {s: 2 for s in TERMINAL}


def LIVE(machine: LifecycleMachine) -> bool:
    return not machine.e.is_terminal


def ASKING_A_FORM(machine: LifecycleMachine) -> bool:
    return machine.e.phase is Phase.ASKING and machine.e.mode == "form"


LATE_EVENTS: list[Event] = [
    Sent(0.0),
    Answer("accept", CONTENT),
    Answer("decline"),
    Validated(True, (), CONTENT),
    Validated(False, ("e",)),
    ValidatorFailed("late"),
    Complete(CONTENT),
    Complete(validator_failed="late"),
    Dismiss("decline"),
    Wakeup(1e7),
    Extend(0.0),
    OwnerDown(),
    Cancel("server"),
    RuntimeRestart(),
    TransportFailed(),
]


class LifecycleMachine(RuleBasedStateMachine):
    """Drive one Elicitation with arbitrary events (including after it ended), and check it
    against a reference model kept from its effects alone: the phase, the warning and the
    next wake-up a shell would derive from what it was told to do."""

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
        # the reference model, driven by the effects only
        self.model_phase = Phase.NEW
        self.model_warned = False

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
        before = (e.phase, e.status)
        was_terminal = e.is_terminal
        deadline_before, warn_at_before, warned_before = e.deadline, e.warn_at, e.warned

        effects = e.handle(event)

        assert all(isinstance(f, EFFECT_TYPES) for f in effects)
        assert before[0] is self.model_phase
        for f in effects:  # the model follows what the shell is told, nothing else
            if isinstance(f, SendRequest):
                self.model_phase = Phase.ASKING
            elif isinstance(f, ValidateAnswer):
                self.model_phase = Phase.VALIDATING
            elif isinstance(f, Consented):
                self.model_phase = Phase.CONSENTED
            elif isinstance(f, Resolve):
                self.model_phase = Phase.ENDED
            elif isinstance(f, SendWarning):
                self.model_warned = True
            elif isinstance(f, ExtensionGranted):
                self.model_warned = False  # a new deadline, a new warning
        if was_terminal:
            assert effects == []
            assert (e.phase, e.status) == before
            return effects
        row = TRANSITIONS[(before[0], type(event))]
        assert e.phase in row.phases
        if e.is_terminal:
            assert e.status in row.ends
        assert STATUS_RANK[e.status] >= STATUS_RANK[before[1]]  # pending -> active -> end
        if before[1] is Status.PENDING and e.status is Status.ACTIVE:
            assert isinstance(event, Sent) or event == Answer("accept", event.content)  # type: ignore[union-attr]
        self.check_effects(event, effects, before[0], deadline_before)
        self.check_timers(event, effects, deadline_before, warn_at_before, warned_before)
        return effects

    def check_effects(
        self, event: Event, effects: list[Effect], phase: Phase, deadline_before: float
    ) -> None:
        e = self.e
        url = e.mode == "url"
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
            assert phase is Phase.ASKING  # only when a request is open at the client
            outcome = resolves[0].outcome
            assert isinstance(outcome, TERMINAL_NOTICE_OUTCOMES)
            assert not (isinstance(outcome, Cancelled) and outcome.by == "client")
            assert not (isinstance(outcome, Failed) and outcome.reason == "transport")
        client_knows = isinstance(event, Answer | TransportFailed | Dismiss) or (
            isinstance(event, Cancel) and event.by == "client"
        )
        told_otherwise = isinstance(event, Complete) and url  # elicitation/complete instead
        if resolves and phase is Phase.ASKING and not client_knows and not told_otherwise:
            assert notices, f"the client must drop its request after {event!r}"
        completes = [f for f in effects if isinstance(f, SendCompleteNotice)]
        accepted = bool(resolves) and isinstance(resolves[0].outcome, Accepted)
        assert bool(completes) == (isinstance(event, Complete) and url and accepted)
        if isinstance(event, Answer):
            assert bool(effects) == (phase is Phase.ASKING), event
        if isinstance(event, Validated | ValidatorFailed):
            assert bool(effects) == (phase is Phase.VALIDATING), event
        if isinstance(event, ValidatorFailed) and effects:
            assert effects == [Resolve(Failed("validator_error", event.detail))]
        if isinstance(event, Complete | Dismiss):
            if phase is Phase.VALIDATING:
                assert effects == [AnswerRefused()]  # the answer in flight decides first
            else:
                assert resolves
                expected: Any = Declined() if event == Dismiss("decline") else None
                if isinstance(event, Dismiss) and event.action == "cancel":
                    expected = Cancelled("client")
                elif isinstance(event, Complete):
                    expected = (
                        Accepted(event.content)
                        if event.validator_failed is None
                        else Failed("validator_error", event.validator_failed)
                    )
                assert resolves[0].outcome == expected
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
                assert not url
                assert phase is Phase.ASKING
            elif isinstance(f, Consented):
                assert effects == [f]
                assert isinstance(event, Answer)
                assert event.action == "accept"
                assert url
                assert phase is Phase.ASKING
            elif isinstance(f, AnswerRefused):
                assert effects == [f]
                assert isinstance(event, Complete | Dismiss)
            elif isinstance(f, ExtensionGranted):
                assert isinstance(event, Extend)
                assert f.deadline == e.deadline
                assert 0 < f.granted_s <= self.policy.extension_s
                assert f.deadline == deadline_before + f.granted_s
                self.granted_total += f.granted_s
            elif isinstance(f, ExtensionRefused):
                assert isinstance(event, Extend)
                assert e.deadline == deadline_before

    def check_timers(
        self,
        event: Event,
        effects: list[Effect],
        deadline_before: float,
        warn_at_before: float | None,
        warned_before: bool,
    ) -> None:
        e = self.e
        resolves = [f for f in effects if isinstance(f, Resolve)]
        if resolves and isinstance(resolves[0].outcome, TimedOut):
            assert isinstance(event, Wakeup)
            assert event.now >= deadline_before
        for f in effects:
            if isinstance(f, SendWarning):
                assert isinstance(event, Wakeup)
                assert warn_at_before is not None
                assert warn_at_before <= event.now < deadline_before
                assert not warned_before
                assert e.deadline not in self.warned_for  # once per deadline
                self.warned_for.add(e.deadline)
                assert f.remaining_s == e.deadline - event.now
                assert 0 < f.remaining_s <= self.warn_before + 1e-9
            elif isinstance(f, SetDeadline):
                assert isinstance(event, Extend)
                assert f.deadline == e.deadline
                assert f.warn_at == e.warn_at
                assert not e.warned  # an extension re-arms the warning
        if isinstance(event, Wakeup):
            now = event.now
            if now >= deadline_before:
                assert resolves == [Resolve(TimedOut())]
            elif warned_before or warn_at_before is None or now < warn_at_before:
                assert effects == []  # nothing due: a stale or early timer
            else:
                assert effects == [SendWarning(deadline_before - now)]
            if not e.is_terminal:
                assert e.next_wakeup() > now  # the shell never spins

    # -- rules -----------------------------------------------------------------------------

    @rule(dt=st.integers(0, 120) | st.floats(0, 120, allow_nan=False))
    def advance(self, dt: float) -> None:
        self.now += dt

    @rule(to=st.sampled_from(["warn_at", "deadline", "just_before_deadline", "next_wakeup"]))
    def jump(self, to: str) -> None:
        """Move the clock to a boundary the machine cares about (never backwards)."""
        e = self.e
        warn_at = e.warn_at
        if to == "warn_at" and warn_at is not None:
            self.now = max(self.now, warn_at)
        elif to == "deadline":
            self.now = max(self.now, e.deadline)
        elif to == "just_before_deadline":
            self.now = max(self.now, e.deadline - 1e-3)
        elif to == "next_wakeup" and not e.is_terminal:
            self.now = max(self.now, e.next_wakeup())

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
            self.model_phase = Phase.ASKING

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
    @rule(
        content=st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
        failed=st.sampled_from([None, None, "TypeError"]),
        roll=st.integers(0, 2),
    )
    def complete(self, content: Any, failed: str | None, roll: int) -> None:
        """The application's completion (one roll in three, like every other end)."""
        if roll == 0 or self.e.phase is Phase.VALIDATING:
            self.apply(Complete(content, validator_failed=failed))

    @precondition(LIVE)
    @rule(action=st.sampled_from(["decline", "cancel"]), roll=st.integers(0, 2))
    def dismiss(self, action: Any, roll: int) -> None:
        if roll == 0 or self.e.phase is Phase.VALIDATING:
            self.apply(Dismiss(action))

    @precondition(LIVE)
    @rule(back=st.sampled_from([0.0, 0.0, 1.0, 500.0]))
    def wakeup(self, back: float) -> None:
        """A timer firing at any time, stale ones included."""
        self.apply(Wakeup(self.now - back))

    @precondition(LIVE)
    @rule()
    def shell_timer(self) -> None:
        """What the shell does: sleep until next_wakeup(), then feed Wakeup. The timer the
        lifecycle asks for is never spurious: something is due when it fires."""
        self.now = max(self.now, self.e.next_wakeup())
        assert self.apply(Wakeup(self.now)) != []

    @precondition(LIVE)
    @rule(seconds=st.none() | st.floats(0.001, 1e5, allow_nan=False))
    def extend(self, seconds: float | None) -> None:
        self.apply(Extend(self.now, seconds))

    @precondition(
        lambda self: (
            not self.e.is_terminal
            and self.e.warned
            and self.e.extensions_remaining > 0
            and self.now < self.e.deadline
        )
    )
    @rule()
    def rearm_warning(self) -> None:
        """An extension after the warning re-arms it: the next wake-up is the new warning
        time, and firing it warns again (at once, when that time has already passed)."""
        effects = self.apply(Extend(self.now))
        assert isinstance(effects[-1], ExtensionGranted)
        e = self.e
        assert not e.warned
        assert e.warn_at is not None  # it warned, so warnings are on
        assert e.next_wakeup() == min(e.warn_at, e.deadline)
        self.now = max(self.now, e.next_wakeup())
        assert self.apply(Wakeup(self.now)) == [SendWarning(e.deadline - self.now)]

    @precondition(lambda self: not self.e.is_terminal and ASKING_A_FORM(self))
    @rule(
        race=st.sampled_from(
            [
                "deadline",
                "warning",
                "cancel",
                "owner",
                "restart",
                "complete",
                "dismiss",
                "extend",
                "client_again",
            ]
        ),
        ok=st.booleans(),
    )
    def answer_in_flight_race(self, race: str, ok: bool) -> None:
        """An accepted answer is with the validator when something else happens: whatever
        ends the elicitation first wins and the verdict is ignored; the application is refused
        and a second client answer ignored until the verdict decides."""
        e = self.e
        assert self.apply(Answer("accept", CONTENT)) == [ValidateAnswer(CONTENT)]
        events: dict[str, Event] = {
            "deadline": Wakeup(max(self.now, e.deadline)),
            "warning": Wakeup(self.now),
            "cancel": Cancel("server"),
            "owner": OwnerDown(),
            "restart": RuntimeRestart(),
            "complete": Complete({"other": 1}),
            "dismiss": Dismiss("cancel"),
            "extend": Extend(self.now),
            "client_again": Answer("decline"),
        }
        event = events[race]
        if isinstance(event, Wakeup):
            self.now = event.now
        effects = self.apply(event)
        ended = e.is_terminal
        assert ended == (
            race in ("deadline", "cancel", "owner", "restart")
            or (race == "warning" and self.now >= e.deadline)
        )
        if ended:
            assert SendCancelledNotice() not in effects  # the client has answered
        if race in ("complete", "dismiss"):
            assert effects == [AnswerRefused()]
        if race == "client_again":
            assert effects == []
        verdict = self.apply(Validated(ok, () if ok else ("invalid",), CONTENT if ok else None))
        assert (verdict == []) == ended

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
        """The shell's normal flow: answer, validate, repeat (re-prompts); in URL mode the
        user's accept is a consent."""
        for ok in verdicts:
            effects = self.apply(Answer("accept", {"n": len(self.resolves)}))
            if effects != [ValidateAnswer({"n": 0})]:
                assert effects in ([], [Consented()])
                return
            self.apply(Validated(ok, () if ok else ("invalid",), {"v": 1} if ok else None))

    # -- invariants --------------------------------------------------------------------

    @invariant()
    def status_and_phase_agree(self) -> None:
        e = self.e
        assert e.status in set(Status)
        assert e.is_terminal == (e.status in TERMINAL) == (e.phase is Phase.ENDED)
        if e.phase is Phase.NEW:
            assert e.status is Status.PENDING
        if e.phase is Phase.VALIDATING:
            assert e.status is Status.ACTIVE
        if e.phase is Phase.CONSENTED:
            assert e.mode == "url"

    @invariant()
    def one_resolve_iff_terminal_and_consistent(self) -> None:
        e = self.e
        if e.is_terminal:
            assert len(self.resolves) == 1
            outcome = self.resolves[0].outcome
            assert e.outcome == outcome
            assert status_for_outcome(outcome) is e.status
            assert e.status in STATUS_OF_OUTCOME[type(outcome)]
        else:
            assert self.resolves == []
            assert e.outcome is None

    @invariant()
    def state_matches_the_model(self) -> None:
        e = self.e
        assert e.phase is self.model_phase
        assert e.warned == self.model_warned
        if e.is_terminal:
            expected = math.inf
        elif self.model_warned or e.warn_at is None:
            expected = e.deadline
        else:
            expected = min(e.warn_at, e.deadline)
        assert e.next_wakeup() == expected
        assert e.next_wakeup(busy=True) == (math.inf if e.is_terminal else e.deadline)

    @invariant()
    def bounds_hold(self) -> None:
        e = self.e
        assert 0 <= e.extensions_used <= self.policy.max_extensions
        assert e.extensions_remaining == self.policy.max_extensions - e.extensions_used
        assert 0 <= e.reprompts_used <= self.policy.max_reprompts

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
    max_examples=300,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_lifecycle_machine = LifecycleMachine.TestCase
