"""The protocol half of the terminal client: both eras over any :class:`~._wire.Wire`.

Theory of operation
-------------------
Both eras declare the user's locale (:data:`~erlmcp_py.core.i18n.LOCALE_META_KEY` in
``_meta``), so the server says what it says to people (re-prompts, deadline warnings) in the
language the client shows: on ``initialize`` for a session, on every request for 2026-07-28.

*2025-11-25 (session).* :meth:`McpClient.open` sends ``initialize`` (declaring form and URL
elicitation) and ``notifications/initialized``; the negotiated version goes to the wire. A
``tools/call`` or ``prompts/get`` is one request: the server's ``elicitation/create`` requests
arrive on the wire while it runs and are answered by the wire's ``on_request``.

*2026-07-28 (stateless, MRTR; see docs/mrtr.md).* Every request carries ``_meta`` (protocol
version, client capabilities, client info, and the log level ``info``, the level a session
starts at: the server's log messages and deadline warnings come on the request they relate
to); :meth:`McpClient.open` asks ``server/discover``.
A ``tools/call`` or ``prompts/get`` may answer an ``InputRequiredResult``: each of its
``inputRequests`` is answered by the same ``on_request`` that answers the session era's
requests, and the call is retried with the ``inputResponses`` and the exact ``requestState``,
until the result is ``complete`` (or an error), by
:func:`~erlmcp_py.mcp.mrtr_client.call_until_complete`. A request ``on_request`` refuses is
left out (the server asks again); a state-only result (the server held the retry and has
nothing to ask) is retried with its state alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from erlmcp_py.connect._wire import OnRequest, RpcError, Wire
from erlmcp_py.core.i18n import LOCALE_META_KEY
from erlmcp_py.mcp.mrtr_client import call_until_complete

__all__ = ["CAPABILITIES", "CLIENT_INFO", "MODERN", "PROTOCOLS", "SESSION", "McpClient"]

SESSION: Final = "2025-11-25"
MODERN: Final = "2026-07-28"
#: The protocol versions ``connect --protocol`` speaks.
PROTOCOLS: Final = (SESSION, MODERN)
#: What the client can show: forms and URL pages.
CAPABILITIES: Final[Mapping[str, Any]] = {"elicitation": {"form": {}, "url": {}}}
CLIENT_INFO: Final[Mapping[str, Any]] = {"name": "erlmcp-py-connect", "version": "0.1.0"}
#: The server log messages a 2026-07-28 request asks for (those of a session by default).
LOG_LEVEL: Final = "info"

_META_VERSION = "io.modelcontextprotocol/protocolVersion"


@dataclass(eq=False)
class McpClient:
    """One server, as the terminal client talks to it.

    Attributes:
        wire: The connection.
        protocol: ``2025-11-25`` or ``2026-07-28`` (see :data:`PROTOCOLS`).
        answer: Answers ``elicitation/create`` (and any other server request); used for the
            2026-07-28 ``inputRequests`` (the wire calls it for the session era's requests).
        locale: The user's locale (``en-US``, ``pt-BR``), declared to the server; ``None``:
            none is declared (the server's default applies).
        server: ``name version`` of the server, once :meth:`open` has run.
    """

    wire: Wire
    protocol: str
    answer: OnRequest
    locale: str | None = None
    server: str = "?"

    def _meta(self) -> dict[str, Any]:
        """What ``_meta`` declares on every request of this era (see the module docstring)."""
        meta: dict[str, Any] = {}
        if self.modern:
            meta = {
                _META_VERSION: MODERN,
                "io.modelcontextprotocol/clientCapabilities": dict(CAPABILITIES),
                "io.modelcontextprotocol/clientInfo": dict(CLIENT_INFO),
                "io.modelcontextprotocol/logLevel": LOG_LEVEL,
            }
        if self.locale is not None:
            meta[LOCALE_META_KEY] = self.locale
        return meta

    @property
    def modern(self) -> bool:
        """Whether this is the stateless 2026-07-28 era."""
        return self.protocol == MODERN

    def _params(self, params: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(params)
        if self.modern:
            out["_meta"] = self._meta()
        return out

    async def open(self) -> None:
        """Start talking: ``initialize`` (session era) or ``server/discover`` (stateless)."""
        if self.modern:
            self.wire.set_protocol(MODERN)
            result = await self.wire.request("server/discover", self._params({}))
            meta = result.get("_meta")
            info = (
                meta.get("io.modelcontextprotocol/serverInfo")
                if isinstance(meta, Mapping)
                else None
            )
        else:
            initialize: dict[str, Any] = {
                "protocolVersion": self.protocol,
                "capabilities": dict(CAPABILITIES),
                "clientInfo": dict(CLIENT_INFO),
            }
            if meta := self._meta():
                initialize["_meta"] = meta
            result = await self.wire.request("initialize", initialize)
            version = result.get("protocolVersion")
            if isinstance(version, str):
                self.protocol = version
            self.wire.set_protocol(self.protocol)
            await self.wire.notify("notifications/initialized")
            info = result.get("serverInfo")
        if isinstance(info, Mapping):
            self.server = f"{info.get('name', '?')} {info.get('version', '')}".strip()

    async def _list(self, method: str, key: str) -> list[dict[str, Any]]:
        """Every item of a paginated list (all pages)."""
        items: list[dict[str, Any]] = []
        cursor: Any = None
        while True:
            params = {} if cursor is None else {"cursor": cursor}
            result = await self.wire.request(method, self._params(params))
            items.extend(x for x in result.get(key) or () if isinstance(x, dict))
            cursor = result.get("nextCursor")
            if not cursor:
                return items

    async def list_tools(self) -> list[dict[str, Any]]:
        """Every tool of the server."""
        return await self._list("tools/list", "tools")

    async def list_resources(self) -> list[dict[str, Any]]:
        """Every resource of the server."""
        return await self._list("resources/list", "resources")

    async def list_resource_templates(self) -> list[dict[str, Any]]:
        """Every resource template of the server."""
        return await self._list("resources/templates/list", "resourceTemplates")

    async def list_prompts(self) -> list[dict[str, Any]]:
        """Every prompt of the server."""
        return await self._list("prompts/list", "prompts")

    async def read_resource(self, uri: str) -> dict[str, Any]:
        """``resources/read``: the result (its ``contents``).

        Raises:
            RpcError: the server answered with an error (an unknown URI…).
            ConnectionLost: the server went away.
        """
        return await self.wire.request("resources/read", self._params({"uri": uri}))

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Call a tool to its end, answering every elicitation on the way.

        Raises:
            RpcError: the server answered with an error.
            ConnectionLost: the server went away.
        """
        return await self._until_complete("tools/call", name, arguments)

    async def get_prompt(self, name: str, arguments: Mapping[str, str]) -> dict[str, Any]:
        """Get a prompt (its ``messages``), answering every elicitation on the way: a prompt
        may ask the user, as a tool does.

        Raises:
            RpcError: the server answered with an error.
            ConnectionLost: the server went away.
        """
        return await self._until_complete("prompts/get", name, arguments)

    async def _until_complete(
        self, method: str, name: str, arguments: Mapping[str, Any]
    ) -> dict[str, Any]:
        """One ``tools/call`` or ``prompts/get``: a request of its own in a session (the
        server's elicitations come on the wire meanwhile); on 2026-07-28, retried until the
        result is complete (see the module docstring)."""
        base = {"name": name, "arguments": dict(arguments)}
        if not self.modern:
            return await self.wire.request(method, self._params(base))

        async def send(params: dict[str, Any]) -> dict[str, Any]:
            return await self.wire.request(method, self._params(params))

        return await call_until_complete(send, self._answer_input, base)

    async def _answer_input(
        self, key: str, method: str, params: Mapping[str, Any]
    ) -> Mapping[str, Any] | None:
        """The user's answer to one input request; ``None`` for a request this client does
        not answer (an :class:`RpcError` from :attr:`answer`): the server asks again."""
        try:
            return await self.answer(method, params)
        except RpcError:
            return None
