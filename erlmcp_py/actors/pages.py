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

A task's form question gets a ticket the same way (docs/tasks.md): its URL is the question's
*link* (:data:`PAGE_URL_META` in the input request's ``_meta``), which the client, or the
application, may send to whoever should answer. The page serves it as any other: the token is
the capability to answer that one question, once, while it is open, and shows nothing else.

Tickets live in the runtime's store (:class:`~erlmcp_py.store.Store`): in this process with
the embedded store, and for every replica with a shared one, so the page answers on any
replica behind a load balancer. The store keeps the question, the CSRF value, the tenant and
the elicitation's id, never an answer, and a ticket expires there with the longest life its
elicitation can have.

The page looks a ticket up by token (:meth:`PageRegistry.get`) and reaches the elicitation
only through the runtime with the ticket's own tenant, so a token can never show or answer
another tenant's question. An answer claims the ticket (:meth:`PageRegistry.claim`: open ->
used, one atomic step in the store, so one answer wins across replicas) before it completes
the elicitation; an answer the runtime refuses as invalid releases it, so the user can
correct the form. A closed ticket is remembered for a while (without its question) so its
page says "expired or used" (410) rather than "not found" (404).
"""

from __future__ import annotations

import dataclasses
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import structlog
import trio

from erlmcp_py.core.errors import StoreUnavailable
from erlmcp_py.core.outcomes import Tenant
from erlmcp_py.core.store_wire import StoreTicket, TicketState
from erlmcp_py.store import Store

__all__ = ["PAGE_PATH", "PAGE_URL_META", "PageQuestion", "PageRegistry", "PageTicket"]

log = structlog.get_logger("erlmcp.page")

#: Where the HTTP transport serves the page: ``{base}/elicit/{token}``.
PAGE_PATH: Final = "/elicit/"
#: The ``_meta`` key of a task's input request that carries the page answering it: a link
#: anyone holding it may answer the question with (docs/tasks.md).
PAGE_URL_META: Final = "io.erlmcp/pageUrl"

_TOKEN: Final = re.compile(r"[A-Za-z0-9_-]{43}")  # secrets.token_urlsafe(32)
_CLOSE_S: Final = 5.0  # the longest a closing ticket waits for the store, even when cancelled


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
        server: Who asks: the server's name as its clients know it (``serverInfo``'s
            ``title``, else its ``name``); empty when unknown. The page names it, so the user
            knows whom a secret goes to.
        tool: The tool that asks (its title, else its name); empty when unknown.

    The page's answer is validated by the runtime (the elicitation's own validator) when the
    page completes the elicitation.
    """

    message: str
    schema: Mapping[str, Any]
    widgets: Mapping[str, Mapping[str, Any]]
    server: str = ""
    tool: str = ""


@dataclass(frozen=True, slots=True)
class PageTicket:
    """One question's token as the store holds it (``open`` -> ``used`` -> ``closed``).

    Attributes:
        token: The single-use token (the last part of :attr:`url`).
        url: The page's URL.
        csrf: The value the page's form sends back.
        question: What the page asks (empty once closed).
        tenant: Whose question it is.
        elicitation_id: The elicitation asked with the URL, once bound.
        state: ``open``, ``used`` (an answer is being given) or ``closed``.
        replica: The replica that opened it.
    """

    token: str
    url: str
    csrf: str
    question: PageQuestion
    tenant: Tenant
    elicitation_id: str | None = None
    state: TicketState = "open"
    replica: str = ""

    @classmethod
    def from_shared(cls, shared: StoreTicket) -> PageTicket:
        """The ticket the store gave back."""
        return cls(
            token=shared.token,
            url=shared.url,
            csrf=shared.csrf,
            question=PageQuestion(
                shared.message, shared.schema, shared.widgets, shared.server, shared.tool
            ),
            tenant=shared.tenant,
            elicitation_id=shared.elicitation_id,
            state=shared.state,
            replica=shared.replica,
        )

    def to_shared(self) -> StoreTicket:
        """The ticket as the store keeps it."""
        question = self.question
        return StoreTicket(self.token, self.url, self.csrf, self.tenant, question.message,
                            question.schema, question.widgets, self.replica,
                            self.elicitation_id, self.state, question.server,
                            question.tool)  # fmt: skip


class PageRegistry:
    """The hosted page's tickets, kept in the runtime's store.

    Args:
        base_url: The page's public origin (``https://host:port``); ``None``: no page is
            served (the HTTP transport sets it to its own address when it starts, unless set).
        store: Where tickets live (the runtime sets its own store when it opens).
        ttl_s: The longest a ticket lives in the store (its elicitation's longest life).
    """

    def __init__(
        self, base_url: str | None = None, *, store: Store | None = None, ttl_s: float = 3600.0
    ) -> None:
        self.base_url = base_url
        self.store = store
        self.ttl_s = ttl_s
        self._open: dict[str, str] = {}  # token -> URL of the tickets this runtime opened

    @property
    def available(self) -> bool:
        """Whether a page is served (sensitive questions go to it, else they are refused)."""
        return self.base_url is not None and self.store is not None

    def _store(self) -> Store:
        if self.store is None:
            raise RuntimeError("the page registry has no store (open the runtime first)")
        return self.store

    async def open(self, question: PageQuestion, tenant: Tenant) -> PageTicket:
        """A new ticket for ``question`` asked on behalf of ``tenant``, in the store.

        Raises:
            RuntimeError: no page is served (:attr:`available` is false).
            StoreUnavailable: the store cannot keep it now.
        """
        if self.base_url is None:
            raise RuntimeError("no hosted elicitation page is served")
        store = self._store()
        token = secrets.token_urlsafe(32)
        url = f"{self.base_url.rstrip('/')}{PAGE_PATH}{token}"
        ticket = PageTicket(token, url, secrets.token_urlsafe(32), question, tenant,
                            replica=store.replica)  # fmt: skip
        await store.put_ticket(ticket.to_shared(), self.ttl_s)
        self._open[token] = url
        return ticket

    async def bind(self, ticket: PageTicket, elicitation_id: str) -> PageTicket:
        """Bind the elicitation created for ``ticket``; the bound ticket.

        Raises:
            StoreUnavailable: the store cannot keep it now.
        """
        await self._store().bind_ticket(ticket.token, elicitation_id)
        return dataclasses.replace(ticket, elicitation_id=elicitation_id)

    def owns(self, url: str) -> bool:
        """Whether ``url`` is the page of a ticket this runtime opened and has not closed
        (the runtime needs no URL check for the server's own page)."""
        return self._open.get(url.rsplit("/", 1)[-1]) == url

    async def get(self, token: str) -> PageTicket | None:
        """The ticket of ``token`` in any state, or ``None`` when unknown, expired or
        forgotten (a token that cannot be one is not looked up).

        Raises:
            StoreUnavailable: the store cannot say now.
        """
        if _TOKEN.fullmatch(token) is None:
            await trio.lowlevel.checkpoint()
            return None
        shared = await self._store().get_ticket(token)
        return None if shared is None else PageTicket.from_shared(shared)

    async def claim(self, ticket: PageTicket) -> bool:
        """Take a bound, open ticket for one answer, on every replica at once; ``False``
        when it is not open (another answer took it, or it closed).

        Raises:
            StoreUnavailable: the store cannot say now.
        """
        return await self._store().claim_ticket(ticket.token)

    async def release(self, ticket: PageTicket) -> None:
        """Give a claimed ticket back (the answer was refused as invalid).

        Raises:
            StoreUnavailable: the store cannot say now.
        """
        await self._store().release_ticket(ticket.token)

    async def close(self, ticket: PageTicket) -> None:
        """The elicitation ended: the token now only says "expired or used". Never raises:
        a ticket the store cannot close now expires there on its own, and its page already
        says "expired" from its elicitation's status."""
        await self._close(ticket.token)

    async def _close(self, token: str) -> None:
        self._open.pop(token, None)
        with trio.move_on_after(_CLOSE_S) as scope:
            scope.shield = True
            try:
                await self._store().close_ticket(token)
            except StoreUnavailable:
                log.warning("page_ticket_not_closed", why="store unavailable")

    async def close_link(self, url: str) -> None:
        """Close the ticket whose link is ``url``, whichever replica opened it (a task taken
        over closes the links of its questions' earlier asking, on a replica that is gone);
        a URL that names no ticket is left alone. Never raises, as :meth:`close`."""
        token = url.rsplit("/", 1)[-1]
        if PAGE_PATH not in url or _TOKEN.fullmatch(token) is None:
            await trio.lowlevel.checkpoint()
            return
        await self._close(token)

    def __len__(self) -> int:
        """The tickets this runtime opened and has not closed."""
        return len(self._open)
