"""Errors of the supervisors kernel. Each says what happened and carries the facts."""

from __future__ import annotations


class ActorError(Exception):
    """Base class for errors a caller of an actor can get."""


class Busy(ActorError):
    """The actor's mailbox is full: it answered at once instead of blocking the caller."""

    def __init__(self, actor: str) -> None:
        super().__init__(f"actor {actor!r} is busy (mailbox full)")
        self.actor = actor


class ActorGone(ActorError):
    """The actor exited (crash, shutdown, normal stop) before it replied.

    ``reason`` is the exit reason: ``"normal"``, ``"shutdown"`` or the exception it died of.
    """

    def __init__(self, actor: str, reason: object) -> None:
        super().__init__(f"actor {actor!r} is gone ({_describe(reason)})")
        self.actor = actor
        self.reason = reason


class CallTimeout(ActorError, TimeoutError):
    """The caller's timeout (covering enqueue and wait) expired; the actor is unharmed."""

    def __init__(self, actor: str, timeout: float) -> None:
        super().__init__(f"call to actor {actor!r} timed out after {timeout:g} s")
        self.actor = actor
        self.timeout = timeout


class SupervisorError(Exception):
    """Base class for errors a supervisor raises to its parent."""


class StartError(SupervisorError):
    """A child failed to start (its start function raised before reporting ready)."""

    def __init__(self, supervisor: str, child_id: str, cause: BaseException) -> None:
        super().__init__(
            f"supervisor {supervisor!r}: child {child_id!r} failed to start: {cause!r}"
        )
        self.supervisor = supervisor
        self.child_id = child_id
        self.cause = cause


class RestartIntensityExceeded(SupervisorError):
    """More restarts than allowed within the period: the supervisor escalates to its parent."""

    def __init__(
        self, supervisor: str, max_restarts: int, max_seconds: float, child_id: str
    ) -> None:
        super().__init__(
            f"supervisor {supervisor!r} gave up: more than {max_restarts} restarts within "
            f"{max_seconds:g} s (last: child {child_id!r})"
        )
        self.supervisor = supervisor
        self.child_id = child_id


def _describe(reason: object) -> str:
    return reason if isinstance(reason, str) else repr(reason)
