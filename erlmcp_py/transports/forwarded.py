"""The client's address behind trusted proxies (``X-Forwarded-For``, RFC 7239 ``Forwarded``).

Pure: no I/O. The HTTP transport calls :func:`resolve_client` once per request, at the entry
of its ASGI app, and puts the answer in the scope's ``client``; everything that keys on the
client (the principal, its fair shares, the elicitation rate) reads it from there.

The rules are uvicorn's ``--forwarded-allow-ips``:

- A request whose *peer* (the other end of its TCP connection) is not trusted keeps the
  peer's address; its forwarding headers are ignored, whatever they say.
- From a trusted peer, the headers list the hops, the original client first: every proxy
  appends the address it received the request from, so whatever a client wrote itself comes
  before the entries of the proxies. The client is the right-most entry that is not itself a
  trusted proxy; when every entry is trusted, the left-most. Several header lines of one
  name are one list, in order.
- ``X-Forwarded-For`` entries are IP addresses (IPv6 bare or in brackets, either with an
  optional ``:port``). ``Forwarded`` elements give the hop in ``for=`` (IPv4, or quoted
  ``"[IPv6]"``, either with an optional port); ``unknown`` and obfuscated identifiers
  (``_hidden``) name no address, so such a client is not identified: the request keeps the
  peer's address. Elements without ``for=`` (``proto=https`` alone) name no hop.
- When a trusted peer sends both headers, they must name the same client: a proxy appends to
  one of them, so a client could have written the other; when they disagree the request
  keeps the peer's address.
- A malformed value on the way (an entry that is no address, a broken quoted string, a
  parameter given twice, more than :data:`MAX_HOPS` hops) keeps the peer's address too. Only
  the entries walked over are read: a client's own garbage left of the entry a trusted proxy
  appended does not matter.

Every case that falls back to the peer's address says why in :attr:`Resolved.problem`, for
the transport to log.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

__all__ = ["MAX_HOPS", "Hop", "Resolved", "TrustedProxies", "resolve_client"]

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

#: Entries walked at most, from the right, before the headers count as malformed: a real chain
#: of proxies is a handful of hops; a longer one only costs the server parsing.
MAX_HOPS: Final = 32

#: How much of an offending value a problem quotes.
_QUOTE: Final = 64


@dataclass(frozen=True, slots=True)
class TrustedProxies:
    """The peers whose forwarding headers are believed (``--forwarded-allow-ips``).

    Attributes:
        networks: Trusted addresses and networks (an address is its /32 or /128).
        everyone: ``*``: every peer is trusted, and so is every hop (the client is then the
            left-most entry, which the client itself may have written).
    """

    networks: tuple[Network, ...] = ()
    everyone: bool = False

    @classmethod
    def parse(cls, spec: str | Iterable[str]) -> TrustedProxies:
        """The trusted peers of a comma-separated list (or of several such strings).

        Each entry is an IP address (``10.0.0.5``, ``::1``), a network in CIDR notation
        (``10.0.0.0/8``, ``2001:db8::/32``) or ``*`` (any peer). Blank entries are ignored:
        ``""`` trusts no one.

        Raises:
            ValueError: an entry is none of these (the message names it); a network with host
                bits set (``10.0.0.1/8``) is refused, naming the network meant.
        """
        texts = [spec] if isinstance(spec, str) else list(spec)
        networks: list[Network] = []
        everyone = False
        for text in texts:
            for raw in text.split(","):
                entry = raw.strip()
                if not entry:
                    continue
                if entry == "*":
                    everyone = True
                    continue
                networks.append(_network(entry))
        return cls(tuple(dict.fromkeys(networks)), everyone)

    @property
    def entries(self) -> tuple[str, ...]:
        """The list in its normal form (``*``, then each network; an address as itself)."""
        out = ["*"] if self.everyone else []
        for network in self.networks:
            if network.prefixlen == network.max_prefixlen:
                out.append(str(network.network_address))
            else:
                out.append(str(network))
        return tuple(out)

    def __bool__(self) -> bool:
        """Whether any peer is trusted."""
        return self.everyone or bool(self.networks)

    def trusts(self, address: Address) -> bool:
        """Whether ``address`` is a trusted proxy."""
        return self.everyone or any(address in network for network in self.networks)

    def trusts_peer(self, host: object) -> bool:
        """Whether a peer (the scope's ``client`` host: an IP address, else anything) is
        trusted. A peer that is no IP address (a Unix socket, none) is trusted only by ``*``."""
        if self.everyone:
            return True
        if not isinstance(host, str):
            return False
        try:
            return self.trusts(_address(host.strip("[]")))
        except ValueError:
            return False


def _network(entry: str) -> Network:
    try:
        if "/" not in entry:
            address = _address(entry.strip("[]"))
            return ipaddress.ip_network(address)
        return ipaddress.ip_network(entry)
    except ValueError as exc:
        if "/" in entry and "host bits set" in str(exc):
            meant = ipaddress.ip_network(entry, strict=False)
            raise ValueError(f"{entry!r} has host bits set (the network is {meant})") from None
        raise ValueError(
            f"{entry!r} is not an IP address, a CIDR network or * (e.g. 10.0.0.5, 10.0.0.0/8)"
        ) from None


def _address(text: str) -> Address:
    """An IP address; an IPv4-mapped IPv6 address is its IPv4 address (a dual-stack socket
    reports IPv4 peers that way)."""
    address = ipaddress.ip_address(text)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


@dataclass(frozen=True, slots=True)
class Hop:
    """One hop a header names: its address (``None``: ``unknown`` or obfuscated) and port
    (0 when not given)."""

    address: Address | None
    port: int = 0


@dataclass(frozen=True, slots=True)
class Resolved:
    """The client of one request.

    Attributes:
        client: The scope's ``client``: ``(host, port)`` (the port 0 when the header gave
            none), or the peer's own value.
        source: Where it came from: ``peer``, ``x-forwarded-for`` or ``forwarded``.
        problem: Why a trusted peer's headers were not used (``None``: they were, or there
            were none).
    """

    client: tuple[str, int] | None
    source: str = "peer"
    problem: str | None = None


class _Malformed(ValueError):
    """A forwarding header value that cannot be read."""


def resolve_client(
    peer: tuple[str, int] | None,
    headers: Iterable[tuple[bytes, bytes]],
    trusted: TrustedProxies,
) -> Resolved:
    """The client's address of a request (see the module's rules).

    Args:
        peer: The connection's peer, the scope's ``client`` as the server reports it.
        headers: The request headers, as in an ASGI scope (lower-case names).
        trusted: The trusted proxies.

    Returns:
        The client; the peer's own address unless a trusted peer's headers name another.
        Never raises on any header value.
    """
    if not trusted or not trusted.trusts_peer(peer[0] if peer else None):
        return Resolved(peer)
    forwarded_for: list[str] = []
    forwarded: list[str] = []
    for name, value in headers:
        if name == b"x-forwarded-for":
            forwarded_for.append(bytes(value).decode("latin-1"))
        elif name == b"forwarded":
            forwarded.append(bytes(value).decode("latin-1"))
    if not forwarded_for and not forwarded:
        return Resolved(peer)
    try:
        by_xff = _pick(_xff_entries(forwarded_for), _xff_hop, trusted, "X-Forwarded-For")
        by_rfc = _pick(_forwarded_elements(forwarded), _forwarded_hop, trusted, "Forwarded")
    except _Malformed as exc:
        return Resolved(peer, problem=str(exc))
    if by_xff is None and by_rfc is None:  # Forwarded elements without for=
        return Resolved(peer)
    if by_xff is not None and by_rfc is not None and by_xff.address != by_rfc.address:
        return Resolved(peer, problem="X-Forwarded-For and Forwarded name different clients")
    if by_rfc is not None:
        hop, source, header = by_rfc, "forwarded", "Forwarded"
    else:
        assert by_xff is not None
        hop, source, header = by_xff, "x-forwarded-for", "X-Forwarded-For"
    if hop.address is None:
        return Resolved(peer, problem=f"{header}: the client is unknown or obfuscated")
    return Resolved((str(hop.address), hop.port), source)


def _pick(
    entries: list[str],
    read: Callable[[str], Hop | None],
    trusted: TrustedProxies,
    header: str,
) -> Hop | None:
    """The client among ``entries`` (left to right): the right-most hop that is not a
    trusted proxy, else the left-most hop; ``None`` when no entry names a hop."""
    order = entries if trusted.everyone else reversed(entries)
    last: Hop | None = None
    for walked, entry in enumerate(order):
        if walked >= MAX_HOPS:
            raise _Malformed(f"{header}: more than {MAX_HOPS} hops")
        try:
            hop = read(entry)
        except _Malformed as exc:
            raise _Malformed(f"{header}: {exc}: {_quote(entry)}") from None
        if hop is None:
            continue
        if trusted.everyone or hop.address is None or not trusted.trusts(hop.address):
            return hop
        last = hop
    return last


def _quote(text: str) -> str:
    text = text.strip()
    return repr(text if len(text) <= _QUOTE else text[:_QUOTE] + "…")


# -- X-Forwarded-For ---------------------------------------------------------------------------


def _xff_entries(lines: list[str]) -> list[str]:
    # empty list elements (``a,,b``, a trailing comma) are allowed and ignored (RFC 9110 5.6.1)
    return [entry for line in lines for entry in line.split(",") if entry.strip(" \t")]


def _xff_hop(entry: str) -> Hop:
    """``192.0.2.7``, ``192.0.2.7:4711``, ``2001:db8::1``, ``[2001:db8::1]`` or
    ``[2001:db8::1]:4711``; ``unknown`` (what some proxies write for an unknown client)."""
    text = entry.strip(" \t")
    if text.lower() == "unknown":
        return Hop(None)
    if text.startswith("["):
        host, bracket, rest = text[1:].partition("]")
        if not bracket:
            raise _Malformed("an unclosed [")
        return Hop(_ip(host, 6), _port(rest))
    if text.count(":") == 1:  # IPv4 with a port
        host, _, port = text.partition(":")
        return Hop(_ip(host, 4), _port(":" + port))
    return Hop(_ip(text, None))


def _ip(text: str, version: int | None) -> Address:
    if "%" in text:  # a zone index means nothing beyond the host that wrote it
        raise _Malformed("an address with a zone index")
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        raise _Malformed("not an IP address") from None
    if version is not None and address.version != version:
        raise _Malformed(f"not an IPv{version} address")
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _port(rest: str, obfuscated: bool = False) -> int:
    """The port after a host: ``""`` (none: 0) or ``":4711"``; with ``obfuscated``, an
    obfuscated port (``":_abc"``, ``Forwarded`` only) counts as none."""
    if not rest:
        return 0
    digits = rest[1:]
    if rest[0] != ":":
        raise _Malformed("junk after the address")
    if digits.isascii() and digits.isdigit() and len(digits) <= 5 and int(digits) <= 65535:
        return int(digits)
    if obfuscated and _OBFUSCATED.fullmatch(digits):
        return 0
    raise _Malformed("a bad port")


# -- Forwarded (RFC 7239) ----------------------------------------------------------------------

#: ``token = ( token / quoted-string )`` of one element; unquoted values may also hold the
#: ``[`` ``]`` ``:`` an IPv6 node needs (which RFC 7239 wants quoted: accepted either way).
_PAIR: Final = re.compile(
    r"""[ \t]*([!#$%&'*+.^_`|~0-9A-Za-z-]+)[ \t]*=[ \t]*"""
    r"""(?:"((?:[^"\\]|\\[\t\x20-\x7e\x80-\xff])*)"|([!#$%&'*+.^_`|~0-9A-Za-z:\[\]-]+))[ \t]*"""
)
#: An obfuscated node or port: ``_`` then letters, digits, ``.``, ``_``, ``-`` (RFC 7239 6.3).
_OBFUSCATED: Final = re.compile(r"_[A-Za-z0-9._-]+")
#: One element of a ``Forwarded`` line: anything but commas, and whole quoted strings.
_ELEMENT: Final = re.compile(r'(?:[^",]|"(?:[^"\\]|\\.)*")*', re.S)


def _forwarded_elements(lines: list[str]) -> list[str]:
    """The elements of every ``Forwarded`` line, in order (a comma inside a quoted string does
    not split; an unterminated quoted string runs to the end of its line, one element that
    reads as malformed)."""
    out: list[str] = []
    for line in lines:
        at = 0
        while True:
            found = _ELEMENT.match(line, at)
            assert found is not None  # the pattern matches the empty string
            stop = found.end()
            if stop < len(line) and line[stop] == '"':  # unterminated: the rest of the line
                out.append(line[at:])
                break
            out.append(line[at:stop])
            if stop >= len(line):
                break
            at = stop + 1  # past the comma
    return [element for element in out if element.strip(" \t")]


def _forwarded_hop(element: str) -> Hop | None:
    """The hop an element's ``for=`` names (``None``: it has no ``for``)."""
    params: dict[str, str] = {}
    for part in _pairs(element):
        name, value = part
        if name in params:
            raise _Malformed(f"{name}= given twice in one element")
        params[name] = value
    node = params.get("for")
    if node is None:
        return None
    return _node(node)


def _pairs(element: str) -> list[tuple[str, str]]:
    """``name=value`` pairs of an element, separated by ``;`` (empty ones allowed)."""
    out: list[tuple[str, str]] = []
    at = 0
    end = len(element)
    while at < end:
        if element[at] in "; \t":
            at += 1
            continue
        found = _PAIR.match(element, at)
        if found is None:
            raise _Malformed("not a name=value list")
        quoted, bare = found.group(2), found.group(3)
        value = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else bare
        out.append((found.group(1).lower(), value))
        at = found.end()
        if at < end and element[at] != ";":
            raise _Malformed("not a name=value list")
    return out


def _node(node: str) -> Hop:
    """``192.0.2.7``, ``[2001:db8::1]``, either with ``:port`` or ``:_obfport``; ``unknown``
    or ``_obfnode`` name no address."""
    if node.startswith("["):
        host, bracket, rest = node[1:].partition("]")
        if not bracket:
            raise _Malformed("an unclosed [")
        return Hop(_ip(host, 6), _port(rest, obfuscated=True))
    host, colon, port = node.partition(":")
    rest = colon + port
    if host.lower() == "unknown" or _OBFUSCATED.fullmatch(host):
        _port(rest, obfuscated=True)
        return Hop(None)
    if ":" in port:
        raise _Malformed("an IPv6 address must be in brackets")
    return Hop(_ip(host, 4), _port(rest, obfuscated=True))
