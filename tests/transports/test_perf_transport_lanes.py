"""``_Lane.send_nowait``'s idle fast path agrees with the general path it shortcuts.

An idle lane (gate not busy; nothing held, queued or closed) takes a message inline without
going through :meth:`_Lane.deliver`'s re-checks. :class:`GeneralLane` below is the lane's
``send_nowait`` as it was written before that fast path (general steps only); a hypothesis
test drives both through the same random scripts — two lanes sharing a gate, takes that
accept or decline, send more while taking, or fail; a bounded channel that fills; a reader
finishing queued messages; a lane marked closed — and compares everything observable.
"""

from __future__ import annotations

import math
from typing import Any

import trio
from hypothesis import given, settings, strategies as st

from erlmcp_py.transports.memory import _Gate, _Lane


class GeneralLane(_Lane):
    """The general path only (``send_nowait`` before its idle fast path)."""

    __slots__ = ()

    def send_nowait(self, message: Any) -> None:
        gate = self.gate
        if self.holding or (gate.busy and self.holds and not self.closed):
            self.holding += 1
            gate.held.append((self, message))
            return
        if gate.busy:
            self.deliver(message)
            return
        try:
            self.deliver(message)
        finally:
            if gate.held:
                gate.drain()


class Boom(Exception):
    """A take that fails."""


#: What a take does with one message: accept it?, fail?, and what it sends meanwhile.
Script = dict[int, tuple[bool, bool, list[tuple[int, int]]]]

_behaviour = st.tuples(
    st.booleans(),
    st.integers(0, 9).map(lambda n: n == 0),  # fails now and then
    st.lists(st.tuples(st.integers(0, 1), st.integers(0, 30)), max_size=2),
)
_scripts = st.dictionaries(st.integers(0, 30), _behaviour, max_size=31)
_actions = st.lists(
    st.one_of(
        st.tuples(st.just("send"), st.integers(0, 1), st.integers(0, 30)),
        st.tuples(st.just("done"), st.integers(0, 1), st.just(0)),
        st.tuples(st.just("close"), st.integers(0, 1), st.just(0)),
    ),
    max_size=25,
)


def run(lane_type: type[_Lane], size: int, script: Script, actions: list[Any]) -> list[Any]:
    seen: list[Any] = []
    errors: list[str] = []
    gate = _Gate(lambda exc: errors.append(type(exc).__name__))
    channels = [trio.open_memory_channel[Any](math.inf), trio.open_memory_channel[Any](size)]
    lanes: list[_Lane] = []
    depth = [0]

    def taker(n: int) -> Any:
        def take(message: int) -> bool:
            accept, fail, sends = script.get(message, (True, False, []))
            depth[0] += 1
            seen.append(("offered", n, message, depth[0]))
            try:
                if not accept:
                    return False
                for lane, extra in sends:
                    if extra <= message:
                        continue  # only to later messages: a script never loops
                    try:
                        lanes[lane].send_nowait(extra)
                    except (trio.WouldBlock, trio.ClosedResourceError) as exc:
                        seen.append(("inner", lane, extra, type(exc).__name__))
                if fail:
                    raise Boom(message)
                return True
            finally:
                depth[0] -= 1

        return take

    for n, (send, _) in enumerate(channels):
        lanes.append(lane_type(send, gate, taker(n), holds=n == 0))
    for action, n, message in actions:
        lane = lanes[n]
        try:
            if action == "send":
                lane.send_nowait(message)
            elif action == "done":
                try:
                    seen.append(("reader", n, channels[n][1].receive_nowait()))
                except trio.WouldBlock:
                    continue
                lane.done()
            else:
                lane.closed = True
        except (Boom, trio.WouldBlock, trio.ClosedResourceError) as exc:
            seen.append(("raised", n, type(exc).__name__))
        seen.append(
            (
                [(x.queued, x.holding, x.closed) for x in lanes],
                gate.busy,
                [(lanes.index(x), m) for x, m in gate.held],
                list(errors),
                [c[1].statistics().current_buffer_used for c in channels],
            )
        )
    return seen


@settings(max_examples=400, deadline=None)
@given(st.integers(1, 3), _scripts, _actions)
def test_the_idle_fast_path_agrees_with_the_general_path(
    size: int, script: Script, actions: list[Any]
) -> None:
    assert run(_Lane, size, script, actions) == run(GeneralLane, size, script, actions)


def test_the_fast_path_is_exercised() -> None:
    """The comparison above would be vacuous if an idle lane never took inline."""
    seen = run(_Lane, 1, {}, [("send", 0, 1), ("send", 1, 2)])
    assert [s for s in seen if s[0] == "offered"] == [("offered", 0, 1, 1), ("offered", 1, 2, 1)]
