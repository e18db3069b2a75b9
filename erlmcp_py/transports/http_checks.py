"""Pure header checks of the Streamable HTTP transport (no I/O).

DNS-rebinding protection (``Host`` and ``Origin``), content negotiation (``Accept``) and the
``MCP-Protocol-Version`` header. Each check returns ``None`` when the request may proceed, or a
short, client-safe reason; the transport turns that into the HTTP status.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

__all__ = [
    "KNOWN_PROTOCOL_VERSIONS",
    "LOOPBACK_HOSTS",
    "HostPolicy",
    "accepts",
    "check_protocol_version_header",
    "hostname_of",
]

#: Loopback names a local server answers to by default (IPv6 without brackets).
LOOPBACK_HOSTS: Final = frozenset({"localhost", "127.0.0.1", "::1"})

#: Every published MCP protocol version, oldest first. A ``MCP-Protocol-Version`` header naming
#: something else is refused (400).
KNOWN_PROTOCOL_VERSIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")


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


@dataclass(frozen=True, slots=True)
class HostPolicy:
    """Which ``Host`` and ``Origin`` values are served (DNS-rebinding protection).

    Attributes:
        hosts: Host names (lower case; IPv6 without brackets) accepted in ``Host`` and as the
            host of an ``Origin``; ``"*"`` accepts any (only behind a trusted proxy).
        origins: Extra exact origins (``scheme://host[:port]``) accepted; ``"*"`` accepts any.
    """

    hosts: frozenset[str] = LOOPBACK_HOSTS
    origins: frozenset[str] = frozenset()

    @classmethod
    def build(cls, hosts: Iterable[str] = (), origins: Iterable[str] = ()) -> HostPolicy:
        """The loopback defaults plus ``hosts`` and ``origins``.

        Args:
            hosts: Extra host names (``"[::1]"`` and ``"::1"`` are the same).
            origins: Extra exact origins.
        """
        names = {h.strip().lower().removeprefix("[").removesuffix("]") for h in hosts}
        return cls(
            hosts=LOOPBACK_HOSTS | {n for n in names if n},
            origins=frozenset(o.strip().lower().rstrip("/") for o in origins if o.strip()),
        )

    def check_host(self, host: str | None) -> str | None:
        """Check a ``Host`` header value; ``None`` when allowed, else the reason."""
        if "*" in self.hosts:
            return None
        if host is None:
            return "missing Host header"
        name = hostname_of(host)
        if name is None or name not in self.hosts:
            return "Host not allowed"
        return None

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


def accepts(accept: str | None, media_type: str) -> bool:
    """Whether an ``Accept`` header admits ``media_type`` (wildcards and ``q=0`` honoured).

    A missing header admits everything (RFC 9110).
    """
    if accept is None:
        return True
    major = media_type.split("/", 1)[0]
    best: tuple[int, float] | None = None  # (specificity, q)
    for media, q in _media_ranges(accept):
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
    if value not in KNOWN_PROTOCOL_VERSIONS:
        return f"Unsupported MCP-Protocol-Version: {value[:40]!r}"
    if negotiated and value > negotiated:
        return f"MCP-Protocol-Version {value} does not match the negotiated {negotiated}"
    return None
