"""The elicitation shell reads ``record.outcome is not None`` as "terminal" instead of the
lifecycle's ``is_terminal`` property. That holds while the lifecycle emits :class:`Resolve`
first on exactly the transitions into a terminal status (``Record.apply`` sets ``outcome``
from it before anything else runs); this pins it for every reachable transition."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings, strategies as st

from erlmcp_py.core.lifecycle import DeadlineReached, Elicitation, Resolve, WarningDue
from tests.actors.test_perf_actors_sent import POLICY, _event, events


@settings(max_examples=400, deadline=None)
@given(start=st.booleans(), steps=st.lists(events, max_size=30))
def test_resolve_comes_first_exactly_when_the_lifecycle_ends(
    start: bool, steps: list[tuple[str, Any]]
) -> None:
    now = 1000.0
    e = Elicitation(POLICY, now)

    def check(effects: list[Any], was_terminal: bool) -> None:
        resolves = [i for i, effect in enumerate(effects) if type(effect) is Resolve]
        if not was_terminal and e.is_terminal:
            assert resolves == [0]
            assert effects[0].outcome == e.outcome
        else:
            assert resolves == []

    if start:
        was = e.is_terminal
        check(e.start(), was)
    for kind, arg in steps:
        if kind == "time":
            now += arg
            for event in (WarningDue(now), DeadlineReached(now)):
                was = e.is_terminal
                check(e.handle(event), was)
        else:
            was = e.is_terminal
            check(e.handle(_event(kind, arg, now)), was)
