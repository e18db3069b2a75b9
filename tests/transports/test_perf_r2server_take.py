"""``MemoryClient._take``'s shortcut for the two common shapes (a request with params, a
result response: ``jsonrpc._fast_kind``) agrees with the general path it skips
(``_take_other``, through ``validate_message``): for random messages, two clients — one
taking every message with ``_take``, one with ``_take_other`` only — end with the same
requests seen and answered, the same responses delivered or unmatched, the same
notifications, refusals and log events."""

from __future__ import annotations

from typing import Any

import structlog.testing
from hypothesis import given, settings, strategies as st

from erlmcp_py.mcp.client import ClientRequestError, ServerRequest
from erlmcp_py.transports.memory import MemoryClient, _Slot


class Recorder:
    """Stands for the client → server lane: records every reply."""

    def __init__(self) -> None:
        self.sent: list[Any] = []

    def send_nowait(self, message: Any) -> None:
        self.sent.append(message)


def handler(request: ServerRequest) -> dict[str, Any] | None:
    if request.method == "refuse":
        raise ClientRequestError(-1, "no")
    if request.method == "ignore":
        return None
    return {"seen": request.method, "params": request.params}


def client() -> tuple[MemoryClient, Recorder]:
    lane = Recorder()
    made = MemoryClient(
        None,  # type: ignore[arg-type]  # not used by _take
        lane,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]  # a plain handler: no task is started
        handler=handler,
        protocol_version="2025-11-25",
        capabilities={},
        keep_history=True,
    )
    for rid in ("a", 1):  # two of our requests are waiting
        made._waiting[rid] = _Slot()
    return made, lane


_values = st.one_of(
    st.just("2.0"),
    st.just("1.0"),
    st.sampled_from(["elicitation/create", "ping", "refuse", "ignore"]),
    st.just(True),
    st.just(None),
    st.sampled_from(["a", 1, 2, "b"]),
    st.just({}),
    st.just([]),
    st.just([1]),
    st.just({"a": 1}),
    st.just({"code": 1, "message": "m"}),
)
_keys = st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error"])
# Mostly valid: every member right but one, now and then.
_nearly = {
    "jsonrpc": st.sampled_from(["2.0", "2.0", "2.0", "1.0"]),
    "id": st.sampled_from(["a", 1, 2, "b", True, None, 1.0]),
    "method": st.sampled_from(["elicitation/create", "ping", "refuse", "ignore", 5]),
    "params": st.sampled_from([{}, {"a": 1}, [], [1, 2], None, "x"]),
    "result": st.sampled_from([{}, {"action": "accept"}, [], None]),
}
_messages = st.one_of(
    st.fixed_dictionaries({k: _nearly[k] for k in ("jsonrpc", "id", "method", "params")}),
    st.fixed_dictionaries({k: _nearly[k] for k in ("jsonrpc", "id", "result")}),
    st.fixed_dictionaries({k: _values for k in ("jsonrpc", "id", "method", "params")}),
    st.fixed_dictionaries({k: _values for k in ("jsonrpc", "id", "result")}),
    st.dictionaries(_keys, _values, max_size=6),
)


def observed(made: MemoryClient, lane: Recorder) -> Any:
    return (
        [(r.id, r.method, r.params) for r in made.server_requests],
        lane.sent,
        {rid: slot.response for rid, slot in made._waiting.items()},
        made.unmatched,
        made.notifications,
        made.refused,
    )


@settings(max_examples=400)
@given(st.lists(_messages, max_size=6))
def test_shortcut_agrees_with_the_general_path(messages: list[dict[str, Any]]) -> None:
    fast, fast_lane = client()
    general, general_lane = client()
    delivered_fast = dict(fast._waiting)
    delivered_general = dict(general._waiting)
    with structlog.testing.capture_logs() as fast_logs:
        for message in messages:
            fast._take(message)
    with structlog.testing.capture_logs() as general_logs:
        for message in messages:
            general._take_other(message)
    assert observed(fast, fast_lane) == observed(general, general_lane)
    assert {rid: s.response for rid, s in delivered_fast.items()} == {
        rid: s.response for rid, s in delivered_general.items()
    }
    assert fast_logs == general_logs
