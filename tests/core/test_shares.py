"""Shares per principal that shed what is idle: which unit goes, and the counts that stay true."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import settings, strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    rule,
)

from erlmcp_py.core.shares import Admit, Refuse, Shares, Shed


def always(_: object) -> bool:
    return True


def test_below_both_caps_a_unit_is_admitted() -> None:
    shares: Shares[str, str] = Shares(per_principal=2, total=3)
    assert shares.admit("a", always) == Admit()
    shares.add("a", "a1", "a1")
    assert shares.held("a") == 1
    assert len(shares) == 1
    assert shares.get("a1") == "a1"
    assert shares.principal_of("a1") == "a"


def test_at_its_own_cap_a_principal_sheds_its_least_recently_used_idle_unit() -> None:
    shares: Shares[str, str] = Shares(per_principal=3, total=10)
    for key in ("a1", "a2", "a3"):
        shares.add("a", key, key)
    shares.touch("a1")  # a2 is now the least recently used
    assert shares.keys_of("a") == ["a2", "a3", "a1"]
    assert shares.admit("a", always) == Shed("a2", "a2", "a", "principal")
    assert shares.admit("a", lambda key: key != "a2") == Shed("a3", "a3", "a", "principal")
    assert shares.admit("a", lambda _: False) == Refuse("principal")
    assert shares.admit("b", lambda _: False) == Admit()  # another principal has its own share


def test_a_principal_denied_shedding_its_own_is_refused_at_its_cap() -> None:
    shares: Shares[str, str] = Shares(per_principal=1, total=10, shed_own=False)
    shares.add("a", "a1", "a1")
    assert shares.admit("a", always) == Refuse("principal")


def test_at_the_total_cap_the_heaviest_principal_with_an_idle_unit_sheds_one() -> None:
    shares: Shares[str, str] = Shares(per_principal=5, total=6)
    for key in ("a1", "a2", "a3"):
        shares.add("a", key, key)
    for key in ("b1", "b2"):
        shares.add("b", key, key)
    shares.add("c", "c1", "c1")
    assert shares.admit("d", always) == Shed("a1", "a1", "a", "total")
    # a's units all busy: the next heaviest with an idle one
    assert shares.admit("d", lambda key: not key.startswith("a")) == Shed("b1", "b1", "b", "total")
    assert shares.admit("d", lambda key: key == "c1") == Shed("c1", "c1", "c", "total")
    assert shares.admit("d", lambda _: False) == Refuse("total")


def test_between_principals_holding_as_many_the_unit_used_least_recently_goes() -> None:
    shares: Shares[str, str] = Shares(per_principal=5, total=4)
    shares.add("a", "a1", "a1")
    shares.add("b", "b1", "b1")
    shares.add("a", "a2", "a2")
    shares.add("b", "b2", "b2")
    shares.touch("a1")
    assert shares.admit("c", always) == Shed("b1", "b1", "b", "total")


def test_without_a_share_of_its_own_a_principal_meets_only_the_total_cap() -> None:
    shares: Shares[str, str] = Shares(per_principal=None, total=2, shed_own=False)
    shares.add("a", "a1", "a1")
    shares.add("a", "a2", "a2")
    assert shares.admit("a", always) == Shed("a1", "a1", "a", "total")
    assert shares.admit("a", lambda _: False) == Refuse("total")


def test_a_unit_is_given_back_once() -> None:
    shares: Shares[str, str] = Shares(per_principal=1, total=1)
    shares.add("a", "a1", "one")
    assert shares.remove("a1") == "one"
    assert shares.remove("a1") is None
    assert len(shares) == 0
    assert shares.principals == 0
    shares.add("a", "a2", "two")  # its room came back


def test_adding_past_a_cap_or_twice_is_a_bug_that_raises() -> None:
    shares: Shares[str, str] = Shares(per_principal=1, total=2)
    shares.add("a", "a1", "a1")
    with pytest.raises(ValueError, match="held already"):
        shares.add("b", "a1", "a1")
    with pytest.raises(ValueError, match="no room"):
        shares.add("a", "a2", "a2")
    shares.add("b", "b1", "b1")
    with pytest.raises(ValueError, match="no room"):
        shares.add("c", "c1", "c1")
    with pytest.raises(ValueError, match="at least 1"):
        Shares(0, 1)


PRINCIPALS = st.sampled_from(["p", "q", "r", "s"])


class SharesMachine(RuleBasedStateMachine):
    """Shares against a plain model: every admission is the one the rules name, a busy unit
    is never shed, and the counts always equal the units live."""

    units = Bundle("units")

    def __init__(self) -> None:
        super().__init__()
        self.shares: Shares[int, int] = Shares(per_principal=3, total=5)
        self.owner: dict[int, str] = {}
        self.used: dict[int, int] = {}
        self.busy: set[int] = set()
        self.clock = itertools.count()
        self.keys = itertools.count()

    @initialize(
        per_principal=st.sampled_from([1, 2, 3, None]),
        total=st.integers(1, 6),
        shed_own=st.booleans(),
    )
    def caps(self, per_principal: int | None, total: int, shed_own: bool) -> None:
        self.shares = Shares(per_principal, total, shed_own=shed_own)

    def idle(self, key: int) -> bool:
        return key not in self.busy

    def expected(self, principal: str) -> Admit | Shed[int, int] | Refuse:
        def idle_of(holder: str) -> list[int]:
            mine = [k for k, p in self.owner.items() if p == holder and self.idle(k)]
            return sorted(mine, key=self.used.__getitem__)

        def held(holder: str) -> int:
            return sum(1 for p in self.owner.values() if p == holder)

        cap = self.shares.per_principal
        if cap is not None and held(principal) >= cap:
            if not self.shares.shed_own:
                return Refuse("principal")
            own = idle_of(principal)
            return Shed(own[0], own[0], principal, "principal") if own else Refuse("principal")
        if len(self.owner) < self.shares.total:
            return Admit()
        with_idle = {p for p in self.owner.values() if idle_of(p)}
        if not with_idle:
            return Refuse("total")
        heaviest = max(held(p) for p in with_idle)
        candidates = [idle_of(p)[0] for p in with_idle if held(p) == heaviest]
        victim = min(candidates, key=self.used.__getitem__)
        return Shed(victim, victim, self.owner[victim], "total")

    @rule(target=units, principal=PRINCIPALS)
    def ask(self, principal: str) -> int:
        decision = self.shares.admit(principal, self.idle)
        assert decision == self.expected(principal)
        if isinstance(decision, Refuse):
            return -1
        if isinstance(decision, Shed):
            assert decision.key not in self.busy  # never a busy one
            assert self.shares.remove(decision.key) == decision.key
            del self.owner[decision.key], self.used[decision.key]
        key = next(self.keys)
        self.shares.add(principal, key, key)
        self.owner[key] = principal
        self.used[key] = next(self.clock)
        return key

    @rule(key=units)
    def use(self, key: int) -> None:
        self.shares.touch(key)
        if key in self.owner:
            self.used[key] = next(self.clock)

    @rule(key=units)
    def toggle_busy(self, key: int) -> None:
        self.busy ^= {key}

    @rule(key=consumes(units))
    def end(self, key: int) -> None:
        live = key in self.owner
        assert (self.shares.remove(key) == key) is live
        assert self.shares.remove(key) is None  # given back once
        self.owner.pop(key, None)
        self.used.pop(key, None)
        self.busy.discard(key)

    @invariant()
    def counts_equal_the_live_units(self) -> None:
        assert len(self.shares) == len(self.owner) <= self.shares.total
        for principal in set(self.owner.values()):
            mine = [k for k, p in self.owner.items() if p == principal]
            assert self.shares.held(principal) == len(mine)
            assert len(mine) <= (self.shares.per_principal or self.shares.total)
            assert self.shares.keys_of(principal) == sorted(mine, key=self.used.__getitem__)
        assert self.shares.principals == len(set(self.owner.values()))
        assert sorted(self.shares) == sorted(self.owner)


SharesMachine.TestCase.settings = settings(max_examples=300, stateful_step_count=40)
test_shares_state_machine = SharesMachine.TestCase


def test_a_unit_held_past_its_principals_share_is_bounded_by_the_total_only() -> None:
    shares: Shares[str, str] = Shares(1, 3)
    shares.add("a", "a1", "x")
    with pytest.raises(ValueError, match="no room"):
        shares.add("a", "a2", "x")
    shares.add("a", "a2", "x", within_share=False)
    assert shares.held("a") == 2
    assert isinstance(shares.admit("a", lambda _: False), Refuse)  # still at its share
    shares.add("b", "b1", "x")
    with pytest.raises(ValueError, match="no room"):
        shares.add("a", "a3", "x", within_share=False)  # the total is full
    assert shares.remove("a2") == "x"
    assert shares.held("a") == 1
