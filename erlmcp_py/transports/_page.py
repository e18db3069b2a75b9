"""The hosted elicitation page: ``GET``/``POST /elicit/{token}`` on the HTTP transport.

Theory of operation
-------------------
A question that may not be asked in form mode is asked here (see
:mod:`erlmcp_py.actors.pages` for the tickets). ``GET`` looks the token up and asks the
runtime, with the ticket's own tenant, for the elicitation's status and seconds left (from
the replica holding it, whichever replica serves the page): an open ticket of a live
elicitation renders its form (200) with the seconds left for the countdown; a closed or used
ticket, or an ended elicitation, says "expired or used" (410); an unknown token, or one whose
elicitation its tenant cannot see, says "not found" (404). Nothing ever renders another
tenant's question.

``HEAD`` is answered as ``GET``, without the body (RFC 9110 §9.3.2).

``POST`` carries the form (``application/x-www-form-urlencoded``), the ticket's CSRF value and
the pressed button (``_action``: ``accept``, ``decline`` or ``cancel``). It is refused (403)
unless the CSRF value matches and the request comes from the page itself (``Origin`` equal to
the page's origin and ``Sec-Fetch-Site`` ``same-origin``, where the browser sends them). The
answer claims the ticket, then goes through the runtime: ``accept`` completes the elicitation
(``complete_elicitation``: the runtime's own validation, then the tool's outcome and, to the
client, ``notifications/elicitation/complete``); an invalid answer -- refused by the schema or
by the form type's own validators, with their messages -- releases the ticket and renders the
form again with an error per field, worded in the page's locale, and any error about the
answer as a whole above it (422); an answer the application's validator failed on
(``ValidatorError``: the question has ended ``failed: validator_error``) says so (500);
whatever the runtime refuses, however it words the refusal, the page never says the answer
was sent. ``decline`` and ``cancel`` answer as the user would (``answer_elicitation``). An
answer that could not be delivered (the store or the replica holding the elicitation did not
answer; a task's question whose journal cannot take the answer) releases the ticket and
renders the form again, as sent, saying it was not sent (503, ``Retry-After``). A task's
question answered here is journaled by the task before its tool gets the answer (the task
is the elicitation's peer: :class:`~erlmcp_py.actors.peer.RecordsAnswers`), as a
``tasks/update`` answer is.

The form names who asks: the server (its ``serverInfo`` title, else its name) and the tool,
as the ticket carries them.

Tickets are in the runtime's store, so with a shared store every replica answers the page:
the runtime forwards the answer to the replica holding the elicitation, and the claim is one
atomic step in the store. A store that cannot answer gets a "try again later" page (503),
never a wait past the store's deadline.

Every response has a fresh CSP nonce (``default-src 'none'``, the page's one style and one
script by nonce, ``form-action 'self'``, ``frame-ancestors 'none'``), ``no-store`` caching,
a ``same-origin`` referrer policy (the token never leaves the origin; ``no-referrer`` would
make the browser send ``Origin: null`` with the page's own POST), and the locale
``Accept-Language`` asks for (en-US or pt-BR).
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from contextlib import suppress
from typing import Any, Final
from urllib.parse import parse_qs

import structlog
import trio

from erlmcp_py.actors.pages import PAGE_PATH, PageRegistry, PageTicket
from erlmcp_py.actors.runtime import Runtime
from erlmcp_py.core.errors import (
    AlreadyTerminal,
    AnswerInFlight,
    ElicitationNotFound,
    InvalidAnswer,
    ResultTooLarge,
    StoreUnavailable,
    ValidatorError,
)
from erlmcp_py.core.i18n import Texts, negotiate
from erlmcp_py.transports._limits import BodyPolicy, BodyTooLarge, BodyTooSlow, read_body
from erlmcp_py.transports._page_fields import content_from_form, page_errors, page_fields
from erlmcp_py.transports._page_html import render_form, render_notice
from erlmcp_py.transports.http_checks import HostPolicy

__all__ = ["ElicitationPage", "is_page_path"]

log = structlog.get_logger("erlmcp.page")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

_FORM: Final = "application/x-www-form-urlencoded"
_TERMINAL: Final = frozenset(
    {"completed", "declined", "cancelled", "timed_out", "abandoned", "failed"}
)
_BIND_WAIT_S: Final = 2.0
_POLL_S: Final = 0.02
_DONE: Final = {
    "accept": "mcp.elicitation.page.accepted",
    "decline": "mcp.elicitation.page.declined",
    "cancel": "mcp.elicitation.page.cancelled",
}


def is_page_path(path: object) -> bool:
    """Whether ``path`` is a page's (``/elicit/{token}``)."""
    return isinstance(path, str) and path.startswith(PAGE_PATH)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or ():
        if key == name:
            return bytes(value).decode("latin-1")
    return None


class ElicitationPage:
    """The page's ASGI handler, mounted by the HTTP transport.

    Args:
        runtime: The runtime (its ``pages`` registry and API).
        hosts: The transport's ``Host`` policy (DNS-rebinding guard).
        body: Bounds of a submitted form.
    """

    def __init__(self, runtime: Runtime, hosts: HostPolicy, body: BodyPolicy) -> None:
        self.runtime = runtime
        self.hosts = hosts
        self.body = body

    @property
    def pages(self) -> PageRegistry | None:
        """The runtime's ticket registry (``None`` for a runtime without one)."""
        pages: PageRegistry | None = getattr(self.runtime, "pages", None)
        return pages

    def serve_at(self, base_url: str) -> None:
        """Make the page available at ``base_url`` unless the application set another."""
        pages = self.pages
        if pages is not None and pages.base_url is None:
            pages.base_url = base_url

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer one request to ``/elicit/{token}``."""
        locale = negotiate(_header(scope, b"accept-language"))
        respond = _Responder(send, locale)
        if self.hosts.check_host(_header(scope, b"host")) is not None:
            await respond.notice(403, "mcp.elicitation.page.forbidden")
            return
        method = scope.get("method")
        if method not in ("GET", "HEAD", "POST"):  # HEAD: GET's answer, without its body
            await respond.raw(405, b"", [(b"allow", b"GET, HEAD, POST")])
            return
        token = str(scope.get("path"))[len(PAGE_PATH) :]
        pages = self.pages
        try:
            ticket = await pages.get(token) if pages is not None else None
            if ticket is None or pages is None:
                await respond.notice(404, "mcp.elicitation.page.not_found")
                return
            if method == "POST":
                await self._post(scope, receive, respond, pages, ticket)
                return
            live = await self._live(pages, ticket)
        except StoreUnavailable as exc:
            log.warning("page_store_unavailable", error=str(exc))
            await respond.notice(503, _UNAVAILABLE, [(b"retry-after", b"5")])
            return
        if isinstance(live, int):
            await respond.notice(live, _NOTICE_OF[live])
            return
        ticket, remaining = live
        fields = page_fields(ticket.question)
        await respond.page(
            200,
            lambda nonce: render_form(
                locale=locale,
                nonce=nonce,
                action=f"{PAGE_PATH}{ticket.token}",
                csrf=ticket.csrf,
                question=ticket.question,
                fields=fields,
                remaining_s=remaining,
            ),
        )

    async def _live(
        self, pages: PageRegistry, ticket: PageTicket
    ) -> tuple[PageTicket, float] | int:
        """The bound ticket and the seconds left to answer it, or the status to refuse it
        with (404, 410). The URL can reach the browser before the tool's task has bound its
        elicitation to the ticket: that is waited for, up to a bound.

        Raises:
            StoreUnavailable: the store (or the replica holding the elicitation) cannot say.
        """
        deadline = trio.current_time() + _BIND_WAIT_S
        while ticket.state == "open" and ticket.elicitation_id is None:
            if trio.current_time() >= deadline:
                return 410
            await trio.sleep(_POLL_S)
            again = await pages.get(ticket.token)
            if again is None:
                return 404
            ticket = again
        if ticket.state != "open" or ticket.elicitation_id is None:
            return 410
        try:
            status, remaining = await self.runtime.time_left(
                ticket.elicitation_id, tenant=ticket.tenant, replica=ticket.replica
            )
        except ElicitationNotFound:
            return 404
        if status in _TERMINAL or remaining <= 0:
            return 410
        return ticket, remaining

    async def _post(
        self,
        scope: Scope,
        receive: Receive,
        respond: _Responder,
        pages: PageRegistry,
        ticket: PageTicket,
    ) -> None:
        content_type = (_header(scope, b"content-type") or "").split(";")[0].strip().lower()
        if content_type != _FORM:
            await respond.raw(415, b"Unsupported Media Type\n")
            return
        length = (_header(scope, b"content-length") or "").strip()
        try:
            body = await read_body(receive, int(length) if length.isdigit() else None, self.body)
        except (BodyTooLarge, BodyTooSlow):
            await respond.raw(413, b"Payload Too Large\n", [(b"connection", b"close")])
            return
        if body is None:
            return  # the browser went away
        if ticket.state == "closed":  # a closed ticket keeps no CSRF value to check
            await respond.notice(410, "mcp.elicitation.page.closed")
            return
        form = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
        csrf = (form.get("_csrf") or [""])[-1]
        if not (_same_origin(scope) and hmac.compare_digest(csrf.encode(), ticket.csrf.encode())):
            log.info("page_post_refused", why="csrf or origin")
            await respond.notice(403, "mcp.elicitation.page.forbidden")
            return
        action = (form.get("_action") or ["accept"])[-1]
        if action not in _DONE:
            await respond.raw(400, b"Bad Request: unknown action\n")
            return
        live = await self._live(pages, ticket)
        if isinstance(live, int):
            await respond.notice(live, _NOTICE_OF[live])
            return
        ticket, remaining = live
        if not await pages.claim(ticket):
            await respond.notice(410, "mcp.elicitation.page.closed")
            return
        assert ticket.elicitation_id is not None
        fields = page_fields(ticket.question)
        content = content_from_form(fields, form)
        try:
            if action == "accept":
                await self.runtime.complete_elicitation(
                    ticket.elicitation_id, content, tenant=ticket.tenant, replica=ticket.replica
                )
            else:
                await self.runtime.answer_elicitation(
                    ticket.elicitation_id, action, tenant=ticket.tenant, replica=ticket.replica
                )
        except (InvalidAnswer, ResultTooLarge, AnswerInFlight, StoreUnavailable) as exc:
            # else the user's next try finds the ticket used
            with suppress(StoreUnavailable):
                await pages.release(ticket)
            t = Texts(respond.locale)
            errors: dict[str, str] = {}
            general: tuple[str, ...]
            extra: list[tuple[bytes, bytes]] = []
            if isinstance(exc, InvalidAnswer):
                errors, general = page_errors(fields, exc.errors, respond.locale)
                status = 422
            elif isinstance(exc, ResultTooLarge):
                general = (t("mcp.answer.too_large", size=exc.size, limit=exc.limit),)
                status = 409
            elif isinstance(exc, AnswerInFlight):
                general = (t("mcp.elicitation.page.busy"),)
                status = 409
            else:  # nothing was delivered (a task's answer not journaled, its holder silent)
                log.warning("page_answer_not_sent", error=str(exc))
                general = (t("mcp.elicitation.page.not_sent"),)
                status, extra = 503, [(b"retry-after", b"5")]
            shown = ticket
            await respond.page(
                status,
                lambda nonce: render_form(
                    locale=respond.locale,
                    nonce=nonce,
                    action=f"{PAGE_PATH}{shown.token}",
                    csrf=shown.csrf,
                    question=shown.question,
                    fields=fields,
                    remaining_s=remaining,
                    values=content,
                    errors=errors,
                    form_errors=general,
                ),
                extra,
            )
            return
        except (ElicitationNotFound, AlreadyTerminal) as exc:
            status = 404 if isinstance(exc, ElicitationNotFound) else 410
            await respond.notice(status, _NOTICE_OF[status])
            return
        except ValidatorError:
            # The application's validator failed on this answer: the question has ended
            # (failed: validator_error), and the user must not be told it was received.
            await respond.notice(500, "mcp.elicitation.page.failed")
            return
        log.info("page_answered", elicitation_id=ticket.elicitation_id, action=action)
        await respond.notice(200, _DONE[action])


_NOTICE_OF: Final = {404: "mcp.elicitation.page.not_found", 410: "mcp.elicitation.page.closed"}
_UNAVAILABLE: Final = "mcp.elicitation.page.unavailable"


def _same_origin(scope: Scope) -> bool:
    """The request comes from the page itself, as far as the browser says (``Origin``,
    ``Sec-Fetch-Site``); a client that sends neither relies on the CSRF value alone."""
    site = _header(scope, b"sec-fetch-site")
    if site is not None and site.strip().lower() != "same-origin":
        return False
    origin = _header(scope, b"origin")
    if origin is None:
        return True
    host = _header(scope, b"host") or ""
    scheme = str(scope.get("scheme") or "http")
    return origin.strip().lower().rstrip("/") == f"{scheme}://{host}".lower()


class _Responder:
    """Sends one page response with the page's security headers."""

    def __init__(self, send: Send, locale: str) -> None:
        self.send = send
        self.locale = locale

    async def page(
        self,
        status: int,
        render: Callable[[str], str],
        extra: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        nonce = secrets.token_urlsafe(18)
        csp = (
            f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; "
            "img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        )
        headers = [
            (b"content-type", b"text/html; charset=utf-8"),
            (b"content-security-policy", csp.encode()),
            (b"content-language", self.locale.encode()),
            (b"vary", b"accept-language"),
            *(extra or ()),
        ]
        await self.raw(status, render(nonce).encode(), headers)

    async def notice(
        self, status: int, key: str, headers: list[tuple[bytes, bytes]] | None = None
    ) -> None:
        await self.page(status, lambda nonce: render_notice(self.locale, nonce, key), headers)

    async def raw(
        self, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None
    ) -> None:
        out = [
            *(headers or [(b"content-type", b"text/plain; charset=utf-8")]),
            (b"cache-control", b"no-store, max-age=0"),
            (b"pragma", b"no-cache"),
            (b"expires", b"0"),
            (b"referrer-policy", b"same-origin"),
            (b"x-content-type-options", b"nosniff"),
            (b"x-frame-options", b"DENY"),
            (b"content-length", str(len(body)).encode()),
        ]
        await self.send({"type": "http.response.start", "status": status, "headers": out})
        await self.send({"type": "http.response.body", "body": body, "more_body": False})
