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
import playwright.sync_api as playwright
import pytest
import trio

from erlmcp_py.core.i18n import Texts
from tests.components import require, require_axe_core
from tests.transports.test_page import (
    CONSENT,
    CSRF,
    StatelessPoster,
    asked,
    completion_notified,
    final_text,
    page_request,
    page_server,
    tool_text,
)
from tests.transports.test_task_links import clients, link_of, serving, started

R = TypeVar("R")
LOCALES = ["en-US", "pt-BR"]
WORDS = {
    "en-US": {
        "submit": "Submit",
        "reject": "Reject",
        "cancel": "Cancel",
        "required": "Required",
        "opening": "Opening external page",
        "asker": "Asked by Acme <Cloud>, for its tool Sign in.",
        "closing": "Closes in",
        "sent": "Your answer was sent",
        "closed": "expired or was already answered",
    },
    "pt-BR": {
        "submit": "Enviar",
        "reject": "Recusar",
        "cancel": "Cancelar",
        "required": "Obrigatório",
        "opening": "Abrindo página externa",
        "asker": "Pedido por Acme <Cloud>, para a ferramenta Sign in.",
        "closing": "Fecha em",
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
            "asker": page.locator("#asker").inner_text(),
            "opening": page.get_by_text(words["opening"]).count(),
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
    assert seen["asker"] == words["asker"]  # who asks, before the user types a secret
    assert seen["opening"] == 0  # the page is open: nothing says it is opening
    assert seen["focused"] == "user"  # focus starts on the first field
    assert seen["lang"] == locale


# -- validation before submit ---------------------------------------------------------------------


@pytest.mark.parametrize("locale", LOCALES)
async def test_a_required_field_emptied_is_marked_invalid_and_submit_stays_enabled(
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
        out["valid"] = key.get_attribute("aria-invalid")
        out["cleared"] = page.locator("#f-1-err").inner_text()
        page.get_by_role("button", name=words["reject"]).click()
        page.wait_for_selector("#notice")
        page.context.close()
        return out

    async with page_server() as listening, asked(listening) as (_c, events, url):
        seen = await chromium.run(check)
        assert tool_text(await events.rest()) == "decline"
    assert seen["start"] is False  # a disabled Submit would leave Enter without a word
    assert seen["disabled"] is False
    assert seen["invalid"] == "true"
    assert seen["error"] == words["required"]
    assert seen["valid"] is None
    assert seen["cleared"] == ""


@pytest.mark.parametrize("locale", LOCALES)
async def test_enter_on_an_incomplete_form_focuses_the_first_invalid_field_and_says_so(
    chromium: Chromium, locale: str
) -> None:
    words = WORDS[locale]
    fix = Texts(locale)("mcp.elicitation.page.fix_errors")

    def enter(browser: Any) -> dict[str, Any]:
        page = opened(browser, url, locale)
        page.get_by_label("User name").fill("ada")
        page.keyboard.press("Enter")  # in the user name field: the form's implicit submission
        page.wait_for_function("()=>document.getElementById('form-error').textContent.length>0")
        out = {
            "focused": page.evaluate("document.activeElement.id"),
            "invalid": page.locator("#f-1").get_attribute("aria-invalid"),
            "error": page.locator("#f-1-err").inner_text(),
            "alert": page.get_by_role("alert").inner_text(),
            "still_here": page.locator("#form").count(),
        }
        page.get_by_label("API key").fill("k-enter")
        page.keyboard.press("Enter")
        page.wait_for_selector("#notice")
        page.context.close()
        return out

    async with page_server() as listening, asked(listening) as (_c, events, url):
        seen = await chromium.run(enter)
        assert tool_text(await events.rest()) == "accept user=ada key=k-enter"
    assert seen["focused"] == "f-1"
    assert seen["invalid"] == "true"
    assert seen["error"] == words["required"]
    assert seen["alert"] == fix
    assert seen["still_here"] == 1  # nothing was sent


# -- what the server refused ----------------------------------------------------------------------


@pytest.mark.parametrize("locale", LOCALES)
async def test_after_a_server_refusal_the_field_shows_why_and_the_secret_says_type_it_again(
    chromium: Chromium, locale: str
) -> None:
    words = WORDS[locale]
    t = Texts(locale)

    def refused(browser: Any) -> dict[str, Any]:
        page = opened(browser, url, locale)
        page.locator("#f-0").fill("k-first")
        page.locator("#f-1").fill("2026-01-31")
        page.locator("#f-2").fill("tomorrow 9am")  # a date and time only the server checks
        page.get_by_role("button", name=words["submit"]).click()
        page.wait_for_selector("#f-0-retype")
        page.wait_for_timeout(300)  # the script has run: it must not clear the server's words
        when = page.locator("#f-2")
        out = {
            "error": page.locator("#f-2-err").inner_text(),
            "error_visible": page.locator("#f-2-err").is_visible(),
            "invalid": when.get_attribute("aria-invalid"),
            "border": when.evaluate("e=>getComputedStyle(e).borderTopColor"),
            "border_width": when.evaluate("e=>getComputedStyle(e).borderTopWidth"),
            "plain_border": page.locator("#f-0").evaluate("e=>getComputedStyle(e).borderTopColor"),
            "err_color": when.evaluate(
                "e=>getComputedStyle(document.getElementById('f-2-err')).color"
            ),
            "secret": page.locator("#f-0").input_value(),
            "retype": page.locator("#f-0-retype").inner_text(),
            "retype_visible": page.locator("#f-0-retype").is_visible(),
            "alert": page.get_by_role("alert").inner_text(),
            "focused": page.evaluate("document.activeElement.id"),
        }
        page.locator("#f-0").fill("k-again")
        when.fill("2026-01-31T09:00:00Z")
        out["fixed"] = when.get_attribute("aria-invalid")
        page.get_by_role("button", name=words["submit"]).click()
        out["notice"] = page.locator("#notice").inner_text()
        page.context.close()
        return out

    async with page_server() as listening, asked(listening, "expense") as (_c, events, url):
        seen = await chromium.run(refused)
        assert tool_text(await events.rest()) == (
            "accept key=k-again spent_on=2026-01-31 starts_at=2026-01-31T09:00:00+00:00"
        )
    says = t("mcp.answer.error.must_be", what=t("mcp.answer.word.date-time"))
    assert (seen["error"], seen["error_visible"], seen["invalid"]) == (says, True, "true")
    assert seen["border"] == seen["err_color"] != seen["plain_border"]  # the red border shows
    assert seen["border_width"] == "2px"
    assert seen["secret"] == ""  # never sent back ...
    assert seen["retype"] == t("mcp.elicitation.page.retype_secret")  # ... and the field says so
    assert seen["retype_visible"] is True
    assert seen["alert"] == t("mcp.elicitation.page.fix_errors")
    assert seen["focused"] == "f-2"  # the first field marked
    assert seen["fixed"] is None
    assert words["sent"] in seen["notice"]


# -- live regions ---------------------------------------------------------------------------------

#: The live regions of a page (explicit ``aria-live`` other than off, or a live role).
LIVE = "[aria-live]:not([aria-live=off]),[role=alert],[role=status],[role=log]"


async def test_live_regions_are_in_the_accessibility_tree_before_they_speak(
    chromium: Chromium,
) -> None:
    def look(browser: Any) -> list[dict[str, Any]]:
        page = opened(browser, url, "en-US")
        regions: list[dict[str, Any]] = page.eval_on_selector_all(
            LIVE,
            """els=>els.map(e=>({id:e.id,text:e.textContent,hidden:e.closest('[hidden]')!==null,
                display:getComputedStyle(e).display,visibility:getComputedStyle(e).visibility}))""",
        )
        page.keyboard.press("Escape")
        page.wait_for_selector("#notice")
        page.context.close()
        return regions

    async with page_server() as listening, asked(listening) as (_c, events, url):
        regions = await chromium.run(look)
        assert tool_text(await events.rest()) == "cancel by client"
    ids = {r["id"] for r in regions}
    assert {"form-error", "countdown-live", "f-0-err", "f-1-err"} <= ids
    for region in regions:
        assert region["text"] == "", region  # nothing said yet ...
        assert not region["hidden"], region  # ... and every region is there to say it
        assert region["display"] != "none", region
        assert region["visibility"] == "visible", region


async def test_the_countdown_is_said_aloud_at_thresholds_only(chromium: Chromium) -> None:
    def count_down(browser: Any) -> dict[str, Any]:
        context = browser.new_context(locale="en-US")
        page = context.new_page()
        page.set_default_timeout(10_000)
        page.clock.install()  # the page's clock: ten minutes pass in a moment
        page.goto(url)
        page.evaluate(
            """()=>{window.said=[];window.drawn=0;
            new MutationObserver(ms=>ms.forEach(m=>{
              const live=(m.target.nodeType===1?m.target:m.target.parentElement).closest(
                '[aria-live]:not([aria-live=off]),[role=alert],[role=status],[role=log]');
              if(live){said.push(live.textContent);}
            })).observe(document.body,{subtree:true,childList:true,characterData:true});
            new MutationObserver(()=>{drawn++;}).observe(document.getElementById('countdown'),
              {subtree:true,childList:true,characterData:true});}"""
        )
        start = page.locator("#countdown").inner_text()
        page.clock.run_for(10_000)
        out = {"start": start, "drawn_in_10s": page.evaluate("drawn")}
        page.clock.run_for(585_000)  # to about 5 s before the deadline
        out["said"] = page.evaluate("said")
        out["end"] = page.locator("#countdown").inner_text()
        out["urgent"] = page.locator("#countdown.urgent").count()
        context.close()
        return out

    server = page_server(url_deadline_s=600)
    async with server as listening, asked(listening) as (c, events, url):
        seen = await chromium.run(count_down)
        csrf = CSRF.findall((await c.http.get(url)).text)[0]
        await c.http.post(url, data={"_csrf": csrf, "_action": "cancel"})
        assert tool_text(await events.rest()) == "cancel by client"
    assert seen["start"] in ("Closes in 10:00", "Closes in 9:59")
    assert 9 <= seen["drawn_in_10s"] <= 11  # the visible text: once a second
    minutes = [f"This page closes in {n} minutes." for n in (5, 4, 3, 2)]
    assert seen["said"] == [
        *minutes,
        "This page closes in 1 minute.",
        "This page closes in 30 seconds.",
        "This page closes in 10 seconds.",
    ]
    assert seen["end"] in ("Closes in 0:05", "Closes in 0:04", "Closes in 0:06")
    assert seen["urgent"] == 1


# -- accessibility (axe-core) ---------------------------------------------------------------------

#: The WCAG 2.1 A and AA rules of axe-core.
WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]


@pytest.fixture(scope="module")
def axe_core() -> str:
    return Path(require_axe_core()).read_text(encoding="utf-8")


def violations(page: Any, axe: str) -> list[str]:
    """axe-core's WCAG 2.1 AA violations on ``page``, one line each (rule: element)."""
    page.add_script_tag(content=axe)
    found: list[dict[str, Any]] = page.evaluate(
        "tags=>axe.run(document,{runOnly:{type:'tag',values:tags}}).then(r=>r.violations)",
        WCAG_AA,
    )
    return [f"{v['id']}: {n['target']}" for v in found for n in v["nodes"]]


@pytest.mark.parametrize("locale", LOCALES)
async def test_the_form_and_a_refused_answer_have_no_wcag_aa_violation(
    chromium: Chromium, axe_core: str, locale: str
) -> None:
    words = WORDS[locale]

    def audit(browser: Any) -> dict[str, list[str]]:
        # bypass_csp: the page's CSP admits its own script only, not the injected axe-core
        context = browser.new_context(locale=locale, bypass_csp=True)
        page = context.new_page()
        page.set_default_timeout(10_000)
        page.goto(url)
        out = {"form": violations(page, axe_core)}
        page.locator("#f-0").fill("k-first")
        page.locator("#f-1").fill("2026-01-31")
        page.locator("#f-2").fill("tomorrow 9am")
        page.get_by_role("button", name=words["submit"]).click()
        page.wait_for_selector("#f-0-retype")
        page.get_by_role("button", name=words["submit"]).click()  # and the script's own alert
        page.wait_for_function("()=>document.getElementById('form-error').textContent.length>0")
        out["refused"] = violations(page, axe_core)
        page.get_by_role("button", name=words["cancel"]).click()
        page.wait_for_selector("#notice")
        out["notice"] = violations(page, axe_core)
        context.close()
        return out

    async with page_server() as listening, asked(listening, "expense") as (_c, events, url):
        found = await chromium.run(audit)
        assert tool_text(await events.rest()) == "cancel by client"
    assert found == {"form": [], "refused": [], "notice": []}


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
        client = StatelessPoster(http, listening.url)
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
    assert countdown in (f"{words['closing']} 0:02", f"{words['closing']} 0:03")
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


# -- a task's question, from its link ---------------------------------------------------------


async def test_a_tasks_question_is_answered_from_its_link_in_a_browser(chromium: Chromium) -> None:
    # The approver is not the MCP client: Chromium opens the link it was sent, the server
    # refuses a reserved name at its field, the corrected answer moves the task on, and the
    # link is dead afterwards.
    words = WORDS["en-US"]

    def approve(browser: Any) -> dict[str, Any]:
        page = opened(browser, url, "en-US")
        out: dict[str, Any] = {"question": page.locator("#message").inner_text()}
        page.locator("#f-0").check()  # Approved
        page.locator("#f-1").fill("admin")  # Approver: only the server's validator refuses it
        page.get_by_role("button", name=words["submit"]).click()
        page.wait_for_selector("[aria-invalid=true]")
        out["invalid"] = page.locator("[aria-invalid=true]").get_attribute("id")
        out["error"] = page.locator("#f-1-err").inner_text()
        out["kept"] = page.locator("#f-1").input_value()
        out["approved"] = page.locator("#f-0").is_checked()
        page.locator("#f-1").fill("Ada")
        page.get_by_role("button", name=words["submit"]).click()
        out["notice"] = page.locator("#notice").inner_text()
        again = opened(browser, url, "en-US")
        out["again"] = again.locator("body").inner_text()
        page.context.close()
        again.context.close()
        return out

    async with serving() as listening, clients(listening) as (alice, _browser):
        task_id = await started(alice, "approve", invoice="INV-42")
        url = link_of(await alice.asking(task_id, {"approval"}), "approval")
        seen = await chromium.run(approve)
        await alice.asking(task_id, {"note"})  # the task moved on to its next question
        await alice.update(task_id, {"note": {"action": "accept", "content": {"text": "ok"}}})
        ended = await alice.until(task_id, "completed")
    assert seen["question"] == "Approve invoice INV-42?"
    assert seen["invalid"] == "f-1"  # the approver field, alone
    assert seen["error"] == "The name admin is reserved."
    assert (seen["kept"], seen["approved"]) == ("admin", True)  # the form as it was sent
    assert words["sent"] in seen["notice"]
    assert words["closed"] in seen["again"]
    assert ended["result"]["content"][0]["text"] == "INV-42: approved by Ada; note: ok"
