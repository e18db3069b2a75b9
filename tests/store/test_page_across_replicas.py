"""The hosted page behind a load balancer: two HTTP servers in this process share one real
``redis-server`` as two replicas would, and the browser's requests go to the replica that
did not open the page (a secret's page, and the link of a task's question).

Real time here (the server's clock and TTLs run on it): every wait is bounded.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import httpx2
import pytest
import trio

from erlmcp_py.actors.pages import PageQuestion, PageRegistry, PageTicket
from erlmcp_py.core.outcomes import Tenant
from erlmcp_py.transports.http import HttpConfig, Listening
from tests.store.server import RedisServer
from tests.transports.test_page import (
    CONSENT,
    CSRF,
    RING,
    TIMEOUT,
    StatelessPoster,
    asked,
    final_text,
    page_request,
    page_server,
    submit,
    tool_text,
)
from tests.transports.test_task_links import approve_on, clients, link_of, serving

QUESTION = PageQuestion("Your key?", {"type": "object", "properties": {}}, {})


@asynccontextmanager
async def two_replicas(url: str) -> AsyncIterator[tuple[Listening, Listening]]:
    """Two page-test servers sharing the store ``url`` and one key ring."""
    config = HttpConfig(continuations={"keyring": RING})
    async with (
        page_server(config, store=url) as a,
        page_server(config, store=url) as b,
    ):
        yield a, b


def on(listening: Listening, url: str) -> str:
    """The page ``url`` as reached through ``listening``'s address (another replica)."""
    return listening.url.removesuffix("/mcp") + "/elicit/" + url.rsplit("/", 1)[1]


async def test_a_page_opened_on_one_replica_is_rendered_and_answered_on_another(
    redis_server: RedisServer,
) -> None:
    async with two_replicas(redis_server.url()) as (a, b), asked(a) as (c, events, url):
        with trio.fail_after(TIMEOUT):
            page = await c.http.get(on(b, url))
            assert page.status_code == 200, page.text
            assert "Sign in to Acme" in page.text
            assert "Asked by <strong>Acme &lt;Cloud&gt;</strong>" in page.text  # who asks
            assert 'type="password"' in page.text
            csrf = CSRF.findall(page.text)[0]
            done = await c.http.post(
                on(b, url),
                data={"_csrf": csrf, "_action": "accept", "user": "ada", "api_key": "k-b"},
            )
            assert done.status_code == 200, done.text
            assert tool_text(await events.rest()) == "accept user=ada key=k-b"
            # single use on every replica
            for replica in (a, b):
                assert (await c.http.get(on(replica, url))).status_code == 410
                again = await c.http.post(
                    on(replica, url), data={"_csrf": csrf, "_action": "accept", "user": "x"}
                )
                assert again.status_code == 410


async def test_one_answer_wins_when_two_replicas_claim_a_ticket_at_once(
    redis_server: RedisServer,
) -> None:
    async with two_replicas(redis_server.url()) as (a, b):
        pages_a = a.transport.runtime.pages
        pages_b = b.transport.runtime.pages
        for _ in range(20):
            ticket = await pages_a.bind(await pages_a.open(QUESTION, Tenant("alice")), "e-1")
            seen = await pages_b.get(ticket.token)
            assert seen is not None
            assert (seen.elicitation_id, seen.csrf, seen.tenant) == ("e-1", ticket.csrf,
                                                                      Tenant("alice"))  # fmt: skip
            wins: list[bool] = []

            async def claim(pages: PageRegistry, ticket: PageTicket, wins: list[bool]) -> None:
                wins.append(await pages.claim(ticket))

            async with trio.open_nursery() as nursery:
                for pages in (pages_a, pages_b, pages_a, pages_b):
                    nursery.start_soon(claim, pages, ticket, wins)
            assert sorted(wins) == [False, False, False, True]
            await pages_b.release(ticket)  # an invalid answer gives it back, on any replica
            assert await pages_a.claim(ticket)
            await pages_a.close(ticket)
            closed = await pages_b.get(ticket.token)
            assert closed is not None
            assert closed.state == "closed"
            assert closed.csrf == ""  # the store keeps no question and no CSRF value
            assert closed.question.message == ""
            assert not await pages_b.claim(ticket)


async def test_decline_and_cancel_on_another_replica_reach_the_tool(
    redis_server: RedisServer,
) -> None:
    async with two_replicas(redis_server.url()) as (a, b):
        for action, said in (("decline", "decline"), ("cancel", "cancel by client")):
            async with asked(a) as (c, events, url):
                with trio.fail_after(TIMEOUT):
                    csrf = CSRF.findall((await c.http.get(on(b, url))).text)[0]
                    done = await c.http.post(on(b, url), data={"_csrf": csrf, "_action": action})
                    assert done.status_code == 200, done.text
                    assert tool_text(await events.rest()) == said
                    assert (await c.http.get(on(b, url))).status_code == 410


@pytest.mark.parametrize("action", ["accept", "decline", "cancel"])
async def test_a_page_answered_before_its_holder_writes_the_record_reaches_the_holder(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch, action: str
) -> None:
    # The holder writes its records to the store a moment after each change; here that moment
    # outlasts the page's answer, which must go to the replica its ticket names all the same.
    monkeypatch.setattr("erlmcp_py.store._redis._PUBLISH_DELAY_S", 5.0)
    said = {"accept": "accept user=ada key=k-b", "decline": "decline", "cancel": "cancel by client"}
    async with two_replicas(redis_server.url()) as (a, b), asked(a) as (c, events, url):
        with trio.fail_after(TIMEOUT):
            csrf = CSRF.findall((await c.http.get(on(b, url))).text)[0]
            data = {"_csrf": csrf, "_action": action, "user": "ada", "api_key": "k-b"}
            done = await c.http.post(on(b, url), data=data)
            assert done.status_code == 200, done.text
            assert tool_text(await events.rest()) == said[action]


async def test_a_2026_call_is_answered_by_a_page_submitted_on_another_replica(
    redis_server: RedisServer,
) -> None:
    async with (
        two_replicas(redis_server.url()) as (a, b),
        httpx2.AsyncClient(timeout=TIMEOUT) as http,
    ):
        with trio.fail_after(TIMEOUT):
            first = await StatelessPoster(http, a.url).call("login")
            key, url = page_request(first)
            assert (await submit(http, on(b, url), user="ada", api_key="k-26")).status_code == 200
            final = await StatelessPoster(http, a.url).call(
                "login", first["requestState"], {key: CONSENT}
            )
        assert final_text(final) == "accept user=ada key=k-26"


async def test_unknown_tokens_are_not_found_on_every_replica(redis_server: RedisServer) -> None:
    async with (
        two_replicas(redis_server.url()) as (a, b),
        httpx2.AsyncClient(timeout=TIMEOUT) as http,
    ):
        for replica in (a, b):
            page = await http.get(on(replica, "x/" + "A" * 43))
            assert page.status_code == 404


async def test_the_page_says_try_later_while_the_store_is_down_and_works_once_it_is_back(
    redis_server: RedisServer,
) -> None:
    async with two_replicas(redis_server.url()) as (a, b), asked(a) as (c, events, url):
        csrf = CSRF.findall((await c.http.get(on(b, url))).text)[0]
        redis_server.stop()
        try:
            for replica in (a, b):
                with trio.fail_after(3):  # within the store's deadline, never a hang
                    page = await c.http.get(on(replica, url))
                    post = await c.http.post(
                        on(replica, url), data={"_csrf": csrf, "_action": "decline"}
                    )
                    localized = await c.http.get(
                        on(replica, url), headers={"accept-language": "pt-BR"}
                    )
                assert page.status_code == 503
                assert "try again in a moment" in page.text
                assert page.headers["retry-after"] == "5"
                assert post.status_code == 503
                assert localized.status_code == 503
                assert "tente de novo em instantes" in localized.text
        finally:
            redis_server.start()
        # The server came back empty: the replica that opened the page wrote it again.
        with trio.fail_after(TIMEOUT):
            page = await until_ok(lambda: c.http.get(on(b, url)))
            csrf = CSRF.findall(page.text)[0]
            # the holder's channel may still be reconnecting: 503 until it listens again
            await until_answered(
                lambda: c.http.post(on(b, url), data={"_csrf": csrf, "_action": "decline"})
            )
            assert tool_text(await events.rest()) == "decline"


async def until_answered(send: Callable[[], Awaitable[httpx2.Response]]) -> None:
    """POST an answer again while the replicas say 503, a bounded number of times.

    A 503 can come after the holder received the forwarded answer, when only its reply was
    late: the next try then finds the elicitation ended (410). That counts as answered; what
    the tool returns says whether the answer landed.
    """
    refused = False
    for _ in range(100):
        response = await send()
        if response.status_code == 200 or (response.status_code == 410 and refused):
            return
        if response.status_code != 503:
            break
        refused = True
        await trio.sleep(0.05)
    raise AssertionError(f"still {response.status_code}: {response.text}")


async def until_ok(send: Callable[[], Awaitable[httpx2.Response]]) -> httpx2.Response:
    """``send()`` again until it answers 200 (a store coming back), a bounded number of times."""
    for _ in range(100):
        response = await send()
        if response.status_code == 200:
            return response
        await trio.sleep(0.05)
    raise AssertionError(f"still {response.status_code}: {response.text}")


async def test_a_task_questions_link_is_answered_on_another_replica(
    redis_server: RedisServer,
) -> None:
    """The task runs on replica A; its question's link, opened through replica B (a load
    balancer's choice), renders, refuses, and answers there: the task moves on on A."""
    store = redis_server.url()
    async with (
        serving(store=store) as a,
        serving(store=store) as b,
        clients(a) as (alice, browser),
    ):
        with trio.fail_after(TIMEOUT):
            created = await alice.result(
                "tools/call", {"name": "approve", "arguments": {"invoice": "INV-R"}}
            )
            task_id = created["taskId"]
            url = on(b, link_of(await alice.asking(task_id, {"approval"}), "approval"))
            refused = await approve_on(browser, url, approved="true", approver="admin")
            assert refused.status_code == 422, refused.text
            assert "The name admin is reserved." in refused.text
            done = await approve_on(browser, url, approved="true", approver="Ada")
            assert done.status_code == 200, done.text
            await alice.asking(task_id, {"note"})
            for replica in (a, b):  # used, on every replica
                assert (await browser.get(on(replica, url))).status_code == 410
            await alice.update(task_id, {"note": {"action": "accept", "content": {"text": "r"}}})
            ended = await alice.until(task_id, "completed")
            assert ended["result"]["content"][0]["text"] == "INV-R: approved by Ada; note: r"
