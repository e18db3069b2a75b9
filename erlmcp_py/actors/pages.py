"""The hosted elicitation page's tickets: one unguessable, single-use token per question.

Theory of operation
-------------------
A question that may not be asked in form mode (:mod:`erlmcp_py.core.sensitive`) is asked on
the server's own page, served by the HTTP transport at ``/elicit/{token}``. The tool's
``Context`` opens a ticket (:meth:`PageRegistry.open`): a token of 32 random bytes
(``secrets.token_urlsafe``), a CSRF value of its own, the question (what the page renders and
how the answer is validated) and the tenant. It creates the URL-mode elicitation with the
ticket's URL, binds the elicitation's id to the ticket (:meth:`PageRegistry.bind`), and closes
the ticket when the elicitation ends, whatever its outcome (:meth:`PageRegistry.close`): the
token expires with its elicitation.

The page looks a ticket up by token (:meth:`PageRegistry.get`) and reaches the elicitation
only through the runtime with the ticket's own tenant, so a token can never show or answer
another tenant's question. An answer claims the ticket (:meth:`PageTicket.claim`: open ->
used) before it completes the elicitation; an answer the runtime refuses as invalid releases
it, so the user can correct the form. A closed ticket is remembered (a bounded number of them)
so its page says "expired or used" (410) rather than "not found" (404).
"""

from __future__ import annotations

import secrets
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

import trio

from erlmcp_py.core.outcomes import Tenant

__all__ = ["PAGE_PATH", "PageQuestion", "PageRegistry", "PageTicket"]

#: Where the HTTP transport serves the page: ``{base}/elicit/{token}``.
PAGE_PATH: Final = "/elicit/"


@dataclass(frozen=True, slots=True)
class PageQuestion:
    """What the page asks.

    Attributes:
        message: The elicitation's message, shown above the form.
        schema: An object schema (``properties``, ``required``) in the newest dialect, with
            every rule the form has: what the page renders and checks before submitting.
        widgets: Per field, rendering facts the schema does not carry: ``sensitive`` (a
            password input), ``kind`` (``"file"``, ``"textarea"``), ``accept`` (file types),
            ``placeholder``, ``help`` (help text), ``rows``, ``titles`` (option value ->
            title).

    The page's answer is validated by the runtime (the elicitation's own validator) when the
    page completes the elicitation.
    """

    message: str
    schema: Mapping[str, Any]
    widgets: Mapping[str, Mapping[str, Any]]


_ANSWERED: Final = PageQuestion("", {}, {})


class PageTicket:
    """One question's token and state (``open`` -> ``used`` -> ``closed``)."""

    __slots__ = ("bound", "csrf", "elicitation_id", "question", "state", "tenant", "token", "url")

    def __init__(self, token: str, url: str, question: PageQuestion, tenant: Tenant) -> None:
        self.token = token
        self.url = url
        self.csrf = secrets.token_urlsafe(32)
        self.question = question
        self.tenant = tenant
        self.elicitation_id: str | None = None
        self.bound = trio.Event()  # set once the elicitation is bound (its URL may be opened first)
        self.state: Literal["open", "used", "closed"] = "open"

    def claim(self) -> bool:
        """Take the ticket for one answer; ``False`` when it is not open."""
        if self.state != "open" or self.elicitation_id is None:
            return False
        self.state = "used"
        return True

    def release(self) -> None:
        """Give a claimed ticket back (the answer was refused as invalid)."""
        if self.state == "used":
            self.state = "open"


class PageRegistry:
    """The open tickets of one runtime, and a bounded memory of closed ones.

    Args:
        base_url: The page's public origin (``https://host:port``); ``None``: no page is
            served (the HTTP transport sets it to its own address when it starts, unless set).
        remembered: Closed tokens kept to answer "expired or used".
    """

    def __init__(self, base_url: str | None = None, *, remembered: int = 10_000) -> None:
        self.base_url = base_url
        self._tickets: dict[str, PageTicket] = {}
        self._closed: deque[str] = deque()
        self._remembered = remembered

    @property
    def available(self) -> bool:
        """Whether a page is served (sensitive questions go to it, else they are refused)."""
        return self.base_url is not None

    def open(self, question: PageQuestion, tenant: Tenant) -> PageTicket:
        """A new ticket for ``question`` asked on behalf of ``tenant``.

        Raises:
            RuntimeError: no page is served (:attr:`available` is false).
        """
        if self.base_url is None:
            raise RuntimeError("no hosted elicitation page is served")
        token = secrets.token_urlsafe(32)
        url = f"{self.base_url.rstrip('/')}{PAGE_PATH}{token}"
        ticket = PageTicket(token, url, question, tenant)
        self._tickets[token] = ticket
        return ticket

    def bind(self, ticket: PageTicket, elicitation_id: str) -> None:
        """Bind the elicitation created for ``ticket``."""
        ticket.elicitation_id = elicitation_id
        ticket.bound.set()

    def owns(self, url: str) -> bool:
        """Whether ``url`` is the page of an open ticket (the runtime needs no URL check
        for the server's own page)."""
        base = self.base_url
        if base is None or not url.startswith(f"{base.rstrip('/')}{PAGE_PATH}"):
            return False
        ticket = self._tickets.get(url.rsplit("/", 1)[-1])
        return ticket is not None and ticket.url == url and ticket.state == "open"

    def get(self, token: str) -> PageTicket | None:
        """The ticket of ``token`` in any state, or ``None`` when unknown or forgotten."""
        return self._tickets.get(token)

    def close(self, ticket: PageTicket) -> None:
        """The elicitation ended: the token now only says "expired or used"."""
        if ticket.state == "closed":
            return
        ticket.state = "closed"
        ticket.question = _ANSWERED  # a closed ticket keeps no question, only its token
        ticket.bound.set()
        self._closed.append(ticket.token)
        while len(self._closed) > self._remembered:
            self._tickets.pop(self._closed.popleft(), None)

    def __len__(self) -> int:
        return len(self._tickets)
