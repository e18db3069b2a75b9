"""The HTTP/1.1 server layer: request heads, bodies, keep-alive, deadlines and stopping.

Connections are trio memory stream pairs (with the autojump clock for the deadlines) or real
sockets on 127.0.0.1; the application is a small ASGI echo.
"""

from __future__ import annotations

import errno
import json
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import given, strategies as st

from erlmcp_py.transports._server import (
    KEEP_ALIVE_S,
    LINGER_S,
    MAX_HEAD_BYTES,
    WRITE_TIMEOUT_S,
    HttpRequestError,
    _Server,
    parse_head,
    serve,
    serve_stream,
)
from tests.components import require_ipv6

Message = dict[str, Any]


async def echo(
    scope: dict[str, Any],
    receive: Callable[[], Awaitable[Message]],
    send: Callable[[Message], Awaitable[None]],
) -> None:
    """Answer the method, path and body it read, as JSON."""
    body = b""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        body += message["body"]
        if not message["more_body"]:
            break
    answer = {"method": scope["method"], "path": scope["path"], "body": body.decode()}
    out = json.dumps(answer).encode()
    headers = [(b"content-length", b"%d" % len(out))]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": out})


@asynccontextmanager
async def connection(app: Any = echo, keep_alive_s: float = 5.0) -> AsyncIterator[trio.abc.Stream]:
    client, server = trio.testing.memory_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(partial(serve_stream, app, server, keep_alive_s=keep_alive_s))
        yield client
        nursery.cancel_scope.cancel()


async def read_response(stream: trio.abc.Stream, buffer: bytearray) -> tuple[bytes, bytes]:
    """One response: its head, and its body (by Content-Length, or chunked, decoded)."""
    while b"\r\n\r\n" not in buffer:
        data = await stream.receive_some(65536)
        assert data, bytes(buffer)
        buffer += data
    end = buffer.index(b"\r\n\r\n")
    head = bytes(buffer[:end]).lower()
    del buffer[: end + 4]
    length = next(
        (
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.startswith(b"content-") and line.startswith(b"content-length")
        ),
        None,
    )
    if length is not None:
        while len(buffer) < length:
            buffer += await stream.receive_some(65536)
        body = bytes(buffer[:length])
        del buffer[:length]
        return head, body
    assert b"transfer-encoding: chunked" in head
    body = bytearray()
    while True:
        while b"\r\n" not in buffer:
            buffer += await stream.receive_some(65536)
        line_end = buffer.index(b"\r\n")
        size = int(bytes(buffer[:line_end]), 16)
        while len(buffer) < line_end + 2 + size + 2:
            buffer += await stream.receive_some(65536)
        body += buffer[line_end + 2 : line_end + 2 + size]
        del buffer[: line_end + 2 + size + 2]
        if size == 0:
            return head, bytes(body)


async def closed(stream: trio.abc.Stream) -> bool:
    """Whether the server closed the connection (after anything it still sends)."""
    while True:
        try:
            data = await stream.receive_some(65536)
        except trio.BrokenResourceError:
            return True
        if not data:
            return True


def post(body: bytes, *extra: bytes) -> bytes:
    head = [b"POST /mcp HTTP/1.1", b"Host: x", b"Content-Length: %d" % len(body), *extra]
    return b"\r\n".join(head) + b"\r\n\r\n" + body


# -- heads -------------------------------------------------------------------------------------


def test_a_head_is_parsed_with_lower_case_names_and_its_body_framing() -> None:
    head = parse_head(b"POST /mcp?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length:  12 \r\nX-Thing: A b")
    assert (head.method, head.target, head.version) == ("POST", b"/mcp?x=1", "1.1")
    assert head.headers == [(b"host", b"a"), (b"content-length", b"12"), (b"x-thing", b"A b")]
    assert (head.length, head.chunked, head.keep_alive) == (12, False, True)
    chunked = parse_head(b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked")
    assert (chunked.length, chunked.chunked) == (0, True)


def test_keep_alive_follows_the_version_and_the_connection_header() -> None:
    assert parse_head(b"GET / HTTP/1.1\r\nHost: a").keep_alive
    assert not parse_head(b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close").keep_alive
    assert not parse_head(b"GET / HTTP/1.0").keep_alive
    assert parse_head(b"GET / HTTP/1.0\r\nConnection: Keep-Alive").keep_alive


@pytest.mark.parametrize(
    ("head", "status"),
    [
        (b"GET /", 400),
        (b"GET  / HTTP/1.1", 400),
        (b"G(T / HTTP/1.1", 400),
        (b"GET / HTTP/2.0", 505),
        (b"GET / FTP/1.1", 400),
        (b"GET / HTTP/1.1\r\nno colon", 400),
        (b"GET / HTTP/1.1\r\nA: b\r\n folded", 400),
        (b"GET / HTTP/1.1\r\nBad Name: b", 400),
        (b"GET / HTTP/1.1\r\nContent-Length: -1", 400),
        (b"GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2", 400),
        (b"GET / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked", 400),
        (b"GET / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked", 501),
        (b"GET / HTTP/1.1\r\nTransfer-Encoding: gzip", 400),
        (b"GET / HTTP/1.0\r\nTransfer-Encoding: chunked", 400),
    ],
)
def test_a_malformed_head_is_refused_with_its_status(head: bytes, status: int) -> None:
    with pytest.raises(HttpRequestError) as refused:
        parse_head(head)
    assert refused.value.status == status


@given(st.binary(max_size=200))
def test_any_bytes_parse_or_are_refused(data: bytes) -> None:
    status = 0
    try:
        parse_head(data)
    except HttpRequestError as refused:
        status = refused.status
    assert status in (0, 400, 501, 505)


# -- connections -------------------------------------------------------------------------------


async def test_keep_alive_answers_requests_one_after_the_other(autojump_clock: object) -> None:
    async with connection() as stream:
        buffer = bytearray()
        for i in range(3):
            await stream.send_all(post(b"body %d" % i))
            head, body = await read_response(stream, buffer)
            assert head.startswith(b"http/1.1 200 ok")
            assert b"connection: close" not in head
            assert head.count(b"content-length") == 1
            assert head.count(b"\r\ndate: ") == 1
            assert json.loads(body)["body"] == f"body {i}"


async def test_pipelined_requests_are_answered_in_order(autojump_clock: object) -> None:
    async with connection() as stream:
        await stream.send_all(
            post(b"one") + post(b"two") + b"GET /three HTTP/1.1\r\nHost: x\r\n\r\n"
        )
        buffer = bytearray()
        answers = [json.loads((await read_response(stream, buffer))[1]) for _ in range(3)]
        assert [a["body"] for a in answers] == ["one", "two", ""]
        assert answers[2]["path"] == "/three"


async def test_a_chunked_body_is_reassembled(autojump_clock: object) -> None:
    async with connection() as stream:
        head = b"POST /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        await stream.send_all(head + b"5;ext=1\r\nhello\r\n")
        await trio.sleep(0.1)
        await stream.send_all(b"1\r\n \r\nA\r\n0123456789\r\n0\r\nTrailer: x\r\n\r\n")
        head_out, body = await read_response(stream, bytearray())
        assert head_out.startswith(b"http/1.1 200")
        assert json.loads(body)["body"] == "hello 0123456789"


async def test_a_malformed_chunk_ends_the_request_and_the_connection(
    autojump_clock: object,
) -> None:
    async with connection() as stream:
        await stream.send_all(
            b"POST /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n"
        )
        assert await closed(stream)


async def test_an_idle_connection_is_closed_after_the_keep_alive(autojump_clock: object) -> None:
    async with connection(keep_alive_s=2.0) as stream:
        await stream.send_all(post(b"x"))
        await read_response(stream, bytearray())
        start = trio.current_time()
        assert await closed(stream)
        assert trio.current_time() - start == pytest.approx(2.0)


async def test_an_idle_connection_outlives_the_client_pools_idle_expiry_by_default(
    autojump_clock: object,
) -> None:
    # httpx (the official SDK's client) reuses a pooled connection idle for up to 5 s, aiohttp
    # up to 15 s: the server must not close it under a request on its way
    client, server = trio.testing.memory_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve_stream, echo, server)
        buffer = bytearray()
        await client.send_all(post(b"first"))
        await read_response(client, buffer)
        await trio.sleep(15.0)
        await client.send_all(post(b"again"))
        head, body = await read_response(client, buffer)
        assert head.startswith(b"http/1.1 200")
        assert json.loads(body)["body"] == "again"
        start = trio.current_time()
        assert await closed(client)
        assert trio.current_time() - start == pytest.approx(KEEP_ALIVE_S)
        nursery.cancel_scope.cancel()


async def test_a_head_that_trickles_is_closed_at_the_keep_alive(autojump_clock: object) -> None:
    async with connection(keep_alive_s=2.0) as stream:
        start = trio.current_time()
        with trio.move_on_after(10):
            for byte in post(b"x"):  # one byte every 0.5 s: the head takes longer than 2 s
                try:
                    await stream.send_all(bytes([byte]))
                except trio.BrokenResourceError:
                    break  # closed
                await trio.sleep(0.5)
        assert await closed(stream)
        assert trio.current_time() - start < 3.0


async def test_http_1_0_gets_a_response_and_a_close(autojump_clock: object) -> None:
    async with connection() as stream:
        await stream.send_all(b"POST /x HTTP/1.0\r\nContent-Length: 2\r\n\r\nhi")
        head, body = await read_response(stream, bytearray())
        assert head.startswith(b"http/1.0 200")
        assert json.loads(body)["body"] == "hi"
        assert await closed(stream)


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"GET / HTTP/2.0\r\n\r\n", b"505"),
        (b"GET / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", b"501"),
        (b"GET / HTTP/1.1\r\nX: " + b"a" * MAX_HEAD_BYTES + b"\r\n\r\n", b"431"),
        (b"nonsense\r\n\r\n", b"400"),
    ],
)
async def test_a_refused_head_is_answered_and_closed(
    request_bytes: bytes, status: bytes, autojump_clock: object
) -> None:
    async with connection() as stream:
        await stream.send_all(request_bytes)
        head, _ = await read_response(stream, bytearray())
        assert head.startswith(b"http/1.1 " + status), head
        assert b"connection: close" in head
        assert await closed(stream)


async def test_after_a_refusal_the_server_half_closes_and_reads_on_at_most_the_linger(
    autojump_clock: object,
) -> None:
    client, server = trio.testing.memory_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve_stream, echo, server)
        await client.send_all(b"GET / HTTP/2.0\r\n\r\n")
        head, _ = await read_response(client, bytearray())
        assert head.startswith(b"http/1.1 505")
        assert await client.receive_some(65536) == b""  # the server's side is closed...
        start = trio.current_time()
        while trio.current_time() - start < LINGER_S - 0.5:
            await client.send_all(b"more")  # ...and it still reads what the client sends
            await trio.sleep(0.5)
        await trio.testing.wait_all_tasks_blocked()
        assert nursery.child_tasks  # within the linger
        await trio.sleep(0.6)
        assert not nursery.child_tasks  # then it closes, the client quiet or not


async def test_an_answer_before_the_body_is_read_closes_the_connection(
    autojump_clock: object,
) -> None:
    async def refuse(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 413, "headers": []})
        await send({"type": "http.response.body", "body": b"too big"})

    async with connection(refuse) as stream:
        await stream.send_all(post(b"x" * 10)[:-5])  # the body is not all there
        head, body = await read_response(stream, bytearray())
        assert head.startswith(b"http/1.1 413")
        assert b"connection: close" in head
        assert body == b"too big"
        assert await closed(stream)


async def test_a_streamed_response_is_chunked_and_the_head_goes_with_its_first_body(
    autojump_clock: object,
) -> None:
    async def stream_app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"", "more_body": True})
        for part in (b"a", b"bc"):
            await trio.sleep(1)
            await send({"type": "http.response.body", "body": part, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async with connection(stream_app) as stream:
        await stream.send_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        first = await stream.receive_some(65536)
        assert first.lower().startswith(b"http/1.1 200")
        assert first.endswith(b"\r\n\r\n")  # the head alone, sent at once
        head, body = await read_response(stream, bytearray(first))
        assert b"transfer-encoding: chunked" in head
        assert body == b"abc"


async def test_receive_after_the_body_reports_the_client_leaving(autojump_clock: object) -> None:
    seen: list[str] = []

    async def wait_for_leave(scope: Any, receive: Any, send: Any) -> None:
        seen.append((await receive())["type"])
        seen.append((await receive())["type"])

    async with connection(wait_for_leave) as stream:
        await stream.send_all(post(b"{}"))
        await trio.sleep(1)
        assert seen == ["http.request"]
        await stream.aclose()
        await trio.sleep(1)
        assert seen == ["http.request", "http.disconnect"]


async def test_a_failing_application_is_answered_500_and_closed(autojump_clock: object) -> None:
    async def broken(scope: Any, receive: Any, send: Any) -> None:
        raise RuntimeError("bug")

    async with connection(broken) as stream:
        await stream.send_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        head, _ = await read_response(stream, bytearray())
        assert head.startswith(b"http/1.1 500")
        assert await closed(stream)


async def test_expect_continue_is_answered_before_the_body_is_read(
    autojump_clock: object,
) -> None:
    async with connection() as stream:
        await stream.send_all(
            b"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n"
        )
        assert (await stream.receive_some(65536)).startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
        await stream.send_all(b"ok")
        _, body = await read_response(stream, bytearray())
        assert json.loads(body)["body"] == "ok"


async def test_a_response_the_client_never_reads_is_given_up_after_the_write_timeout(
    autojump_clock: object,
) -> None:
    body = b"x" * 65536
    told_gone: list[float] = []

    async def stream_app(scope: Any, receive: Any, send: Any) -> None:
        assert (await receive())["type"] == "http.request"
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": body, "more_body": True})
        if (await receive())["type"] == "http.disconnect":  # the write gave up: told at once
            told_gone.append(trio.current_time())

    # a lockstep stream takes no byte the client does not read: the first write waits
    client, server = trio.testing.lockstep_stream_pair()
    start = trio.current_time()
    with trio.fail_after(WRITE_TIMEOUT_S * 10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client.send_all, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            await serve_stream(stream_app, server)
    # the default timeout, plus a second per 32 KiB written (the head, the chunk framing)
    waited = trio.current_time() - start
    assert WRITE_TIMEOUT_S + 2 < waited < WRITE_TIMEOUT_S + 2.01
    assert told_gone == [pytest.approx(start + waited)]


async def test_the_write_timeout_is_per_write_so_a_slow_stream_lives_on(
    autojump_clock: object,
) -> None:
    parts = 5

    async def slow_stream(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        for _ in range(parts):
            await send({"type": "http.response.body", "body": b"event", "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    client, server = trio.testing.lockstep_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(partial(serve_stream, slow_stream, server, write_timeout_s=2.0))
        await client.send_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        buffer = bytearray()
        while not buffer.endswith(b"0\r\n\r\n"):  # a reader slower than the timeout in all
            await trio.sleep(1.5)
            buffer += await client.receive_some(65536)
        assert buffer.count(b"5\r\nevent\r\n") == parts
        nursery.cancel_scope.cancel()


# -- real sockets ------------------------------------------------------------------------------


async def test_stopping_closes_idle_connections_and_lets_a_request_finish() -> None:
    stop = trio.Event()
    release = trio.Event()

    async def slow(scope: Any, receive: Any, send: Any) -> None:
        await release.wait()
        await echo(scope, receive, send)

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            (url,) = await nursery.start(
                partial(serve, slow, "127.0.0.1", 0, shutdown_trigger=stop.wait)
            )
            port = int(url.rsplit(":", 1)[1])
            idle = await trio.open_tcp_stream("127.0.0.1", port)
            busy = await trio.open_tcp_stream("127.0.0.1", port)
            await busy.send_all(post(b"late"))
            await trio.sleep(0.1)
            stop.set()
            assert await closed(idle)
            release.set()
            head, body = await read_response(busy, bytearray())
            assert head.startswith(b"http/1.1 200")
            assert b"connection: close" in head
            assert json.loads(body)["body"] == "late"
            assert await closed(busy)
        with pytest.raises(OSError):
            await trio.open_tcp_stream("127.0.0.1", port)


async def test_an_ipv6_address_is_served_and_named_in_brackets() -> None:
    require_ipv6()
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            (url,) = await nursery.start(partial(serve, echo, "::1", 0))
            assert url.startswith("http://[::1]:")
            stream = await trio.open_tcp_stream("::1", int(url.rsplit(":", 1)[1]))
            await stream.send_all(post(b"six"))
            _, body = await read_response(stream, bytearray())
            assert json.loads(body)["body"] == "six"
            nursery.cancel_scope.cancel()


async def test_a_pipelining_client_lets_other_tasks_run_between_its_requests() -> None:
    """Reads and writes that do not wait do not yield, so the connection yields before each
    request read without a wait: another task runs between two pipelined requests."""
    count = 100
    ticks = 0
    seen: list[int] = []  # the ticks when each request reached the application

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await trio.lowlevel.checkpoint()
            ticks += 1

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(ticks)
        await echo(scope, receive, send)

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            (url,) = await nursery.start(partial(serve, app, "127.0.0.1", 0))
            stream = await trio.open_tcp_stream("127.0.0.1", int(url.rsplit(":", 1)[1]))
            nursery.start_soon(ticker)
            await stream.send_all(b"".join(post(b"%d" % i) for i in range(count)))
            buffer = bytearray()
            answers = [json.loads((await read_response(stream, buffer))[1]) for _ in range(count)]
            assert [a["body"] for a in answers] == [str(i) for i in range(count)]
            assert seen[-1] - seen[0] >= count // 2
            nursery.cancel_scope.cancel()


async def test_an_accept_that_reports_its_connection_gone_goes_on_accepting() -> None:
    """accept() failing for the one connection it takes (ECONNABORTED, or a network error
    Linux reports on it) does not stop the server: the next connection is served."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.setblocking(False)

    class Aborting:
        """The listener, whose first accept reports its connection aborted."""

        failed = False

        def getsockname(self) -> Any:
            return listener.getsockname()

        def fileno(self) -> int:
            return listener.fileno()

        def accept(self) -> tuple[socket.socket, Any]:
            if not self.failed:
                self.failed = True
                raise ConnectionAbortedError(errno.ECONNABORTED, "aborted")
            return listener.accept()

    with listener, trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_Server(echo, 5.0, 5.0).accept_loop, Aborting(), nursery)
            stream = await trio.open_tcp_stream("127.0.0.1", listener.getsockname()[1])
            await stream.send_all(post(b"after"))
            _, body = await read_response(stream, bytearray())
            assert json.loads(body)["body"] == "after"
            nursery.cancel_scope.cancel()
