"""The HTTP/1.1 layer refuses what it cannot frame unambiguously, on real sockets.

Each test sends the exact bytes of one attack or malformed request to a real server on
127.0.0.1 (the Streamable HTTP transport in-process, its operations port, or the real
``erlmcp-py serve`` subprocess) and checks the answer on the wire: the refusal, that nothing
smuggled behind it ran, and that the server goes on serving.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import httpx2
import pytest
import trio

from erlmcp_py.transports import _server
from erlmcp_py.transports._http11 import ChunkedBody
from erlmcp_py.transports._server import serve
from erlmcp_py.transports.http import HttpConfig
from tests.deploy.support import free_port, poll, serve_command
from tests.transports.test_http import TIMEOUT, McpHttp, serving
from tests.transports.test_server import echo

#: A Content-Length of one more digit than Python's int() converts from a string by default.
HUGE_LENGTH = (
    b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " + b"0" * 4301 + b"\r\n\r\n"
)
HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


@asynccontextmanager
async def ports() -> AsyncIterator[tuple[int, int]]:
    """The Streamable HTTP transport in-process: its port and its operations port."""
    async with serving(config=HttpConfig(ops_port=0)) as listening:
        assert listening.ops_url is not None
        yield port_of(listening.url), port_of(listening.ops_url)


def port_of(url: str) -> int:
    return int(url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])


async def exchange(port: int, data: bytes) -> bytes:
    """Send ``data`` on a new connection, end the sending side, and read until the server
    closes (or resets) the connection."""
    with trio.fail_after(TIMEOUT):
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        async with stream:
            await stream.send_all(data)
            await stream.send_eof()
            out = bytearray()
            while True:
                try:
                    chunk = await stream.receive_some(65536)
                except trio.BrokenResourceError:
                    break
                if not chunk:
                    break
                out += chunk
            return bytes(out)


def responses(data: bytes) -> list[tuple[int, bytes]]:
    """``(status, body)`` of each complete response in ``data``, in order."""
    out: list[tuple[int, bytes]] = []
    while data:
        end = data.find(b"\r\n\r\n")
        if end < 0:
            break
        lines = data[:end].split(b"\r\n")
        status = int(lines[0].split(b" ")[1])
        fields = dict(line.lower().split(b": ", 1) for line in lines[1:])
        data = data[end + 4 :]
        if b"content-length" in fields:
            length = int(fields[b"content-length"])
            if len(data) < length:
                break
            out.append((status, data[:length]))
            data = data[length:]
            continue
        if status < 200:  # an interim response: no body
            out.append((status, b""))
            continue
        body = bytearray()
        while True:  # chunked
            line_end = data.find(b"\r\n")
            if line_end < 0:
                return out
            size = int(data[:line_end], 16)
            if len(data) < line_end + 2 + size + 2:
                return out
            body += data[line_end + 2 : line_end + 2 + size]
            data = data[line_end + 2 + size + 2 :]
            if size == 0:
                break
        out.append((status, bytes(body)))
    return out


def statuses(data: bytes) -> list[int]:
    return [status for status, _ in responses(data)]


SMUGGLED = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"  # 42 bytes


@asynccontextmanager
async def echo_port() -> AsyncIterator[int]:
    """The bare HTTP/1.1 layer on 127.0.0.1 with an application that echoes what it read."""
    async with trio.open_nursery() as nursery:
        (url,) = await nursery.start(partial(serve, echo, "127.0.0.1", 0))
        yield int(url.rsplit(":", 1)[1])
        nursery.cancel_scope.cancel()


def chunked(path: bytes = b"/upload") -> bytes:
    return b"POST " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"


def refused_alone(answer: bytes, reason: bytes, status: int = 400) -> None:
    """``answer`` is one refusal (``status``, giving ``reason``) and the connection closed
    after it: nothing sent behind the refused bytes ran."""
    assert responses(answer) == [(status, reason + b"\n")], answer
    assert b"connection: close" in answer.split(b"\r\n\r\n", 1)[0]


# -- a number too long to convert ----------------------------------------------------------------


async def test_a_content_length_past_the_int_limit_is_refused_and_the_server_serves_on(
    tmp_path: Path,
) -> None:
    port, ops = free_port(), free_port()
    command = serve_command(
        "--transport", "http", "--port", str(port), "--ops-port", str(ops), "--log-level", "info"
    )
    with (tmp_path / "stderr").open("wb") as err, trio.fail_after(60):
        process = await trio.lowlevel.open_process(command, stdin=subprocess.DEVNULL, stderr=err)
        try:
            for listener in (port, ops):
                while True:  # until the server listens
                    try:
                        await exchange(listener, HEALTHZ)
                        break
                    except OSError:
                        await trio.sleep(0.05)
            for listener in (port, ops):
                answer = await exchange(listener, HUGE_LENGTH)
                assert statuses(answer) == [400], answer
                assert b"connection: close" in answer
                assert process.returncode is None
                # both listeners serve on (the operations paths live on the ops port alone)
                assert statuses(await exchange(port, HEALTHZ)) == [404]
                assert responses(await exchange(ops, HEALTHZ)) == [(200, b"ok\n")]
        finally:
            process.terminate()
            await process.wait()
    assert "http_request_refused" in (tmp_path / "stderr").read_text()


def test_a_content_length_is_at_most_eighteen_digits() -> None:
    head = b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: "
    assert _server.parse_head(head + b"9" * 18).length == 10**18 - 1
    for digits in (19, 4301, 100_000):
        with pytest.raises(_server.HttpRequestError) as refused:
            _server.parse_head(head + b"1" * digits)
        assert refused.value.status == 400


async def test_an_unforeseen_parser_error_answers_400_and_closes_that_connection_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parse_head = _server.parse_head

    def broken(data: bytes) -> Any:
        if b"/boom" in data:
            raise ValueError("a bug the bytes found")
        return parse_head(data)

    monkeypatch.setattr(_server, "parse_head", broken)
    async with echo_port() as port:
        boom = b"GET /boom HTTP/1.1\r\nHost: a\r\n\r\n" + b"GET /next HTTP/1.1\r\nHost: a\r\n\r\n"
        refused_alone(await exchange(port, boom), b"bad request")
        ((status, body),) = responses(
            await exchange(port, b"GET /after HTTP/1.1\r\nHost: a\r\n\r\n")
        )
        assert status == 200
        assert b'"/after"' in body


async def test_an_unforeseen_body_reader_error_answers_400_not_the_applications_500(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    read = ChunkedBody.read

    def broken(self: ChunkedBody, buffer: bytearray) -> bytes:
        if b"boom" in buffer:
            raise ValueError("a bug the bytes found")
        return read(self, buffer)

    monkeypatch.setattr(ChunkedBody, "read", broken)
    async with echo_port() as port:
        answer = await exchange(port, chunked() + b"4\r\nboom\r\n0\r\n\r\n" + SMUGGLED)
        refused_alone(answer, b"bad request")
        fine = await exchange(port, chunked() + b"2\r\nok\r\n0\r\n\r\n")
        assert responses(fine) == [(200, b'{"method": "POST", "path": "/upload", "body": "ok"}')]


# -- smuggling: what a front end reads as two requests is never read here as one, or the reverse --


async def test_a_bare_lf_inside_a_header_line_is_refused_not_kept_in_the_value() -> None:
    # a front end that reads LF as a line end (h11 does) sees Content-Length: 42 and one
    # request with a body; a server keeping "a\nContent-Length: 42" as X-Probe's value would
    # run those 42 bytes as a second request
    attack = (
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Probe: a\nContent-Length: 42\r\n\r\n"
        + SMUGGLED
    )
    assert len(SMUGGLED) == 42
    async with ports() as (_, ops):
        refused_alone(await exchange(ops, attack), b"bare CR or LF in the request head")
        assert responses(await exchange(ops, HEALTHZ)) == [(200, b"ok\n")]


async def test_a_head_with_bare_lf_line_ends_is_refused_at_once() -> None:
    async with ports() as (_, ops):
        stream = await trio.open_tcp_stream("127.0.0.1", ops)
        # the head is not complete (no CRLF CRLF): refused without waiting for the rest
        await stream.send_all(b"GET /healthz HTTP/1.1\nHost: 127.0.0.1\n")
        with trio.fail_after(TIMEOUT):
            answer = bytearray()
            while chunk := await stream.receive_some(65536):
                answer += chunk
        refused_alone(bytes(answer), b"bare CR or LF in the request head")
        await stream.aclose()


@pytest.mark.parametrize(
    "value",
    [b"close\0", b"cl\0ose", b"close\x0b", b"\x7fclose"],
    ids=["nul", "inner-nul", "vt", "del"],
)
async def test_a_control_character_in_a_field_value_is_refused(value: bytes) -> None:
    # "close\0" is not "close": kept as a value, the connection would stay open and the
    # request behind would run
    attack = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: " + value + b"\r\n\r\n"
    async with ports() as (_, ops):
        answer = await exchange(ops, attack + SMUGGLED)
        refused_alone(answer, b"control character in the request head")


@pytest.mark.parametrize(
    "target",
    [b"/healthz\0", b"/health\0z", b"/healthz\r", b"/he\nalthz"],
    ids=["nul", "nul2", "cr", "lf"],
)
async def test_a_nul_cr_or_lf_in_the_target_is_refused(target: bytes) -> None:
    async with ports() as (_, ops):
        answer = await exchange(ops, b"GET " + target + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert statuses(answer) == [400], answer


async def test_a_bare_lf_in_a_chunk_extension_is_refused_and_nothing_after_it_runs() -> None:
    # "28;x\n": a front end reading LF as the line end sees a 40-byte chunk starting after the
    # LF; read up to the CRLF instead, the chunk line would swallow those bytes
    body = b"28;x\n\r\n" + b"a" * 40 + b"\r\n0\r\n\r\n"
    async with echo_port() as port:
        answer = await exchange(port, chunked() + body + SMUGGLED)
        refused_alone(answer, b"bare CR or LF in a chunked body")


@pytest.mark.parametrize(
    "end",
    [
        b"0\r\nX-Trailer: a\n\n",  # a trailer section ended by bare LFs
        b"0\r\n\n",  # an empty trailer section ended by a bare LF
        b"0\r\n",  # no empty line: the next request is not a trailer section
        b"0\r\nX-Trailer: a\r\n",  # a trailer, then no empty line
    ],
    ids=["lf-lf", "lf", "no-crlf", "trailer-no-crlf"],
)
async def test_a_trailer_section_not_ended_by_crlf_never_swallows_the_next_request(
    end: bytes,
) -> None:
    # a body ended at the first CRLF CRLF anywhere after the last chunk would read the request
    # behind (one a front end forwards as the next) as trailers, and never answer it
    async with echo_port() as port:
        answer = await exchange(port, chunked() + b"5\r\nhello\r\n" + end + SMUGGLED)
        assert statuses(answer) == [400], answer
        assert b"/metrics" not in answer


async def test_trailer_fields_follow_the_rules_of_header_fields() -> None:
    async with echo_port() as port:
        for trailer in (b"Bad Name: x", b"X: a\0b", b" folded: x", b"no colon"):
            body = b"5\r\nhello\r\n0\r\n" + trailer + b"\r\n\r\n"
            answer = await exchange(port, chunked() + body + SMUGGLED)
            assert statuses(answer) == [400], (trailer, answer)
        good = b"5\r\nhello\r\n0\r\nX-Sum: 1\r\nX-Other:  two \r\n\r\n"
        answer = await exchange(port, chunked() + good + SMUGGLED)
        assert statuses(answer) == [200, 200], answer
        assert b'"body": "hello"' in answer


# -- the MUSTs of RFC 9112 §3.2 and RFC 9110 ----------------------------------------------------


async def test_a_second_host_line_is_refused() -> None:
    twice = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n\r\n"
    async with ports() as (_, ops):
        refused_alone(await exchange(ops, twice), b"Host sent twice")


@pytest.mark.parametrize("path", [b"/healthz", b"/nowhere"])
async def test_http_1_1_without_host_is_refused_400(path: bytes) -> None:
    async with ports() as (port, ops):
        for listener in (port, ops):
            answer = await exchange(listener, b"GET " + path + b" HTTP/1.1\r\n\r\n")
            refused_alone(answer, b"missing Host")


@pytest.mark.parametrize(
    "host", [b"evil.example/x", b"a b", b"127.0.0.1:80:80", b"[::1", b"@127.0.0.1", b"h\xe9"]
)
async def test_a_malformed_host_value_is_refused(host: bytes) -> None:
    async with ports() as (_, ops):
        answer = await exchange(ops, b"GET /healthz HTTP/1.1\r\nHost: " + host + b"\r\n\r\n")
        refused_alone(answer, b"malformed Host")


async def test_http_1_0_without_host_is_framed_and_left_to_the_host_check() -> None:
    async with ports() as (_, ops):
        assert statuses(await exchange(ops, b"GET /healthz HTTP/1.0\r\n\r\n")) == [403]


async def test_an_absolute_form_target_is_checked_and_routed_by_its_authority() -> None:
    # RFC 9112 §3.2.2: the Host line is ignored for the target's authority; routing by the
    # Host line would let a target naming any host past the Host allow-list
    async with ports() as (_, ops):
        evil = b"GET http://evil.example/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        assert responses(await exchange(ops, evil)) == [(403, b"Forbidden: Host not allowed\n")]
        ours = b"GET http://127.0.0.1/healthz HTTP/1.1\r\nHost: evil.example\r\n\r\n"
        assert responses(await exchange(ops, ours)) == [(200, b"ok\n")]
        upper = b"GET HTTP://127.0.0.1:1/readyz?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        assert responses(await exchange(ops, upper)) == [(200, b"ready\n")]


@pytest.mark.parametrize(
    "target",
    [
        b"http:///healthz",  # an empty host
        b"http://:80/healthz",
        b"http://user@127.0.0.1/healthz",  # user info
        b"http://127.0.0.1 /healthz",
        b"ftp://127.0.0.1/healthz",
        b"http://evil.example#/healthz",
    ],
)
async def test_a_malformed_absolute_form_target_is_refused(target: bytes) -> None:
    async with ports() as (_, ops):
        answer = await exchange(ops, b"GET " + target + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert statuses(answer) == [400], answer


@pytest.mark.parametrize(
    "target",
    [b"%2Fhealthz", b"%2fmetrics", b"healthz", b"*", b"/health%zz", b"/health%2", b"/a b", b"/x#y"],
)
async def test_an_invalid_origin_form_target_is_refused_not_decoded_into_a_route(
    target: bytes,
) -> None:
    async with ports() as (_, ops):
        answer = await exchange(ops, b"GET " + target + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert statuses(answer) == [400], answer


async def test_percent_decoding_never_adds_a_path_segment() -> None:
    async with echo_port() as port:
        target = b"/a%2Fb%2fc/%41%20d?q=%2F|[x]"
        answer = await exchange(port, b"GET " + target + b" HTTP/1.1\r\nHost: h\r\n\r\n")
        ((status, body),) = responses(answer)
        assert status == 200
        assert b'"path": "/a%2Fb%2Fc/A d"' in body
    async with ports() as (_, ops):
        for target in (b"/%2Fhealthz", b"/healthz%2F", b"/%68ealthz%2F"):
            answer = await exchange(ops, b"GET " + target + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert statuses(answer) == [404], (target, answer)
        # an encoded letter is that letter (RFC 3986 §6.2.2.2): the same route
        answer = await exchange(ops, b"GET /%68ealthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert responses(answer) == [(200, b"ok\n")]


async def test_options_asterisk_reaches_the_application_and_connect_is_not_implemented() -> None:
    async with echo_port() as port:
        answer = await exchange(port, b"OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n")
        ((status, body),) = responses(answer)
        assert status == 200
        assert b'"path": "*"' in body
        connect = b"CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: 127.0.0.1:22\r\n\r\n"
        refused_alone(await exchange(port, connect), b"CONNECT is not supported", 501)


@pytest.mark.parametrize(
    "body",
    [
        b"0x5\r\nhello\r\n0\r\n\r\n",  # not hex
        b"5\r\nhelloXX0\r\n\r\n",  # no CRLF after the data
        b"1" * 17 + b"\r\n",  # more than 16 hex digits
        b"1" * 4301 + b"\r\n",
        b"5 \r\nhello\r\n0\r\n\r\n",  # whitespace without an extension
        b"5;\r\nhello\r\n0\r\n\r\n",  # an extension without a name
        b'5;a="b\r\nhello\r\n0\r\n\r\n',  # an unterminated quoted string
        b"-5\r\nhello\r\n0\r\n\r\n",
    ],
)
async def test_a_malformed_chunked_body_is_answered_400_not_500(body: bytes) -> None:
    async with echo_port() as port:
        answer = await exchange(port, chunked() + body + SMUGGLED)
        assert statuses(answer) == [400], answer
        assert b"connection: close" in answer


async def test_chunk_extensions_by_their_grammar_are_read_past() -> None:
    body = b'5 ; a = b ;c="q \\" ;"\t;d\r\nhello\r\n000\r\n\r\n'
    async with echo_port() as port:
        answer = await exchange(port, chunked() + body + SMUGGLED)
        assert statuses(answer) == [200, 200], answer
        assert b'"body": "hello"' in answer


async def test_expect_continue_on_an_sse_get_never_writes_100_inside_the_stream() -> None:
    # the stream's head goes out at once; reading the body afterwards must not put an
    # interim "HTTP/1.1 100 Continue" inside the chunked 200 (RFC 9110 §15.2)
    async with serving() as listening, httpx2.AsyncClient(timeout=TIMEOUT) as http:
        session = McpHttp(http, listening.url)
        await session.initialize()
        assert session.session_id is not None
        get = (
            b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
            b"Mcp-Session-Id: " + session.session_id.encode() + b"\r\n"
            b"MCP-Protocol-Version: " + session.version.encode() + b"\r\n"
            b"Expect: 100-continue\r\nContent-Length: 5\r\n\r\n"
        )
        with trio.fail_after(TIMEOUT):
            stream = await trio.open_tcp_stream("127.0.0.1", port_of(listening.url))
            async with stream:
                await stream.send_all(get)
                answer = bytearray()
                while b"\r\n\r\n" not in answer:  # the stream's head
                    answer += await stream.receive_some(65536)
                await stream.send_all(b"hello")  # the body, as if after the 100
                await stream.send_eof()
                while chunk := await stream.receive_some(65536):
                    answer += chunk
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n"), answer
    assert b"100 Continue" not in answer
    assert statuses(bytes(answer)) == [200]


async def test_a_204_or_304_carries_neither_a_body_nor_its_framing() -> None:
    async def no_content(scope: Any, receive: Any, send: Any) -> None:
        status = int(scope["path"][1:])
        headers = [(b"content-length", b"3")] if status == 304 else []
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b"abc"})

    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            (url,) = await nursery.start(partial(serve, no_content, "127.0.0.1", 0))
            requests = b"GET /204 HTTP/1.1\r\nHost: h\r\n\r\nGET /304 HTTP/1.1\r\nHost: h\r\n\r\n"
            answer = await exchange(int(url.rsplit(":", 1)[1]), requests)
            first, second, rest = answer.split(b"\r\n\r\n")
            assert first.startswith(b"HTTP/1.1 204 No Content\r\n")
            assert second.startswith(b"HTTP/1.1 304 ")
            for head in (first, second):
                assert b"content-length" not in head
                assert b"transfer-encoding" not in head
            assert rest == b""
            nursery.cancel_scope.cancel()


# -- a client that does not read ----------------------------------------------------------------

TCP_CLOSE_WAIT, TCP_CLOSE = 8, 7  # tcpi_state (linux/tcp_states.h): the peer closed


def peer_closed(sock: trio.socket.SocketType) -> bool:
    """Whether the other end closed (FIN or RST received), without reading anything."""
    state = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)[0]
    return state in (TCP_CLOSE_WAIT, TCP_CLOSE)


async def test_a_client_that_never_reads_its_answers_is_closed_after_the_write_timeout() -> None:
    # 3,000 pipelined scrapes, never read: the answers fill the socket buffers, then a write
    # waits for the client, at most write_timeout_s
    config = HttpConfig(ops_port=0, write_timeout_s=0.5)
    async with serving(config=config) as listening, trio.open_nursery() as nursery:
        assert listening.ops_url is not None
        stream = await trio.open_tcp_stream("127.0.0.1", port_of(listening.ops_url))
        metrics = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"

        async def pipeline() -> None:
            with contextlib.suppress(trio.BrokenResourceError):
                await stream.send_all(metrics * 3000)

        nursery.start_soon(pipeline)
        start = trio.current_time()
        await poll(lambda: peer_closed(stream.socket), "the server to close", 20)
        assert trio.current_time() - start < 15
        nursery.cancel_scope.cancel()
        stream.socket.close()


# -- closing -------------------------------------------------------------------------------------


async def test_a_refusal_is_read_to_its_end_while_the_client_still_sends() -> None:
    # RFC 9112 §9.6: closed at once with the body unread, the connection would be reset
    # under the client (its writes fail, and a reset can destroy the response before it is
    # read); half-closed and drained, the client reads the refusal and a clean end
    head = (
        b"POST /upload HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Name: x\r\n"
        b"Content-Length: 4000000\r\n\r\n"
    )
    async with echo_port() as port, trio.open_nursery() as nursery:
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        sent = trio.Event()

        async def send_body() -> None:
            await stream.send_all(head + b"x" * 4_000_000)  # the server drains it: no reset
            await stream.send_eof()
            sent.set()

        nursery.start_soon(send_body)
        answer = bytearray()
        with trio.fail_after(TIMEOUT):
            while chunk := await stream.receive_some(65536):  # never a reset
                answer += chunk
            await sent.wait()
        refused_alone(bytes(answer), b"malformed header name")
        await stream.aclose()
