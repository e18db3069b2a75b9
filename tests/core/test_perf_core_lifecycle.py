"""The lifecycle keeps ``is_terminal`` and ``warn_at`` in slots as the machine moves: they must
always equal their definitions (terminal status; deadline minus the warning lead)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings, strategies as st

from erlmcp_py.core.lifecycle import (
    TERMINAL,
    Answer,
    Cancel,
    DeadlineReached,
    Elicitation,
    Extend,
    OwnerDown,
    RuntimeRestart,
    Sent,
    TransportFailed,
    Validated,
    WarningDue,
)
from erlmcp_py.core.policy import LifecyclePolicy

_times = st.floats(0, 2000, allow_nan=False)
_events = st.one_of(
    _times.map(Sent),
    st.sampled_from(["accept", "decline", "cancel"]).map(lambda a: Answer(a, {"x": 1})),  # type: ignore[arg-type]
    st.booleans().map(lambda ok: Validated(ok, () if ok else ("bad",), {"x": 1})),
    _times.map(WarningDue),
    _times.map(DeadlineReached),
    st.builds(Extend, _times, st.none() | st.floats(1, 500)),
    st.just(OwnerDown()),
    st.just(Cancel()),
    st.just(RuntimeRestart()),
    st.just(TransportFailed("x")),
)


def _check(e: Elicitation, policy: LifecyclePolicy) -> None:
    assert e.is_terminal == (e.status in TERMINAL)
    expected = None if policy.warn_before_s == 0 else e.deadline - policy.warn_before_s
    assert e.warn_at == expected


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from([0.0, 10.0, 60.0]),
    st.integers(0, 3),
    st.sampled_from(["form", "url"]),
    st.booleans(),
    st.lists(_events, max_size=12),
)
def test_kept_readers_match_their_definitions(
    warn: float, extensions: int, mode: Any, start: bool, events: list[Any]
) -> None:
    policy = LifecyclePolicy(warn_before_s=warn, max_extensions=extensions, max_reprompts=1)
    e = Elicitation(policy, 100.0, mode=mode)
    _check(e, policy)
    if start:
        e.start()
        _check(e, policy)
    for event in events:
        e.handle(event)
        _check(e, policy)


def test_readers_are_read_only() -> None:
    e = Elicitation(LifecyclePolicy(), 0.0)
    for name in ("status", "created_at", "sent_at", "deadline", "warn_at", "is_terminal"):
        try:
            setattr(e, name, None)
        except AttributeError:
            continue
        raise AssertionError(f"{name} is writable")
