"""Bounded retention of terminal records: unit tests and hypothesis properties."""

from __future__ import annotations

import math
import time

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from erlmcp_py.core.policy import RetentionPolicy
from erlmcp_py.core.retention import Retention


def test_defaults() -> None:
    r: Retention[str] = Retention()
    assert r.policy == RetentionPolicy(max_records=10_000, max_age_s=900.0)
    assert len(r) == 0
    assert r.next_expiry() is None
    assert r.evict(0.0) == []


def test_count_bound_evicts_oldest_first() -> None:
    r: Retention[str] = Retention(RetentionPolicy(max_records=3, max_age_s=100.0))
    assert r.add("a", 0.0) == []
    assert r.add("b", 1.0) == []
    assert r.add("c", 2.0) == []
    assert r.add("d", 3.0) == ["a"]
    assert list(r) == ["b", "c", "d"]
    assert "a" not in r
    assert "d" in r


def test_age_bound_evicts_at_exactly_max_age() -> None:
    r: Retention[str] = Retention(RetentionPolicy(max_records=10, max_age_s=900.0))
    r.add("a", 0.0)
    r.add("b", 100.0)
    assert r.next_expiry() == 900.0
    assert r.evict(899.999) == []
    assert r.evict(900.0) == ["a"]
    assert r.next_expiry() == 1000.0
    assert r.evict(5000.0) == ["b"]
    assert len(r) == 0


def test_add_also_evicts_aged_records() -> None:
    r: Retention[int] = Retention(RetentionPolicy(max_records=10, max_age_s=10.0))
    r.add(1, 0.0)
    r.add(2, 5.0)
    assert r.add(3, 12.0) == [1]
    assert list(r) == [2, 3]


def test_re_adding_restarts_the_age_and_moves_to_the_back() -> None:
    r: Retention[str] = Retention(RetentionPolicy(max_records=2, max_age_s=10.0))
    r.add("a", 0.0)
    r.add("b", 1.0)
    assert r.add("a", 2.0) == []
    assert list(r) == ["b", "a"]
    assert r.terminal_at("a") == 2.0
    assert r.add("c", 3.0) == ["b"]


def test_discard() -> None:
    r: Retention[str] = Retention()
    r.add("a", 0.0)
    assert r.discard("a") is True
    assert r.discard("a") is False
    assert r.terminal_at("a") is None


def test_time_going_backwards_is_clamped() -> None:
    r: Retention[str] = Retention(RetentionPolicy(max_records=10, max_age_s=10.0))
    r.add("a", 100.0)
    r.add("b", 50.0)  # stored as 100.0: order and age stay consistent
    assert r.terminal_at("b") == 100.0
    assert list(r) == ["a", "b"]
    assert r.evict(0.0) == []  # going back never ages anything
    assert r.evict(110.0) == ["a", "b"]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_now_is_rejected(bad: float) -> None:
    r: Retention[str] = Retention()
    with pytest.raises(ValueError, match="finite"):
        r.add("a", bad)
    with pytest.raises(ValueError, match="finite"):
        r.evict(bad)


def test_repr() -> None:
    r: Retention[str] = Retention(RetentionPolicy(max_records=5))
    r.add("a", 0.0)
    assert "1/5" in repr(r)


def test_eviction_cost_stays_constant_per_record() -> None:
    """A steady stream at the count bound must not slow down (a plain dict would, as its
    deleted front slots pile up)."""
    r: Retention[int] = Retention(RetentionPolicy(max_records=10_000, max_age_s=1e9))

    def churn(start: int, n: int) -> float:
        t0 = time.perf_counter()
        for i in range(start, start + n):
            r.add(i, float(i))
        return time.perf_counter() - t0

    churn(0, 10_000)  # fill
    first = churn(10_000, 20_000)
    second = churn(30_000, 20_000)
    assert len(r) == 10_000
    assert second < first * 5 + 0.05  # generous: CI noise, not complexity


# -- properties ------------------------------------------------------------------------------

ops = st.lists(
    st.tuples(
        st.sampled_from(["add", "add", "add", "evict", "discard"]),
        st.integers(0, 30),  # key
        st.floats(-50, 400, allow_nan=False),  # time step (sometimes backwards)
    ),
    max_size=80,
)


@settings(max_examples=200, deadline=None)
@given(max_records=st.integers(1, 8), max_age=st.floats(0.5, 300), steps=ops)
def test_bounds_hold_after_every_operation(
    max_records: int, max_age: float, steps: list[tuple[str, int, float]]
) -> None:
    r: Retention[int] = Retention(RetentionPolicy(max_records=max_records, max_age_s=max_age))
    now = 0.0
    clock: float | None = None
    for op, key, dt in steps:
        now += dt
        if op != "discard":  # the retention's clock: the highest now it was given
            clock = now if clock is None else max(clock, now)
        if op == "add":
            evicted = r.add(key, now)
            assert key in r
            assert key not in evicted
        elif op == "evict":
            evicted = r.evict(now)
            # nothing at least max_age old survives an evict
            for k in r:
                t = r.terminal_at(k)
                assert t is not None
                assert clock is not None
                assert clock - t < max_age
        else:
            evicted = []
            r.discard(key)
            assert key not in r
        assert len(r) <= max_records
        for k in evicted:
            assert k not in r
        times = [r.terminal_at(k) for k in r]
        assert times == sorted(times)  # type: ignore[type-var]


class RetentionMachine(RuleBasedStateMachine):
    """Retention against a plain reference list of (key, clamped time)."""

    def __init__(self) -> None:
        super().__init__()
        self.model: list[tuple[int, float]] = []
        self.now = 0.0
        self.clock = 0.0  # the retention's clock: the highest now it was given
        self.seen = False
        self.r: Retention[int]
        self.max_records = 1
        self.max_age = 1.0

    @initialize(max_records=st.integers(1, 6), max_age=st.sampled_from([1.0, 10.0, 900.0]))
    def setup(self, max_records: int, max_age: float) -> None:
        self.max_records, self.max_age = max_records, max_age
        self.r = Retention(RetentionPolicy(max_records=max_records, max_age_s=max_age))

    def _model_evict_aged(self) -> list[int]:
        old = [k for k, t in self.model if self.clock - t >= self.max_age]
        self.model = [(k, t) for k, t in self.model if self.clock - t < self.max_age]
        return old

    @rule(dt=st.sampled_from([0.0, 0.5, 1.0, 5.0, 10.0, 300.0, 900.0, -3.0]))
    def tick(self, dt: float) -> None:
        self.now += dt

    def _feed(self) -> None:
        self.clock = max(self.clock, self.now) if self.seen else self.now
        self.seen = True

    @rule(key=st.integers(0, 9))
    def add(self, key: int) -> None:
        got = self.r.add(key, self.now)
        self._feed()
        self.model = [(k, t) for k, t in self.model if k != key]
        expected = self._model_evict_aged()
        self.model.append((key, self.clock))
        while len(self.model) > self.max_records:
            expected.append(self.model.pop(0)[0])
        assert got == expected

    @rule()
    def evict(self) -> None:
        got = self.r.evict(self.now)
        self._feed()
        assert got == self._model_evict_aged()

    @rule(key=st.integers(0, 9))
    def discard(self, key: int) -> None:
        present = any(k == key for k, _ in self.model)
        assert self.r.discard(key) == present
        self.model = [(k, t) for k, t in self.model if k != key]

    @invariant()
    def matches_model(self) -> None:
        assert [(k, self.r.terminal_at(k)) for k in self.r] == self.model
        assert len(self.r) <= self.max_records
        expiry = self.r.next_expiry()
        assert expiry == (self.model[0][1] + self.max_age if self.model else None)


RetentionMachine.TestCase.settings = settings(
    max_examples=150,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_retention_machine = RetentionMachine.TestCase


class Reference:
    """The retention rules written plainly: clamp the clock, drop the key, evict every id with
    ``clock - t >= max_age`` from the front, append, apply the count bound."""

    def __init__(self, max_records: int, max_age: float) -> None:
        self.max_records = max_records
        self.max_age = max_age
        self.entries: list[tuple[int, float]] = []
        self.clock: float | None = None

    def _advance(self, now: float) -> float:
        if self.clock is None or now > self.clock:
            self.clock = now
        return self.clock

    def _evict_aged(self, clock: float) -> list[int]:
        evicted = []
        while self.entries and clock - self.entries[0][1] >= self.max_age:
            evicted.append(self.entries.pop(0)[0])
        return evicted

    def add(self, key: int, now: float) -> list[int]:
        clock = self._advance(now)
        self.entries = [(k, t) for k, t in self.entries if k != key]
        evicted = self._evict_aged(clock)
        self.entries.append((key, clock))
        while len(self.entries) > self.max_records:
            evicted.append(self.entries.pop(0)[0])
        return evicted

    def evict(self, now: float) -> list[int]:
        return self._evict_aged(self._advance(now))

    def discard(self, key: int) -> bool:
        before = len(self.entries)
        self.entries = [(k, t) for k, t in self.entries if k != key]
        return len(self.entries) != before


finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
steps = st.lists(
    st.tuples(
        st.sampled_from(["add", "add", "add", "add", "evict", "discard"]),
        st.integers(0, 12),
        st.one_of(
            finite,  # an arbitrary time
            st.sampled_from([0.1, 0.2, 0.3, 1e-9, 5e-324]),  # tiny steps near a boundary
        ),
        st.booleans(),  # the time is absolute (True) or a step from the last one
    ),
    max_size=60,
)


@settings(max_examples=400, deadline=None)
@given(
    max_records=st.integers(1, 10),
    max_age=st.one_of(
        st.floats(1e-6, 1e6, allow_nan=False, allow_infinity=False),
        st.sampled_from([0.1, 0.3, 1.0, 900.0]),
    ),
    ops=steps,
)
def test_add_evict_and_discard_follow_the_reference_model(
    max_records: int, max_age: float, ops: list[tuple[str, int, float, bool]]
) -> None:
    r: Retention[int] = Retention(RetentionPolicy(max_records=max_records, max_age_s=max_age))
    ref = Reference(max_records, max_age)
    now = 0.0
    for op, key, value, absolute in ops:
        now = value if absolute else now + value
        if op == "add":
            assert r.add(key, now) == ref.add(key, now)
        elif op == "evict":
            assert r.evict(now) == ref.evict(now)
        else:
            assert r.discard(key) == ref.discard(key)
        assert [(k, r.terminal_at(k)) for k in r] == ref.entries


def test_an_id_exactly_max_age_old_is_evicted_by_add() -> None:
    r: Retention[str] = Retention(RetentionPolicy(max_records=10, max_age_s=0.3))
    r.add("a", 0.1)
    r.add("b", 0.2)
    # 0.4 - 0.1 rounds to exactly 0.30000000000000004 >= 0.3: "a" goes, "b" stays.
    assert r.add("c", 0.4) == ["a"]
    assert list(r) == ["b", "c"]


def test_the_bound_is_exact_after_a_scan() -> None:
    r: Retention[str] = Retention(RetentionPolicy(max_records=10, max_age_s=10.0))
    r.add("a", 0.0)
    r.add("b", 5.0)
    assert r.add("c", 10.0) == ["a"]  # the scan stops at "b": its time is the new bound
    assert r.add("d", 15.0) == ["b"]


def test_rounding_at_the_age_boundary_follows_the_subtraction() -> None:
    # 3.201001546914402 - 1.082354520735861 >= 2.1186470261785413 although
    # 3.201001546914402 < 1.082354520735861 + 2.1186470261785413 in floats: the id is evicted.
    t, max_age, later = 1.082354520735861, 2.1186470261785413, 3.201001546914402
    assert later - t >= max_age
    assert later < t + max_age
    r: Retention[str] = Retention(RetentionPolicy(max_records=10, max_age_s=max_age))
    r.add("a", t)
    r.add("b", t)
    assert r.add("c", later) == ["a", "b"]
