"""A task's question answered from a link of the hosted page, over real HTTP on 127.0.0.1.

An MCP client (raw 2026-07-28 HTTP, the principal named by a trusted header) runs a task whose
tool asks; another HTTP client, with no MCP session and no principal of its own, plays the
approver the link was sent to: it opens the link, is refused and corrected, answers. The task
moves on as after a ``tasks/update``; the link is single use, dies with its question, and shows
nothing but that question.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import httpx2
import pytest
import trio
from pydantic import BaseModel, Field, SecretStr, field_validator

from erlmcp_py.actors.api import RuntimeConfig
from erlmcp_py.actors.pages import PAGE_URL_META
from erlmcp_py.core.errors import StoreUnavailable
from erlmcp_py.core.outcomes import Accepted
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.server import Server
from erlmcp_py.transports.http import HttpConfig, Listening, serve_http
from tests.transports.test_http_tasks import Client, error
from tests.transports.test_page import CSRF

TIMEOUT = 10
LINK = re.compile(r"http://127\.0\.0\.1:\d+/elicit/[A-Za-z0-9_-]{43}")
CONFIG = HttpConfig(principal_header="x-principal")


class Approval(BaseModel):
    """The approver's answer; one name is reserved."""

    approved: bool = Field(title="Approved")
    approver: str = Field(title="Approver", min_length=2)

    @field_validator("approver")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        if value == "admin":
            raise ValueError("the name admin is reserved")
        return value


class Note(BaseModel):
    text: str


class Token(BaseModel):
    token: SecretStr


def said(outcome: object) -> str:
    if isinstance(outcome, Accepted):
        content = outcome.content
        if isinstance(content, Approval):
            return f"{'approved' if content.approved else 'refused'} by {content.approver}"
        if isinstance(content, Note):
            return content.text
        if isinstance(content, Token):
            return f"token {content.token.get_secret_value()}"
    return type(outcome).__name__


def build(**runtime: Any) -> Server:
    server = Server(
        "links", "1.0", title="Invoices", runtime_config=RuntimeConfig.model_validate(runtime)
    )

    @server.tool(task=True, title="Approve an invoice")
    async def approve(ctx: Context, invoice: str) -> str:
        """Ask for an approval, then for a note."""
        approval = await ctx.elicit(f"Approve invoice {invoice}?", Approval, key="approval")
        note = await ctx.elicit(f"A note for {invoice}?", Note, key="note")
        return f"{invoice}: {said(approval)}; note: {said(note)}"

    @server.tool(task=True)
    async def both(ctx: Context) -> str:
        """Ask two people at once."""
        got: dict[str, str] = {}

        async def ask(key: str) -> None:
            got[key] = said(await ctx.elicit(f"{key} approver, approve?", Approval, key=key))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask, "left")
            nursery.start_soon(ask, "right")
        return f"left {got['left']}, right {got['right']}"

    @server.tool(task=True)
    async def secret(ctx: Context) -> str:
        """Ask for a secret (on the hosted page, in URL mode)."""
        return said(await ctx.elicit("Your deploy token?", Token, key="token"))

    @server.tool()
    async def plain(ctx: Context) -> str:
        """An ordinary call that asks."""
        return said(await ctx.elicit("A note?", Note, key="note"))

    return server


@asynccontextmanager
async def serving(**runtime: Any) -> AsyncIterator[Listening]:
    server = build(**runtime)
    async with server.running(), trio.open_nursery() as nursery:
        listening: Listening = await nursery.start(
            partial(serve_http, server, host="127.0.0.1", port=0, config=CONFIG)
        )
        try:
            yield listening
        finally:
            nursery.cancel_scope.cancel()


@asynccontextmanager
async def clients(listening: Listening) -> AsyncIterator[tuple[Client, httpx2.AsyncClient]]:
    """Alice's MCP client, and the approver's browser (no MCP session, no principal)."""
    async with (
        httpx2.AsyncClient(timeout=TIMEOUT) as http,
        httpx2.AsyncClient(timeout=TIMEOUT) as browser,
    ):
        yield Client(http, listening.url, "alice"), browser


async def started(alice: Client, tool: str, **arguments: Any) -> str:
    created = await alice.result("tools/call", {"name": tool, "arguments": arguments})
    assert created["resultType"] == "task", created
    task_id: str = created["taskId"]
    return task_id


def link_of(task: Mapping[str, Any], key: str) -> str:
    url: str = task["inputRequests"][key]["params"]["_meta"][PAGE_URL_META]
    assert LINK.fullmatch(url), url
    return url


async def approve_on(browser: httpx2.AsyncClient, url: str, **fields: str) -> httpx2.Response:
    page = await browser.get(url)
    assert page.status_code == 200, page.text
    (csrf,) = CSRF.findall(page.text)
    return await browser.post(url, data={"_csrf": csrf, "_action": "accept", **fields})


async def test_a_task_question_is_answered_through_its_link_by_another_http_client() -> None:
    async with serving() as listening, clients(listening) as (alice, browser):
        task_id = await started(alice, "approve", invoice="INV-7")
        task = await alice.asking(task_id, {"approval"})
        url = link_of(task, "approval")
        registry = listening.transport.task_registry
        assert registry is not None
        assert await registry.page_links(task_id, "header:alice") == {"approval": url}
        page = await browser.get(url)
        assert page.status_code == 200
        assert "Approve invoice INV-7?" in page.text
        assert "Asked by <strong>Invoices</strong>, for its tool" in page.text
        assert 'name="approver"' in page.text
        (csrf,) = CSRF.findall(page.text)
        done = await browser.post(
            url, data={"_csrf": csrf, "_action": "accept", "approved": "true", "approver": "Ada"}
        )
        assert done.status_code == 200, done.text
        assert "Your answer was sent" in done.text
        # The task moves on to its next question; the link's key was answered: an answer
        # to it now is ignored as for any answered key.
        task = await alice.asking(task_id, {"note"})
        await alice.update(
            task_id,
            {
                "approval": {"action": "accept", "content": {"approved": False, "approver": "Eve"}},
                "note": {"action": "accept", "content": {"text": "paid"}},
            },
        )
        ended = await alice.until(task_id, "completed")
        assert ended["result"]["content"][0]["text"] == "INV-7: approved by Ada; note: paid"
        assert await registry.page_links(task_id, "header:alice") == {}


async def test_a_refused_answer_is_shown_again_with_the_servers_message() -> None:
    async with serving() as listening, clients(listening) as (alice, browser):
        task_id = await started(alice, "approve", invoice="INV-8")
        url = link_of(await alice.asking(task_id, {"approval"}), "approval")
        refused = await approve_on(browser, url, approved="true", approver="admin")
        assert refused.status_code == 422, refused.text
        assert "The name admin is reserved." in refused.text
        assert 'value="admin"' in refused.text  # the form comes back as it was sent
        too_short = await approve_on(browser, url, approved="true", approver="A")
        assert too_short.status_code == 422
        assert "Must be at least 2 characters long." in too_short.text
        # Refusals leave the question as it was: the same key, no re-prompt.
        task = await alice.result("tasks/get", {"taskId": task_id})
        assert set(task["inputRequests"]) == {"approval"}
        assert "not accepted" not in task["inputRequests"]["approval"]["params"]["message"]
        done = await approve_on(browser, url, approver="Bob")  # a switch left off: false
        assert done.status_code == 200, done.text
        await alice.asking(task_id, {"note"})
        await alice.update(task_id, {"note": {"action": "decline"}})
        ended = await alice.until(task_id, "completed")
        assert ended["result"]["content"][0]["text"] == "INV-8: refused by Bob; note: Declined"


async def test_the_link_is_single_use_and_dead_once_its_question_ends() -> None:
    async with serving() as listening, clients(listening) as (alice, browser):
        # answered through the link: used
        task_id = await started(alice, "approve", invoice="INV-1")
        url = link_of(await alice.asking(task_id, {"approval"}), "approval")
        csrf = CSRF.findall((await browser.get(url)).text)[0]
        fields = {"_csrf": csrf, "_action": "accept", "approved": "true", "approver": "Ada"}
        assert (await browser.post(url, data=fields)).status_code == 200
        assert (await browser.post(url, data=fields)).status_code == 410
        assert (await browser.get(url)).status_code == 410
        # answered with tasks/update: its link dies with it
        url = link_of(await alice.asking(task_id, {"note"}), "note")
        assert (await browser.get(url)).status_code == 200
        await alice.update(task_id, {"note": {"action": "accept", "content": {"text": "ok"}}})
        await alice.until(task_id, "completed")
        assert (await browser.get(url)).status_code == 410
        # the task cancelled: so are its questions and their links
        task_id = await started(alice, "approve", invoice="INV-2")
        url = link_of(await alice.asking(task_id, {"approval"}), "approval")
        csrf = CSRF.findall((await browser.get(url)).text)[0]
        await alice.result("tasks/cancel", {"taskId": task_id})
        await alice.until(task_id, "cancelled")
        assert (await browser.get(url)).status_code == 410  # closed before the task ended
        late = await browser.post(url, data={**fields, "_csrf": csrf})
        assert late.status_code == 410


async def test_the_link_of_a_question_that_timed_out_is_dead() -> None:
    # A half-second deadline (no warning): the approver comes too late.
    async with (
        serving(task_form_deadline_s=0.5, task_warn_before_s=0) as listening,
        clients(listening) as (alice, browser),
    ):
        task_id = await started(alice, "approve", invoice="INV-4")
        url = link_of(await alice.asking(task_id, {"approval"}), "approval")
        csrf = CSRF.findall((await browser.get(url)).text)[0]
        await alice.asking(task_id, {"note"})  # the approval timed out: the tool moved on
        assert (await browser.get(url)).status_code == 410
        late = await browser.post(
            url, data={"_csrf": csrf, "_action": "accept", "approved": "true", "approver": "Ada"}
        )
        assert late.status_code == 410
        ended = await alice.until(task_id, "completed")
        assert ended["result"]["content"][0]["text"] == "INV-4: TimedOut; note: TimedOut"


async def test_decline_on_the_link_reaches_the_tool() -> None:
    async with serving() as listening, clients(listening) as (alice, browser):
        task_id = await started(alice, "approve", invoice="INV-3")
        url = link_of(await alice.asking(task_id, {"approval"}), "approval")
        csrf = CSRF.findall((await browser.get(url)).text)[0]
        done = await browser.post(url, data={"_csrf": csrf, "_action": "decline"})
        assert done.status_code == 200
        await alice.asking(task_id, {"note"})
        await alice.result("tasks/cancel", {"taskId": task_id})
        assert (await alice.until(task_id, "cancelled"))["status"] == "cancelled"


async def test_a_link_shows_its_question_only_and_opens_nothing_to_another_principal() -> None:
    async with serving() as listening, clients(listening) as (alice, browser):
        task_id = await started(alice, "both")
        task = await alice.asking(task_id, {"left", "right"})
        left, right = link_of(task, "left"), link_of(task, "right")
        assert left != right
        page = (await browser.get(left)).text
        assert "left approver, approve?" in page
        assert "right approver" not in page
        assert task_id not in page
        assert right.rsplit("/", 1)[1] not in page
        # The link is no key to the task: Bob, holding it, reads nothing of Alice's task.
        bob = Client(alice.http, listening.url, "bob")
        token = left.rsplit("/", 1)[1]
        for probe in (task_id, token):
            refused = error(await bob.post("tasks/get", {"taskId": probe}), 400, -32602)
            assert refused["message"] == "Failed to retrieve task: Task not found"
        registry = listening.transport.task_registry
        assert registry is not None
        with pytest.raises(Exception, match="Task not found"):
            await registry.page_links(task_id, "header:bob")
        # Answering one question through its link leaves the other one open.
        assert (await approve_on(browser, left, approved="true", approver="Lee")).status_code == 200
        task = await alice.asking(task_id, {"right"})
        assert link_of(task, "right") == right
        await alice.update(
            task_id,
            {"right": {"action": "accept", "content": {"approved": True, "approver": "Ro"}}},
        )
        ended = await alice.until(task_id, "completed")
        assert ended["result"]["content"][0]["text"] == "left approved by Lee, right approved by Ro"


async def test_a_task_secret_question_names_its_own_page_as_its_link() -> None:
    async with serving() as listening, clients(listening) as (alice, browser):
        caps = {
            "elicitation": {"form": {}, "url": {}},
            "extensions": {"io.modelcontextprotocol/tasks": {}},
        }
        created = await alice.result("tools/call", {"name": "secret", "arguments": {}}, caps=caps)
        task_id = created["taskId"]
        with trio.fail_after(TIMEOUT):
            while True:
                task = await alice.result("tasks/get", {"taskId": task_id}, caps=caps)
                if "token" in task.get("inputRequests", {}):
                    break
                await trio.sleep(0.02)
        params = task["inputRequests"]["token"]["params"]
        assert params["mode"] == "url"
        assert params["_meta"][PAGE_URL_META] == params["url"]
        assert (await approve_on(browser, params["url"], token="t-1")).status_code == 200
        ended = await alice.until(task_id, "completed")
        assert ended["result"]["content"][0]["text"] == "token t-1"


async def test_without_task_links_a_task_question_has_no_link() -> None:
    async with serving(task_page_links=False) as listening, clients(listening) as (alice, _):
        task_id = await started(alice, "approve", invoice="INV-9")
        task = await alice.asking(task_id, {"approval"})
        assert "_meta" not in task["inputRequests"]["approval"]["params"]
        registry = listening.transport.task_registry
        assert registry is not None
        assert await registry.page_links(task_id, "header:alice") == {}
        assert len(listening.transport.runtime.pages) == 0  # no ticket was opened


async def test_a_question_of_an_ordinary_call_has_no_link() -> None:
    async with serving() as listening, clients(listening) as (alice, _):
        result = await alice.result("tools/call", {"name": "plain", "arguments": {}})
        assert result["resultType"] == "input_required"
        assert "_meta" not in result["inputRequests"]["note"]["params"]
        assert len(listening.transport.runtime.pages) == 0


APPROVED = {"approved": True, "approver": "Ada"}


class HeldJournal:
    """The store's journal writes, each held until :meth:`release` (or refused while
    ``down``): what a task's answer waits for before its tool gets it."""

    def __init__(self, listening: Listening, monkeypatch: pytest.MonkeyPatch) -> None:
        self.store = listening.transport.runtime.store
        self.append = self.store.append_task_answers
        self.written: list[list[tuple[str | None, str, Any]]] = []
        self.down = False
        self.gate: trio.Event | None = None
        self.wrote = trio.Event()
        monkeypatch.setattr(self.store, "append_task_answers", self.held)

    def hold(self) -> None:
        self.gate = trio.Event()

    def release(self) -> None:
        assert self.gate is not None
        self.gate.set()
        self.gate = None

    async def held(self, task_id: str, answers: Any) -> bool:
        if self.down:
            raise StoreUnavailable("task_answer")
        self.written.append(list(answers))
        self.wrote.set()
        if self.gate is not None:
            await self.gate.wait()
        kept: bool = await self.append(task_id, answers)
        return kept

    async def until_written(self, count: int) -> None:
        with trio.fail_after(TIMEOUT):
            while len(self.written) < count:
                self.wrote = trio.Event()
                await self.wrote.wait()

    async def journal(self, task_id: str) -> list[tuple[str | None, Any]]:
        loaded = await self.store.load_task(task_id)
        assert loaded is not None
        return [(key, response) for key, _, response in loaded[1]]


async def test_an_answer_on_the_link_is_journaled_before_the_tool_gets_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with serving() as listening, clients(listening) as (alice, browser):
        journal = HeldJournal(listening, monkeypatch)
        task_id = await started(alice, "approve", invoice="INV-5")
        url = link_of(await alice.asking(task_id, {"approval"}), "approval")
        page = await browser.get(url)
        (csrf,) = CSRF.findall(page.text)
        answer = {"_csrf": csrf, "_action": "accept", "approved": "true", "approver": "Ada"}
        posted: list[httpx2.Response] = []

        async def post() -> None:
            posted.append(await browser.post(url, data=answer))

        journal.hold()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(post)
            await journal.until_written(1)
            # journaling: the tool has not got it, the question is still asked, and a
            # tasks/update for the same key meanwhile is ignored (the first answer wins)
            await alice.update(
                task_id,
                {"approval": {"action": "accept", "content": {**APPROVED, "approver": "Eve"}}},
            )
            task = await alice.result("tasks/get", {"taskId": task_id})
            assert set(task["inputRequests"]) == {"approval"}
            assert posted == []
            journal.release()
        assert posted[0].status_code == 200, posted[0].text
        url = link_of(await alice.asking(task_id, {"note"}), "note")
        csrf = CSRF.findall((await browser.get(url)).text)[0]
        declined = await browser.post(url, data={"_csrf": csrf, "_action": "decline"})
        assert declined.status_code == 200
        ended = await alice.until(task_id, "completed")
        assert ended["result"]["content"][0]["text"] == "INV-5: approved by Ada; note: Declined"
        assert await journal.journal(task_id) == [
            ("approval", {"action": "accept", "content": APPROVED}),
            ("note", {"action": "decline"}),
        ]


async def test_an_answer_on_the_link_the_journal_cannot_take_is_not_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with serving() as listening, clients(listening) as (alice, browser):
        journal = HeldJournal(listening, monkeypatch)
        task_id = await started(alice, "approve", invoice="INV-6")
        url = link_of(await alice.asking(task_id, {"approval"}), "approval")
        (csrf,) = CSRF.findall((await browser.get(url)).text)
        answer = {"_csrf": csrf, "_action": "accept", "approved": "true", "approver": "Ada"}
        journal.down = True
        refused = await browser.post(url, data=answer)
        assert refused.status_code == 503, refused.text
        assert refused.headers["retry-after"] == "5"
        assert "Your answer was not sent: it cannot be recorded right now." in refused.text
        assert 'value="Ada"' in refused.text  # the form comes back as it was sent
        # nothing was delivered: the question is asked as it was, its link still works
        task = await alice.result("tasks/get", {"taskId": task_id})
        assert set(task["inputRequests"]) == {"approval"}
        assert await journal.journal(task_id) == []
        journal.down = False
        done = await browser.post(url, data=answer)
        assert done.status_code == 200, done.text
        await alice.asking(task_id, {"note"})
        assert await journal.journal(task_id) == [
            ("approval", {"action": "accept", "content": APPROVED})
        ]


async def test_a_key_a_tasks_update_answers_first_refuses_its_link(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with serving() as listening, clients(listening) as (alice, browser):
        journal = HeldJournal(listening, monkeypatch)
        task_id = await started(alice, "approve", invoice="INV-7")
        url = link_of(await alice.asking(task_id, {"approval"}), "approval")
        (csrf,) = CSRF.findall((await browser.get(url)).text)
        answer = {"_csrf": csrf, "_action": "accept", "approved": "true", "approver": "Ada"}
        journal.hold()
        async with trio.open_nursery() as nursery:
            by_update = {
                "approval": {"action": "accept", "content": {**APPROVED, "approver": "Eve"}}
            }
            nursery.start_soon(alice.update, task_id, by_update)
            await journal.until_written(1)
            busy = await browser.post(url, data=answer)  # the update is being journaled
            assert busy.status_code == 409, busy.text
            journal.release()
        await alice.asking(task_id, {"note"})
        late = await browser.post(url, data=answer)
        assert late.status_code == 410, late.text
        await alice.update(task_id, {"note": {"action": "accept", "content": {"text": "ok"}}})
        ended = await alice.until(task_id, "completed")
        assert ended["result"]["content"][0]["text"] == "INV-7: approved by Eve; note: ok"
        assert [key for key, _ in await journal.journal(task_id)] == ["approval", "note"]
