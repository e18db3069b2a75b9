"""Timers' bookkeeping shortcuts (a stale-entry count instead of a live count, the runner's
deadline mirrored in ``_wake_at``) agree with the plain facts after any sequence of arms,
re-arms, disarms and sleeps, and every current timer fires once, at its time, in order."""

from __future__ import annotations

from collections.abc import Callable

import trio
import trio.testing
from hypothesis import given, settings, strategies as st

from erlmcp_py.actors.timers import Timers


class Target:
    def __init__(self, key: str) -> None:
        self.timer_key = key
        self.timer_at: float | None = None


ops = st.lists(
    st.one_of(
        st.tuples(st.just("arm"), st.integers(0, 7), st.sampled_from([0.5, 1.0, 2.0, 3.0, 50.0])),
        st.tuples(st.just("disarm"), st.integers(0, 7), st.just(0.0)),
        st.tuples(st.just("sleep"), st.just(0), st.sampled_from([0.0, 0.5, 1.0, 2.5, 60.0])),
    ),
    max_size=120,
)


def _rearm_rule() -> Callable[[str, float], float | None]:
    """What firing a key re-arms: t0 a little later (3 times), t1 once in the past."""
    rearms = {"t0": 0, "t1": 0}

    def rearm(key: str, now: float) -> float | None:
        if key == "t0" and rearms[key] < 3:
            rearms[key] += 1
            return now + 0.25
        if key == "t1" and rearms[key] < 1:
            rearms[key] += 1
            return now - 1.0
        return None

    return rearm


@settings(max_examples=300, deadline=None)
@given(ops=ops, compact_often=st.booleans())
def test_bookkeeping_matches_the_targets_and_timers_fire_as_armed(
    ops: list[tuple[str, int, float]], compact_often: bool
) -> None:
    fired: list[tuple[float, str]] = []
    rearm = _rearm_rule()  # what the fire callback re-arms
    model_rearm = _rearm_rule()  # the same rule, counted separately for the model

    def fire(t: Target, now: float) -> None:
        fired.append((now, t.timer_key))
        again = rearm(t.timer_key, now)
        if again is not None:
            timers.arm(t, again)

    timers = Timers(fire)
    targets = [Target(f"t{i}") for i in range(8)]
    armed: dict[str, float] = {}  # the model: key -> absolute time
    expected: list[tuple[float, str]] = []

    def check() -> None:
        assert timers.live == sum(t.timer_at is not None for t in targets)
        assert timers.live == len(armed)
        for t in targets:
            assert t.timer_at == armed.get(t.timer_key)
            if t.timer_at is not None:
                assert (t.timer_at, t.timer_key, t) in timers._heap
        if timers._scope is not None:
            assert timers._wake_at == timers._scope.deadline
        else:
            assert timers._wake_at == float("-inf")
        assert len(timers) <= 2 * timers.live + 64 + 1

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(timers.run)
            await trio.testing.wait_all_tasks_blocked()
            for op, i, dt in ops:
                t = targets[i]
                now = trio.current_time()
                if op == "arm":
                    when = now + dt
                    for _ in range(40 if compact_often else 1):  # many stale entries
                        timers.arm(t, when + 1.0)
                        timers.arm(t, when)
                    armed[t.timer_key] = when
                elif op == "disarm":
                    timers.disarm(t)
                    armed.pop(t.timer_key, None)
                else:
                    end = now + dt
                    runner_now = -1.0  # the runner wakes at each due time (autojump)
                    while True:
                        due = sorted((w, k) for k, w in armed.items() if w <= end)
                        if not due:
                            break
                        w, k = due[0]
                        del armed[k]
                        runner_now = max(runner_now, w)  # a past entry fires at once
                        expected.append((runner_now, k))
                        again = model_rearm(k, runner_now)
                        if again is not None:
                            armed[k] = again
                    await trio.sleep(dt)
                    await trio.testing.wait_all_tasks_blocked()
                check()
            nursery.cancel_scope.cancel()

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    assert fired == expected
