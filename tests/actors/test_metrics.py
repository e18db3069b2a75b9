"""``Metrics.pending`` is derived from the counters: for any sequence of metric calls it is
the ``on_created`` calls minus the ``on_outcome`` calls that are not ``Unsupported``, in the
attribute and in ``snapshot()``.
"""

from __future__ import annotations

from hypothesis import given, strategies as st

from erlmcp_py.actors._metrics import Metrics

calls = st.lists(
    st.tuples(
        st.sampled_from(["created", "outcome", "unsupported", "refused", "latency"]),
        st.sampled_from(["form", "url"]),
        st.sampled_from(["Accepted", "Declined", "Failed", "TimedOut", "Unsupported"]),
    ),
    max_size=50,
)


@given(calls)
def test_pending_is_created_minus_ended(steps: list[tuple[str, str, str]]) -> None:
    metrics = Metrics()
    gauge = 0  # an independent count of what is pending
    for call, mode, outcome in steps:
        if call == "created":
            metrics.on_created(mode)
            gauge += 1
        elif call == "outcome":
            metrics.on_outcome(mode, outcome)
            gauge -= 1
        elif call == "unsupported":
            metrics.on_unsupported(mode)
        elif call == "refused":
            metrics.on_refused("rate")
        else:
            metrics.on_answer_latency(2.5)
        assert metrics.pending == gauge
        assert metrics.snapshot()["pending"] == gauge
