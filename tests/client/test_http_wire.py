"""The Streamable HTTP wire, under a client session, against a scripted HTTP server on loopback:
the headers it sends per era, JSON and event-stream answers, a server request answered
mid-call, and what a wrong URL or a failed exchange is."""

from __future__ import annotations

import datetime
import ipaddress
import json
import ssl
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from functools import partial
from pathlib import Path
from typing import Any

import h11
import pytest
import trio
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from erlmcp_py.client import (
    ClientRequestError,
    ClientSession,
    ConnectionLost,
    EndpointNotFound,
    ServerRequest,
    endpoint_suggestion,
    open_client_session,
    open_http_wire,
)

SESSION = "2025-11-25"
MODERN = "2026-07-28"

Reply = Callable[[Any], tuple[int, list[tuple[str, str]], bytes]]


class Recorder:
    """A one-request-per-connection HTTP server: records each request, answers by ``reply``."""

    def __init__(self, reply: Reply, get_stream: bytes | None = None) -> None:
        self.reply = reply
        self.get_stream = get_stream  # the GET stream's events (``None``: 405, there is none)
        self.requests: list[tuple[dict[str, str], Any]] = []
        self.verbs: list[str] = []
        self.get_headers: list[dict[str, str]] = []

    async def handle(self, stream: trio.abc.Stream) -> None:
        conn = h11.Connection(h11.SERVER)
        head: h11.Request | None = None
        body = b""
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await stream.receive_some(65536))
            elif isinstance(event, h11.Request):
                head = event
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                break
        assert head is not None
        headers = {k.decode(): v.decode() for k, v in head.headers}
        message = json.loads(body) if body else None
        if head.method == b"GET":  # the session's own stream
            self.verbs.append("GET")
            self.get_headers.append(headers)
            if self.get_stream is None:
                await stream.send_all(conn.send(h11.Response(status_code=405, headers=[])) or b"")
            else:
                sse = [("Content-Type", "text/event-stream")]
                await stream.send_all(conn.send(h11.Response(status_code=200, headers=sse)) or b"")
                await stream.send_all(conn.send(h11.Data(data=self.get_stream)) or b"")
            await stream.send_all(conn.send(h11.EndOfMessage()) or b"")
            await stream.aclose()
            return
        self.verbs.append(head.method.decode())
        self.requests.append((headers, message))
        status, extra, payload = self.reply(message)
        response = h11.Response(
            status_code=status, headers=[*extra, ("Content-Length", str(len(payload)))]
        )
        await stream.send_all(conn.send(response) or b"")
        await stream.send_all(conn.send(h11.Data(data=payload)) or b"")
        await stream.send_all(conn.send(h11.EndOfMessage()) or b"")
        await stream.aclose()


async def serve(
    nursery: trio.Nursery, reply: Reply, get_stream: bytes | None = None
) -> tuple[Recorder, str]:
    recorder = Recorder(reply, get_stream)
    listeners = await nursery.start(partial(trio.serve_tcp, recorder.handle, 0, host="127.0.0.1"))
    port = listeners[0].socket.getsockname()[1]
    return recorder, f"http://127.0.0.1:{port}/mcp"


def json_answer(result: Mapping[str, Any], *headers: tuple[str, str]) -> Reply:
    def reply(message: dict[str, Any] | None) -> tuple[int, list[tuple[str, str]], bytes]:
        if message is None:  # DELETE: the session ends
            return 200, [], b""
        frame = {"jsonrpc": "2.0", "id": message["id"], "result": dict(result)}
        return 200, [("Content-Type", "application/json"), *headers], json.dumps(frame).encode()

    return reply


def no_requests(request: ServerRequest) -> Mapping[str, Any]:
    raise AssertionError("no server request expected")


@asynccontextmanager
async def session(
    url: str,
    handler: Any = no_requests,
    on_notification: Any = None,
    *,
    modern: bool,
    headers: Sequence[tuple[str, str]] = (),
    accept_language: str | None = None,
) -> AsyncIterator[ClientSession]:
    """A client session over the HTTP wire (nothing sent yet)."""
    async with (
        open_http_wire(url, headers=headers, accept_language=accept_language) as wire,
        open_client_session(
            wire,
            protocol_version=MODERN if modern else SESSION,
            handler=handler,
            on_notification=on_notification,
        ) as client,
    ):
        yield client


async def test_a_session_era_request_carries_the_session_and_version_once_known() -> None:
    async with trio.open_nursery() as nursery:
        recorder, url = await serve(nursery, json_answer({"ok": 1}, ("Mcp-Session-Id", "s-1")))
        async with session(url, modern=False, headers=[("Authorization", "B t")]) as client:
            assert await client.request("initialize", {}) == {"ok": 1}
            client.wire.set_protocol("2025-11-25")
            assert await client.request("tools/list", {}) == {"ok": 1}
        nursery.cancel_scope.cancel()
    (first, _), (second, _), (delete, _) = recorder.requests
    assert recorder.verbs == ["POST", "POST", "DELETE"]
    assert first["authorization"] == "B t"
    assert first["accept"] == "application/json, text/event-stream"
    assert "mcp-session-id" not in first
    assert second["mcp-session-id"] == "s-1"
    assert second["mcp-protocol-version"] == "2025-11-25"
    assert delete["mcp-session-id"] == "s-1"  # closing the wire ends the session


async def test_a_stateless_request_names_its_method_and_tool_in_headers() -> None:
    async with trio.open_nursery() as nursery:
        recorder, url = await serve(nursery, json_answer({"resultType": "complete"}))
        async with session(url, modern=True) as client:
            await client.request_raw("tools/call", {"name": "plain"})
            await client.request_raw("tools/call", {"name": "olá"})
        nursery.cancel_scope.cancel()
    (plain, _), (accented, _) = recorder.requests  # no DELETE: no session
    assert (plain["mcp-method"], plain["mcp-name"]) == ("tools/call", "plain")
    assert accented["mcp-name"] == "=?base64?b2zDoQ==?="
    assert plain["mcp-protocol-version"] == "2026-07-28"


async def test_a_tasks_request_names_its_task_in_headers() -> None:
    async with trio.open_nursery() as nursery:
        recorder, url = await serve(nursery, json_answer({"resultType": "complete"}))
        async with session(url, modern=True) as client:
            for method in ("tasks/get", "tasks/update", "tasks/cancel"):
                await client.request_raw(method, {"taskId": "t-1"})
        nursery.cancel_scope.cancel()
    sent = [(headers["mcp-method"], headers.get("mcp-name")) for headers, _ in recorder.requests]
    assert sent == [("tasks/get", "t-1"), ("tasks/update", "t-1"), ("tasks/cancel", "t-1")]


@pytest.mark.parametrize("modern", [False, True])
async def test_every_request_carries_the_users_language(modern: bool) -> None:
    answer = json_answer({"ok": 1}, ("Mcp-Session-Id", "s-1"))

    def reply(message: dict[str, Any] | None) -> tuple[int, list[tuple[str, str]], bytes]:
        return (202, [], b"") if message is not None and "id" not in message else answer(message)

    async with trio.open_nursery() as nursery:
        recorder, url = await serve(nursery, reply)
        async with session(url, modern=modern, accept_language="pt-BR") as client:
            await client.request_raw("initialize", {})
            await client.notify("notifications/initialized")
        async with session(
            url, modern=modern, headers=[("accept-language", "en-GB")], accept_language="pt-BR"
        ) as client:
            await client.request_raw("tools/list", {})
        nursery.cancel_scope.cancel()
    *mine, chosen = [headers for headers, message in recorder.requests if message is not None]
    assert [headers["accept-language"] for headers in mine] == ["pt-BR", "pt-BR"]
    assert chosen["accept-language"] == "en-GB"  # one the user set with --header wins


async def test_an_event_stream_delivers_requests_and_notifications_before_the_answer() -> None:
    answered: list[Any] = []
    arrived = trio.Event()
    notes: list[tuple[str, Mapping[str, Any]]] = []

    def reply(message: dict[str, Any]) -> tuple[int, list[tuple[str, str]], bytes]:
        if "method" not in message:  # our answer to the server's request
            answered.append(message)
            arrived.set()
            return 202, [], b""
        events = [
            {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "hi"}},
            {"jsonrpc": "2.0", "id": "e1", "method": "ping"},
            {"jsonrpc": "2.0", "id": message["id"], "result": {"done": True}},
        ]
        text = "".join(f": comment\nevent: message\ndata: {json.dumps(e)}\n\n" for e in events)
        return 200, [("Content-Type", "text/event-stream")], text.encode()

    async def pong(request: ServerRequest) -> Mapping[str, Any]:
        return {"method": request.method}

    async with trio.open_nursery() as nursery:
        _, url = await serve(nursery, reply)
        async with session(url, pong, lambda m, p: notes.append((m, p)), modern=False) as w:
            assert await w.request("tools/call", {"name": "t"}) == {"done": True}
            with trio.fail_after(5):
                await arrived.wait()
        nursery.cancel_scope.cancel()
    assert notes == [("notifications/message", {"data": "hi"})]
    assert answered == [{"jsonrpc": "2.0", "id": "e1", "result": {"method": "ping"}}]


async def test_a_failed_exchange_is_a_lost_connection() -> None:
    def broken(message: dict[str, Any]) -> tuple[int, list[tuple[str, str]], bytes]:
        return 500, [("Content-Type", "text/plain")], b"oops"

    async with trio.open_nursery() as nursery:
        _, url = await serve(nursery, broken)
        async with session(url, modern=True) as client:
            with pytest.raises(ConnectionLost, match=r"HTTP 500$"):
                await client.request("tools/list", {})
        nursery.cancel_scope.cancel()


def not_found(body: bytes, content_type: str = "application/json") -> Reply:
    def reply(message: dict[str, Any] | None) -> tuple[int, list[tuple[str, str]], bytes]:
        return 404, [("Content-Type", content_type)], body

    return reply


ERLMCP_404 = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Not Found"}}'


@pytest.mark.parametrize("modern", [False, True])
@pytest.mark.parametrize(
    ("body", "kind"),
    [(ERLMCP_404, "application/json"), (b"Not Found\n", "text/plain")],
)
async def test_a_404_without_a_session_is_no_endpoint_and_names_the_likely_one(
    modern: bool, body: bytes, kind: str
) -> None:
    async with trio.open_nursery() as nursery:
        _, url = await serve(nursery, not_found(body, kind))
        root = url.removesuffix("/mcp") + "/"
        async with session(root, modern=modern) as client:
            with pytest.raises(EndpointNotFound) as info:
                await client.request("initialize", {})
        nursery.cancel_scope.cancel()
    assert (info.value.url, info.value.suggestion) == (root, url)


async def test_a_404_that_says_method_not_found_is_the_servers_error() -> None:
    body = b'{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}'
    async with trio.open_nursery() as nursery:
        _, url = await serve(nursery, not_found(body))
        async with session(url, modern=True) as client:
            with pytest.raises(ClientRequestError) as info:
                await client.request("ping", {})
        nursery.cancel_scope.cancel()
    assert info.value.code == -32601


async def test_a_404_to_a_session_means_the_session_ended_not_a_wrong_url() -> None:
    def reply(message: dict[str, Any] | None) -> tuple[int, list[tuple[str, str]], bytes]:
        if message is not None and message.get("method") == "initialize":
            return json_answer({"protocolVersion": "2025-11-25"}, ("Mcp-Session-Id", "s1"))(message)
        gone = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}'
        return 404, [("Content-Type", "application/json")], gone

    async with trio.open_nursery() as nursery:
        _, url = await serve(nursery, reply)
        async with session(url, modern=False) as client:
            await client.request("initialize", {})
            with pytest.raises(ClientRequestError) as info:
                await client.request("tools/list", {})
        nursery.cancel_scope.cancel()
    assert info.value.code == -32001


@pytest.mark.parametrize(
    ("url", "suggestion"),
    [
        ("http://127.0.0.1:8000/", "http://127.0.0.1:8000/mcp"),
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000/mcp"),
        ("https://example.com/mcp/", "https://example.com/mcp"),
        ("https://example.com/api/mcp?x=1", "https://example.com/mcp"),
        ("http://127.0.0.1:8000/mcp", None),  # already there: nothing plausible to offer
    ],
)
def test_the_suggested_endpoint_is_the_same_host_at_slash_mcp(
    url: str, suggestion: str | None
) -> None:
    assert endpoint_suggestion(url) == suggestion


def events(*frames: Mapping[str, Any]) -> bytes:
    return "".join(f"event: message\ndata: {json.dumps(f)}\n\n" for f in frames).encode()


async def test_a_session_listens_on_the_get_stream_once_initialized() -> None:
    updated = {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"u": 1}}
    notes: list[tuple[str, Mapping[str, Any]]] = []
    arrived = trio.Event()
    answer = json_answer({"protocolVersion": SESSION}, ("Mcp-Session-Id", "s-9"))

    def reply(message: dict[str, Any] | None) -> tuple[int, list[tuple[str, str]], bytes]:
        return (202, [], b"") if message is not None and "id" not in message else answer(message)

    def note(method: str, params: Mapping[str, Any]) -> None:
        notes.append((method, params))
        arrived.set()

    async with trio.open_nursery() as nursery:
        recorder, url = await serve(nursery, reply, get_stream=events(updated))
        async with session(url, on_notification=note, modern=False) as client:
            await client.initialize()
            with trio.fail_after(5):
                await arrived.wait()
        nursery.cancel_scope.cancel()
    assert notes == [("notifications/resources/updated", {"u": 1})]
    assert recorder.get_headers[0]["mcp-session-id"] == "s-9"
    assert recorder.verbs == ["POST", "POST", "GET", "DELETE"]


@pytest.mark.parametrize("modern", [False, True])
async def test_a_withdrawn_request_closes_its_post(modern: bool) -> None:
    """The call's event stream begins and is held; the client gives up: its POST is closed
    (and in a session, the server is told with ``notifications/cancelled`` too)."""
    closed = trio.Event()
    told: list[Any] = []

    async def handle(stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        body = b""
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await stream.receive_some(65536))
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage) or event is h11.PAUSED:
                break
        message = json.loads(body) if body else None
        if message is None or "id" not in message:  # a notification or the DELETE
            told.append(message)
            head = h11.Response(status_code=202, headers=[("Content-Length", "0")])
            await stream.send_all(conn.send(head) or b"")
            await stream.send_all(conn.send(h11.EndOfMessage()) or b"")
            await stream.aclose()
            return
        if message["method"] == "initialize":
            frame = {"jsonrpc": "2.0", "id": message["id"], "result": {"protocolVersion": SESSION}}
            headers = [("Content-Type", "application/json"), ("Mcp-Session-Id", "s-1")]
            await stream.send_all(
                conn.send(
                    h11.Response(
                        status_code=200,
                        headers=[*headers, ("Content-Length", str(len(json.dumps(frame))))],
                    )
                )
                or b""
            )
            await stream.send_all(conn.send(h11.Data(data=json.dumps(frame).encode())) or b"")
            await stream.send_all(conn.send(h11.EndOfMessage()) or b"")
            await stream.aclose()
            return
        sse = [("Content-Type", "text/event-stream")]
        await stream.send_all(conn.send(h11.Response(status_code=200, headers=sse)) or b"")
        note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "..."}}
        await stream.send_all(conn.send(h11.Data(data=events(note))) or b"")
        while await stream.receive_some(65536):  # held until the client closes it
            pass
        closed.set()

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, handle, 0, host="127.0.0.1"))
        url = f"http://127.0.0.1:{listeners[0].socket.getsockname()[1]}/mcp"
        begun = trio.Event()
        async with session(url, on_notification=lambda m, p: begun.set(), modern=modern) as client:
            if not modern:
                await client.request("initialize", {})
            with trio.fail_after(5):
                async with trio.open_nursery() as call:
                    call.start_soon(partial(client.request, "tools/call", {"name": "slow"}))
                    await begun.wait()  # its stream has begun
                    call.cancel_scope.cancel()  # and the caller gives up
                await closed.wait()
        nursery.cancel_scope.cancel()
    cancelled = [m for m in told if m is not None and m["method"] == "notifications/cancelled"]
    assert len(cancelled) == (0 if modern else 1)


def self_signed(directory: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A certificate for 127.0.0.1: the server's TLS context, and a client's that trusts it."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / "cert.pem", directory / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert_file, key_file)
    return server, ssl.create_default_context(cafile=str(cert_file))


async def test_an_https_endpoint_is_reached_over_tls(tmp_path: Path) -> None:
    server_tls, client_tls = self_signed(tmp_path)
    recorder = Recorder(json_answer({"ok": 1}))

    async def handle(stream: trio.SSLStream[trio.SocketStream]) -> None:
        with suppress(trio.BrokenResourceError):  # a client that refused our certificate
            await recorder.handle(stream)

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            partial(trio.serve_ssl_over_tcp, handle, 0, server_tls, host="127.0.0.1")
        )
        port = listeners[0].transport_listener.socket.getsockname()[1]
        url = f"https://127.0.0.1:{port}/mcp"
        async with (
            open_http_wire(url, ssl_context=client_tls) as wire,
            open_client_session(wire) as client,
        ):
            assert await client.request("tools/list") == {"ok": 1}
        async with (
            open_http_wire(url) as untrusted,  # the system's trust store knows no such cert
            open_client_session(untrusted) as client,
        ):
            with pytest.raises(ConnectionLost, match="CERTIFICATE_VERIFY_FAILED"):
                await client.request("tools/list")
        nursery.cancel_scope.cancel()
    assert [message["method"] for _, message in recorder.requests] == ["tools/list"]
