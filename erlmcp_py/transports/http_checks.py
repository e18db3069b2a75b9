"""Pure header checks of the Streamable HTTP transport (no I/O).

DNS-rebinding protection (``Host`` and ``Origin``), content negotiation (``Accept``), the
``MCP-Protocol-Version`` header of a session, and the request metadata headers of a 2026-07-28
request (``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``). Each check returns ``None``
when the request may proceed, or a short, client-safe reason; the transport turns that into the
HTTP status.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

from erlmcp_py.core.versions import PUBLISHED_SESSION_VERSIONS

__all__ = [
    "HEADER_MISMATCH",
    "LOOPBACK_HOSTS",
    "NAME_PARAMS",
    "HostPolicy",
    "accepts",
    "check_stateless_headers",
    "check_protocol_version_header",
    "decode_header_value",
    "hostname_of",
    "http_status_for",
    "public_origin",
]

#: Loopback names a local server answers to by default (IPv6 without brackets).
LOOPBACK_HOSTS: Final = frozenset({"localhost", "127.0.0.1", "::1"})


def hostname_of(authority: str) -> str | None:
    """The lower-cased host name of a ``Host`` header value (``host[:port]``, ``[v6][:port]``).

    Returns:
        The name (IPv6 without brackets), or ``None`` when the value is malformed.
    """
    authority = authority.strip().lower()
    if not authority or any(c in authority for c in "/@?# \t"):
        return None
    if authority.startswith("["):
        end = authority.find("]")
        if end < 0:
            return None
        host, rest = authority[1:end], authority[end + 1 :]
        if rest and not (rest.startswith(":") and rest[1:].isdigit()):
            return None
        return host or None
    host, sep, port = authority.partition(":")
    if sep and not port.isdigit():
        return None
    return host or None


_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


def public_origin(url: str) -> str:
    """The origin of a server's public URL (``--public-url``).

    The URL is where browsers and clients reach the server (a load balancer's or proxy's
    address): ``http`` or ``https``, a host, an optional port, nothing else. A path prefix is
    refused: the server answers at its own paths (the MCP endpoint, ``/elicit/{token}``), so a
    proxy in front of it forwards them unchanged.

    Args:
        url: The public URL, e.g. ``https://mcp.example.com`` (a trailing ``/`` is allowed).

    Returns:
        The origin as browsers send it (``scheme://host[:port]``, lower case, the scheme's
        default port left out).

    Raises:
        ValueError: the URL is not of that form (the message says what is wrong).
    """
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"not a URL ({exc}): {url!r}") from None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise ValueError(f"must be an http:// or https:// URL, got {url!r}")
    if parts.username is not None or parts.password is not None:
        raise ValueError("must not carry credentials (user:password@)")
    name = parts.hostname
    if not name or any(c in name for c in " \t%"):
        raise ValueError(f"must name a host, got {url!r}")
    if parts.query or parts.fragment or url.rstrip().endswith(("?", "#")):
        raise ValueError("must not have a query or a fragment")
    if parts.path not in ("", "/"):
        raise ValueError(
            f"must not have a path (the server answers at its own paths), got {parts.path!r}"
        )
    host = f"[{name}]" if ":" in name else name
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        host = f"{host}:{port}"
    return f"{scheme}://{host}"


@dataclass(frozen=True, slots=True)
class HostPolicy:
    """Which ``Host`` and ``Origin`` values are served (DNS-rebinding protection).

    Attributes:
        hosts: Host names (lower case; IPv6 without brackets) accepted in ``Host`` and as the
            host of an ``Origin``; ``"*"`` accepts any (only behind a trusted proxy).
        origins: Extra exact origins (``scheme://host[:port]``) accepted; ``"*"`` accepts any.
        public: The server's public origin (``--public-url``), or ``None``: exactly its
            ``host[:port]`` is accepted in ``Host`` (it is also in ``origins``).
    """

    hosts: frozenset[str] = LOOPBACK_HOSTS
    origins: frozenset[str] = frozenset()
    public: str | None = None

    @classmethod
    def build(
        cls, hosts: Iterable[str] = (), origins: Iterable[str] = (), public_url: str | None = None
    ) -> HostPolicy:
        """The loopback defaults plus ``hosts``, ``origins`` and ``public_url``'s origin.

        Args:
            hosts: Extra host names (``"[::1]"`` and ``"::1"`` are the same).
            origins: Extra exact origins.
            public_url: The server's public URL (see :func:`public_origin`).

        Raises:
            ValueError: ``public_url`` is not an http(s) origin.
        """
        names = {h.strip().lower().removeprefix("[").removesuffix("]") for h in hosts}
        exact = {o.strip().lower().rstrip("/") for o in origins if o.strip()}
        public = None if public_url is None else public_origin(public_url)
        return cls(
            hosts=LOOPBACK_HOSTS | {n for n in names if n},
            origins=frozenset(exact | ({public} if public else set())),
            public=public,
        )

    def check_host(self, host: str | None) -> str | None:
        """Check a ``Host`` header value; ``None`` when allowed, else the reason."""
        if "*" in self.hosts:
            return None
        if host is None:
            return "missing Host header"
        name = hostname_of(host)
        if name is None or not (name in self.hosts or self._is_public(host)):
            return "Host not allowed"
        return None

    def _is_public(self, host: str) -> bool:
        """Whether a ``Host`` value is the public URL's authority (``host[:port]``)."""
        if self.public is None:
            return False
        scheme, _, authority = self.public.partition("://")
        return host.strip().lower().removesuffix(f":{_DEFAULT_PORTS[scheme]}") == authority

    def check_origin(self, origin: str | None) -> str | None:
        """Check an ``Origin`` header value; absent (non-browser client) is allowed."""
        if origin is None or "*" in self.origins:
            return None
        value = origin.strip().lower().rstrip("/")
        if value in self.origins:
            return None
        try:
            parts = urlsplit(value)
            name = parts.hostname
            parts.port  # noqa: B018 - raises on a malformed port
        except ValueError:
            return "Origin not allowed"
        if parts.scheme not in ("http", "https") or not name:
            return "Origin not allowed"
        if "*" in self.hosts or name in self.hosts:
            return None
        return "Origin not allowed"


def _media_ranges(accept: str) -> list[tuple[str, float]]:
    out: list[tuple[str, float]] = []
    for item in accept.split(","):
        media, *params = (p.strip() for p in item.split(";"))
        if not media:
            continue
        q = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        out.append((media.lower(), q))
    return out


def accepts(accept: str | None, *media_types: str) -> bool:
    """Whether an ``Accept`` header admits every one of ``media_types`` (wildcards and ``q=0``
    honoured; the header is parsed once).

    A missing header admits everything (RFC 9110).
    """
    if accept is None:
        return True
    ranges = _media_ranges(accept)
    return all(_admits(ranges, media_type) for media_type in media_types)


def _admits(ranges: list[tuple[str, float]], media_type: str) -> bool:
    major = media_type.split("/", 1)[0]
    best: tuple[int, float] | None = None  # (specificity, q)
    for media, q in ranges:
        if media == media_type:
            rank = 2
        elif media == f"{major}/*":
            rank = 1
        elif media == "*/*":
            rank = 0
        else:
            continue
        if best is None or rank > best[0]:
            best = (rank, q)
    return best is not None and best[1] > 0


def check_protocol_version_header(header: str | None, negotiated: str) -> str | None:
    """Check ``MCP-Protocol-Version`` on a request after ``initialize``.

    Missing: the negotiated version applies (the spec's fallback is for servers that cannot
    tell). A version we do not know, or one newer than the negotiated one, is refused. An older
    published version is tolerated, as the reference SDK does: the official conformance client
    sends ``2025-03-26`` on raw requests of a ``2025-11-25`` session.

    Returns:
        ``None`` when acceptable, else the reason (answered with 400).
    """
    if header is None:
        return None
    value = header.strip()
    if value not in PUBLISHED_SESSION_VERSIONS:
        return f"Unsupported MCP-Protocol-Version: {value[:40]!r}"
    if negotiated and value > negotiated:
        return f"MCP-Protocol-Version {value} does not match the negotiated {negotiated}"
    return None


# -- 2026-07-28: request metadata headers -------------------------------------------------------

#: MCP error code (2026-07-28 Streamable HTTP): the mirrored headers disagree with the body, or a
#: required one is missing or malformed. Answered with HTTP 400.
HEADER_MISMATCH: Final = -32020

#: Methods whose ``Mcp-Name`` header mirrors a body parameter, and which parameter (the
#: methods of the tasks extension name their task, so a balancer can route them to it).
NAME_PARAMS: Final[Mapping[str, str]] = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}

_ROUTING_HEADERS: Final = (b"mcp-protocol-version", b"mcp-method", b"mcp-name")
_SENTINEL_PREFIX: Final = "=?base64?"
_SENTINEL_SUFFIX: Final = "?="

#: HTTP status of a JSON-RPC error on a 2026-07-28 request (anything else: 200).
_ERROR_STATUS: Final[Mapping[int, int]] = {
    -32700: 400,  # parse error
    -32600: 400,  # invalid request
    -32602: 400,  # invalid params (also a refused requestState)
    HEADER_MISMATCH: 400,
    -32021: 400,  # missing required client capability
    -32022: 400,  # unsupported protocol version
    -32601: 404,  # method not found
}


def http_status_for(code: int) -> int:
    """The HTTP status that carries a JSON-RPC error ``code`` on a 2026-07-28 request.

    Per the 2026-07-28 Streamable HTTP transport: malformed requests, invalid params, header
    mismatch, a missing client capability and an unsupported version are 400; an unknown
    method is 404; other errors (internal, implementation-defined) travel with 200.
    """
    return _ERROR_STATUS.get(code, 200)


def _header_safe(value: str) -> bool:
    return all(ch == "\t" or " " <= ch <= "~" for ch in value)


def decode_header_value(value: str) -> str | None:
    """Undo the ``=?base64?…?=`` sentinel of an ``Mcp-Name`` (or ``Mcp-Param-*``) value.

    Returns:
        The value itself when it carries no sentinel, the decoded UTF-8 text when it does, or
        ``None`` when the value is malformed (invalid characters, bad or non-canonical base64,
        invalid UTF-8): such a value never matches anything.
    """
    if not _header_safe(value):
        return None
    if not (value.startswith(_SENTINEL_PREFIX) and value.endswith(_SENTINEL_SUFFIX)):
        return value
    if len(value) < len(_SENTINEL_PREFIX) + len(_SENTINEL_SUFFIX):
        return None
    payload = value[len(_SENTINEL_PREFIX) : -len(_SENTINEL_SUFFIX)]
    try:
        raw = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        return None
    if base64.b64encode(raw).decode("ascii") != payload:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def check_stateless_headers(
    headers: Iterable[tuple[bytes, bytes]], method: str, params: object
) -> str | None:
    """Check the request metadata headers of a 2026-07-28 POST against its body.

    ``MCP-Protocol-Version`` must equal ``params._meta["io.modelcontextprotocol/protocolVersion"]``
    (skipped when the body names no version: the body's own error is more useful),
    ``Mcp-Method`` must equal ``method``, and for ``tools/call``, ``prompts/get``,
    ``resources/read`` and ``tasks/get``, ``tasks/update``, ``tasks/cancel`` (:data:`NAME_PARAMS`)
    ``Mcp-Name`` must equal the named parameter after decoding. A routing
    header given twice is refused (two readers could disagree on which copy counts).

    Args:
        headers: The raw ASGI header lines (lower-case names).
        method: The body's method.
        params: The body's params.

    Returns:
        ``None`` when consistent, else the reason (answered with 400 and ``-32020``).
    """
    seen: dict[bytes, str] = {}
    for name, raw in headers:
        key = bytes(name).lower()
        if key in _ROUTING_HEADERS:
            if key in seen:
                return f"{key.decode()} header given more than once"
            seen[key] = bytes(raw).decode("latin-1").strip()
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    version = (
        meta.get("io.modelcontextprotocol/protocolVersion") if isinstance(meta, Mapping) else None
    )
    if isinstance(version, str):
        header = seen.get(b"mcp-protocol-version")
        if header is None:
            return "MCP-Protocol-Version header is required"
        if header != version:
            return "MCP-Protocol-Version header does not match _meta protocolVersion"
    header = seen.get(b"mcp-method")
    if header is None:
        return "Mcp-Method header is required"
    if header != method:
        return "Mcp-Method header does not match the method"
    field = NAME_PARAMS.get(method)
    value = params.get(field) if field is not None and isinstance(params, Mapping) else None
    if isinstance(value, str):
        header = seen.get(b"mcp-name")
        if header is None:
            return "Mcp-Name header is required"
        if decode_header_value(header) != value:
            return f"Mcp-Name header does not match params.{field}"
    return None
