"""Pure supervision policy: plain functions, no trio."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from supervisors import ExitKind, Restart, RestartIntensity, Strategy, should_restart, victims


@pytest.mark.parametrize(
    ("restart", "exit_kind", "expected"),
    [
        (Restart.PERMANENT, ExitKind.NORMAL, True),
        (Restart.PERMANENT, ExitKind.CRASHED, True),
        (Restart.PERMANENT, ExitKind.SHUTDOWN, False),
        (Restart.TRANSIENT, ExitKind.NORMAL, False),
        (Restart.TRANSIENT, ExitKind.CRASHED, True),
        (Restart.TRANSIENT, ExitKind.SHUTDOWN, False),
        (Restart.TEMPORARY, ExitKind.NORMAL, False),
        (Restart.TEMPORARY, ExitKind.CRASHED, False),
        (Restart.TEMPORARY, ExitKind.SHUTDOWN, False),
    ],
)
def test_should_restart(restart: Restart, exit_kind: ExitKind, expected: bool) -> None:
    assert should_restart(restart, exit_kind) is expected


@pytest.mark.parametrize(
    ("strategy", "failed", "expected"),
    [
        (Strategy.ONE_FOR_ONE, "b", ["b"]),
        (Strategy.ONE_FOR_ALL, "b", ["a", "b", "c", "d"]),
        (Strategy.REST_FOR_ONE, "b", ["b", "c", "d"]),
        (Strategy.REST_FOR_ONE, "a", ["a", "b", "c", "d"]),
        (Strategy.REST_FOR_ONE, "d", ["d"]),
    ],
)
def test_victims(strategy: Strategy, failed: str, expected: list[str]) -> None:
    assert victims(strategy, ["a", "b", "c", "d"], failed) == expected


def test_victims_unknown_child() -> None:
    with pytest.raises(ValueError):
        victims(Strategy.ONE_FOR_ONE, ["a"], "zz")


def test_intensity_zero_means_first_restart_escalates() -> None:
    assert RestartIntensity(0, 5).add_restart(0.0) is False


def test_intensity_counts_within_window_only() -> None:
    intensity = RestartIntensity(2, 10)
    assert intensity.add_restart(0.0)
    assert intensity.add_restart(5.0)
    assert not intensity.add_restart(9.0)  # three within 10 s
    fresh = RestartIntensity(2, 10)
    for t in (0.0, 5.0, 10.0, 15.0, 20.0):  # window (t-10, t] never holds three
        assert fresh.add_restart(t)
    assert fresh.restarts_in_window(20.0) == 2


@pytest.mark.parametrize(("max_restarts", "max_seconds"), [(-1, 5), (1, 0), (1, -3)])
def test_intensity_rejects_bad_config(max_restarts: int, max_seconds: float) -> None:
    with pytest.raises(ValueError):
        RestartIntensity(max_restarts, max_seconds)


@given(
    max_restarts=st.integers(0, 5),
    max_seconds=st.integers(1, 20),
    gaps=st.lists(st.integers(0, 15), min_size=1, max_size=40),
)
def test_intensity_matches_brute_force(
    max_restarts: int, max_seconds: int, gaps: list[int]
) -> None:
    intensity = RestartIntensity(max_restarts, max_seconds)
    now, stamps = 0, []
    for gap in gaps:
        now += gap
        stamps.append(now)
        in_window = [t for t in stamps if t > now - max_seconds]
        ok = intensity.add_restart(float(now))
        assert ok == (len(in_window) <= max_restarts)
        if not ok:
            break
