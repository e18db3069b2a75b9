"""The HTTP/1.1 layer against h11: it refuses, or frames every request exactly as h11 does.

Hypothesis writes streams of pipelined requests (heads, ``Content-Length`` and chunked bodies
with extensions and trailers, HTTP/1.0 and 1.1, origin- and absolute-form targets), valid ones
and mutations of them (bare LF and CR, NUL and other control bytes, duplicated and added
fields, obsolete line folding, whitespace where it does not belong, huge numbers, bytes
deleted). Each stream goes through the real connection code (:func:`serve_stream` over a
memory stream, fed in pieces) and through h11; then:

* every request our server hands its application, h11 frames the same (method, path and
  query, version, fields, body bytes), in the same order: where one request ends and the
  next starts is the same;
* past the last request they share, h11 frames no other one unless our server refused (a
  status of its own, connection closed);
* a valid stream is framed whole, identically.

Where we are stricter, h11 frames more and we refuse; the documented cases (see
:mod:`~erlmcp_py.transports._http11`): a bare LF as a line end; a control character other
than HTAB in a value (h11 keeps them); obsolete line folding (h11 unfolds); ``Content-Length``
with ``Transfer-Encoding`` (h11 reads chunked), a second ``Content-Length`` line or a list of
them; chunked on HTTP/1.0; a ``Content-Length`` of more than 18 digits or a chunk size of more
than 16; whitespace after a chunk size or a chunk extension off its grammar; trailers ended by
bare LFs; a malformed ``Host`` value or target; versions other than 1.0 and 1.1.

Where h11 is stricter, the oracle is adjusted, each for a rule of RFC 9112: empty lines
before a request line are skipped (§2.2; h11 refuses them), and HTTP/1.0 with
``Connection: keep-alive`` keeps the connection (h11 always closes it) — so h11 starts again
on the bytes after such a request. Whitespace before a chunk extension's ``;`` (BWS, which a
recipient must accept, RFC 9110 §5.6.3) is refused by h11: no stream here has one (see
``test_http11_strict``).

Plus fuzzing: :func:`parse_head`, :class:`ChunkedBody` and a whole connection fed any bytes
raise nothing but the documented refusal, and never reach the last-resort handler.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import h11
import structlog.testing
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings, strategies as st

from erlmcp_py.transports._http11 import ChunkedBody, HttpRequestError, parse_head
from erlmcp_py.transports._server import serve_stream

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

Fields = tuple[tuple[bytes, bytes], ...]


@dataclass(frozen=True)
class Framed:
    """One request as framed: what the application sees."""

    method: str
    path: bytes
    query: bytes
    version: str
    fields: Fields
    body: bytes


def _fields(pairs: Any) -> Fields:
    """Field pairs as compared: ``transfer-encoding`` values in lower case (h11 lowers them)."""
    out = []
    for name, value in pairs:
        name, value = bytes(name), bytes(value)
        out.append((name, value.lower() if name == b"transfer-encoding" else value))
    return tuple(out)


# -- ours: the real connection code -------------------------------------------------------------


@dataclass
class Ours:
    framed: list[Framed]
    refused: bool  # the server answered a status of its own (a refusal)
    log: list[dict[str, Any]]


async def record_request(framed: list[Framed], scope: Any, receive: Any) -> bytes | None:
    """Read the request's body and record the request as framed; its body, or ``None`` when
    the body never came whole (the server refused it, or the client left)."""
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        body += message["body"]
        if not message["more_body"]:
            break
    framed.append(
        Framed(
            scope["method"],
            scope["raw_path"],
            scope["query_string"],
            scope["http_version"],
            _fields(scope["headers"]),
            bytes(body),
        )
    )
    return bytes(body)


def frame_ours(data: bytes, cuts: list[int]) -> Ours:
    """What :func:`serve_stream` hands its application for ``data``, sent in pieces cut at
    ``cuts`` (each piece read before the next is sent), then the end of the stream."""
    framed: list[Framed] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if await record_request(framed, scope, receive) is None:
            return  # a body refused, or not all there
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def main() -> bytes:
        client, server = trio.testing.memory_stream_pair()
        out = bytearray()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve_stream, app, server)
            start = 0
            with contextlib.suppress(trio.BrokenResourceError):  # closed after a refusal
                for cut in [*sorted(set(cuts)), len(data)]:
                    if start < cut:
                        await client.send_all(data[start:cut])
                        await trio.testing.wait_all_tasks_blocked()
                        start = cut
                await client.send_eof()
            while chunk := await client.receive_some(65536):
                out += chunk
        return bytes(out)

    with structlog.testing.capture_logs() as logs:
        answer = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    statuses = {int(s) for s in re.findall(rb"HTTP/1\.[01] (\d{3}) ", answer)}
    return Ours(framed, bool(statuses - {100, 200}), logs)


# -- h11 ----------------------------------------------------------------------------------------

_ABSOLUTE = re.compile(rb"[A-Za-z][A-Za-z0-9+.-]*://([^/?#]*)([^?#]*)(?:\?([^#]*))?")


def _h11_framed(request: h11.Request, body: bytes) -> Framed:
    target = bytes(request.target)
    fields = list(_fields(request.headers))
    if target.startswith(b"/") or target == b"*":
        path, _, query = target.partition(b"?")
    else:
        match = _ABSOLUTE.fullmatch(target)
        if match is None:  # no target our server takes: never equal to one it framed
            return Framed("", target, b"", "", (), body)
        path, query = match[2] or b"/", match[3] or b""
        # RFC 9112 §3.2.2: the authority is the host (our server hands it as the Host value)
        hosts = [i for i, (name, _) in enumerate(fields) if name == b"host"]
        for i in hosts:
            fields[i] = (b"host", match[1])
        if not hosts:
            fields.append((b"host", match[1]))
    return Framed(
        request.method.decode(),
        path,
        query,
        request.http_version.decode(),
        tuple(fields),
        body,
    )


def _keeps_http_1_0_open(request: h11.Request) -> bool:
    tokens = {
        token.strip().lower()
        for name, value in request.headers
        if name == b"connection"
        for token in value.split(b",")
    }
    return request.http_version == b"1.0" and b"keep-alive" in tokens and b"close" not in tokens


def frame_h11(data: bytes) -> list[Framed]:
    """Every request h11 frames in ``data`` before it refuses, closes or runs out of bytes."""
    framed: list[Framed] = []
    rest = data
    while True:
        while rest.startswith(b"\r\n"):  # RFC 9112 §2.2 (h11 refuses an empty line)
            rest = rest[2:]
        if not rest:
            return framed
        connection = h11.Connection(h11.SERVER, max_incomplete_event_size=1 << 24)
        connection.receive_data(rest)
        connection.receive_data(b"")
        request: h11.Request | None = None
        body = bytearray()
        try:
            while True:
                event = connection.next_event()
                if isinstance(event, h11.Request):
                    request = event
                elif isinstance(event, h11.Data):
                    body += event.data
                elif isinstance(event, h11.EndOfMessage):
                    break
                else:  # the end of the bytes: no more requests
                    return framed
        except h11.RemoteProtocolError:
            return framed
        assert request is not None
        framed.append(_h11_framed(request, bytes(body)))
        connection.send(h11.Response(status_code=200, headers=[(b"content-length", b"0")]))
        connection.send(h11.EndOfMessage())
        rest = connection.trailing_data[0]
        if connection.our_state is h11.MUST_CLOSE and not _keeps_http_1_0_open(request):
            return framed


def check_against_h11(data: bytes, cuts: list[int]) -> tuple[Ours, list[Framed]]:
    ours = frame_ours(data, cuts)
    theirs = frame_h11(data)
    assert not [e for e in ours.log if e["event"] in ("http_connection_failed", "http_app_failed")]
    assert ours.framed == theirs[: len(ours.framed)], (ours.framed, theirs)
    if len(theirs) > len(ours.framed):
        assert ours.refused, (ours.framed, theirs)
    return ours, theirs


# -- valid streams -------------------------------------------------------------------------------

TCHAR = b"!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
SPECIAL = {b"host", b"content-length", b"transfer-encoding", b"connection", b"expect", b"upgrade"}
PCHAR = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=:@"
VISIBLE = bytes(range(0x21, 0x7F)) + bytes(range(0x80, 0x100))


def chars(alphabet: bytes, min_size: int = 0, max_size: int = 12) -> st.SearchStrategy[bytes]:
    return st.lists(st.sampled_from(list(alphabet)), min_size=min_size, max_size=max_size).map(
        bytes
    )


tokens = chars(TCHAR, 1, 10)
field_names = tokens.filter(lambda name: name.lower() not in SPECIAL)
# field-content: visible characters (and obs-text), spaces and tabs only between them
field_values = st.lists(chars(VISIBLE, 1, 8), max_size=3).flatmap(
    lambda words: st.lists(
        st.sampled_from([b" ", b"\t", b"  ", b" \t"]), min_size=len(words), max_size=len(words)
    ).map(lambda gaps: b"".join(w + g for w, g in zip(words, gaps, strict=True)).rstrip(b" \t"))
)
ows = st.sampled_from([b"", b" ", b"\t", b"  "])
segments = st.lists(
    st.one_of(chars(PCHAR, 0, 6), st.sampled_from([b"%2F", b"%2f", b"%41", b"%e9", b"%00"])),
    min_size=1,
    max_size=4,
)
queries = chars(bytes(range(0x21, 0x7F)).replace(b"#", b""), 0, 10)
hosts = st.one_of(
    st.sampled_from([b"127.0.0.1", b"localhost", b"[::1]", b"example.com", b""]),
    chars(b"abcdefghijklmnopqrstuvwxyz0123456789.-", 1, 12),
).flatmap(lambda host: st.sampled_from([host, host + b":8000", host + b":"]))


@st.composite
def targets(draw: st.DrawFn, method: bytes) -> bytes:
    path = b"/" + b"/".join(draw(segments))
    if draw(st.booleans()):
        path += b"?" + draw(queries)
    form = draw(st.sampled_from(["origin"] * 6 + ["absolute", "asterisk"]))
    if form == "absolute":
        host = draw(hosts.filter(lambda h: h and not h.startswith(b":")))
        return draw(st.sampled_from([b"http://", b"HTTP://", b"https://"])) + host + path
    if form == "asterisk" and method == b"OPTIONS":
        return b"*"
    return path


chunk_exts = st.lists(
    st.tuples(
        tokens,
        st.one_of(
            st.none(),
            tokens,
            chars(b"abc!#$%&'()*+,-./:;<=>?@[]^_`{|}~\x80\xff", 0, 6).map(
                lambda v: b'"' + v + b'"'
            ),
            st.just(b'"a\\"b"'),
        ),
    ),
    max_size=2,
).map(lambda exts: b"".join(b";" + n + (b"" if v is None else b"=" + v) for n, v in exts))


@st.composite
def chunked_body(draw: st.DrawFn, body: bytes) -> bytes:
    out = bytearray()
    rest = body
    while rest:
        size = draw(st.integers(1, len(rest)))
        digits = b"%x" % size
        digits = draw(st.sampled_from([digits, digits.upper()]))
        digits = b"0" * draw(st.integers(0, 16 - len(digits))) + digits
        out += digits + draw(chunk_exts) + b"\r\n" + rest[:size] + b"\r\n"
        rest = rest[size:]
    out += b"0" * draw(st.integers(1, 3)) + draw(chunk_exts) + b"\r\n"
    for name, value in draw(st.lists(st.tuples(field_names, field_values), max_size=2)):
        out += name + b":" + draw(ows) + value + draw(ows) + b"\r\n"
    return bytes(out + b"\r\n")


@dataclass
class Request:
    lines: list[bytes]  # the request line and the field lines
    body: bytes  # as sent (chunked or not)

    def wire(self) -> bytes:
        if not self.lines:  # mutated into raw bytes
            return self.body
        return b"\r\n".join(self.lines) + b"\r\n\r\n" + self.body


@st.composite
def requests(draw: st.DrawFn) -> Request:
    method = draw(st.sampled_from([b"GET", b"POST", b"PUT", b"DELETE", b"OPTIONS", b"PATCH"]))
    method = draw(st.one_of(st.just(method), tokens))
    version = draw(st.sampled_from([b"HTTP/1.1"] * 4 + [b"HTTP/1.0"]))
    fields = [
        name + b":" + draw(ows) + value + draw(ows)
        for name, value in draw(st.lists(st.tuples(field_names, field_values), max_size=4))
    ]
    if version == b"HTTP/1.1" or draw(st.booleans()):
        fields.insert(draw(st.integers(0, len(fields))), b"Host: " + draw(hosts))
    connection = draw(st.sampled_from([None, b"keep-alive", b"close", b"Keep-Alive, x"]))
    if connection is not None:
        fields.append(b"Connection: " + connection)
    if draw(st.booleans()):
        fields.append(b"Expect: 100-continue")
    body = draw(st.binary(max_size=40))
    framing = draw(st.sampled_from(["none", "length", "chunked"]))
    if framing == "none" and not body:
        wire_body = b""
    elif framing == "chunked" and version == b"HTTP/1.1":
        fields.append(b"Transfer-Encoding: " + draw(st.sampled_from([b"chunked", b"Chunked"])))
        wire_body = draw(chunked_body(body))
    else:
        fields.append(b"Content-Length: " + b"0" * draw(st.integers(0, 2)) + b"%d" % len(body))
        wire_body = body
    request_line = method + b" " + draw(targets(method)) + b" " + version
    return Request([request_line, *draw(st.permutations(fields))], wire_body)


streams = st.lists(requests(), min_size=1, max_size=3)


def cuts_of(data: st.DataObject, size: int) -> list[int]:
    return data.draw(st.lists(st.integers(0, size), max_size=4), label="cuts")


@FAST
@given(streams, st.data())
def test_valid_streams_are_framed_whole_and_as_h11_frames_them(
    stream: list[Request], data: st.DataObject
) -> None:
    wire = b"".join(request.wire() for request in stream)
    ours, theirs = check_against_h11(wire, cuts_of(data, len(wire)))
    assert not ours.refused
    assert ours.framed == theirs
    expected = len(stream)
    for i, request in enumerate(stream):  # a request that closes ends the stream
        head = b"\r\n".join(request.lines).lower()
        if b"connection: close" in head or (
            request.lines[0].endswith(b"HTTP/1.0") and b"connection: keep-alive" not in head
        ):
            expected = i + 1
            break
    assert len(ours.framed) == expected


# -- mutations -----------------------------------------------------------------------------------

Mutation = Callable[[st.DataObject, Request], None]


def _insert(data: st.DataObject, text: bytes, what: bytes) -> bytes:
    at = data.draw(st.integers(0, len(text)), label="at")
    return text[:at] + what + text[at:]


def insert_control(data: st.DataObject, request: Request) -> None:
    """A bare LF or CR, a NUL or another control byte anywhere (head or body)."""
    byte = data.draw(st.sampled_from([b"\n", b"\r", b"\0", b"\x01", b"\x0b", b"\x7f", b"\r\n"]))
    if data.draw(st.booleans(), label="in the body") and request.body:
        request.body = _insert(data, request.body, byte)
        return
    i = data.draw(st.integers(0, len(request.lines) - 1))
    request.lines[i] = _insert(data, request.lines[i], byte)


def line_end(data: st.DataObject, request: Request) -> None:
    """A CRLF of the head or of a chunked body turned into LF, CR, LF LF or CR CR LF."""
    wire = request.wire()
    at = data.draw(st.sampled_from([m.start() for m in re.finditer(b"\r\n", wire)]))
    new = data.draw(st.sampled_from([b"\n", b"\r", b"\n\n", b"\r\r\n", b"\n\r\n"]))
    _raw(request, wire[:at] + new + wire[at + 2 :])


def _raw(request: Request, wire: bytes) -> None:
    """Make ``request`` send exactly ``wire``."""
    request.lines, request.body = [], wire


def whitespace(data: st.DataObject, request: Request) -> None:
    """A space or tab in the head: before a colon, doubled in the request line, at the start of a
    line (obsolete folding), anywhere."""
    i = data.draw(st.integers(0, len(request.lines) - 1))
    line = request.lines[i]
    ws = data.draw(st.sampled_from([b" ", b"\t"]))
    where = data.draw(st.sampled_from(["colon", "start", "anywhere"]))
    if where == "colon" and b":" in line:
        request.lines[i] = line.replace(b":", ws + b":", 1)
    elif where == "start" and i > 0:
        request.lines[i] = ws + line
    else:
        request.lines[i] = _insert(data, line, ws)


def add_field(data: st.DataObject, request: Request) -> None:
    """A field line that changes the framing or the host: a second one, or one more."""
    field = data.draw(
        st.sampled_from(
            [
                b"Host: evil.example",
                b"Content-Length: 5",
                b"Content-Length: 0",
                b"Content-Length: 5, 5",
                b"Content-Length: +5",
                b"Transfer-Encoding: chunked",
                b"Transfer-Encoding: identity",
                b"Transfer-Encoding: gzip, chunked",
                b"Expect: 100-continue",
                b"Connection: close",
            ]
        )
    )
    existing = [line for line in request.lines[1:] if b":" in line]
    if existing and data.draw(st.booleans(), label="a copy"):
        field = data.draw(st.sampled_from(existing))
    request.lines.insert(data.draw(st.integers(1, len(request.lines))), field)


def huge_number(data: st.DataObject, request: Request) -> None:
    """A Content-Length or a chunk size of many digits."""
    digits = data.draw(st.sampled_from([17, 19, 21, 40, 4301]))
    number = data.draw(st.sampled_from([b"1", b"0", b"f"])) * digits
    for i, line in enumerate(request.lines):
        if line.lower().startswith(b"content-length:"):
            request.lines[i] = b"Content-Length: " + number.replace(b"f", b"9")
            return
    if request.body:
        request.body = number + request.body[request.body.find(b"\r\n") :]


def delete_bytes(data: st.DataObject, request: Request) -> None:
    wire = request.wire()
    at = data.draw(st.integers(0, len(wire) - 1))
    size = data.draw(st.integers(1, 6))
    _raw(request, wire[:at] + wire[at + size :])


def replace_version(data: st.DataObject, request: Request) -> None:
    method, _, rest = request.lines[0].partition(b" ")
    target, _, _ = rest.rpartition(b" ")
    version = data.draw(st.sampled_from([b"HTTP/2.0", b"HTTP/0.9", b"HTTP/1.1 ", b"http/1.1"]))
    request.lines[0] = method + b" " + target + b" " + version


MUTATIONS: list[Mutation] = [
    insert_control,
    line_end,
    whitespace,
    add_field,
    huge_number,
    delete_bytes,
    replace_version,
]


@FAST
@given(streams, st.data())
def test_mutated_streams_are_refused_or_framed_as_h11_frames_them(
    stream: list[Request], data: st.DataObject
) -> None:
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        request = data.draw(st.sampled_from(stream), label="request")
        if not request.lines:  # already raw bytes: only byte-level mutations apply
            delete_bytes(data, request)
            continue
        data.draw(st.sampled_from(MUTATIONS), label="mutation")(data, request)
    wire = b"".join(request.wire() for request in stream)
    check_against_h11(wire, cuts_of(data, len(wire)))


# -- fuzzing -------------------------------------------------------------------------------------


def _parse(head: bytes) -> int:
    try:
        parse_head(head)
    except HttpRequestError as refused:
        return refused.status
    return 0


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=300))
def test_parse_head_parses_or_refuses_any_bytes(head: bytes) -> None:
    assert _parse(head) in (0, 400, 501, 505)


@settings(max_examples=500, deadline=None)
@given(requests(), st.binary(min_size=1, max_size=4), st.data())
def test_parse_head_parses_or_refuses_any_near_valid_head(
    request: Request, noise: bytes, data: st.DataObject
) -> None:
    head = b"\r\n".join(request.lines)
    head = _insert(data, head, noise)
    assert _parse(head) in (0, 400, 501, 505)


@settings(max_examples=500, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=300),
        st.binary(max_size=40)
        .flatmap(chunked_body)
        .flatmap(
            lambda body: st.tuples(st.just(body), st.binary(max_size=3), st.integers(0, 300)).map(
                lambda t: t[0][: t[2]] + t[1] + t[0][t[2] :]
            )
        ),
    ),
    st.lists(st.integers(0, 300), max_size=5),
)
def test_the_chunked_reader_decodes_or_refuses_any_bytes_however_they_arrive(
    wire: bytes, cuts: list[int]
) -> None:
    """Fed in pieces, the reader consumes from the front what it decodes, returns body bytes,
    or raises the refusal (400); past the body's end it leaves the bytes alone."""
    reader = ChunkedBody()
    buffer = bytearray()
    body = bytearray()
    start = 0
    status = 0
    try:
        for cut in [*sorted(c for c in set(cuts) if c < len(wire)), len(wire)]:
            buffer += wire[start:cut]
            start = cut
            while not reader.done:
                before = len(buffer)
                body += reader.read(buffer)
                if len(buffer) == before:
                    break  # needs more bytes
        if reader.done:
            consumed = len(wire) - len(buffer)
            assert wire[consumed:] == bytes(buffer)
            assert len(body) < consumed
    except HttpRequestError as refused:
        status = refused.status
    assert status in (0, 400)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400), st.lists(st.integers(0, 400), max_size=3))
def test_a_connection_fed_any_bytes_answers_or_refuses_and_never_fails(
    wire: bytes, cuts: list[int]
) -> None:
    ours = frame_ours(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n" + wire, cuts)
    assert ours.framed[:1] == [Framed("GET", b"/", b"", "1.1", ((b"host", b"a"),), b"")]
    assert not [e for e in ours.log if e["event"] in ("http_connection_failed", "http_app_failed")]
