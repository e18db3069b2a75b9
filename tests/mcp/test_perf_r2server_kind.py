"""``jsonrpc._fast_kind``: ``validate_message``'s fast paths without the message value (the
in-memory pair reads the members from the object itself). Pinned against
``validate_message``: whenever it names a kind, ``validate_message`` returns exactly the value
built from those members; and the common shapes are named. Also pinned: the session's
shortcut for a session-era ``tools/call`` (no ``_meta`` at all) is exactly where
``is_modern_request`` says "not modern"."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings, strategies as st

from erlmcp_py.mcp import jsonrpc as j
from erlmcp_py.mcp.jsonrpc import JsonRpcError, Request, Response
from erlmcp_py.mcp.meta import PROTOCOL_VERSION, is_modern_request

_values = st.one_of(
    st.just("2.0"),
    st.just("1.0"),
    st.just("tools/call"),
    st.just(True),
    st.just(False),
    st.just(None),
    st.just(1.0),
    st.integers(-2, 2),
    st.text(max_size=3),
    st.just({}),
    st.just([]),
    st.just({"a": 1}),
    st.just(()),
)
_keys = st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error", "x"])
_shaped = st.one_of(
    st.fixed_dictionaries({k: _values for k in ("jsonrpc", "id", "method", "params")}),
    st.fixed_dictionaries({k: _values for k in ("jsonrpc", "id", "result")}),
    st.dictionaries(_keys, _values, max_size=6),
    _values,
    st.lists(_values, max_size=2),
)


def _validated(value: object) -> object:
    try:
        return j.validate_message(value)
    except JsonRpcError as exc:
        return exc


@settings(max_examples=600)
@given(_shaped)
def test_fast_kind_agrees_with_validate_message(value: Any) -> None:
    kind = j._fast_kind(value)
    got = _validated(value)
    if kind == j._REQUEST:
        assert type(got) is Request
        assert got == Request(value["id"], value["method"], value["params"])
    elif kind == j._RESULT:
        assert type(got) is Response
        assert got == Response(value["id"], value["result"])
    else:
        assert kind == j._OTHER
        # Not a shape the fast paths take: never a request with params or a bare result.
        if type(got) is Request:
            assert set(value) != {"jsonrpc", "id", "method", "params"}
        if type(got) is Response:
            assert set(value) != {"jsonrpc", "id", "result"}


def test_common_shapes_are_named() -> None:
    request = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "x"}}
    assert j._fast_kind(request) == j._REQUEST
    assert j._fast_kind({**request, "params": []}) == j._REQUEST
    response = {"jsonrpc": "2.0", "id": "e.1", "result": {"action": "accept"}}
    assert j._fast_kind(response) == j._RESULT
    assert j._fast_kind({**request, "id": True}) == j._OTHER
    assert j._fast_kind({**response, "id": None}) == j._OTHER
    assert j._fast_kind({"jsonrpc": "2.0", "method": "notifications/initialized"}) == j._OTHER


_meta = st.one_of(
    st.none(),
    st.just({}),
    st.just({PROTOCOL_VERSION: "2026-07-28"}),
    st.just({"progressToken": 1}),
    st.just([]),
    st.just("x"),
)
_params = st.one_of(
    st.fixed_dictionaries({"name": st.just("t")}, optional={"_meta": _meta}),
    st.lists(st.integers(), max_size=2),
)


@given(_params)
def test_no_meta_is_exactly_where_a_tools_call_is_not_modern(params: Any) -> None:
    """The session's shortcut takes a ``tools/call`` as session-era when its params are an
    object without ``_meta`` (or with ``_meta: null``): is_modern_request agrees."""
    shortcut = type(params) is dict and params.get("_meta") is None
    if shortcut:
        assert not is_modern_request(Request(1, "tools/call", params))
