"""Admission of new elicitations: a token bucket per client, plus pending caps.

Theory of operation
-------------------

:meth:`RateLimiter.try_acquire` decides whether ``client`` may open one more elicitation at
``now``. Three limits apply, checked in this order, and a refusal changes nothing (no token
is spent when a cap refuses; erlmcp spends one in that case):

1. the client's pending cap: its elicitations that are still pending or active;
2. the optional global pending cap, over all clients;
3. the client's token bucket: ``capacity`` tokens, refilled continuously at ``rate`` tokens
   per ``window_s``. An admission takes one whole token.

Pending counts go up on admission and down on :meth:`RateLimiter.release`, which the shell
calls once when an admitted elicitation reaches a terminal status. Terminal elicitations
never count (erlmcp counts them forever), and a release with
nothing pending is a no-op, so counts never underflow.

Exactness: time is converted to integer nanoseconds and a bucket's level is kept in
"token-nanoseconds" (``tokens * window_ns``), so refill and take are exact integer
arithmetic: the balance never goes negative and a fractional token never admits.

Monotonic safety: the limiter keeps one clock, the highest ``now`` it has seen. A ``now``
that goes backwards counts as no elapsed time, for every bucket, old or new, so it can never
mint tokens.

Memory: a bucket that is full and whose client has nothing pending behaves exactly like a
missing one (a new bucket starts full), so :meth:`RateLimiter.prune` drops it. Pruning runs
by itself every ``max(prune_every, number of buckets)`` admission checks, which keeps its
cost O(1) amortised per check.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias

from erlmcp_py.core.errors import RateLimited, TooManyElicitations
from erlmcp_py.core.policy import RatePolicy

__all__ = [
    "Admitted",
    "Decision",
    "Limit",
    "RateLimiter",
    "RateLimiterStats",
    "Refused",
]

_NS_PER_S: Final = 1_000_000_000

Limit: TypeAlias = Literal["rate", "client_pending", "global_pending"]


def _to_ns(now: float) -> int:
    if isinstance(now, bool) or not isinstance(now, int | float) or not math.isfinite(now):
        raise ValueError(f"now must be a finite number of seconds, got {now!r}")
    return round(now * _NS_PER_S)


@dataclass(frozen=True, slots=True)
class Admitted:
    """The client may open one more elicitation; it now counts as pending.

    Attributes:
        pending: The client's pending count, this one included.
        tokens: Whole and fractional tokens left in the client's bucket.
    """

    pending: int
    tokens: float


@dataclass(frozen=True, slots=True)
class Refused:
    """The client may not open an elicitation now; nothing was counted or spent.

    Attributes:
        limit: Which limit refused: ``"rate"``, ``"client_pending"`` or ``"global_pending"``.
        retry_after: For ``"rate"``: seconds from the caller's ``now`` until a token is
            available (rounded up, so a retry at ``now + retry_after`` is admitted if nothing
            else changed). ``None`` for the caps, which free up only when elicitations end.
        cap: For the caps: the cap that was hit.
    """

    limit: Limit
    retry_after: float | None = None
    cap: int | None = None

    def to_error(self) -> RateLimited | TooManyElicitations:
        """Return the error the runtime API raises for this refusal."""
        if self.limit == "rate":
            return RateLimited(self.retry_after if self.retry_after is not None else 0.0)
        scope = "client" if self.limit == "client_pending" else "global"
        return TooManyElicitations(scope, self.cap if self.cap is not None else 0)


Decision: TypeAlias = Admitted | Refused


@dataclass(frozen=True, slots=True)
class RateLimiterStats:
    """Counters for metrics and tests.

    Attributes:
        buckets: Token buckets currently held.
        clients_pending: Clients with at least one pending elicitation.
        pending_total: Pending elicitations over all clients.
        admitted: Admissions so far.
        refused_rate: Refusals by a token bucket.
        refused_client_pending: Refusals by a client's pending cap.
        refused_global_pending: Refusals by the global cap.
        pruned: Buckets dropped by pruning so far.
    """

    buckets: int
    clients_pending: int
    pending_total: int
    admitted: int
    refused_rate: int
    refused_client_pending: int
    refused_global_pending: int
    pruned: int


class _Bucket:
    __slots__ = ("level", "updated_ns")

    def __init__(self, level: int, updated_ns: int) -> None:
        self.level = level  # tokens * window_ns
        self.updated_ns = updated_ns


class RateLimiter:
    """Per-client token buckets and pending caps, fed ``now``.

    Args:
        policy: Rate, capacity and caps; defaults to the policy defaults.
    """

    __slots__ = (
        "_admitted",
        "_buckets",
        "_capacity_level",
        "_checks_since_prune",
        "_clock_ns",
        "_counts",
        "_pending",
        "_pending_total",
        "_policy",
        "_window_ns",
    )

    def __init__(self, policy: RatePolicy | None = None) -> None:
        self._policy = policy if policy is not None else RatePolicy()
        self._window_ns = round(self._policy.window_s * _NS_PER_S)
        self._capacity_level = self._policy.capacity * self._window_ns
        self._buckets: dict[Hashable, _Bucket] = {}
        self._pending: dict[Hashable, int] = {}
        self._pending_total = 0
        self._clock_ns: int | None = None
        self._checks_since_prune = 0
        self._admitted = 0
        self._counts = {  # refusals by limit, and pruned buckets
            "rate": 0,
            "client_pending": 0,
            "global_pending": 0,
            "pruned": 0,
        }

    @property
    def policy(self) -> RatePolicy:
        """The policy in force."""
        return self._policy

    def try_acquire(self, client: Hashable, now: float, *, charge: bool = True) -> Decision:
        """Admit one new elicitation for ``client`` at ``now``, or say which limit refuses.

        On :class:`Admitted` the client's pending count went up by one: call
        :meth:`release` exactly once when that elicitation ends.

        Args:
            client: Who asks (any hashable key: a session id, a principal).
            now: The shell's monotonic clock, in seconds.
            charge: Take a token from the client's bucket. ``False`` for a question the
                client was already charged for (an MRTR replay asks it again): only the
                pending caps apply.

        Returns:
            :class:`Admitted` or :class:`Refused`.

        Raises:
            ValueError: ``now`` is not finite.
        """
        policy = self._policy
        now_ns = _to_ns(now)
        clock = self._advance(now_ns)
        self._checks_since_prune += 1
        if self._checks_since_prune >= max(policy.prune_every, len(self._buckets)):
            self._prune_at(clock)

        pending = self._pending.get(client, 0)
        if pending >= policy.max_pending_per_client:
            return self._refuse(Refused("client_pending", cap=policy.max_pending_per_client))
        global_cap = policy.max_pending_global
        if global_cap is not None and self._pending_total >= global_cap:
            return self._refuse(Refused("global_pending", cap=global_cap))

        bucket = self._buckets.get(client)
        if not charge:
            if bucket is not None:
                self._refill(bucket, clock)
            self._pending[client] = pending + 1
            self._pending_total += 1
            level = self._capacity_level if bucket is None else bucket.level
            return Admitted(pending + 1, level / self._window_ns)
        if bucket is None:
            bucket = _Bucket(self._capacity_level, clock)
        else:
            self._refill(bucket, clock)
        window_ns = self._window_ns
        if bucket.level < window_ns:
            missing = window_ns - bucket.level  # token-ns short of one token
            wait_ns = -(-missing // policy.rate)  # ceil
            wait_ns += clock - now_ns  # the caller's clock may lag the limiter's
            # round up to the next whole microsecond, so now + retry_after is never short
            retry_after = (wait_ns // 1000 + 1) / 1_000_000
            return self._refuse(Refused("rate", retry_after=retry_after))

        bucket.level -= window_ns
        self._buckets[client] = bucket
        self._pending[client] = pending + 1
        self._pending_total += 1
        self._admitted += 1
        return Admitted(pending + 1, bucket.level / window_ns)

    def release(self, client: Hashable) -> bool:
        """Count one of ``client``'s elicitations as ended.

        Returns:
            ``True`` if a pending elicitation was released; ``False`` (and nothing changes)
            if the client had none, so a double release can never underflow.
        """
        pending = self._pending.get(client, 0)
        if pending <= 0:
            return False
        if pending == 1:
            del self._pending[client]
        else:
            self._pending[client] = pending - 1
        self._pending_total -= 1
        return True

    def prune(self, now: float) -> int:
        """Drop every bucket that is full at ``now`` and whose client has nothing pending.

        Pruning never changes a decision: a dropped bucket comes back full, exactly as it
        was. :meth:`try_acquire` also prunes by itself, O(1) amortised.

        Returns:
            How many buckets were dropped.

        Raises:
            ValueError: ``now`` is not finite.
        """
        return self._prune_at(self._advance(_to_ns(now)))

    def pending(self, client: Hashable) -> int:
        """Return ``client``'s pending count."""
        return self._pending.get(client, 0)

    def tokens(self, client: Hashable, now: float) -> float:
        """Return the tokens ``client`` would have at ``now``, changing nothing.

        Raises:
            ValueError: ``now`` is not finite.
        """
        clock = _to_ns(now)
        if self._clock_ns is not None:
            clock = max(clock, self._clock_ns)
        bucket = self._buckets.get(client)
        if bucket is None:
            return float(self._policy.capacity)
        return self._level_at(bucket, clock) / self._window_ns

    def stats(self) -> RateLimiterStats:
        """Return a snapshot of the counters."""
        return RateLimiterStats(
            buckets=len(self._buckets),
            clients_pending=len(self._pending),
            pending_total=self._pending_total,
            admitted=self._admitted,
            refused_rate=self._counts["rate"],
            refused_client_pending=self._counts["client_pending"],
            refused_global_pending=self._counts["global_pending"],
            pruned=self._counts["pruned"],
        )

    def __repr__(self) -> str:
        return (
            f"<RateLimiter buckets={len(self._buckets)} pending={self._pending_total}"
            f" rate={self._policy.rate}/{self._policy.window_s}s"
            f" capacity={self._policy.capacity}>"
        )

    # -- internals ---------------------------------------------------------------------

    def _advance(self, now_ns: int) -> int:
        """Advance the one clock; a ``now`` in the past counts as no time passing."""
        if self._clock_ns is None or now_ns > self._clock_ns:
            self._clock_ns = now_ns
        return self._clock_ns

    def _level_at(self, bucket: _Bucket, clock: int) -> int:
        elapsed = clock - bucket.updated_ns
        if elapsed <= 0:
            return bucket.level
        return min(self._capacity_level, bucket.level + elapsed * self._policy.rate)

    def _refill(self, bucket: _Bucket, clock: int) -> None:
        if clock > bucket.updated_ns:
            bucket.level = self._level_at(bucket, clock)
            bucket.updated_ns = clock

    def _refuse(self, refusal: Refused) -> Refused:
        self._counts[refusal.limit] += 1
        return refusal

    def _prune_at(self, clock: int) -> int:
        self._checks_since_prune = 0
        idle = [
            client
            for client, bucket in self._buckets.items()
            if client not in self._pending and self._level_at(bucket, clock) >= self._capacity_level
        ]
        for client in idle:
            del self._buckets[client]
        self._counts["pruned"] += len(idle)
        return len(idle)
