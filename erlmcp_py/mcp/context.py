"""The ``Context`` a tool receives: ask the user (form or URL mode), report progress, log.

Theory of operation
-------------------
``await ctx.elicit(message, form)`` turns ``form`` into a wire ``requestedSchema`` for the
call's protocol version, a checked :class:`~erlmcp_py.core.schema.RequestedSchema` (a Python
type through :func:`~erlmcp_py.core.typeschema.schema_for`, cached per type and version; a
form of the form definition language through :func:`~erlmcp_py.core.forms.compile_form`; or
a raw wire schema dict, checked once and down-levelled), and hands an
:class:`~erlmcp_py.actors.api.ElicitationRequest` to the
:class:`~erlmcp_py.actors.runtime.Runtime` through the call's
:class:`~erlmcp_py.mcp.call_peer.CallPeer`, with the tool's task as owner. The runtime decides
the rest in one place: the client's declared capability (none → ``Unsupported`` and nothing is
sent), the schema for the peer's version, the URL (its policy and one DNS resolution), the
sizes. A question's own deadline (``timeout=`` in seconds on every ``elicit*`` method, or a
form definition's ``timeout`` in milliseconds) is checked where the request is made and travels
in it; the runtime clamps it to the server's policy. While the outcome is pending the tool's
own clock is paused. An ``Accepted`` answer to a typed form is an instance of the type (a model
instance, an enum member, a bare value): the runtime's validation made it, running the type's
own validators once, and a refusal of theirs was a re-prompt like any other.

A question that may not go out in form mode -- a secret, by
:mod:`~erlmcp_py.core.sensitive` (``SecretStr``, ``format: password``, ``writeOnly``, the
name list of the server's policy), or a form definition that needs URL mode -- is asked on
the server's hosted page instead: a URL-mode elicitation whose URL is a single-use ticket of
``runtime.pages`` (served by the HTTP transport at ``/elicit/{token}``), closed when the
elicitation ends; on 2026-07-28 it is a question of the round like any other. Without a page it
is refused (``SchemaNotAllowed`` naming the field and why).
On 2026-07-28 the page's answer reaches the suspended call that asked, in this process: a
server that keeps no call between rounds (``mrtr="replay"``) refuses such a question the same
way, and a call replayed elsewhere asks it again on that process's page (docs/mrtr.md).

A task's question (docs/tasks.md) also gets a *link* where the page is served and the policy
gives links (``task_page_links``): a form question opens a ticket of its own before it is
asked, and the ticket's URL travels in the request's ``_meta`` (``io.erlmcp/pageUrl``; a
secret's page URL too), so that whoever it is sent to may answer on the page. The ticket is
bound to the elicitation, answers through the runtime like the secret's page (the same
validation; an answer there completes the question as a ``tasks/update`` would), and is closed
when the question ends, however it ends.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field, replace
from typing import Any, Final, Protocol

import structlog
import trio

from erlmcp_py.actors.api import AnswerValidator, ElicitationHandle, ElicitationRequest
from erlmcp_py.actors.pages import PAGE_URL_META, PageQuestion, PageTicket
from erlmcp_py.actors.peer import (
    AnswerTooLarge,
    Peer,
    PeerError,
    PeerGone,
    PeerResponse,
    Recorded,
)
from erlmcp_py.actors.runtime import Runtime
from erlmcp_py.core.errors import SchemaNotAllowed, StoreUnavailable
from erlmcp_py.core.forms import (
    CompiledForm,
    FileField,
    FormDefinition,
    MultiSelectField,
    Option,
    SelectField,
    compile_form,
    validate_form_answer,
)
from erlmcp_py.core.outcomes import Accepted, Outcome, Tenant, Unsupported
from erlmcp_py.core.schema import (
    RequestedSchema,
    boolean_field,
    enum_field,
    multi_select_field,
    string_field,
)
from erlmcp_py.core.sensitive import (
    SensitiveField,
    form_type_sensitive_fields,
    schema_sensitive_fields,
    strip_sensitive_markers,
)
from erlmcp_py.core.typeschema import FormType, schema_for
from erlmcp_py.core.urlpolicy import UrlPolicy
from erlmcp_py.core.validation import ValidationResult, compile_validator
from erlmcp_py.mcp.call_peer import CallPeer, TaskStarter
from erlmcp_py.mcp.client_results import (
    Root,
    SampledMessage,
    parse_create_message_result,
    parse_list_roots_result,
)
from erlmcp_py.mcp.errors import CapabilityMissing, ClientRequestError
from erlmcp_py.mcp.jsonrpc import INVALID_REQUEST
from erlmcp_py.mcp.params import LOG_LEVELS
from erlmcp_py.mcp.stopwatch import ToolClock
from erlmcp_py.mcp.versions import ClientCapabilities

__all__ = ["Context", "ToolServer"]

log = structlog.get_logger("erlmcp.context")

FormLike = type | FormType[Any] | FormDefinition | CompiledForm | Mapping[str, Any]
"""What ``ctx.elicit`` accepts as a form (see :meth:`Context.elicit`)."""

Options = Sequence[str] | Mapping[str, str] | Sequence[tuple[str, str]]


@dataclass(frozen=True, slots=True)
class _FormValidator:
    """Adapts a compiled form (the form definition language) to the runtime's
    ``validate(content)`` protocol."""

    compiled: CompiledForm

    def validate(self, content: object) -> ValidationResult:
        return validate_form_answer(self.compiled, content)

    def url_values(self, content: Mapping[str, Any]) -> list[tuple[str, str]]:
        return self.compiled.url_values(content)


@dataclass(frozen=True, slots=True)
class _Prepared:
    """What elicit() sends and checks with. ``schema`` is ``None`` when the form may not go
    out in form mode (``needs_page`` says why): it is asked on the hosted page, which renders
    ``page_schema`` with ``widgets`` (as it renders a task's question from its link)."""

    schema: RequestedSchema | None
    validator: AnswerValidator
    page_schema: Mapping[str, Any] = field(default_factory=dict)
    widgets: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    needs_page: str | None = None
    timeout: float | None = None  # the form's own deadline in seconds (a form definition's)


def _on_page(
    schema: Mapping[str, Any],
    validator: AnswerValidator,
    found: tuple[SensitiveField, ...],
) -> _Prepared:
    return _Prepared(
        None,
        validator,
        page_schema=schema,
        widgets={f.name: {"sensitive": True} for f in found},
        needs_page="; ".join(f.describe() for f in found),
    )


def _form_widgets(compiled: CompiledForm) -> dict[str, dict[str, Any]]:
    """The page's rendering facts of a form definition's fields (file inputs, text areas,
    password inputs, placeholders)."""
    out: dict[str, dict[str, Any]] = {}
    for f in compiled.form.fields:
        if f.rendering.hidden:
            continue
        w: dict[str, Any] = {}
        if isinstance(f, FileField):
            w["kind"] = "file"
            rules = f.validation
            accept = [*(rules.allowed_extensions or ()), *(rules.allowed_mime_types or ())]
            if accept:
                w["accept"] = ",".join(accept)
        elif f.id in compiled.url_mode_fields:
            w["sensitive"] = True
        elif f.type == "text" and f.rendering.rows:
            w["kind"] = "textarea"
            w["rows"] = f.rendering.rows
        if isinstance(f, SelectField | MultiSelectField):
            w["titles"] = {o.value: o.title for o in f.options if isinstance(o, Option) and o.title}
        if f.rendering.placeholder:
            w["placeholder"] = f.rendering.placeholder
        if f.rendering.help_text:
            w["help"] = f.rendering.help_text
        out[f.id] = w
    return out


def _titled(options: Options) -> dict[str, str]:
    if isinstance(options, Mapping):
        return {str(k): str(v) for k, v in options.items()}
    out: dict[str, str] = {}
    for item in options:
        if isinstance(item, str):
            value, _, title = item.partition(":")  # the mcp-bash-style "val1:Label 1"
            out[value] = title or value
        else:
            value, title = item
            out[value] = title
    return out


#: Seconds a ``notifications/cancelled`` for an abandoned request of ours may take to send.
_CANCEL_NOTICE_S = 5.0

#: What names a bad ``timeout`` of a question in its error: the ``elicit*`` methods' parameter.
_TIMEOUT: Final = "timeout"


async def _tell_cancelled(peer: Peer, request_id: str, reason: str) -> None:
    """Tell a session's client we no longer wait for ``request_id`` (2026-07-28 has no
    server→client request to cancel: its peer sends nothing)."""
    with suppress(PeerGone):
        await peer.send_notification(
            "notifications/cancelled", {"requestId": request_id, "reason": reason}
        )


class ToolServer(Protocol):
    """What a call's :class:`Context` sees of the server it runs on: the names its hosted
    page shows, and the resource notifications a tool may send. A
    :class:`~erlmcp_py.mcp.server.Server` is one."""

    @property
    def name(self) -> str:
        """The server's name (``serverInfo.name``)."""
        ...

    @property
    def title(self) -> str | None:
        """The server's display name (``serverInfo.title``), if any."""
        ...

    def tool_title(self, name: str) -> str | None:
        """The display title of the tool ``name``, if it has one."""
        ...

    async def notify_resource_updated(self, uri: str) -> int:
        """Tell every client subscribed to ``uri`` that it changed; how many were told."""
        ...


class Context:
    """Per-call services for a tool. Annotate a tool parameter with it to receive one.

    Args:
        peer: The client as this call sees it (the session's request peer, or a 2026-07-28
            call's :class:`~erlmcp_py.mcp.mrtr.MrtrPeer`): everything the call asks and
            notifies goes through it.
        runtime: The elicitation runtime that asks.
        url_policy: The policy of a form definition's URL fields (the server's).
        server: What the call sees of its server (:attr:`server`; the hosted page names it
            and the tool when it asks).
        task_starter: What makes the call a task when the tool says so
            (:meth:`start_task`); ``None`` where it cannot become one.

    Attributes:
        request_id: The JSON-RPC id of the ``tools/call``.
        tool_name: The tool being called.
        tenant: The tenant scope of every runtime call made for this client.
        runtime: The elicitation runtime (e.g. for ``complete_elicitation``).
        clock: The tool's time budget (paused while an elicitation is pending).
        locale: The language the client asked for (``"en-US"`` or ``"pt-BR"``: declared in
            ``_meta``, else its HTTP ``Accept-Language``), or ``None`` (the server's default).
            The runtime says what it says about this call's questions (re-prompts, deadline
            warnings) in it; a tool may use it for its own texts.
    """

    __slots__ = (
        "_last_progress",
        "_peer",
        "_server",
        "_task_starter",
        "_url_policy",
        "clock",
        "locale",
        "request_id",
        "runtime",
        "tenant",
        "tool_name",
    )

    def __init__(
        self,
        *,
        peer: CallPeer,
        runtime: Runtime,
        url_policy: UrlPolicy,
        server: ToolServer,
        tenant: Tenant,
        request_id: str | int,
        tool_name: str,
        clock: ToolClock,
        locale: str | None = None,
        task_starter: TaskStarter | None = None,
    ) -> None:
        self._peer = peer
        self._task_starter = task_starter
        self.runtime = runtime
        self._url_policy = url_policy
        self._server = server
        self.locale = locale
        self.tenant = tenant
        self.request_id = request_id
        self.tool_name = tool_name
        self.clock = clock
        self._last_progress: dict[str | int, float] | None = None  # per token, once reported

    # -- what the client is -------------------------------------------------------------------

    @property
    def progress_token(self) -> str | int | None:
        """The ``_meta.progressToken`` of the request this call reports progress to, if any.

        Session era: the ``tools/call``'s, for the whole call. 2026-07-28: the call spans
        requests (the first ``tools/call``, then a retry per round), and each may carry its
        own token, the same one, or none. This is the token of the request attached to the
        call right now; between rounds, while the tool waits for the retry, the token of the
        latest request (progress reported then is dropped: its response has gone).
        """
        return self._peer.progress_token

    @property
    def protocol_version(self) -> str:
        """The negotiated protocol version."""
        return self._peer.protocol_version

    @property
    def peer_id(self) -> str:
        """The id of this client's connection."""
        return self._peer.peer_id

    def supports(self, mode: str) -> bool:
        """Whether the client declared elicitation in ``mode`` (``"form"`` or ``"url"``)."""
        return self._peer.supports(mode)

    @property
    def client_capabilities(self) -> ClientCapabilities:
        """What the client declared (``initialize``, or this request's ``_meta`` on 2026-07-28)."""
        return self._peer.capabilities

    @property
    def server(self) -> ToolServer:
        """The server this tool runs on (e.g. for ``notify_resource_updated``)."""
        return self._server

    # -- tasks ----------------------------------------------------------------------------------

    @property
    def task_id(self) -> str | None:
        """The id of the task this call runs as (the ``io.modelcontextprotocol/tasks``
        extension, ``docs/tasks.md``), or ``None``. A task's questions have the task
        policy's deadlines (hours), and the client reads and answers them by polling."""
        return self._peer.task_id

    async def start_task(self) -> bool:
        """Run the rest of this call as a task, for a tool registered with
        ``task_start="tool"``: what it asked so far went out in the call's own rounds (on
        2026-07-28, ``InputRequiredResult``), and the request being answered now gets the
        ``CreateTaskResult``; from here on its questions are the task's. Call it between
        questions, never while one is being asked.

        Returns:
            Whether the call runs as a task from here on: already one, or one now. ``False``
            when it cannot become one: the tool does not run as a task, the request's client
            did not declare the extension (or speaks 2025-11-25, where it does not exist);
            the call then goes on as a call.

        Raises:
            JsonRpcError: the task cannot be made (tasks full, the store cannot record it),
                or the tool requires a task and the client did not declare the extension;
                the call answers this error.
            RuntimeError: a question of this call is being asked right now.
        """
        if self._peer.task_id is not None or self._task_starter is None:
            await trio.lowlevel.checkpoint()
            return self._peer.task_id is not None
        peer = await self._task_starter.start(self._peer)
        if peer is None:
            return False
        self._peer = peer
        self._task_starter = None
        return True

    # -- other requests to the client ---------------------------------------------------------

    async def request(
        self,
        method: str,
        params: Mapping[str, Any],
        *,
        timeout: float = 60.0,
        key: str | None = None,
    ) -> dict[str, Any]:
        """Send a request to the client on behalf of this call and wait for its result.

        In a session it travels as a server→client request (on Streamable HTTP, on the
        stream of the ``tools/call`` or ``prompts/get``); on 2026-07-28 it becomes an input
        request of the ``InputRequiredResult`` (the retry answers it). The tool's clock
        pauses while the client is asked. Prefer the typed helpers (:meth:`elicit`,
        :meth:`sample`, :meth:`list_roots`): this one checks no capability and no result.

        When the call is cancelled (or the timeout passes) the wait ends, and a session's
        client gets ``notifications/cancelled`` for the request.

        Args:
            method: E.g. ``"sampling/createMessage"`` or ``"roots/list"``.
            params: The request's params.
            timeout: Seconds to wait for the answer.
            key: On 2026-07-28, the key of this request in ``inputRequests`` (default: a
                generated one, e.g. ``sampling-1``). Ignored in a session.

        Returns:
            The client's ``result`` object.

        Raises:
            ClientRequestError: the client answered with a JSON-RPC error.
            PeerGone: the client went away.
            trio.TooSlowError: no answer in time.
        """
        peer = self._keyed_peer(key)
        request_id = f"{method.replace('/', '-')[:40]}-{secrets.token_hex(8)}"
        done = trio.Event()
        answer: list[PeerResponse] = []

        def on_response(response: PeerResponse) -> None:
            answer.append(response)
            done.set()

        try:
            with peer.asking, self.clock.pause(), trio.move_on_after(timeout):
                await peer.send_request(
                    method, dict(params), request_id=request_id, on_response=on_response
                )
                await done.wait()
        except trio.Cancelled:
            if not answer:
                with trio.CancelScope(shield=True), trio.move_on_after(_CANCEL_NOTICE_S):
                    await _tell_cancelled(peer, request_id, "cancelled")
            raise
        finally:
            peer.forget_request(request_id)
        if not answer:
            with trio.move_on_after(_CANCEL_NOTICE_S):
                await _tell_cancelled(peer, request_id, "timed out")
            raise trio.TooSlowError(f"the client did not answer {method} in {timeout:g} s")
        response = answer[0]
        if isinstance(response, Recorded):  # a replay hands back what the client answered
            return dict(response.result)
        if isinstance(response, PeerError):
            raise ClientRequestError(response.code, response.message, response.data)
        if isinstance(response, PeerGone):
            raise response
        if isinstance(response, AnswerTooLarge):
            raise ClientRequestError(
                INVALID_REQUEST,
                f"the client's answer was over the frame limit of {response.limit} bytes",
                {"reason": "answer_too_large", "size": response.size, "limit": response.limit},
            )
        return dict(response)

    async def sample(
        self,
        messages: str | Sequence[Mapping[str, Any]],
        *,
        max_tokens: int,
        system_prompt: str | None = None,
        temperature: float | None = None,
        stop_sequences: Sequence[str] | None = None,
        model_preferences: Mapping[str, Any] | None = None,
        include_context: str | None = None,
        timeout: float = 60.0,
        key: str | None = None,
    ) -> SampledMessage:
        """Ask the client's LLM for a message (``sampling/createMessage``).

        Args:
            messages: A prompt (one user text message) or the ``SamplingMessage`` list.
            max_tokens: ``maxTokens``.
            system_prompt: ``systemPrompt``.
            temperature: ``temperature``.
            stop_sequences: ``stopSequences``.
            model_preferences: ``modelPreferences``.
            include_context: ``includeContext`` (``none``, ``thisServer``, ``allServers``).
            timeout: Seconds to wait for the answer.
            key: On 2026-07-28, the key of this request in ``inputRequests``.

        Returns:
            The client's answer: ``role``, ``content``, ``model``, ``stop_reason`` (and
            ``text``, the first text block's).

        Raises:
            CapabilityMissing: the client did not declare ``sampling`` (nothing was sent).
            InvalidClientResult: the answer is not a ``CreateMessageResult``.
            ClientRequestError, PeerGone, trio.TooSlowError: as for :meth:`request`.
        """
        if not self.client_capabilities.sampling:
            raise CapabilityMissing("sampling")
        if isinstance(messages, str):
            messages = [{"role": "user", "content": {"type": "text", "text": messages}}]
        params: dict[str, Any] = {"messages": [dict(m) for m in messages], "maxTokens": max_tokens}
        optional = {
            "systemPrompt": system_prompt,
            "temperature": temperature,
            "stopSequences": list(stop_sequences) if stop_sequences is not None else None,
            "modelPreferences": dict(model_preferences) if model_preferences else None,
            "includeContext": include_context,
        }
        params.update({k: v for k, v in optional.items() if v is not None})
        result = await self.request("sampling/createMessage", params, timeout=timeout, key=key)
        return parse_create_message_result(result)

    async def list_roots(
        self, *, timeout: float = 60.0, key: str | None = None
    ) -> tuple[Root, ...]:
        """Ask the client for its roots (``roots/list``).

        Args:
            timeout: Seconds to wait for the answer.
            key: On 2026-07-28, the key of this request in ``inputRequests``.

        Returns:
            The roots (``uri``, ``name``), in the client's order.

        Raises:
            CapabilityMissing: the client did not declare ``roots`` (nothing was sent).
            InvalidClientResult: the answer is not a ``ListRootsResult``.
            ClientRequestError, PeerGone, trio.TooSlowError: as for :meth:`request`.
        """
        if not self.client_capabilities.roots:
            raise CapabilityMissing("roots")
        result = await self.request("roots/list", {}, timeout=timeout, key=key)
        return parse_list_roots_result(result)

    # -- form mode ----------------------------------------------------------------------------

    def _prepare(self, form: FormLike) -> _Prepared:
        """``form`` as the wire schema for this call's protocol version and its validator, or
        as a question for the hosted page.

        Raises:
            SchemaNotAllowed: the form is outside the MCP subset, or cannot be expressed for
                this call's version (``inexpressible_in``).
            TypeError: the type cannot be a form.
        """
        version = self._peer.protocol_version
        names = self.runtime.sensitive_names
        if isinstance(form, type):  # the common case, first: a class is never a FormType
            form = schema_for(form)
        if isinstance(form, FormType):
            found = form_type_sensitive_fields(form, names)
            if found:
                return _on_page(form.schema, form, found)
            return _Prepared(form.requested_schema(version), form, page_schema=form.schema)
        if isinstance(form, FormDefinition | CompiledForm):
            compiled = (
                form
                if isinstance(form, CompiledForm) and form.version == version
                else compile_form(
                    form.form if isinstance(form, CompiledForm) else form,
                    version,
                    sensitive_names=names,
                    url_policy=self._url_policy,
                )
            )
            if compiled.requested_schema is None:
                return _Prepared(
                    None,
                    _FormValidator(compiled),
                    page_schema=compiled.validation_schema,
                    widgets=_form_widgets(compiled),
                    needs_page=compiled.needs_url_mode,
                    timeout=compiled.timeout_s,
                )
            return _Prepared(
                compiled.requested_schema,
                _FormValidator(compiled),
                page_schema=compiled.validation_schema,
                widgets=_form_widgets(compiled),
                timeout=compiled.timeout_s,
            )
        if isinstance(form, Mapping):
            if "fields" in form and "properties" not in form:
                return self._prepare(
                    compile_form(
                        form,
                        version,
                        sensitive_names=names,
                        url_policy=self._url_policy,
                    )
                )
            found = schema_sensitive_fields(form, names)
            checked = RequestedSchema(strip_sensitive_markers(form))
            if found:
                return _on_page(checked, compile_validator(checked), found)
            wire = checked.for_version(version)
            return _Prepared(wire, compile_validator(wire), page_schema=checked)
        return self._prepare(schema_for(form))

    async def elicit(
        self,
        message: str,
        form: FormLike,
        *,
        key: str | None = None,
        timeout: float | None = None,
    ) -> Outcome:
        """Ask the user to fill in a form and wait for the one outcome.

        Args:
            message: What to ask, shown to the user.
            form: A Python type (pydantic model, dataclass, TypedDict, or a bare field type
                such as ``bool`` or ``Literal[...]``), a :class:`FormType`, a form definition
                language form (``FormDefinition``, ``CompiledForm`` or its dict), or a raw
                ``requestedSchema`` dict written for 2025-11-25.
            key: On 2026-07-28, the key of this request in the ``InputRequiredResult``'s
                ``inputRequests`` (default: a generated one, e.g. ``elicitation-1``); a
                re-prompt keeps it. Ignored in a session, where requests have JSON-RPC ids.
            timeout: This question's deadline in seconds (default: a form definition's own
                ``timeout``, else the server's policy). The server clamps it to its policy's
                deadline and warns at the same proportion of it; extensions apply as usual.

        Returns:
            ``Accepted(content)`` (for a type: an instance of it, or the bare value;
            otherwise the validated dict with defaults) | ``Declined`` | ``Cancelled`` |
            ``TimedOut`` | ``Unsupported`` (the client cannot show this form; nothing was
            sent) | ``Failed(reason)``.

        A form with a secret (see the module docstring) is asked on the server's hosted page
        in URL mode (``Unsupported("url")`` when the client has no URL mode).

        Raises:
            SchemaNotAllowed: the form is outside the MCP subset, or asks for a secret and the
                server serves no hosted page, or (2026-07-28) keeps no call between rounds
                for the page to answer (the message names the field and why).
            TypeError: the type cannot be a form, or ``timeout`` is not a number.
            ValueError: ``timeout`` is not a positive, finite number of seconds.
            RateLimited, TooManyElicitations: the runtime refused to ask now.
        """
        peer = self._keyed_peer(key)
        try:
            prepared = self._prepare(form)
        except SchemaNotAllowed as exc:
            if exc.inexpressible_in is not None:
                return Unsupported("form")  # e.g. a multi-select for a 2025-06-18 client
            raise
        deadline = prepared.timeout if timeout is None else timeout
        if prepared.schema is None:
            return await self._ask_on_page(message, prepared, peer, deadline)
        request = ElicitationRequest(
            message,
            "form",
            requested_schema=prepared.schema,
            validator=prepared.validator,
            timeout=deadline,
            locale=self.locale,
            timeout_name=_TIMEOUT,
        )
        # The tool clock pauses while the human is asked. Created and awaited here, in the
        # tool's own frame: a pending question keeps no frame of a helper.
        with peer.asking, self.clock.pause():
            link = await self._open_task_link(message, prepared, peer)
            try:
                if link is not None:
                    request = replace(request, meta={PAGE_URL_META: link.url})
                handle = await self.runtime.create_elicitation(
                    request,
                    peer=peer,
                    tenant=self.tenant,
                    charge=peer.count_question(),
                    for_task=peer.task_id is not None,
                )
                if link is not None and handle.unsupported is None:
                    await self._bind_task_link(link, handle.id)
                return await handle.outcome()
            finally:
                if link is not None:
                    await self.runtime.pages.close(link)

    def _page_question(self, message: str, prepared: _Prepared) -> PageQuestion:
        """What the hosted page shows of this question, naming the server and the tool."""
        server = self._server
        return PageQuestion(
            message,
            prepared.page_schema,
            prepared.widgets,
            server=server.title or server.name,
            tool=server.tool_title(self.tool_name) or self.tool_name,
        )

    def _task_links(self, peer: CallPeer) -> bool:
        """Whether this question gets a link of the hosted page that answers it: it is a
        task's, the server gives links (``task_page_links``) and serves the page."""
        return (
            peer.task_id is not None
            and self.runtime.config.task_page_links
            and self.runtime.pages.available
        )

    async def _open_task_link(
        self, message: str, prepared: _Prepared, peer: CallPeer
    ) -> PageTicket | None:
        """The ticket of a task's form question: anyone holding its link may answer the
        question on the hosted page (single use, bound to this question and its tenant,
        closed when the question ends). ``None`` for any other question, and when the store
        cannot keep a ticket now: the question goes out without a link."""
        if not self._task_links(peer):
            return None
        try:
            return await self.runtime.pages.open(
                self._page_question(message, prepared), self.tenant
            )
        except StoreUnavailable:
            log.warning("task_link_not_opened", task=str(peer.task_id)[:8], why="store unavailable")
            return None

    async def _bind_task_link(self, link: PageTicket, elicitation_id: str) -> None:
        """Bind a task question's ticket to its elicitation; a store that cannot bind it now
        leaves the link unusable (its page says expired), never the question unasked."""
        try:
            await self.runtime.pages.bind(link, elicitation_id)
        except StoreUnavailable:
            log.warning(
                "task_link_not_bound", elicitation_id=elicitation_id, why="store unavailable"
            )

    async def _ask_on_page(
        self, message: str, prepared: _Prepared, peer: CallPeer, timeout: float | None
    ) -> Outcome:
        """Ask a question that may not go out in form mode on the server's hosted page: a
        URL-mode elicitation whose URL is a single-use page token, closed when it ends. It is
        a question of the round like any other (``peer.asking``)."""
        pages = self.runtime.pages
        if not pages.available:
            raise SchemaNotAllowed(
                "",
                "mode",
                f"{prepared.needs_page}; the MCP spec forbids asking for it in form mode and "
                "this server serves no hosted elicitation page to ask it on (serve over HTTP)",
            )
        if not peer.keeps_call:  # 2026-07-28 with mrtr="replay"
            raise SchemaNotAllowed(
                "",
                "mode",
                f"{prepared.needs_page}; the MCP spec forbids asking for it in form mode, and "
                "the hosted elicitation page answers only a call the server keeps between "
                "rounds: this server keeps none (--mrtr replay); serve with --mrtr auto or "
                "suspend",
            )
        question = self._page_question(message, prepared)
        with peer.asking, self.clock.pause():
            ticket = await pages.open(question, self.tenant)
            try:
                request = ElicitationRequest(
                    message,
                    "url",
                    url=ticket.url,
                    validator=prepared.validator,
                    timeout=timeout,
                    locale=self.locale,
                    meta={PAGE_URL_META: ticket.url} if self._task_links(peer) else None,
                    timeout_name=_TIMEOUT,
                )
                handle = await self.runtime.create_elicitation(
                    request,
                    peer=peer,
                    tenant=self.tenant,
                    charge=peer.count_question(),
                    for_task=peer.task_id is not None,
                )
                if handle.unsupported is None:
                    await pages.bind(ticket, handle.id)
                return await handle.outcome()
            finally:
                await pages.close(ticket)

    def _keyed_peer(self, key: str | None) -> CallPeer:
        """This call's peer; on 2026-07-28 with ``key`` as the key of the next input request.

        Raises:
            TypeError: ``key`` is given but not a non-empty ``str``.
        """
        if key is None:
            return self._peer
        if not isinstance(key, str) or not key:
            raise TypeError("key must be a non-empty str")
        return self._peer.with_key(key)

    async def _elicit_field(
        self, message: str, name: str, prop: dict[str, Any], timeout: float | None
    ) -> Outcome:
        """Ask a one-field form (:meth:`elicit`); an accepted answer is the field's value."""
        form = {"type": "object", "properties": {name: prop}, "required": [name]}
        outcome = await self.elicit(message, form, timeout=timeout)
        if isinstance(outcome, Accepted) and isinstance(outcome.content, Mapping):
            return Accepted(outcome.content.get(name))
        return outcome

    # The one-field helpers (the mcp-bash-style ones). Each takes ``timeout=SECONDS``: the
    # question's deadline, as for :meth:`elicit` (clamped by the server's policy).

    async def elicit_string(
        self, message: str, field_name: str = "value", *, timeout: float | None = None
    ) -> Outcome:
        """Ask for free text; ``Accepted(str)``."""
        prop = string_field(title=field_name)
        return await self._elicit_field(message, field_name, prop, timeout)

    async def elicit_confirm(self, message: str, *, timeout: float | None = None) -> Outcome:
        """Ask yes/no; ``Accepted(bool)``."""
        prop = boolean_field(title="Confirm")
        return await self._elicit_field(message, "confirm", prop, timeout)

    async def elicit_choice(
        self, message: str, options: Sequence[str], *, timeout: float | None = None
    ) -> Outcome:
        """Ask for one of ``options`` (radio buttons); ``Accepted(str)``."""
        return await self._elicit_field(message, "choice", enum_field(list(options)), timeout)

    async def elicit_titled_choice(
        self, message: str, options: Options, *, timeout: float | None = None
    ) -> Outcome:
        """Ask for one option shown by its title; ``Accepted(value)``.

        Args:
            message: What to ask.
            options: ``{value: title}``, ``[(value, title)]`` or mcp-bash-style ``"value:Title"``
                strings.
            timeout: The question's deadline in seconds (see :meth:`elicit`).
        """
        prop = enum_field(_titled(options))
        return await self._elicit_field(message, "choice", prop, timeout)

    async def elicit_multi_choice(
        self, message: str, options: Sequence[str], *, timeout: float | None = None
    ) -> Outcome:
        """Ask for any of ``options`` (checkboxes); ``Accepted(list[str])``.

        A 2025-06-18 client has no multi-select: the outcome is ``Unsupported``.
        """
        prop = multi_select_field(list(options))
        return await self._elicit_field(message, "choices", prop, timeout)

    async def elicit_titled_multi_choice(
        self, message: str, options: Options, *, timeout: float | None = None
    ) -> Outcome:
        """Ask for any of the options shown by title; ``Accepted(list of values)``."""
        prop = multi_select_field(_titled(options))
        return await self._elicit_field(message, "choices", prop, timeout)

    # -- URL mode -----------------------------------------------------------------------------

    async def begin_elicit_url(
        self, message: str, url: str, *, timeout: float | None = None
    ) -> ElicitationHandle | Unsupported:
        """Start a URL-mode elicitation and return its handle without waiting.

        The handle's ``id`` is the ``elicitationId`` the client sees; the application ends
        the elicitation with ``runtime.complete_elicitation(id, result, tenant=ctx.tenant)``,
        which also sends ``notifications/elicitation/complete`` to this client only.

        Args:
            message: What to ask.
            url: The page the user is sent to.
            timeout: The question's deadline in seconds (default: the server's URL-mode
                deadline, which also clamps it).

        Raises:
            UnsafeURLError: ``url`` is refused by the URL policy (nothing is sent).
            TypeError, ValueError: ``timeout`` is not a positive, finite number of seconds.
        """
        request = ElicitationRequest(
            message, "url", url=url, timeout=timeout, locale=self.locale, timeout_name=_TIMEOUT
        )
        peer = self._peer
        handle = await self.runtime.create_elicitation(
            request,
            peer=peer,
            tenant=self.tenant,
            charge=peer.count_question(),
            for_task=peer.task_id is not None,
        )
        unsupported = handle.unsupported
        return handle if unsupported is None else unsupported

    async def elicit_url(self, message: str, url: str, *, timeout: float | None = None) -> Outcome:
        """Send the user to ``url`` (consent first) and wait until the application completes.

        ``timeout`` is the question's deadline in seconds, as for :meth:`begin_elicit_url`.

        Returns:
            ``Accepted(result)`` once the application called ``complete_elicitation`` |
            ``Declined`` | ``Cancelled`` | ``TimedOut`` | ``Unsupported("url")`` | ``Failed``.

        Raises:
            UnsafeURLError: ``url`` is refused by the URL policy (nothing is sent).
        """
        with self._peer.asking:
            handle = await self.begin_elicit_url(message, url, timeout=timeout)
            if isinstance(handle, Unsupported):
                return handle
            return await self.wait(handle)

    async def wait(self, handle: ElicitationHandle) -> Outcome:
        """Wait for a handle from :meth:`begin_elicit_url` (the tool clock pauses)."""
        with self.clock.pause():
            return await handle.outcome()

    # -- progress and logging -----------------------------------------------------------------

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send ``notifications/progress`` if the client asked for it (increasing values only).

        It goes with :attr:`progress_token`; nothing is sent when that is ``None``. Values must
        increase per token: on 2026-07-28 a retry with a new token starts a new sequence, one
        with the same token continues it.

        Raises:
            ValueError: ``progress`` is not above the last value reported with this token.
        """
        token = self.progress_token
        if token is None:
            return
        reported = self._last_progress
        if reported is None:
            reported = self._last_progress = {}
        last = reported.get(token)
        if last is not None and progress <= last:
            raise ValueError("progress must increase with each notification")
        reported[token] = progress
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self._peer.notify("notifications/progress", params)

    async def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send ``notifications/message`` when ``level`` is at or above the client's level.

        Session era: the level of ``logging/setLevel`` (default ``info``). 2026-07-28: the
        ``io.modelcontextprotocol/logLevel`` of the request attached to the call right now;
        a request without one gets no log messages, and between rounds nothing is sent.
        """
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r}")
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        await self._peer.notify("notifications/message", params)

    async def debug(self, data: Any, logger: str | None = None) -> None:
        """:meth:`log` at ``debug``."""
        await self.log("debug", data, logger)

    async def info(self, data: Any, logger: str | None = None) -> None:
        """:meth:`log` at ``info``."""
        await self.log("info", data, logger)

    async def warning(self, data: Any, logger: str | None = None) -> None:
        """:meth:`log` at ``warning``."""
        await self.log("warning", data, logger)

    async def error(self, data: Any, logger: str | None = None) -> None:
        """:meth:`log` at ``error``."""
        await self.log("error", data, logger)
