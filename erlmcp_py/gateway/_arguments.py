"""A ``tools/call`` that lacks required arguments: they are asked, not failed.

Theory of operation
-------------------
With ``ask_missing_arguments`` (``erlmcp-py gateway --ask-missing-arguments``), each
``tools/call`` of a session client is checked against the tool's ``inputSchema`` before it is
relayed. The schemas are the upstream's own: :class:`ToolSchemas` holds what its
``tools/list`` gave (every page), fetched when a call first needs them and fetched again after
the upstream's ``notifications/tools/list_changed`` or a new upstream connection.

:func:`~erlmcp_py.core.tool_arguments.missing_arguments` names the required arguments the call
lacks and builds the form that asks for them. :meth:`ArgumentAsker.complete` then:

* nothing missing, a tool the upstream did not list, or a missing argument no form can ask
  (an object, a ``pattern``, a ``$ref``…): the call goes as it is, and the upstream answers it
  with its own error;
* else asks the user through the runtime -- the same path as a tool's ``ctx.elicit``: the
  deadline and its warning, strict validation and re-prompts, the rate and pending limits, the
  hosted page for a secret -- and:

  - the user answered: the call goes with the answers added to its arguments;
  - the user declined, cancelled, nobody answered in time, or the question failed: the
    upstream is not called; the client gets a tool error result (``isError``) saying so;
  - the runtime could not ask (the client has no form elicitation, a secret with no hosted
    page, a limit): the call goes as it is.

Every such question is written to the audit log (``gateway_missing_arguments``): who, the tool,
the argument names and the outcome, never the values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import structlog
import trio

from erlmcp_py.client import ClientSession
from erlmcp_py.core.errors import ErlmcpError
from erlmcp_py.core.i18n import Texts
from erlmcp_py.core.outcomes import Accepted, Cancelled, Declined, Failed, TimedOut
from erlmcp_py.core.tool_arguments import missing_arguments
from erlmcp_py.gateway._asking import Asker
from erlmcp_py.mcp.call_peer import CallPeer
from erlmcp_py.mcp.jsonrpc import ErrorResponse, RequestId
from supervisors import ActorError

__all__ = ["ArgumentAsker", "NotRun", "ToolSchemas"]

log = structlog.get_logger("erlmcp.gateway.audit")

#: The most ``tools/list`` pages read for the schemas (a server that pages forever is cut).
MAX_PAGES: Final = 100


class ToolSchemas:
    """The upstream's tools' ``inputSchema`` by name (module docstring)."""

    def __init__(self) -> None:
        self._schemas: dict[str, object] | None = None
        self._generation = 0
        self._lock = trio.Lock()

    def stale(self) -> None:
        """The upstream's tools may have changed: read them again when next needed."""
        self._generation += 1
        self._schemas = None

    async def input_schema(self, session: ClientSession, tool: str) -> object:
        """The ``inputSchema`` of ``tool`` (``None`` when the upstream did not list it).

        Raises:
            ConnectionLost: the upstream is gone.
        """
        async with self._lock:
            schemas = self._schemas
            if schemas is None:
                generation = self._generation
                schemas = await _list_tools(session)
                if generation == self._generation:  # no list_changed while it was read
                    self._schemas = schemas
            return schemas.get(tool)


async def _list_tools(session: ClientSession) -> dict[str, object]:
    schemas: dict[str, object] = {}
    cursor: object = None
    for _ in range(MAX_PAGES):
        answer = await session.request_raw("tools/list", {"cursor": cursor} if cursor else None)
        if isinstance(answer, ErrorResponse):
            break
        tools = answer.result.get("tools")
        for tool in tools if isinstance(tools, list) else ():
            if isinstance(tool, Mapping) and isinstance(tool.get("name"), str):
                schemas[tool["name"]] = tool.get("inputSchema")
        cursor = answer.result.get("nextCursor")
        if not isinstance(cursor, str) or not cursor:
            break
    return schemas


@dataclass(frozen=True, slots=True)
class NotRun:
    """The call is not relayed: the client is answered ``result`` (a tool error)."""

    result: dict[str, Any]


class ArgumentAsker:
    """Asks a session's user for the arguments its calls lack (module docstring).

    Args:
        asker: The session's :class:`~erlmcp_py.gateway._asking.Asker`.
    """

    def __init__(self, asker: Asker) -> None:
        self.asker = asker
        self.schemas = ToolSchemas()

    async def complete(
        self,
        params: Mapping[str, Any],
        session: ClientSession,
        *,
        peer: CallPeer,
        request_id: RequestId,
        tenant: Any,
        locale: str | None,
        who: Mapping[str, Any],
    ) -> Mapping[str, Any] | NotRun:
        """The ``tools/call`` params to relay (the answers added), or :class:`NotRun`.

        Raises:
            ConnectionLost: the upstream is gone (while its tools were read).
        """
        tool = params.get("name")
        if not isinstance(tool, str):
            return params
        arguments = params.get("arguments")
        missing = missing_arguments(await self.schemas.input_schema(session, tool), arguments)
        if missing is None:
            return params
        fields = {**who, "tool": tool[:80], "arguments": [n[:80] for n in missing.names[:50]]}
        if missing.form is None:
            log.info(
                "gateway_missing_arguments",
                **fields,
                outcome="not_asked",
                why=missing.unaskable[:200],
            )
            return params
        texts = Texts(locale or "en-US")
        names = ", ".join(missing.names)
        try:
            outcome = await self.asker.ask_form(
                texts("gateway.arguments.ask", tool=tool, names=names),
                missing.form,
                peer=peer,
                request_id=request_id,
                tool=tool,
                tenant=tenant,
                locale=locale,
            )
        except (ErlmcpError, ActorError) as exc:
            log.info(
                "gateway_missing_arguments", **fields, outcome="not_asked", why=type(exc).__name__
            )
            return params
        log.info("gateway_missing_arguments", **fields, outcome=type(outcome).__name__)
        if isinstance(outcome, Accepted) and isinstance(outcome.content, Mapping):
            given = dict(arguments) if isinstance(arguments, Mapping) else {}
            return {**params, "arguments": {**given, **outcome.content}}
        if isinstance(outcome, Declined):
            why = texts("gateway.arguments.declined", tool=tool, names=names)
        elif isinstance(outcome, Cancelled):
            why = texts("gateway.arguments.cancelled", tool=tool, names=names)
        elif isinstance(outcome, TimedOut):
            why = texts("gateway.arguments.timed_out", tool=tool, names=names)
        elif isinstance(outcome, Failed):
            why = texts("gateway.arguments.failed", tool=tool, names=names, reason=outcome.reason)
        else:  # Unsupported: the client cannot be asked this form; the upstream answers
            return params
        return NotRun({"content": [{"type": "text", "text": why}], "isError": True})
