"""The hosted elicitation page in a real headless Chromium, in en-US and pt-BR.

Each test serves the page-test server (tests/transports/test_page.py) on 127.0.0.1, consents
to its URL-mode elicitation with a hand-driven MCP client (a 2025-11-25 session, or a
2026-07-28 call whose retry gets the result), and opens the page's URL in
Chromium (the OS package, driven by playwright's sync API from a thread of its own). What the
tool received is read from the ``tools/call`` answer.

``make screenshots`` runs :func:`test_every_field_type_renders_without_csp_violations` with
``ERLMCP_SCREENSHOTS`` set to the folder the PNGs go to.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

import httpx2
import pytest
import trio

from tests.components import require
from tests.transports.test_page import (
    CONSENT,
    Modern,
    asked,
    completion_notified,
    final_text,
    page_request,
    page_server,
    tool_text,
)

playwright = pytest.importorskip("playwright.sync_api")

R = TypeVar("R")
LOCALES = ["en-US", "pt-BR"]
WORDS = {
    "en-US": {
        "submit": "Submit",
        "reject": "Reject",
        "cancel": "Cancel",
        "required": "Required",
        "opening": "Opening external page",
        "closing": "Closing in",
        "sent": "Your answer was sent",
        "closed": "expired or was already answered",
    },
    "pt-BR": {
        "submit": "Enviar",
        "reject": "Recusar",
        "cancel": "Cancelar",
        "required": "Obrigatório",
        "opening": "Abrindo página externa",
        "closing": "Fechando em",
        "sent": "Sua resposta foi enviada",
        "closed": "expirou ou já foi respondido",
    },
}
ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


class Chromium:
    """One headless Chromium for the module, driven from a thread of its own (playwright's
    sync objects belong to the thread that started them); jobs run there one at a time."""

    def __init__(self, executable: str) -> None:
        self._jobs: queue.Queue[tuple[Callable[[Any], Any], Future[Any]] | None] = queue.Queue()
        ready: Future[None] = Future()
        self._thread = threading.Thread(target=self._serve, args=(executable, ready), daemon=True)
        self._thread.start()
        ready.result(timeout=60)

    def _serve(self, executable: str, ready: Future[None]) -> None:
        try:
            with playwright.sync_playwright() as p:
                browser = p.chromium.launch(executable_path=executable, args=ARGS)
                ready.set_result(None)
                while (job := self._jobs.get()) is not None:
                    fn, done = job
                    try:
                        done.set_result(fn(browser))
                    except BaseException as exc:  # handed to the test that asked
                        done.set_exception(exc)
                browser.close()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)

    async def run(self, fn: Callable[[Any], R]) -> R:
        """Run ``fn(browser)`` on the browser's thread; the trio loop serves meanwhile."""
        done: Future[R] = Future()
        self._jobs.put((fn, done))
        return await trio.to_thread.run_sync(done.result)

    def close(self) -> None:
        self._jobs.put(None)
        self._thread.join(timeout=30)


@pytest.fixture(scope="module")
def chromium() -> Iterator[Chromium]:
    browser = Chromium(require("chromium"))
    try:
        yield browser
    finally:
        browser.close()


def opened(browser: Any, url: str, locale: str) -> Any:
    """A fresh page of a fresh context in ``locale`` (its ``Accept-Language``) at ``url``."""
    context = browser.new_context(locale=locale)
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.goto(url)
    return page


# -- the form mounts ------------------------------------------------------------------------------


@pytest.mark.parametrize("locale", LOCALES)
async def test_form_mounts_with_its_fields_labels_and_words(
    chromium: Chromium, locale: str
) -> None:
    words = WORDS[locale]

    def look(browser: Any) -> dict[str, Any]:
        page = opened(browser, url, locale)
        dialog = page.get_by_role("dialog")
        out = {
            "modal": dialog.get_attribute("aria-modal"),
            "inputs": page.locator("form input:not([type=hidden])").count(),
            "user": page.get_by_label("User name").get_attribute("name"),
            "key_type": page.get_by_label("API key").get_attribute("type"),
            "required": page.get_by_label("API key").get_attribute("aria-required"),
            "buttons": [b.inner_text() for b in page.locator("form button").all()],
            "marks": page.locator(".req").all_inner_texts(),
            "status": page.get_by_role("status").inner_text(),
            "focused": page.evaluate("document.activeElement.name"),
            "lang": page.evaluate("document.documentElement.lang"),
        }
        page.get_by_role("button", name=words["cancel"]).click()
        page.wait_for_selector("#notice")
        page.context.close()
        return out

    async with page_server() as listening, asked(listening) as (_c, events, url):
        seen = await chromium.run(look)
        assert tool_text(await events.rest()) == "cancel by client"
    assert seen["modal"] == "true"
    assert seen["inputs"] == 2
    assert seen["user"] == "user"
    assert seen["key_type"] == "password"
    assert seen["required"] == "true"
    assert seen["buttons"] == [words["submit"], words["reject"], words["cancel"]]
    assert seen["marks"] == [words["required"], words["required"]]
    assert seen["status"] == words["opening"]
    assert seen["focused"] == "user"  # focus starts on the first field
    assert seen["lang"] == locale


# -- validation before submit ---------------------------------------------------------------------


@pytest.mark.parametrize("locale", LOCALES)
async def test_missing_required_field_disables_submit_and_marks_it_invalid(
    chromium: Chromium, locale: str
) -> None:
    words = WORDS[locale]

    def check(browser: Any) -> dict[str, Any]:
        page = opened(browser, url, locale)
        submit = page.get_by_role("button", name=words["submit"])
        key = page.get_by_label("API key")
        out: dict[str, Any] = {"start": submit.is_disabled()}
        page.get_by_label("User name").fill("ada")
        key.fill("x")
        key.fill("")
        out["disabled"] = submit.is_disabled()
        out["invalid"] = key.get_attribute("aria-invalid")
        out["error"] = page.locator("#f-1-err").inner_text()
        key.fill("k-123")
        out["fixed"] = submit.is_disabled()
        out["valid"] = key.get_attribute("aria-invalid")
        page.get_by_role("button", name=words["reject"]).click()
        page.wait_for_selector("#notice")
        page.context.close()
        return out

    async with page_server() as listening, asked(listening) as (_c, events, url):
        seen = await chromium.run(check)
        assert tool_text(await events.rest()) == "decline"
    assert seen["start"] is True
    assert seen["disabled"] is True
    assert seen["invalid"] == "true"
    assert seen["error"] == words["required"]
    assert seen["fixed"] is False
    assert seen["valid"] is None


# -- accept; URL mode completes -------------------------------------------------------------------


@pytest.mark.parametrize("locale", LOCALES)
async def test_accept_gives_the_tool_the_values_and_the_client_the_completion(
    chromium: Chromium, locale: str
) -> None:
    words = WORDS[locale]

    def answer(browser: Any) -> str:
        page = opened(browser, url, locale)
        page.get_by_label("User name").fill("ada")
        page.get_by_label("API key").fill("k-123")
        page.get_by_role("button", name=words["submit"]).click()
        notice: str = page.locator("#notice").inner_text()
        page.reload()
        closed: str = page.locator("#notice").inner_text()
        page.context.close()
        return f"{notice}|{closed}"

    async with page_server() as listening, asked(listening) as (c, events, url):
        notice, closed = (await chromium.run(answer)).split("|")
        messages = await events.rest()
        assert tool_text(messages) == "accept user=ada key=k-123"
        ticket = await listening.transport.runtime.pages.get(url.rsplit("/", 1)[1])
        assert ticket is not None
        assert await completion_notified(c, messages) == ticket.elicitation_id
    assert words["sent"] in notice
    assert words["closed"] in closed  # single use


@pytest.mark.parametrize("locale", LOCALES)
async def test_a_2026_call_gets_what_the_page_submitted_on_its_retry(
    chromium: Chromium, locale: str
) -> None:
    words = WORDS[locale]

    def answer(browser: Any) -> str:
        page = opened(browser, url, locale)
        page.get_by_label("User name").fill("ada")
        page.get_by_label("API key").fill("k-2026")
        page.get_by_role("button", name=words["submit"]).click()
        notice: str = page.locator("#notice").inner_text()
        page.context.close()
        return notice

    async with page_server() as listening, httpx2.AsyncClient(timeout=10) as http:
        client = Modern(http, listening.url)
        first = await client.call("login")
        key, url = page_request(first)
        notice = await chromium.run(answer)
        final = await client.call("login", first["requestState"], {key: CONSENT})
    assert words["sent"] in notice
    assert final_text(final) == "accept user=ada key=k-2026"


# -- reject, and Esc ------------------------------------------------------------------------------


@pytest.mark.parametrize("locale", LOCALES)
async def test_reject_button_declines(chromium: Chromium, locale: str) -> None:
    def reject(browser: Any) -> None:
        page = opened(browser, url, locale)
        page.get_by_role("button", name=WORDS[locale]["reject"]).click()
        page.wait_for_selector("#notice")
        page.context.close()

    async with page_server() as listening, asked(listening) as (_c, events, url):
        await chromium.run(reject)
        assert tool_text(await events.rest()) == "decline"


@pytest.mark.parametrize("locale", LOCALES)
async def test_escape_cancels(chromium: Chromium, locale: str) -> None:
    def escape(browser: Any) -> None:
        page = opened(browser, url, locale)
        page.get_by_label("User name").fill("half-typed")
        page.keyboard.press("Escape")
        page.wait_for_selector("#notice")
        page.context.close()

    async with page_server() as listening, asked(listening) as (_c, events, url):
        await chromium.run(escape)
        assert tool_text(await events.rest()) == "cancel by client"


# -- the deadline ---------------------------------------------------------------------------------


@pytest.mark.parametrize("locale", LOCALES)
async def test_deadline_counts_down_and_the_page_shows_it_closed(
    chromium: Chromium, locale: str
) -> None:
    words = WORDS[locale]

    def wait_out(browser: Any) -> tuple[str, str]:
        page = opened(browser, url, locale)
        countdown: str = page.locator("#countdown").inner_text()
        page.wait_for_selector("#notice", timeout=15_000)  # the page reloads at the deadline
        closed: str = page.locator("#notice").inner_text()
        page.context.close()
        return countdown, closed

    server = page_server(url_deadline_s=2.5, warn_before_s=0)
    async with server as listening, asked(listening) as (_c, events, url):
        countdown, closed = await chromium.run(wait_out)
        assert tool_text(await events.rest()) == "timed out"
    assert countdown.startswith(words["closing"])
    assert countdown.endswith("s")
    assert words["closed"] in closed


# -- every field type, and the screenshots --------------------------------------------------------


@pytest.mark.parametrize("locale", LOCALES)
async def test_every_field_type_renders_without_csp_violations(
    chromium: Chromium, locale: str, tmp_path: Path
) -> None:
    folder = Path(os.environ.get("ERLMCP_SCREENSHOTS") or tmp_path)
    shot = folder / f"elicitation-page-{locale}.png"

    def render(browser: Any) -> tuple[list[str], int]:
        context = browser.new_context(locale=locale, viewport={"width": 720, "height": 1400})
        page = context.new_page()
        page.set_default_timeout(10_000)
        problems: list[str] = []
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.goto(url)
        page.locator("#f-0").fill("Ada Lovelace")
        page.locator("#f-3").fill("12")  # below the minimum of 18
        page.locator("#f-3").blur()
        folder.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shot), full_page=True)
        widgets = page.locator("form input, form select, form textarea").count()
        page.get_by_role("button", name=WORDS[locale]["cancel"]).click()
        page.wait_for_selector("#notice")
        context.close()
        return problems, widgets

    async with page_server() as listening, asked(listening, "everything") as (_c, events, url):
        problems, widgets = await chromium.run(render)
        assert tool_text(await events.rest()) == "cancel by client"
    assert problems == []  # no CSP violation, no script error
    assert widgets >= 11
    assert shot.stat().st_size > 10_000
