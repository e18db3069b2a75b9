"""The hosted elicitation page over real HTTP: routing, rendering, CSRF, token binding.

A small server on 127.0.0.1 (in-process, trio) asks sensitive questions; a hand-driven
Streamable HTTP client consents to the URL-mode elicitation, and httpx2 plays the browser.
The browser tests (tests/transports/test_page_browser.py) reuse :func:`page_server` and
:class:`Client`.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from functools import partial
from typing import Any
from urllib.parse import urlsplit

import httpx2
import pytest
import trio
import trio.testing
from pydantic import BaseModel, Field, SecretStr, field_validator

from erlmcp_py.actors.api import RuntimeConfig
from erlmcp_py.actors.pages import PageQuestion, PageRegistry
from erlmcp_py.core.errors import SchemaNotAllowed
from erlmcp_py.core.i18n import CATALOG, Texts, negotiate
from erlmcp_py.core.outcomes import Accepted, Cancelled, Declined, Tenant, TimedOut
from erlmcp_py.core.policy import RatePolicy
from erlmcp_py.core.state_token import KeyRing
from erlmcp_py.core.validation import AnswerError
from erlmcp_py.core.versions import V_2026_07_28
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.server import Server
from erlmcp_py.store import MemoryStore
from erlmcp_py.testing import open_memory_client
from erlmcp_py.transports._page_fields import content_from_form, page_errors, page_fields
from erlmcp_py.transports._page_html import _SCRIPT, _SCRIPT_TEXTS, render_form
from erlmcp_py.transports.http import HttpConfig, Listening, serve_http
from tests.transports.test_http import SseReader

TIMEOUT = 10
ACCEPT_BOTH = "application/json, text/event-stream"
INIT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"elicitation": {"form": {}, "url": {}}},
    "clientInfo": {"name": "test-page", "version": "1"},
}


class Login(BaseModel):
    """Two fields, one of them a secret: asked on the hosted page."""

    user: str = Field(title="User name", description="The account to sign in to")
    api_key: SecretStr = Field(title="API key")


class Expense(BaseModel):
    """A secret, and a field whose form only the server checks (a date and time); no titles:
    the page labels them from their names."""

    api_key: SecretStr
    spent_on: dt.date
    starts_at: dt.datetime


#: A secret and two dates under a rule of the form's own, worded by the application.
PERIOD = {
    "id": "period",
    "title": "Access period",
    "fields": [
        {"id": "token", "type": "text", "label": "Access token", "required": True},
        {"id": "start", "type": "date", "label": "Start"},
        {"id": "end", "type": "date", "label": "End"},
    ],
    "validation": {
        "rules": [{"left": "end", "operator": "ge", "right": "start",
                   "message": "The period cannot end before it starts"}]
    },
}  # fmt: skip

#: The test server's name as its clients see it (markup in it: the page escapes it).
SERVER_TITLE = "Acme <Cloud>"


class Vault(BaseModel):
    """A secret and a rule of the model's own: one name is reserved."""

    owner: str = Field(title="Owner")
    pin: SecretStr = Field(title="PIN")

    @field_validator("owner")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        if value == "admin":
            raise ValueError("the name admin is reserved")
        return value


class BrokenVault(BaseModel):
    """A secret, and a validator with a bug."""

    owner: str
    pin: SecretStr

    @field_validator("owner")
    @classmethod
    def _broken(cls, value: str) -> str:
        raise LookupError(value)


#: A form definition with every field type the page renders, and a password.
EVERYTHING = {
    "id": "everything",
    "title": "Every field",
    "fields": [
        {"id": "name", "type": "text", "label": "Name", "required": True,
         "rendering": {"helpText": "As on your card", "placeholder": "Ada Lovelace"}},
        {"id": "bio", "type": "text", "label": "About you", "rendering": {"rows": 3}},
        {"id": "password", "type": "text", "label": "Password", "required": True},
        {"id": "age", "type": "number", "label": "Age",
         "validation": {"integer": True, "minimum": 18, "maximum": 120}},
        {"id": "ratio", "type": "number", "label": "Ratio", "default": 0.5},
        {"id": "news", "type": "boolean", "label": "Send me news", "default": True},
        {"id": "plan", "type": "select", "label": "Plan",
         "options": [{"value": "free", "title": "Free"}, {"value": "pro", "title": "Pro"}]},
        {"id": "topics", "type": "multi_select", "label": "Topics",
         "options": ["ai", "web", "ops"]},
        {"id": "start", "type": "date", "label": "Start date"},
        {"id": "site", "type": "url", "label": "Web site"},
        {"id": "cv", "type": "file", "label": "CV",
         "validation": {"maxSize": 1000000, "allowedExtensions": ["pdf"]}},
    ],
}  # fmt: skip


def describe(outcome: Any) -> str:
    if isinstance(outcome, Accepted):
        content = outcome.content
        if isinstance(content, Login):
            return f"accept user={content.user} key={content.api_key.get_secret_value()}"
        if isinstance(content, Expense):
            return (
                f"accept key={content.api_key.get_secret_value()} spent_on={content.spent_on} "
                f"starts_at={content.starts_at.isoformat()}"
            )
        if isinstance(content, Vault):
            return f"accept Vault owner={content.owner} pin={content.pin.get_secret_value()}"
        return "accept " + json.dumps(content, sort_keys=True)
    if isinstance(outcome, Declined):
        return "decline"
    if isinstance(outcome, Cancelled):
        return f"cancel by {outcome.by}"
    if isinstance(outcome, TimedOut):
        return "timed out"
    return repr(outcome)


def build_server(**config: Any) -> Server:
    server = Server(
        "page-test",
        "1.0",
        title=SERVER_TITLE,
        runtime_config=RuntimeConfig.model_validate(config),
    )

    @server.tool(title="Sign in")
    async def login(ctx: Context) -> str:
        """Ask for a user name and an API key."""
        return describe(await ctx.elicit("Sign in to Acme", Login))

    @server.tool()
    async def expense(ctx: Context) -> str:
        """Ask for an API key, a date and a date and time."""
        return describe(await ctx.elicit("Record an expense", Expense))

    @server.tool()
    async def period(ctx: Context) -> str:
        """Ask for a token and a period under a rule of the form's own."""
        return describe(await ctx.elicit("Grant access", PERIOD))

    @server.tool()
    async def vault(ctx: Context) -> str:
        """Ask for an owner (the model refuses one name) and a PIN."""
        return describe(await ctx.elicit("Open the vault", Vault))

    @server.tool()
    async def broken_vault(ctx: Context) -> str:
        """Ask with a model whose validator has a bug."""
        return describe(await ctx.elicit("Open the vault", BrokenVault))

    @server.tool()
    async def everything(ctx: Context) -> str:
        """Ask every field type."""
        return describe(await ctx.elicit("Tell us about you", EVERYTHING))

    return server


@asynccontextmanager
async def page_server(http: HttpConfig | None = None, **config: Any) -> AsyncIterator[Listening]:
    """A page-test server on a free port of 127.0.0.1 (``http``: its transport's options;
    ``config``: its runtime's)."""
    server = build_server(**config)
    async with server.running(), trio.open_nursery() as nursery:
        listening: Listening = await nursery.start(
            partial(serve_http, server, host="127.0.0.1", port=0, config=http)
        )
        try:
            yield listening
        finally:
            nursery.cancel_scope.cancel()


class Client:
    """A hand-driven Streamable HTTP MCP client that declares form and URL elicitation."""

    def __init__(self, http: httpx2.AsyncClient, url: str) -> None:
        self.http = http
        self.url = url
        self.session_id = ""

    def headers(self) -> dict[str, str]:
        out = {"accept": ACCEPT_BOTH, "content-type": "application/json"}
        if self.session_id:
            out.update({"mcp-session-id": self.session_id, "mcp-protocol-version": "2025-11-25"})
        return out

    async def post(self, message: Mapping[str, Any]) -> httpx2.Response:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        return await self.http.post(self.url, content=body, headers=self.headers())

    async def initialize(self) -> None:
        response = await self.post({"id": 0, "method": "initialize", "params": INIT})
        assert response.status_code == 200, response.text
        self.session_id = response.headers["mcp-session-id"]
        assert (await self.post({"method": "notifications/initialized"})).status_code == 202

    async def answer(self, request: Mapping[str, Any], result: Mapping[str, Any]) -> None:
        response = await self.post({"id": request["id"], "result": dict(result)})
        assert response.status_code == 202, response.text

    @asynccontextmanager
    async def call(self, tool: str) -> AsyncIterator[SseReader]:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool}}
        async with self.http.stream(
            "POST", self.url, content=json.dumps(body).encode(), headers=self.headers()
        ) as response:
            assert response.status_code == 200
            yield SseReader(response)


@asynccontextmanager
async def asked(
    listening: Listening, tool: str = "login"
) -> AsyncIterator[tuple[Client, SseReader, str]]:
    """Call ``tool``, consent to its URL-mode elicitation; yield the page's URL."""
    async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
        c = Client(http, listening.url)
        await c.initialize()
        async with c.call(tool) as events:
            request = await events.next()
            assert request is not None
            assert request["method"] == "elicitation/create"
            params = request["params"]
            assert params["mode"] == "url"
            assert "requestedSchema" not in params
            await c.answer(request, {"action": "accept"})  # the user agreed to open the page
            yield c, events, params["url"]


class StatelessPoster:
    """A hand-driven 2026-07-28 client (stateless: one POST per request, no session) that
    declares form and URL elicitation; it calls tools with no arguments."""

    def __init__(self, http: httpx2.AsyncClient, url: str) -> None:
        self.http = http
        self.url = url
        self.ids = 0

    async def call(
        self, tool: str, state: str | None = None, responses: Any = None
    ) -> dict[str, Any]:
        """The result of one ``tools/call`` (a retry with ``state`` and ``responses``)."""
        params: dict[str, Any] = {"name": tool, "arguments": {}, "_meta": STATELESS_META}
        if state is not None:
            params.update(requestState=state, inputResponses=responses or {})
        self.ids += 1
        body = {"jsonrpc": "2.0", "id": self.ids, "method": "tools/call", "params": params}
        headers = {
            "accept": ACCEPT_BOTH,
            "content-type": "application/json",
            "mcp-protocol-version": V_2026_07_28,
            "mcp-method": "tools/call",
            "mcp-name": tool,
        }
        response = await self.http.post(
            self.url, content=json.dumps(body).encode(), headers=headers
        )
        assert response.status_code == 200, response.text
        result: dict[str, Any] = response.json()["result"]
        return result


STATELESS_META = {
    "io.modelcontextprotocol/protocolVersion": V_2026_07_28,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}, "url": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "test-page-2026", "version": "1"},
}


def page_request(result: Mapping[str, Any]) -> tuple[str, str]:
    """The one input request of an ``InputRequiredResult``: its key and the page's URL (a
    URL-mode ``elicitation/create`` with no schema: the secret never goes through the
    client)."""
    assert result["resultType"] == "input_required", result
    ((key, request),) = result["inputRequests"].items()
    assert request["method"] == "elicitation/create"
    params = request["params"]
    assert params["mode"] == "url"
    assert "requestedSchema" not in params
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/elicit/[A-Za-z0-9_-]{43}", params["url"])
    return key, str(params["url"])


def final_text(result: Mapping[str, Any]) -> str:
    assert result["resultType"] == "complete", result
    text: str = result["content"][0]["text"]
    return text


def tool_text(messages: list[dict[str, Any]]) -> str:
    (response,) = [m for m in messages if "id" in m and "result" in m]
    text: str = response["result"]["content"][0]["text"]
    return text


async def completion_notified(c: Client, messages: list[dict[str, Any]]) -> str:
    """The ``elicitationId`` of the ``notifications/elicitation/complete`` the client got: on
    the call's stream, or (sent after the call's answer ended it) on the GET stream."""
    found = [m for m in messages if m.get("method") == "notifications/elicitation/complete"]
    if not found:
        headers = {**c.headers(), "accept": "text/event-stream"}
        with trio.fail_after(TIMEOUT):
            async with c.http.stream("GET", c.url, headers=headers) as response:
                message = await SseReader(response).next()
        assert message is not None
        found = [message]
    assert found[0]["method"] == "notifications/elicitation/complete"
    elicitation_id: str = found[0]["params"]["elicitationId"]
    return elicitation_id


CSRF = re.compile(r'name="_csrf" value="([^"]+)"')


async def form_post(
    http: httpx2.AsyncClient, url: str, data: Mapping[str, Any], **headers: str
) -> httpx2.Response:
    return await http.post(url, data=dict(data), headers=headers)


# -- rendering ------------------------------------------------------------------------------------


async def test_sensitive_question_goes_to_the_page_with_its_fields_and_security_headers() -> None:
    async with page_server() as listening, asked(listening) as (c, events, url):
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/elicit/[A-Za-z0-9_-]{43}", url)
        page = await c.http.get(url)
        assert page.status_code == 200
        html = page.text
        assert 'role="dialog" aria-modal="true"' in html
        assert '<label for="f-0">User name <span class="req">Required</span></label>' in html
        assert 'type="password"' in html
        assert 'name="api_key"' in html
        assert 'aria-describedby="f-0-help f-0-err"' in html
        assert "The account to sign in to" in html
        headers = page.headers
        csp = headers["content-security-policy"]
        nonce = re.search(r"'nonce-([^']+)'", csp)
        assert nonce is not None
        assert f'<script nonce="{nonce.group(1)}">' in html
        assert csp.startswith("default-src 'none';")
        assert "form-action 'self'" in csp
        assert "frame-ancestors 'none'" in csp
        assert "unsafe-inline" not in csp
        assert "http" not in csp
        assert headers["cache-control"].startswith("no-store")
        assert headers["referrer-policy"] == "same-origin"
        assert headers["content-language"] == "en-US"
        assert re.search(r'(src|href)="(?!data:)', html) is None  # no external asset
        # a second GET gets a fresh nonce
        again = await c.http.get(url)
        assert again.headers["content-security-policy"] != csp
        await c.http.post(url, data={"_csrf": CSRF.findall(html)[0], "_action": "cancel"})
        assert tool_text(await events.rest()) == "cancel by client"


async def test_every_field_type_renders() -> None:
    async with page_server() as listening, asked(listening, "everything") as (c, events, url):
        html = (await c.http.get(url, headers={"accept-language": "pt-BR,pt;q=0.9"})).text
        assert '<html lang="pt-BR">' in html
        for needle in (
            '<input type="text" id="f-0"',  # text
            'placeholder="Ada Lovelace"',
            "As on your card",  # help text
            '<textarea id="f-1"',  # textarea
            '<input type="password" id="f-2"',  # the sensitive field
            'type="number" id="f-3"',
            'step="1" min="18" max="120"',  # integer with bounds
            'step="any" value="0.5"',  # number with its default
            'role="switch" value="true" id="f-5"',  # boolean switch, default on
            '<select id="f-6"',  # single choice
            '<option value="pro">Pro</option>',
            '<fieldset class="field"><legend>Topics</legend>',  # multi choice
            'type="checkbox" id="f-7-2" name="topics" value="ops"',
            '<input type="date" id="f-8"',
            '<input type="url" id="f-9"',
            '<input type="file" id="f-10"',
            'accept=".pdf"',
            "Obrigatório",
            "Enviar",
            "Recusar",
            "Cancelar",
        ):
            assert needle in html, needle
        await c.http.post(url, data={"_csrf": CSRF.findall(html)[0], "_action": "decline"})
        assert tool_text(await events.rest()) == "decline"


# -- answers --------------------------------------------------------------------------------------


async def test_accept_completes_the_elicitation_and_notifies_the_client() -> None:
    async with page_server() as listening, asked(listening) as (c, events, url):
        csrf = CSRF.findall((await c.http.get(url)).text)[0]
        done = await c.http.post(
            url, data={"_csrf": csrf, "_action": "accept", "user": "ada", "api_key": "k-123"}
        )
        assert done.status_code == 200
        assert "Your answer was sent" in done.text
        messages = await events.rest()
        assert tool_text(messages) == "accept user=ada key=k-123"
        await completion_notified(c, messages)
        # used: the token only says so, and never answers again
        used = await c.http.get(url)
        assert used.status_code == 410
        assert "expired or was already answered" in used.text
        again = await c.http.post(url, data={"_csrf": csrf, "_action": "accept", "user": "x"})
        assert again.status_code == 410


async def test_invalid_answer_is_shown_per_field_and_the_token_stays_usable() -> None:
    async with page_server() as listening, asked(listening, "everything") as (c, events, url):
        csrf = CSRF.findall((await c.http.get(url)).text)[0]
        bad = await c.http.post(
            url,
            data={"_csrf": csrf, "_action": "accept", "name": "Ada", "password": "s3cret!",
                  "age": "12"},
        )  # fmt: skip
        assert bad.status_code == 422
        assert 'id="f-3" aria-invalid="true"' in bad.text
        assert "s3cret!" not in bad.text  # a secret is never written back
        assert 'value="Ada"' in bad.text
        meta = json.dumps({"filename": "cv.pdf", "content_type": "application/pdf", "size": 10})
        good = await c.http.post(
            url,
            data={"_csrf": csrf, "_action": "accept", "name": "Ada", "password": "pw",
                  "age": "30", "news": "true", "topics": ["ai", "ops"], "plan": "pro",
                  "start": "2026-01-31", "site": "https://example.com/", "cv": meta},
        )  # fmt: skip
        assert good.status_code == 200, good.text
        content = json.loads(tool_text(await events.rest()).removeprefix("accept "))
        assert content["age"] == 30
        assert content["news"] is True
        assert content["topics"] == ["ai", "ops"]
        assert content["password"] == "pw"
        assert content["cv"] == {
            "filename": "cv.pdf",
            "content_type": "application/pdf",
            "size": 10,
        }


# -- a refused answer -----------------------------------------------------------------------------

FIELD_ERROR = re.compile(r'<p class="error" aria-live="polite" id="(f-\d+)-err">([^<]*)</p>')
ALERT = re.compile(r'<p class="alert" role="alert" id="form-error">([^<]*)</p>')


def field_errors(html: str) -> dict[str, str]:
    """The messages under the fields of a rendered form, by field id."""
    return {field: text for field, text in FIELD_ERROR.findall(html) if text}


@pytest.mark.parametrize(
    ("language", "says"),
    [
        ("en-US", "Must be a date and time like 2025-01-31T09:30:00Z."),
        ("pt-BR", "Deve ser uma data e hora como 2025-01-31T09:30:00Z."),
    ],
)
async def test_a_refused_answer_says_why_on_the_field_in_the_page_language(
    language: str, says: str
) -> None:
    t = Texts(language)
    headers = {"accept-language": language}
    async with page_server() as listening, asked(listening, "expense") as (c, events, url):
        csrf = CSRF.findall((await c.http.get(url, headers=headers)).text)[0]
        answer = {
            "_csrf": csrf,
            "_action": "accept",
            "api_key": "k-first",
            "spent_on": "2026-01-31",
        }
        bad = await c.http.post(url, headers=headers, data={**answer, "starts_at": "tomorrow 9am"})
        assert bad.status_code == 422
        html = bad.text
        assert field_errors(html) == {"f-2": says}  # the server's check, which the script lacks
        assert 'id="f-2" aria-invalid="true"' in html
        assert ALERT.findall(html) == [t("mcp.elicitation.page.fix_errors")]
        if language == "pt-BR":
            assert "must be" not in html.lower()
        # the secret is never sent back, and its field says it must be typed again
        assert "k-first" not in html
        note = t("mcp.elicitation.page.retype_secret")
        assert f'<p class="retype" id="f-0-retype">{note}</p>' in html
        assert 'aria-describedby="f-0-err f-0-retype"' in html
        assert html.count('class="retype"') == 1  # only the secret's field
        assert 'value="2026-01-31"' in html
        good = await c.http.post(
            url, data={**answer, "api_key": "k-again", "starts_at": "2026-01-31T09:00:00Z"}
        )
        assert good.status_code == 200, good.text
        assert tool_text(await events.rest()) == (
            "accept key=k-again spent_on=2026-01-31 starts_at=2026-01-31T09:00:00+00:00"
        )


async def test_a_rule_of_the_forms_own_refuses_on_its_field_in_its_own_words() -> None:
    async with page_server() as listening, asked(listening, "period") as (c, events, url):
        csrf = CSRF.findall((await c.http.get(url)).text)[0]
        bad = await c.http.post(
            url,
            data={"_csrf": csrf, "_action": "accept", "token": "t-1", "start": "2026-02-01",
                  "end": "2026-01-01"},
        )  # fmt: skip
        assert bad.status_code == 422  # never "your answer was sent"
        assert "Your answer was sent" not in bad.text
        assert field_errors(bad.text) == {"f-2": "The period cannot end before it starts."}
        await c.http.post(url, data={"_csrf": csrf, "_action": "cancel"})
        assert tool_text(await events.rest()) == "cancel by client"


def test_any_refusal_shows_on_its_field_or_above_the_form() -> None:
    question = PageQuestion(
        "q",
        {
            "type": "object",
            "properties": {"n": {"type": "integer", "title": "Number"}, "s": {"type": "string"}},
        },
        {},
    )
    fields = page_fields(question)
    errors = (
        AnswerError("n", "model", "value_error", "/n", "n: Value error, must be even."),
        AnswerError("n", "minimum", 3, "/n", "n: must be at least 3."),
        AnswerError("n", "minimum", 3, "/n", "n: must be at least 3."),  # said once
        AnswerError("s", "aNewCheck", True, "/s", "s: is not what the tool wants."),
        AnswerError(None, "additionalProperties", ("n", "s"), "", "The answer has 1 field ..."),
        AnswerError("gone", "required", True, "/gone", "gone: is required."),
        AnswerError(None, "model", "value_error", "", "The answer: n and s disagree."),
        ValueError("refused"),
    )
    per_field, general = page_errors(fields, errors, "pt-BR")
    assert per_field == {
        "n": "Value error, must be even. Deve ser no mínimo 3.",  # a validator's own words
        "s": "Is not what the tool wants.",
    }
    assert general == (
        "A resposta tem campos que o formulário não tem.",
        "gone: is required.",  # a field the page has not: its message names it
        "The answer: n and s disagree.",
        "refused",
    )
    html = render_form(
        locale="pt-BR",
        nonce="N",
        action="/elicit/t",
        csrf="c",
        question=question,
        fields=fields,
        remaining_s=60,
        values={},
        form_errors=general[2:],
    )
    assert ALERT.findall(html) == ["The answer: n and s disagree. refused"]
    assert field_errors(html) == {}
    # refused with no reason given: refused all the same
    assert page_errors(fields, (), "en-US") == ({}, ("The server did not accept this answer.",))


# -- who asks, and how fields are labelled ---------------------------------------------------------


async def test_the_form_names_the_server_and_the_tool_that_ask() -> None:
    async with page_server() as listening, asked(listening) as (c, events, url):
        en = (await c.http.get(url)).text
        pt = (await c.http.get(url, headers={"accept-language": "pt-BR"})).text
        ticket = await listening.transport.runtime.pages.get(url.rsplit("/", 1)[1])
        await c.http.post(url, data={"_csrf": CSRF.findall(en)[0], "_action": "cancel"})
        assert tool_text(await events.rest()) == "cancel by client"
    server = "<strong>Acme &lt;Cloud&gt;</strong>"
    assert (
        f'<p class="asker" id="asker">Asked by {server}, for its tool <strong>Sign in</strong>.</p>'
        in en
    )
    assert f"Pedido por {server}, para a ferramenta <strong>Sign in</strong>." in pt
    assert "<title>Information requested · Acme &lt;Cloud&gt;</title>" in en
    assert 'aria-describedby="asker message"' in en
    assert ticket is not None
    assert (ticket.question.server, ticket.question.tool) == (SERVER_TITLE, "Sign in")


async def test_the_form_says_nothing_of_opening_a_page() -> None:
    async with page_server() as listening, asked(listening) as (c, events, url):
        en = (await c.http.get(url)).text
        pt = (await c.http.get(url, headers={"accept-language": "pt-BR"})).text
        await c.http.post(url, data={"_csrf": CSRF.findall(en)[0], "_action": "cancel"})
        assert tool_text(await events.rest()) == "cancel by client"
    assert Texts("en-US")("mcp.elicitation.url_mode.opening") not in en
    assert Texts("pt-BR")("mcp.elicitation.url_mode.opening") not in pt


async def test_fields_without_a_title_are_labelled_from_their_names() -> None:
    async with page_server() as listening, asked(listening, "expense") as (c, events, url):
        html = (await c.http.get(url, headers={"accept-language": "pt-BR"})).text
        await c.http.post(url, data={"_csrf": CSRF.findall(html)[0], "_action": "cancel"})
        assert tool_text(await events.rest()) == "cancel by client"
    labels = re.findall(r'<label for="f-\d">([^<]*) <span class="req">', html)
    assert labels == ["API key", "Spent on", "Starts at"]
    assert "para a ferramenta <strong>expense</strong>" in html  # a tool without a title


async def test_a_model_validator_refusal_is_shown_at_its_field_and_the_token_stays_usable() -> None:
    async with page_server() as listening, asked(listening, "vault") as (c, events, url):
        csrf = CSRF.findall((await c.http.get(url)).text)[0]
        refused = await c.http.post(
            url, data={"_csrf": csrf, "_action": "accept", "owner": "admin", "pin": "4321"}
        )
        assert refused.status_code == 422, refused.text
        assert 'id="f-0" aria-invalid="true"' in refused.text
        assert field_errors(refused.text)["f-0"] == "The name admin is reserved."
        assert 'name="owner"' in refused.text  # the form again, never the success notice
        assert "4321" not in refused.text  # a secret is never written back
        done = await c.http.post(
            url, data={"_csrf": csrf, "_action": "accept", "owner": "ada", "pin": "4321"}
        )
        assert done.status_code == 200, done.text
        assert "Your answer was sent" in done.text
        assert tool_text(await events.rest()) == "accept Vault owner=ada pin=4321"


async def test_a_validator_with_a_bug_ends_the_question_and_the_page_never_says_sent() -> None:
    async with page_server() as listening, asked(listening, "broken_vault") as (c, events, url):
        csrf = CSRF.findall((await c.http.get(url)).text)[0]
        failed = await c.http.post(
            url, data={"_csrf": csrf, "_action": "accept", "owner": "ada", "pin": "4321"}
        )
        assert failed.status_code == 500
        assert "could not check your answer" in failed.text
        assert "Your answer was sent" not in failed.text
        assert tool_text(await events.rest()) == (
            "Failed(reason='validator_error', detail='LookupError raised by the validator')"
        )
        assert (await c.http.get(url)).status_code == 410  # the question has ended


# -- CSRF and origin ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("csrf", "headers"),
    [
        ("wrong", {}),
        (None, {"origin": "https://evil.example"}),
        (None, {"origin": "null"}),
        (None, {"sec-fetch-site": "cross-site"}),
    ],
)
async def test_post_needs_the_page_csrf_value_and_its_own_origin(
    csrf: str | None, headers: dict[str, str]
) -> None:
    async with page_server() as listening, asked(listening) as (c, events, url):
        good = CSRF.findall((await c.http.get(url)).text)[0]
        data = {"_csrf": csrf or good, "_action": "accept", "user": "u", "api_key": "k"}
        refused = await c.http.post(url, data=data, headers=headers)
        assert refused.status_code == 403
        # still open: the right page's own post works
        origin = url.split("/elicit/")[0]
        ok = await c.http.post(
            url,
            data={**data, "_csrf": good},
            headers={"origin": origin, "sec-fetch-site": "same-origin"},
        )
        assert ok.status_code == 200
        assert tool_text(await events.rest()) == "accept user=u key=k"


PUBLIC = "http://mcp.example.test:8443"


async def test_with_a_public_url_the_page_names_it_and_its_host_and_origin_are_served() -> None:
    async with (
        page_server(HttpConfig(public_url=PUBLIC + "/")) as listening,
        asked(listening) as (c, events, url),
    ):
        assert re.fullmatch(re.escape(PUBLIC) + r"/elicit/[A-Za-z0-9_-]{43}", url)
        # the proxy forwards to the replica with the public Host unchanged
        direct = listening.url.removesuffix("/mcp") + urlsplit(url).path
        public = {"host": "mcp.example.test:8443"}
        page = await c.http.get(direct, headers=public)
        assert page.status_code == 200, page.text
        for foreign in ("evil.example", "mcp.example.test.evil.example", "mcp.example.test:9"):
            refused = await c.http.get(direct, headers={"host": foreign})
            assert refused.status_code == 403, foreign
        good = CSRF.findall(page.text)[0]
        data = {"_csrf": good, "_action": "accept", "user": "u", "api_key": "k"}
        for origin in ("http://evil.example", "https://mcp.example.test:8443"):
            refused = await c.http.post(direct, data=data, headers={**public, "origin": origin})
            assert refused.status_code == 403, origin
        ok = await c.http.post(direct, data=data, headers={**public, "origin": PUBLIC})
        assert ok.status_code == 200, ok.text
        assert tool_text(await events.rest()) == "accept user=u key=k"


async def test_with_a_public_url_the_mcp_endpoint_takes_its_host_and_origin_only() -> None:
    async with (
        page_server(HttpConfig(public_url=PUBLIC)) as listening,
        httpx2.AsyncClient(timeout=TIMEOUT) as http,
    ):
        c = Client(http, listening.url)
        await c.initialize()
        ping = {"jsonrpc": "2.0", "id": 7, "method": "ping"}
        for headers, status in [
            ({"host": "mcp.example.test:8443", "origin": PUBLIC}, 200),
            ({"host": "evil.example", "origin": PUBLIC}, 403),
            ({"host": "mcp.example.test:8443", "origin": "http://evil.example"}, 403),
        ]:
            response = await http.post(
                listening.url, content=json.dumps(ping).encode(), headers={**c.headers(), **headers}
            )
            assert response.status_code == status, (headers, response.text)


async def test_an_application_page_base_url_wins_over_the_public_url() -> None:
    server = build_server()
    async with server.running() as runtime, trio.open_nursery() as nursery:
        runtime.pages.base_url = "https://app.example"
        await nursery.start(
            partial(serve_http, server, port=0, config=HttpConfig(public_url=PUBLIC))
        )
        assert runtime.pages.base_url == "https://app.example"
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("bad", ["https://mcp.example.test/mcp", "wss://mcp.example.test"])
def test_http_config_refuses_a_public_url_that_is_not_an_origin(bad: str) -> None:
    with pytest.raises(ValueError, match=r"^public_url must"):
        HttpConfig(public_url=bad)


# -- tokens ---------------------------------------------------------------------------------------


async def test_unknown_token_is_not_found() -> None:
    async with page_server() as listening, httpx2.AsyncClient(timeout=TIMEOUT) as http:
        base = listening.url.removesuffix("/mcp")
        page = await http.get(f"{base}/elicit/{'A' * 43}")
        assert page.status_code == 404
        assert "no such request" in page.text
        assert page.headers["cache-control"].startswith("no-store")


async def test_a_token_never_reaches_another_tenants_elicitation() -> None:
    async with page_server() as listening, asked(listening) as (c, events, url):
        runtime = listening.transport.runtime
        mine = await runtime.pages.get(url.rsplit("/", 1)[1])
        assert mine is not None
        assert mine.elicitation_id is not None
        # a ticket of another tenant, bound to this elicitation's id: as unknown to it
        other = await runtime.pages.open(
            PageQuestion("theirs", {"type": "object", "properties": {}}, {}),
            Tenant(user="mallory"),
        )
        other = await runtime.pages.bind(other, mine.elicitation_id)
        page = await c.http.get(other.url)
        assert page.status_code == 404
        assert "Sign in to Acme" not in page.text
        post = await c.http.post(other.url, data={"_csrf": other.csrf, "_action": "decline"})
        assert post.status_code == 404
        csrf = CSRF.findall((await c.http.get(url)).text)[0]
        await c.http.post(url, data={"_csrf": csrf, "_action": "decline"})
        assert tool_text(await events.rest()) == "decline"
        await runtime.pages.close(other)


async def test_the_token_expires_with_its_elicitation() -> None:
    server = page_server(url_deadline_s=0.5, warn_before_s=0)
    async with server as listening, asked(listening) as (c, events, url):
        assert tool_text(await events.rest()) == "timed out"
        page = await c.http.get(url)
        assert page.status_code == 410
        assert "expired" in page.text


# -- routing: which questions go to the page ------------------------------------------------------


def routing_server(**config: Any) -> Server:
    server = Server("routing", "1.0", runtime_config=RuntimeConfig.model_validate(config))

    @server.tool()
    async def ask(ctx: Context, form: str) -> str:
        """Ask one of the forms below; a refusal is returned as text."""
        try:
            return describe(await ctx.elicit("Q", FORMS[form]))
        except SchemaNotAllowed as exc:
            return f"refused: {exc}"

    @server.tool()
    async def ask_string(ctx: Context, field: str) -> str:
        """elicit_string with a field name."""
        return describe(await ctx.elicit_string("Q", field))

    return server


FORMS: dict[str, Any] = {
    "login": Login,
    "password_format": {
        "type": "object",
        "properties": {"pin_code": {"type": "string", "format": "password"}},
    },
    "write_only": {"type": "object", "properties": {"x": {"type": "string", "writeOnly": True}}},
    "token_kept": {
        "type": "object",
        "properties": {"token": {"type": "string", "x-sensitive": False}},
    },
    "plain": {"type": "object", "properties": {"city": {"type": "string"}}},
    "vault": {"type": "object", "properties": {"vault_code": {"type": "string"}}},
    "form_password": {"id": "f", "title": "F", "fields": [
        {"id": "passwd", "type": "text", "label": "Password"}]},
}  # fmt: skip

CAPS = {"elicitation": {"form": {}, "url": {}}}


async def ask_with(
    form: str, *, page: bool = True, tool: str = "ask", arg: str = "form", **config: Any
) -> tuple[str, list[Mapping[str, Any]]]:
    """Call ``tool`` over the in-memory transport; consent/decline every question."""
    server = routing_server(**config)
    seen: list[Mapping[str, Any]] = []

    def handler(request: Any) -> Mapping[str, Any]:
        seen.append(request.params)
        return {"action": "decline"}

    async with server.running() as runtime:
        if page:
            runtime.pages.base_url = "https://srv.example"
        async with open_memory_client(server, handler=handler, capabilities=CAPS) as client:
            result = await client.call_tool(tool, {arg: form})
    return result["content"][0]["text"], seen


@pytest.mark.parametrize(
    ("form", "why"),
    [
        ("login", "field 'api_key' asks for sensitive data (its format is password)"),
        ("password_format", "field 'pin_code' asks for sensitive data (its format is password)"),
        ("write_only", "field 'x' asks for sensitive data (it is writeOnly)"),
        ("form_password", "field 'passwd' asks for sensitive data (its id looks like 'passwd')"),
    ],
)
async def test_sensitive_questions_go_to_the_page_in_url_mode(form: str, why: str) -> None:
    text, seen = await ask_with(form)
    assert text == "decline"
    (params,) = seen
    assert params["mode"] == "url"
    assert params["url"].startswith("https://srv.example/elicit/")
    assert "requestedSchema" not in params
    refused, nothing = await ask_with(form, page=False)
    assert nothing == []
    assert refused.startswith("refused: ")
    assert why in refused
    assert "no hosted elicitation page" in refused


async def test_a_helper_with_a_sensitive_field_name_goes_to_the_page() -> None:
    _, seen = await ask_with("api_key", tool="ask_string", arg="field")
    assert seen[0]["mode"] == "url"
    _, seen = await ask_with("city", tool="ask_string", arg="field")
    assert seen[0].get("mode", "form") == "form"


async def test_marker_and_server_policy_override_the_name_list() -> None:
    _, seen = await ask_with("token_kept")
    assert seen[0].get("mode", "form") == "form"
    assert seen[0]["requestedSchema"]["properties"] == {"token": {"type": "string"}}
    _, seen = await ask_with("plain")
    assert seen[0].get("mode", "form") == "form"
    _, seen = await ask_with("vault")
    assert seen[0].get("mode", "form") == "form"
    _, seen = await ask_with("vault", sensitive_names=["vault code"])
    assert seen[0]["mode"] == "url"
    _, seen = await ask_with("form_password", not_sensitive_names=["passwd", "password"])
    assert seen[0].get("mode", "form") == "form"


async def test_a_client_without_url_mode_gets_unsupported_and_nothing_is_sent() -> None:
    server = routing_server()
    async with server.running() as runtime:
        runtime.pages.base_url = "https://srv.example"
        async with open_memory_client(server) as client:  # form mode only
            result = await client.call_tool("ask", {"form": "login"})
            assert client.server_requests == []
    assert result["content"][0]["text"] == "Unsupported(mode='url')"
    assert len(runtime.pages) == 0


async def test_a_client_with_url_mode_only_is_asked_a_secret_on_the_page() -> None:
    server = routing_server()
    seen: list[Mapping[str, Any]] = []

    def handler(request: Any) -> Mapping[str, Any]:
        seen.append(request.params)
        return {"action": "decline"}

    async with server.running() as runtime:
        runtime.pages.base_url = "https://srv.example"
        url_only = {"elicitation": {"url": {}}}
        async with open_memory_client(server, handler=handler, capabilities=url_only) as client:
            secret = await client.call_tool("ask", {"form": "login"})
            plain = await client.call_tool("ask", {"form": "plain"})
    assert secret["content"][0]["text"] == "decline"  # asked in URL mode, the one it has
    assert [params["mode"] for params in seen] == ["url"]
    assert plain["content"][0]["text"] == "Unsupported(mode='form')"  # nothing sent
    assert len(runtime.pages) == 0


async def test_page_registry_tokens_are_unguessable_single_use_and_forgotten_when_closed() -> None:
    store = MemoryStore(RatePolicy(), "r1")
    pages = PageRegistry("https://srv.example", store=store)
    question = PageQuestion("q", {"type": "object", "properties": {}}, {})
    a = await pages.open(question, Tenant(user="a"))
    b = await pages.open(question, Tenant(user="b"))
    assert a.token != b.token
    assert len(a.token) == 43
    assert a.csrf != b.csrf
    assert a.url == f"https://srv.example/elicit/{a.token}"
    assert a.replica == "r1"
    assert pages.owns(a.url)
    assert not await pages.claim(a)  # not bound to an elicitation yet
    a = await pages.bind(a, "e1")
    assert await pages.get(a.token) == a
    assert not pages.owns("https://srv.example/elicit/other")
    assert await pages.claim(a)
    assert not await pages.claim(a)
    await pages.release(a)
    assert await pages.claim(a)
    await pages.close(a)
    assert not await pages.claim(a)
    assert not pages.owns(a.url)
    closed = await pages.get(a.token)  # remembered: "expired or used"
    assert closed is not None
    assert closed.state == "closed"
    assert closed.question.schema == {}  # but not its question
    assert closed.csrf == ""  # nor its CSRF value
    assert await pages.get("not-a-token") is None
    assert len(pages) == 1  # b is still open


async def test_the_page_registry_remembers_a_bounded_number_of_closed_tickets() -> None:
    pages = PageRegistry("https://srv.example", store=MemoryStore(RatePolicy(), "r1", remembered=2))
    question = PageQuestion("q", {"type": "object", "properties": {}}, {})
    tickets = [await pages.open(question, Tenant(user="a")) for _ in range(3)]
    for ticket in tickets:
        await pages.close(ticket)
    assert await pages.get(tickets[0].token) is None  # forgotten: "not found"
    assert [(await pages.get(t.token)) is not None for t in tickets[1:]] == [True, True]


# -- 2026-07-28: the page answers a stateless call ------------------------------------------------

CONSENT = {"action": "accept"}  # a URL-mode accept: the user agreed to open the page


async def submit(http: httpx2.AsyncClient, url: str, **fields: str) -> httpx2.Response:
    """Fill in the page at ``url`` and press Submit, as its browser would."""
    csrf = CSRF.findall((await http.get(url)).text)[0]
    return await http.post(url, data={"_csrf": csrf, "_action": "accept", **fields})


async def test_a_2026_call_asks_a_secret_on_the_page_and_its_retry_gets_the_result() -> None:
    async with page_server() as listening, httpx2.AsyncClient(timeout=TIMEOUT) as http:
        c = StatelessPoster(http, listening.url)
        with trio.fail_after(TIMEOUT):
            first = await c.call("login")
            key, url = page_request(first)
            page = await http.get(url)
            assert 'type="password"' in page.text
            assert 'name="api_key"' in page.text
            done = await submit(http, url, user="ada", api_key="k-123")
            assert done.status_code == 200
            final = await c.call("login", first["requestState"], {key: CONSENT})
        assert final_text(final) == "accept user=ada key=k-123"
        assert (await http.get(url)).status_code == 410  # used: single use
        assert "k-123" not in json.dumps(first)  # the secret never went through the client


async def test_a_2026_retry_that_consents_first_is_answered_when_the_page_is_submitted() -> None:
    async with page_server() as listening, httpx2.AsyncClient(timeout=TIMEOUT) as http:
        c = StatelessPoster(http, listening.url)
        registry = listening.transport.continuations
        assert registry is not None
        results: list[dict[str, Any]] = []
        with trio.fail_after(TIMEOUT):
            first = await c.call("login")
            key, url = page_request(first)

            async def retry() -> None:
                results.append(await c.call("login", first["requestState"], {key: CONSENT}))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(retry)
                while registry.snapshot()["suspended"]:  # until the retry holds the call
                    await trio.testing.wait_all_tasks_blocked(0.01)
                assert results == []  # held while the page is open
                assert (await submit(http, url, user="ada", api_key="k-1")).status_code == 200
        assert final_text(results[0]) == "accept user=ada key=k-1"


async def test_a_2026_retry_never_answers_a_page_question_with_its_own_content() -> None:
    http_config = HttpConfig(continuations={"hold_s": 0.2})
    async with page_server(http_config) as listening, httpx2.AsyncClient(timeout=TIMEOUT) as http:
        c = StatelessPoster(http, listening.url)
        with trio.fail_after(TIMEOUT):
            first = await c.call("login")
            key, url = page_request(first)
            forged = {key: {"action": "accept", "content": {"user": "eve", "api_key": "x"}}}
            held = await c.call("login", first["requestState"], forged)
            # consent only: the tool still waits for the page, and the client retries
            assert held["resultType"] == "input_required"
            assert "inputRequests" not in held
            assert (await http.get(url)).status_code == 200
            assert (await submit(http, url, user="ada", api_key="k-2")).status_code == 200
            final = await c.call("login", held["requestState"])
        assert final_text(final) == "accept user=ada key=k-2"


RING = KeyRing("shared", b"p" * 32)


async def test_a_2026_call_replayed_on_another_replica_asks_on_that_replicas_page() -> None:
    config = HttpConfig(continuations={"keyring": RING})
    async with (
        page_server(config) as a,
        page_server(config) as b,
        httpx2.AsyncClient(timeout=TIMEOUT) as http,
    ):
        on_a, on_b = StatelessPoster(http, a.url), StatelessPoster(http, b.url)
        with trio.fail_after(TIMEOUT):
            first = await on_a.call("login")
            key, url_a = page_request(first)
            # B does not hold the call: it runs the tool again, and the page question is
            # asked again, on B's own page (the answer to A's page reaches only A's call)
            again = await on_b.call("login", first["requestState"], {key: CONSENT})
            key_b, url_b = page_request(again)
            assert url_b.startswith(b.url.removesuffix("/mcp") + "/elicit/")
            assert url_b != url_a
            assert (await submit(http, url_b, user="ada", api_key="k-b")).status_code == 200
            final = await on_b.call("login", again["requestState"], {key_b: CONSENT})
        assert final_text(final) == "accept user=ada key=k-b"


async def test_a_server_that_keeps_no_call_between_rounds_refuses_a_page_question() -> None:
    config = HttpConfig(continuations={"keyring": RING, "mrtr": "replay"})
    async with page_server(config) as listening, httpx2.AsyncClient(timeout=TIMEOUT) as http:
        with trio.fail_after(TIMEOUT):
            result = await StatelessPoster(http, listening.url).call("login")
        assert result["resultType"] == "complete"
        assert result["isError"] is True
        text = result["content"][0]["text"]
        assert "field 'api_key' asks for sensitive data" in text
        assert "keeps none (--mrtr replay)" in text
        assert len(listening.transport.runtime.pages) == 0  # no page was opened


# -- the page's parts: locale, rendering, reading a posted form ----------------------------------


@pytest.mark.parametrize(
    ("header", "locale"),
    [
        (None, "en-US"),
        ("", "en-US"),
        ("pt-BR,pt;q=0.9,en;q=0.8", "pt-BR"),
        ("pt", "pt-BR"),
        ("pt-PT", "pt-BR"),
        ("en-GB, pt-BR;q=0.5", "en-US"),
        ("fr-FR, pt;q=0.4, en;q=0.3", "pt-BR"),
        ("pt-BR;q=0, en;q=0.1", "en-US"),  # q=0: not acceptable
        ("de, *;q=0.1", "en-US"),
        ("pt-BR;q=abc", "en-US"),  # a broken weight counts as 0
    ],
)
def test_accept_language_picks_the_page_locale(header: str | None, locale: str) -> None:
    assert negotiate(header) == locale


def test_the_page_texts_have_both_locales_and_the_ui_keys() -> None:
    for key in (k for k in CATALOG if k.startswith("mcp.elicitation.page.")):
        assert set(CATALOG[key]) == {"en-US", "pt-BR"}, key
    assert Texts("pt-BR")("mcp.elicitation.timeout_warning", seconds=7) == "Fechando em 7s"
    assert Texts("pt-BR")("mcp.elicitation.action.reject") == "Recusar"
    assert Texts("en-US")("mcp.elicitation.field_required") == "Required"


def test_question_text_is_escaped_everywhere() -> None:
    evil = '<script>alert("x")</script>'
    question = PageQuestion(
        evil,
        {
            "type": "object",
            "properties": {
                "a": {"type": "string", "title": evil, "description": evil, "default": evil},
                "b": {"type": "string", "enum": [evil]},
            },
        },
        {},
        server=evil,
        tool=evil,
    )
    html = render_form(
        locale="en-US",
        nonce="N",
        action="/elicit/t",
        csrf="c",
        question=question,
        fields=page_fields(question),
        remaining_s=60,
        errors={"a": evil},
        form_errors=(evil,),
    )
    assert evil not in html
    assert "&lt;script&gt;" in html
    assert html.count("<script") == 2  # the data block and the nonce'd script, nothing else
    assert "\\u003cscript" in html  # inside the data block too


def test_a_posted_form_is_read_back_by_field_type() -> None:
    fields = page_fields(
        PageQuestion(
            "q",
            {
                "type": "object",
                "properties": {
                    "n": {"type": "integer"},
                    "x": {"type": "number"},
                    "on": {"type": "boolean"},
                    "off": {"type": "boolean"},
                    "many": {"type": "array", "items": {"enum": ["a", "b"]}},
                    "none": {"type": "array", "items": {"enum": ["a", "b"]}},
                    "empty": {"type": "string"},
                    "s": {"type": "string"},
                    "bad": {"type": "integer"},
                    "f": {"type": "object"},
                },
                "required": ["none"],
            },
            {"f": {"kind": "file"}},
        )
    )
    form = {
        "n": ["42"],
        "x": ["2.5"],
        "on": ["true"],
        "many": ["a", "b"],
        "empty": [""],
        "s": ["text"],
        "bad": ["4.5"],
        "f": ['{"filename": "a.pdf", "content_type": "application/pdf", "size": 3}'],
        "_csrf": ["ignored"],
    }
    assert content_from_form(fields, form) == {
        "n": 42,
        "x": 2.5,
        "on": True,
        "off": False,
        "many": ["a", "b"],
        "none": [],  # required: the runtime says which choice is missing
        "s": "text",
        "bad": "4.5",  # kept as text: the runtime reports the field's type
        "f": {"filename": "a.pdf", "content_type": "application/pdf", "size": 3},
    }


def test_the_script_is_given_every_text_it_uses_and_no_other() -> None:
    used = set(re.findall(r'\b(?:t|count)\("([^"]+)"', _SCRIPT))
    used |= {
        f"{key}.{form}"
        for key in re.findall(r'\bcount\("([^"]+)"', _SCRIPT)
        for form in ("one", "many")
    }
    used -= set(re.findall(r'\bcount\("([^"]+)"', _SCRIPT))
    assert used == set(_SCRIPT_TEXTS)
    assert all(key in CATALOG for key in _SCRIPT_TEXTS)


@pytest.mark.parametrize(
    ("server", "tool", "said"),
    [
        ("S&Co", "t", "Asked by <strong>S&amp;Co</strong>, for its tool <strong>t</strong>."),
        ("S&Co", "", "Asked by <strong>S&amp;Co</strong>."),  # an application's own question
        ("", "", None),  # a runtime embedded without MCP: nobody to name
    ],
)
def test_the_form_names_who_asks_as_far_as_the_ticket_knows(
    server: str, tool: str, said: str | None
) -> None:
    schema = {"type": "object", "properties": {"k": {"type": "string"}}}
    question = PageQuestion("q", schema, {}, server=server, tool=tool)
    html = render_form(
        locale="en-US",
        nonce="N",
        action="/elicit/t",
        csrf="c",
        question=question,
        fields=page_fields(question),
        remaining_s=60,
    )
    found = re.findall(r'<p class="asker" id="asker">(.*?)</p>', html)
    assert found == ([] if said is None else [said])
    assert ('aria-describedby="asker message"' in html) == (said is not None)
