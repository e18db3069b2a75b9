"""``RateLimiter.acquire_or_refuse`` is ``try_acquire`` without building :class:`Admitted`
(the rate limiter actor answers ``Acquire`` with it: the elicitation actor only needs the
refusal), and ``try_acquire`` now reads its ``Admitted`` numbers back after the admission.
This pins both: fed the same random operations, a limiter driven through ``try_acquire``
and one driven through ``acquire_or_refuse`` agree on every decision (``Admitted`` exactly
when ``None``; equal refusals) and on all their counters, and every ``Admitted`` carries the
client's pending count and tokens as the public readers tell them right after.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings, strategies as st

from erlmcp_py.core.policy import RatePolicy
from erlmcp_py.core.ratelimit import Admitted, RateLimiter, Refused

policies = st.builds(
    RatePolicy,
    rate=st.integers(1, 5),
    window_s=st.sampled_from([0.5, 1.0, 60.0]),
    capacity=st.integers(1, 4),
    max_pending_per_client=st.integers(1, 4),
    max_pending_global=st.one_of(st.none(), st.integers(1, 6)),
    prune_every=st.integers(1, 8),
)

ops = st.lists(
    st.tuples(
        st.sampled_from(["acquire", "acquire", "release"]),
        st.sampled_from(["a", "b", ("t", 1)]),
        st.floats(-1.0, 5.0),  # a step of the caller's clock (it may go back)
    ),
    max_size=60,
)


@settings(max_examples=300)
@given(policies, ops, st.floats(0, 1e6))
def test_acquire_or_refuse_agrees_with_try_acquire(
    policy: RatePolicy, steps: list[tuple[str, Any, float]], start: float
) -> None:
    full, lean = RateLimiter(policy), RateLimiter(policy)
    now = start
    for op, client, step in steps:
        now += step
        if op == "release":
            assert full.release(client) == lean.release(client)
            continue
        decision = full.try_acquire(client, now)
        refused = lean.acquire_or_refuse(client, now)
        if refused is None:
            assert isinstance(decision, Admitted)
            assert decision.pending == full.pending(client) == lean.pending(client)
            assert decision.tokens == full.tokens(client, now) == lean.tokens(client, now)
        else:
            assert isinstance(refused, Refused)
            assert decision == refused
        assert full.stats() == lean.stats()
