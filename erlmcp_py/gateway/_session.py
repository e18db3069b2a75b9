"""One downstream client connection of the gateway: the server session, relayed upstream.

Theory of operation
-------------------
A :class:`GatewaySession` is a :class:`~erlmcp_py.mcp.session.ServerSession` (so both
transports, their limits, authentication, the hosted page, metrics and the graceful stop
treat it as any session) whose requests are answered by an upstream server instead of this
process's tools:

* ``initialize`` starts the session's :class:`~erlmcp_py.gateway._link.UpstreamLink` (the
  upstream process, or an upstream HTTP session) and shakes hands with it, declaring the
  client's own ``clientInfo`` and requested version, and of the client's capabilities only
  what the gateway can carry (:func:`upstream_capabilities`: the elicitation modes, sampling
  and roots the client declared). The upstream's answer -- its version, capabilities,
  ``serverInfo``, instructions -- is the client's answer, unchanged. A failure to start is
  the client's error (the upstream's own error, when it refused ``initialize``).
* every other request (``tools/*``, ``resources/*``, ``prompts/*``, ``completion/complete``,
  ``logging/setLevel``, ``ping``, and any method the gateway does not know) is relayed as a
  *call* of the session (:meth:`~erlmcp_py.mcp.session.ServerSession.start_call`): params as
  given (``_meta`` and its progress token included), and the upstream's answer, result or
  error, comes back unchanged under the client's id. A client's ``notifications/cancelled``
  cancels the call, which withdraws the upstream request (the upstream is sent
  ``notifications/cancelled``); so does the client leaving. A lost upstream answers the call
  ``-32603`` (``data.reason``: ``upstream_lost``); one that cannot be reached
  ``upstream_unavailable``.
* the client's other notifications (``notifications/roots/list_changed``…) are passed on.
* the upstream's ``elicitation/create`` is asked through the runtime by
  :class:`~erlmcp_py.gateway._asking.Asker`, as a local ``ctx.elicit``; its other requests
  (``sampling/createMessage``, ``roots/list``, ``ping``…) are passed to the client with a
  request id of the gateway's and the client's answer, or error, goes back.
* the upstream's notifications go to the client in the order they came (one task reads a
  bounded queue of them), except ``notifications/elicitation/complete``, which completes the
  runtime's elicitation for that ``elicitationId`` (the client is told with the runtime's id),
  and ``notifications/cancelled``, which cancelled the answering of the upstream request it
  names.

*Relating upstream messages to the client's requests.* On Streamable HTTP, what relates to a
client request travels on that request's stream. An upstream request or notification relates
to the client request whose progress token it carries (``notifications/progress``), else to
the only relayed request in flight, else to none (it goes on the session's GET stream).
Questions that relate to a client request end with it: when the relayed call is answered or
cancelled, the questions the upstream asked for it and has not withdrawn are ended (the client
is told to drop them).

2026-07-28 requests (``_meta`` naming the version, no ``initialize``) go to the server's
stateless endpoint, as in any session (:mod:`~erlmcp_py.gateway._endpoint`).
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import structlog
import trio

from erlmcp_py.actors.peer import PeerGone
from erlmcp_py.actors.runtime import Runtime
from erlmcp_py.client import CLIENT_INFO, ConnectionLost, ServerRequest
from erlmcp_py.core.i18n import LOCALE_META_KEY, client_locale
from erlmcp_py.core.versions import V_2025_06_18
from erlmcp_py.gateway._arguments import ArgumentAsker, NotRun
from erlmcp_py.gateway._asking import CANCEL, Asker, UrlQuestions
from erlmcp_py.gateway._link import (
    Connection,
    UpstreamGone,
    UpstreamLink,
    UpstreamRefused,
    start_failure,
)
from erlmcp_py.gateway._stateless_upstream import relay_stateless
from erlmcp_py.mcp import jsonrpc
from erlmcp_py.mcp.errors import ClientRequestError
from erlmcp_py.mcp.jsonrpc import (
    INTERNAL_ERROR,
    ErrorResponse,
    JsonRpcError,
    Message,
    Notification,
    Request,
    RequestId,
    Response,
)
from erlmcp_py.mcp.meta import is_stateless_request
from erlmcp_py.mcp.params import LOG_LEVELS, InitializeParams, parse_params
from erlmcp_py.mcp.session import RELATED_REQUEST, RequestPeer, Send, ServerSession
from erlmcp_py.mcp.versions import ClientCapabilities, negotiate_version
from supervisors import StartError

if TYPE_CHECKING:
    from erlmcp_py.gateway._server import Gateway

__all__ = ["GatewaySession", "upstream_capabilities"]

log = structlog.get_logger("erlmcp.gateway")

#: The client requests whose name (the tool's, the prompt's) the hosted page shows as the one
#: asking, when the upstream asks a question while it answers one of them.
_NAMED: Final = frozenset({"tools/call", "prompts/get"})


def upstream_capabilities(client: ClientCapabilities, version: str) -> dict[str, Any]:
    """The client capabilities the gateway declares upstream: of what the client declared,
    what the gateway carries -- its elicitation modes (``{}`` for 2025-06-18, whose only mode
    is form), sampling and roots (their sub-capabilities as the client gave them: the gateway
    passes those requests and ``notifications/roots/list_changed`` through). Nothing else."""
    caps: dict[str, Any] = {}
    modes = sorted(client.elicitation_modes)
    if modes:
        caps["elicitation"] = {} if version == V_2025_06_18 else {m: {} for m in modes}
    for name, declared in (("sampling", client.sampling), ("roots", client.roots)):
        raw = client.raw.get(name)
        if declared and isinstance(raw, Mapping):
            caps[name] = dict(raw)
    return caps


@dataclass(slots=True)
class _Relayed:
    """A client request being relayed upstream."""

    name: str | None  # the tool or prompt, for the hosted page
    progress_token: str | int | None
    questions: set[trio.CancelScope] = field(default_factory=set)


def _token_key(token: object) -> str:
    return f"{type(token).__name__}:{token}"


class GatewaySession(ServerSession):
    """A downstream session of a :class:`~erlmcp_py.gateway.Gateway` (module docstring).

    Made by :func:`~erlmcp_py.mcp.session.open_session` for a gateway's connections; the
    arguments are those of :class:`~erlmcp_py.mcp.session.ServerSession`.
    """

    def __init__(
        self,
        server: Gateway,
        runtime: Runtime,
        send: Send,
        nursery: trio.Nursery,
        *,
        peer_id: str | None = None,
        max_frame_bytes: int = jsonrpc.MAX_FRAME_BYTES,
        user: str | None = None,
        client_key: str | None = None,
        continuations: Mapping[str, Any] | None = None,
        accept_language: str | None = None,
    ) -> None:
        super().__init__(
            server,
            runtime,
            send,
            nursery,
            peer_id=peer_id,
            max_frame_bytes=max_frame_bytes,
            user=user,
            client_key=client_key,
            continuations=continuations,
            accept_language=accept_language,
        )
        self.gateway = server
        self._host = nursery
        self._language = accept_language
        self.link: UpstreamLink | None = None
        self._relayed: dict[RequestId, _Relayed] = {}
        self._tokens: dict[str, RequestId] = {}
        self._urls: dict[int, UrlQuestions] = {}
        self._level_set: str | None = None  # the client's logging/setLevel, put back on restart
        self._asker = Asker(runtime, server)
        self._arguments = ArgumentAsker(self._asker) if server.ask_missing_arguments else None
        self._notes_in, notes_out = trio.open_memory_channel[
            tuple[Connection, str, Mapping[str, Any], RequestId | None]
        ](server.upstream_policy.notification_queue)
        nursery.start_soon(self._pass_notifications, notes_out)
        self._glog = log.bind(peer=self.peer_id)

    # -- the client's messages ------------------------------------------------------------------

    async def dispatch(self, message: Message) -> None:
        """Handle one message of the client: requests relayed (``initialize`` starts the
        upstream), notifications passed on, answers to the gateway's requests delivered."""
        if isinstance(message, Request) and is_stateless_request(message):
            await super().dispatch(message)  # the server's stateless endpoint answers it
        elif isinstance(message, Request):
            try:
                await self._client_request(message)
            except JsonRpcError as exc:
                with suppress(PeerGone):
                    await self.send_raw(exc.with_id(message.id).encode())
        elif isinstance(message, Notification):
            await super().dispatch(message)  # initialized, cancelled: the session's own
            await self._client_notification(message)
        else:
            await super().dispatch(message)

    async def _client_request(self, req: Request) -> None:
        if req.method == "initialize":
            await self._initialize_upstream(req)
            return
        if self.phase == "new":
            if req.method == "ping":
                await self._answer(req.id, {})
                return
            raise jsonrpc.invalid_request("session not initialized: send initialize first")
        if req.id in self._relayed:
            raise jsonrpc.invalid_request("a request with this id is already in progress")
        params = req.params
        if params is not None and not isinstance(params, Mapping):
            raise jsonrpc.invalid_params("params must be an object", None, req.id)
        params = params or {}
        meta = params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, Mapping) else None
        name = params.get("name") if req.method in _NAMED else None
        relayed = _Relayed(
            name if isinstance(name, str) else None,
            token if type(token) in (str, int) else None,
        )
        self._relayed[req.id] = relayed
        if relayed.progress_token is not None:
            self._tokens[_token_key(relayed.progress_token)] = req.id
        self.start_call(req.id, self._relay(req, relayed))

    async def _answer(self, id: RequestId, result: Mapping[str, Any]) -> None:
        with suppress(PeerGone):
            await self.send_raw(jsonrpc.encode_response(id, result))

    async def _client_notification(self, note: Notification) -> None:
        if note.method in ("notifications/initialized", "notifications/cancelled"):
            return  # the session's own business, and the relayed calls' withdrawal
        connection = self.link.current if self.link is not None else None
        if connection is None:
            self._glog.info("notification_not_relayed", method=note.method[:80])
            return
        params = note.params if isinstance(note.params, Mapping) else None
        with suppress(ConnectionLost):
            await connection.session.notify(note.method, params)

    # -- initialize ---------------------------------------------------------------------------

    async def _initialize_upstream(self, req: Request) -> None:
        if self.phase != "new" or self.link is not None:
            raise jsonrpc.invalid_request("initialize was already received")
        params = parse_params(InitializeParams, req.params, req.id)
        asked = negotiate_version(params.protocolVersion)
        client_caps = ClientCapabilities.parse(params.capabilities, asked)
        declared = (params.meta or {}).get(LOCALE_META_KEY)
        client_info = params.clientInfo.model_dump() if params.clientInfo else dict(CLIENT_INFO)
        gateway = self.gateway
        link = UpstreamLink(
            gateway.upstream,
            gateway.upstream_policy,
            self,
            gateway.upstream_slots,
            name=self.peer_id,
            protocol_version=params.protocolVersion,
            capabilities=upstream_capabilities(client_caps, asked),
            client_info=client_info,
            locale=declared if isinstance(declared, str) else None,
        )
        self.link = link
        try:
            await self._host.start(link.run)
        except (StartError, UpstreamGone) as exc:
            self.link = None
            raise self._start_refused(exc, req.id) from None
        result = link.initialize_result
        version = result.get("protocolVersion")
        self.protocol_version = version if isinstance(version, str) else asked
        self.client_capabilities = ClientCapabilities.parse(
            params.capabilities, self.protocol_version
        )
        self.client_info = client_info
        self.locale = client_locale(declared, self._language)
        self.phase = "initializing"
        self._glog.info(
            "gateway_initialize",
            version=self.protocol_version,
            elicitation=sorted(self.client_capabilities.elicitation_modes),
            upstream=gateway.upstream.describe(),
        )
        await self._answer(req.id, result)

    def _start_refused(self, exc: BaseException, id: RequestId) -> JsonRpcError:
        """The client's error for an upstream that could not be started."""
        cause = start_failure(exc)
        self._glog.warning("upstream_start_failed", error=type(cause).__name__, detail=str(cause))
        if isinstance(cause, UpstreamRefused):
            error = cause.error
            return JsonRpcError(error.code, error.message, error.data, id)
        if isinstance(cause, trio.TooSlowError):
            why = (
                "did not answer initialize within "
                f"{self.gateway.upstream_policy.start_timeout_s:g} s"
            )
        elif isinstance(cause, OSError):
            why = f"could not be started: {cause.strerror or cause}"
        elif isinstance(cause, ConnectionLost):
            why = f"ended before it answered initialize: {cause}"
        elif isinstance(cause, UpstreamGone):
            why = f"is not available: {cause}"
        else:
            why = f"could not be started ({type(cause).__name__})"
        return jsonrpc.internal_error(
            f"the upstream server {why}", {"reason": "upstream_unavailable"}, id
        )

    # -- relaying -----------------------------------------------------------------------------

    async def _relay(self, req: Request, relayed: _Relayed) -> bytes:
        """One relayed call: the upstream's answer to ``req``, under the client's id."""
        try:
            assert self.link is not None
            connection = await self.link.connection()
            params: Mapping[str, Any] | None = (
                req.params if isinstance(req.params, Mapping) else None
            )
            if req.method == "tools/call" and self._arguments is not None and params:
                completed = await self._arguments.complete(
                    params,
                    connection.session,
                    peer=RequestPeer(self, req.id, relayed.progress_token),
                    request_id=req.id,
                    tenant=self.tenant,
                    locale=self.locale,
                    who=self._who(),
                )
                if isinstance(completed, NotRun):
                    return jsonrpc.encode_response(req.id, completed.result)
                params = completed
            if connection.session.stateless:
                answer = await self._relay_stateless(req, params, relayed, connection)
            else:
                answer = await connection.session.request_raw(req.method, params)
        except ClientRequestError as exc:  # the client's answer to an input request
            return jsonrpc.encode_error(req.id, exc.code, exc.message, exc.data)
        except UpstreamGone as exc:
            return jsonrpc.encode_error(
                req.id,
                INTERNAL_ERROR,
                f"the upstream server is unavailable: {exc}",
                {"reason": "upstream_unavailable"},
            )
        except ConnectionLost as exc:
            return jsonrpc.encode_error(
                req.id,
                INTERNAL_ERROR,
                f"the upstream server was lost: {exc}",
                {"reason": "upstream_lost"},
            )
        finally:
            self._relay_ended(req.id, relayed)
        if isinstance(answer, ErrorResponse):
            return jsonrpc.encode_error(req.id, answer.code, answer.message, answer.data)
        self._remember(req, answer.result)
        try:
            return jsonrpc.encode_response(req.id, answer.result)
        except jsonrpc.EncodeError:
            self._glog.warning("upstream_result_unencodable", method=req.method[:80])
            return jsonrpc.internal_error("Result could not be encoded", None, req.id).encode()

    async def _relay_stateless(
        self,
        req: Request,
        params: Mapping[str, Any] | None,
        relayed: _Relayed,
        connection: Connection,
    ) -> Response | ErrorResponse:
        """A request on a 2026-07-28 upstream: its input rounds asked of this session's
        user through the runtime (:mod:`~erlmcp_py.gateway._stateless_upstream`)."""
        peer = RequestPeer(self, req.id, relayed.progress_token)
        urls = UrlQuestions()  # this call's URL-mode questions

        async def answer(key: str, method: str, asked: Mapping[str, Any]) -> Mapping[str, Any]:
            if method == "ping":
                return {}
            if method != "elicitation/create":
                return await self._asker.relay(method, asked, peer=peer, tenant=self.tenant)
            try:
                return await self._asker.elicit(
                    asked,
                    peer=peer,
                    request_id=req.id,
                    tool=relayed.name or "upstream",
                    tenant=self.tenant,
                    locale=self.locale,
                    who=self._who(key),
                    urls=urls,
                    nursery=connection.nursery,
                )
            except ClientRequestError:
                # refused by the runtime (audited, the user not asked): an input response
                # cannot be an error, and the upstream must not wait for one
                return dict(CANCEL)

        try:
            reply = await relay_stateless(connection.session, req.id, req.method, params, answer)
        except BaseException:
            await self._asker.end_url_questions(urls, self.tenant, completed=False)
            raise
        await self._asker.end_url_questions(urls, self.tenant, completed=True)
        return reply

    def _relay_ended(self, id: RequestId, relayed: _Relayed) -> None:
        self._relayed.pop(id, None)
        if relayed.progress_token is not None:
            self._tokens.pop(_token_key(relayed.progress_token), None)
        for scope in relayed.questions:
            scope.cancel()  # questions of a call that has ended end with it

    def _remember(self, req: Request, result: Mapping[str, Any]) -> None:
        """What the client set upstream, to set again on a restarted upstream."""
        params = req.params if isinstance(req.params, Mapping) else {}
        if req.method == "logging/setLevel" and params.get("level") in LOG_LEVELS:
            self._level_set = self.log_level = str(params["level"])
        elif req.method in ("resources/subscribe", "resources/unsubscribe"):
            uri = params.get("uri")
            if isinstance(uri, str):
                if req.method == "resources/unsubscribe":
                    self.subscriptions.discard(uri)
                elif len(self.subscriptions) < 1024:
                    self.subscriptions.add(uri)

    # -- the upstream's messages (LinkEvents) ---------------------------------------------------

    async def upstream_connected(self, connection: Connection) -> None:
        """A connection is up: a restarted one is given the client's log level and
        subscriptions again."""
        self._urls = {connection.number: UrlQuestions()}
        if self._arguments is not None:
            self._arguments.schemas.stale()  # another process: its tools are read again
        if connection.number == 1:
            return
        session = connection.session
        if session.stateless:  # the level travels in each request; no subscriptions
            session.log_level = self._level_set
            return
        if self._level_set is not None:
            await session.request_raw("logging/setLevel", {"level": self._level_set})
        for uri in sorted(self.subscriptions):
            await session.request_raw("resources/subscribe", {"uri": uri})

    def _relation(self) -> RequestId | None:
        """The client request an upstream message relates to when nothing names it."""
        if len(self._relayed) == 1:
            return next(iter(self._relayed))
        return None

    def upstream_request(
        self, connection: Connection, request: ServerRequest
    ) -> Any:  # an awaitable: the ClientSession awaits it in a task of its own
        """Answer a request of the upstream (see the module docstring)."""
        return self._upstream_request(connection, request, self._relation())

    async def _upstream_request(
        self, connection: Connection, request: ServerRequest, related: RequestId | None
    ) -> Mapping[str, Any]:
        relayed = self._relayed.get(related) if related is not None else None
        scope = trio.CancelScope()
        if relayed is not None:
            relayed.questions.add(scope)
        token = relayed.progress_token if relayed is not None else None
        peer = RequestPeer(self, related, token)
        try:
            with scope:
                if request.method == "elicitation/create":
                    return await self._asker.elicit(
                        request.params,
                        peer=peer,
                        request_id=related if related is not None else request.id,
                        tool=(relayed.name if relayed is not None else None) or "upstream",
                        tenant=self.tenant,
                        locale=self.locale,
                        who=self._who(request.id),
                        urls=self._urls.setdefault(connection.number, UrlQuestions()),
                        nursery=connection.nursery,
                    )
                return await self._asker.relay(
                    request.method, request.params, peer=peer, tenant=self.tenant
                )
        finally:
            if relayed is not None:
                relayed.questions.discard(scope)
        # cancelled by the end of the call it related to
        if request.method == "elicitation/create":
            return {"action": "cancel"}
        raise ClientRequestError(
            INTERNAL_ERROR,
            "the client request this belonged to has ended",
            {"reason": "request_ended"},
        )

    def _who(self, upstream_id: RequestId | None = None) -> dict[str, Any]:
        who: dict[str, Any] = {
            "principal": self.client_key,
            "user": self.tenant.user,
            "session": self.peer_id,
        }
        if upstream_id is not None:
            who["upstream_request"] = str(upstream_id)[:80]
        return who

    def upstream_notification(
        self, connection: Connection, method: str, params: Mapping[str, Any]
    ) -> None:
        """Queue a notification of the upstream for the client, in order."""
        related: RequestId | None = None
        if method == "notifications/tools/list_changed" and self._arguments is not None:
            self._arguments.schemas.stale()
        if method == "notifications/progress":
            related = self._tokens.get(_token_key(params.get("progressToken")))
        if related is None:
            related = self._relation()
        try:
            self._notes_in.send_nowait((connection, method, params, related))
        except trio.WouldBlock:
            self._glog.warning("upstream_notification_dropped", method=method[:80], why="full")
        except trio.ClosedResourceError:
            pass

    async def _pass_notifications(
        self,
        notes: trio.MemoryReceiveChannel[
            tuple[Connection, str, Mapping[str, Any], RequestId | None]
        ],
    ) -> None:
        async with notes:
            async for connection, method, params, related in notes:
                if method == "notifications/cancelled":
                    continue  # its request's answering was cancelled by the client session
                if method == "notifications/elicitation/complete":
                    urls = self._urls.get(connection.number)
                    if urls is not None:
                        await self._asker.complete(urls, params.get("elicitationId"), self.tenant)
                    continue
                try:
                    frame = jsonrpc.encode_notification(method, dict(params))
                except jsonrpc.EncodeError:  # pragma: no cover - it came as JSON
                    continue
                token = RELATED_REQUEST.set(related)
                try:
                    with suppress(PeerGone):
                        await self.send_raw(frame)
                finally:
                    RELATED_REQUEST.reset(token)

    # -- the end ------------------------------------------------------------------------------

    def close(self) -> None:
        """End the session, and its upstream with it (see ``ServerSession.close``)."""
        super().close()
        if self.link is not None:
            self.link.close()
        self._notes_in.close()
