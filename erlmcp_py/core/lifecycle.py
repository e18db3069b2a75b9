"""The elicitation lifecycle: a pure state machine, written as data.

Every lifecycle decision lives here (docs/architecture.md, "The child task" and the invariant
"The lifecycle decides what happens when"). One :class:`Elicitation` models one question put
to a user. It owns no task, no channel and no clock: the shell (``actors/_record.py``,
``actors/_elicitation.py``) feeds it *events* (with ``now`` when time matters), executes the
*effects* it returns, in order, and sleeps until :meth:`Elicitation.next_wakeup`.

The table: :data:`TRANSITIONS` maps ``(Phase, event type)`` to a :class:`Transition`, the
handler to run, the phases it may lead to and the terminal statuses it may end in. It is total
over the live phases; :attr:`Phase.ENDED` absorbs every event (a no-op that returns ``[]`` and
never raises); an event type the table does not know raises ``TypeError``. Exactly one
:class:`Resolve` is emitted over a life, by the transition that enters a terminal status, its
outcome agreeing with that status (:data:`STATUS_OF_OUTCOME`).

The phase says where the exchange with the client stands; the public :class:`Status` adds
whether the first request has reached the transport (``pending`` or ``active``) and, once
ended, how it ended::

    phase       status            what is open            client Answer  Complete, Dismiss
    NEW         pending           nothing: start() not    ignored        taken
                                  called yet
    ASKING      pending, active   our request, at the     taken          taken
                                  client
    VALIDATING  active            the accepted answer,    ignored        AnswerRefused
                                  at the validator (the                  (retry)
                                  answer in flight)
    CONSENTED   pending, active   nothing: the user       ignored        taken
                                  accepted a URL; the
                                  application completes
    ENDED       terminal          nothing                 ignored        ignored

The life of an elicitation::

    Elicitation(policy, now)        NEW, pending; deadline = now + initial deadline (the
                                    policy's, or the question's own clamped to it)
    start()                         -> ASKING: SetDeadline, SendRequest(attempt=1)
    Sent(now)                       pending -> active (the request reached the transport)
    Answer("accept", content)       form: -> VALIDATING, ValidateAnswer(content)
                                    url:  -> CONSENTED, Consented(): the user agreed to
                                          open the page; the application completes it
    Validated(ok=True, content)     -> completed, Resolve(Accepted(content))
    Validated(ok=False, errors)     -> ASKING, SendRequest(attempt=n+1, errors) (a re-prompt)
                                       ... or failed, Resolve(Failed("validation"))
    ValidatorFailed(detail)         -> failed, Resolve(Failed("validator_error")): the
                                       application's validation code could not judge it
    Answer("decline" | "cancel")    -> declined | cancelled (by the client)
    Complete(content)               the application's accept (``complete_elicitation``,
                                    the hosted page), its content already validated:
                                    -> completed, Resolve(Accepted(content)), then
                                    SendCompleteNotice in URL mode, or SendCancelledNotice
                                    for a form still open at the client
    Complete(validator_failed=d)    -> failed, Resolve(Failed("validator_error", d))
    Dismiss("decline" | "cancel")   the user's no, through the application (the hosted
                                    page): -> declined | cancelled (by the client)
    Wakeup(now)                     the timer armed at next_wakeup() fired: at or past the
                                    deadline -> timed_out; else, when the warning is due,
                                    SendWarning(remaining_s), once per deadline; else
                                    nothing (a stale timer)
    Extend(now, seconds)            -> SetDeadline + ExtensionGranted | ExtensionRefused
    Cancel(by) / OwnerDown() / RuntimeRestart() / TransportFailed(detail)
                                    -> cancelled / abandoned / failed / failed

A deadline, a cancel, the owner's exit or a restart ends the elicitation in any live phase;
a verdict that comes after that is ignored like every event after the end.

Notices: :class:`SendCancelledNotice` only while ASKING (no other phase has a request open at
the client: its answer closed it); a URL the application completes is announced with
:class:`SendCompleteNotice` instead, in any phase.

Time: the deadline runs from creation (a send blocked by back-pressure still times out) and
moves only forward, by a granted extension (each re-arms the single warning; the bounds are
the policy's). :meth:`Elicitation.next_wakeup` is the one timer the shell arms: this
deadline's warning while it is still to come, else the deadline; while the shell performs an
effect (``busy=True``) only the deadline. :class:`Wakeup` is checked against the current
deadline and warning, so a timer armed for an older deadline that fires late is ignored, and
after a ``Wakeup(now)`` that leaves the elicitation live, ``next_wakeup()`` is later than
``now``: the shell never spins.

Effects are listed in the order the shell executes them. When an elicitation ends,
:class:`Resolve` comes first and the notices after it, so the waiter is never delayed by a
slow transport.
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
    "LIVE_PHASES",
    "NON_TERMINAL",
    "STATUS_OF_OUTCOME",
    "TERMINAL",
    "TRANSITIONS",
    "Answer",
    "AnswerAction",
    "AnswerRefused",
    "Cancel",
    "Complete",
    "Consented",
    "Dismiss",
    "Effect",
    "Elicitation",
    "Event",
    "Extend",
    "ExtensionGranted",
    "ExtensionRefused",
    "OwnerDown",
    "Phase",
    "Resolve",
    "RuntimeRestart",
    "SendCancelledNotice",
    "SendCompleteNotice",
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
    "Wakeup",
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


class Phase(StrEnum):
    """Where the exchange with the client stands (the table's first key; see the module's
    theory of operation)."""

    NEW = "new"
    """``start()`` not called yet: nothing asked."""
    ASKING = "asking"
    """A request of ours is open at the client: its answer is considered."""
    VALIDATING = "validating"
    """The client's accepted answer is with the validator: the answer in flight."""
    CONSENTED = "consented"
    """URL mode: the user accepted; the elicitation waits for the application's completion."""
    ENDED = "ended"
    """Terminal: absorbs every event."""


LIVE_PHASES: Final[frozenset[Phase]] = frozenset(Phase) - {Phase.ENDED}

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
    """The client answered our request (already normalised to MCP's shape).

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
class Complete:
    """The application completes the elicitation (``complete_elicitation``, the hosted
    page's submit) with content its validator has already judged.

    Attributes:
        content: The validated content, delivered as ``Accepted(content)``.
        validator_failed: ``None`` when the content is valid; else the application's
            validation code could not judge it (as in :class:`ValidatorFailed`: the
            exception's type, never its message), and the elicitation ends
            ``Failed("validator_error", validator_failed)``.
    """

    content: Any = None
    validator_failed: str | None = None


@dataclass(frozen=True, slots=True)
class Dismiss:
    """The user declines or cancels through the application (the hosted page's Reject and
    Cancel), as the client would.

    Attributes:
        action: ``"decline"`` or ``"cancel"``.

    Raises:
        ValueError: ``action`` is neither.
    """

    action: Literal["decline", "cancel"]

    def __post_init__(self) -> None:
        if self.action not in ("decline", "cancel"):
            raise ValueError(f"Dismiss.action must be 'decline' or 'cancel', got {self.action!r}")


@dataclass(frozen=True, slots=True)
class Wakeup:
    """The shell's timer, armed at :meth:`Elicitation.next_wakeup`, fired.

    Attributes:
        now: When it fired. The lifecycle decides what is due at ``now``: the deadline, the
            warning, or nothing (a timer armed for an older deadline).
    """

    now: float

    def __post_init__(self) -> None:
        _check_now("Wakeup", self.now)


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
    | Complete
    | Dismiss
    | Wakeup
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
    Complete,
    Dismiss,
    Wakeup,
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
class SendCompleteNotice:
    """Send ``notifications/elicitation/complete`` to the client that was asked: the
    application completed a URL-mode elicitation. Best effort, after :class:`Resolve`."""


@dataclass(frozen=True, slots=True)
class Consented:
    """The user accepted a URL-mode request: the client's request is answered and the
    elicitation waits for the application's :class:`Complete` (or a :class:`Dismiss`, or its
    deadline). Nothing to send; the shell records the consent."""


@dataclass(frozen=True, slots=True)
class SetDeadline:
    """The deadline moved (armed by ``start()``, moved by an extension): re-arm the timer at
    :meth:`Elicitation.next_wakeup`.

    Attributes:
        deadline: The deadline.
        warn_at: When its warning is due; ``None``: warnings are disabled.
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
            has already passed; the :class:`Wakeup` that ends it is on its way).
        max_extensions: The policy bound, for the caller's message.
    """

    reason: Literal["max_extensions", "expired"]
    max_extensions: int


@dataclass(frozen=True, slots=True)
class AnswerRefused:
    """Reply to the application's :class:`Complete` or :class:`Dismiss`: refused, nothing
    changed. The client's accepted answer is with the validator (the answer in flight); its
    verdict decides, or the application retries after it."""


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
    | SendCompleteNotice
    | Consented
    | SetDeadline
    | ExtensionGranted
    | ExtensionRefused
    | AnswerRefused
    | Resolve
)
EFFECT_TYPES: Final[tuple[type[Effect], ...]] = (
    SendRequest,
    ValidateAnswer,
    SendWarning,
    SendCancelledNotice,
    SendCompleteNotice,
    Consented,
    SetDeadline,
    ExtensionGranted,
    ExtensionRefused,
    AnswerRefused,
    Resolve,
)

_CONSENT: Final = Consented()
_REFUSED: Final = AnswerRefused()
_CANCELLED_NOTICE: Final = SendCancelledNotice()
_COMPLETE_NOTICE: Final = SendCompleteNotice()


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
    """One elicitation's lifecycle: feed events, execute the returned effects, wake at
    :meth:`next_wakeup`.

    Args:
        policy: Deadlines, warnings, extensions and re-prompt bound.
        now: Creation time on the shell's monotonic clock; the deadline runs from here.
        mode: ``"form"`` or ``"url"`` (selects the initial deadline, and what a client's
            accept means).
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
        "_phase",
        "_policy",
        "_reprompts_used",
        "_sent_at",
        "_started",
        "_status",
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
        self._warned = False
        self._status = Status.PENDING
        self._phase = Phase.NEW
        self._started = False
        self._extensions_used = 0
        self._reprompts_used = 0
        self._sent_at: float | None = None
        self._outcome: Outcome | None = None

    # -- public API ----------------------------------------------------------------------

    def start(self) -> list[Effect]:
        """Begin: arm the timer and send the first request.

        Returns:
            ``[SetDeadline(deadline, warn_at), SendRequest(attempt=1)]``, or ``[]`` if the
            elicitation already ended (e.g. cancelled before it was started).

        Raises:
            RuntimeError: ``start()`` was already called.
        """
        if self._started:
            raise RuntimeError("Elicitation.start() called twice")
        self._started = True
        if self._phase is Phase.ENDED:
            return []
        self._phase = Phase.ASKING
        return [SetDeadline(self._deadline, self._warn_at), SendRequest(attempt=1)]

    def handle(self, event: Event) -> list[Effect]:
        """Apply one event.

        Args:
            event: One of :data:`EVENT_TYPES`.

        Returns:
            The effects to execute, in order. ``[]`` when the event changes nothing: always
            once the elicitation has ended, and for stale or unsolicited events.

        Raises:
            TypeError: ``event`` is not one of :data:`EVENT_TYPES`.
        """
        row = TRANSITIONS.get((self._phase, type(event)))
        if row is None:
            if type(event) not in EVENT_TYPES:
                raise TypeError(f"not an elicitation event: {event!r}")
            return []  # the end is absorbing
        return row.handler(self, event)

    def next_wakeup(self, *, busy: bool = False) -> float:
        """When the shell must feed :class:`Wakeup`: the warning time while this deadline's
        warning is still to come, else the deadline.

        Args:
            busy: The shell is performing an effect (a send, a validation, a notice). Only
                the deadline interrupts it; a warning due meanwhile waits for it to finish.

        Returns:
            A time on the shell's clock (possibly already past: wake at once);
            ``math.inf`` once the elicitation has ended.
        """
        if self._phase is Phase.ENDED:
            return math.inf
        if busy or self._warned or self._warn_at is None:
            return self._deadline
        return self._warn_at  # before the deadline: the policy keeps warn_before_s shorter

    @property
    def status(self) -> Status:
        """The current status."""
        return self._status

    @property
    def phase(self) -> Phase:
        """Where the exchange with the client stands."""
        return self._phase

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
    def warned(self) -> bool:
        """Whether the warning for the current deadline was sent (an extension re-arms it)."""
        return self._warned

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
    def outcome(self) -> Outcome | None:
        """The outcome once terminal, else ``None``."""
        return self._outcome

    def __repr__(self) -> str:
        return (
            f"<Elicitation {self._status.value} {self._phase.value} mode={self._mode}"
            f" deadline={self._deadline:.3f} warned={self._warned}"
            f" extensions={self._extensions_used}/{self._policy.max_extensions}"
            f" reprompts={self._reprompts_used}/{self._policy.max_reprompts}>"
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
        self._phase = Phase.ENDED
        if notice:
            return [Resolve(outcome), _CANCELLED_NOTICE]
        return [Resolve(outcome)]

    def _ignore(self, event: Event) -> list[Effect]:
        return []

    def _on_sent(self, event: Sent) -> list[Effect]:
        if self._status is Status.PENDING:
            self._status = Status.ACTIVE
            self._sent_at = event.now
        return []  # a re-prompt's send: nothing to do

    def _on_answer(self, event: Answer) -> list[Effect]:
        action = event.action
        if action == "accept":
            if self._mode == "url":
                # The user agreed to open the page; only the application knows when it is
                # done. The status still waits for Sent, as nothing was validated.
                self._phase = Phase.CONSENTED
                return [_CONSENT]
            self._status = Status.ACTIVE  # an answer proves the request was delivered
            self._phase = Phase.VALIDATING
            return [ValidateAnswer(event.content)]
        if action == "decline":
            return self._resolve(Status.DECLINED, Declined(), notice=False)
        return self._resolve(Status.CANCELLED, Cancelled(by="client"), notice=False)

    def _on_validated(self, event: Validated) -> list[Effect]:
        if event.ok:
            return self._resolve(Status.COMPLETED, Accepted(event.content), notice=False)
        if self._reprompts_used < self._policy.max_reprompts:
            self._reprompts_used += 1
            self._phase = Phase.ASKING
            return [SendRequest(attempt=self._reprompts_used + 1, errors=event.errors)]
        detail = (
            f"answer still invalid after {self._policy.max_reprompts} re-prompt(s) "
            f"({len(event.errors)} error(s))"
        )
        return self._resolve(Status.FAILED, Failed("validation", detail), notice=False)

    def _on_validator_failed(self, event: ValidatorFailed) -> list[Effect]:
        # The client answered: no request of ours is open, there is nothing to cancel.
        return self._resolve(Status.FAILED, Failed("validator_error", event.detail), notice=False)

    def _on_complete(self, event: Complete) -> list[Effect]:
        # A form still open at the client is moot now; a URL's client hears of the end
        # through notifications/elicitation/complete instead.
        url = self._mode == "url"
        notice = self._phase is Phase.ASKING and not url
        if event.validator_failed is not None:
            outcome = Failed("validator_error", event.validator_failed)
            return self._resolve(Status.FAILED, outcome, notice=notice)
        effects = self._resolve(Status.COMPLETED, Accepted(event.content), notice=notice)
        if url:
            effects.append(_COMPLETE_NOTICE)
        return effects

    def _on_dismiss(self, event: Dismiss) -> list[Effect]:
        if event.action == "decline":
            return self._resolve(Status.DECLINED, Declined(), notice=False)
        return self._resolve(Status.CANCELLED, Cancelled(by="client"), notice=False)

    def _refuse_answer(self, event: Complete | Dismiss) -> list[Effect]:
        return [_REFUSED]  # the client's answer in flight decides first

    def _on_wakeup(self, event: Wakeup) -> list[Effect]:
        now = event.now
        if now >= self._deadline:
            notice = self._phase is Phase.ASKING
            return self._resolve(Status.TIMED_OUT, TimedOut(), notice=notice)
        warn_at = self._warn_at
        if self._warned or warn_at is None or now < warn_at:
            return []  # already warned for this deadline, disabled, or a stale timer
        self._warned = True
        return [SendWarning(remaining_s=self._deadline - now)]

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
        notice = self._phase is Phase.ASKING
        return self._resolve(Status.ABANDONED, Failed("abandoned"), notice=notice)

    def _on_cancel(self, event: Cancel) -> list[Effect]:
        notice = self._phase is Phase.ASKING and event.by != "client"
        return self._resolve(Status.CANCELLED, Cancelled(by=event.by), notice=notice)

    def _on_runtime_restart(self, event: RuntimeRestart) -> list[Effect]:
        notice = self._phase is Phase.ASKING
        return self._resolve(Status.FAILED, Failed("runtime_restarted"), notice=notice)

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
        phases: Every phase the row may lead to (the current one included when a guard can
            make the event a no-op).
        ends: Every terminal status the row may end the elicitation in (empty: it never
            ends it).
    """

    handler: Callable[[Elicitation, Any], list[Effect]]
    phases: frozenset[Phase]
    ends: frozenset[Status]


def _row(
    handler: Callable[[Elicitation, Any], list[Effect]],
    *phases: Phase,
    ends: tuple[Status, ...] = (),
) -> Transition:
    return Transition(handler, frozenset(phases), frozenset(ends))


_E = Elicitation
_NEW, _ASKING, _VALIDATING, _CONSENTED, _ENDED = (
    Phase.NEW,
    Phase.ASKING,
    Phase.VALIDATING,
    Phase.CONSENTED,
    Phase.ENDED,
)
_S = Status
_NO = (_S.DECLINED, _S.CANCELLED)  # a decline or a cancel, by the user
_DONE = (_S.COMPLETED, _S.FAILED)  # the application's completion, or its validator failed

TRANSITIONS: Final[Mapping[tuple[Phase, type[Event]], Transition]] = MappingProxyType(
    {
        # -- new: start() not called; nothing asked -------------------------------------
        (_NEW, Sent): _row(_E._ignore, _NEW),
        (_NEW, Answer): _row(_E._ignore, _NEW),
        (_NEW, Validated): _row(_E._ignore, _NEW),
        (_NEW, ValidatorFailed): _row(_E._ignore, _NEW),
        (_NEW, Complete): _row(_E._on_complete, _ENDED, ends=_DONE),
        (_NEW, Dismiss): _row(_E._on_dismiss, _ENDED, ends=_NO),
        (_NEW, Wakeup): _row(_E._on_wakeup, _NEW, _ENDED, ends=(_S.TIMED_OUT,)),
        (_NEW, Extend): _row(_E._on_extend, _NEW),
        (_NEW, OwnerDown): _row(_E._on_owner_down, _ENDED, ends=(_S.ABANDONED,)),
        (_NEW, Cancel): _row(_E._on_cancel, _ENDED, ends=(_S.CANCELLED,)),
        (_NEW, RuntimeRestart): _row(_E._on_runtime_restart, _ENDED, ends=(_S.FAILED,)),
        (_NEW, TransportFailed): _row(_E._on_transport_failed, _ENDED, ends=(_S.FAILED,)),
        # -- asking: our request is open at the client ----------------------------------
        (_ASKING, Sent): _row(_E._on_sent, _ASKING),
        (_ASKING, Answer): _row(_E._on_answer, _VALIDATING, _CONSENTED, _ENDED, ends=_NO),
        (_ASKING, Validated): _row(_E._ignore, _ASKING),
        (_ASKING, ValidatorFailed): _row(_E._ignore, _ASKING),
        (_ASKING, Complete): _row(_E._on_complete, _ENDED, ends=_DONE),
        (_ASKING, Dismiss): _row(_E._on_dismiss, _ENDED, ends=_NO),
        (_ASKING, Wakeup): _row(_E._on_wakeup, _ASKING, _ENDED, ends=(_S.TIMED_OUT,)),
        (_ASKING, Extend): _row(_E._on_extend, _ASKING),
        (_ASKING, OwnerDown): _row(_E._on_owner_down, _ENDED, ends=(_S.ABANDONED,)),
        (_ASKING, Cancel): _row(_E._on_cancel, _ENDED, ends=(_S.CANCELLED,)),
        (_ASKING, RuntimeRestart): _row(_E._on_runtime_restart, _ENDED, ends=(_S.FAILED,)),
        (_ASKING, TransportFailed): _row(_E._on_transport_failed, _ENDED, ends=(_S.FAILED,)),
        # -- validating: the client's accepted answer is in flight ----------------------
        (_VALIDATING, Sent): _row(_E._ignore, _VALIDATING),
        (_VALIDATING, Answer): _row(_E._ignore, _VALIDATING),
        (_VALIDATING, Validated): _row(_E._on_validated, _ASKING, _ENDED, ends=_DONE),
        (_VALIDATING, ValidatorFailed): _row(_E._on_validator_failed, _ENDED, ends=(_S.FAILED,)),
        (_VALIDATING, Complete): _row(_E._refuse_answer, _VALIDATING),
        (_VALIDATING, Dismiss): _row(_E._refuse_answer, _VALIDATING),
        (_VALIDATING, Wakeup): _row(_E._on_wakeup, _VALIDATING, _ENDED, ends=(_S.TIMED_OUT,)),
        (_VALIDATING, Extend): _row(_E._on_extend, _VALIDATING),
        (_VALIDATING, OwnerDown): _row(_E._on_owner_down, _ENDED, ends=(_S.ABANDONED,)),
        (_VALIDATING, Cancel): _row(_E._on_cancel, _ENDED, ends=(_S.CANCELLED,)),
        (_VALIDATING, RuntimeRestart): _row(_E._on_runtime_restart, _ENDED, ends=(_S.FAILED,)),
        (_VALIDATING, TransportFailed): _row(_E._on_transport_failed, _ENDED, ends=(_S.FAILED,)),
        # -- consented: a URL the user accepted; the application completes it -----------
        (_CONSENTED, Sent): _row(_E._on_sent, _CONSENTED),
        (_CONSENTED, Answer): _row(_E._ignore, _CONSENTED),
        (_CONSENTED, Validated): _row(_E._ignore, _CONSENTED),
        (_CONSENTED, ValidatorFailed): _row(_E._ignore, _CONSENTED),
        (_CONSENTED, Complete): _row(_E._on_complete, _ENDED, ends=_DONE),
        (_CONSENTED, Dismiss): _row(_E._on_dismiss, _ENDED, ends=_NO),
        (_CONSENTED, Wakeup): _row(_E._on_wakeup, _CONSENTED, _ENDED, ends=(_S.TIMED_OUT,)),
        (_CONSENTED, Extend): _row(_E._on_extend, _CONSENTED),
        (_CONSENTED, OwnerDown): _row(_E._on_owner_down, _ENDED, ends=(_S.ABANDONED,)),
        (_CONSENTED, Cancel): _row(_E._on_cancel, _ENDED, ends=(_S.CANCELLED,)),
        (_CONSENTED, RuntimeRestart): _row(_E._on_runtime_restart, _ENDED, ends=(_S.FAILED,)),
        (_CONSENTED, TransportFailed): _row(_E._on_transport_failed, _ENDED, ends=(_S.FAILED,)),
        # -- ended: absorbing, no rows (handle() returns []) ----------------------------
    }
)
"""``(phase, event type) -> Transition``: the whole lifecycle, total over LIVE_PHASES."""

del _E, _NEW, _ASKING, _VALIDATING, _CONSENTED, _ENDED, _S, _NO, _DONE
