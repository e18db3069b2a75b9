"""JSON-RPC 2.0 codec for MCP, validated at the boundary.

Theory of operation
-------------------
Every inbound frame (one stdio line, one HTTP POST body, one SSE ``data``) goes through
:func:`parse`, which either returns one of four frozen value types or raises
:class:`JsonRpcError` carrying the JSON-RPC code to answer with:

1. size: a frame over ``max_bytes`` (4 MiB by default: the policy defaults in
   ``docs/architecture.md``) is refused *before* any decoding with :class:`FrameTooLarge`
   (``-32600``, ``data.reason == "frame_too_large"``).
2. syntax: the bytes are decoded by pydantic-core's Rust JSON parser (strict UTF-8; no
   ``NaN``/``Infinity`` literals; no lone surrogates, raw or escaped; no control characters in
   strings; nesting depth ≤ 200; integers ≤ 4300 digits) → ``-32700`` on any failure. A number
   literal that overflows a double (``1e400``) decodes to ``±inf`` exactly as JavaScript's
   ``JSON.parse`` does; finding one would cost a scan of every frame, and such a value can
   never be echoed back (the encoders refuse non-finite floats).
3. shape: hand-written checks of the envelope (:func:`validate_message`, able to say *which*
   code applies) → ``-32600``. MCP rules on top of JSON-RPC:
   no batches, request ids are ``str`` or ``int`` (never ``null``, ``bool`` or ``float``), a
   result is an object. Unknown top-level members are ignored (robustness), but a frame mixing
   ``method`` with ``result``/``error``, or ``result`` with ``error``, is refused.

Classification: ``method`` present → :class:`Request` if ``id`` is present (any value, checked)
else :class:`Notification`; otherwise ``result`` → :class:`Response`; ``error`` →
:class:`ErrorResponse`.

When a frame is refused, :attr:`JsonRpcError.id` is the id of the *request* if one could be
read (answer with it; otherwise answer with ``id: null``), and
:attr:`JsonRpcError.response_id` is set when a malformed *response* named one of our pending
requests (fail that request instead of answering: responses are never answered).

Encoders (:func:`encode` and friends) produce compact UTF-8 JSON bytes with no insignificant
whitespace and no raw newlines (safe for newline-delimited stdio). Non-ASCII text is written
as UTF-8, not ``\\uXXXX`` escapes. ``NaN``/``Infinity`` and lone surrogates are refused with
:class:`EncodeError`. Serialization is pydantic-core's: besides plain JSON types, tuples and
sets become arrays and pydantic models, dataclasses and datetimes are written as pydantic
writes them; other objects raise :class:`EncodeError`.

Outgoing request ids (server → client: ``elicitation/create``, ``ping``…) come from an
:class:`IdAllocator`: strings with a per-allocator random stem, so they are never confused with
the client's ids or with ids from a previous incarnation of the session.
"""

from __future__ import annotations

import itertools
import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

import pydantic_core

from erlmcp_py.core.errors import ErlmcpError

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "JSONRPC_VERSION",
    "MAX_FRAME_BYTES",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "EncodeError",
    "ErrorResponse",
    "FrameTooLarge",
    "IdAllocator",
    "JsonRpcError",
    "Message",
    "Notification",
    "Params",
    "Request",
    "RequestId",
    "Response",
    "dumps",
    "encode",
    "encode_error",
    "encode_notification",
    "encode_request",
    "encode_response",
    "error_object",
    "internal_error",
    "invalid_params",
    "invalid_request",
    "message_object",
    "method_not_found",
    "notification_object",
    "parse",
    "parse_error",
    "request_object",
    "response_object",
    "validate_message",
]

JSONRPC_VERSION: Final = "2.0"

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603

#: Default frame size limit (the policy defaults, docs/architecture.md), in UTF-8 bytes.
MAX_FRAME_BYTES: Final = 4 * 1024 * 1024

RequestId: TypeAlias = str | int
"""A JSON-RPC request id as MCP allows it: a string or an integer (never ``null``)."""

Params: TypeAlias = dict[str, Any] | list[Any]
"""Request/notification parameters: a JSON object (MCP) or array (plain JSON-RPC)."""


# --------------------------------------------------------------------------------------------
# Errors


class JsonRpcError(ErlmcpError):
    """A JSON-RPC error: raised by :func:`parse` and by handlers, answered as an error response.

    Attributes:
        code: The JSON-RPC error code (``-32700``, ``-32600``, ``-32601``, ``-32602``,
            ``-32603``, or an MCP/implementation-defined code).
        message: A short, client-safe description. Never contains the offending input.
        data: Optional structured detail (JSON-compatible), sent as ``error.data``.
        id: The id of the request this error answers, or ``None`` (answer with ``id: null``).
        response_id: Set only when a malformed *response* frame carried a usable id: the
            pending outgoing request it names should be failed; responses are never answered.
    """

    def __init__(
        self,
        code: int,
        message: str,
        data: Any = None,
        id: RequestId | None = None,
        *,
        response_id: RequestId | None = None,
    ) -> None:
        super().__init__(f"JSON-RPC error {code}: {message}")
        self.code = code
        self.message = message
        self.data = data
        self.id = id
        self.response_id = response_id

    def with_id(self, id: RequestId | None) -> JsonRpcError:
        """Return a copy of this error answering request ``id``.

        Args:
            id: The request id to answer.

        Returns:
            A new :class:`JsonRpcError` of the same class, code, message and data.
        """
        clone = type(self).__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone.args = self.args
        clone.id = id
        return clone

    def to_response(self) -> ErrorResponse:
        """Return the :class:`ErrorResponse` that answers this error."""
        return ErrorResponse(self.id, self.code, self.message, self.data)

    def encode(self) -> bytes:
        """Return the encoded error response frame (see :func:`encode_error`)."""
        return encode_error(self.id, self.code, self.message, self.data)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(code={self.code}, message={self.message!r}, "
            f"data={self.data!r}, id={self.id!r})"
        )


class FrameTooLarge(JsonRpcError):
    """A frame exceeded the size limit; refused before parsing (code ``-32600``).

    Attributes:
        size: The frame size in bytes (for ``str`` input, at least ``limit + 1``).
        limit: The limit in bytes.
    """

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(
            INVALID_REQUEST,
            "Invalid Request: frame too large",
            {"reason": "frame_too_large", "limit": limit},
        )
        self.size = size
        self.limit = limit


class EncodeError(ErlmcpError, ValueError):
    """A value could not be encoded as strict JSON (NaN, Infinity, lone surrogate, …)."""


def parse_error(detail: str = "") -> JsonRpcError:
    """Build a ``-32700`` Parse error (answered with ``id: null``).

    Args:
        detail: Parser diagnostic (position, not content), sent as ``data.detail``.
    """
    return JsonRpcError(PARSE_ERROR, "Parse error", {"detail": detail} if detail else None)


def invalid_request(
    detail: str,
    id: RequestId | None = None,
    *,
    response_id: RequestId | None = None,
) -> JsonRpcError:
    """Build a ``-32600`` Invalid Request error.

    Args:
        detail: What is wrong with the envelope, sent as ``data.detail``.
        id: The request id, when it could be read.
        response_id: The id of a malformed response frame, when it could be read.
    """
    return JsonRpcError(
        INVALID_REQUEST, "Invalid Request", {"detail": detail}, id, response_id=response_id
    )


def method_not_found(method: str, id: RequestId | None = None) -> JsonRpcError:
    """Build a ``-32601`` Method not found error.

    Args:
        method: The unknown method name (echoed in ``data.method``; bounded to 200 chars).
        id: The request id.
    """
    return JsonRpcError(METHOD_NOT_FOUND, "Method not found", {"method": method[:200]}, id)


def invalid_params(
    message: str = "Invalid params",
    data: Any = None,
    id: RequestId | None = None,
) -> JsonRpcError:
    """Build a ``-32602`` Invalid params error.

    Args:
        message: Client-safe description (e.g. ``"Unsupported protocol version"``).
        data: Structured detail.
        id: The request id.
    """
    return JsonRpcError(INVALID_PARAMS, message, data, id)


def internal_error(
    message: str = "Internal error",
    data: Any = None,
    id: RequestId | None = None,
) -> JsonRpcError:
    """Build a ``-32603`` Internal error (never put a traceback in ``data``).

    Args:
        message: Client-safe description.
        data: Structured detail.
        id: The request id.
    """
    return JsonRpcError(INTERNAL_ERROR, message, data, id)


# --------------------------------------------------------------------------------------------
# Message types


@dataclass(frozen=True, slots=True)
class Request:
    """A request: expects exactly one response with the same ``id``.

    Attributes:
        id: String or integer id, unique among the sender's in-flight requests.
        method: Method name, e.g. ``"tools/call"``.
        params: Object or array, or ``None`` when absent.
    """

    id: RequestId
    method: str
    params: Params | None = None


@dataclass(frozen=True, slots=True)
class Notification:
    """A notification: no id, never answered.

    Attributes:
        method: Method name, e.g. ``"notifications/cancelled"``.
        params: Object or array, or ``None`` when absent.
    """

    method: str
    params: Params | None = None


@dataclass(frozen=True, slots=True)
class Response:
    """A successful response to one of our requests.

    Attributes:
        id: The id of the request it answers.
        result: The result object.
    """

    id: RequestId
    result: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ErrorResponse:
    """An error response. ``id`` is ``None`` when the peer could not read the request's id.

    Attributes:
        id: The id of the request it answers, or ``None``.
        code: JSON-RPC error code.
        message: Error message.
        data: Optional detail (``None`` when absent).
    """

    id: RequestId | None
    code: int
    message: str
    data: Any = None


Message: TypeAlias = Request | Notification | Response | ErrorResponse
"""Any parsed JSON-RPC message."""


# --------------------------------------------------------------------------------------------
# Parsing


def _is_id(value: object) -> bool:
    # bool is a subclass of int: exclude it explicitly.
    return type(value) is str or (type(value) is int)


def parse(
    frame: bytes | bytearray | memoryview | str, *, max_bytes: int = MAX_FRAME_BYTES
) -> Message:
    """Parse one JSON-RPC frame.

    Args:
        frame: The raw frame: UTF-8 bytes (preferred) or text. Surrounding JSON whitespace
            (including a trailing newline) is allowed.
        max_bytes: Size limit in UTF-8 bytes, checked before parsing.

    Returns:
        A :class:`Request`, :class:`Notification`, :class:`Response` or :class:`ErrorResponse`.

    Raises:
        FrameTooLarge: The frame is larger than ``max_bytes`` (code ``-32600``).
        JsonRpcError: ``-32700`` when the frame is not strict JSON in UTF-8, ``-32600`` when it
            is JSON but not a valid single JSON-RPC 2.0 message (see the module docstring).
    """
    if isinstance(frame, str):
        n = len(frame)
        if n > max_bytes:  # every character is at least one UTF-8 byte
            raise FrameTooLarge(n, max_bytes)
        try:
            data: bytes | bytearray = frame.encode("utf-8")
        except UnicodeEncodeError:
            raise parse_error("invalid Unicode (lone surrogate)") from None
    elif isinstance(frame, memoryview):
        data = frame.tobytes()
    else:
        data = frame
    size = len(data)
    if size > max_bytes:
        raise FrameTooLarge(size, max_bytes)
    try:
        obj = pydantic_core.from_json(data, allow_inf_nan=False)
    except ValueError as exc:
        raise parse_error(str(exc)) from None
    return validate_message(obj)


def validate_message(obj: object) -> Message:
    """Classify and check an already-decoded JSON value as a JSON-RPC 2.0 message.

    Args:
        obj: A JSON value (as produced by a JSON parser).

    Returns:
        The message value.

    Raises:
        JsonRpcError: ``-32600`` when ``obj`` is not a valid single JSON-RPC 2.0 message.
    """
    if type(obj) is not dict:
        if type(obj) is list:
            raise invalid_request("batches are not supported")
        raise invalid_request("message must be a JSON object")
    get = obj.get
    method = get("method")
    if method is not None or "method" in obj:
        return _validate_call(obj, method)
    if "result" in obj:
        return _validate_result(obj)
    if "error" in obj:
        return _validate_error(obj)
    rid = get("id")
    raise invalid_request(
        "message has none of method, result, error",
        rid if _is_id(rid) else None,
    )


def _validate_call(obj: dict[str, Any], method: object) -> Request | Notification:
    has_id = "id" in obj
    rid: Any = obj["id"] if has_id else None
    good_id = has_id and _is_id(rid)
    reply_id = rid if good_id else None
    if obj.get("jsonrpc") != JSONRPC_VERSION:
        raise invalid_request('"jsonrpc" must be "2.0"', reply_id)
    if has_id and not good_id:
        if rid is None:
            raise invalid_request('"id" must not be null', None)
        raise invalid_request('"id" must be a string or an integer', None)
    if type(method) is not str:
        raise invalid_request('"method" must be a string', reply_id)
    if "result" in obj or "error" in obj:
        raise invalid_request("a request cannot carry result or error", reply_id)
    params = obj.get("params")
    if params is not None:
        tp = type(params)
        if tp is not dict and tp is not list:
            raise invalid_request('"params" must be an object or an array', reply_id)
    elif "params" in obj:
        raise invalid_request('"params" must be an object or an array', reply_id)
    if has_id:
        return Request(rid, method, params)
    return Notification(method, params)


def _validate_result(obj: dict[str, Any]) -> Response:
    rid: Any = obj.get("id")
    good_id = _is_id(rid)
    response_id = rid if good_id else None
    if obj.get("jsonrpc") != JSONRPC_VERSION:
        raise invalid_request('"jsonrpc" must be "2.0"', response_id=response_id)
    if "error" in obj:
        raise invalid_request(
            "a response cannot carry both result and error", response_id=response_id
        )
    if not good_id:
        raise invalid_request('a response "id" must be a string or an integer')
    result = obj["result"]
    if type(result) is not dict:
        raise invalid_request('"result" must be an object', response_id=response_id)
    return Response(rid, result)


def _validate_error(obj: dict[str, Any]) -> ErrorResponse:
    rid: Any = obj.get("id")
    good_id = rid is None or _is_id(rid)
    response_id = rid if good_id and rid is not None else None
    if obj.get("jsonrpc") != JSONRPC_VERSION:
        raise invalid_request('"jsonrpc" must be "2.0"', response_id=response_id)
    if not good_id:
        raise invalid_request('an error response "id" must be a string, an integer or null')
    err = obj["error"]
    if type(err) is not dict:
        raise invalid_request('"error" must be an object', response_id=response_id)
    code = err.get("code")
    if type(code) is not int:
        raise invalid_request('"error.code" must be an integer', response_id=response_id)
    message = err.get("message")
    if type(message) is not str:
        raise invalid_request('"error.message" must be a string', response_id=response_id)
    return ErrorResponse(rid, code, message, err.get("data"))


# --------------------------------------------------------------------------------------------
# Encoding


def _dumps(obj: Any) -> bytes:
    try:
        out = pydantic_core.to_json(obj)
    except (pydantic_core.PydanticSerializationError, ValueError, TypeError) as exc:
        raise EncodeError(f"value is not encodable as JSON: {exc}") from None
    # pydantic-core writes non-finite floats as the NaN/Infinity literals, which are not JSON.
    # Such a literal can only appear if one of these byte strings appears; in that rare case
    # re-encode with the stdlib, which either raises (a real NaN/Infinity) or succeeds.
    if b"NaN" in out or b"Infinity" in out:
        try:
            text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        except (ValueError, TypeError) as exc:
            raise EncodeError(f"value is not encodable as JSON: {exc}") from None
        return text.encode("utf-8")
    return out


def dumps(obj: Any) -> bytes:
    """Encode a JSON value as one compact frame (see the module docstring).

    Args:
        obj: A JSON value, e.g. a message object from :func:`request_object`.

    Returns:
        Compact UTF-8 JSON bytes without a trailing newline.

    Raises:
        EncodeError: ``obj`` is not encodable as strict JSON.
    """
    return _dumps(obj)


def request_object(
    id: RequestId, method: str, params: Mapping[str, Any] | list[Any] | None = None
) -> dict[str, Any]:
    """The JSON object of a request (what :func:`encode_request` encodes)."""
    if params is None:
        return {"jsonrpc": JSONRPC_VERSION, "id": id, "method": method}
    return {"jsonrpc": JSONRPC_VERSION, "id": id, "method": method, "params": params}


def notification_object(
    method: str, params: Mapping[str, Any] | list[Any] | None = None
) -> dict[str, Any]:
    """The JSON object of a notification (what :func:`encode_notification` encodes)."""
    if params is None:
        return {"jsonrpc": JSONRPC_VERSION, "method": method}
    return {"jsonrpc": JSONRPC_VERSION, "method": method, "params": params}


def response_object(id: RequestId, result: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON object of a success response (what :func:`encode_response` encodes)."""
    return {"jsonrpc": JSONRPC_VERSION, "id": id, "result": result}


def error_object(id: RequestId | None, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """The JSON object of an error response (what :func:`encode_error` encodes)."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": JSONRPC_VERSION, "id": id, "error": error}


def encode_request(
    id: RequestId, method: str, params: Mapping[str, Any] | list[Any] | None = None
) -> bytes:
    """Encode a request frame.

    Args:
        id: The request id (use :class:`IdAllocator` for our own requests).
        method: Method name.
        params: Parameters; omitted from the frame when ``None``.

    Returns:
        Compact UTF-8 JSON bytes without a trailing newline.

    Raises:
        EncodeError: ``params`` is not encodable as strict JSON.
    """
    return _dumps(request_object(id, method, params))


def encode_notification(method: str, params: Mapping[str, Any] | list[Any] | None = None) -> bytes:
    """Encode a notification frame.

    Args:
        method: Method name.
        params: Parameters; omitted from the frame when ``None``.

    Returns:
        Compact UTF-8 JSON bytes without a trailing newline.

    Raises:
        EncodeError: ``params`` is not encodable as strict JSON.
    """
    return _dumps(notification_object(method, params))


def encode_response(id: RequestId, result: Mapping[str, Any]) -> bytes:
    """Encode a success response frame.

    Args:
        id: The id of the request answered.
        result: The result object.

    Returns:
        Compact UTF-8 JSON bytes without a trailing newline.

    Raises:
        EncodeError: ``result`` is not encodable as strict JSON.
    """
    return _dumps(response_object(id, result))


def encode_error(
    id: RequestId | None,
    code: int,
    message: str,
    data: Any = None,
) -> bytes:
    """Encode an error response frame.

    Args:
        id: The id of the request answered, or ``None`` (written as ``null``).
        code: JSON-RPC error code.
        message: Error message.
        data: Optional detail; omitted from the frame when ``None``.

    Returns:
        Compact UTF-8 JSON bytes without a trailing newline.

    Raises:
        EncodeError: ``data`` is not encodable as strict JSON.
    """
    return _dumps(error_object(id, code, message, data))


def encode(message: Message) -> bytes:
    """Encode any message value.

    Args:
        message: A :class:`Request`, :class:`Notification`, :class:`Response` or
            :class:`ErrorResponse`.

    Returns:
        Compact UTF-8 JSON bytes without a trailing newline.

    Raises:
        EncodeError: The message holds a value that is not encodable as strict JSON.
    """
    return _dumps(message_object(message))


def message_object(message: Message) -> dict[str, Any]:
    """The JSON object of any message value (what :func:`encode` encodes).

    Raises:
        TypeError: ``message`` is not a message value.
    """
    if isinstance(message, Request):
        return request_object(message.id, message.method, message.params)
    if isinstance(message, Notification):
        return notification_object(message.method, message.params)
    if isinstance(message, Response):
        return response_object(message.id, message.result)
    if isinstance(message, ErrorResponse):
        return error_object(message.id, message.code, message.message, message.data)
    raise TypeError(f"not a JSON-RPC message: {type(message).__name__}")


# --------------------------------------------------------------------------------------------
# Outgoing ids


class IdAllocator:
    """Allocates ids for our own outgoing requests (server → client).

    Ids look like ``"<prefix>-<stem>-<n>"``: a per-allocator random stem (so a late response
    addressed to a previous session incarnation never matches a new request) and a counter.
    They are strings, so they never look like the small integers clients typically use.

    Args:
        prefix: Readable tag, e.g. ``"srv"``.
        stem: Fixed stem (for tests); default: 8 random hex digits.

    Example:
        >>> ids = IdAllocator("srv", stem="0000")
        >>> ids.next()
        'srv-0000-1'
        >>> ids.owns("srv-0000-1"), ids.owns(1)
        (True, False)
    """

    __slots__ = ("_base", "_counter")

    def __init__(self, prefix: str = "srv", *, stem: str | None = None) -> None:
        self._base = f"{prefix}-{stem if stem is not None else secrets.token_hex(4)}-"
        self._counter = itertools.count(1)

    def next(self) -> str:
        """Return a fresh id, never returned before by this allocator."""
        return self._base + str(next(self._counter))

    def owns(self, id: object) -> bool:
        """Tell whether ``id`` could have been allocated by this allocator."""
        return type(id) is str and id.startswith(self._base) and id[len(self._base) :].isdigit()

    def __repr__(self) -> str:
        return f"IdAllocator({self._base!r})"
