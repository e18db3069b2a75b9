"""The gateway's 2026-07-28 requests: the era bridge to a session-era upstream.

A 2026-07-28 request carries everything in its ``_meta`` and needs no ``initialize``; the
transports hand it to the server's :meth:`~erlmcp_py.mcp.server.Server.stateless_endpoint`
(Streamable HTTP for every request without a session, stdio for each connection). The
gateway's is :class:`GatewayEndpoint`, which answers it from the upstream, on a session leased
from the gateway's bounded :class:`~erlmcp_py.gateway._pool.UpstreamPool`:

* ``tools/call`` and ``prompts/get`` go through the continuation registry, as a local tool's:
  the call is a :class:`~erlmcp_py.gateway._bridge.BridgedCall`, which holds the upstream
  request while its questions are input rounds. The registry runs ``suspend`` (a call is never
  replayed: an upstream tool's side effects must not run twice), and each state it seals names
  this endpoint as the call's holder; a retry whose state names another holder is forwarded to
  it (:mod:`~erlmcp_py.gateway._forward`), one whose holder is gone ends with ``holder_gone``;
* ``server/discover`` answers the versions the gateway speaks and the upstream's capabilities
  (those 2026-07-28 carries), instructions and ``serverInfo``;
* ``tools/list``, ``resources/list``, ``resources/templates/list``, ``resources/read``,
  ``prompts/list`` and ``completion/complete`` are relayed as they are, their results marked
  ``complete`` (the lists and ``resources/read`` cacheable: ``ttlMs``, ``cacheScope``), an
  unknown resource ``-32602`` as 2026-07-28 says;
* anything else (``ping``, ``logging/setLevel``, subscriptions, tasks) is ``-32601``.

Every result's ``_meta`` names the upstream's ``serverInfo``, once a session has told it.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Final

import structlog
import trio

from erlmcp_py.actors.runtime import Runtime
from erlmcp_py.client import ConnectionLost, ServerRequest
from erlmcp_py.core.outcomes import Tenant
from erlmcp_py.core.versions import LATEST_SESSION_VERSION, SUPPORTED_VERSIONS
from erlmcp_py.gateway._arguments import ArgumentAsker
from erlmcp_py.gateway._asking import Asker
from erlmcp_py.gateway._bridge import BridgedCall, upstream_params
from erlmcp_py.gateway._forward import FORWARD_KIND, ForwardedRetry, error_answer
from erlmcp_py.gateway._link import Connection, UpstreamGone
from erlmcp_py.gateway._session import upstream_capabilities
from erlmcp_py.gateway._stateless_upstream import relay_stateless
from erlmcp_py.mcp import jsonrpc
from erlmcp_py.mcp.errors import ClientRequestError
from erlmcp_py.mcp.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    ErrorResponse,
    JsonRpcError,
    Request,
)
from erlmcp_py.mcp.meta import RequestMeta, parse_request_meta
from erlmcp_py.mcp.mrtr import (
    Attachment,
    ContinuationElsewhere,
    ContinuationRegistry,
    MrtrPeer,
    NotificationSink,
)
from erlmcp_py.mcp.resources import RESOURCE_NOT_FOUND
from erlmcp_py.mcp.stateless import INPUT_METHODS, Caller, StatelessEndpoint
from erlmcp_py.mcp.versions import ClientCapabilities
from erlmcp_py.store import NoteSink

if TYPE_CHECKING:
    from erlmcp_py.gateway._server import Gateway
    from erlmcp_py.mcp.mrtr import RunCall

__all__ = ["GatewayEndpoint"]

log = structlog.get_logger("erlmcp.gateway.forward")

#: The requests relayed as they are (they never ask the client).
_RELAYED: Final = frozenset(
    {
        "tools/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "prompts/list",
        "completion/complete",
    }
)
_CACHEABLE: Final = frozenset(_RELAYED - {"completion/complete"})

#: Seconds a forwarded retry may take beyond the holder's own hold of it.
_FORWARD_MARGIN_S: Final = 10.0


async def _no_input(key: str, method: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
    """The relayed lists and reads ask nothing; an input request of theirs is refused."""
    raise ClientRequestError(
        INVALID_PARAMS, f"{method[:80]} asks nothing of the client", {"reason": "no_input"}
    )


class _NoQuestions:
    """The events of a session leased for a request that never asks: a question is refused."""

    async def _refuse(self, request: ServerRequest) -> Mapping[str, Any]:
        await trio.lowlevel.checkpoint()
        raise ClientRequestError(
            INTERNAL_ERROR,
            f"{request.method[:80]} has nobody to ask: the client's request cannot ask",
            {"reason": "no_call"},
        )

    def upstream_request(self, connection: Connection, request: ServerRequest) -> Any:
        return self._refuse(request)

    def upstream_notification(
        self, connection: Connection, method: str, params: Mapping[str, Any]
    ) -> None:
        pass

    async def upstream_connected(self, connection: Connection) -> None:
        pass


class GatewayEndpoint(StatelessEndpoint):
    """The gateway's endpoint of 2026-07-28 requests (see the module docstring).

    Args:
        server: The gateway.
        runtime: Its runtime.
        registry: The continuation registry the transport opened (this endpoint's own).
        **options: :class:`~erlmcp_py.mcp.stateless.StatelessEndpoint`'s (``tasks`` is not
            used: the gateway runs no tasks of its own).
    """

    #: A bridged call holds an upstream request: it is never run twice.
    replays: ClassVar[bool] = False

    def __init__(
        self,
        server: Gateway,
        runtime: Runtime,
        registry: ContinuationRegistry,
        **options: Any,
    ) -> None:
        options.pop("tasks", None)
        super().__init__(server, runtime, registry, **options)
        self.gateway = server
        self.key = secrets.token_urlsafe(9)
        registry.mrtr = "suspend"
        registry.holder = f"{runtime.store.replica}/{self.key}"
        self._asker = Asker(runtime, server)
        self._arguments = ArgumentAsker(self._asker) if server.ask_missing_arguments else None
        server.endpoints[self.key] = self

    # -- what clients see of the upstream -----------------------------------------------------

    def server_info(self) -> dict[str, Any]:
        """The upstream's ``serverInfo``, once a session has told it; the gateway's before."""
        info = self.gateway.upstream_info.get("serverInfo")
        return dict(info) if isinstance(info, Mapping) else super().server_info()

    def discover_result(self) -> dict[str, Any]:
        """The ``server/discover`` result: the gateway's versions, the upstream's
        capabilities (as 2026-07-28 carries them) and instructions."""
        upstream = self.gateway.upstream_info
        offered = upstream.get("capabilities")
        offered = offered if isinstance(offered, Mapping) else {}
        caps: dict[str, Any] = {"tools": {"listChanged": False}}
        if "resources" in offered:
            caps["resources"] = {"listChanged": False}
        for name in ("prompts", "completions"):
            if isinstance(offered.get(name), Mapping):
                caps[name] = dict(offered[name])
        result: dict[str, Any] = {
            "resultType": "complete",
            "supportedVersions": list(SUPPORTED_VERSIONS),
            "capabilities": caps,
            "ttlMs": 0,
            "cacheScope": "public",
        }
        instructions = upstream.get("instructions")
        if isinstance(instructions, str):
            result["instructions"] = instructions
        return result

    # -- requests -----------------------------------------------------------------------------

    async def handle(
        self, request: Request, *, meta: RequestMeta | None = None, **options: Any
    ) -> dict[str, Any]:
        """Answer one 2026-07-28 request (see the module docstring).

        Raises:
            JsonRpcError: its error.
        """
        if meta is None:
            meta = parse_request_meta(request)
        method = request.method
        if method in INPUT_METHODS:
            return await super().handle(request, meta=meta, **options)
        if method == "server/discover":
            if not self.gateway.upstream_info:
                await self._relay(request, "tools/list", meta.capabilities)  # learn it
            return self._with_server_info(self.discover_result())
        if method not in _RELAYED:
            raise jsonrpc.method_not_found(method, request.id)
        result = await self._relay(request, method, meta.capabilities)
        return self._with_server_info(result)

    async def _relay(
        self, request: Request, method: str, capabilities: ClientCapabilities
    ) -> dict[str, Any]:
        params = request.params if isinstance(request.params, Mapping) else {}
        if method != request.method:
            params = {}
        caps = upstream_capabilities(capabilities, LATEST_SESSION_VERSION)
        try:
            async with self.gateway.pool.lease(caps, _NoQuestions()) as link:
                connection = await link.connection()
                self.gateway.learn(link.initialize_result)
                given = upstream_params(params)
                if connection.session.stateless:  # a 2026-07-28 upstream: with its _meta
                    answer = await relay_stateless(
                        connection.session, request.id, method, given, _no_input
                    )
                else:
                    answer = await connection.session.request_raw(method, given)
        except UpstreamGone as exc:
            raise jsonrpc.internal_error(
                f"the upstream server is unavailable: {exc}",
                {"reason": "upstream_unavailable"},
                request.id,
            ) from None
        except ConnectionLost as exc:
            raise jsonrpc.internal_error(
                f"the upstream server was lost: {exc}", {"reason": "upstream_lost"}, request.id
            ) from None
        if isinstance(answer, ErrorResponse):
            code = INVALID_PARAMS if answer.code == RESOURCE_NOT_FOUND else answer.code
            raise JsonRpcError(code, answer.message, answer.data, request.id)
        result = {**answer.result, "resultType": "complete"}
        if method in _CACHEABLE:
            result.update(ttlMs=0, cacheScope="public")
        return result

    def accept(self, request: Request, **options: Any) -> Attachment:
        """Take a ``tools/call`` or ``prompts/get``: a first call starts its bridged call, a
        retry resumes the call this endpoint holds, or is forwarded to the holder its state
        names (see :meth:`~erlmcp_py.mcp.stateless.StatelessEndpoint.accept`).

        Raises:
            JsonRpcError: refused at once.
        """
        forwarded = bool(options.pop("forwarded", False))
        try:
            return super().accept(request, **options)
        except ContinuationElsewhere as elsewhere:
            if forwarded:  # it came from the holder it names: no ping-pong
                raise JsonRpcError(elsewhere.code, elsewhere.message, elsewhere.data) from None
            return self._forward(elsewhere.holder, request, options)

    def call_runner(self, request: Request, caller: Caller) -> RunCall:
        """What runs a bridged call (see :class:`~erlmcp_py.gateway._bridge.BridgedCall`).

        Raises:
            JsonRpcError: ``-32602`` when the call names no tool or prompt.
        """
        params = request.params if isinstance(request.params, Mapping) else {}
        name = params.get("name")
        if not isinstance(name, str):
            raise jsonrpc.invalid_params("'name' must be a string", None, request.id)
        sent = upstream_params(params)

        async def run(peer: MrtrPeer) -> Mapping[str, Any]:
            call = BridgedCall(
                self.gateway.pool,
                self._asker,
                peer,
                caller,
                request.id,
                request.method,
                name,
                on_info=self.gateway.learn,
                arguments=self._arguments,
            )
            return await call.run(sent)

        return run

    # -- retries held elsewhere ---------------------------------------------------------------

    def _forward(self, holder: str, request: Request, options: Mapping[str, Any]) -> ForwardedRetry:
        replica, _, key = holder.partition("/")
        tenant = options.get("tenant") or self.tenant
        notify: NotificationSink | None = options.get("notify")
        body = {
            "endpoint": key,
            "request": {"id": request.id, "method": request.method, "params": request.params},
            "principal": options.get("principal") or self.principal,
            "tenant": [tenant.user, tenant.workspace, tenant.conversation],
            "client_id": options.get("client_id") or self.client_id,
            "accept_language": options.get("accept_language"),
            "notes": notify is not None,  # the holder relays its notifications, or not
        }
        timeout = self.registry.hold_s + _FORWARD_MARGIN_S
        log.info("retry_forwarded", holder=replica, method=request.method)

        async def send(on_note: NoteSink) -> Mapping[str, Any]:
            return await self.runtime.forward_request(replica, FORWARD_KIND, body, timeout, on_note)

        return ForwardedRetry(send, notify)

    async def take_forwarded(self, body: Mapping[str, Any], note: NoteSink) -> dict[str, Any]:
        """Answer a retry another endpoint forwarded here: taken as if it had arrived here,
        its answer ``{"result": …}`` or ``{"error": …}``; the notifications the retry's round
        sends its request (progress, log messages) go to ``note``, for the forwarder's
        (see :mod:`~erlmcp_py.gateway._forward`)."""
        raw = body.get("request")
        tenant = body.get("tenant")
        if not (isinstance(raw, Mapping) and isinstance(tenant, list) and len(tenant) == 3):
            return error_answer(jsonrpc.invalid_request("not a forwarded retry"))
        rid = raw.get("id")
        if not isinstance(rid, str | int) or isinstance(rid, bool):
            return error_answer(jsonrpc.invalid_request("a forwarded retry needs its id"))
        request = Request(rid, str(raw.get("method")), raw.get("params"))
        language = body.get("accept_language")

        async def relay(method: str, params: Mapping[str, Any]) -> None:
            note({"method": method, "params": dict(params)})  # queued: never waited for

        try:
            attached = self.accept(
                request,
                principal=str(body.get("principal")),
                tenant=Tenant(*(str(part) for part in tenant)),
                client_id=str(body.get("client_id")),
                accept_language=language if isinstance(language, str) else None,
                notify=relay if body.get("notes") is True else None,
                forwarded=True,
            )
            return {"result": await self.answer(attached)}
        except JsonRpcError as exc:
            return error_answer(exc)
