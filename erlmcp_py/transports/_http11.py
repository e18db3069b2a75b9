"""HTTP/1.1 request framing (RFC 9112), without I/O: request heads and chunked bodies.

The server (:mod:`~erlmcp_py.transports._server`) reads bytes and hands them here; what comes
back is a parsed head, body bytes, or :class:`HttpRequestError` with the status to answer
before closing the connection. Nothing else is raised for any input.

The rule: refuse what cannot be framed unambiguously. A front end (a proxy, a load balancer)
and this server must agree on where each request ends, or the bytes of one request run as
another (request smuggling). So:

* **Line ends are CRLF, and only CRLF.** A bare CR or a bare LF anywhere in a head, a chunk
  line or a trailer section is refused (400, and the connection closed), never read as the
  end of a line and never kept inside a value: h11 and many proxies read a bare LF as a line
  end, and would see the fields after it where this server would not. The same for a NUL or
  any other control character but HTAB (RFC 9110 §5.5: field values are visible characters,
  obs-text, spaces and tabs), in the request line, a field or a chunk extension.
* **Fields** (RFC 9112 §5, RFC 9110 §5.5): the name is a token, followed at once by the colon
  (whitespace before it: 400, §5.1); the value is trimmed of spaces and tabs. A line that
  starts with whitespace (obsolete line folding, or whitespace before the first field) is
  refused (400, §5.2, §2.2).
* **The request line** (§3): method, one space, target, one space, ``HTTP/1.1`` or
  ``HTTP/1.0``; a higher minor version of HTTP/1 (``HTTP/1.2``) is read as HTTP/1.1 (RFC 9110
  §2.5), another major version is 505.
* **Body framing** (§6): a ``Content-Length`` is one number of at most
  :data:`MAX_LENGTH_DIGITS` digits, sent once (a second line, even with the same value, is
  refused). The ``Transfer-Encoding`` lines together list tokens ending in ``chunked``, which
  appears once (else 400: the body's length cannot be known, §6.3); codings before it are 501
  (none is decoded here, §6.1). Both fields together, or ``Transfer-Encoding`` in HTTP/1.0,
  are refused (400), not resolved: the front end may have resolved them the other way.
* **Host and target** (§3.2, RFC 9110 §7.2): an HTTP/1.1 request carries exactly one ``Host``,
  an HTTP/1.0 one at most one, and its value is a ``host[:port]`` (else 400). The target is
  origin-form (``/path?query``: the path by RFC 3986's ``pchar`` grammar, every ``%`` followed
  by two hex digits; the query any visible character but ``#``), absolute-form
  (``http(s)://authority/path?query``: its authority, never empty nor with user info, replaces
  the ``Host`` value, so the ``Host`` check sees and routes what the target names, §3.2.2) or
  ``*`` for ``OPTIONS``; anything else is 400 (``%2Fhealthz`` is no path). ``CONNECT`` is 501:
  this server never tunnels. The path is percent-decoded for the application except ``%2F``,
  which stays encoded: decoding never turns one path segment into two, so never makes a
  target another route.
* **Chunked bodies** (§7.1): a chunk size of at most :data:`MAX_CHUNK_SIZE_DIGITS` hex
  digits, extensions by their grammar (``;`` name ``=`` token or quoted string), each chunk's
  data followed by exactly CRLF, the trailer section parsed as field lines under the same
  rules as the head's (and then dropped), ended by its empty line. Anything else: 400.
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple
from urllib.parse import unquote_to_bytes

__all__ = [
    "MAX_CHUNK_SIZE_DIGITS",
    "MAX_HEAD_BYTES",
    "MAX_LENGTH_DIGITS",
    "ChunkedBody",
    "HttpRequestError",
    "RequestHead",
    "decode_path",
    "find_bare_line_end",
    "parse_head",
]

#: Largest request head (request line and fields), and largest trailer section: 431 beyond.
MAX_HEAD_BYTES: Final = 64 * 1024
#: Most digits of a ``Content-Length`` (under an exabyte; Python's ``int`` refuses a string of
#: over 4,300 digits, and no body is that large): 400 beyond.
MAX_LENGTH_DIGITS: Final = 18
#: Most hex digits of a chunk size (64 bits): 400 beyond.
MAX_CHUNK_SIZE_DIGITS: Final = 16
#: Largest chunk-size line (the size and its extensions).
MAX_CHUNK_LINE: Final = 1024

#: The characters of an HTTP token (lower case): ``bytes.translate`` deletes them, leaving
#: whatever is not one.
_TOKEN: Final = b"!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz"
#: Every byte a line may hold (deleted by ``translate``, leaving the line ends and the refused
#: bytes): visible characters, obs-text, space and HTAB.
_LINE_BYTES: Final = bytes([9, *range(0x20, 0x7F), *range(0x80, 0x100)])
#: A CR not followed by LF, or an LF not preceded by CR (a CR at the very end may still be
#: followed by its LF: not matched).
_BARE_LINE_END: Final = re.compile(rb"\r(?=[^\n])|(?<!\r)\n")
_TOKEN_RE: Final = rb"[-!#$%&'*+.^_`|~0-9A-Za-z]+"
_QUOTED: Final = rb'"(?:[\t \x21\x23-\x5b\x5d-\x7e\x80-\xff]|\\[\t \x21-\x7e\x80-\xff])*"'
#: chunk-size [ chunk-ext ] (RFC 9112 §7.1.1: ``*( BWS ";" BWS name [ BWS "=" BWS value ] )``).
_CHUNK_LINE: Final = re.compile(
    rb"([0-9A-Fa-f]{1,%d})(?:[ \t]*;[ \t]*%s(?:[ \t]*=[ \t]*(?:%s|%s))?)*"
    % (MAX_CHUNK_SIZE_DIGITS, _TOKEN_RE, _TOKEN_RE, _QUOTED)
)


#: The path of an origin-form target (RFC 3986 ``1*( "/" segment )``, ``segment = *pchar``).
_PATH: Final = rb"/(?:[-A-Za-z0-9._~!$&'()*+,;=:@/]|%[0-9A-Fa-f]{2})*"
#: A query: any visible character but ``#`` (browsers send ``{}|^[]`` unencoded in one).
_QUERY: Final = rb"[\x21\x22\x24-\x7e]*"
_ORIGIN_FORM: Final = re.compile(rb"(%s)(?:\?(%s))?" % (_PATH, _QUERY))
_ABSOLUTE_FORM: Final = re.compile(
    rb"[hH][tT][tT][pP][sS]?://([^/?#@]*)(%s)?(?:\?(%s))?" % (_PATH, _QUERY)
)
#: ``uri-host [ ":" port ]`` (RFC 9110 §7.2): an IP literal or a reg-name (or IPv4 address).
_HOST: Final = re.compile(
    rb"(?:\[[-0-9A-Za-z:._~%!$&'()*+,;=]+\]|[-0-9A-Za-z._~%!$&'()*+,;=]*)(?::[0-9]*)?"
)
_ENCODED_SLASH: Final = re.compile(rb"%2[fF]")
#: An HTTP version (RFC 9112 §2.3), and a higher minor version of HTTP/1 than 1.1.
_VERSION: Final = re.compile(rb"HTTP/[0-9]\.[0-9]")
_HIGHER_MINOR: Final = re.compile(rb"HTTP/1\.[2-9]")
#: The fields that frame the request or say what to do with the connection.
_FRAMING: Final = frozenset(
    {b"host", b"content-length", b"transfer-encoding", b"connection", b"expect"}
)


class HttpRequestError(Exception):
    """A request the server refuses: answered with ``status`` and closed."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class RequestHead(NamedTuple):
    """A parsed request head (a named tuple: built once per request, it is cheap).

    Attributes:
        method: The method (``GET``, ``POST``...).
        target: The request target as sent.
        path: The target's path, percent-encoded as sent (``*`` for ``OPTIONS *``).
        query: The target's query (after ``?``), as sent.
        version: ``"1.1"`` or ``"1.0"``.
        headers: ``(lower-case name, value)`` pairs in order; for an absolute-form target
            the ``host`` value is the target's authority.
        length: The ``Content-Length`` (0 when neither it nor chunked is given).
        chunked: The body is chunked.
        keep_alive: The client lets the connection stay open after the response.
        expect_continue: The client waits for ``100 Continue`` before sending its body.
    """

    method: str
    target: bytes
    path: bytes
    query: bytes
    version: str
    headers: list[tuple[bytes, bytes]]
    length: int
    chunked: bool
    keep_alive: bool
    expect_continue: bool


def find_bare_line_end(buffer: bytes | bytearray, start: int = 0) -> bool:
    """Whether ``buffer`` holds a bare CR or LF from ``start`` on (a head or a line not yet
    complete is refused at once, rather than waited for until its deadline)."""
    return _BARE_LINE_END.search(buffer, max(0, start - 1)) is not None


def _lines(data: bytes) -> list[bytes]:
    """The CRLF-separated lines of ``data`` (a head, or a trailer section without its end).

    Raises:
        HttpRequestError: A control character other than HTAB, or a bare CR or LF (400).
    """
    lines = data.split(b"\r\n")
    rest = data.translate(None, _LINE_BYTES)  # what is neither in a line: the CRLFs, if valid
    if rest != b"\r\n" * (len(lines) - 1):
        if rest.translate(None, b"\r\n"):
            raise HttpRequestError(400, "control character in the request head")
        raise HttpRequestError(400, "bare CR or LF in the request head")
    return lines


def _field(line: bytes) -> tuple[bytes, bytes]:
    """One field line of a head or a trailer section (its bytes already checked by
    :func:`_lines`): ``(lower-case name, value)``."""
    name, colon, value = line.partition(b":")
    name = name.lower()
    if not colon or not name or name.translate(None, _TOKEN):
        raise _field_error(name, colon)
    return name, value.strip(b" \t")


def _field_error(name: bytes, colon: bytes) -> HttpRequestError:
    if not colon or not name:
        return HttpRequestError(400, "malformed header line")
    # whitespace before the colon (RFC 9112 §5.1), folding (§5.2), any other non-token
    return HttpRequestError(400, "malformed header name")


def parse_head(data: bytes) -> RequestHead:
    """Parse a request head (without its closing empty line).

    Raises:
        HttpRequestError: The head is malformed (400), names a transfer coding before
            ``chunked`` (501) or a major HTTP version other than 1 (505).
    """
    lines = _lines(data)
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not parts[0] or not parts[1]:
        raise HttpRequestError(400, "malformed request line")
    method, target, proto = parts
    if method.lower().translate(None, _TOKEN):
        raise HttpRequestError(400, "malformed method")
    if proto == b"HTTP/1.1":
        version = "1.1"
    elif proto == b"HTTP/1.0":
        version = "1.0"
    elif _HIGHER_MINOR.fullmatch(proto):  # RFC 9110 §2.5: read as the highest minor we know
        version = "1.1"
    elif _VERSION.fullmatch(proto):
        raise HttpRequestError(505, "unsupported HTTP version")
    else:
        raise HttpRequestError(400, "malformed request line")
    if method == b"CONNECT":
        raise HttpRequestError(501, "CONNECT is not supported")
    headers: list[tuple[bytes, bytes]] = []
    length: int | None = None
    codings: list[bytes] = []  # the transfer codings, in the order applied
    connection = b""
    expect = False
    host = -1  # the index of the Host field
    for line in lines[1:]:
        name, colon, value = line.partition(b":")  # as _field does, inline: once per field
        name = name.lower()
        if not colon or not name or name.translate(None, _TOKEN):
            raise _field_error(name, colon)
        value = value.strip(b" \t")
        headers.append((name, value))
        if name not in _FRAMING:
            continue
        if name == b"host":
            if host >= 0:
                raise HttpRequestError(400, "Host sent twice")
            if _HOST.fullmatch(value) is None:
                raise HttpRequestError(400, "malformed Host")
            host = len(headers) - 1
        elif name == b"content-length":
            if length is not None:
                raise HttpRequestError(400, "Content-Length sent twice")
            if not value.isdigit() or len(value) > MAX_LENGTH_DIGITS:
                raise HttpRequestError(400, "malformed Content-Length")
            length = int(value)
        elif name == b"transfer-encoding":  # field lines of a list combine (RFC 9110 §5.3)
            codings += [coding.strip(b" \t") for coding in value.lower().split(b",")]
        elif name == b"connection":
            connection += b"," + value.lower()
        elif name == b"expect":
            expect = value.lower() == b"100-continue"
    chunked = bool(codings)
    if chunked:
        _check_transfer_codings(codings, version, length)
    if host < 0 and version == "1.1":
        raise HttpRequestError(400, "missing Host")
    path, query, authority = _target(target, method)
    if authority is not None:  # absolute-form: the target's authority is the host (§3.2.2)
        if host < 0:
            headers.append((b"host", authority))
        else:
            headers[host] = (b"host", authority)
    tokens = {t.strip() for t in connection.split(b",")}
    keep_alive = b"close" not in tokens and (version == "1.1" or b"keep-alive" in tokens)
    return RequestHead(
        method.decode("ascii"),
        target,
        path,
        query,
        version,
        headers,
        length or 0,
        chunked,
        keep_alive,
        expect and version == "1.1",
    )


def _check_transfer_codings(codings: list[bytes], version: str, length: int | None) -> None:
    """Check the transfer codings of a request: only ``chunked`` frames a body here.

    Raises:
        HttpRequestError: Any in HTTP/1.0 (RFC 9112 §6.1: the framing is faulty), beside a
            ``Content-Length`` (§6.3: refused, not resolved), a coding that is not a token
            (an empty list element, a quoted string, a parameter, non-ASCII), ``chunked``
            not the final coding or applied more than once (§6.3, §7: the body's length
            cannot be known): 400. ``chunked`` after other codings (``gzip, chunked``): 501,
            none is decoded here (§6.1).
    """
    if version == "1.0":
        raise HttpRequestError(400, "Transfer-Encoding in HTTP/1.0")
    if length is not None:
        raise HttpRequestError(400, "both Content-Length and Transfer-Encoding")
    if any(not coding or coding.translate(None, _TOKEN) for coding in codings):
        raise HttpRequestError(400, "malformed Transfer-Encoding")
    if codings[-1] != b"chunked":
        raise HttpRequestError(400, "chunked is not the final transfer coding")
    if codings.count(b"chunked") > 1:
        raise HttpRequestError(400, "chunked applied twice")
    if len(codings) > 1:
        raise HttpRequestError(501, "unsupported transfer coding")


def _target(target: bytes, method: bytes) -> tuple[bytes, bytes, bytes | None]:
    """``(path, query, authority)`` of a request target (``authority``: ``None`` unless the
    target is in absolute-form).

    Raises:
        HttpRequestError: Not a valid origin-form or absolute-form target, nor ``*`` for
            ``OPTIONS`` (400).
    """
    match = _ORIGIN_FORM.fullmatch(target)
    if match is not None:
        return match[1], match[2] or b"", None
    match = _ABSOLUTE_FORM.fullmatch(target)
    if match is not None:
        authority = match[1]
        if not authority or authority[:1] == b":" or _HOST.fullmatch(authority) is None:
            raise HttpRequestError(400, "malformed authority in the request target")
        return match[2] or b"/", match[3] or b"", authority
    if target == b"*" and method == b"OPTIONS":
        return b"*", b"", None
    raise HttpRequestError(400, "malformed request target")


def decode_path(path: bytes) -> str:
    """The path for the application: percent-decoded (as UTF-8) except ``%2F``, kept encoded
    so that decoding never adds a path segment."""
    if b"%" not in path:
        return path.decode("ascii")
    return "%2F".join(
        unquote_to_bytes(part).decode("utf-8", "replace") for part in _ENCODED_SLASH.split(path)
    )


#: :class:`ChunkedBody` states besides "this many bytes of chunk data left" (> 0).
_DATA_END, _SIZE_LINE, _TRAILER, _DONE = 0, -1, -2, -3


class ChunkedBody:
    """A chunked request body being decoded (RFC 9112 §7.1) from a buffer its reader fills.

    :meth:`read` takes what it can from the front of the buffer; the bytes it leaves (after
    the body's end: a pipelined request) are not the body's.
    """

    __slots__ = ("_scanned", "_state", "_trailer_bytes")

    def __init__(self) -> None:
        self._state = _SIZE_LINE  # or the bytes left of the current chunk's data
        self._trailer_bytes = 0
        self._scanned = 0  # bytes of a line not yet complete already looked at

    @property
    def done(self) -> bool:
        """The body ended (its last chunk and trailer section are read)."""
        return self._state == _DONE

    def read(self, buffer: bytearray) -> bytes:
        """The body bytes ``buffer`` holds, consumed from it; ``b""`` when more bytes are needed
        (or the body is done).

        Raises:
            HttpRequestError: The body is malformed (400).
        """
        out = bytearray()
        while buffer and self._state != _DONE:
            state = self._state
            if state > 0:
                take = min(state, len(buffer))
                out += buffer[:take]
                del buffer[:take]
                self._state = state - take  # at 0: _DATA_END
                continue
            if state == _DATA_END:  # the CRLF after a chunk's data
                if buffer[:2] != b"\r\n"[: len(buffer)]:
                    raise HttpRequestError(400, "chunk data not followed by CRLF")
                if len(buffer) < 2:
                    break
                del buffer[:2]
                self._state = _SIZE_LINE
                continue
            line = self._line(buffer, MAX_CHUNK_LINE if state == _SIZE_LINE else MAX_HEAD_BYTES)
            if line is None:
                break
            if state == _SIZE_LINE:
                self._state = self._size(line)
            elif not line:  # the empty line that ends the trailer section
                self._state = _DONE
            else:
                self._trailer_bytes += len(line) + 2
                if self._trailer_bytes > MAX_HEAD_BYTES:
                    raise HttpRequestError(400, "trailer section too large")
                _field(_lines(line)[0])  # a trailer field is checked like a header, then dropped
        return bytes(out)

    def _line(self, buffer: bytearray, limit: int) -> bytes | None:
        """The next CRLF-ended line, consumed (without its CRLF); ``None``: not all there.
        A line that trickles in is looked at once, not again at every read."""
        start = max(0, self._scanned - 1)
        end = buffer.find(b"\r\n", start, limit + 2)
        if end < 0:
            if _BARE_LINE_END.search(buffer, start, limit + 2):
                raise HttpRequestError(400, "bare CR or LF in a chunked body")
            if len(buffer) > limit:
                raise HttpRequestError(400, "chunk line too long")
            self._scanned = len(buffer)
            return None
        self._scanned = 0
        line = bytes(buffer[:end])
        del buffer[: end + 2]
        return line

    @staticmethod
    def _size(line: bytes) -> int:
        """The size of the chunk a size line announces (0: the last chunk; the trailer section
        follows)."""
        match = _CHUNK_LINE.fullmatch(line)
        if match is None:
            if b"\r" in line or b"\n" in line:
                raise HttpRequestError(400, "bare CR or LF in a chunked body")
            raise HttpRequestError(400, "malformed chunk line")
        return int(match[1], 16) or _TRAILER
