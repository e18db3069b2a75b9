"""A corpus of request-smuggling and parser-differential payloads against the HTTP/1.1 layer.

Each case is the exact bytes a client sends on one connection and what RFC 9112 mandates for
them: the requests framed (method, path, body: what the application reads), and the refusal
after them (its status, the connection closed, nothing behind it run). The payload families
are the public ones: defparam's smuggler.py (Transfer-Encoding obfuscations), PortSwigger's
request smuggling research (CL.TE, TE.CL, CL.0, TE.0), "funky chunks" (chunk lines, chunk
extensions and line terminators read differently by two parsers), http-garden's discrepancies,
RFC 9112 §2.2, §3, §5, §6.1, §6.3 and §7.1, and RFC 9110's field syntax (§5.5, §5.6).

Every case runs three ways, each followed by a normal request on a new connection that must
be answered: over a real socket to the layer in-process (its application echoes what it
read), sent whole; over a memory stream one byte at a time (every read sees one more byte);
and, for the refusals, to the real ``erlmcp-py serve`` subprocess. The framing is compared
with h11's: a case says where ours differs, and why the RFC decides for ours; that it does
differ there is checked too, so no comment outlives its reason.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

import h11
import pytest
import structlog.testing
import trio
import trio.testing

from erlmcp_py.transports._http11 import MAX_HEAD_BYTES, decode_path
from erlmcp_py.transports._server import serve, serve_stream
from tests.deploy.support import free_port
from tests.transports.test_http11_differential import Framed, frame_h11, record_request
from tests.transports.test_http11_strict import exchange, responses

Served = tuple[str, str, bytes]  # method, path (as the application reads it), body


@dataclass(frozen=True)
class Case:
    """One payload and what RFC 9112 mandates for it.

    Attributes:
        id: The case's name (its family first).
        wire: The bytes sent on one connection, then the end of the stream.
        served: The requests the application reads, in order.
        refused: The status of the refusal after them (the connection then closed), or None.
        continues: ``100 Continue`` interim responses expected.
        h11: Empty when h11 frames the bytes as we do; else where it differs and the rule of
            the RFC that decides for our framing.
    """

    id: str
    wire: bytes
    served: tuple[Served, ...] = ()
    refused: int | None = None
    continues: int = 0
    h11: str = ""


def post(
    *fields: bytes, body: bytes = b"", path: bytes = b"/upload", version: bytes = b"1.1"
) -> bytes:
    head = b"POST " + path + b" HTTP/" + version + b"\r\n"
    if version == b"1.1":
        head += b"Host: a\r\n"
    return head + b"".join(f + b"\r\n" for f in fields) + b"\r\n" + body


def te(value: bytes, body: bytes) -> bytes:
    return post(b"Transfer-Encoding: " + value, body=body)


NEXT = b"GET /next HTTP/1.1\r\nHost: a\r\n\r\n"
NEXT_SERVED: Served = ("GET", "/next", b"")
HELLO_CHUNKED = b"5\r\nhello\r\n0\r\n\r\n"
UP = ("POST", "/upload")


def up(body: bytes) -> Served:
    return ("POST", "/upload", body)


def refused(id: str, wire: bytes, status: int = 400, *served: Served, h11: str = "") -> Case:
    return Case(id, wire, served, status, h11=h11)


def ok(id: str, wire: bytes, *served: Served, h11: str = "", continues: int = 0) -> Case:
    return Case(id, wire, served, continues=continues, h11=h11)


OBS_FOLD = "h11 unfolds obsolete line folding; RFC 9112 §5.2 lets a server refuse it (400) and "
OBS_FOLD += "a front end that does not unfold reads other fields"
CL_LIST = "h11 takes a list (or repeated lines) of one Content-Length; RFC 9110 §8.6 lets a "
CL_LIST += "recipient refuse it, and front ends disagree on lists"
CL_TE = "h11 reads chunked and drops the Content-Length; RFC 9112 §6.3 lets a server refuse "
CL_TE += "both together (400): a front end may have framed by the other"
TE_10 = "h11 reads chunked in HTTP/1.0; RFC 9112 §6.1: a Transfer-Encoding in HTTP/1.0 MUST "
TE_10 += "be treated as faulty framing"
HUGE = f"h11 (as configured here) takes heads over {MAX_HEAD_BYTES} bytes; 431 beyond our limit"
BWS = "h11 refuses whitespace before a chunk extension's ';'; RFC 9112 §7.1.1 allows BWS there "
BWS += "and RFC 9110 §5.6.3 says a recipient MUST accept it"
VERSION_MINOR = "h11 passes the minor version through; RFC 9110 §2.5: a higher minor version "
VERSION_MINOR += "of a major version we implement is processed as HTTP/1.1"
VERSION_MAJOR = "h11 frames any version; RFC 9110 §15.6.6: 505 for a major version not supported"
TARGET = "h11 takes any visible bytes as the target; RFC 9112 §3.2: origin-form is "
TARGET += "absolute-path [ '?' query ], without a fragment, asterisk-form is OPTIONS only, "
TARGET += "authority-form CONNECT only"
USERINFO = "h11 takes user info in an http(s) target; RFC 9110 §4.2.4: a recipient SHOULD "
USERINFO += "treat it as an error"
CONNECT = "h11 frames CONNECT; this server never tunnels (RFC 9110 §9.3.6): 501"
CHUNK_DIGITS = "h11 takes up to 20 hex digits; 16 is 64 bits, and a larger size is read "
CHUNK_DIGITS += "modulo 2^64 by some parsers (funky chunks): refused"
CHUNK_LINE = "h11 takes a chunk line of any length; ours of at most 1024 bytes (RFC 9112 §7.1.1 "
CHUNK_LINE += "lets a server bound extensions)"
BARE_LF = "h11 reads a bare LF as a line end; RFC 9112 §2.2 lets a recipient do so (MAY), and "
BARE_LF += "refusing it keeps this server from ending a line where a front end does not"
CTL = "h11 keeps control characters in a value; RFC 9110 §5.5: a field value is visible "
CTL += "characters, obs-text, SP and HTAB"
HOST = "h11 takes any Host value; RFC 9112 §3.2: an invalid Host field value MUST be answered "
HOST += "400 (uri-host [':' port], RFC 9110 §7.2)"
CHUNK_EXT = "h11 skips a chunk line's extensions unread; RFC 9112 §7.1.1 gives their grammar, "
CHUNK_EXT += "and funky chunks smuggles through the parsers that skip them"
CHUNK_WS = "h11 takes whitespace after a chunk size; RFC 9112 §7.1: chunk-size [ chunk-ext ] "
CHUNK_WS += "CRLF, whitespace only before a ';' (BWS)"


CASES: list[Case] = [
    # -- Transfer-Encoding (smuggler.py's obfuscations) --------------------------------------------
    ok("te-lower", te(b"chunked", HELLO_CHUNKED), up(b"hello")),
    ok("te-upper", te(b"CHUNKED", HELLO_CHUNKED), up(b"hello")),
    ok("te-mixed-case", te(b"cHuNkEd", HELLO_CHUNKED), up(b"hello")),
    ok("te-ows-around", te(b" \tchunked\t ", HELLO_CHUNKED), up(b"hello")),
    ok("te-name-case", post(b"tRANSFER-eNCODING: chunked", body=HELLO_CHUNKED), up(b"hello")),
    refused("te-space-before-colon", post(b"Transfer-Encoding : chunked", body=HELLO_CHUNKED)),
    refused("te-tab-before-colon", post(b"Transfer-Encoding\t: chunked", body=HELLO_CHUNKED)),
    refused(
        "te-obs-fold",
        post(b"Transfer-Encoding:", b" chunked", body=HELLO_CHUNKED),
        h11=OBS_FOLD,
    ),
    refused(
        "te-obs-fold-tab",
        post(b"X: a", b"\tTransfer-Encoding: chunked", body=HELLO_CHUNKED),
        h11=OBS_FOLD,
    ),
    refused(
        "te-leading-space-line",
        post(b" Transfer-Encoding: chunked", body=HELLO_CHUNKED),
        h11=OBS_FOLD,
    ),
    refused("te-vertical-tab", te(b"\x0bchunked", HELLO_CHUNKED)),
    refused("te-form-feed", te(b"chunked\x0c", HELLO_CHUNKED)),
    refused("te-nul", te(b"chunked\x00", HELLO_CHUNKED)),
    refused("te-cr-inside", te(b"chun\rked", HELLO_CHUNKED)),
    refused("te-nbsp", te(b"chunked\xc2\xa0", HELLO_CHUNKED)),
    refused("te-non-ascii-letter", te(b"chunk\xc4\xb1d", HELLO_CHUNKED)),  # dotless i
    refused("te-identity", te(b"identity", HELLO_CHUNKED)),
    refused("te-chunked-identity", te(b"chunked, identity", HELLO_CHUNKED)),
    refused("te-identity-chunked", te(b"identity, chunked", HELLO_CHUNKED), 501),
    refused("te-gzip-chunked", te(b"gzip, chunked", HELLO_CHUNKED), 501),
    refused("te-gzip", te(b"gzip", HELLO_CHUNKED)),
    refused("te-xchunked", te(b"xchunked", HELLO_CHUNKED)),
    refused("te-chunkedx", te(b"chunkedx", HELLO_CHUNKED)),
    refused("te-chunked-hyphen", te(b"chunked-", HELLO_CHUNKED)),
    refused("te-quoted", te(b'"chunked"', HELLO_CHUNKED)),
    refused("te-parameter", te(b"chunked;q=1", HELLO_CHUNKED)),
    refused("te-empty", te(b"", HELLO_CHUNKED)),
    refused("te-trailing-comma", te(b"chunked,", HELLO_CHUNKED)),
    refused("te-leading-comma", te(b", chunked", HELLO_CHUNKED)),
    refused("te-chunked-chunked", te(b"chunked, chunked", HELLO_CHUNKED)),
    refused(
        "te-two-lines-chunked",
        post(b"Transfer-Encoding: chunked", b"Transfer-Encoding: chunked", body=HELLO_CHUNKED),
    ),
    refused(
        "te-two-lines-gzip-then-chunked",
        post(b"Transfer-Encoding: gzip", b"Transfer-Encoding: chunked", body=HELLO_CHUNKED),
        501,
    ),
    refused(
        "te-two-lines-chunked-then-identity",
        post(b"Transfer-Encoding: chunked", b"Transfer-Encoding: identity", body=HELLO_CHUNKED),
    ),
    refused(
        "te-http10",
        post(b"Transfer-Encoding: chunked", body=HELLO_CHUNKED, version=b"1.0"),
        h11=TE_10,
    ),
    refused(
        "te-http10-gzip",
        post(b"Transfer-Encoding: gzip", body=HELLO_CHUNKED, version=b"1.0"),
    ),
    refused(
        "te-http10-with-length",
        post(
            b"Transfer-Encoding: chunked", b"Content-Length: 15", body=HELLO_CHUNKED, version=b"1.0"
        ),
        h11=TE_10,
    ),
    # a name that is not Transfer-Encoding frames nothing: the chunked bytes are the next
    # "request", whose request line is malformed
    refused(
        "te-underscore-name",
        post(b"Transfer_Encoding: chunked", body=HELLO_CHUNKED),
        400,
        up(b""),
    ),
    refused("te-name-non-ascii", post(b"Transfer-Encod\xc4\xb1ng: chunked", body=HELLO_CHUNKED)),
    # -- Content-Length ----------------------------------------------------------------------------
    ok("cl-plain", post(b"Content-Length: 5", body=b"hello"), up(b"hello")),
    ok("cl-ows", post(b"Content-Length: \t 5 \t", body=b"hello"), up(b"hello")),
    ok("cl-leading-zeros", post(b"Content-Length: 0005", body=b"hello"), up(b"hello")),
    ok("cl-zero-then-next", post(b"Content-Length: 0") + NEXT, up(b""), NEXT_SERVED),
    # the body ends where Content-Length says: what follows is the next request, as sent
    ok(
        "cl-short-body-rest-is-next-request",
        post(b"Content-Length: 3", body=b"helGET /x HTTP/1.1\r\nHost: a\r\n\r\n"),
        up(b"hel"),
        ("GET", "/x", b""),
    ),
    refused("cl-plus", post(b"Content-Length: +5", body=b"hello")),
    refused("cl-minus", post(b"Content-Length: -5", body=b"hello")),
    refused("cl-hex", post(b"Content-Length: 0x5", body=b"hello")),
    refused("cl-decimal-point", post(b"Content-Length: 5.0", body=b"hello")),
    refused("cl-underscore", post(b"Content-Length: 0_5", body=b"hello")),
    refused("cl-exponent", post(b"Content-Length: 5e0", body=b"hello")),
    refused("cl-arabic-digit", post(b"Content-Length: \xd9\xa5", body=b"hello")),
    refused("cl-inner-space", post(b"Content-Length: 5 5", body=b"hello")),
    refused("cl-empty", post(b"Content-Length: ", body=b"hello")),
    refused("cl-list-equal", post(b"Content-Length: 5,5", body=b"hello"), h11=CL_LIST),
    refused("cl-list-equal-spaces", post(b"Content-Length: 5 , 5", body=b"hello"), h11=CL_LIST),
    refused("cl-list-different", post(b"Content-Length: 5,6", body=b"hello")),
    refused(
        "cl-two-lines-equal",
        post(b"Content-Length: 5", b"Content-Length: 5", body=b"hello"),
        h11=CL_LIST,
    ),
    refused(
        "cl-two-lines-different", post(b"Content-Length: 5", b"Content-Length: 6", body=b"hello")
    ),
    refused("cl-nineteen-digits", post(b"Content-Length: " + b"1" * 19, body=b"hello")),
    refused("cl-past-int-limit", post(b"Content-Length: " + b"9" * 4301, body=b"hello")),
    refused("cl-vertical-tab", post(b"Content-Length: 5\x0b", body=b"hello")),
    refused("cl-space-before-colon", post(b"Content-Length : 5", body=b"hello")),
    # a body the client ends the connection inside: a client error (RFC 9112 §8), never a 500
    refused("cl-body-cut-short", post(b"Content-Length: 10", body=b"hello")),
    refused("chunk-body-cut-short", te(b"chunked", b"5\r\nhel")),
    refused("chunk-cut-before-last-chunk", te(b"chunked", b"5\r\nhello\r\n")),
    # -- Content-Length with Transfer-Encoding (CL.TE, TE.CL) --------------------------------------
    refused(
        "cl-te",
        post(b"Content-Length: 6", b"Transfer-Encoding: chunked", body=b"0\r\n\r\nX" + NEXT),
        h11=CL_TE,
    ),
    refused(
        "te-cl",
        post(
            b"Transfer-Encoding: chunked", b"Content-Length: 3", body=b"8\r\nSMUGGLED\r\n0\r\n\r\n"
        ),
        h11=CL_TE,
    ),
    refused(
        "cl-te-zero",
        post(b"Content-Length: 0", b"Transfer-Encoding: chunked", body=HELLO_CHUNKED),
        h11=CL_TE,
    ),
    refused(
        "cl-te-obfuscated",
        post(b"Content-Length: 4", b"Transfer-Encoding: xchunked", body=HELLO_CHUNKED),
    ),
    refused(
        "cl-te-obfuscated-case",
        post(b"Content-Length: 4", b"Transfer-Encoding: CHUNKED", body=HELLO_CHUNKED),
        h11=CL_TE,
    ),
    # -- chunked bodies (funky chunks, TERM.EXT, EXT.TERM) -----------------------------------------
    ok("chunk-two", te(b"chunked", b"3\r\nhel\r\n2\r\nlo\r\n0\r\n\r\n"), up(b"hello")),
    ok("chunk-upper-hex", te(b"chunked", b"A\r\n0123456789\r\n0\r\n\r\n"), up(b"0123456789")),
    ok("chunk-leading-zeros", te(b"chunked", b"0005\r\nhello\r\n0000\r\n\r\n"), up(b"hello")),
    ok(
        "chunk-sixteen-digits",
        te(b"chunked", b"0" * 15 + b"5\r\nhello\r\n0\r\n\r\n"),
        up(b"hello"),
    ),
    ok("chunk-empty-body", te(b"chunked", b"0\r\n\r\n"), up(b"")),
    ok("chunk-ext-token", te(b"chunked", b"5;a=b\r\nhello\r\n0;c\r\n\r\n"), up(b"hello")),
    ok(
        "chunk-ext-quoted",
        te(b"chunked", b'5;a="x;y=\\"z";b=""\r\nhello\r\n0\r\n\r\n'),
        up(b"hello"),
    ),
    ok("chunk-ext-bws", te(b"chunked", b"5 ;a = b\r\nhello\r\n0\r\n\r\n"), up(b"hello"), h11=BWS),
    ok(
        "chunk-trailer-content-length",
        te(b"chunked", b"5\r\nhello\r\n0\r\nContent-Length: 42\r\n\r\n") + NEXT,
        up(b"hello"),
        NEXT_SERVED,
    ),
    ok(
        "chunk-trailer-transfer-encoding",
        te(b"chunked", b"5\r\nhello\r\n0\r\nTransfer-Encoding: chunked\r\nHost: b\r\n\r\n") + NEXT,
        up(b"hello"),
        NEXT_SERVED,
    ),
    ok("chunked-then-next", te(b"chunked", HELLO_CHUNKED) + NEXT, up(b"hello"), NEXT_SERVED),
    refused("chunk-hex-prefix", te(b"chunked", b"0x5\r\nhello\r\n0\r\n\r\n")),
    refused("chunk-plus", te(b"chunked", b"+5\r\nhello\r\n0\r\n\r\n")),
    refused("chunk-minus", te(b"chunked", b"-5\r\nhello\r\n0\r\n\r\n")),
    refused("chunk-space-before-size", te(b"chunked", b" 5\r\nhello\r\n0\r\n\r\n")),
    refused("chunk-space-after-size", te(b"chunked", b"5 \r\nhello\r\n0\r\n\r\n"), h11=CHUNK_WS),
    refused("chunk-tab-after-size", te(b"chunked", b"5\t\r\nhello\r\n0\r\n\r\n"), h11=CHUNK_WS),
    refused("chunk-underscore", te(b"chunked", b"0_5\r\nhello\r\n0\r\n\r\n")),
    refused("chunk-empty-size", te(b"chunked", b"\r\nhello\r\n0\r\n\r\n")),
    refused(
        "chunk-seventeen-digits",
        te(b"chunked", b"0" * 16 + b"5\r\nhello\r\n0\r\n\r\n"),
        h11=CHUNK_DIGITS,
    ),
    refused(
        "chunk-overflow-2-64",
        te(b"chunked", b"10000000000000005\r\nhello\r\n0\r\n\r\n") + NEXT,
    ),
    refused("chunk-ext-no-name", te(b"chunked", b"5;\r\nhello\r\n0\r\n\r\n"), h11=CHUNK_EXT),
    refused("chunk-ext-no-value", te(b"chunked", b"5;a=\r\nhello\r\n0\r\n\r\n"), h11=CHUNK_EXT),
    refused(
        "chunk-ext-unterminated-quote",
        te(b"chunked", b'5;a="b\r\nhello\r\n0\r\n\r\n'),
        h11=CHUNK_EXT,
    ),
    refused("chunk-ext-nul", te(b"chunked", b"5;a\x00\r\nhello\r\n0\r\n\r\n"), h11=CHUNK_EXT),
    refused("chunk-ext-bare-lf", te(b"chunked", b"5;a\nhello\r\n0\r\n\r\n") + NEXT),
    refused("chunk-ext-bare-cr", te(b"chunked", b"5;a\rhello\r\n0\r\n\r\n") + NEXT),
    refused(
        "chunk-ext-too-long",
        te(b"chunked", b"5;a=" + b"b" * 2000 + b"\r\nhello\r\n0\r\n\r\n"),
        h11=CHUNK_LINE,
    ),
    refused("chunk-size-bare-lf", te(b"chunked", b"5\nhello\r\n0\r\n\r\n") + NEXT),
    refused("chunk-size-bare-cr", te(b"chunked", b"5\rhello\r\n0\r\n\r\n") + NEXT),
    refused("chunk-data-bare-lf", te(b"chunked", b"5\r\nhello\n0\r\n\r\n") + NEXT),
    refused("chunk-data-bare-cr", te(b"chunked", b"5\r\nhello\r0\r\n\r\n") + NEXT),
    refused("chunk-data-no-crlf", te(b"chunked", b"5\r\nhelloXX0\r\n\r\n") + NEXT),
    refused("chunk-data-longer-than-size", te(b"chunked", b"3\r\nhello\r\n0\r\n\r\n") + NEXT),
    refused("chunk-last-bare-lf", te(b"chunked", b"5\r\nhello\r\n0\n\r\n") + NEXT),
    refused("chunk-no-final-crlf", te(b"chunked", b"5\r\nhello\r\n0\r\n") + NEXT),
    refused("chunk-final-bare-lf", te(b"chunked", b"5\r\nhello\r\n0\r\n\n") + NEXT, h11=BARE_LF),
    refused(
        "chunk-trailer-bare-lf",
        te(b"chunked", b"5\r\nhello\r\n0\r\nX: a\n\r\n") + NEXT,
        h11=BARE_LF,
    ),
    refused(
        "chunk-trailer-obs-fold",
        te(b"chunked", b"5\r\nhello\r\n0\r\nX: a\r\n b\r\n\r\n"),
        h11=OBS_FOLD,
    ),
    refused("chunk-trailer-no-colon", te(b"chunked", b"5\r\nhello\r\n0\r\nXa\r\n\r\n")),
    refused("chunk-trailer-space-name", te(b"chunked", b"5\r\nhello\r\n0\r\nX a: b\r\n\r\n")),
    refused("chunk-trailer-nul", te(b"chunked", b"5\r\nhello\r\n0\r\nX: a\x00\r\n\r\n")),
    # -- the request line --------------------------------------------------------------------------
    ok("rl-lower-method", b"get /x HTTP/1.1\r\nHost: a\r\n\r\n", ("get", "/x", b"")),
    ok("rl-empty-lines-before", b"\r\n\r\n" + NEXT, NEXT_SERVED),
    ok(
        "rl-http-1-2",
        b"GET /x HTTP/1.2\r\nHost: a\r\n\r\n" + NEXT,
        ("GET", "/x", b""),
        NEXT_SERVED,
        h11=VERSION_MINOR,
    ),
    ok("rl-http-1-9", b"GET /x HTTP/1.9\r\nHost: a\r\n\r\n", ("GET", "/x", b""), h11=VERSION_MINOR),
    ok("rl-absolute-form", b"GET http://a/x?q HTTP/1.1\r\nHost: b\r\n\r\n", ("GET", "/x", b"")),
    ok("rl-asterisk-options", b"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", ("OPTIONS", "*", b"")),
    ok(
        "rl-dot-segments-verbatim",
        b"GET /a/../b HTTP/1.1\r\nHost: a\r\n\r\n",
        ("GET", "/a/../b", b""),
    ),
    refused("rl-double-space", b"GET  /x HTTP/1.1\r\nHost: a\r\n\r\n"),
    refused("rl-tab", b"GET\t/x HTTP/1.1\r\nHost: a\r\n\r\n"),
    refused("rl-trailing-space", b"GET /x HTTP/1.1 \r\nHost: a\r\n\r\n"),
    refused("rl-leading-space", b" GET /x HTTP/1.1\r\nHost: a\r\n\r\n"),
    refused("rl-no-version", b"GET /x\r\nHost: a\r\n\r\n"),
    refused("rl-bare-lf", b"GET /x HTTP/1.1\nHost: a\r\n\r\n", h11=BARE_LF),
    refused("rl-http-2-0", b"GET /x HTTP/2.0\r\nHost: a\r\n\r\n", 505, h11=VERSION_MAJOR),
    refused("rl-http-0-9", b"GET /x HTTP/0.9\r\nHost: a\r\n\r\n", 505, h11=VERSION_MAJOR),
    refused("rl-http-3-0", b"GET /x HTTP/3.0\r\nHost: a\r\n\r\n", 505, h11=VERSION_MAJOR),
    refused("rl-http-1-10", b"GET /x HTTP/1.10\r\nHost: a\r\n\r\n"),
    refused("rl-http-1", b"GET /x HTTP/1\r\nHost: a\r\n\r\n"),
    refused("rl-lower-http", b"GET /x http/1.1\r\nHost: a\r\n\r\n"),
    refused("rl-method-at", b"G@T /x HTTP/1.1\r\nHost: a\r\n\r\n"),
    refused("rl-method-non-ascii", b"G\xc3\x89T /x HTTP/1.1\r\nHost: a\r\n\r\n"),
    refused("rl-userinfo", b"GET http://u:p@a/x HTTP/1.1\r\nHost: a\r\n\r\n", h11=USERINFO),
    refused("rl-userinfo-empty", b"GET http://@a/x HTTP/1.1\r\nHost: a\r\n\r\n", h11=USERINFO),
    refused("rl-asterisk-post", post(b"Content-Length: 0", path=b"*"), h11=TARGET),
    refused("rl-asterisk-get", b"GET * HTTP/1.1\r\nHost: a\r\n\r\n", h11=TARGET),
    refused("rl-authority-form-get", b"GET a:80 HTTP/1.1\r\nHost: a\r\n\r\n", h11=TARGET),
    refused("rl-fragment", b"GET /x#y HTTP/1.1\r\nHost: a\r\n\r\n", h11=TARGET),
    refused("rl-backslash", b"GET /a\\b HTTP/1.1\r\nHost: a\r\n\r\n", h11=TARGET),
    refused("rl-encoded-slash-first", b"GET %2Fx HTTP/1.1\r\nHost: a\r\n\r\n", h11=TARGET),
    refused("rl-bad-percent", b"GET /x%zz HTTP/1.1\r\nHost: a\r\n\r\n", h11=TARGET),
    refused("rl-non-ascii-target", b"GET /\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n"),
    refused("rl-connect", b"CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n", 501, h11=CONNECT),
    # -- header fields -----------------------------------------------------------------------------
    ok("hdr-obs-text-value", post(b"X: caf\xc3\xa9 \xff", b"Content-Length: 0"), up(b"")),
    ok("hdr-empty-value", post(b"X:", b"Content-Length: 0"), up(b"")),
    ok("hdr-many", post(*[b"X-%d: v" % i for i in range(2000)], b"Content-Length: 0"), up(b"")),
    refused("hdr-space-in-name", post(b"Bad Name: x")),
    refused("hdr-empty-name", post(b": x")),
    refused("hdr-no-colon", post(b"NoColon")),
    refused("hdr-name-paren", post(b"X(y): z")),
    refused("hdr-name-slash", post(b"X/y: z")),
    refused("hdr-name-at", post(b"X@y: z")),
    refused("hdr-name-del", post(b"X\x7f: z")),
    refused("hdr-name-non-ascii", post(b"X\xc3\xa9: z")),
    refused("hdr-value-nul", post(b"X: a\x00b")),
    refused("hdr-value-bare-cr", post(b"X: a\rb")),
    refused("hdr-value-bare-lf", post(b"X: a\nContent-Length: 5", body=b"hello"), h11=BARE_LF),
    refused("hdr-value-escape", post(b"X: \x1b[31m"), h11=CTL),
    refused("hdr-obs-fold", post(b"X: a", b" b"), h11=OBS_FOLD),
    refused("hdr-host-twice", b"GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"),
    refused("hdr-host-missing", b"GET /x HTTP/1.1\r\n\r\n"),
    refused("hdr-host-path", b"GET /x HTTP/1.1\r\nHost: a/b\r\n\r\n", h11=HOST),
    refused("hdr-host-userinfo", b"GET /x HTTP/1.1\r\nHost: u@a\r\n\r\n", h11=HOST),
    refused("hdr-head-too-large", post(b"X: " + b"v" * MAX_HEAD_BYTES), 431, h11=HUGE),
    refused(
        "hdr-too-many",
        post(*[b"X: v" for _ in range(MAX_HEAD_BYTES // 6 + 1)]),
        431,
        h11=HUGE,
    ),
    # -- pipelining: nothing behind a refusal runs -------------------------------------------------
    refused("pipe-after-bad-head", post(b"Bad Name: x") + NEXT),
    refused(
        "pipe-after-bad-version",
        b"GET /x HTTP/2.0\r\nHost: a\r\n\r\n" + NEXT,
        505,
        h11=VERSION_MAJOR,
    ),
    refused(
        "pipe-good-then-bad-then-good",
        NEXT + post(b"Content-Length: +1", body=b"x") + NEXT,
        400,
        NEXT_SERVED,
    ),
    ok(
        "pipe-three",
        NEXT + post(b"Content-Length: 2", body=b"hi") + NEXT,
        NEXT_SERVED,
        up(b"hi"),
        NEXT_SERVED,
    ),
    # -- Expect: 100-continue (RFC 9110 §10.1.1) ---------------------------------------------------
    ok(
        "expect-continue",
        post(b"Expect: 100-continue", b"Content-Length: 5", body=b"hello"),
        up(b"hello"),
        continues=1,
    ),
    ok(
        "expect-continue-case-insensitive",
        post(b"Expect: 100-CONTINUE", b"Content-Length: 5", body=b"hello"),
        up(b"hello"),
        continues=1,
    ),
    ok(
        "expect-continue-chunked",
        post(b"Expect: 100-continue", b"Transfer-Encoding: chunked", body=HELLO_CHUNKED),
        up(b"hello"),
        continues=1,
    ),
    # no body to wait for: no interim response
    ok("expect-continue-no-body", post(b"Expect: 100-continue"), up(b"")),
    ok("expect-continue-zero-length", post(b"Expect: 100-continue", b"Content-Length: 0"), up(b"")),
    # an HTTP/1.0 client never waits for one: the expectation is ignored
    ok(
        "expect-continue-http10",
        post(b"Expect: 100-continue", b"Content-Length: 5", body=b"hello", version=b"1.0"),
        up(b"hello"),
    ),
    # an expectation other than 100-continue may be ignored (417 is a MAY)
    ok(
        "expect-unknown", post(b"Expect: teapot", b"Content-Length: 5", body=b"hello"), up(b"hello")
    ),
]


def by_id(cases: list[Case]) -> Any:
    assert len({case.id for case in cases}) == len(cases), "case ids are unique"
    return pytest.mark.parametrize("case", cases, ids=[case.id for case in cases])


async def recording_echo(framed: list[Framed], scope: Any, receive: Any, send: Any) -> None:
    """Record the request as framed, and answer its method, path and body as JSON (the body's
    bytes as Latin-1 code points)."""
    body = await record_request(framed, scope, receive)
    if body is None:
        return
    answer = {"method": scope["method"], "path": scope["path"], "body": body.decode("latin-1")}
    out = json.dumps(answer).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(out))]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": out})


def check_answer(case: Case, answer: bytes, *, echoed: bool = True) -> None:
    """``answer`` is what ``case`` mandates: a response to each request served (the echo of
    what was read, when ``echoed``), then the refusal with ``connection: close`` (and nothing
    after it); ``case.continues`` interim 100s."""
    got = responses(answer)
    finals = [(status, body) for status, body in got if status != 100]
    assert len(got) - len(finals) == case.continues, answer
    expected = len(case.served) + (case.refused is not None)
    assert len(finals) == expected, answer
    for (method, path, body), (status, echo) in zip(case.served, finals, strict=False):
        if echoed:
            assert status == 200, answer
            read = json.loads(echo)
            assert (read["method"], read["path"], read["body"]) == (
                method,
                path,
                body.decode("latin-1"),
            ), answer
    if case.refused is not None:
        assert finals[-1][0] == case.refused, answer
        *_, last = re.finditer(rb"HTTP/1\.[01] [0-9]{3} ", answer)
        last_head = answer[last.start() :].split(b"\r\n\r\n", 1)[0]
        assert b"connection: close" in last_head.lower(), answer


AFTER = b"GET /after HTTP/1.1\r\nHost: a\r\n\r\n"


@asynccontextmanager
async def echo_server(framed: list[Framed]) -> AsyncIterator[int]:
    """The HTTP/1.1 layer on 127.0.0.1 with :func:`recording_echo`: its port."""
    async with trio.open_nursery() as nursery:
        app = partial(recording_echo, framed)
        (url,) = await nursery.start(partial(serve, app, "127.0.0.1", 0))
        yield int(url.rsplit(":", 1)[1])
        nursery.cancel_scope.cancel()


@by_id(CASES)
async def test_over_a_socket_each_payload_is_framed_or_refused_as_the_rfc_mandates(
    case: Case,
) -> None:
    framed: list[Framed] = []
    with structlog.testing.capture_logs() as logs:
        async with echo_server(framed) as port:
            check_answer(case, await exchange(port, case.wire))
            del framed[:]
            after = await exchange(port, AFTER)
            assert [json.loads(body)["path"] for _, body in responses(after)] == ["/after"]
    assert not [e for e in logs if e["event"] in ("http_connection_failed", "http_app_failed")]


#: A payload longer than this is sent in pieces of :data:`PIECE` bytes, not one byte at a time.
ONE_BYTE_UP_TO = 8192
PIECE = 997


async def one_byte_at_a_time(wire: bytes, framed: list[Framed]) -> bytes:
    """The answer of :func:`serve_stream` to ``wire`` sent one byte at a time over a memory
    stream (each byte read by the server before the next is sent), then the end of it."""
    step = 1 if len(wire) <= ONE_BYTE_UP_TO else PIECE
    client, server = trio.testing.memory_stream_pair()
    answer = bytearray()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve_stream, partial(recording_echo, framed), server)
        with contextlib.suppress(trio.BrokenResourceError):  # the server closed first
            for start in range(0, len(wire), step):
                await client.send_all(wire[start : start + step])
                await trio.testing.wait_all_tasks_blocked()
            await client.send_eof()
        while chunk := await client.receive_some(65536):
            answer += chunk
    return bytes(answer)


@by_id(CASES)
async def test_sent_one_byte_at_a_time_each_payload_is_framed_as_sent_whole(
    case: Case, autojump_clock: trio.testing.MockClock
) -> None:
    framed: list[Framed] = []
    with structlog.testing.capture_logs() as logs:
        check_answer(case, await one_byte_at_a_time(case.wire, framed))
        assert [(f.method, decoded(f), f.body) for f in framed] == list(case.served)
        fresh: list[Framed] = []
        after = await one_byte_at_a_time(AFTER, fresh)
        assert [f.path for f in fresh] == [b"/after"], after
    assert not [e for e in logs if e["event"] in ("http_connection_failed", "http_app_failed")]


def decoded(framed: Framed) -> str:
    return decode_path(framed.path)


@by_id(CASES)
def test_h11_frames_each_payload_as_we_do_except_where_the_rfc_decides_otherwise(
    case: Case,
) -> None:
    ours: list[Framed] = []
    trio.run(
        one_byte_at_a_time, case.wire, ours, clock=trio.testing.MockClock(autojump_threshold=0)
    )
    try:
        theirs = frame_h11(case.wire)
    except h11.LocalProtocolError:  # CONNECT: h11 frames it and hands over the connection
        theirs = [Framed("CONNECT", b"", b"", "1.1", (), b"")]
    if case.h11:
        assert theirs != ours, f"h11 now frames {case.id} as we do: {case.h11!r} is stale"
    else:
        assert theirs == ours, (theirs, ours)


# -- the real erlmcp-py serve -------------------------------------------------------------------

HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


@pytest.fixture(scope="module")
def serve_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """The port of one ``erlmcp-py serve --transport http`` subprocess for the module."""
    port = free_port()
    stderr = tmp_path_factory.mktemp("serve") / "stderr"
    command = [sys.executable, "-m", "erlmcp_py.app", "serve", "--transport", "http"]
    command += ["--port", str(port), "--log-level", "warning"]
    with stderr.open("wb") as err:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stderr=err)
    try:
        deadline = time.monotonic() + 60
        while True:  # another process's state: nothing to wait on but its port
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert process.poll() is None, stderr.read_text()
                assert time.monotonic() < deadline, "erlmcp-py serve did not listen"
                time.sleep(0.05)
        yield port
        assert process.poll() is None, stderr.read_text()
    finally:
        process.terminate()
        process.wait(10)


#: The head of a POST the MCP endpoint reads the body of (it then answers a JSON-RPC error).
MCP_POST = (
    b"POST /mcp HTTP/%s\r\nHost: 127.0.0.1\r\nAccept: application/json, text/event-stream\r\n"
    b"Content-Type: application/json\r\n"
)


def to_the_mcp_endpoint(wire: bytes) -> bytes:
    """``wire`` with its POSTs to the MCP endpoint, so that the real server reads their bodies."""
    wire = wire.replace(b"POST /upload HTTP/1.1\r\nHost: a\r\n", MCP_POST % b"1.1")
    return wire.replace(b"POST /upload HTTP/1.0\r\n", MCP_POST % b"1.0")


@by_id([case for case in CASES if case.refused is not None])
async def test_the_real_server_refuses_each_refused_payload_and_serves_on(
    case: Case, serve_port: int
) -> None:
    # the application answers the requests served before the refusal its own way (a body
    # that is not JSON-RPC, a Host it does not allow): their count is checked, the refusal
    # exactly
    check_answer(case, await exchange(serve_port, to_the_mcp_endpoint(case.wire)), echoed=False)
    assert responses(await exchange(serve_port, HEALTHZ)) == [(200, b"ok\n")]


SMUGGLED = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"  # 42 bytes


@pytest.mark.parametrize(
    "wire",
    [
        # CL.0: the route never reads the body; its 42 bytes are still the body, not a request
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 42\r\n\r\n" + SMUGGLED,
        b"POST /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 42\r\n\r\n" + SMUGGLED,
        # TE.0: the same with a chunked body the route never reads
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"2a\r\n" + SMUGGLED + b"\r\n0\r\n\r\n",
        b"OPTIONS /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"2a\r\n" + SMUGGLED + b"\r\n0\r\n\r\n",
    ],
    ids=["cl0-get", "cl0-post", "te0-get", "te0-options"],
)
async def test_a_body_the_route_never_reads_is_never_read_as_a_request(
    wire: bytes, serve_port: int
) -> None:
    assert b"# TYPE" in await exchange(serve_port, SMUGGLED)  # what a smuggled one answers
    answer = await exchange(serve_port, wire)
    assert len(responses(answer)) == 1, answer
    assert b"# TYPE" not in answer  # no /metrics answer
