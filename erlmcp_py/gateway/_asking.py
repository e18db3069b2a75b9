"""An upstream's ``elicitation/create``, asked through the runtime as a local ``ctx.elicit`` is.

Theory of operation
-------------------
:meth:`Asker.elicit` takes the params of the upstream's request and asks the downstream user
with a :class:`~erlmcp_py.mcp.context.Context` over a :class:`~erlmcp_py.mcp.call_peer.CallPeer`
(in a session, the :class:`~erlmcp_py.mcp.session.RequestPeer` of the client request the
question relates to): the same path as a tool of this library, so the runtime decides
everything in its one place -- the client's capability, the schema for its version, the URL
policy and its DNS check, the sizes, the rate and pending limits of the downstream principal,
the deadline and its warning, strict validation and re-prompts, the hosted page for secrets.
What comes back is the answer for the upstream:

* form mode: the schema is read with :func:`~erlmcp_py.core.foreign_schema.read_foreign_schema`
  first (another SDK's harmless annotations, such as the official SDK's top-level ``title``,
  are dropped and logged), then asked with ``ctx.elicit``. ``Accepted`` is answered
  ``{"action": "accept", "content": …}`` with the validated content -- the upstream only ever
  receives a valid answer --, ``Declined`` ``{"action": "decline"}``, and every other end
  (the user cancelled, nobody answered in time, the answers stayed invalid after the
  re-prompts, the client left) ``{"action": "cancel"}``;
* a form with a sensitive field (:mod:`~erlmcp_py.core.sensitive`) is never sent in form
  mode: ``ctx.elicit`` asks it on the hosted page (Streamable HTTP), and without one it is
  refused to the upstream, naming the field;
* URL mode: ``ctx.begin_elicit_url`` in a task of the upstream connection (which owns the
  elicitation: it ends if the upstream goes away), through a peer that shows the client's
  answer as it arrives. The upstream is answered ``accept`` as soon as the user consents,
  ``decline`` or ``cancel`` otherwise; the elicitation stays open until the upstream sends
  ``notifications/elicitation/complete`` for its ``elicitationId``
  (:meth:`Asker.complete`, which completes it: the client gets the notification for the
  runtime's id) or its deadline passes.

Anything the runtime refuses to ask is a JSON-RPC error for the upstream
(:class:`~erlmcp_py.client.ClientRequestError`), and the user is not asked: a schema outside
the MCP form subset (``-32602`` naming the keyword and where), an unsafe URL (``-32602``
naming the refusal), a question over the size policy, a client that does not support the
mode (``-32601`` when it declared no elicitation at all, as such a client answers itself;
else ``-32602``), the rate or pending limits of the principal (``-32603`` with the reason and
``retryAfter``). ``error.data.reason`` names each case.

A question's own deadline may travel in the request's ``_meta`` under :data:`TIMEOUT_META`
(seconds); the runtime clamps it to the server's policy, as ``ctx.elicit(timeout=…)``.

Every question is written to the audit log (``gateway_question``): who was asked (the
principal and the user), what (the mode, the message's first characters, the field names,
the annotations dropped) and the outcome -- never the answer's values.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, Final

import structlog
import trio

from erlmcp_py.actors.api import ElicitationHandle
from erlmcp_py.actors.peer import PeerGone, PeerResponse
from erlmcp_py.actors.runtime import Runtime
from erlmcp_py.core.errors import (
    AlreadyTerminal,
    ElicitationNotFound,
    ErlmcpError,
    RateLimited,
    RequestTooLarge,
    SchemaNotAllowed,
    StoreUnavailable,
    TooManyElicitations,
    UnsafeURLError,
)
from erlmcp_py.core.foreign_schema import read_foreign_schema
from erlmcp_py.core.outcomes import Accepted, Declined, Outcome, Unsupported
from erlmcp_py.core.versions import SUPPORTED_VERSIONS
from erlmcp_py.gateway._peer import WatchedPeer
from erlmcp_py.mcp.call_peer import CallPeer
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.errors import ClientRequestError
from erlmcp_py.mcp.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, RequestId
from erlmcp_py.mcp.server import Server
from erlmcp_py.mcp.stopwatch import ToolClock
from supervisors import ActorError

__all__ = ["CANCEL", "TIMEOUT_META", "Asker", "Question", "UrlQuestions", "answer_for"]

log = structlog.get_logger("erlmcp.gateway.audit")

#: The ``_meta`` key of an ``elicitation/create`` that gives the question's own deadline in
#: seconds (clamped to the server's policy).
TIMEOUT_META: Final = "io.erlmcp/timeout"

ACCEPT: Final[Mapping[str, Any]] = {"action": "accept"}
DECLINE: Final[Mapping[str, Any]] = {"action": "decline"}
CANCEL: Final[Mapping[str, Any]] = {"action": "cancel"}


def answer_for(outcome: Outcome) -> dict[str, Any]:
    """The upstream's answer for the runtime's ``outcome`` (see the module docstring).

    Raises:
        ClientRequestError: ``Unsupported``: the client cannot be asked in that mode.
    """
    if isinstance(outcome, Accepted):
        content = outcome.content
        if isinstance(content, Mapping):
            return {"action": "accept", "content": dict(content)}
        return dict(ACCEPT)
    if isinstance(outcome, Declined):
        return dict(DECLINE)
    if isinstance(outcome, Unsupported):
        raise _unsupported(outcome.mode, declared_any=True)
    return dict(CANCEL)


def _unsupported(mode: str, *, declared_any: bool) -> ClientRequestError:
    if not declared_any:
        return ClientRequestError(
            METHOD_NOT_FOUND,
            "Method not found: the client declared no elicitation capability",
            {"reason": "unsupported", "mode": mode},
        )
    return ClientRequestError(
        INVALID_PARAMS,
        f"the client does not support {mode}-mode elicitation",
        {"reason": "unsupported", "mode": mode},
    )


def _bad_request(message: str) -> ClientRequestError:
    return ClientRequestError(
        INVALID_PARAMS, f"Invalid elicitation/create: {message}", {"reason": "invalid_params"}
    )


@dataclass(frozen=True, slots=True)
class Question:
    """An upstream's ``elicitation/create``, read.

    Attributes:
        mode: ``"form"`` or ``"url"``.
        message: What to ask.
        schema: Form mode: the ``requestedSchema`` as sent.
        url: URL mode: the page.
        elicitation_id: URL mode: the upstream's id of the elicitation.
        timeout: The question's own deadline in seconds (:data:`TIMEOUT_META`), if any.
    """

    mode: str
    message: str
    schema: Mapping[str, Any] = field(default_factory=dict)
    url: str = ""
    elicitation_id: str = ""
    timeout: float | None = None

    @classmethod
    def read(cls, params: Mapping[str, Any]) -> Question:
        """Read the params of an ``elicitation/create``.

        Raises:
            ClientRequestError: ``-32602``, naming what is missing or malformed.
        """
        mode = params.get("mode", "form")
        if mode not in ("form", "url"):
            raise _bad_request(f"unknown mode {str(mode)[:40]!r}")
        message = params.get("message")
        if not isinstance(message, str):
            raise _bad_request("'message' must be a string")
        meta = params.get("_meta")
        timeout = meta.get(TIMEOUT_META) if isinstance(meta, Mapping) else None
        if timeout is not None and (
            type(timeout) not in (int, float) or not 0 < timeout < math.inf
        ):
            raise _bad_request(f"_meta {TIMEOUT_META!r} must be a positive number of seconds")
        if mode == "url":
            url, eid = params.get("url"), params.get("elicitationId")
            if not isinstance(url, str) or not url:
                raise _bad_request("URL mode needs a 'url' string")
            if not isinstance(eid, str) or not eid:
                raise _bad_request("URL mode needs an 'elicitationId' string")
            return cls("url", message, url=url, elicitation_id=eid, timeout=timeout)
        schema = params.get("requestedSchema")
        if not isinstance(schema, Mapping):
            raise _bad_request("form mode needs a 'requestedSchema' object")
        return cls("form", message, schema=schema, timeout=timeout)


class UrlQuestions:
    """The URL-mode questions of one upstream connection still open: the upstream's
    ``elicitationId`` -> the runtime's elicitation id."""

    def __init__(self) -> None:
        self.open: dict[str, str] = {}


class _Decision:
    """The first answer decided for the upstream (the user's consent, or the outcome)."""

    def __init__(self) -> None:
        self.answer: dict[str, Any] | None = None
        self.decided = trio.Event()

    def offer(self, answer: Mapping[str, Any]) -> None:
        if self.answer is None:
            self.answer = dict(answer)
            self.decided.set()


class Asker:
    """Asks a downstream session's user the questions of its upstream (module docstring).

    Args:
        runtime: The elicitation runtime.
        server: The gateway's server (its URL policy; the hosted page names it).
    """

    def __init__(self, runtime: Runtime, server: Server) -> None:
        self.runtime = runtime
        self.server = server

    def _context(
        self, peer: CallPeer, request_id: RequestId, tool: str, *, tenant: Any, locale: str | None
    ) -> Context:
        return Context(
            peer=peer,
            runtime=self.runtime,
            url_policy=self.server.url_policy,
            server=self.server,
            tenant=tenant,
            request_id=request_id,
            tool_name=tool,
            clock=ToolClock(trio.CancelScope(), None),
            locale=locale,
        )

    async def elicit(
        self,
        params: Mapping[str, Any],
        *,
        peer: CallPeer,
        request_id: RequestId,
        tool: str,
        tenant: Any,
        locale: str | None,
        who: Mapping[str, Any],
        urls: UrlQuestions,
        nursery: trio.Nursery,
    ) -> dict[str, Any]:
        """Ask the question of an upstream's ``elicitation/create``; the upstream's answer.

        Args:
            params: The request's params.
            peer: Whom to ask (the downstream client, for the related request).
            request_id: The client request the question is asked for (or the upstream's id
                of its request, when no client request is known).
            tool: What the hosted page names as asking (the related tool's name).
            tenant: The downstream session's tenant.
            locale: The downstream client's language.
            who: The audit log's fields naming the downstream principal.
            urls: The upstream connection's open URL-mode questions.
            nursery: The upstream connection's nursery (a URL-mode question waits there for
                its completion).

        Raises:
            ClientRequestError: the runtime refused to ask (see the module docstring).
        """
        question = Question.read(params)
        if not peer.capabilities.elicitation_modes:
            error = _unsupported(question.mode, declared_any=False)
            _audit(who, question, None, error=error)
            raise error
        ctx = self._context(peer, request_id, tool, tenant=tenant, locale=locale)
        try:
            if question.mode == "url":
                answer = await self._ask_url(question, peer, ctx, urls, nursery, who)
                return answer
            outcome, dropped = await self._ask_form(question, peer, ctx)
        except ErlmcpError as exc:
            error = _refusal(exc)
            _audit(who, question, None, error=error)
            raise error from None
        except ActorError as exc:
            error = ClientRequestError(
                INTERNAL_ERROR,
                f"the gateway cannot ask now: {exc}",
                {"reason": "runtime_unavailable"},
            )
            _audit(who, question, None, error=error)
            raise error from None
        _audit(who, question, outcome, dropped=dropped)
        return answer_for(outcome)

    async def ask_form(
        self,
        message: str,
        form: Mapping[str, Any],
        *,
        peer: CallPeer,
        request_id: RequestId,
        tool: str,
        tenant: Any,
        locale: str | None,
    ) -> Outcome:
        """Ask the gateway's own question (a form in the MCP subset) as a tool's
        ``ctx.elicit`` does; its outcome.

        Raises:
            ErlmcpError: the runtime refused to ask (as ``Context.elicit`` raises).
            ActorError: the runtime cannot ask now.
        """
        ctx = self._context(peer, request_id, tool, tenant=tenant, locale=locale)
        return await ctx.elicit(message, dict(form))

    async def _ask_form(
        self, question: Question, peer: CallPeer, ctx: Context
    ) -> tuple[Outcome, tuple[str, ...]]:
        version = peer.protocol_version
        if version not in SUPPORTED_VERSIONS:
            raise ClientRequestError(
                INVALID_PARAMS,
                f"the client's protocol version {version[:40]} has no elicitation",
                {"reason": "unsupported", "mode": "form"},
            )
        foreign = read_foreign_schema(question.schema)
        schema = foreign.schema
        if "properties" not in schema:
            raise SchemaNotAllowed("", "properties", "must be an object of property schemas")
        outcome = await ctx.elicit(question.message, schema, timeout=question.timeout)
        return outcome, foreign.dropped

    async def _ask_url(
        self,
        question: Question,
        peer: CallPeer,
        ctx: Context,
        urls: UrlQuestions,
        nursery: trio.Nursery,
        who: Mapping[str, Any],
    ) -> dict[str, Any]:
        decision = _Decision()

        def on_answer(response: PeerResponse) -> None:
            if isinstance(response, Mapping) and response.get("action") == "accept":
                decision.offer(ACCEPT)  # the user consented: the upstream may go on

        ctx = self._context(
            WatchedPeer(peer, on_answer),
            ctx.request_id,
            ctx.tool_name,
            tenant=ctx.tenant,
            locale=ctx.locale,
        )
        started: ElicitationHandle | Unsupported = await nursery.start(
            self._url_question, ctx, question, decision, urls, who
        )
        if isinstance(started, Unsupported):
            raise _unsupported("url", declared_any=True)
        try:
            await decision.decided.wait()
        except trio.Cancelled:  # the upstream withdrew its request before it was decided
            ended = (AlreadyTerminal, ElicitationNotFound, StoreUnavailable, ActorError)
            with trio.CancelScope(shield=True), trio.move_on_after(5), suppress(*ended):
                await self.runtime.cancel_elicitation(started.id, tenant=ctx.tenant)
            raise
        assert decision.answer is not None
        return decision.answer

    async def _url_question(
        self,
        ctx: Context,
        question: Question,
        decision: _Decision,
        urls: UrlQuestions,
        who: Mapping[str, Any],
        *,
        task_status: trio.TaskStatus[ElicitationHandle | Unsupported],
    ) -> None:
        """Create the URL-mode elicitation (this task owns it: it ends with the upstream
        connection) and wait for its outcome."""
        handle = await ctx.begin_elicit_url(
            question.message, question.url, timeout=question.timeout
        )
        if isinstance(handle, Unsupported):
            task_status.started(handle)
            return
        urls.open[question.elicitation_id] = handle.id
        task_status.started(handle)
        try:
            outcome = await handle.outcome()
        finally:
            if urls.open.get(question.elicitation_id) == handle.id:
                del urls.open[question.elicitation_id]
        _audit(who, question, outcome)
        try:
            decision.offer(answer_for(outcome))
        except ClientRequestError:  # pragma: no cover - an open elicitation is never Unsupported
            decision.offer(CANCEL)

    async def relay(
        self, method: str, params: Mapping[str, Any], *, peer: CallPeer, tenant: Any
    ) -> dict[str, Any]:
        """Pass another request of the upstream (``sampling/createMessage``, ``roots/list``,
        ``ping``…) to the client as it is, and return the client's result. It waits at most
        as long as the longest elicitation deadline of the policy; withdrawn (the upstream
        cancelled it, or nobody answered in time), the client is told to drop it.

        Raises:
            ClientRequestError: the client's error, or why no answer came (``data.reason``:
                ``client_gone``, ``timeout``).
        """
        ctx = self._context(peer, "upstream", "upstream", tenant=tenant, locale=None)
        lifecycle = self.runtime.policy.lifecycle
        timeout = max(lifecycle.form_deadline_s, lifecycle.url_deadline_s)
        try:
            return await ctx.request(method, params, timeout=timeout)
        except PeerGone:
            raise ClientRequestError(
                INTERNAL_ERROR, "the client is gone", {"reason": "client_gone"}
            ) from None
        except trio.TooSlowError:
            raise ClientRequestError(
                INTERNAL_ERROR,
                f"the client did not answer {method[:80]} in {timeout:g} s",
                {"reason": "timeout"},
            ) from None

    async def complete(self, urls: UrlQuestions, elicitation_id: object, tenant: Any) -> bool:
        """The upstream's ``notifications/elicitation/complete``: complete the elicitation
        its ``elicitationId`` names (the client is sent the notification for the runtime's
        id). Returns whether one was open."""
        if not isinstance(elicitation_id, str):
            return False
        rid = urls.open.pop(elicitation_id, None)
        if rid is None:
            return False
        try:
            await self.runtime.complete_elicitation(rid, None, tenant=tenant)
        except (ErlmcpError, ActorError) as exc:
            log.info("gateway_completion_ignored", elicitation_id=rid, why=type(exc).__name__)
            return False
        return True

    async def end_url_questions(self, urls: UrlQuestions, tenant: Any, *, completed: bool) -> None:
        """End every URL-mode question still open in ``urls``: completed (the upstream has
        answered the call they were asked for, so it waits for no page any more), or
        cancelled (the call ended without an answer)."""
        ended = (AlreadyTerminal, ElicitationNotFound, StoreUnavailable, ActorError)
        with trio.CancelScope(shield=True), trio.move_on_after(5):
            for upstream_id in list(urls.open):
                if completed:
                    await self.complete(urls, upstream_id, tenant)
                    continue
                rid = urls.open.pop(upstream_id)
                with suppress(*ended):
                    await self.runtime.cancel_elicitation(rid, tenant=tenant)


def _refusal(exc: ErlmcpError) -> ClientRequestError:
    """The upstream's error for what the runtime refused (module docstring)."""
    if isinstance(exc, ClientRequestError):
        return exc
    if isinstance(exc, SchemaNotAllowed):
        if exc.keyword == "mode":  # a secret, and no hosted page to ask it on
            return ClientRequestError(
                INVALID_PARAMS,
                f"refused: {exc.detail}",
                {"reason": "sensitive_field", "detail": exc.detail},
            )
        where = exc.path or "/"
        return ClientRequestError(
            INVALID_PARAMS,
            f"requestedSchema is outside the MCP form subset: {exc.keyword!r} at {where}"
            + (f" ({exc.detail})" if exc.detail else ""),
            {"reason": "schema_not_allowed", "keyword": exc.keyword, "path": where},
        )
    if isinstance(exc, UnsafeURLError):
        return ClientRequestError(
            INVALID_PARAMS,
            f"URL refused: {exc}",
            {"reason": "unsafe_url", "refusal": exc.reason},
        )
    if isinstance(exc, RequestTooLarge):
        return ClientRequestError(
            INVALID_PARAMS,
            f"the {exc.part} is too large: {exc.size} bytes, the limit is {exc.limit}",
            {"reason": "too_large", "part": exc.part, "size": exc.size, "limit": exc.limit},
        )
    if isinstance(exc, RateLimited):
        return ClientRequestError(
            INTERNAL_ERROR,
            f"too many questions for this user; retry in {exc.retry_after:.1f} s",
            {"reason": "rate_limited", "retryAfter": exc.retry_after},
        )
    if isinstance(exc, TooManyElicitations):
        return ClientRequestError(
            INTERNAL_ERROR,
            f"too many open questions ({exc.scope} limit {exc.limit})",
            {"reason": "too_many_elicitations", "scope": exc.scope, "limit": exc.limit},
        )
    return ClientRequestError(
        INTERNAL_ERROR, f"the gateway cannot ask now: {exc}", {"reason": "runtime_unavailable"}
    )


def _audit(
    who: Mapping[str, Any],
    question: Question,
    outcome: Outcome | None,
    *,
    error: ClientRequestError | None = None,
    dropped: tuple[str, ...] = (),
) -> None:
    """One audit line: who was asked what, and the outcome; never an answer's value."""
    fields: dict[str, Any] = {"mode": question.mode, "message": question.message[:120]}
    props = question.schema.get("properties") if question.mode == "form" else None
    if isinstance(props, Mapping):
        fields["fields"] = [str(name)[:80] for name in list(props)[:50]]
    if question.mode == "url":
        fields["upstream_elicitation_id"] = question.elicitation_id[:80]
    if dropped:
        fields["annotations_dropped"] = list(dropped)
    if error is not None:
        reason = error.data.get("reason") if isinstance(error.data, Mapping) else None
        log.info("gateway_question", **who, **fields, outcome="refused", reason=reason)
        return
    assert outcome is not None
    detail = getattr(outcome, "reason", None) or getattr(outcome, "by", None)
    log.info("gateway_question", **who, **fields, outcome=type(outcome).__name__, detail=detail)
