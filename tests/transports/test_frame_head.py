"""Telling whose answer an oversize frame is from its first bytes, and never guessing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from erlmcp_py.transports._frame_head import HEAD_BYTES, FrameHead, frame_head

BIG = "x" * (HEAD_BYTES * 2)


@pytest.mark.parametrize(
    ("frame", "expected"),
    [
        ({"jsonrpc": "2.0", "id": "abc.1", "result": {"content": BIG}}, ("response", "abc.1")),
        ({"id": 7, "jsonrpc": "2.0", "error": {"code": 1, "message": BIG}}, ("response", 7)),
        ({"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"x": BIG}}, ("request", 3)),
        ({"jsonrpc": "2.0", "method": "ping", "params": {"x": BIG}}, ("request", None)),
        # the id after the result: not known from the head, so nothing is named
        ({"jsonrpc": "2.0", "result": {"content": BIG}, "id": "abc.1"}, (None, None)),
        # ids JSON-RPC does not allow here
        ({"jsonrpc": "2.0", "id": True, "result": {"x": BIG}}, (None, None)),
        ({"jsonrpc": "2.0", "id": 1.5, "result": {"x": BIG}}, (None, None)),
        ({"jsonrpc": "2.0", "id": None, "result": {"x": BIG}}, (None, None)),
    ],
)
def test_the_head_names_what_comes_before_the_first_structured_member(
    frame: dict[str, Any], expected: tuple[str | None, Any]
) -> None:
    assert frame_head(json.dumps(frame).encode()) == FrameHead(*expected)  # type: ignore[arg-type]


def test_escapes_whitespace_and_a_cut_head() -> None:
    assert frame_head(b' {\n "\\u0069d" : "q" ,"result":{') == FrameHead("response", "q")
    assert frame_head(b'{"jsonrpc":"2.0","id":12') == FrameHead(None, None)  # 12… or 123?
    assert frame_head(b'{"jsonrpc":"2.0","id":"ab') == FrameHead(None, None)
    assert frame_head(b"[1, 2, 3") == FrameHead(None, None)
    assert frame_head(b"") == FrameHead(None, None)
    assert frame_head(b'{"id":1,"result":true}') == FrameHead(None, None)


def test_only_the_head_is_looked_at() -> None:
    late = b'{"jsonrpc":"2.0","pad":"' + b"p" * HEAD_BYTES + b'","id":1,"result":{}}'
    assert frame_head(late) == FrameHead(None, None)


ids = st.one_of(st.text(max_size=20), st.integers(-(2**63), 2**63), st.booleans(), st.none())
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=20,
)
members = st.dictionaries(
    st.sampled_from(["jsonrpc", "id", "result", "error", "method", "params", "x"]),
    st.one_of(ids, json_values),
)


@settings(max_examples=400, deadline=None)
@given(frame=members, cut=st.integers(0, 400), pad=st.integers(0, HEAD_BYTES))
def test_a_response_is_named_only_when_the_whole_frame_is_that_response(
    frame: dict[str, Any], cut: int, pad: int
) -> None:
    """Soundness: whatever the frame and wherever it is cut, a named response answers the
    id named (a frame that also has a ``method`` after its ``result`` is malformed; naming
    its id ends at most that session's own request of that id)."""
    if "result" in frame and pad:
        frame = {**frame, "result": {"pad": "p" * pad, "was": frame["result"]}}
    text = json.dumps(frame, ensure_ascii=bool(cut % 2)).encode()
    head = frame_head(text[: len(text) - cut] if cut < len(text) else text)
    if head.kind == "response":
        assert "result" in frame or "error" in frame
        assert frame["id"] == head.id
        assert type(frame["id"]) is type(head.id)
    elif head.kind == "request":
        assert "method" in frame
        assert head.id is None or (frame["id"] == head.id and type(frame["id"]) is type(head.id))


def test_a_number_cut_by_the_head_names_no_id() -> None:
    assert frame_head(b'{"method": null, "id": 1') == FrameHead("request", None)
    assert frame_head(b'{"method": "x", "id": 10}') == FrameHead("request", 10)
    assert frame_head(b'{"method": "x", "id": 12, "params": {') == FrameHead("request", 12)
