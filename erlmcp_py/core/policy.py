"""Server-owned policy values: deadlines, rates, caps, sizes, retention.

Every limit here belongs to the server. A peer can ask for less (a shorter extension, a
smaller answer) but never for more: the cores clamp every peer-supplied number to these
values. All policies are frozen, slotted dataclasses that validate themselves on
construction, so a bad configuration fails at start-up with a clear ``ValueError`` (a value
out of range: zero, negative, NaN, infinite, inconsistent) or ``TypeError`` (not a number at
all, or a bool) instead of crashing an actor later (as erlmcp's ``send_after`` does with a badarg).

Durations are float seconds on the monotonic clock the shell uses; sizes are bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Final, Literal, TypeAlias

Mode: TypeAlias = Literal["form", "url"]
"""The two MCP elicitation modes."""

KiB = 1024
MiB = 1024 * KiB


def _check_seconds(owner: str, name: str, value: float, *, allow_zero: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{owner}.{name} must be a number of seconds, got {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{owner}.{name} must be finite, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{owner}.{name} must be {bound}, got {value!r}")


def check_timeout(name: str, value: object) -> float:
    """Check a requested per-question deadline: a positive, finite number of seconds.

    Args:
        name: How the caller names the value in the error (e.g. ``"timeout"``).
        value: The requested seconds.

    Returns:
        ``value`` as a float.

    Raises:
        TypeError: ``value`` is not a number (or is a bool).
        ValueError: ``value`` is zero, negative, NaN or infinite.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number of seconds, got {type(value).__name__}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive, finite number of seconds, got {value!r}")
    return float(value)


def _check_count(owner: str, name: str, value: int, *, allow_zero: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{owner}.{name} must be an int, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{owner}.{name} must be {bound}, got {value!r}")


@dataclass(frozen=True, slots=True)
class LifecyclePolicy:
    """Deadlines, warnings, extensions and re-prompts of one elicitation.

    Attributes:
        form_deadline_s: Initial deadline of a form-mode elicitation, from creation.
        url_deadline_s: Initial deadline of a URL-mode elicitation, from creation.
        warn_before_s: How long before the deadline the client is warned; ``0`` disables the
            warning. Must be shorter than both initial deadlines.
        max_extensions: How many extensions may be granted over the whole life (``0``
            disables extensions).
        extension_s: The most one extension adds to the deadline; a longer request is
            clamped to this.
        max_reprompts: How many times an invalid accepted answer is re-prompted before the
            elicitation ends ``failed: validation`` (``0``: the first invalid answer fails).
    """

    form_deadline_s: float = 300.0
    url_deadline_s: float = 600.0
    warn_before_s: float = 60.0
    max_extensions: int = 2
    extension_s: float = 300.0
    max_reprompts: int = 3

    def __post_init__(self) -> None:
        owner = type(self).__name__
        _check_seconds(owner, "form_deadline_s", self.form_deadline_s)
        _check_seconds(owner, "url_deadline_s", self.url_deadline_s)
        _check_seconds(owner, "warn_before_s", self.warn_before_s, allow_zero=True)
        _check_count(owner, "max_extensions", self.max_extensions, allow_zero=True)
        _check_seconds(owner, "extension_s", self.extension_s)
        _check_count(owner, "max_reprompts", self.max_reprompts, allow_zero=True)
        shortest = min(self.form_deadline_s, self.url_deadline_s)
        if self.warn_before_s >= shortest:
            raise ValueError(
                f"{owner}.warn_before_s ({self.warn_before_s!r}) must be shorter than every "
                f"initial deadline (shortest is {shortest!r})"
            )

    def deadline_for(self, mode: Mode, requested_s: float | None = None) -> float:
        """Return the initial deadline, in seconds, of an elicitation in ``mode``.

        Args:
            mode: ``"form"`` or ``"url"``.
            requested_s: The question's own deadline (``ctx.elicit(..., timeout=)``, a
                form definition's ``timeout``), or ``None`` for the policy's. It is clamped
                to the policy's deadline for ``mode``: the server's maximum. It was checked
                where it entered (:func:`check_timeout`, called by the runtime's
                ``ElicitationRequest``), so it is not checked again here.

        Raises:
            ValueError: ``mode`` is neither ``"form"`` nor ``"url"``.
        """
        if mode == "form":
            longest = self.form_deadline_s
        elif mode == "url":
            longest = self.url_deadline_s
        else:
            raise ValueError(f"unknown elicitation mode {mode!r} (expected 'form' or 'url')")
        if requested_s is None:
            return longest
        return min(float(requested_s), longest)

    def warn_before_for(self, mode: Mode, deadline_s: float) -> float:
        """Return how long before a deadline of ``deadline_s`` seconds the client is warned.

        The policy's warning sits ``warn_before_s`` before the policy's deadline for
        ``mode``; a shorter deadline keeps the same proportion (with the defaults, a form
        warns at 20 % of its time left: 60 s before 300 s, 0.4 s before 2 s), so the warning
        always comes after the question is asked. ``0`` when warnings are disabled.

        Raises:
            ValueError: ``mode`` is neither ``"form"`` nor ``"url"``.
        """
        longest = self.deadline_for(mode)
        return self.warn_before_s * min(deadline_s, longest) / longest


@dataclass(frozen=True, slots=True)
class RatePolicy:
    """Admission of new elicitations: a token bucket per client plus pending caps.

    Attributes:
        rate: Tokens added per ``window_s`` (refilled continuously).
        window_s: The refill window, in seconds.
        capacity: Bucket size: the largest burst a rested client may create at once.
        max_pending_per_client: Cap on a client's pending or active elicitations.
        max_pending_global: Optional cap over all clients (``None``: no global cap).
        prune_every: Idle buckets are pruned after at least this many admissions checks
            (and never more often than once per tracked bucket, so pruning is O(1)
            amortised).
    """

    rate: int = 10
    window_s: float = 60.0
    capacity: int = 10
    max_pending_per_client: int = 100
    max_pending_global: int | None = None
    prune_every: int = 1024

    def __post_init__(self) -> None:
        owner = type(self).__name__
        _check_count(owner, "rate", self.rate)
        _check_seconds(owner, "window_s", self.window_s)
        if round(self.window_s * 1e9) < 1:
            raise ValueError(f"{owner}.window_s must be at least 1 ns, got {self.window_s!r}")
        _check_count(owner, "capacity", self.capacity)
        _check_count(owner, "max_pending_per_client", self.max_pending_per_client)
        if self.max_pending_global is not None:
            _check_count(owner, "max_pending_global", self.max_pending_global)
        _check_count(owner, "prune_every", self.prune_every)


@dataclass(frozen=True, slots=True)
class SizePolicy:
    """Byte limits on what crosses the wire (measured on the JSON encoding).

    Attributes:
        answer_bytes: Largest accepted answer ``content``.
        schema_bytes: Largest ``requestedSchema``.
        message_bytes: Largest elicitation ``message`` text.
        frame_bytes: Largest JSON-RPC frame; every other limit must fit inside it.
    """

    answer_bytes: int = 1 * MiB
    schema_bytes: int = 64 * KiB
    message_bytes: int = 16 * KiB
    frame_bytes: int = 4 * MiB

    def __post_init__(self) -> None:
        owner = type(self).__name__
        for name in ("answer_bytes", "schema_bytes", "message_bytes", "frame_bytes"):
            _check_count(owner, name, getattr(self, name))
        for name in ("answer_bytes", "schema_bytes", "message_bytes"):
            value = getattr(self, name)
            if value > self.frame_bytes:
                raise ValueError(
                    f"{owner}.{name} ({value}) must not exceed frame_bytes ({self.frame_bytes})"
                )


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    """How long terminal records stay queryable: whichever bound is hit first.

    Attributes:
        max_records: Most terminal records kept; the oldest is evicted first.
        max_age_s: A terminal record is evicted this long after it became terminal.
    """

    max_records: int = 10_000
    max_age_s: float = 900.0

    def __post_init__(self) -> None:
        owner = type(self).__name__
        _check_count(owner, "max_records", self.max_records)
        _check_seconds(owner, "max_age_s", self.max_age_s)


#: The deadlines of a question a task asks (SEP-2663 tasks): a human who answers a task's
#: question has hours, not minutes; the client polls instead of holding a request open.
TASK_LIFECYCLE: Final = LifecyclePolicy(
    form_deadline_s=4 * 3600.0, url_deadline_s=8 * 3600.0, warn_before_s=900.0
)


@dataclass(frozen=True, slots=True)
class TaskPolicy:
    """The tasks a server runs (the ``io.modelcontextprotocol/tasks`` extension).

    Attributes:
        ttl_s: A task's life from its creation (``ttlMs``): past it, a task still running is
            cancelled and every task is forgotten (``tasks/get`` answers as for an unknown id).
        poll_interval_s: The polling interval suggested to clients (``pollIntervalMs``).
        max_per_client: Tasks one principal holds at most, running or ended and kept; at it,
            the ended task it used least recently (created, polled, answered) is forgotten
            for a new one, and with none ended the new one is refused.
        max_total: Tasks held over every principal at most (the same rule, over the principal
            holding the most).
    """

    ttl_s: float = 24 * 3600.0
    poll_interval_s: float = 2.0
    max_per_client: int = 100
    max_total: int = 10_000

    def __post_init__(self) -> None:
        owner = type(self).__name__
        _check_seconds(owner, "ttl_s", self.ttl_s)
        _check_seconds(owner, "poll_interval_s", self.poll_interval_s)
        if round(self.poll_interval_s * 1000) < 1:
            raise ValueError(f"{owner}.poll_interval_s must be at least 1 ms")
        _check_count(owner, "max_per_client", self.max_per_client)
        _check_count(owner, "max_total", self.max_total)


@dataclass(frozen=True, slots=True)
class Policy:
    """The whole runtime policy, with the policy defaults of ``docs/architecture.md``.

    Attributes:
        lifecycle: Deadlines, warnings, extensions, re-prompts.
        rate: Token bucket and pending caps.
        sizes: Byte limits.
        retention: Retention of terminal records.
        task_lifecycle: The lifecycle of a question asked by a task (hours by default; the
            same extensions and re-prompts rules).
        tasks: The tasks themselves: their life, polling interval and caps.
    """

    lifecycle: LifecyclePolicy = field(default_factory=LifecyclePolicy)
    rate: RatePolicy = field(default_factory=RatePolicy)
    sizes: SizePolicy = field(default_factory=SizePolicy)
    retention: RetentionPolicy = field(default_factory=RetentionPolicy)
    task_lifecycle: LifecyclePolicy = TASK_LIFECYCLE
    tasks: TaskPolicy = field(default_factory=TaskPolicy)

    def __post_init__(self) -> None:
        expected: tuple[tuple[str, type], ...] = (
            ("lifecycle", LifecyclePolicy),
            ("rate", RatePolicy),
            ("sizes", SizePolicy),
            ("retention", RetentionPolicy),
            ("task_lifecycle", LifecyclePolicy),
            ("tasks", TaskPolicy),
        )
        for name, kind in expected:
            value = getattr(self, name)
            if not isinstance(value, kind):
                raise TypeError(
                    f"Policy.{name} must be a {kind.__name__}, got {type(value).__name__}"
                )
        longest = max(self.task_lifecycle.form_deadline_s, self.task_lifecycle.url_deadline_s)
        if self.tasks.ttl_s < longest:
            raise ValueError(
                f"Policy.tasks.ttl_s ({self.tasks.ttl_s!r}) must be at least the longest "
                f"deadline of a task's question ({longest!r}): a task would end before its "
                "first question could"
            )

    def lifecycle_for(self, *, task: bool) -> LifecyclePolicy:
        """The lifecycle of a question: a task's (``task``) or a call's."""
        return self.task_lifecycle if task else self.lifecycle
