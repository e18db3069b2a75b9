"""Exceptions a tool may raise to shape the answer to its ``tools/call``, and the one error
answer of a JSON-RPC request (:class:`ClientRequestError`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from erlmcp_py.core.errors import ErlmcpError
from erlmcp_py.mcp.jsonrpc import JsonRpcError

__all__ = [
    "URL_ELICITATION_REQUIRED",
    "CapabilityMissing",
    "ClientRequestError",
    "ToolError",
    "UrlElicitationRequired",
]

#: MCP error code: the request needs URL-mode elicitations completed first (2025-11-25).
URL_ELICITATION_REQUIRED: Final = -32042


class ToolError(ErlmcpError):
    """Raise from a tool to answer with an ``isError: true`` result carrying this message.

    Any other exception does the same (its text is the message); this one just says it is
    deliberate.
    """


class ClientRequestError(ErlmcpError):
    """A JSON-RPC error answer to a request: the client's to a server's (``ctx.request``,
    ``ctx.sample``), or a server's to a client's (:mod:`erlmcp_py.client`). A client's handler
    raises it to answer a server request with that error.

    Attributes:
        code: The JSON-RPC error code.
        message: The error's message.
        data: Its ``data``, if any.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.data = data


class CapabilityMissing(ErlmcpError):
    """The client did not declare the capability a request needs (nothing was sent).

    Attributes:
        capability: The missing capability (e.g. ``"sampling"``).
    """

    def __init__(self, capability: str) -> None:
        super().__init__(f"the client does not support {capability}")
        self.capability = capability


class UrlElicitationRequired(ErlmcpError):
    """Raise from a tool: the call cannot proceed until URL-mode elicitations are completed.

    Answered with the JSON-RPC error ``-32042`` whose ``data.elicitations`` lists them; the
    client completes them and retries the call.

    Args:
        elicitations: URL-mode elicitation params, each with ``url``, ``message`` and
            ``elicitationId`` (``mode`` is filled in).
        message: The error message.
    """

    def __init__(
        self,
        elicitations: Sequence[Mapping[str, Any]],
        message: str = "This request requires more information.",
    ) -> None:
        items: list[dict[str, Any]] = []
        for e in elicitations:
            item = {"mode": "url", **e}
            for key in ("url", "message", "elicitationId"):
                if not isinstance(item.get(key), str) or not item[key]:
                    raise ValueError(f"each URL elicitation needs a non-empty {key!r}")
            if item["mode"] != "url":
                raise ValueError("UrlElicitationRequired lists URL-mode elicitations only")
            items.append(item)
        if not items:
            raise ValueError("UrlElicitationRequired needs at least one elicitation")
        super().__init__(message)
        self.message = message
        self.elicitations = items

    def to_jsonrpc(self) -> JsonRpcError:
        """The ``-32042`` error answering the call."""
        return JsonRpcError(
            URL_ELICITATION_REQUIRED, self.message, {"elicitations": self.elicitations}
        )
