"""``Elicitation.__init__`` checks the shell's float clock inline and computes ``warn_at``
inline (no ``_check_now`` / ``_warning_time`` calls per elicitation). This pins it to the
general code: for any policy and any ``now`` (floats, ints, bools, non-finite values,
non-numbers) the new elicitation has exactly the times the helpers give, or fails with the
same error — and ``_warning_time()`` agrees with ``warn_at`` after extensions too.

``Validated`` returns from its checks at once for a validator's ok verdict (``ok is True``
and the empty errors tuple); the last test pins that to the full checks for any input.
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import example, given, settings, strategies as st

from erlmcp_py.core.lifecycle import Elicitation, Extend, Validated, _check_now
from erlmcp_py.core.policy import LifecyclePolicy

policies = st.builds(
    lambda form, url, warn_fraction, zero: LifecyclePolicy(
        form_deadline_s=form,
        url_deadline_s=url,
        warn_before_s=0 if zero else min(form, url) * warn_fraction,
    ),
    st.floats(0.001, 1e6),
    st.floats(0.001, 1e6),
    st.floats(0, 0.99),
    st.booleans(),
)

nows = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(10**12), 10**12),
    st.booleans(),
    st.sampled_from([None, "1.0", 1 + 0j]),
)


def expected(policy: LifecyclePolicy, now: Any, mode: Any) -> Any:
    """The times through the helpers, as the constructor computed them before."""
    try:
        _check_now("Elicitation", now)
        created = float(now)
        deadline = created + policy.deadline_for(mode)
    except (ValueError, TypeError) as exc:
        return type(exc), str(exc)
    warn_at = None if policy.warn_before_s == 0 else deadline - policy.warn_before_s
    return created, deadline, warn_at


def actual(policy: LifecyclePolicy, now: Any, mode: Any) -> Any:
    try:
        e = Elicitation(policy, now, mode=mode)
    except (ValueError, TypeError) as exc:
        return type(exc), str(exc)
    assert e.warn_at == e._warning_time()
    return e.created_at, e.deadline, e.warn_at


@settings(max_examples=300)
@given(policies, nows, st.sampled_from(["form", "url", "fax"]))
@example(LifecyclePolicy(), math.nan, "form")
@example(LifecyclePolicy(), math.inf, "form")
@example(LifecyclePolicy(), -math.inf, "url")
@example(LifecyclePolicy(warn_before_s=0), 7, "form")
@example(LifecyclePolicy(), True, "form")
def test_constructor_times_agree_with_the_helpers(
    policy: LifecyclePolicy, now: Any, mode: Any
) -> None:
    got, want = actual(policy, now, mode), expected(policy, now, mode)
    if isinstance(want, tuple) and len(want) == 3 and isinstance(got, tuple):
        assert [type(x) for x in got] == [type(x) for x in want]
    assert got == want


@given(policies, st.floats(-1e9, 1e9), st.lists(st.floats(0.001, 1e4), max_size=3))
def test_warn_at_stays_the_helpers_after_extensions(
    policy: LifecyclePolicy, now: float, extensions: list[float]
) -> None:
    e = Elicitation(policy, now)
    e.start()
    for seconds in extensions:
        e.handle(Extend(now, seconds))
        assert e.warn_at == e._warning_time()
    assert math.isfinite(e.deadline)


def validated_reference(ok: Any, errors: Any, content: Any) -> Any:
    """``Validated``'s checks without the fast return for a validator's ok verdict."""
    if not isinstance(ok, bool):
        return TypeError, f"Validated.ok must be a bool, got {ok!r}"
    errors = errors if isinstance(errors, tuple) else tuple(errors)
    if ok and errors:
        return ValueError, "Validated(ok=True) must not carry errors"
    return ok, errors, content


def validated_actual(ok: Any, errors: Any, content: Any) -> Any:
    try:
        v = Validated(ok, errors, content)
    except (TypeError, ValueError) as exc:
        return type(exc), str(exc)
    return v.ok, v.errors, v.content


@settings(max_examples=300)
@given(
    st.one_of(st.booleans(), st.sampled_from([0, 1, None, "yes", 1.0])),
    st.one_of(
        st.just(()),
        st.tuples(st.text(max_size=3)),
        st.lists(st.text(max_size=3), max_size=2),
        st.lists(st.text(max_size=3), max_size=0).map(tuple),
    ),
    st.one_of(st.none(), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)),
)
@example(True, (), {"name": "Ada"})
@example(1, (), None)
@example(True, ("bad",), None)
@example(True, [], None)
def test_validated_fast_return_agrees_with_its_checks(ok: Any, errors: Any, content: Any) -> None:
    got, want = validated_actual(ok, errors, content), validated_reference(ok, errors, content)
    assert got == want
    assert [type(x) for x in got] == [type(x) for x in want]
