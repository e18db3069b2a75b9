"""Per-request protocol metadata of the stateless era (2026-07-28): read it, or refuse.

Pure: no I/O.

Theory of operation
-------------------
From 2026-07-28 on there is no ``initialize``: every request carries, in ``params._meta``,
the protocol version (``io.modelcontextprotocol/protocolVersion``, required), the client's
capabilities *for this request* (``io.modelcontextprotocol/clientCapabilities``, required),
and optionally ``io.modelcontextprotocol/clientInfo`` and ``…/logLevel``.

A request is *stateless* (2026-07-28) when its ``_meta`` names a protocol version, or when it
is ``server/discover`` (which only exists on 2026-07-28). Everything else is
left to the session era (``initialize`` first). :func:`request_meta` reads ``_meta`` once per
request: ``None`` for the session era, else the checked :class:`RequestMeta` that the
stateless side then serves the request with (:func:`parse_request_meta` checks a request
already taken as stateless, e.g. by its HTTP headers). Either refuses a stateless request:

* ``_meta`` missing, or a required member missing or of the wrong type → ``-32602``;
* a version we do not serve per request → ``UnsupportedProtocolVersion`` (``-32022``) whose
  ``data.supported`` lists every version we speak (2026-07-28 first, then the ``initialize``
  ones), so a dual-era client can pick one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from erlmcp_py.core.versions import STATELESS_VERSIONS, SUPPORTED_VERSIONS
from erlmcp_py.mcp.jsonrpc import JsonRpcError, Request, RequestId, invalid_params
from erlmcp_py.mcp.versions import ClientCapabilities

__all__ = [
    "CLIENT_CAPABILITIES",
    "CLIENT_INFO",
    "LOG_LEVEL",
    "MISSING_REQUIRED_CLIENT_CAPABILITY",
    "PROTOCOL_VERSION",
    "SERVER_INFO",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "RequestMeta",
    "is_stateless_request",
    "missing_capability",
    "parse_request_meta",
    "request_meta",
    "unsupported_version",
]

PROTOCOL_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"
SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"

#: MCP error code (2026-07-28): the request needs a capability the client did not declare.
MISSING_REQUIRED_CLIENT_CAPABILITY: Final = -32021
#: MCP error code (2026-07-28): the request's protocol version is not served.
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022

_DISCOVER: Final = "server/discover"


@dataclass(frozen=True, slots=True)
class RequestMeta:
    """The protocol metadata of one stateless request.

    Attributes:
        protocol_version: The version the request is written in (one of
            :data:`~erlmcp_py.core.versions.STATELESS_VERSIONS`).
        capabilities: What the client declared for this request.
        client_info: ``clientInfo`` as sent (self-reported; for logs only).
        log_level: The requested log level, or ``None`` (no ``notifications/message``).
        progress_token: ``progressToken``, when the client asked for progress.
    """

    protocol_version: str
    capabilities: ClientCapabilities
    client_info: Mapping[str, Any] = field(default_factory=dict)
    log_level: str | None = None
    progress_token: str | int | None = None


def _meta_of(params: object) -> Mapping[str, Any] | None:
    if not isinstance(params, Mapping):
        return None
    meta = params.get("_meta")
    return meta if isinstance(meta, Mapping) else None


def is_stateless_request(request: Request) -> bool:
    """Whether ``request`` belongs to the stateless era (see the module docstring)."""
    meta = _meta_of(request.params)
    return request.method == _DISCOVER or (meta is not None and PROTOCOL_VERSION in meta)


def unsupported_version(requested: object, id: RequestId | None = None) -> JsonRpcError:
    """The ``-32022`` error for a version we do not serve per request."""
    shown = requested[:64] if isinstance(requested, str) else repr(requested)[:64]
    return JsonRpcError(
        UNSUPPORTED_PROTOCOL_VERSION,
        "Unsupported protocol version",
        {"supported": list(SUPPORTED_VERSIONS), "requested": shown},
        id,
    )


def missing_capability(required: Mapping[str, Any], id: RequestId | None = None) -> JsonRpcError:
    """The ``-32021`` error: ``required`` is a ``ClientCapabilities`` object of what is missing."""
    return JsonRpcError(
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        "Missing required client capability",
        {"requiredCapabilities": dict(required)},
        id,
    )


def request_meta(request: Request) -> RequestMeta | None:
    """The era of ``request`` and, for the stateless era, its metadata: ``_meta`` read once.

    Args:
        request: Any client request.

    Returns:
        ``None`` when the request belongs to the session era (:func:`is_stateless_request` is
        false), else its checked metadata (as :func:`parse_request_meta` gives it).

    Raises:
        JsonRpcError: the request is stateless and its metadata is refused (see
            :func:`parse_request_meta`).
    """
    meta = _meta_of(request.params)
    if (meta is None or PROTOCOL_VERSION not in meta) and request.method != _DISCOVER:
        return None  # the session era (as is_stateless_request decides)
    return _read(request, meta)


def parse_request_meta(request: Request) -> RequestMeta:
    """Read and check the per-request metadata of a stateless request.

    Args:
        request: A request served statelessly (:func:`is_stateless_request`, or a transport that
            knows the era otherwise).

    Returns:
        The metadata.

    Raises:
        JsonRpcError: ``-32602`` when ``params`` is not an object, or ``_meta`` or a required
            member is missing or malformed; ``-32022`` when the version is not one of
            :data:`~erlmcp_py.core.versions.STATELESS_VERSIONS`.
    """
    return _read(request, _meta_of(request.params))


def _read(request: Request, meta: Mapping[str, Any] | None) -> RequestMeta:
    """Check ``meta`` (``request``'s ``params._meta`` when it is an object, else ``None``)."""
    id = request.id
    if meta is None:
        params = request.params
        if params is not None and not isinstance(params, Mapping):
            raise invalid_params("Invalid params: params must be an object", None, id)
        raise invalid_params(
            "Invalid params: _meta with the protocol version and client capabilities is required",
            {"missing": [PROTOCOL_VERSION, CLIENT_CAPABILITIES]},
            id,
        )
    version = meta.get(PROTOCOL_VERSION)
    if not isinstance(version, str):
        raise invalid_params(
            f"Invalid params: _meta.{PROTOCOL_VERSION} must be a string",
            {"missing": [PROTOCOL_VERSION]},
            id,
        )
    if version not in STATELESS_VERSIONS:
        raise unsupported_version(version, id)
    caps = meta.get(CLIENT_CAPABILITIES)
    if not isinstance(caps, Mapping):
        raise invalid_params(
            f"Invalid params: _meta.{CLIENT_CAPABILITIES} must be an object",
            {"missing": [CLIENT_CAPABILITIES]},
            id,
        )
    info = meta.get(CLIENT_INFO)
    level = meta.get(LOG_LEVEL)
    token = meta.get("progressToken")
    return RequestMeta(
        protocol_version=version,
        capabilities=ClientCapabilities.parse(caps, version),
        client_info=dict(info) if isinstance(info, Mapping) else {},
        log_level=level if isinstance(level, str) else None,
        progress_token=token if type(token) in (str, int) else None,
    )
