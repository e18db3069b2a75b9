"""Token buckets and pending caps: unit tests and a hypothesis state machine against an
exact (Fraction) reference model."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from erlmcp_py.core.errors import RateLimited, TooManyElicitations
from erlmcp_py.core.policy import RatePolicy
from erlmcp_py.core.ratelimit import Admitted, RateLimiter, RateLimiterStats, Refused

# -- defaults -----------------------------------------------------------------------------


def test_default_bucket_allows_a_burst_of_ten_then_one_every_six_seconds() -> None:
    rl = RateLimiter()
    for i in range(10):
        d = rl.try_acquire("c", 100.0)
        assert isinstance(d, Admitted)
        assert d.pending == i + 1
        assert d.tokens == 9 - i
    refused = rl.try_acquire("c", 100.0)
    assert isinstance(refused, Refused)
    assert refused.limit == "rate"
    assert refused.retry_after == pytest.approx(6.0, abs=2e-6)
    assert refused.retry_after is not None
    assert refused.retry_after >= 6.0
    assert isinstance(rl.try_acquire("c", 100.0 + refused.retry_after), Admitted)


def test_refill_is_continuous_and_never_admits_on_a_fraction() -> None:
    rl = RateLimiter(RatePolicy(rate=10, window_s=60.0, capacity=1))
    assert isinstance(rl.try_acquire("c", 0.0), Admitted)
    assert rl.tokens("c", 3.0) == pytest.approx(0.5)
    half = rl.try_acquire("c", 3.0)
    assert isinstance(half, Refused)
    assert half.retry_after == pytest.approx(3.0, abs=2e-6)
    almost = rl.try_acquire("c", 5.999_999_999)
    assert isinstance(almost, Refused)
    assert almost.retry_after is not None
    assert 0 < almost.retry_after <= 2e-6
    assert isinstance(rl.try_acquire("c", 6.0), Admitted)
    assert rl.tokens("c", 6.0) == 0.0


def test_one_nanosecond_short_of_a_token_is_refused() -> None:
    rl = RateLimiter(RatePolicy(rate=1, window_s=1.0, capacity=1))
    assert isinstance(rl.try_acquire("c", 0.0), Admitted)
    refused = rl.try_acquire("c", 0.999_999_999)
    assert isinstance(refused, Refused)
    assert refused.retry_after is not None
    assert 0 < refused.retry_after <= 2e-6
    assert isinstance(rl.try_acquire("c", 1.0), Admitted)


def test_bucket_never_exceeds_capacity() -> None:
    rl = RateLimiter(RatePolicy(rate=10, window_s=60.0, capacity=3))
    rl.try_acquire("c", 0.0)
    assert rl.tokens("c", 1e9) == 3.0
    for _ in range(3):
        assert isinstance(rl.try_acquire("c", 1e6), Admitted)
    assert isinstance(rl.try_acquire("c", 1e6), Refused)


def test_retry_after_is_enough_even_at_large_clock_values() -> None:
    rl = RateLimiter(RatePolicy(rate=7, window_s=13.0, capacity=1))
    now = 123_456.789
    rl.try_acquire("c", now)
    for _ in range(50):
        refused = rl.try_acquire("c", now)
        assert isinstance(refused, Refused)
        assert refused.retry_after is not None
        now += refused.retry_after
        assert isinstance(rl.try_acquire("c", now), Admitted)


def test_clients_have_separate_buckets() -> None:
    rl = RateLimiter(RatePolicy(capacity=1))
    assert isinstance(rl.try_acquire("a", 0.0), Admitted)
    assert isinstance(rl.try_acquire("a", 0.0), Refused)
    assert isinstance(rl.try_acquire("b", 0.0), Admitted)
    assert isinstance(rl.try_acquire(("tenant", 1), 0.0), Admitted)


# -- time going backwards ------------------------------------------------------------------


def test_time_going_backwards_never_mints_tokens() -> None:
    rl = RateLimiter(RatePolicy(rate=1, window_s=10.0, capacity=1))
    assert isinstance(rl.try_acquire("a", 100.0), Admitted)
    assert isinstance(rl.try_acquire("a", 50.0), Refused)
    assert isinstance(rl.try_acquire("a", 109.0), Refused)  # 9 s of real refill only
    assert isinstance(rl.try_acquire("a", 110.0), Admitted)


def test_a_new_bucket_created_in_the_past_refills_from_the_present() -> None:
    rl = RateLimiter(RatePolicy(rate=1, window_s=10.0, capacity=1))
    rl.try_acquire("a", 100.0)
    assert isinstance(rl.try_acquire("b", 40.0), Admitted)  # b's bucket starts full
    # 40 -> 60 looks like 20 s, but the limiter's clock is still at 100: no refill
    assert isinstance(rl.try_acquire("b", 60.0), Refused)
    assert isinstance(rl.try_acquire("b", 110.0), Admitted)


def test_pruned_bucket_comes_back_full_without_minting_under_backwards_time() -> None:
    rl = RateLimiter(RatePolicy(rate=1, window_s=10.0, capacity=1))
    rl.try_acquire("a", 0.0)
    rl.release("a")
    assert rl.prune(100.0) == 1
    assert isinstance(rl.try_acquire("a", 50.0), Admitted)
    rl.release("a")
    assert isinstance(rl.try_acquire("a", 60.0), Refused)  # clock is still 100


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_now_is_rejected(bad: float) -> None:
    rl = RateLimiter()
    with pytest.raises(ValueError, match="finite"):
        rl.try_acquire("c", bad)
    with pytest.raises(ValueError, match="finite"):
        rl.prune(bad)
    with pytest.raises(ValueError, match="finite"):
        rl.tokens("c", bad)


# -- pending caps ---------------------------------------------------------------------------


def test_client_pending_cap_counts_only_live_elicitations() -> None:
    rl = RateLimiter(RatePolicy(rate=1000, capacity=1000, max_pending_per_client=2))
    assert isinstance(rl.try_acquire("c", 0.0), Admitted)
    assert isinstance(rl.try_acquire("c", 0.0), Admitted)
    refused = rl.try_acquire("c", 0.0)
    assert refused == Refused("client_pending", cap=2)
    assert rl.release("c")
    assert isinstance(rl.try_acquire("c", 0.0), Admitted)
    assert rl.pending("c") == 2


def test_default_pending_cap_is_one_hundred() -> None:
    rl = RateLimiter(RatePolicy(rate=1000, capacity=1000))
    for _ in range(100):
        assert isinstance(rl.try_acquire("c", 0.0), Admitted)
    assert rl.try_acquire("c", 0.0) == Refused("client_pending", cap=100)


def test_a_cap_refusal_spends_no_token() -> None:
    rl = RateLimiter(RatePolicy(rate=1, window_s=60.0, capacity=2, max_pending_per_client=1))
    rl.try_acquire("c", 0.0)
    assert rl.tokens("c", 0.0) == 1.0
    for _ in range(5):
        assert rl.try_acquire("c", 0.0) == Refused("client_pending", cap=1)
    assert rl.tokens("c", 0.0) == 1.0
    rl.release("c")
    assert isinstance(rl.try_acquire("c", 0.0), Admitted)


def test_an_uncharged_acquire_takes_a_pending_slot_and_no_token() -> None:
    rl = RateLimiter(RatePolicy(rate=1, window_s=60.0, capacity=1, max_pending_per_client=2))
    assert isinstance(rl.try_acquire("c", 0.0), Admitted)
    assert rl.tokens("c", 0.0) == 0.0
    admitted = rl.try_acquire("c", 0.0, charge=False)  # an MRTR replay asks it again
    assert admitted == Admitted(2, 0.0)
    assert rl.pending("c") == 2
    assert rl.try_acquire("c", 0.0, charge=False) == Refused("client_pending", cap=2)
    assert rl.release("c")
    assert isinstance(rl.try_acquire("c", 0.0), Refused)  # charged: the bucket is empty
    assert isinstance(rl.try_acquire("new", 0.0, charge=False), Admitted)
    assert rl.tokens("new", 0.0) == 1.0


def test_global_cap() -> None:
    rl = RateLimiter(RatePolicy(max_pending_global=3))
    for client in "abc":
        assert isinstance(rl.try_acquire(client, 0.0), Admitted)
    assert rl.try_acquire("d", 0.0) == Refused("global_pending", cap=3)
    assert rl.stats().buckets == 3  # a refused newcomer gets no bucket
    rl.release("b")
    assert isinstance(rl.try_acquire("d", 0.0), Admitted)


def test_client_cap_is_reported_before_global_cap_and_rate() -> None:
    rl = RateLimiter(RatePolicy(capacity=1, max_pending_per_client=1, max_pending_global=1))
    rl.try_acquire("a", 0.0)
    assert rl.try_acquire("a", 0.0) == Refused("client_pending", cap=1)
    assert rl.try_acquire("b", 0.0) == Refused("global_pending", cap=1)


def test_release_never_underflows() -> None:
    rl = RateLimiter()
    assert rl.release("nobody") is False
    rl.try_acquire("c", 0.0)
    assert rl.release("c") is True
    assert rl.release("c") is False
    assert rl.pending("c") == 0
    assert rl.stats().pending_total == 0
    assert rl.stats().clients_pending == 0


# -- pruning ----------------------------------------------------------------------------------


def test_prune_drops_only_full_idle_buckets() -> None:
    rl = RateLimiter(RatePolicy(rate=1, window_s=10.0, capacity=1))
    rl.try_acquire("busy", 0.0)  # pending: kept
    rl.try_acquire("idle", 0.0)
    rl.release("idle")  # idle and full at 10.0: dropped
    rl.try_acquire("recent", 5.0)
    rl.release("recent")  # idle but not yet refilled at 10.0: kept
    assert rl.prune(10.0) == 1
    assert rl.stats().buckets == 2
    assert rl.prune(15.0) == 1  # "recent" is full now
    assert rl.stats().buckets == 1
    assert rl.stats().pruned == 2


def test_automatic_pruning_keeps_memory_bounded() -> None:
    policy = RatePolicy(rate=1, window_s=1.0, capacity=1, prune_every=8)
    rl = RateLimiter(policy)
    for i in range(5000):
        assert isinstance(rl.try_acquire(f"client-{i}", float(i)), Admitted)
        rl.release(f"client-{i}")
        assert rl.stats().buckets <= 2 * policy.prune_every
    assert rl.stats().pruned >= 5000 - 2 * policy.prune_every


def test_automatic_pruning_is_amortised(monkeypatch: pytest.MonkeyPatch) -> None:
    """With many live buckets, a full scan happens at most once per len(buckets) checks."""
    policy = RatePolicy(rate=1, window_s=1e6, capacity=1, prune_every=1)
    rl = RateLimiter(policy)
    scans = 0
    original = RateLimiter._prune_at

    def counting(self: RateLimiter, clock: int) -> int:
        nonlocal scans
        scans += 1
        return original(self, clock)

    monkeypatch.setattr(RateLimiter, "_prune_at", counting)
    n = 2000
    for i in range(n):
        rl.try_acquire(i, 0.0)  # buckets stay non-full: nothing prunable
    # scans happen when checks >= len(buckets): at most ~log2(n) + a few times
    assert scans <= 2 * math.log2(n) + 4


# -- errors and stats --------------------------------------------------------------------------


def test_refusals_map_to_runtime_errors() -> None:
    rate = Refused("rate", retry_after=1.5).to_error()
    assert isinstance(rate, RateLimited)
    assert rate.retry_after == 1.5
    client = Refused("client_pending", cap=100).to_error()
    assert isinstance(client, TooManyElicitations)
    assert (client.scope, client.limit) == ("client", 100)
    glob = Refused("global_pending", cap=7).to_error()
    assert isinstance(glob, TooManyElicitations)
    assert (glob.scope, glob.limit) == ("global", 7)


def test_stats_count_every_decision() -> None:
    rl = RateLimiter(RatePolicy(capacity=1, max_pending_per_client=2, max_pending_global=2))
    rl.try_acquire("a", 0.0)  # admitted
    rl.try_acquire("a", 0.0)  # rate
    rl.try_acquire("b", 0.0)  # admitted
    rl.try_acquire("c", 0.0)  # global
    assert rl.stats() == RateLimiterStats(
        buckets=2,
        clients_pending=2,
        pending_total=2,
        admitted=2,
        refused_rate=1,
        refused_client_pending=0,
        refused_global_pending=1,
        pruned=0,
    )
    assert "pending=2" in repr(rl)
    assert rl.policy.capacity == 1


# -- hypothesis: random schedules against an exact model ---------------------------------------

CLIENTS = ["a", "b", "c"]


class RateLimiterMachine(RuleBasedStateMachine):
    """Random acquires, releases, prunes and clock moves (including backwards).

    The reference model is an exact token bucket in Fractions over the limiter's clock (the
    highest ``now`` seen). Every decision must match it, and the history of admissions must
    satisfy the windowed bound in every window.
    """

    def __init__(self) -> None:
        super().__init__()
        self.rl: RateLimiter
        self.policy: RatePolicy
        self.now_ns = 0
        self.clock_ns: int | None = None
        self.tokens: dict[str, Fraction] = {}
        self.updated: dict[str, int] = {}
        self.pending: dict[str, int] = dict.fromkeys(CLIENTS, 0)
        self.admitted_at: dict[str, list[int]] = {c: [] for c in CLIENTS}

    @initialize(
        rate=st.integers(1, 5),
        window_ms=st.sampled_from([1, 700, 1000, 10_000, 60_000]),
        capacity=st.integers(1, 4),
        max_pending=st.integers(1, 4),
        global_cap=st.none() | st.integers(1, 6),
        prune_every=st.integers(1, 6),
        start_ms=st.integers(-1_000_000, 1_000_000),
    )
    def setup(
        self,
        rate: int,
        window_ms: int,
        capacity: int,
        max_pending: int,
        global_cap: int | None,
        prune_every: int,
        start_ms: int,
    ) -> None:
        self.policy = RatePolicy(
            rate=rate,
            window_s=window_ms / 1000,
            capacity=capacity,
            max_pending_per_client=max_pending,
            max_pending_global=global_cap,
            prune_every=prune_every,
        )
        self.window_ns = round(self.policy.window_s * 1e9)
        self.rl = RateLimiter(self.policy)
        self.now_ns = start_ms * 1_000_000

    # -- model ---------------------------------------------------------------------------

    @property
    def now(self) -> float:
        return self.now_ns / 1e9

    def tick(self) -> int:
        ns = round(self.now * 1e9)
        self.clock_ns = ns if self.clock_ns is None else max(self.clock_ns, ns)
        return self.clock_ns

    def model_tokens(self, client: str, clock: int) -> Fraction:
        if client not in self.tokens:
            return Fraction(self.policy.capacity)
        elapsed = clock - self.updated[client]
        assert elapsed >= 0
        refill = Fraction(elapsed * self.policy.rate, self.window_ns)
        return min(Fraction(self.policy.capacity), self.tokens[client] + refill)

    # -- rules -----------------------------------------------------------------------------

    @rule(dt_ms=st.integers(0, 2000) | st.sampled_from([1, 60_000, 10**7]))
    def advance(self, dt_ms: int) -> None:
        self.now_ns += dt_ms * 1_000_000

    @rule(eighths=st.integers(0, 12))
    def advance_part_of_a_token(self, eighths: int) -> None:
        """Move by a fraction of one token's refill time, where fractional balances live."""
        self.now_ns += self.window_ns * eighths // (8 * self.policy.rate)

    @rule(client=st.sampled_from(CLIENTS), offset_ns=st.integers(-2, 2))
    def probe_token_boundary(self, client: str, offset_ns: int) -> None:
        """Ask a few nanoseconds either side of the instant ``client`` gets a whole token."""
        if self.clock_ns is not None:
            missing = 1 - self.model_tokens(client, self.clock_ns)
            if missing > 0:
                target = self.clock_ns + math.ceil(missing * self.window_ns / self.policy.rate)
                self.now_ns = max(self.now_ns, target + offset_ns)
        self.acquire(client)

    @rule(dt_ms=st.integers(1, 5000))
    def go_back(self, dt_ms: int) -> None:
        self.now_ns -= dt_ms * 1_000_000

    @rule(client=st.sampled_from(CLIENTS))
    def acquire(self, client: str) -> None:
        decision = self.rl.try_acquire(client, self.now)
        clock = self.tick()
        tokens = self.model_tokens(client, clock)
        total = sum(self.pending.values())
        if self.pending[client] >= self.policy.max_pending_per_client:
            assert decision == Refused("client_pending", cap=self.policy.max_pending_per_client)
            return
        cap = self.policy.max_pending_global
        if cap is not None and total >= cap:
            assert decision == Refused("global_pending", cap=cap)
            return
        if tokens < 1:
            assert isinstance(decision, Refused)
            assert decision.limit == "rate"
            assert decision.retry_after is not None
            assert decision.retry_after > 0
            # at now + retry_after the model has a whole token, and not much earlier
            later = round((self.now + decision.retry_after) * 1e9)
            assert self.model_tokens(client, max(later, clock)) >= 1
            needed_ns = math.ceil((1 - tokens) * self.window_ns / self.policy.rate)
            lag_ns = clock - round(self.now * 1e9)  # the caller's clock may lag ours
            assert decision.retry_after <= (needed_ns + lag_ns) / 1e9 + 2e-6
            return
        assert isinstance(decision, Admitted), (decision, tokens)
        self.tokens[client] = tokens - 1
        self.updated[client] = clock
        self.pending[client] += 1
        assert decision.pending == self.pending[client]
        assert decision.tokens == pytest.approx(float(tokens - 1))
        self.admitted_at[client].append(clock)

    @rule(client=st.sampled_from(CLIENTS))
    def acquire_then_release(self, client: str) -> None:
        """A short-lived elicitation: keeps the pending caps from hiding the bucket."""
        self.acquire(client)
        self.release(client)

    @rule(client=st.sampled_from(CLIENTS))
    def release(self, client: str) -> None:
        released = self.rl.release(client)
        assert released == (self.pending[client] > 0)
        if released:
            self.pending[client] -= 1

    @rule()
    def prune(self) -> None:
        self.rl.prune(self.now)
        clock = self.tick()
        for client in CLIENTS:
            # pruning must keep every bucket that is not full or has work pending
            if self.model_tokens(client, clock) < self.policy.capacity or self.pending[client]:
                assert client in self.rl._buckets

    # -- invariants --------------------------------------------------------------------------

    @invariant()
    def pending_counts_match_and_respect_caps(self) -> None:
        stats = self.rl.stats()
        for client in CLIENTS:
            assert self.rl.pending(client) == self.pending[client]
            assert 0 <= self.pending[client] <= self.policy.max_pending_per_client
        total = sum(self.pending.values())
        assert stats.pending_total == total
        if self.policy.max_pending_global is not None:
            assert total <= self.policy.max_pending_global
        assert stats.buckets <= len(CLIENTS)

    @invariant()
    def balance_is_never_negative_nor_above_capacity(self) -> None:
        if self.clock_ns is None:
            return
        peek = max(self.clock_ns, round(self.now * 1e9))  # tokens() never moves the clock
        for client in CLIENTS:
            observed = self.rl.tokens(client, self.now)
            assert 0 <= observed <= self.policy.capacity
            assert observed == pytest.approx(float(self.model_tokens(client, peek)))

    @invariant()
    def no_window_admits_more_than_capacity_plus_refill(self) -> None:
        for times in self.admitted_at.values():
            # times are on the limiter's clock, non-decreasing; check every window [i, j]
            assert times == sorted(times)
            for i in range(len(times)):
                for j in range(i, len(times)):
                    count = j - i + 1
                    span = times[j] - times[i]
                    # count <= capacity + span * rate / window, exactly
                    lhs = (count - self.policy.capacity) * self.window_ns
                    assert lhs <= span * self.policy.rate, (count, span)


RateLimiterMachine.TestCase.settings = settings(
    max_examples=200,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_rate_limiter_machine = RateLimiterMachine.TestCase
