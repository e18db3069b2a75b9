"""The elicitation child skips feeding ``Sent`` when no request is outstanding any more
(``core.awaiting_answer`` is false: the client answered inside the send, or the record
ended). That is only right while the lifecycle ignores such a ``Sent``; this pins it: from
any reachable state without an outstanding request, ``Sent`` returns no effect and changes
nothing observable.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings, strategies as st

from erlmcp_py.core.lifecycle import (
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

POLICY = LifecyclePolicy(form_deadline_s=300.0, warn_before_s=60.0, max_reprompts=2)


def _observable(e: Elicitation) -> tuple[Any, ...]:
    return (
        e.status,
        e.sent_at,
        e.deadline,
        e.warn_at,
        e.extensions_used,
        e.reprompts_used,
        e.awaiting_answer,
        e.validating,
        e.outcome,
        e.is_terminal,
        repr(e),
    )


events = st.one_of(
    st.builds(lambda dt: ("sent", dt), st.floats(0, 50)),
    st.sampled_from(
        [
            ("answer", "accept"),
            ("answer", "decline"),
            ("answer", "cancel"),
            ("valid", True),
            ("valid", False),
            ("owner", None),
            ("cancel", "server"),
            ("cancel", "client"),
            ("restart", None),
            ("transport", None),
            ("extend", None),
        ]
    ),
    st.builds(lambda dt: ("time", dt), st.sampled_from([1.0, 100.0, 240.0, 300.0, 600.0])),
)


def _event(kind: str, arg: Any, now: float) -> Any:
    if kind == "sent":
        return Sent(now)
    if kind == "answer":
        return Answer(arg, {"name": "x"} if arg == "accept" else None)
    if kind == "valid":
        return Validated(True, (), {"name": "x"}) if arg else Validated(False, ("bad",))
    if kind == "owner":
        return OwnerDown()
    if kind == "cancel":
        return Cancel(by=arg)
    if kind == "restart":
        return RuntimeRestart()
    if kind == "transport":
        return TransportFailed("gone")
    return Extend(now)


@settings(max_examples=400, deadline=None)
@given(start=st.booleans(), steps=st.lists(events, max_size=30))
def test_a_sent_without_an_outstanding_request_changes_nothing(
    start: bool, steps: list[tuple[str, Any]]
) -> None:
    now = 1000.0
    e = Elicitation(POLICY, now)
    if start:
        e.start()
    for kind, arg in steps:
        if kind == "time":
            now += arg
            e.handle(WarningDue(now))
            e.handle(DeadlineReached(now))
        else:
            e.handle(_event(kind, arg, now))
        if not e.awaiting_answer:
            before = _observable(e)
            assert e.handle(Sent(now + 0.5)) == []
            assert _observable(e) == before


def test_the_answer_inside_the_send_case() -> None:
    e = Elicitation(POLICY, 0.0)
    e.start()
    e.handle(Answer("accept", {"name": "x"}))  # answered before the send returned
    assert not e.awaiting_answer
    before = _observable(e)
    assert e.handle(Sent(0.1)) == []
    assert _observable(e) == before
