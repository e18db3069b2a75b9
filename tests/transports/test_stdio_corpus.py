"""Hostile lines on the stdio transport of the real ``erlmcp-py serve`` subprocess.

Each line of the table is sent alone, followed by a ``ping`` the server must answer: the
line gets exactly the answer JSON-RPC 2.0 and MCP give it (an error with its code and id, a
result, or nothing for what is never answered), and the server keeps serving the next line.

Decided by the specifications:

* A frame that is not JSON (invalid UTF-8, a NUL, a BOM, ``NaN``, a lone surrogate, nesting
  past the parser's depth, an integer past its digits, trailing bytes) is ``-32700`` with
  ``id: null`` (JSON-RPC 2.0 §5.1: no id can be read from it).
* Valid JSON that is not a request object (a scalar, a batch) is ``-32600``. Batches are not
  part of the protocol versions this server negotiates (2025-06-18 removed them); an empty
  array is one Invalid Request even in JSON-RPC 2.0 (§6).
* An id that is not a string or an integer (``null``, a float, a boolean, an object) is
  ``-32600`` with ``id: null`` (MCP: a request id MUST be a string or an integer, never null).
* A response or an error naming no request of ours, and a notification of no known method,
  get no answer (JSON-RPC 2.0 §4.1: notifications and responses are never answered).
* Duplicate keys (RFC 8259 §4 leaves their meaning to the parser): the last one wins, as in
  JavaScript's ``JSON.parse`` (the reference TypeScript SDK's parser), so the server reads the
  frame as that SDK reads it.
* A number that overflows a double (``1e999999``) outside the envelope decodes as JavaScript's
  does (to infinity) and is harmless to ``ping``; as an id it is no integer: ``-32600``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.transports.test_stdio import serve


@dataclass(frozen=True)
class Line:
    """One line and the frames it is answered with: ``(code, id)`` for an error, ``id`` alone
    for a result."""

    id: str
    raw: bytes
    answers: tuple[tuple[int, Any] | str | int, ...]


def ping(id: bytes, extra: bytes = b"") -> bytes:
    return b'{"jsonrpc":"2.0","id":' + id + b',"method":"ping"' + extra + b"}"


PARSE, INVALID, NOT_FOUND = -32700, -32600, -32601
TEN_MB = 10 * 1024 * 1024

LINES: list[Line] = [
    # -- not JSON ----------------------------------------------------------------------------------
    Line("invalid-utf8", ping(b"1", b',"params":{"x":"\xff\xfe"}'), ((PARSE, None),)),
    Line("overlong-utf8", ping(b"1", b',"params":{"x":"\xc0\xaf"}'), ((PARSE, None),)),
    Line("utf8-encoded-surrogate", ping(b"1", b',"params":{"x":"\xed\xa0\x80"}'), ((PARSE, None),)),
    Line("nul-after", ping(b"1") + b"\x00", ((PARSE, None),)),
    Line("nul-in-string", ping(b"1", b',"params":{"x":"a\x00b"}'), ((PARSE, None),)),
    Line("nul-alone", b"\x00", ((PARSE, None),)),
    Line("bom", b"\xef\xbb\xbf" + ping(b"1"), ((PARSE, None),)),
    Line("nan", ping(b"1", b',"params":{"x":NaN}'), ((PARSE, None),)),
    Line("lone-surrogate", ping(b"1", b',"params":{"x":"\\ud800"}'), ((PARSE, None),)),
    Line("lone-surrogate-id", ping(b'"\\ud800"'), ((PARSE, None),)),
    Line("deep-arrays", b"[" * 100_000, ((PARSE, None),)),
    Line(
        "deep-params",
        ping(b"1", b',"params":{"x":' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
        ((PARSE, None),),
    ),
    Line(
        "million-digit-integer",
        ping(b"1", b',"params":{"x":' + b"1" * 10**6 + b"}"),
        ((PARSE, None),),
    ),
    Line("huge-integer-id", ping(b"1" * 5000), ((PARSE, None),)),
    Line("trailing-bytes", ping(b"1") + b" x", ((PARSE, None),)),
    Line("two-objects", ping(b"1") + ping(b"2"), ((PARSE, None),)),
    # -- over the frame limit: refused unread, the id read from its head ---------------------------
    Line(
        "ten-megabytes",
        b'{"jsonrpc":"2.0","id":25,"method":"ping","params":{"x":"' + b"a" * TEN_MB + b'"}}',
        ((INVALID, 25),),
    ),
    # -- JSON, not a request -----------------------------------------------------------------------
    Line("scalar", b"42", ((INVALID, None),)),
    Line("string", b'"ping"', ((INVALID, None),)),
    Line("batch", b"[" + ping(b"1") + b"]", ((INVALID, None),)),
    Line("empty-batch", b"[]", ((INVALID, None),)),
    Line("batch-of-notifications", b'[{"jsonrpc":"2.0","method":"x"}]', ((INVALID, None),)),
    Line("no-jsonrpc", b'{"id":12,"method":"ping"}', ((INVALID, 12),)),
    Line("jsonrpc-1-0", b'{"jsonrpc":"1.0","id":13,"method":"ping"}', ((INVALID, 13),)),
    Line("method-number", b'{"jsonrpc":"2.0","id":14,"method":5}', ((INVALID, 14),)),
    Line("params-string", ping(b"15", b',"params":"x"'), ((INVALID, 15),)),
    Line("unknown-method", b'{"jsonrpc":"2.0","id":16,"method":"no/such"}', ((NOT_FOUND, 16),)),
    # -- ids ---------------------------------------------------------------------------------------
    Line("id-null", ping(b"null"), ((INVALID, None),)),
    Line("id-float", ping(b"1.5"), ((INVALID, None),)),
    Line("id-integral-float", ping(b"2.0"), ((INVALID, None),)),
    Line("id-overflowing-float", ping(b"1e999999"), ((INVALID, None),)),
    Line("id-bool", ping(b"true"), ((INVALID, None),)),
    Line("id-object", ping(b'{"a":1}'), ((INVALID, None),)),
    Line("id-array", ping(b"[1]"), ((INVALID, None),)),
    Line("id-string", ping(b'"s"'), ("s",)),
    Line("id-negative", ping(b"-7"), (-7,)),
    # -- never answered ----------------------------------------------------------------------------
    Line("response-to-nobody", b'{"jsonrpc":"2.0","id":"nobody","result":{}}', ()),
    Line("error-to-nobody", b'{"jsonrpc":"2.0","id":9,"error":{"code":1,"message":"x"}}', ()),
    Line("unknown-notification", b'{"jsonrpc":"2.0","method":"no/such"}', ()),
    Line("blank", b" \t\r", ()),
    # -- read as JavaScript's JSON.parse reads them ------------------------------------------------
    Line(
        "duplicate-id", b'{"jsonrpc":"2.0","id":"first","id":"second","method":"ping"}', ("second",)
    ),
    Line("duplicate-method", b'{"jsonrpc":"2.0","id":6,"method":"no/such","method":"ping"}', (6,)),
    Line("overflowing-number-in-params", ping(b"8", b',"params":{"x":1e999999}'), (8,)),
    Line("crlf", ping(b"22") + b"\r", (22,)),
]


def shape(frame: dict[str, Any]) -> tuple[int, Any] | str | int:
    if "error" in frame:
        return (frame["error"]["code"], frame["id"])
    return frame["id"]  # type: ignore[no-any-return]


async def answers_to(client: Any, line: Line) -> tuple[tuple[int, Any] | str | int, ...]:
    """The frames answering ``line``: those that arrive before the answer to a ping sent
    after it (and at least as many as expected), the ping's own left out."""
    before = len(client.frames)
    await client.send_raw(line.raw + b"\n")
    probe = f"after-{line.id}"
    await client.send({"jsonrpc": "2.0", "id": probe, "method": "ping"})
    await client.wait_for(lambda: any(f.get("id") == probe for f in client.frames[before:]))
    await client.wait_for(lambda: len(client.frames) > before + len(line.answers))
    return tuple(shape(f) for f in client.frames[before:] if f.get("id") != probe)


async def test_each_hostile_line_gets_its_specified_answer_and_the_server_serves_on() -> None:
    assert len({line.id for line in LINES}) == len(LINES)
    wrong = []
    async with serve() as client:
        await client.initialize()
        for line in LINES:
            got = await answers_to(client, line)
            if got != line.answers:
                wrong.append((line.id, got, line.answers))
        too_large = [f for f in client.frames if f.get("id") == 25]
        assert too_large[0]["error"]["data"]["reason"] == "frame_too_large"
        assert await client.request("ping") == {}
    assert not wrong, wrong
    assert client.process.returncode == 0
