"""A 2026-07-28 upstream behind a session-era client: the handshake, and each relayed request.

Theory of operation
-------------------
A 2026-07-28 upstream has no ``initialize`` and no session: every request names its version,
the client's capabilities and info in its ``_meta``, and a tool (or prompt) that needs the user
answers an ``InputRequiredResult`` instead of sending ``elicitation/create``. A session-era
client knows none of that; the gateway speaks each side's era.

* *Which era.* :func:`shake_hands` sends ``initialize`` unless the upstream's era is known to
  be 2026-07-28 (:attr:`~erlmcp_py.gateway._upstream.Upstream.era`). With ``era="auto"``, an
  upstream that refuses it for its version (``-32022``), does not know the method (``-32601``,
  as a stateless-only endpoint answers), or negotiates 2026-07-28 is asked
  ``server/discover`` instead, and the connection speaks 2026-07-28 from then on. The client's
  ``initialize`` is answered from the discovery: the client's own (negotiated) version, the
  upstream's capabilities, ``serverInfo`` and instructions.
* *Each request* (:func:`relay_stateless`) goes with the connection's ``_meta`` (the client
  capabilities the gateway carries, the client's info, locale and log level). The methods
  2026-07-28 removed are the gateway's: ``ping`` is answered at once, ``logging/setLevel``
  sets the level every later request asks for, ``resources/subscribe`` and
  ``resources/unsubscribe`` are ``-32601`` (a stateless upstream has no connection to notify).
* *A ``tools/call`` or ``prompts/get``* runs its input rounds
  (:func:`~erlmcp_py.client.call_until_complete`): each input request is answered by the
  injected ``answer`` (the gateway session asks the user through the runtime), and the
  request is sent again with the same params, the answers under the keys the upstream chose
  and its exact ``requestState``, until a final result. Its 2026-07-28 members
  (``resultType``, the ``_meta`` server info) are taken off for the client. A caller that stops
  waiting sends no further round: the upstream keeps its state until it expires.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from erlmcp_py.client import (
    ClientRequestError,
    ClientSession,
    InputRoundsExhausted,
    call_until_complete,
)
from erlmcp_py.core.versions import STATELESS_VERSIONS, V_2026_07_28
from erlmcp_py.mcp.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    ErrorResponse,
    RequestId,
    Response,
)
from erlmcp_py.mcp.meta import SERVER_INFO, UNSUPPORTED_PROTOCOL_VERSION
from erlmcp_py.mcp.params import LOG_LEVELS
from erlmcp_py.mcp.versions import negotiate_version

__all__ = [
    "MAX_ROUNDS",
    "ROUNDED",
    "AnswerInput",
    "relay_stateless",
    "session_answer",
    "shake_hands",
]

AnswerInput = Callable[[str, str, Mapping[str, Any]], Awaitable[Mapping[str, Any] | None]]
"""Answers one input request ``(key, method, params)`` of the upstream: its result."""

#: The ``initialize`` refusals that mean "speak 2026-07-28 to me" (``era="auto"``).
_STATELESS_REFUSALS: Final = frozenset({UNSUPPORTED_PROTOCOL_VERSION, METHOD_NOT_FOUND})
#: The requests whose answer may be an ``InputRequiredResult``.
ROUNDED: Final = frozenset({"tools/call", "prompts/get"})
#: Rounds of one call at most: an upstream that never completes ends the call.
MAX_ROUNDS: Final = 256
#: The members of a final result that only a 2026-07-28 client reads.
_STATELESS_MEMBERS: Final = ("resultType", "ttlMs", "cacheScope")


async def shake_hands(session: ClientSession, era: str, requested: str) -> dict[str, Any]:
    """Start talking to the upstream in its era (module docstring); the client's
    ``initialize`` result.

    Args:
        session: The connection's session (set to 2026-07-28 when the upstream speaks it).
        era: The upstream's era as configured (``"auto"``, ``"session"``, ``"2026-07-28"``).
        requested: The version the downstream client asked for.

    Raises:
        ClientRequestError: the upstream refused ``initialize`` (and, with ``"auto"``,
            ``server/discover`` too: the first refusal is raised).
    """
    refused: ClientRequestError | None = None
    if era != V_2026_07_28:
        try:
            result = await session.initialize()
        except ClientRequestError as exc:
            if era == "session" or exc.code not in _STATELESS_REFUSALS:
                raise
            refused = exc
        else:
            if result.get("protocolVersion") not in STATELESS_VERSIONS or era == "session":
                return result
    session.protocol_version = V_2026_07_28
    session.wire.set_protocol(V_2026_07_28)
    try:
        discovered = await session.discover()
    except ClientRequestError:
        if refused is not None:
            raise refused from None
        raise
    return session_answer(discovered, session, requested)


def session_answer(
    discovered: Mapping[str, Any], session: ClientSession, requested: str
) -> dict[str, Any]:
    """The ``initialize`` result of a session-era client, from the upstream's
    ``server/discover``: the version negotiated for the client, the upstream's capabilities
    (but its 2026-07-28 extensions), ``serverInfo`` and instructions."""
    capabilities = discovered.get("capabilities")
    caps = (
        {k: v for k, v in capabilities.items() if k != "extensions"}
        if isinstance(capabilities, Mapping)
        else {}
    )
    result: dict[str, Any] = {
        "protocolVersion": negotiate_version(requested),
        "capabilities": caps,
        "serverInfo": session.server_info or {"name": "upstream", "version": "0"},
    }
    if session.instructions:
        result["instructions"] = session.instructions
    return result


def _session_result(result: Mapping[str, Any]) -> dict[str, Any]:
    """A 2026-07-28 result as a session-era client takes it."""
    out = {k: v for k, v in result.items() if k not in _STATELESS_MEMBERS}
    meta = out.get("_meta")
    if isinstance(meta, Mapping):
        rest = {k: v for k, v in meta.items() if k != SERVER_INFO}
        if rest:
            out["_meta"] = rest
        else:
            del out["_meta"]
    return out


class _Refused(Exception):
    """A round answered with a JSON-RPC error: the call's answer."""

    def __init__(self, answer: ErrorResponse) -> None:
        super().__init__(answer.message)
        self.answer = answer


async def relay_stateless(
    session: ClientSession,
    id: RequestId,
    method: str,
    params: Mapping[str, Any] | None,
    answer: AnswerInput,
) -> Response | ErrorResponse:
    """Client request ``id`` on a 2026-07-28 connection (module docstring); its answer.

    Raises:
        ConnectionLost: no answer can come.
        ClientRequestError: ``answer`` raised it (the call ends with that error).
    """
    given = dict(params or {})
    if method == "ping":
        return Response(id, {})
    if method == "logging/setLevel":
        level = given.get("level")
        if level not in LOG_LEVELS:
            return ErrorResponse(id, INVALID_PARAMS, "Invalid params: unknown log level", None)
        session.log_level = str(level)
        return Response(id, {})
    if method in ("resources/subscribe", "resources/unsubscribe"):
        return ErrorResponse(
            id,
            METHOD_NOT_FOUND,
            f"Method not found: {method} (the upstream speaks 2026-07-28, which has no "
            "resource subscriptions)",
            {"reason": "upstream_stateless"},
        )
    if method not in ROUNDED:
        reply = await session.request_raw(method, session.with_meta(given))
        if isinstance(reply, ErrorResponse):
            return reply
        return Response(id, _session_result(reply.result))

    async def send(retry: dict[str, Any]) -> Mapping[str, Any]:
        reply = await session.request_raw(method, session.with_meta(retry))
        if isinstance(reply, ErrorResponse):
            raise _Refused(reply)
        return reply.result

    try:
        result = await call_until_complete(send, answer, given, max_rounds=MAX_ROUNDS)
    except _Refused as refused:
        error = refused.answer
        return ErrorResponse(id, error.code, error.message, error.data)
    except InputRoundsExhausted as exc:
        return ErrorResponse(
            id,
            INTERNAL_ERROR,
            f"the upstream still asked for input: {exc}",
            {"reason": "too_many_rounds", "rounds": exc.rounds},
        )
    return Response(id, _session_result(result))
