"""What can be read safely from the head of a frame too large to read: whose answer it is.

A frame over the transport's limit is never parsed; the transport keeps only its first
:data:`HEAD_BYTES` bytes. :func:`frame_head` reads the members of the top-level JSON object
there, in order, while their values are scalars, up to the first member whose value is an
object or an array. A JSON-RPC response written the usual way,
``{"jsonrpc": "2.0", "id": "…", "result": {…}}``, names its ``id`` before its ``result``, so
the request it answers is known without reading the rest. When the ``id`` comes after the
``result`` (or the head is cut before the ``result`` begins), the frame cannot be identified
and :func:`frame_head` says so: nothing is guessed.

Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["HEAD_BYTES", "FrameHead", "frame_head"]

#: Bytes of an oversize frame kept to identify it.
HEAD_BYTES: Final = 4096

_WS: Final = rb"[ \t\r\n]*"
_STRING: Final = rb'"(?:[^"\\]|\\.)*"'
_SCALAR: Final = rb"-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null"
_OPEN: Final = re.compile(_WS + rb"\{")
_VALUE: Final = _STRING + rb"|" + _SCALAR + rb"|[{\[]"
# one member: its key, then its scalar value or the bracket that opens a structured one
_MEMBER: Final = re.compile(
    _WS + rb"(" + _STRING + rb")" + _WS + rb":" + _WS + rb"(" + _VALUE + rb")"
)
_NEXT: Final = re.compile(_WS + rb"([,}])")


@dataclass(frozen=True, slots=True)
class FrameHead:
    """What the head of a frame says about it.

    Attributes:
        kind: ``"response"`` (a ``result`` or ``error`` member follows the ``id``),
            ``"request"`` (it has a ``method``), or ``None`` when it cannot be told.
        id: The JSON-RPC id (a string or an integer) when it was read before the head's first
            structured member; else ``None``.
    """

    kind: Literal["response", "request"] | None
    id: str | int | None


_UNKNOWN: Final = FrameHead(None, None)
_UNREADABLE: Final = object()


def _scalar(token: bytes) -> object:
    try:
        return json.loads(token)
    except ValueError:  # an invalid escape or number
        return _UNREADABLE


def frame_head(head: bytes) -> FrameHead:
    """Identify an oversize frame from its first bytes.

    Args:
        head: The first bytes of the frame (at most :data:`HEAD_BYTES` are looked at).

    Returns:
        The frame's kind and id as far as the head shows them. A response is identified only
        when its ``id`` (a string or an integer) comes before its ``result`` or ``error``.
    """
    head = head[:HEAD_BYTES]
    opened = _OPEN.match(head)
    if opened is None:
        return _UNKNOWN
    pos = opened.end()
    found_id: str | int | None = None
    method = False
    while True:
        member = _MEMBER.match(head, pos)
        if member is None:
            break
        key = _scalar(member.group(1))
        token = member.group(2)
        if token in (b"{", b"["):
            if key in ("result", "error") and not method and found_id is not None:
                return FrameHead("response", found_id)
            break
        after = _NEXT.match(head, member.end())
        if after is None:  # the head ends inside or right after this value: it may be cut
            break
        value = _scalar(token)
        if key == "method":
            method = True
        elif key == "id" and isinstance(value, str | int) and not isinstance(value, bool):
            found_id = value
        if after.group(1) == b"}":
            break
        pos = after.end()
    if method:
        return FrameHead("request", found_id)
    return _UNKNOWN
