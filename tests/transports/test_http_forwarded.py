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


async def open_session(http: httpx2.AsyncClient, url: str) -> int:
    """An ``initialize`` POST; its status."""
    return (await McpHttp(http, url).post(message("initialize", INIT, 0))).status_code


def one_session_each(**config: Any) -> HttpConfig:
    return HttpConfig(limits=PrincipalLimits(sessions=1), **config)


async def test_a_trusted_proxy_gives_each_client_it_names_its_own_session_share() -> None:
    async with serving(config=one_session_each(forwarded_allow_ips=PROXY)) as listening:
        url = listening.url
        with trio.fail_after(TIMEOUT):
            async with peer(PROXY, x_forwarded_for="203.0.113.1") as first:
                assert await open_session(first, url) == 200
                assert await open_session(first, url) == 429  # its one session is taken
            async with peer(PROXY, x_forwarded_for="198.51.100.9, 203.0.113.2") as second:
                assert await open_session(second, url) == 200  # another client: its own share
            async with peer(PROXY, forwarded='for="[2001:db8:1:2::7]:4711"') as third:
                assert await open_session(third, url) == 200
            async with peer(PROXY, forwarded='for="[2001:db8:1:2::8]"') as same_64:
                assert await open_session(same_64, url) == 429  # IPv6 clients count by /64
            async with peer(PROXY) as itself:  # the proxy's own requests: its own address
                assert await open_session(itself, url) == 200
        assert listening.transport.session_count == 4


async def test_forwarding_headers_from_an_untrusted_peer_are_ignored() -> None:
    async with serving(config=one_session_each(forwarded_allow_ips=PROXY)) as listening:
        url = listening.url
        with trio.fail_after(TIMEOUT):
            async with peer(STRANGER, x_forwarded_for="203.0.113.1") as spoofing:
                assert await open_session(spoofing, url) == 200
            for headers in (
                {"x_forwarded_for": "203.0.113.2"},
                {"forwarded": "for=203.0.113.3"},
                {"x_forwarded_for": "203.0.113.4", "forwarded": "for=203.0.113.4"},
            ):
                async with peer(STRANGER, **headers) as again:  # still the stranger's share
                    assert await open_session(again, url) == 429, headers
            # what the stranger claimed to be is untouched
            async with peer(PROXY, x_forwarded_for="203.0.113.2") as named:
                assert await open_session(named, url) == 200


async def test_without_trusted_proxies_every_header_is_ignored() -> None:
    async with serving(config=one_session_each()) as listening:
        with trio.fail_after(TIMEOUT):
            async with peer(PROXY, x_forwarded_for="203.0.113.1") as one:
                assert await open_session(one, listening.url) == 200
            async with peer(PROXY, x_forwarded_for="203.0.113.2") as two:
                assert await open_session(two, listening.url) == 429


async def test_the_named_client_is_the_principal_of_a_stateless_call() -> None:
    probe = mrtr.Probe()
    async with mrtr.serving(probe, TRUST) as listening:
        with trio.fail_after(TIMEOUT):
            async with peer(PROXY, x_forwarded_for="203.0.113.7") as http:
                alice = mrtr.Modern(http, listening.url)
                first = mrtr.ok(await alice.call())
            key, _ = mrtr.only_request(first)
            answer = {key: mrtr.ACCEPT_ADA}
            async with peer(PROXY, x_forwarded_for="203.0.113.8") as http:
                other = mrtr.Modern(http, listening.url)
                foreign = await other.call(first["requestState"], answer)
            assert mrtr.refused(foreign, 400, -32602)["data"] == {"reason": "wrong_principal"}
            async with peer(PROXY) as http:  # the proxy itself is someone else again
                proxy = mrtr.Modern(http, listening.url)
                mine = await proxy.call(first["requestState"], answer)
            assert mrtr.refused(mine, 400, -32602)["data"] == {"reason": "wrong_principal"}
            async with peer(PROXY, forwarded="for=203.0.113.7;proto=https") as http:
                again = mrtr.Modern(http, listening.url)  # the same client, by Forwarded
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
                assert mrtr.ok(await mrtr.Modern(http, listening.url).call())  # not a 500
    assert probe.tenants == [Tenant(user=f"addr:{PROXY}")]
    [ignored] = [event for event in logs if event["event"] == "forwarded_ignored"]
    assert ignored["peer"] == PROXY
    assert ignored["why"].startswith(why), ignored


def test_a_bad_trusted_proxy_list_is_refused_when_the_config_is_built() -> None:
    with pytest.raises(ValueError, match=r"^forwarded_allow_ips: 'proxy\.local' is not an IP"):
        HttpConfig(forwarded_allow_ips="127.0.0.1,proxy.local")
    assert HttpConfig(forwarded_allow_ips=("127.0.0.1", "10.0.0.0/8")).forwarded_allow_ips
