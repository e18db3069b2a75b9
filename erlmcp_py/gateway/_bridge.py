"""One 2026-07-28 call relayed to a session-era upstream: the upstream call held, its questions
asked as input rounds.

Theory of operation
-------------------
A 2026-07-28 client has no session, and a session-era upstream (the official SDK's
``MCPServer``, fastmcp…) asks its questions with ``elicitation/create`` on its session and waits
for the answer inside its tool. :class:`BridgedCall` joins the two. It is the function the
continuation registry runs for a ``tools/call`` or ``prompts/get`` of the gateway
(:class:`~erlmcp_py.mcp.mrtr.ContinuationRegistry`, through
:meth:`~erlmcp_py.gateway._endpoint.GatewayEndpoint.call_runner`), with the call's
:class:`~erlmcp_py.mcp.mrtr.MrtrPeer` as its client:

* it leases an upstream session from the gateway's bounded
  :class:`~erlmcp_py.gateway._pool.UpstreamPool` (one that declared exactly the client
  capabilities the gateway carries of this request's) and sends the request on it, with the
  client's params minus what belongs to 2026-07-28 (``requestState``, ``inputResponses``, the
  ``io.modelcontextprotocol/*`` members of ``_meta``);
* while the upstream works, it is this call's: its ``elicitation/create`` is asked by the
  :class:`~erlmcp_py.gateway._asking.Asker` through the call's peer -- the runtime records the
  question as an input request, so the client's pending request is answered with an
  ``InputRequiredResult`` whose ``requestState`` the registry seals, while the upstream's
  request stays open. The retry's ``inputResponses`` reach the runtime (validated, re-prompted
  in a next round when invalid), and the upstream receives the valid answer, a decline or a
  cancel (a question nobody answered before its deadline). Its ``sampling/createMessage`` and
  ``roots/list`` become input requests too; ``ping`` is answered at once;
* its progress and log messages go to the request attached to the call now (the MrtrPeer
  drops them between rounds), progress under that request's own token, in the order the
  upstream sent them; those it sent before its answer are all passed before the answer;
* the upstream's answer is the call's: its result (``complete``), or its JSON-RPC error.

A call that ends (answered, cancelled by its client, evicted, expired) ends the upstream
request with it (the upstream is sent ``notifications/cancelled``) and every question of it
still open: the upstream receives ``cancel``. An upstream that is lost ends the call with
``-32603`` (``data.reason: "upstream_lost"``), one that cannot be had (the pool is full past
its wait, the upstream does not start) ``upstream_unavailable``. Nothing is ever sent to the
upstream twice: the call is held in this process, and a retry that reaches another one is
forwarded here (:mod:`~erlmcp_py.gateway._forward`), never replayed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import structlog
import trio

from erlmcp_py.client import ConnectionLost, ServerRequest
from erlmcp_py.core.versions import LATEST_SESSION_VERSION
from erlmcp_py.gateway._arguments import ArgumentAsker, NotRun
from erlmcp_py.gateway._asking import CANCEL, Asker, UrlQuestions
from erlmcp_py.gateway._link import Connection, UpstreamGone
from erlmcp_py.gateway._session import upstream_capabilities
from erlmcp_py.gateway._stateless_upstream import relay_stateless
from erlmcp_py.mcp.errors import ClientRequestError
from erlmcp_py.mcp.jsonrpc import (
    INTERNAL_ERROR,
    ErrorResponse,
    JsonRpcError,
    RequestId,
    Response,
)
from erlmcp_py.mcp.mrtr import MrtrPeer
from erlmcp_py.mcp.stateless import Caller

if TYPE_CHECKING:
    from erlmcp_py.gateway._pool import UpstreamPool

__all__ = ["BridgedCall", "upstream_params"]

log = structlog.get_logger("erlmcp.gateway.bridge")

#: The ``_meta`` members of a 2026-07-28 request that are its own (the upstream speaks a
#: session era, where its session carries them).
_PROTOCOL_META_PREFIX: Final = "io.modelcontextprotocol/"

#: Upstream notifications queued for one call at most (past it they are dropped, and logged).
_NOTES: Final = 256


def upstream_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """A 2026-07-28 request's params as a session-era upstream takes them: without
    ``requestState``, ``inputResponses`` and the ``io.modelcontextprotocol/*`` members of
    ``_meta`` (its other members, the progress token among them, kept)."""
    out = {k: v for k, v in params.items() if k not in ("requestState", "inputResponses")}
    meta = out.pop("_meta", None)
    if isinstance(meta, Mapping):
        kept = {k: v for k, v in meta.items() if not str(k).startswith(_PROTOCOL_META_PREFIX)}
        if kept:
            out["_meta"] = kept
    return out


class BridgedCall:
    """One 2026-07-28 call on a leased upstream session (see the module docstring); the
    :class:`~erlmcp_py.gateway._link.LinkEvents` of that session while it holds it.

    Args:
        pool: The gateway's pool of upstream sessions.
        asker: Asks the upstream's questions through the runtime.
        peer: The call's peer.
        caller: Who made the call.
        request_id: The id of the call's first request.
        method: ``tools/call`` or ``prompts/get``.
        name: The tool or prompt (the hosted page names it as asking).
        on_info: Told the upstream's ``initialize`` result of each session leased.
        arguments: Asks for the arguments a ``tools/call`` lacks before it is sent
            (``--ask-missing-arguments``), as input rounds like the upstream's questions.
    """

    def __init__(
        self,
        pool: UpstreamPool,
        asker: Asker,
        peer: MrtrPeer,
        caller: Caller,
        request_id: RequestId,
        method: str,
        name: str,
        on_info: Any = None,
        arguments: ArgumentAsker | None = None,
    ) -> None:
        self.pool = pool
        self.asker = asker
        self.peer = peer
        self.caller = caller
        self.request_id = request_id
        self.method = method
        self.name = name
        self._on_info = on_info
        self.arguments = arguments
        self._urls = UrlQuestions()
        self._questions: set[trio.CancelScope] = set()
        self._ended = False
        self._notes_in, self._notes_out = trio.open_memory_channel[tuple[str, Mapping[str, Any]]](
            _NOTES
        )

    async def run(self, params: Mapping[str, Any]) -> Mapping[str, Any]:
        """Send the call upstream and return its result.

        Raises:
            JsonRpcError: the upstream's error, or why it could not answer.
        """
        capabilities = upstream_capabilities(self.peer.capabilities, LATEST_SESSION_VERSION)
        failed: JsonRpcError | None = None
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._pass_notifications)
            try:
                answer = await self._ask_upstream(capabilities, params)
            except JsonRpcError as exc:  # raised out of the nursery, not in a group
                failed = exc
            finally:
                # the notifications the upstream sent before its answer are passed before it
                # (at most the queue's bound); a call cancelled cancels their passing too
                self._end()
        if failed is not None:
            raise failed
        if isinstance(answer, ErrorResponse):
            raise JsonRpcError(answer.code, answer.message, answer.data)
        return answer.result

    async def _ask_upstream(
        self, capabilities: Mapping[str, Any], params: Mapping[str, Any]
    ) -> Response | ErrorResponse:
        """The upstream's answer on a leased session.

        Raises:
            JsonRpcError: no session could be had, or it was lost.
        """
        try:
            async with self.pool.lease(capabilities, self) as link:
                connection = await link.connection()
                if self._on_info is not None:
                    self._on_info(link.initialize_result)
                if self.method == "tools/call" and self.arguments is not None:
                    completed = await self.arguments.complete(
                        params,
                        connection.session,
                        peer=self.peer,
                        request_id=self.request_id,
                        tenant=self.caller.tenant,
                        locale=self.caller.locale,
                        who={"principal": self.caller.principal, "user": self.caller.tenant.user},
                    )
                    if isinstance(completed, NotRun):
                        return Response(self.request_id, completed.result)
                    params = completed
                if connection.session.stateless:
                    return await self._ask_stateless(connection, params)
                return await connection.session.request_raw(self.method, params)
        except ClientRequestError as exc:  # the client's answer to a 2026-07-28 upstream's
            raise JsonRpcError(exc.code, exc.message, exc.data) from None
        except UpstreamGone as exc:
            raise JsonRpcError(
                INTERNAL_ERROR,
                f"the upstream server is unavailable: {exc}",
                {"reason": "upstream_unavailable"},
            ) from None
        except ConnectionLost as exc:
            raise JsonRpcError(
                INTERNAL_ERROR,
                f"the upstream server was lost: {exc}",
                {"reason": "upstream_lost"},
            ) from None

    async def _ask_stateless(
        self, connection: Connection, params: Mapping[str, Any]
    ) -> Response | ErrorResponse:
        """The call on a 2026-07-28 upstream: its input requests asked as the questions of a
        session-era upstream are (:meth:`_answer`), each round answered in its retry
        (:mod:`~erlmcp_py.gateway._stateless_upstream`). A question the runtime refuses is answered
        ``cancel``: an input response cannot be an error."""

        async def answer(key: str, method: str, asked: Mapping[str, Any]) -> Mapping[str, Any]:
            try:
                return await self._answer(connection, ServerRequest(key, method, asked))
            except ClientRequestError:
                if method == "elicitation/create":
                    return dict(CANCEL)
                raise

        return await relay_stateless(
            connection.session, self.request_id, self.method, params, answer
        )

    def _end(self) -> None:
        """The call ended: its questions still open end with it (the upstream gets cancel)."""
        self._ended = True
        for scope in self._questions:
            scope.cancel()
        self._notes_in.close()

    # -- LinkEvents: the upstream, while this call holds its session ------------------------------

    def upstream_request(self, connection: Connection, request: ServerRequest) -> Any:
        """Answer a request of the upstream (an awaitable, as the link expects)."""
        return self._answer(connection, request)

    async def _answer(self, connection: Connection, request: ServerRequest) -> Mapping[str, Any]:
        if request.method == "ping":
            return {}
        scope = trio.CancelScope()
        self._questions.add(scope)
        try:
            with scope:
                if self._ended:
                    scope.cancel()
                    await trio.lowlevel.checkpoint()
                elif request.method == "elicitation/create":
                    return await self.asker.elicit(
                        request.params,
                        peer=self.peer,
                        request_id=self.request_id,
                        tool=self.name,
                        tenant=self.caller.tenant,
                        locale=self.caller.locale,
                        who={
                            "principal": self.caller.principal,
                            "user": self.caller.tenant.user,
                            "session": None,
                            "upstream_request": str(request.id)[:80],
                        },
                        urls=self._urls,
                        nursery=connection.nursery,
                    )
                else:
                    return await self.asker.relay(
                        request.method, request.params, peer=self.peer, tenant=self.caller.tenant
                    )
        finally:
            self._questions.discard(scope)
        # the call this question belonged to has ended
        if request.method == "elicitation/create":
            return {"action": "cancel"}
        raise ClientRequestError(
            INTERNAL_ERROR, "the call this belonged to has ended", {"reason": "request_ended"}
        )

    def upstream_notification(
        self, connection: Connection, method: str, params: Mapping[str, Any]
    ) -> None:
        """Queue a notification of the upstream for the call's attached request, in order."""
        if method == "notifications/tools/list_changed" and self.arguments is not None:
            self.arguments.schemas.stale()
        try:
            self._notes_in.send_nowait((method, params))
        except trio.WouldBlock:
            log.warning("upstream_notification_dropped", method=method[:80], why="full")
        except trio.ClosedResourceError:
            pass

    async def upstream_connected(self, connection: Connection) -> None:
        """Nothing to set on a pooled session."""

    async def _pass_notifications(self) -> None:
        async with self._notes_out:
            async for method, params in self._notes_out:
                if method == "notifications/cancelled":
                    continue  # its request's answering was cancelled by the client session
                if method == "notifications/elicitation/complete":
                    await self.asker.complete(
                        self._urls, params.get("elicitationId"), self.caller.tenant
                    )
                    continue
                if method == "notifications/progress":
                    # the request attached now has its own token (or none: then dropped)
                    params = {**params, "progressToken": self.peer.progress_token}
                await self.peer.notify(method, params)
