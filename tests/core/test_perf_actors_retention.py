"""Retention.add's shortcut (no scan while nothing can have aged) never changes an answer.

The reference is the plain algorithm the shortcut skips: clamp the clock, drop the key,
evict every id with ``clock - t >= max_age`` from the front, append, apply the count bound.
Times and ages are arbitrary floats, so rounding at the age boundary is exercised too.
"""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from erlmcp_py.core.policy import RetentionPolicy
from erlmcp_py.core.retention import Retention


class Reference:
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
def test_add_and_evict_agree_with_the_plain_algorithm(
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
