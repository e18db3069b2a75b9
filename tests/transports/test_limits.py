"""Connection hygiene of the HTTP transport, over real sockets on 127.0.0.1.

Idle and half-sent connections are closed within the keep-alive time (so their file
descriptors come back), a body that trickles is cut off, a body over the cap is answered 413
without stalling anyone else, and a principal's share of sessions and in-flight requests is
its own.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import httpx2
import pytest
import trio

from erlmcp_py.mcp.server import Server
from erlmcp_py.transports._limits import (
    DEFAULT_BODY_BYTES,
    BodyPolicy,
    BodyTooLarge,
    BodyTooSlow,
    PrincipalCounter,
    PrincipalLimits,
    frame_limit,
    read_body,
)
from erlmcp_py.transports.http import HttpConfig, Listening
from tests.deploy.support import poll
from tests.transports import test_http_mrtr as mrtr
from tests.transports.test_http import (
    INIT,
    TIMEOUT,
    McpHttp,
    Probe,
    call,
    client,
    message,
    serving,
    settle,
    statuses,
)

SSE = "text/event-stream"

FDS = Path("/proc/self/fd")


def port_of(listening: Listening) -> int:
    return int(listening.url.rsplit(":", 1)[1].split("/", 1)[0])


def open_fds() -> int:
    return len(os.listdir(FDS))


async def raw_connect(listening: Listening, local: str = "127.0.0.1") -> trio.SocketStream:
    sock = trio.socket.socket()
    await sock.bind((local, 0))
    await sock.connect(("127.0.0.1", port_of(listening)))
    return trio.SocketStream(sock)


async def read_until_closed(stream: trio.SocketStream) -> bytes:
    """Everything the server sends until it closes the connection."""
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


def post_head(length: int | None, *, chunked: bool = False) -> bytes:
    lines = [
        b"POST /mcp HTTP/1.1",
        b"Host: 127.0.0.1",
        b"Accept: application/json, text/event-stream",
        b"Content-Type: application/json",
    ]
    if length is not None:
        lines.append(b"Content-Length: %d" % length)
    if chunked:
        lines.append(b"Transfer-Encoding: chunked")
    return b"\r\n".join(lines) + b"\r\n\r\n"


# -- the pieces --------------------------------------------------------------------------------


def test_the_defaults_keep_idle_connections_short_and_bodies_small() -> None:
    config = HttpConfig()
    # short, but longer than the common client pools keep an idle connection (httpx: 5 s,
    # aiohttp: 15 s), so the client ends it first, never with a request on its way
    assert 15 < config.keep_alive_s <= 30
    assert config.max_frame_bytes == DEFAULT_BODY_BYTES == 1 << 20
    assert config.idle_timeout <= 600
    assert config.body_min_rate > 0


async def test_read_body_allows_a_client_at_the_minimum_rate(autojump_clock: object) -> None:
    policy = BodyPolicy(max_bytes=10_000, grace_s=1.5, min_rate=100)
    chunks = [b"x" * 100] * 20  # 100 bytes a second: exactly the minimum rate, for 20 s

    async def receive() -> dict[str, object]:
        await trio.sleep(1.0)
        chunk = chunks.pop()
        return {"type": "http.request", "body": chunk, "more_body": bool(chunks)}

    assert await read_body(receive, None, policy) == b"x" * 2000


async def test_read_body_cuts_off_a_trickle_after_the_grace(autojump_clock: object) -> None:
    policy = BodyPolicy(max_bytes=10_000, grace_s=2.0, min_rate=1000)

    async def receive() -> dict[str, object]:
        await trio.sleep(0.5)  # 1 byte every half second: far under the rate
        return {"type": "http.request", "body": b"x", "more_body": True}

    start = trio.current_time()
    with pytest.raises(BodyTooSlow):
        await read_body(receive, None, policy)
    assert 2.0 <= trio.current_time() - start < 2.1


async def test_read_body_refuses_a_declared_or_received_size_over_the_cap() -> None:
    policy = BodyPolicy(max_bytes=10)
    reads = 0

    async def receive() -> dict[str, object]:
        nonlocal reads
        reads += 1
        return {"type": "http.request", "body": b"x" * 6, "more_body": True}

    with pytest.raises(BodyTooLarge) as declared:
        await read_body(receive, 11, policy)
    assert (declared.value.size, declared.value.limit, declared.value.head) == (11, 10, b"")
    assert reads == 0  # refused before a byte of it is read
    with pytest.raises(BodyTooLarge) as received:
        await read_body(receive, None, policy)
    assert received.value.size == 12


async def test_read_body_keeps_the_head_of_a_body_over_the_cap() -> None:
    policy = BodyPolicy(max_bytes=10)
    reads = 0

    async def receive() -> dict[str, object]:
        nonlocal reads
        reads += 1
        return {"type": "http.request", "body": b"0123456", "more_body": True}

    with pytest.raises(BodyTooLarge) as declared:
        await read_body(receive, 1 << 30, policy, head_bytes=9)
    assert declared.value.head == b"012345601"
    assert reads == 2  # the head, no further
    with pytest.raises(BodyTooLarge) as received:
        await read_body(receive, None, policy, head_bytes=9)
    assert received.value.head == b"012345601"


async def test_read_body_waits_for_a_head_no_longer_than_the_grace(
    autojump_clock: object,
) -> None:
    policy = BodyPolicy(max_bytes=10, grace_s=2.0)

    async def receive() -> dict[str, object]:
        await trio.sleep(1.5)
        return {"type": "http.request", "body": b"ab", "more_body": True}

    start = trio.current_time()
    with pytest.raises(BodyTooLarge) as declared:
        await read_body(receive, 1 << 30, policy, head_bytes=100)
    assert declared.value.head == b"ab"
    assert trio.current_time() - start == pytest.approx(2.0)


def test_the_frame_limit_is_the_policy_or_a_smaller_one_of_the_transport() -> None:
    server = Server("s", "1", runtime_config=SMALL)
    assert frame_limit(server) == 64 << 10
    assert frame_limit(server, 1 << 20) == 64 << 10
    assert frame_limit(server, 1000) == 1000
    assert frame_limit(Server("s", "1"), DEFAULT_BODY_BYTES) == DEFAULT_BODY_BYTES


def test_principal_counter_caps_each_principal_on_its_own() -> None:
    shares = PrincipalCounter(2)
    assert shares.acquire("a")
    assert shares.acquire("a")
    assert not shares.acquire("a")
    assert shares.acquire("b")
    shares.release("a")
    assert shares.held("a") == 1
    assert shares.acquire("a")
    shares.release("a")
    shares.release("a")
    shares.release("b")
    assert shares.principals == 0
    with pytest.raises(ValueError):
        PrincipalCounter(0)


# -- over real sockets -------------------------------------------------------------------------


@pytest.mark.skipif(not FDS.is_dir(), reason="needs /proc/self/fd")
async def test_connect_and_close_releases_file_descriptors_within_the_keep_alive() -> None:
    config = HttpConfig(keep_alive_s=1.0)
    async with serving(config=config) as listening:
        with trio.fail_after(TIMEOUT):
            await trio.testing.wait_all_tasks_blocked(0.05)
            base = open_fds()
            for i in range(300):
                stream = await raw_connect(listening)
                if i % 2:  # half of them leave a request head unfinished
                    await stream.send_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                await stream.aclose()
            assert open_fds() >= base  # the server still holds some of them
            start = trio.current_time()
            while open_fds() > base + 2:
                assert trio.current_time() - start < 3.0, (open_fds(), base)
                await trio.sleep(0.05)


async def test_a_request_head_that_trickles_is_closed_after_the_keep_alive() -> None:
    config = HttpConfig(keep_alive_s=0.5)
    async with serving(config=config) as listening:
        with trio.fail_after(TIMEOUT):
            stream = await raw_connect(listening)
            start = trio.current_time()
            closed = False
            for byte in post_head(10):
                try:
                    await stream.send_all(bytes([byte]))
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    closed = True
                    break
                with trio.move_on_after(0.2):
                    if await stream.receive_some(100) == b"":
                        closed = True
                        break
            assert closed
            assert trio.current_time() - start < 3.0


async def test_a_body_that_trickles_is_answered_408_and_closed() -> None:
    config = HttpConfig(body_grace_s=0.5, body_min_rate=1024)
    async with serving(config=config) as listening, httpx2.AsyncClient(timeout=TIMEOUT) as http:
        with trio.fail_after(TIMEOUT):
            stream = await raw_connect(listening)
            await stream.send_all(post_head(100_000))
            start = trio.current_time()
            answer = b""
            async with trio.open_nursery() as nursery:

                async def trickle() -> None:
                    for _ in range(200):
                        try:
                            await stream.send_all(b" ")
                        except (trio.BrokenResourceError, trio.ClosedResourceError):
                            return
                        await trio.sleep(0.05)

                nursery.start_soon(trickle)
                answer = await read_until_closed(stream)
                nursery.cancel_scope.cancel()
            took = trio.current_time() - start
            assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
            assert b"connection: close" in answer.lower()
            assert took < 3.0
            # the server keeps serving others
            other = McpHttp(http, listening.url)
            await other.initialize()


async def test_an_oversized_body_is_answered_413_while_another_client_is_served() -> None:
    async with serving() as listening, httpx2.AsyncClient(timeout=TIMEOUT) as http:
        with trio.fail_after(TIMEOUT):
            other = McpHttp(http, listening.url)
            await other.initialize()
            # declared: refused after at most the head of the body is read
            declared = await http.post(
                listening.url,
                content=b"x" * (DEFAULT_BODY_BYTES + 1),
                headers=other.headers(),
            )
            assert declared.status_code == 413
            error = declared.json()["error"]
            assert error["data"] == {"reason": "frame_too_large", "limit": DEFAULT_BODY_BYTES}
            assert "Payload Too Large" in error["message"]
            # chunked (no length): refused once the cap is crossed, the connection closed
            stream = await raw_connect(listening)
            await stream.send_all(post_head(None, chunked=True))
            answers: list[int] = []

            async def flood() -> None:
                chunk = b"x" * 65536
                for _ in range(4 * 16):  # 4 MiB, far over the cap
                    try:
                        await stream.send_all(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        return

            async with trio.open_nursery() as nursery:
                nursery.start_soon(flood)
                for i in range(20):  # served meanwhile
                    ping = await other.post(message("ping", id=i))
                    answers.append(ping.status_code)
                refused = await read_until_closed(stream)
                nursery.cancel_scope.cancel()
            assert refused.startswith(b"HTTP/1.1 413"), refused[:200]
            assert answers == [200] * 20
            assert listening.transport.refusals["body_too_large"] == 2


SMALL = {"frame_bytes": 64 << 10, "answer_bytes": 16 << 10, "message_bytes": 4 << 10,
         "schema_bytes": 16 << 10}  # fmt: skip


async def test_the_policy_frame_limit_narrows_the_body_limit() -> None:
    async with serving(**SMALL) as listening, httpx2.AsyncClient(timeout=TIMEOUT) as http:
        with trio.fail_after(TIMEOUT):
            assert listening.transport.max_frame_bytes == 64 << 10
            c = McpHttp(http, listening.url)
            await c.initialize()
            ping = {"jsonrpc": "2.0", "id": 5, "method": "ping", "params": {"x": "a" * (70 << 10)}}
            refused = await c.post(json.dumps(ping).encode())
            assert refused.status_code == 413
            assert refused.json()["error"]["data"] == {
                "reason": "frame_too_large",
                "limit": 64 << 10,
            }
            assert refused.json()["id"] == 5  # its head names the request
            served = await c.post(message("ping", {"x": "a" * (60 << 10)}, id=6))
            assert served.status_code == 200


async def _in_chunks(body: bytes) -> AsyncIterator[bytes]:
    for start in range(0, len(body), 65536):
        yield body[start : start + 65536]


@pytest.mark.parametrize("framing", ["declared", "chunked"])
async def test_an_answer_over_the_body_limit_fails_its_elicitation_at_once(framing: str) -> None:
    probe = Probe()
    async with (
        serving(probe) as listening,
        httpx2.AsyncClient(timeout=TIMEOUT) as http,
        httpx2.AsyncClient(timeout=TIMEOUT) as other_http,
    ):
        with trio.fail_after(TIMEOUT):  # the elicitation's deadline is 300 s
            c = McpHttp(http, listening.url)
            other = McpHttp(other_http, listening.url)
            await c.initialize()
            await other.initialize()
            async with c.stream(call(7)) as events:
                request = await events.next()
                assert request is not None
                content = {"name": "S3CRET" * (900 << 10)}  # 5.4 MB
                answer = {"jsonrpc": "2.0", "id": request["id"],
                          "result": {"action": "accept", "content": content}}  # fmt: skip
                body = json.dumps(answer).encode()
                sent = body if framing == "declared" else _in_chunks(body)
                refused = await http.post(listening.url, content=sent, headers=c.headers())
                assert refused.status_code == 413
                (response,) = await events.rest()
            text = response["result"]["content"][0]["text"]
            assert text.startswith("failed: answer_too_large"), text
            assert "S3CRET" not in text
            assert (await other.post(message("ping", id=1))).status_code == 200
        assert await statuses(listening, probe) == ["failed"]


async def test_an_oversized_answer_names_only_its_own_sessions_requests() -> None:
    probe = Probe()
    async with serving(probe) as listening, client(listening) as c, client(listening) as intruder:
        with trio.fail_after(TIMEOUT):
            await c.initialize()
            await intruder.initialize()
            async with c.stream(call(7)) as events:
                request = await events.next()
                assert request is not None
                big = {"action": "accept", "content": {"name": "a" * (2 << 20)}}
                answer = {"jsonrpc": "2.0", "id": request["id"], "result": big}
                refused = await intruder.post(json.dumps(answer).encode())
                assert refused.status_code == 413
                await settle()
                assert await statuses(listening, probe) == ["active"]  # not another's to end
                await c.answer(request, {"action": "accept", "content": {"name": "Ada"}})
                (response,) = await events.rest()
            assert response["result"]["content"][0]["text"].startswith("action=accept")


# -- fair limits per principal: loopback abuse -------------------------------------------------


@asynccontextmanager
async def from_address(local: str) -> AsyncIterator[httpx2.AsyncClient]:
    """An HTTP client whose connections leave from ``local`` (a 127/8 address)."""
    transport = httpx2.AsyncHTTPTransport(local_address=local)
    async with httpx2.AsyncClient(transport=transport, timeout=TIMEOUT) as http:
        yield http


async def flood_sessions(http: httpx2.AsyncClient, url: str, count: int) -> Counter[int]:
    """``count`` initialize POSTs, 16 at a time; their statuses."""
    statuses: Counter[int] = Counter()
    body = message("initialize", INIT, id=0)
    headers = McpHttp(http, url).headers()
    limiter = trio.CapacityLimiter(16)

    async def one() -> None:
        async with limiter:
            statuses[(await http.post(url, content=body, headers=headers)).status_code] += 1

    async with trio.open_nursery() as nursery:
        for _ in range(count):
            nursery.start_soon(one)
    return statuses


async def test_a_session_flood_from_one_address_sheds_its_own_and_locks_out_no_other() -> None:
    config = HttpConfig()  # the defaults: 32 sessions per principal, 1024 in all
    async with (
        serving(config=config) as listening,
        from_address("127.0.0.2") as flooder,
        from_address("127.0.0.3") as other,
    ):
        with trio.fail_after(60):
            flood = await flood_sessions(flooder, listening.url, 1100)
            assert flood == {200: 1100}  # each past its share ended one of its idle ones
            shed = listening.transport.evictions["principal_sessions"]
            assert shed == 1100 - config.limits.sessions
            peer = McpHttp(other, listening.url)
            await peer.initialize()
            assert (await peer.post(message("ping", id=1))).status_code == 200
            assert listening.transport.session_count == config.limits.sessions + 1


async def test_in_flight_requests_are_capped_per_address() -> None:
    config = HttpConfig(limits=PrincipalLimits(requests=3))
    async with (
        serving(config=config) as listening,
        from_address("127.0.0.6") as hog,
        from_address("127.0.0.7") as other,
    ):
        with trio.fail_after(TIMEOUT):
            async with AsyncExitStack() as streams:
                for _ in range(3):  # three open GET streams: the address's whole share
                    hogger = McpHttp(hog, listening.url)
                    await hogger.initialize()
                    get = await streams.enter_async_context(
                        hog.stream("GET", listening.url, headers=hogger.headers(accept=SSE))
                    )
                    assert get.status_code == 200
                busy = await hogger.post(message("ping", id=1))
                assert busy.status_code == 429
                assert busy.headers["retry-after"] == str(config.retry_after_s)
                peer = McpHttp(other, listening.url)
                await peer.initialize()
                assert (await peer.post(message("ping", id=1))).status_code == 200
            assert (await hogger.post(message("ping", id=2))).status_code == 200


async def test_a_flood_of_suspended_stateless_calls_does_not_lock_out_another_address() -> None:
    config = HttpConfig(limits=PrincipalLimits(suspended=5))
    generous = {"rate": 10_000, "max_pending_per_client": 10_000}
    async with (
        mrtr.serving(mrtr.Probe(), config=config, **generous) as listening,
        from_address("127.0.0.8") as flooder,
        from_address("127.0.0.9") as other,
    ):
        with trio.fail_after(30):
            hog = mrtr.StatelessPoster(flooder, listening.url)
            statuses: Counter[int] = Counter()
            for _ in range(12):
                answer = await hog.call()
                statuses[answer.status_code] += 1
                if answer.status_code == 429:
                    assert answer.json()["error"]["data"]["reason"] == "principal_busy"
                    assert answer.headers["retry-after"] == str(config.retry_after_s)
            assert statuses == {200: 5, 429: 7}
            peer = mrtr.StatelessPoster(other, listening.url)
            first = mrtr.ok(await peer.call())
            assert first["resultType"] == "input_required"
            assert listening.transport.suspended_calls == 6
            assert listening.transport.refusals["principal_suspended"] == 7


async def test_a_registry_full_of_calls_at_work_is_a_503_with_retry_after() -> None:
    config = HttpConfig(continuations={"max_continuations": 2, "hold_s": 600})
    generous = {"rate": 10_000, "max_pending_per_client": 10_000}
    async with (
        mrtr.serving(mrtr.Probe(), config=config, **generous) as listening,
        from_address("127.0.0.10") as one,
        from_address("127.0.0.11") as two,
        trio.open_nursery() as nursery,
    ):
        with trio.fail_after(TIMEOUT):
            for http in (one, two):  # each call's retry waits on the tool's work: attached
                client = mrtr.StatelessPoster(http, listening.url)
                params = {**client.call_params(), "name": "slow_after_answer"}
                first = mrtr.ok(await client.post("tools/call", params))
                key, _ = mrtr.only_request(first)
                go = {key: {"action": "accept", "content": {"confirm": True}}}
                retry = {**params, "requestState": first["requestState"], "inputResponses": go}
                nursery.start_soon(client.post, "tools/call", retry)
            registry = listening.transport.continuations
            assert registry is not None
            await poll(lambda: registry.snapshot()["suspended"] == 0, "retries attached", 5)
            full = await mrtr.StatelessPoster(two, listening.url).call()
            assert full.status_code == 503
            assert full.json()["error"]["data"] == {"reason": "busy"}
            assert full.headers["retry-after"] == str(config.retry_after_s)
            assert listening.transport.refusals["suspended"] == 1
            assert listening.transport.evictions == {}
            nursery.cancel_scope.cancel()


async def test_an_idle_session_expires_and_gives_its_share_back() -> None:
    config = HttpConfig(idle_timeout=0.3, limits=PrincipalLimits(sessions=1))
    async with serving(config=config) as listening, from_address("127.0.0.12") as http:
        with trio.fail_after(TIMEOUT):
            first = McpHttp(http, listening.url)
            await first.initialize()
            await poll(lambda: not listening.transport.session_count, "idle expiry", 5)
            gone = await first.post(message("ping", id=1))
            assert gone.status_code == 404  # the session expired
            await McpHttp(http, listening.url).initialize()  # and its share came back
            assert listening.transport.evictions == {}  # with nothing to evict


async def test_draining_refuses_new_calls_and_lets_suspended_ones_finish() -> None:
    async with mrtr.serving(mrtr.Probe()) as listening, mrtr.stateless_poster(listening) as c:
        with trio.fail_after(TIMEOUT):
            first = mrtr.ok(await c.call())
            key, _ = mrtr.only_request(first)
            assert listening.transport.calls_in_progress == 1
            listening.transport.drain()
            new = await c.call()
            assert new.status_code == 503
            assert new.headers["retry-after"] == str(HttpConfig().retry_after_s)
            legacy = await McpHttp(c.http, listening.url).post(message("initialize", INIT, 0))
            assert legacy.status_code == 503
            second = mrtr.ok(await c.call(first["requestState"], {key: mrtr.ACCEPT_ADA}))
            key2, _ = mrtr.only_request(second)
            confirm = {key2: {"action": "accept", "content": {"confirm": True}}}
            final = mrtr.ok(await c.call(second["requestState"], confirm))
            assert final["resultType"] == "complete"
            await mrtr.settle()
            assert listening.transport.calls_in_progress == 0
            assert listening.transport.refusals["draining"] == 2


async def test_pending_elicitations_are_capped_per_address_across_sessions() -> None:
    async with serving(max_pending_per_client=2) as listening, from_address("127.0.0.14") as other:
        with trio.fail_after(TIMEOUT):
            async with AsyncExitStack() as streams:
                readers = []  # kept: a dropped reader closes its response (a disconnect)
                for i in range(2):  # two sessions of one address, one question each
                    http = await streams.enter_async_context(from_address("127.0.0.13"))
                    session = McpHttp(http, listening.url)
                    await session.initialize()
                    readers.append(await streams.enter_async_context(session.stream(call(i))))
                    asked = await readers[-1].next()
                    assert asked is not None
                    assert asked["method"] == "elicitation/create"
                http = await streams.enter_async_context(from_address("127.0.0.13"))
                third = McpHttp(http, listening.url)
                await third.initialize()
                async with third.stream(call(3)) as events:
                    (refused,) = await events.rest()
                assert refused["result"]["isError"] is True, refused
                peer = McpHttp(other, listening.url)
                await peer.initialize()
                async with peer.stream(call(4)) as events:
                    request = await events.next()
                    assert request is not None
                    assert request["method"] == "elicitation/create"
                    await peer.answer(request, {"action": "decline"})
                    await events.rest()
