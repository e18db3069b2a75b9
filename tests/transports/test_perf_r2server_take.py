"""``MemoryClient._take``'s shortcut for the two common shapes (a request with params, a
result response: ``jsonrpc._fast_kind``) agrees with the general path it skips
(``_take_other``, through ``validate_message``): for random messages, two clients — one
taking every message with ``_take``, one with ``_take_other`` only — end with the same
requests seen and answered, the same responses delivered or unmatched, the same
notifications, refusals and log events."""

from __future__ import annotations

from typing import Any

import structlog.testing
import trio
from hypothesis import given, settings, strategies as st

from erlmcp_py.mcp.client import ClientRequestError, ServerRequest
from erlmcp_py.transports.memory import MemoryClient


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
        made._waiting[rid] = None  # not parked: a response goes to _early
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
        made._waiting,
        made._early,
        made.unmatched,
        made.notifications,
        made.refused,
    )


@settings(max_examples=400)
@given(st.lists(_messages, max_size=6))
def test_shortcut_agrees_with_the_general_path(messages: list[dict[str, Any]]) -> None:
    fast, fast_lane = client()
    general, general_lane = client()
    with structlog.testing.capture_logs() as fast_logs:
        for message in messages:
            fast._take(message)
    with structlog.testing.capture_logs() as general_logs:
        for message in messages:
            general._take_other(message)
    assert observed(fast, fast_lane) == observed(general, general_lane)
    assert fast_logs == general_logs


class Answering:
    """A client → server lane whose server answers every request inline, in the send."""

    def __init__(self) -> None:
        self.client: MemoryClient | None = None
        self.sent: list[Any] = []

    def send_nowait(self, message: Any) -> None:
        assert self.client is not None
        self.sent.append(message)
        self.client._deliver(message["id"], {"jsonrpc": "2.0", "id": message["id"], "result": {}})


async def test_a_response_that_comes_before_the_park_is_returned() -> None:
    lane = Answering()
    made = MemoryClient(
        None,  # type: ignore[arg-type]
        lane,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        handler=None,
        protocol_version="2025-11-25",
        capabilities={},
        keep_history=True,
    )
    lane.client = made
    with trio.fail_after(1):
        assert await made.request_raw("ping", id="p") == {"jsonrpc": "2.0", "id": "p", "result": {}}
        assert await made.call_tool("t") == {}
    assert made._waiting == {}
    assert made._early == {}
    assert [m["method"] for m in lane.sent] == ["ping", "tools/call"]
    with trio.CancelScope() as scope:  # cancelled before: nothing is sent
        scope.cancel()
        await made.call_tool("t")
    assert len(lane.sent) == 2
    assert made._waiting == {}
