"""``ToolClock``: a tool's own time budget, paused while a human is asked.

``pause()`` blocks nest and overlap (a count), the budget left is kept while paused and
restored when the last block ends, and without a budget nothing but the count changes.
"""

from __future__ import annotations

import math

import pytest
import trio
import trio.lowlevel
import trio.testing

from erlmcp_py.mcp.stopwatch import ToolClock


async def test_nested_pauses_keep_the_budget_until_the_last_one_ends(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with trio.CancelScope() as scope:
        clock = ToolClock(scope, 10.0)
        start = trio.current_time()
        assert scope.deadline == start + 10.0
        await trio.sleep(3)
        with clock.pause():
            assert clock.paused
            assert scope.deadline == math.inf
            with clock.pause():
                await trio.sleep(100)
            assert clock.paused  # the outer block still pauses
            assert clock.remaining() == 7.0
            await trio.sleep(100)
        assert not clock.paused
        assert scope.deadline == trio.current_time() + 7.0
        assert clock.remaining() == 7.0
        await trio.sleep(6)
        assert clock.remaining() == 1.0
    assert not scope.cancelled_caught


async def paused_then_fail(clock: ToolClock) -> None:
    with clock.pause():
        await trio.sleep(50)
        raise KeyError("x")


async def test_a_pause_ended_by_an_exception_still_restarts_the_clock(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with trio.CancelScope() as scope:
        clock = ToolClock(scope, 5.0)
        with pytest.raises(KeyError):
            await paused_then_fail(clock)
        assert not clock.paused
        assert scope.deadline == trio.current_time() + 5.0


async def test_without_a_budget_only_the_count_changes() -> None:
    with trio.CancelScope() as scope:
        await trio.lowlevel.checkpoint()
        clock = ToolClock(scope, None)
        assert scope.deadline == math.inf
        with clock.pause(), clock.pause():
            assert clock.paused
            assert clock.remaining() == math.inf
        assert not clock.paused
        assert scope.deadline == math.inf


async def test_the_budget_runs_out_when_nobody_is_asked(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with trio.CancelScope() as scope:
        ToolClock(scope, 2.0)
        await trio.sleep(5)
    assert scope.cancelled_caught
