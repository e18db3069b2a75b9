"""Caps that shed what is idle, over real sockets on 127.0.0.1.

A client at its session share, or a server at ``max_sessions``, makes room by ending an idle
session (no request in flight, no pending elicitation, no GET stream doing work), which then
answers 404; only a share of busy sessions is refused. A full continuation registry evicts a
suspended 2026-07-28 call of the client holding the most, whose retry is replayed.
"""

from __future__ import annotations

from contextlib import AsyncExitStack

import httpx2
import trio

from erlmcp_py.core.outcomes import Tenant
from erlmcp_py.mcp.server import Server
from erlmcp_py.transports._limits import PrincipalLimits
from erlmcp_py.transports.http import HttpConfig, Listening
from tests.transports import test_http_mrtr as mrtr
from tests.transports.test_http import (
    INIT,
    TIMEOUT,
    McpHttp,
    Probe,
    SseReader,
    build_server,
    call,
    message,
    serving,
)
from tests.transports.test_limits import from_address

DECLINE = {"action": "decline"}


async def opened(http: httpx2.AsyncClient, listening: Listening) -> McpHttp:
    session = McpHttp(http, listening.url)
    await session.initialize()
    return session


async def status_of(session: McpHttp) -> int:
    """The HTTP status of a ping on ``session``."""
    return (await session.post(message("ping", id="ping"))).status_code


async def asking(streams: AsyncExitStack, session: McpHttp, id: int) -> tuple[SseReader, dict]:
    """A ``tools/call`` of ``session`` parked on its elicitation: the session is busy."""
    events = await streams.enter_async_context(session.stream(call(id)))
    request = await events.next()
    assert request is not None
    assert request["method"] == "elicitation/create"
    return events, request


def with_resource(probe: Probe) -> Server:
    server = build_server(probe)

    @server.resource("memo://status")
    def status() -> str:
        return "ok"

    return server


async def test_a_client_at_its_session_share_sheds_its_least_recent_idle_session() -> None:
    config = HttpConfig(limits=PrincipalLimits(sessions=3))
    async with serving(config=config) as listening, from_address("127.0.0.30") as http:
        with trio.fail_after(TIMEOUT):
            first = await opened(http, listening)
            second = await opened(http, listening)
            async with second.get_stream() as listener:  # open for nothing: no work
                third = await opened(http, listening)
                assert await status_of(first) == 200  # second is now the least recently used
                fourth = await opened(http, listening)  # at the share: second makes room
                assert await listener.next() is None  # its GET stream ended with it
            gone = await second.post(message("ping", id=1))
            assert gone.status_code == 404  # the client starts a new session
            assert gone.json()["error"]["code"] == -32001
            for live in (first, third, fourth):
                assert await status_of(live) == 200
            transport = listening.transport
            assert transport.session_count == 3
            assert transport.evictions == {"principal_sessions": 1}
            assert "principal_sessions" not in transport.refusals


async def test_a_client_whose_sessions_all_work_is_refused_until_one_is_idle() -> None:
    config = HttpConfig(limits=PrincipalLimits(sessions=2))
    server = with_resource(Probe())
    async with (
        serving(config=config, server=server) as listening,
        from_address("127.0.0.31") as http,
        AsyncExitStack() as streams,
    ):
        with trio.fail_after(TIMEOUT):
            caller = await opened(http, listening)
            events, request = await asking(streams, caller, 1)  # a pending elicitation
            subscriber = await opened(http, listening)
            subscribe = message("resources/subscribe", {"uri": "memo://status"}, id=2)
            assert (await subscriber.post(subscribe)).status_code == 200
            listener = await streams.enter_async_context(subscriber.get_stream())
            refused = await McpHttp(http, listening.url).post(message("initialize", INIT, 0))
            assert refused.status_code == 429
            assert refused.headers["retry-after"] == str(config.retry_after_s)
            unsubscribe = message("resources/unsubscribe", {"uri": "memo://status"}, id=3)
            assert (await subscriber.post(unsubscribe)).status_code == 200
            # a GET stream with nothing to wait for is no work: that session makes room
            newcomer = await opened(http, listening)
            assert await listener.next() is None
            assert await status_of(subscriber) == 404
            assert await status_of(newcomer) == 200
            await caller.answer(request, DECLINE)  # the busy session was left alone
            (response,) = await events.rest()
            assert response["result"]["content"][0]["text"] == "action=decline"
            assert listening.transport.refusals["principal_sessions"] == 1
            assert listening.transport.evictions == {"principal_sessions": 1}


async def test_at_the_global_cap_the_heaviest_clients_least_recent_idle_session_goes() -> None:
    config = HttpConfig(max_sessions=4)
    async with (
        serving(config=config) as listening,
        from_address("127.0.0.32") as heavy,
        from_address("127.0.0.33") as light,
        from_address("127.0.0.34") as newcomer,
    ):
        with trio.fail_after(TIMEOUT):
            a1, a2, a3 = [await opened(heavy, listening) for _ in range(3)]
            b1 = await opened(light, listening)  # older than a1's last use, yet spared
            assert await status_of(a1) == 200
            c1 = await opened(newcomer, listening)
            assert await status_of(a2) == 404
            for live in (a1, a3, b1, c1):
                assert await status_of(live) == 200
            assert listening.transport.session_count == 4
            assert listening.transport.evictions == {"sessions": 1}


async def test_the_global_session_cap_of_busy_sessions_is_a_503_until_one_is_idle() -> None:
    config = HttpConfig(max_sessions=3)
    async with (
        serving(config=config) as listening,
        from_address("127.0.0.35") as http,
        from_address("127.0.0.36") as other,
        AsyncExitStack() as streams,
    ):
        with trio.fail_after(TIMEOUT):
            sessions = [await opened(http, listening) for _ in range(3)]
            waiting = [await asking(streams, s, i) for i, s in enumerate(sessions)]
            full = await McpHttp(other, listening.url).post(message("initialize", INIT, 0))
            assert full.status_code == 503
            assert full.headers["retry-after"] == str(config.retry_after_s)
            assert listening.transport.refusals["sessions"] == 1
            events, request = waiting[1]
            await sessions[1].answer(request, DECLINE)
            await events.rest()  # that session is idle now, and makes room
            latecomer = await opened(other, listening)
            assert await status_of(sessions[1]) == 404
            assert await status_of(latecomer) == 200
            assert listening.transport.evictions == {"sessions": 1}


async def test_a_full_registry_evicts_a_suspended_call_whose_retry_replays() -> None:
    probe = mrtr.Probe()
    config = HttpConfig(continuations={"max_continuations": 4})
    generous = {"rate": 10_000, "max_pending_per_client": 10_000}
    async with (
        mrtr.serving(probe, config=config, **generous) as listening,
        from_address("127.0.0.40") as heavy_http,
        from_address("127.0.0.41") as light_http,
        from_address("127.0.0.42") as newcomer_http,
    ):
        with trio.fail_after(TIMEOUT):
            heavy = mrtr.StatelessPoster(heavy_http, listening.url)
            calls = [mrtr.ok(await heavy.call()) for _ in range(3)]
            light = mrtr.ok(await mrtr.StatelessPoster(light_http, listening.url).call())
            newcomer = await mrtr.StatelessPoster(newcomer_http, listening.url).call()
            assert mrtr.ok(newcomer)["resultType"] == "input_required"  # not a 503
            transport = listening.transport
            assert transport.evictions == {"suspended": 1}
            assert transport.suspended_calls == 4
            await mrtr.settle()
            assert probe.ended == ["pro"]  # the evicted call's tool ended
            heavy_tenant = Tenant(user="addr:127.0.0.40")
            assert sorted(await mrtr.statuses(listening, heavy_tenant)) == [
                "abandoned",
                "active",
                "active",
            ]
            key, _ = mrtr.only_request(calls[0])
            again = mrtr.ok(await heavy.call(calls[0]["requestState"], {key: mrtr.ACCEPT_ADA}))
            key, params = mrtr.only_request(again)
            assert params["message"] == "Create a pro account for Ada?"
            confirm = {key: {"action": "accept", "content": {"confirm": True}}}
            done = mrtr.ok(await heavy.call(again["requestState"], confirm))
            assert done["resultType"] == "complete"
            assert done["content"][0]["text"].startswith("pro: Ada -> action=accept")
            registry = transport.continuations
            assert registry is not None
            assert registry.counters["replayed"] == 1
            # the replay made room the same way: heavy's next least recent call went
            assert transport.evictions == {"suspended": 2}
            key, _ = mrtr.only_request(light)
            resumed = await mrtr.StatelessPoster(light_http, listening.url).call(
                light["requestState"], {key: mrtr.ACCEPT_ADA}
            )
            assert mrtr.ok(resumed)["resultType"] == "input_required"
            assert registry.counters["replayed"] == 1  # the light client's call was kept


async def test_an_evicted_suspended_calls_retry_is_unknown_in_suspend_mode() -> None:
    config = HttpConfig(continuations={"max_continuations": 2, "mrtr": "suspend"})
    generous = {"rate": 10_000, "max_pending_per_client": 10_000}
    async with (
        mrtr.serving(mrtr.Probe(), config=config, **generous) as listening,
        from_address("127.0.0.43") as heavy_http,
        from_address("127.0.0.44") as other_http,
    ):
        with trio.fail_after(TIMEOUT):
            heavy = mrtr.StatelessPoster(heavy_http, listening.url)
            first = mrtr.ok(await heavy.call())
            mrtr.ok(await heavy.call())
            mrtr.ok(await mrtr.StatelessPoster(other_http, listening.url).call())
            key, _ = mrtr.only_request(first)
            retry = await heavy.call(first["requestState"], {key: mrtr.ACCEPT_ADA})
            error = mrtr.refused(retry, 400, -32602)
            assert error["data"] == {"reason": "unknown_continuation"}
            assert listening.transport.evictions == {"suspended": 1}
