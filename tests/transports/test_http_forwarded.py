"""``serve_http`` behind a trusted proxy, over real sockets on 127.0.0.1.

The "proxy" is a client whose connections leave from a trusted loopback address
(``HttpConfig.forwarded_allow_ips``) and that names the client in ``X-Forwarded-For`` or
``Forwarded``; a client leaving from any other address sends the same headers and is ignored.
The named client is the principal: its session share, its elicitation rate and the binding of
its 2026-07-28 ``requestState`` are its own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
import structlog
import trio

from erlmcp_py.core.outcomes import Tenant
from erlmcp_py.transports.http import HttpConfig, PrincipalLimits
from tests.transports import test_http_mrtr as mrtr
from tests.transports.test_http import INIT, TIMEOUT, McpHttp, call, message, serving

PROXY = "127.0.0.20"  # the trusted proxy's address
STRANGER = "127.0.0.21"  # a peer nobody trusts
TRUST = HttpConfig(forwarded_allow_ips=PROXY)


@asynccontextmanager
async def peer(local: str, **headers: str) -> AsyncIterator[httpx2.AsyncClient]:
    """An HTTP client whose connections leave from ``local``, sending ``headers`` on every
    request (``x_forwarded_for="…"``)."""
    sent = {name.replace("_", "-"): value for name, value in headers.items()}
    transport = httpx2.AsyncHTTPTransport(local_address=local)
    async with httpx2.AsyncClient(transport=transport, timeout=TIMEOUT, headers=sent) as http:
        yield http


async def open_session(http: httpx2.AsyncClient, url: str, **headers: str) -> McpHttp:
    """A new 2025-11-25 session (``initialize`` answered 200)."""
    session = McpHttp(http, url)
    response = await session.post(message("initialize", INIT, 0), **headers)
    assert response.status_code == 200, response.text
    session.session_id = response.headers["mcp-session-id"]
    return session


async def alive(session: McpHttp) -> bool:
    """Whether the session still answers (a ``ping``: 200), or was ended (404). A client at its
    session share opens a new one by ending its own least recently used idle session: which
    sessions live tells whose share a client counted against."""
    status = (await session.post(message("ping", {}, 1))).status_code
    assert status in (200, 404), status
    return status == 200


async def lives(*sessions: McpHttp) -> list[bool]:
    return [await alive(session) for session in sessions]


def one_session_each(**config: Any) -> HttpConfig:
    return HttpConfig(limits=PrincipalLimits(sessions=1), **config)


async def test_a_trusted_proxy_gives_each_client_it_names_its_own_session_share() -> None:
    async with serving(config=one_session_each(forwarded_allow_ips=PROXY)) as listening:
        url = listening.url
        with trio.fail_after(TIMEOUT):
            async with (
                peer(PROXY, x_forwarded_for="203.0.113.1") as first,
                peer(PROXY, x_forwarded_for="198.51.100.9, 203.0.113.2") as second,
                peer(PROXY, forwarded='for="[2001:db8:1:2::7]:4711"') as third,
                peer(PROXY, forwarded='for="[2001:db8:1:2::8]"') as same_64,
                peer(PROXY) as itself,  # the proxy's own requests: its own address
            ):
                a = await open_session(first, url)
                b = await open_session(second, url)  # another client: its own share
                c = await open_session(third, url)
                d = await open_session(itself, url)
                assert await lives(a, b, c, d) == [True] * 4
                a2 = await open_session(first, url)  # its one session is taken: it ends it
                assert await lives(a, a2, b, c, d) == [False, True, True, True, True]
                c2 = await open_session(same_64, url)  # IPv6 clients count by /64
                assert await lives(c, c2, b, d) == [False, True, True, True]
        assert listening.transport.session_count == 4


async def test_forwarding_headers_from_an_untrusted_peer_are_ignored() -> None:
    async with serving(config=one_session_each(forwarded_allow_ips=PROXY)) as listening:
        url = listening.url
        with trio.fail_after(TIMEOUT):
            async with peer(PROXY, x_forwarded_for="203.0.113.2") as named:
                claimed = await open_session(named, url)
                for headers in (
                    {"x_forwarded_for": "203.0.113.2"},
                    {"forwarded": "for=203.0.113.2"},
                    {"x_forwarded_for": "203.0.113.2", "forwarded": "for=203.0.113.2"},
                ):
                    async with peer(STRANGER, **headers) as spoofing:
                        before = await open_session(spoofing, url)
                        again = await open_session(spoofing, url)  # the stranger's own share
                        assert await lives(before, again) == [False, True], headers
                # what the stranger claimed to be is untouched
                assert await alive(claimed)


async def test_without_trusted_proxies_every_header_is_ignored() -> None:
    async with serving(config=one_session_each()) as listening:
        with trio.fail_after(TIMEOUT):
            async with (
                peer(PROXY, x_forwarded_for="203.0.113.1") as one,
                peer(PROXY, x_forwarded_for="203.0.113.2") as two,
            ):
                first = await open_session(one, listening.url)
                second = await open_session(two, listening.url)  # the same client: one share
                assert await lives(first, second) == [False, True]


async def test_the_named_client_is_the_principal_of_a_stateless_call() -> None:
    probe = mrtr.Probe()
    async with mrtr.serving(probe, TRUST) as listening:
        with trio.fail_after(TIMEOUT):
            async with peer(PROXY, x_forwarded_for="203.0.113.7") as http:
                alice = mrtr.StatelessPoster(http, listening.url)
                first = mrtr.ok(await alice.call())
            key, _ = mrtr.only_request(first)
            answer = {key: mrtr.ACCEPT_ADA}
            async with peer(PROXY, x_forwarded_for="203.0.113.8") as http:
                other = mrtr.StatelessPoster(http, listening.url)
                foreign = await other.call(first["requestState"], answer)
            assert mrtr.refused(foreign, 400, -32602)["data"] == {"reason": "wrong_principal"}
            async with peer(PROXY) as http:  # the proxy itself is someone else again
                proxy = mrtr.StatelessPoster(http, listening.url)
                mine = await proxy.call(first["requestState"], answer)
            assert mrtr.refused(mine, 400, -32602)["data"] == {"reason": "wrong_principal"}
            async with peer(PROXY, forwarded="for=203.0.113.7;proto=https") as http:
                again = mrtr.StatelessPoster(http, listening.url)  # the same client, by Forwarded
                second = mrtr.ok(await again.call(first["requestState"], answer))
            assert mrtr.only_request(second)[1]["message"] == "Create a pro account for Ada?"
    assert probe.tenants == [Tenant(user="addr:203.0.113.7")]


async def test_the_elicitation_rate_counts_the_named_client() -> None:
    async def ask(http: httpx2.AsyncClient, url: str) -> dict[str, Any]:
        """A session's one ``ask`` call, declined if asked; the call's response."""
        session = McpHttp(http, url)
        await session.initialize()
        async with session.stream(call(1)) as events:
            first = await events.next()
            assert first is not None
            if first.get("method") != "elicitation/create":
                return first
            await session.answer(first, {"action": "decline"})
            (response,) = await events.rest()
            return response

    async with serving(config=TRUST, rate=1) as listening:
        with trio.fail_after(TIMEOUT):
            async with peer(PROXY, x_forwarded_for="203.0.113.1") as one:
                admitted = await ask(one, listening.url)
                assert admitted["result"]["content"][0]["text"].startswith("action=decline")
                limited = await ask(one, listening.url)  # its one elicitation a minute is used
                assert limited["result"]["isError"] is True
                assert "rate limited" in limited["result"]["content"][0]["text"]
            async with peer(PROXY, x_forwarded_for="203.0.113.2") as two:
                other = await ask(two, listening.url)
                assert other["result"]["content"][0]["text"].startswith("action=decline")


@pytest.mark.parametrize(
    ("headers", "why"),
    [
        ({"x_forwarded_for": "203.0.113.7, not-an-address"}, "X-Forwarded-For: not an IP"),
        ({"forwarded": "for=2001:db8::1"}, "Forwarded: an IPv6 address must be in brackets"),
        ({"forwarded": "for=_hidden"}, "Forwarded: the client is unknown or obfuscated"),
        (
            {"x_forwarded_for": "203.0.113.7", "forwarded": "for=203.0.113.8"},
            "X-Forwarded-For and Forwarded name different clients",
        ),
    ],
)
async def test_unreadable_headers_from_a_trusted_proxy_leave_its_address_and_are_logged(
    headers: dict[str, str], why: str
) -> None:
    probe = mrtr.Probe()
    async with mrtr.serving(probe, TRUST) as listening:
        with trio.fail_after(TIMEOUT), structlog.testing.capture_logs() as logs:
            async with peer(PROXY, **headers) as http:
                assert mrtr.ok(await mrtr.StatelessPoster(http, listening.url).call())  # not a 500
    assert probe.tenants == [Tenant(user=f"addr:{PROXY}")]
    [ignored] = [event for event in logs if event["event"] == "forwarded_ignored"]
    assert ignored["peer"] == PROXY
    assert ignored["why"].startswith(why), ignored


def test_a_bad_trusted_proxy_list_is_refused_when_the_config_is_built() -> None:
    with pytest.raises(ValueError, match=r"^forwarded_allow_ips: 'proxy\.local' is not an IP"):
        HttpConfig(forwarded_allow_ips="127.0.0.1,proxy.local")
    assert HttpConfig(forwarded_allow_ips=("127.0.0.1", "10.0.0.0/8")).forwarded_allow_ips
