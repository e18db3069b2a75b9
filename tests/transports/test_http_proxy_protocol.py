"""``erlmcp-py serve --proxy-protocol --forwarded-allow-ips 127.0.0.1`` in a subprocess, over
real sockets on 127.0.0.1.

A connection from 127.0.0.1 (the trusted balancer) starts with a PROXY protocol header whose
source is the client from then on: each source has its own session share. A connection from
127.0.0.1 without a valid header is closed without an answer, and the server goes on serving;
a header from an untrusted peer (127.0.0.2) is not read as one (a bad request).
"""

from __future__ import annotations

import http.client
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
import trio

from erlmcp_py.transports.http import HttpConfig
from tests.deploy.support import free_port, serve_command
from tests.transports.test_http import ACCEPT_BOTH, INIT, message, serving
from tests.transports.test_proxy_protocol import inet4, inet6, tlv, v1, v2

TIMEOUT = 10.0  # seconds: bound of every wait in this file
UNKNOWN = b"PROXY UNKNOWN\r\n"


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A server that trusts 127.0.0.1 to send the PROXY protocol, one session per client."""
    port = free_port()
    log = tmp_path_factory.mktemp("proxy") / "serve.log"
    argv = serve_command(
        "--transport",
        "http",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--proxy-protocol",
        "--forwarded-allow-ips",
        "127.0.0.1",
        "--sessions-per-client",
        "1",
    )
    with log.open("wb") as out:
        child = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_ready(child, port, log)
        yield port
    finally:
        child.terminate()
        try:
            child.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(TIMEOUT)


def _wait_ready(child: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + 30
    while True:
        assert child.poll() is None, log.read_text(errors="replace")
        try:
            if request(port, "GET", "/readyz", preamble=UNKNOWN)[0] == 200:
                return
        except OSError:
            pass
        assert time.monotonic() < deadline, "serve never became ready"
        time.sleep(0.05)  # another process's start: nothing to wait on but time


def request(
    port: int,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    *,
    preamble: bytes = b"",
    source: str = "127.0.0.1",
) -> tuple[int, http.client.HTTPResponse, bytes]:
    """One request on a new connection from ``source`` opened with ``preamble``."""
    connection = http.client.HTTPConnection(
        "127.0.0.1", port, timeout=TIMEOUT, source_address=(source, 0)
    )
    try:
        connection.connect()
        assert connection.sock is not None
        connection.sock.sendall(preamble)
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, response, response.read()
    finally:
        connection.close()


def mcp(port: int, preamble: bytes, body: bytes, session: str | None = None) -> tuple[int, str]:
    """A POST of ``body`` to /mcp as the client ``preamble`` names; the status and the
    session id answered (or sent)."""
    headers = {"accept": ACCEPT_BOTH, "content-type": "application/json"}
    if session is not None:
        headers.update({"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"})
    status, response, _ = request(port, "POST", "/mcp", body, headers, preamble=preamble)
    return status, response.headers.get("mcp-session-id") or session or ""


def open_session(port: int, preamble: bytes) -> str:
    status, session = mcp(port, preamble, message("initialize", INIT, 0))
    assert status == 200
    return session


def alive(port: int, preamble: bytes, session: str) -> bool:
    status, _ = mcp(port, preamble, message("ping", {}, 1), session)
    assert status in (200, 404), status
    return status == 200


def unanswered(port: int, data: bytes, *, chunks: int | None = None) -> bytes:
    """Send ``data`` on a new connection from 127.0.0.1 (in pieces of ``chunks`` bytes) and
    read until the server closes; what it answered."""
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        step = chunks or len(data)
        for at in range(0, len(data), step):
            sock.sendall(data[at : at + step])
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except ConnectionResetError:  # closed with our bytes unread: a reset, no answer
            pass
        return received


GET_HEALTHZ = b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n"


def test_v1_and_v2_sources_each_get_their_own_session_share(port: int) -> None:
    first = v1("TCP4", "203.0.113.1", "127.0.0.1", 40001, port)
    second = v2(addresses=inet4("203.0.113.2", "127.0.0.1", 40002, port), tlvs=tlv(1, b"h2"))
    third = v2(family=0x21, addresses=inet6("2001:db8:7::1", "::1", 40003, port))
    again = v2(addresses=inet4("203.0.113.1", "127.0.0.1", 40004, port))  # first's address
    a, b, c = open_session(port, first), open_session(port, second), open_session(port, third)
    assert [alive(port, first, a), alive(port, second, b), alive(port, third, c)] == [True] * 3
    a2 = open_session(port, again)  # the first client's one session is taken: it ends it
    assert [alive(port, again, a2), alive(port, second, b), alive(port, third, c)] == [True] * 3
    assert not alive(port, first, a)


def test_a_trusted_peer_without_a_header_is_closed_unanswered(port: int) -> None:
    assert unanswered(port, GET_HEALTHZ) == b""
    assert request(port, "GET", "/healthz", preamble=UNKNOWN)[0] == 200  # still serving


@pytest.mark.parametrize(
    "header",
    [
        b"PROXY TCP4 203.0.113.1 127.0.0.1 040001 8000\r\n",
        b"PROXY TCP4 203.0.113.1 127.0.0.1 1 2\n",
        b"PROXY " + b"x" * 120,
        v2(family=0x11, addresses=b"\x01" * 11),
        v2(command=0x23),
        v2(length=0xFFFF),
    ],
)
def test_a_malformed_header_closes_the_connection_and_the_next_is_served(
    port: int, header: bytes
) -> None:
    assert unanswered(port, header + GET_HEALTHZ) == b""
    assert request(port, "GET", "/healthz", preamble=UNKNOWN)[0] == 200


def test_a_header_sent_one_byte_at_a_time_is_read(port: int) -> None:
    for header in (
        v1("TCP4", "203.0.113.9", "127.0.0.1", 1, port),
        v2(addresses=inet4("203.0.113.9", "127.0.0.1", 1, port), tlvs=tlv(0xEA, b"vpce")),
    ):
        answer = unanswered(port, header + GET_HEALTHZ, chunks=1)
        assert answer.startswith(b"HTTP/1.1 200 "), answer


def test_an_untrusted_peer_cannot_name_its_address(port: int) -> None:
    header = v1("TCP4", "203.0.113.50", "127.0.0.1", 1, port)
    status, _, body = request(port, "GET", "/healthz", preamble=header, source="127.0.0.2")
    assert status == 400, body  # its header is read as HTTP: a bad request
    status, _, body = request(port, "GET", "/healthz", source="127.0.0.2")
    assert status == 200, body  # its plain HTTP is served


def test_a_header_names_the_client_once_per_connection(port: int) -> None:
    header = v1("TCP4", "203.0.113.60", "127.0.0.1", 1, port)
    twice = header + header + GET_HEALTHZ
    answer = unanswered(port, twice)  # the second header is the request: refused as HTTP
    assert answer.startswith(b"HTTP/1.1 400 "), answer


async def test_a_header_that_does_not_come_in_the_head_deadline_closes_the_connection() -> None:
    config = HttpConfig(forwarded_allow_ips="127.0.0.1", proxy_protocol=True, keep_alive_s=0.3)
    async with serving(config=config) as listening:
        port = int(listening.url.rsplit(":", 1)[1].split("/")[0])
        with trio.fail_after(TIMEOUT):
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            async with stream:
                await stream.send_all(b"PROXY TCP4 203.0.113.1 ")  # and nothing more
                started = trio.current_time()
                assert await stream.receive_some() == b""  # closed, unanswered
                assert trio.current_time() - started >= 0.25


async def test_the_ops_port_takes_no_header() -> None:
    config = HttpConfig(forwarded_allow_ips="127.0.0.1", proxy_protocol=True, ops_port=0)
    async with serving(config=config) as listening:
        assert listening.ops_url is not None
        with trio.fail_after(TIMEOUT):
            async with httpx2.AsyncClient() as http:
                response = await http.get(f"{listening.ops_url}/healthz")
        assert response.status_code == 200


def test_the_proxy_protocol_needs_a_trusted_balancer() -> None:
    with pytest.raises(ValueError, match="proxy_protocol needs forwarded_allow_ips"):
        HttpConfig(proxy_protocol=True)
