"""The elicitation lifecycle: a pure state machine, written as data.

Theory of operation
-------------------

One :class:`Elicitation` object models one question put to a user. It owns no task, no
channel and no clock: the trio shell (``actors/elicitation.py``) feeds it *events* (what
happened, with ``now`` when time matters) and executes the *effects* it returns, in order.

Rule 1: all lifecycle decisions live in this file. The shell never inspects an answer,
counts re-prompts, compares times or decides an outcome; it only turns effects into I/O
(send a request, move a cancel scope, resolve a reply slot) and I/O into events.

Rule 2: the machine is a table. :data:`TRANSITIONS` maps ``(Status, event type)`` to a
:class:`Transition`: the handler to run and the statuses it may lead to. The table is total
over the non-terminal statuses, so every event has a defined meaning in every live state;
terminal statuses are absorbing (every event is a no-op that returns ``[]`` and never
raises). An event type the table does not know raises ``TypeError``.

Rule 3: exactly one :class:`Resolve` is emitted over the whole life of an elicitation, by
the transition that enters a terminal status; its outcome agrees with that status
(:data:`STATUS_OF_OUTCOME`).

The life of an elicitation::

    Elicitation(policy, now)        status pending; deadline = now + initial deadline (the
                                    policy's, or the question's own clamped to it)
    start()                         -> SetDeadline, SendRequest(attempt=1)
    Sent(now)                       pending -> active (the request reached the transport)
    Answer("accept", content)       -> ValidateAnswer(content); a validation is in flight
    Validated(ok=True, content)     -> completed, Resolve(Accepted(content))
    Validated(ok=False, errors)     -> SendRequest(attempt=n+1, errors)   (a re-prompt)
                                       ... or failed, Resolve(Failed("validation"))
    ValidatorFailed(detail)         -> failed, Resolve(Failed("validator_error")): the
                                       application's validation code could not judge it
    Answer("decline" | "cancel")    -> declined | cancelled (by the client)
    WarningDue(now)                 -> SendWarning(remaining_s), once per deadline
    Extend(now, seconds)            -> SetDeadline + ExtensionGranted | ExtensionRefused
    DeadlineReached(now)            -> timed_out
    Cancel(by) / OwnerDown() / RuntimeRestart() / TransportFailed(detail)
                                    -> cancelled / abandoned / failed / failed

Two private facts refine ``active`` without adding public statuses:

* *outstanding*: an ``elicitation/create`` request is open at the client (issued by
  ``start()`` or a re-prompt and not answered yet). Only then is an :class:`Answer`
  considered, so an answer that arrives while a validation is in flight (or before anything
  was sent) is ignored. When the elicitation ends for a reason the client cannot know about
  (deadline, server cancel, owner gone, runtime restart) while a request is outstanding, a
  :class:`SendCancelledNotice` tells the client to drop it.
* *validating*: an accepted answer is with the validator; only then is a
  :class:`Validated` verdict considered.

Time: the deadline runs from creation (a send blocked by back-pressure still times out):
the policy's deadline for the mode, or the question's own (``timeout_s``) clamped to it. The
warning comes the policy's ``warn_before_s`` before the policy's deadline, or the same
proportion of a shorter one. The deadline only ever moves forward, and only by a granted
extension: each adds at most ``policy.extension_s`` (a longer request is clamped, a peer
never raises a limit), at most ``policy.max_extensions`` times, and re-arms the single
warning. Timer events carry ``now`` and are checked against the current deadline, so a timer
that the shell armed for an older deadline and that fires late is harmlessly ignored.

Effects are listed in the order the shell should execute them. When an elicitation ends,
:class:`Resolve` comes first and :class:`SendCancelledNotice` after it, so the waiter is
never delayed by a slow transport.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Final, Literal, TypeAlias

from erlmcp_py.core.outcomes import (
    Accepted,
    Cancelled,
    Declined,
    Failed,
    Outcome,
    TimedOut,
)
from erlmcp_py.core.policy import LifecyclePolicy, Mode

__all__ = [
    "ACTIONS",
    "EFFECT_TYPES",
    "EVENT_TYPES",
    "NON_TERMINAL",
    "STATUS_OF_OUTCOME",
    "TERMINAL",
    "TRANSITIONS",
    "Answer",
    "AnswerAction",
    "Cancel",
    "DeadlineReached",
    "Effect",
    "Elicitation",
    "Event",
    "Extend",
    "ExtensionGranted",
    "ExtensionRefused",
    "OwnerDown",
    "Resolve",
    "RuntimeRestart",
    "SendCancelledNotice",
    "SendRequest",
    "SendWarning",
    "Sent",
    "SetDeadline",
    "Status",
    "Transition",
    "TransportFailed",
    "ValidateAnswer",
    "Validated",
    "ValidatorFailed",
    "WarningDue",
    "status_for_outcome",
]


class Status(StrEnum):
    """Where an elicitation is in its life (the vocabulary of ``docs/architecture.md``)."""

    PENDING = "pending"
    """Registered; the request may not have reached the transport yet."""
    ACTIVE = "active"
    """Sent to the client (or answered): waiting for an answer or a validation."""
    COMPLETED = "completed"
    """Accepted and valid."""
    DECLINED = "declined"
    """The user declined."""
    CANCELLED = "cancelled"
    """Dismissed by the user, or cancelled by the server or application."""
    TIMED_OUT = "timed_out"
    """The deadline (after any extensions) passed without an answer."""
    ABANDONED = "abandoned"
    """The owner (the task that asked) went away."""
    FAILED = "failed"
    """Re-prompts exhausted, transport failure, or runtime restart."""


NON_TERMINAL: Final[frozenset[Status]] = frozenset({Status.PENDING, Status.ACTIVE})
TERMINAL: Final[frozenset[Status]] = frozenset(Status) - NON_TERMINAL

AnswerAction: TypeAlias = Literal["accept", "decline", "cancel"]
ACTIONS: Final[frozenset[str]] = frozenset({"accept", "decline", "cancel"})


def _check_now(owner: str, now: float) -> None:
    if isinstance(now, bool) or not isinstance(now, int | float) or not math.isfinite(now):
        raise ValueError(f"{owner}.now must be a finite number of seconds, got {now!r}")


# --------------------------------------------------------------------------------------
# Events: what happened (fed to Elicitation.handle)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Sent:
    """The shell handed the ``elicitation/create`` request to the transport.

    Attributes:
        now: When, on the shell's monotonic clock.
    """

    now: float

    def __post_init__(self) -> None:
        _check_now("Sent", self.now)


@dataclass(frozen=True, slots=True)
class Answer:
    """The client answered the outstanding request (already normalised to MCP's shape).

    Attributes:
        action: ``"accept"``, ``"decline"`` or ``"cancel"``.
        content: The submitted content (only meaningful for ``"accept"``).

    Raises:
        ValueError: ``action`` is not one of the three MCP actions.
    """

    action: AnswerAction
    content: Any = None

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(
                f"Answer.action must be 'accept', 'decline' or 'cancel', got {self.action!r}"
            )


@dataclass(frozen=True, slots=True)
class Validated:
    """The validator's verdict on the accepted answer in flight.

    Attributes:
        ok: Whether the answer is valid.
        errors: Structured validation errors (empty when ``ok``); a list is stored as a tuple.
        content: The validated (possibly coerced) content to deliver when ``ok``.

    Raises:
        TypeError: ``ok`` is not a bool.
        ValueError: ``ok`` comes with errors.
    """

    ok: bool
    errors: tuple[Any, ...] = ()
    content: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.ok, bool):
            raise TypeError(f"Validated.ok must be a bool, got {self.ok!r}")
        if not isinstance(self.errors, tuple):
            object.__setattr__(self, "errors", tuple(self.errors))
        if self.ok and self.errors:
            raise ValueError("Validated(ok=True) must not carry errors")


@dataclass(frozen=True, slots=True)
class ValidatorFailed:
    """The accepted answer in flight could not be judged: the application's validation code
    failed (it raised something other than a refusal, or returned no verdict). Only this
    elicitation ends; a bug is not the user's fault, so there is no re-prompt.

    Attributes:
        detail: What failed, for ``Failed.detail`` and logs: the exception's type, never its
            message (it may quote the answer).
    """

    detail: str = ""


@dataclass(frozen=True, slots=True)
class WarningDue:
    """The shell's warning timer (armed at ``warn_at``) fired.

    Attributes:
        now: When it fired.
    """

    now: float

    def __post_init__(self) -> None:
        _check_now("WarningDue", self.now)


@dataclass(frozen=True, slots=True)
class DeadlineReached:
    """The shell's deadline timer (armed at ``deadline``) fired.

    Attributes:
        now: When it fired; ignored if earlier than the current deadline (a stale timer).
    """

    now: float

    def __post_init__(self) -> None:
        _check_now("DeadlineReached", self.now)


@dataclass(frozen=True, slots=True)
class Extend:
    """Someone asked for more time.

    Attributes:
        now: When the request arrived.
        seconds: Requested extension; ``None`` means the policy's ``extension_s``. Clamped
            to ``extension_s``.

    Raises:
        ValueError: ``seconds`` is not a positive finite number.
    """

    now: float
    seconds: float | None = None

    def __post_init__(self) -> None:
        _check_now("Extend", self.now)
        s = self.seconds
        if s is not None and (
            isinstance(s, bool) or not isinstance(s, int | float) or not math.isfinite(s) or s <= 0
        ):
            raise ValueError(f"Extend.seconds must be a positive finite number, got {s!r}")


@dataclass(frozen=True, slots=True)
class OwnerDown:
    """The task that asked exited (for any reason)."""


@dataclass(frozen=True, slots=True)
class Cancel:
    """The elicitation is cancelled from outside the client's answer.

    Attributes:
        by: Who cancelled (``"server"``, an application name, ...). ``"client"`` means the
            client already knows, so no cancelled notice is sent back to it.

    Raises:
        ValueError: ``by`` is not a non-empty string.
    """

    by: str = "server"

    def __post_init__(self) -> None:
        if not isinstance(self.by, str) or not self.by:
            raise ValueError(f"Cancel.by must be a non-empty string, got {self.by!r}")


@dataclass(frozen=True, slots=True)
class RuntimeRestart:
    """The actor holding this elicitation is restarting; the waiter must not hang."""


@dataclass(frozen=True, slots=True)
class TransportFailed:
    """Sending to the client failed, the client's session went away, or its answer could
    not be read.

    Attributes:
        detail: Free text for logs and ``Failed.detail``.
        reason: The ``Failed.reason`` code: ``transport``, or ``answer_too_large`` when the
            client's answer was over the transport's frame limit.
    """

    detail: str = ""
    reason: str = "transport"


Event: TypeAlias = (
    Sent
    | Answer
    | Validated
    | ValidatorFailed
    | WarningDue
    | DeadlineReached
    | Extend
    | OwnerDown
    | Cancel
    | RuntimeRestart
    | TransportFailed
)
EVENT_TYPES: Final[tuple[type[Event], ...]] = (
    Sent,
    Answer,
    Validated,
    ValidatorFailed,
    WarningDue,
    DeadlineReached,
    Extend,
    OwnerDown,
    Cancel,
    RuntimeRestart,
    TransportFailed,
)


# --------------------------------------------------------------------------------------
# Effects: what the shell must do (returned by start() and handle())
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SendRequest:
    """Send ``elicitation/create`` to the client, then feed :class:`Sent` (or
    :class:`TransportFailed`).

    Attributes:
        attempt: 1 for the initial request, 2.. for re-prompts.
        errors: The validation errors of the previous answer (empty on attempt 1), for a
            human-readable summary in the re-prompt's message.
    """

    attempt: int
    errors: tuple[Any, ...] = ()


@dataclass(frozen=True, slots=True)
class ValidateAnswer:
    """Ask the validator about ``content``, then feed :class:`Validated`.

    Attributes:
        content: The accepted content to validate.
    """

    content: Any


@dataclass(frozen=True, slots=True)
class SendWarning:
    """Send the timeout-warning notification.

    Attributes:
        remaining_s: Seconds left until the current deadline.
    """

    remaining_s: float


@dataclass(frozen=True, slots=True)
class SendCancelledNotice:
    """Send ``notifications/cancelled`` for the client's outstanding ``elicitation/create``.

    Best effort: the elicitation has already ended (its :class:`Resolve` came first).
    """


@dataclass(frozen=True, slots=True)
class SetDeadline:
    """Move the shell's timers.

    Attributes:
        deadline: Feed :class:`DeadlineReached` at this time.
        warn_at: Feed :class:`WarningDue` at this time; ``None``: warnings are disabled.
    """

    deadline: float
    warn_at: float | None


@dataclass(frozen=True, slots=True)
class ExtensionGranted:
    """Reply to the :class:`Extend` caller: granted.

    Attributes:
        deadline: The new deadline.
        granted_s: Seconds actually added (the request clamped to the policy).
        extensions_remaining: How many more extensions may be granted.
    """

    deadline: float
    granted_s: float
    extensions_remaining: int


@dataclass(frozen=True, slots=True)
class ExtensionRefused:
    """Reply to the :class:`Extend` caller: refused; nothing changed.

    Attributes:
        reason: ``"max_extensions"`` (the bound is used up) or ``"expired"`` (the deadline
            has already passed; a :class:`DeadlineReached` is on its way).
        max_extensions: The policy bound, for the caller's message.
    """

    reason: Literal["max_extensions", "expired"]
    max_extensions: int


@dataclass(frozen=True, slots=True)
class Resolve:
    """Deliver the one outcome to the waiter and record the terminal status.

    Attributes:
        outcome: ``Accepted | Declined | Cancelled | TimedOut | Failed``.
    """

    outcome: Outcome


Effect: TypeAlias = (
    SendRequest
    | ValidateAnswer
    | SendWarning
    | SendCancelledNotice
    | SetDeadline
    | ExtensionGranted
    | ExtensionRefused
    | Resolve
)
EFFECT_TYPES: Final[tuple[type[Effect], ...]] = (
    SendRequest,
    ValidateAnswer,
    SendWarning,
    SendCancelledNotice,
    SetDeadline,
    ExtensionGranted,
    ExtensionRefused,
    Resolve,
)


"""start()'s request: one immutable value shared by every elicitation."""


def status_for_outcome(outcome: Outcome) -> Status:
    """Return the terminal status that ``outcome`` implies.

    Raises:
        ValueError: ``outcome`` can never end a lifecycle (``Unsupported`` is decided before
            an elicitation exists).
    """
    if isinstance(outcome, Accepted):
        return Status.COMPLETED
    if isinstance(outcome, Declined):
        return Status.DECLINED
    if isinstance(outcome, Cancelled):
        return Status.CANCELLED
    if isinstance(outcome, TimedOut):
        return Status.TIMED_OUT
    if isinstance(outcome, Failed):
        return Status.ABANDONED if outcome.reason == "abandoned" else Status.FAILED
    raise ValueError(
        f"no lifecycle status for {outcome!r} (Unsupported is decided before an elicitation exists)"
    )


STATUS_OF_OUTCOME: Final[Mapping[type, frozenset[Status]]] = MappingProxyType(
    {
        Accepted: frozenset({Status.COMPLETED}),
        Declined: frozenset({Status.DECLINED}),
        Cancelled: frozenset({Status.CANCELLED}),
        TimedOut: frozenset({Status.TIMED_OUT}),
        Failed: frozenset({Status.ABANDONED, Status.FAILED}),
    }
)
"""Which terminal statuses each outcome type may come with."""


# --------------------------------------------------------------------------------------
# The machine
# --------------------------------------------------------------------------------------


class Elicitation:
    """One elicitation's lifecycle: feed events, execute the returned effects.

    Args:
        policy: Deadlines, warnings, extensions and re-prompt bound.
        now: Creation time on the shell's monotonic clock; the deadline runs from here.
        mode: ``"form"`` or ``"url"`` (selects the initial deadline).
        timeout_s: The question's own initial deadline in seconds, clamped to the policy's
            for ``mode``; its warning comes at the same proportion of it
            (:meth:`LifecyclePolicy.warn_before_for`). ``None``: the policy's deadline.

    Raises:
        ValueError: ``now`` is not finite, ``mode`` is unknown, or ``timeout_s`` is not a
            positive, finite number.
    """

    __slots__ = (
        "_created_at",
        "_deadline",
        "_extensions_used",
        "_mode",
        "_outcome",
        "_outstanding",
        "_policy",
        "_reprompts_used",
        "_sent_at",
        "_started",
        "_status",
        "_validating",
        "_warn_at",
        "_warn_before",
        "_warned",
    )

    def __init__(
        self,
        policy: LifecyclePolicy,
        now: float,
        *,
        mode: Mode = "form",
        timeout_s: float | None = None,
    ) -> None:
        _check_now("Elicitation", now)
        now = float(now)
        self._policy = policy
        self._mode: Mode = mode
        self._created_at = now
        initial = policy.deadline_for(mode, timeout_s)
        self._deadline = now + initial
        self._warn_before = policy.warn_before_for(mode, initial)
        self._warn_at = self._warning_time()
        self._status = Status.PENDING
        self._started = False
        self._outstanding = False
        self._validating = False
        self._warned = False
        self._extensions_used = 0
        self._reprompts_used = 0
        self._sent_at: float | None = None
        self._outcome: Outcome | None = None

    # -- public API ----------------------------------------------------------------------

    def start(self) -> list[Effect]:
        """Begin: arm the timers and send the first request.

        Returns:
            ``[SetDeadline(deadline, warn_at), SendRequest(attempt=1)]``, or ``[]`` if the
            elicitation already ended (e.g. cancelled before it was started).

        Raises:
            RuntimeError: ``start()`` was already called.
        """
        if self._started:
            raise RuntimeError("Elicitation.start() called twice")
        self._started = True
        if self._status in TERMINAL:
            return []
        self._outstanding = True
        return [SetDeadline(self._deadline, self._warn_at), SendRequest(attempt=1)]

    def handle(self, event: Event) -> list[Effect]:
        """Apply one event.

        Args:
            event: One of :data:`EVENT_TYPES`.

        Returns:
            The effects to execute, in order. ``[]`` when the event changes nothing: always
            once the elicitation is terminal, and for stale or unsolicited events.

        Raises:
            TypeError: ``event`` is not one of :data:`EVENT_TYPES`.
        """
        row = TRANSITIONS.get((self._status, type(event)))
        if row is None:
            if type(event) not in EVENT_TYPES:
                raise TypeError(f"not an elicitation event: {event!r}")
            return []  # terminal statuses are absorbing
        return row.handler(self, event)

    @property
    def status(self) -> Status:
        """The current status."""
        return self._status

    @property
    def created_at(self) -> float:
        """When the elicitation was created."""
        return self._created_at

    @property
    def sent_at(self) -> float | None:
        """When the first request reached the transport (``None`` if it has not)."""
        return self._sent_at

    @property
    def deadline(self) -> float:
        """The current deadline (moves forward only, by granted extensions)."""
        return self._deadline

    @property
    def warn_at(self) -> float | None:
        """When the warning for the current deadline is due (``None``: warnings disabled)."""
        return self._warn_at

    @property
    def is_terminal(self) -> bool:
        """Whether the elicitation has ended."""
        return self._status in TERMINAL

    @property
    def mode(self) -> Mode:
        """``"form"`` or ``"url"``."""
        return self._mode

    @property
    def extensions_used(self) -> int:
        """Extensions granted so far."""
        return self._extensions_used

    @property
    def extensions_remaining(self) -> int:
        """Extensions that may still be granted."""
        return self._policy.max_extensions - self._extensions_used

    @property
    def reprompts_used(self) -> int:
        """Re-prompts sent so far."""
        return self._reprompts_used

    @property
    def awaiting_answer(self) -> bool:
        """Whether a request is outstanding at the client (an answer would be considered)."""
        return self._outstanding

    @property
    def validating(self) -> bool:
        """Whether an accepted answer is with the validator."""
        return self._validating

    @property
    def outcome(self) -> Outcome | None:
        """The outcome once terminal, else ``None``."""
        return self._outcome

    def __repr__(self) -> str:
        return (
            f"<Elicitation {self._status.value} mode={self._mode} deadline={self._deadline:.3f}"
            f" extensions={self._extensions_used}/{self._policy.max_extensions}"
            f" reprompts={self._reprompts_used}/{self._policy.max_reprompts}"
            f" outstanding={self._outstanding} validating={self._validating}>"
        )

    # -- handlers (one per table row kind) ------------------------------------------------

    def _warning_time(self) -> float | None:
        """``warn_at`` for the current deadline (kept in ``_warn_at`` as the deadline moves)."""
        if self._warn_before == 0:
            return None
        return self._deadline - self._warn_before

    def _resolve(self, status: Status, outcome: Outcome, *, notice: bool) -> list[Effect]:
        self._status = status
        self._outcome = outcome
        self._outstanding = False
        self._validating = False
        effects: list[Effect] = [Resolve(outcome)]
        if notice:
            effects.append(SendCancelledNotice())
        return effects

    def _on_sent(self, event: Sent) -> list[Effect]:
        if self._status is Status.PENDING and self._outstanding:
            self._status = Status.ACTIVE
            self._sent_at = event.now
        return []  # a re-prompt's send, or a Sent before start(): nothing to do

    def _on_answer(self, event: Answer) -> list[Effect]:
        if not self._outstanding:
            return []  # a validation is in flight, or nothing was asked
        self._outstanding = False
        if event.action == "accept":
            self._status = Status.ACTIVE  # an answer proves the request was delivered
            self._validating = True
            return [ValidateAnswer(event.content)]
        if event.action == "decline":
            return self._resolve(Status.DECLINED, Declined(), notice=False)
        return self._resolve(Status.CANCELLED, Cancelled(by="client"), notice=False)

    def _on_validated(self, event: Validated) -> list[Effect]:
        if not self._validating:
            return []  # no validation in flight: stale
        self._validating = False
        if event.ok:
            return self._resolve(Status.COMPLETED, Accepted(event.content), notice=False)
        if self._reprompts_used < self._policy.max_reprompts:
            self._reprompts_used += 1
            self._outstanding = True
            return [SendRequest(attempt=self._reprompts_used + 1, errors=event.errors)]
        detail = (
            f"answer still invalid after {self._policy.max_reprompts} re-prompt(s) "
            f"({len(event.errors)} error(s))"
        )
        return self._resolve(Status.FAILED, Failed("validation", detail), notice=False)

    def _on_validator_failed(self, event: ValidatorFailed) -> list[Effect]:
        if not self._validating:
            return []  # no validation in flight: stale
        # The client answered: no request of ours is outstanding, there is nothing to cancel.
        return self._resolve(Status.FAILED, Failed("validator_error", event.detail), notice=False)

    def _on_warning_due(self, event: WarningDue) -> list[Effect]:
        warn_at = self._warn_at
        if self._warned or warn_at is None or event.now < warn_at:
            return []  # already warned for this deadline, disabled, or a stale timer
        if event.now >= self._deadline:
            return []  # too late to warn: DeadlineReached is due
        self._warned = True
        return [SendWarning(remaining_s=self._deadline - event.now)]

    def _on_deadline_reached(self, event: DeadlineReached) -> list[Effect]:
        if event.now < self._deadline:
            return []  # stale timer: an extension moved the deadline
        return self._resolve(Status.TIMED_OUT, TimedOut(), notice=self._outstanding)

    def _on_extend(self, event: Extend) -> list[Effect]:
        policy = self._policy
        if self._extensions_used >= policy.max_extensions:
            return [ExtensionRefused("max_extensions", policy.max_extensions)]
        if event.now >= self._deadline:
            return [ExtensionRefused("expired", policy.max_extensions)]
        granted = (
            policy.extension_s
            if event.seconds is None
            else min(float(event.seconds), policy.extension_s)
        )
        self._deadline += granted
        self._warn_at = self._warning_time()
        self._extensions_used += 1
        self._warned = False  # one warning per deadline: re-armed
        return [
            SetDeadline(self._deadline, self._warn_at),
            ExtensionGranted(self._deadline, granted, self.extensions_remaining),
        ]

    def _on_owner_down(self, event: OwnerDown) -> list[Effect]:
        return self._resolve(Status.ABANDONED, Failed("abandoned"), notice=self._outstanding)

    def _on_cancel(self, event: Cancel) -> list[Effect]:
        notice = self._outstanding and event.by != "client"
        return self._resolve(Status.CANCELLED, Cancelled(by=event.by), notice=notice)

    def _on_runtime_restart(self, event: RuntimeRestart) -> list[Effect]:
        outcome = Failed("runtime_restarted")
        return self._resolve(Status.FAILED, outcome, notice=self._outstanding)

    def _on_transport_failed(self, event: TransportFailed) -> list[Effect]:
        return self._resolve(Status.FAILED, Failed(event.reason, event.detail), notice=False)


# --------------------------------------------------------------------------------------
# The transition table
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Transition:
    """One row of :data:`TRANSITIONS`.

    Attributes:
        handler: The :class:`Elicitation` method that applies the event.
        targets: Every status the row may lead to (the current one included when a guard
            can make the event a no-op).
    """

    handler: Callable[[Elicitation, Any], list[Effect]]
    targets: frozenset[Status]


def _row(handler: Callable[[Elicitation, Any], list[Effect]], *targets: Status) -> Transition:
    return Transition(handler, frozenset(targets))


_P, _A = Status.PENDING, Status.ACTIVE
_E = Elicitation

TRANSITIONS: Final[Mapping[tuple[Status, type[Event]], Transition]] = MappingProxyType(
    {
        # -- pending: registered, request maybe not yet on the wire ---------------------
        (_P, Sent): _row(_E._on_sent, _P, _A),
        (_P, Answer): _row(_E._on_answer, _P, _A, Status.DECLINED, Status.CANCELLED),
        (_P, Validated): _row(_E._on_validated, _P),
        (_P, ValidatorFailed): _row(_E._on_validator_failed, _P),
        (_P, WarningDue): _row(_E._on_warning_due, _P),
        (_P, DeadlineReached): _row(_E._on_deadline_reached, _P, Status.TIMED_OUT),
        (_P, Extend): _row(_E._on_extend, _P),
        (_P, OwnerDown): _row(_E._on_owner_down, Status.ABANDONED),
        (_P, Cancel): _row(_E._on_cancel, Status.CANCELLED),
        (_P, RuntimeRestart): _row(_E._on_runtime_restart, Status.FAILED),
        (_P, TransportFailed): _row(_E._on_transport_failed, Status.FAILED),
        # -- active: sent; waiting for an answer, or validating one ---------------------
        (_A, Sent): _row(_E._on_sent, _A),
        (_A, Answer): _row(_E._on_answer, _A, Status.DECLINED, Status.CANCELLED),
        (_A, Validated): _row(_E._on_validated, _A, Status.COMPLETED, Status.FAILED),
        (_A, ValidatorFailed): _row(_E._on_validator_failed, _A, Status.FAILED),
        (_A, WarningDue): _row(_E._on_warning_due, _A),
        (_A, DeadlineReached): _row(_E._on_deadline_reached, _A, Status.TIMED_OUT),
        (_A, Extend): _row(_E._on_extend, _A),
        (_A, OwnerDown): _row(_E._on_owner_down, Status.ABANDONED),
        (_A, Cancel): _row(_E._on_cancel, Status.CANCELLED),
        (_A, RuntimeRestart): _row(_E._on_runtime_restart, Status.FAILED),
        (_A, TransportFailed): _row(_E._on_transport_failed, Status.FAILED),
        # -- terminal statuses: absorbing, no rows (handle() returns []) ----------------
    }
)
"""``(status, event type) -> Transition``: the whole lifecycle, total over NON_TERMINAL."""

del _P, _A, _E
