"""JSON-RPC codec: every valid shape, every error code, and properties over random JSON."""

from __future__ import annotations

import json
import math
from typing import Any, Literal

import pydantic
import pytest
from hypothesis import given, settings, strategies as st

from erlmcp_py.core.errors import ErlmcpError
from erlmcp_py.mcp import jsonrpc as j
from erlmcp_py.mcp.jsonrpc import (
    EncodeError,
    ErrorResponse,
    FrameTooLarge,
    IdAllocator,
    JsonRpcError,
    Notification,
    Request,
    Response,
)

CODES = {j.PARSE_ERROR, j.INVALID_REQUEST}

# ---------------------------------------------------------------------------------------------
# Valid shapes

VALID: list[tuple[str, Any, j.Message]] = [
    (
        "request, int id, object params",
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x"}},
        Request(1, "tools/call", {"name": "x"}),
    ),
    (
        "request, str id, no params",
        {"jsonrpc": "2.0", "id": "abc", "method": "ping"},
        Request("abc", "ping"),
    ),
    ("request, id 0", {"jsonrpc": "2.0", "id": 0, "method": "ping"}, Request(0, "ping")),
    ("request, negative id", {"jsonrpc": "2.0", "id": -7, "method": "m"}, Request(-7, "m")),
    ("request, empty str id", {"jsonrpc": "2.0", "id": "", "method": "m"}, Request("", "m")),
    (
        "request, huge int id",
        {"jsonrpc": "2.0", "id": 2**80, "method": "m"},
        Request(2**80, "m"),
    ),
    (
        "request, array params",
        {"jsonrpc": "2.0", "id": 3, "method": "m", "params": [1, "a", None]},
        Request(3, "m", [1, "a", None]),
    ),
    (
        "request, empty params",
        {"jsonrpc": "2.0", "id": 3, "method": "m", "params": {}},
        Request(3, "m", {}),
    ),
    (
        "request, unknown member ignored",
        {"jsonrpc": "2.0", "id": 3, "method": "m", "x-extra": 1},
        Request(3, "m"),
    ),
    (
        "notification",
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        Notification("notifications/initialized"),
    ),
    (
        "notification with params",
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
        Notification("notifications/cancelled", {"requestId": 1}),
    ),
    (
        "response",
        {"jsonrpc": "2.0", "id": "srv-1-1", "result": {"action": "accept", "content": {"a": 1}}},
        Response("srv-1-1", {"action": "accept", "content": {"a": 1}}),
    ),
    ("response, empty result", {"jsonrpc": "2.0", "id": 5, "result": {}}, Response(5, {})),
    (
        "error response",
        {"jsonrpc": "2.0", "id": 5, "error": {"code": -32601, "message": "nope"}},
        ErrorResponse(5, -32601, "nope"),
    ),
    (
        "error response with data",
        {"jsonrpc": "2.0", "id": "a", "error": {"code": 7, "message": "m", "data": [1]}},
        ErrorResponse("a", 7, "m", [1]),
    ),
    (
        "error response, null id",
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}},
        ErrorResponse(None, -32700, "Parse error"),
    ),
    (
        "error response, no id",
        {"jsonrpc": "2.0", "error": {"code": -32600, "message": "bad"}},
        ErrorResponse(None, -32600, "bad"),
    ),
]


@pytest.mark.parametrize(("frame", "expected"), [v[1:] for v in VALID], ids=[v[0] for v in VALID])
def test_valid_shapes(frame: Any, expected: j.Message) -> None:
    raw = json.dumps(frame)
    assert j.parse(raw.encode()) == expected
    assert j.parse(raw) == expected
    assert j.parse(bytearray(raw.encode())) == expected
    assert j.parse(memoryview(raw.encode())) == expected
    assert j.validate_message(frame) == expected


def test_whitespace_and_trailing_newline_allowed() -> None:
    assert j.parse(b'  {"jsonrpc":"2.0","method":"m"}\r\n') == Notification("m")


def test_non_ascii_text() -> None:
    msg = j.parse('{"jsonrpc":"2.0","id":"é","method":"m","params":{"t":"日本 🎉"}}'.encode())
    assert msg == Request("é", "m", {"t": "日本 🎉"})


def test_messages_are_frozen_and_slotted() -> None:
    req = Request(1, "m")
    with pytest.raises(AttributeError):
        req.id = 2  # type: ignore[misc]
    assert not hasattr(req, "__dict__")


# ---------------------------------------------------------------------------------------------
# Errors: code, and which id the error carries

ERRORS: list[tuple[str, bytes, int, Any, Any]] = [
    # (name, frame, code, id, response_id)
    ("empty", b"", j.PARSE_ERROR, None, None),
    ("whitespace only", b"  \n", j.PARSE_ERROR, None, None),
    ("truncated", b'{"jsonrpc":"2.0","id":1,', j.PARSE_ERROR, None, None),
    ("trailing garbage", b'{"jsonrpc":"2.0","method":"m"} x', j.PARSE_ERROR, None, None),
    ("two objects", b'{"jsonrpc":"2.0","method":"m"}{}', j.PARSE_ERROR, None, None),
    ("single quotes", b"{'jsonrpc':'2.0'}", j.PARSE_ERROR, None, None),
    ("NaN literal", b'{"jsonrpc":"2.0","method":"m","params":[NaN]}', j.PARSE_ERROR, None, None),
    ("Infinity", b'{"jsonrpc":"2.0","method":"m","params":[Infinity]}', j.PARSE_ERROR, None, None),
    (
        "-Infinity",
        b'{"jsonrpc":"2.0","method":"m","params":[-Infinity]}',
        j.PARSE_ERROR,
        None,
        None,
    ),
    ("invalid UTF-8 start", b'\xff{"jsonrpc":"2.0"}', j.PARSE_ERROR, None, None),
    ("invalid UTF-8 in string", b'{"jsonrpc":"2.0","method":"m\xc3"}', j.PARSE_ERROR, None, None),
    (
        "UTF-8 encoded surrogate",
        b'{"jsonrpc":"2.0","method":"\xed\xa0\x80"}',
        j.PARSE_ERROR,
        None,
        None,
    ),
    ("escaped lone surrogate", b'{"jsonrpc":"2.0","method":"\\ud800"}', j.PARSE_ERROR, None, None),
    ("UTF-16 frame", '{"jsonrpc":"2.0","method":"m"}'.encode("utf-16"), j.PARSE_ERROR, None, None),
    ("UTF-8 BOM", b'\xef\xbb\xbf{"jsonrpc":"2.0","method":"m"}', j.PARSE_ERROR, None, None),
    ("raw newline in string", b'{"jsonrpc":"2.0","method":"a\nb"}', j.PARSE_ERROR, None, None),
    ("too deep", b"[" * 300 + b"]" * 300, j.PARSE_ERROR, None, None),
    ("comment", b'{"jsonrpc":"2.0","method":"m"} // c', j.PARSE_ERROR, None, None),
    # -32600: not an object
    ("batch", b'[{"jsonrpc":"2.0","method":"m"}]', j.INVALID_REQUEST, None, None),
    ("empty batch", b"[]", j.INVALID_REQUEST, None, None),
    ("string", b'"hello"', j.INVALID_REQUEST, None, None),
    ("number", b"42", j.INVALID_REQUEST, None, None),
    ("null", b"null", j.INVALID_REQUEST, None, None),
    ("true", b"true", j.INVALID_REQUEST, None, None),
    ("empty object", b"{}", j.INVALID_REQUEST, None, None),
    # -32600: jsonrpc member
    ("no jsonrpc", b'{"id":1,"method":"m"}', j.INVALID_REQUEST, 1, None),
    ("jsonrpc 1.0", b'{"jsonrpc":"1.0","id":1,"method":"m"}', j.INVALID_REQUEST, 1, None),
    ("jsonrpc number", b'{"jsonrpc":2.0,"id":1,"method":"m"}', j.INVALID_REQUEST, 1, None),
    ("jsonrpc null", b'{"jsonrpc":null,"method":"m"}', j.INVALID_REQUEST, None, None),
    # -32600: ids on requests
    ("null id", b'{"jsonrpc":"2.0","id":null,"method":"m"}', j.INVALID_REQUEST, None, None),
    ("bool id", b'{"jsonrpc":"2.0","id":true,"method":"m"}', j.INVALID_REQUEST, None, None),
    ("float id", b'{"jsonrpc":"2.0","id":1.5,"method":"m"}', j.INVALID_REQUEST, None, None),
    (
        "integral float id",
        b'{"jsonrpc":"2.0","id":1.0,"method":"m"}',
        j.INVALID_REQUEST,
        None,
        None,
    ),
    ("object id", b'{"jsonrpc":"2.0","id":{},"method":"m"}', j.INVALID_REQUEST, None, None),
    ("array id", b'{"jsonrpc":"2.0","id":[1],"method":"m"}', j.INVALID_REQUEST, None, None),
    # -32600: method
    ("method null", b'{"jsonrpc":"2.0","id":1,"method":null}', j.INVALID_REQUEST, 1, None),
    ("method number", b'{"jsonrpc":"2.0","id":"a","method":5}', j.INVALID_REQUEST, "a", None),
    ("method object", b'{"jsonrpc":"2.0","method":{}}', j.INVALID_REQUEST, None, None),
    # -32600: params
    (
        "params string",
        b'{"jsonrpc":"2.0","id":1,"method":"m","params":"x"}',
        j.INVALID_REQUEST,
        1,
        None,
    ),
    (
        "params number",
        b'{"jsonrpc":"2.0","id":1,"method":"m","params":3}',
        j.INVALID_REQUEST,
        1,
        None,
    ),
    (
        "params null",
        b'{"jsonrpc":"2.0","id":1,"method":"m","params":null}',
        j.INVALID_REQUEST,
        1,
        None,
    ),
    (
        "params bool",
        b'{"jsonrpc":"2.0","method":"m","params":false}',
        j.INVALID_REQUEST,
        None,
        None,
    ),
    # -32600: mixed shapes
    (
        "method+result",
        b'{"jsonrpc":"2.0","id":1,"method":"m","result":{}}',
        j.INVALID_REQUEST,
        1,
        None,
    ),
    (
        "method+error",
        b'{"jsonrpc":"2.0","id":1,"method":"m","error":{}}',
        j.INVALID_REQUEST,
        1,
        None,
    ),
    (
        "result+error",
        b'{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}',
        j.INVALID_REQUEST,
        None,
        1,
    ),
    ("id only", b'{"jsonrpc":"2.0","id":4}', j.INVALID_REQUEST, 4, None),
    # -32600: responses
    ("result without id", b'{"jsonrpc":"2.0","result":{}}', j.INVALID_REQUEST, None, None),
    ("result null id", b'{"jsonrpc":"2.0","id":null,"result":{}}', j.INVALID_REQUEST, None, None),
    ("result bool id", b'{"jsonrpc":"2.0","id":false,"result":{}}', j.INVALID_REQUEST, None, None),
    (
        "result not object",
        b'{"jsonrpc":"2.0","id":"s-1","result":5}',
        j.INVALID_REQUEST,
        None,
        "s-1",
    ),
    ("result null", b'{"jsonrpc":"2.0","id":9,"result":null}', j.INVALID_REQUEST, None, 9),
    ("result array", b'{"jsonrpc":"2.0","id":9,"result":[]}', j.INVALID_REQUEST, None, 9),
    ("result, no jsonrpc", b'{"id":9,"result":{}}', j.INVALID_REQUEST, None, 9),
    # -32600: error responses
    ("error not object", b'{"jsonrpc":"2.0","id":2,"error":"bad"}', j.INVALID_REQUEST, None, 2),
    (
        "error no code",
        b'{"jsonrpc":"2.0","id":2,"error":{"message":"m"}}',
        j.INVALID_REQUEST,
        None,
        2,
    ),
    (
        "error float code",
        b'{"jsonrpc":"2.0","id":2,"error":{"code":1.5,"message":"m"}}',
        j.INVALID_REQUEST,
        None,
        2,
    ),
    (
        "error bool code",
        b'{"jsonrpc":"2.0","id":2,"error":{"code":true,"message":"m"}}',
        j.INVALID_REQUEST,
        None,
        2,
    ),
    (
        "error no message",
        b'{"jsonrpc":"2.0","id":2,"error":{"code":1}}',
        j.INVALID_REQUEST,
        None,
        2,
    ),
    (
        "error message not str",
        b'{"jsonrpc":"2.0","error":{"code":1,"message":[]}}',
        j.INVALID_REQUEST,
        None,
        None,
    ),
    (
        "error bad id",
        b'{"jsonrpc":"2.0","id":[],"error":{"code":1,"message":"m"}}',
        j.INVALID_REQUEST,
        None,
        None,
    ),
]


@pytest.mark.parametrize(
    ("frame", "code", "rid", "response_id"), [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS]
)
def test_error_codes(frame: bytes, code: int, rid: Any, response_id: Any) -> None:
    with pytest.raises(JsonRpcError) as info:
        j.parse(frame)
    err = info.value
    assert err.code == code
    assert err.id == rid
    assert err.response_id == response_id
    assert isinstance(err, ErlmcpError)
    # The error answers itself as a well-formed frame (never echoing the input).
    answer = json.loads(err.encode())
    assert answer["jsonrpc"] == "2.0"
    assert answer["id"] == rid
    assert answer["error"]["code"] == code
    assert isinstance(answer["error"]["message"], str)


def test_str_with_lone_surrogate_is_a_parse_error() -> None:
    with pytest.raises(JsonRpcError) as info:
        j.parse('{"jsonrpc":"2.0","method":"\udc80"}')
    assert info.value.code == j.PARSE_ERROR


def test_batch_message_says_why() -> None:
    with pytest.raises(JsonRpcError) as info:
        j.parse(b"[]")
    assert "batch" in info.value.data["detail"]


def test_huge_number_decodes_like_javascript() -> None:
    msg = j.parse(b'{"jsonrpc":"2.0","method":"m","params":[1e400]}')
    assert isinstance(msg, Notification)
    assert msg.params == [math.inf]
    with pytest.raises(EncodeError):
        j.encode(msg)


# ---------------------------------------------------------------------------------------------
# Frame size limit


def test_frame_limit_default_is_4_mib() -> None:
    assert j.MAX_FRAME_BYTES == 4 * 1024 * 1024


@pytest.mark.parametrize("kind", ["bytes", "str", "memoryview"])
def test_frame_too_large_refused_before_parsing(kind: str) -> None:
    raw = b'{"jsonrpc":"2.0","method":"m","params":["' + b"x" * 100 + b'"]}'
    frame: Any = {"bytes": raw, "str": raw.decode(), "memoryview": memoryview(raw)}[kind]
    assert isinstance(j.parse(frame, max_bytes=len(raw)), Notification)
    with pytest.raises(FrameTooLarge) as info:
        j.parse(frame, max_bytes=len(raw) - 1)
    assert info.value.code == j.INVALID_REQUEST
    assert info.value.limit == len(raw) - 1
    assert info.value.size == len(raw)
    assert info.value.data == {"reason": "frame_too_large", "limit": len(raw) - 1}
    # Invalid JSON too: the size check comes first.
    with pytest.raises(FrameTooLarge):
        j.parse(b"\xff" * 10, max_bytes=5)


def test_frame_limit_counts_utf8_bytes_of_text() -> None:
    raw = '{"jsonrpc":"2.0","method":"é"}'  # 30 chars, 31 bytes
    assert len(raw) == 30
    assert len(raw.encode()) == 31
    with pytest.raises(FrameTooLarge):
        j.parse(raw, max_bytes=30)
    assert j.parse(raw, max_bytes=31) == Notification("é")


def test_default_limit_applies() -> None:
    big = b'{"jsonrpc":"2.0","method":"m","params":["' + b"x" * j.MAX_FRAME_BYTES + b'"]}'
    with pytest.raises(FrameTooLarge):
        j.parse(big)


# ---------------------------------------------------------------------------------------------
# Error helpers


def test_helpers() -> None:
    e = j.method_not_found("nope/x", 3)
    assert (e.code, e.id, e.data) == (j.METHOD_NOT_FOUND, 3, {"method": "nope/x"})
    assert len(j.method_not_found("m" * 10_000).data["method"]) == 200
    e = j.invalid_params("Unsupported protocol version", {"supported": ["2025-11-25"]}, "a")
    assert (e.code, e.message, e.id) == (j.INVALID_PARAMS, "Unsupported protocol version", "a")
    e = j.internal_error()
    assert (e.code, e.message, e.id, e.data) == (j.INTERNAL_ERROR, "Internal error", None, None)
    assert j.parse_error().code == j.PARSE_ERROR
    assert j.invalid_request("x").code == j.INVALID_REQUEST


def test_error_to_response_and_with_id() -> None:
    e = j.invalid_params("bad", {"field": "x"})
    e2 = e.with_id(7)
    assert type(e2) is JsonRpcError
    assert e.id is None
    assert e2.to_response() == ErrorResponse(7, j.INVALID_PARAMS, "bad", {"field": "x"})
    assert json.loads(e2.encode()) == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": -32602, "message": "bad", "data": {"field": "x"}},
    }
    big = FrameTooLarge(10, 5).with_id("x")
    assert isinstance(big, FrameTooLarge)
    assert (big.size, big.limit, big.id) == (10, 5, "x")
    assert "FrameTooLarge" in repr(big)


# ---------------------------------------------------------------------------------------------
# Encoders


def test_encoders_are_compact_utf8() -> None:
    assert j.encode_request(1, "ping") == b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    assert (
        j.encode_request("s-1", "elicitation/create", {"message": "é"})
        == '{"jsonrpc":"2.0","id":"s-1","method":"elicitation/create",'
        '"params":{"message":"é"}}'.encode()
    )
    assert j.encode_notification("n") == b'{"jsonrpc":"2.0","method":"n"}'
    assert j.encode_notification("n", [1]) == b'{"jsonrpc":"2.0","method":"n","params":[1]}'
    assert j.encode_response(2, {}) == b'{"jsonrpc":"2.0","id":2,"result":{}}'
    assert (
        j.encode_error(None, -32700, "Parse error")
        == b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}'
    )


def test_encoded_frames_have_no_raw_newlines() -> None:
    out = j.encode_response(1, {"text": "a\nb\r\nc\u2028"})
    assert b"\n" not in out
    assert b"\r" not in out
    assert j.parse(out) == Response(1, {"text": "a\nb\r\nc\u2028"})


@pytest.mark.parametrize(
    "bad", [math.nan, math.inf, -math.inf, "\ud800", {"k": object()}, [b"\xff"]]
)
def test_encode_refuses_non_json(bad: Any) -> None:
    with pytest.raises(EncodeError):
        j.encode_response(1, {"v": bad})
    with pytest.raises(ValueError, match="not encodable"):
        j.encode_notification("m", {"v": bad})


def test_encode_fallback_keeps_strings_that_look_like_nan() -> None:
    out = j.encode_response(1, {"t": "NaN and Infinity", "x": 1.5})
    assert json.loads(out) == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"t": "NaN and Infinity", "x": 1.5},
    }


def test_encode_rejects_non_message() -> None:
    with pytest.raises(TypeError):
        j.encode({"jsonrpc": "2.0"})  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# IdAllocator


def test_id_allocator() -> None:
    ids = IdAllocator("srv", stem="abcd")
    got = [ids.next() for _ in range(3)]
    assert got == ["srv-abcd-1", "srv-abcd-2", "srv-abcd-3"]
    assert all(ids.owns(i) for i in got)
    assert not ids.owns(1)
    assert not ids.owns("srv-abcd-")
    assert not ids.owns("srv-abcd-x")
    assert not ids.owns("srv-ffff-1")
    assert not IdAllocator("srv", stem="ffff").owns(got[0])
    assert "srv-abcd-" in repr(ids)


def test_id_allocator_random_stems_differ() -> None:
    a, b = IdAllocator(), IdAllocator()
    assert a.next() != b.next()
    assert isinstance(a.next(), str)


def test_allocated_ids_round_trip() -> None:
    ids = IdAllocator()
    rid = ids.next()
    frame = j.encode_request(rid, "elicitation/create", {"message": "hi"})
    assert j.parse(frame) == Request(rid, "elicitation/create", {"message": "hi"})


# ---------------------------------------------------------------------------------------------
# Properties

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
ids = st.integers(min_value=-(2**63), max_value=2**63) | st.text(max_size=20)
methods = st.text(min_size=0, max_size=30)
params = (
    st.none()
    | st.dictionaries(st.text(max_size=8), json_values, max_size=4)
    | st.lists(json_values, max_size=4)
)
objects = st.dictionaries(st.text(max_size=8), json_values, max_size=4)

messages = st.one_of(
    st.builds(Request, ids, methods, params),
    st.builds(Notification, methods, params),
    st.builds(Response, ids, objects),
    st.builds(
        ErrorResponse,
        st.none() | ids,
        st.integers(-(2**31), 2**31),
        st.text(max_size=20),
        json_values,
    ),
)

# Envelope-shaped dicts: biased towards almost-valid messages to reach every branch.
envelope_keys = st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error"])
envelope_values = st.one_of(
    st.just("2.0"),
    st.just({"code": 1, "message": "m"}),
    st.just({}),
    st.just([]),
    json_values,
)
envelopes = st.dictionaries(envelope_keys, envelope_values, max_size=6)


def _outcome(frame: bytes | str | dict[str, Any]) -> j.Message | JsonRpcError:
    """Parse (or validate) ``frame``; return the message or the JsonRpcError raised."""
    try:
        return j.validate_message(frame) if isinstance(frame, dict) else j.parse(frame)
    except JsonRpcError as exc:
        return exc


def _check_outcome(out: j.Message | JsonRpcError) -> None:
    if isinstance(out, JsonRpcError):
        assert out.code in CODES
        assert out.id is None or type(out.id) in (str, int)
        json.loads(out.encode())  # always answerable
    else:
        assert isinstance(out, Request | Notification | Response | ErrorResponse)
        # Whatever parses re-encodes and parses back to the same value.
        assert j.parse(j.encode(out)) == out


@given(json_values)
def test_random_json_values_never_crash(value: Any) -> None:
    _check_outcome(_outcome(json.dumps(value).encode()))


@given(envelopes)
def test_random_envelopes_never_crash(value: dict[str, Any]) -> None:
    _check_outcome(_outcome(value))
    _check_outcome(_outcome(json.dumps(value, ensure_ascii=False)))


@given(st.binary(max_size=200))
def test_random_bytes_never_crash(raw: bytes) -> None:
    _check_outcome(_outcome(raw))


@given(st.text(max_size=100))
def test_random_text_never_crashes(raw: str) -> None:
    _check_outcome(_outcome(raw))


@given(messages)
def test_round_trip(msg: j.Message) -> None:
    # ErrorResponse.data None means "absent": that is the only normalisation.
    frame = j.encode(msg)
    assert b"\n" not in frame
    assert j.parse(frame) == msg
    assert j.parse(frame.decode("utf-8")) == msg
    assert json.loads(frame)["jsonrpc"] == "2.0"


# A declarative pydantic model of the envelope, used as an oracle for the hand-written checks.


class _Strict(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(strict=True, extra="ignore")


class _OracleRequest(_Strict):
    jsonrpc: Literal["2.0"]
    id: str | int
    method: str
    params: dict[str, Any] | list[Any] | None = None


class _OracleNotification(_Strict):
    jsonrpc: Literal["2.0"]
    method: str
    params: dict[str, Any] | list[Any] | None = None


class _OracleResponse(_Strict):
    jsonrpc: Literal["2.0"]
    id: str | int
    result: dict[str, Any]


class _OracleErrorObject(_Strict):
    code: int
    message: str
    data: Any = None


class _OracleError(_Strict):
    jsonrpc: Literal["2.0"]
    id: str | int | None = None
    error: _OracleErrorObject


def _oracle(value: dict[str, Any]) -> str | None:
    """Return the kind the declarative model accepts, or None."""
    keys = set(value)
    if "params" in value and value["params"] is None:
        return None  # explicit null params are refused
    if "method" in keys:
        if keys & {"result", "error"}:
            return None
        model: type[_Strict] = _OracleRequest if "id" in keys else _OracleNotification
    elif "result" in keys:
        if "error" in keys:
            return None
        model = _OracleResponse
    elif "error" in keys:
        model = _OracleError
    else:
        return None
    try:
        model.model_validate(value)
    except pydantic.ValidationError:
        return None
    return model.__name__


@settings(max_examples=300)
@given(envelopes)
def test_hand_written_checks_agree_with_pydantic_oracle(value: dict[str, Any]) -> None:
    kinds = {
        Request: "_OracleRequest",
        Notification: "_OracleNotification",
        Response: "_OracleResponse",
        ErrorResponse: "_OracleError",
    }
    try:
        got: str | None = kinds[type(j.validate_message(value))]
    except JsonRpcError:
        got = None
    assert got == _oracle(value)
