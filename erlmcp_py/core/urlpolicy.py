"""URL safety decisions for URL-mode elicitation — pure: no trio, no sockets, no DNS.

Theory of operation
-------------------
A URL that we hand to a client in URL mode is opened by a human's browser, so the policy is an
allowlist, never a blocklist of known-bad strings:

1. *Lexical*: the raw text must be short, free of control characters, whitespace, backslashes and
   bidi/format characters; the scheme must be ``https`` (``http`` only towards a loopback host and
   only when the policy's dev switch is on); the authority must have no userinfo (``user@``) and a
   non-empty host; the port must be a decimal number in 1..65535.
2. *Host*: the host is normalised the way a browser (WHATWG URL) would read it, so that no literal
   spelling can hide an address: ``2130706433``, ``0177.0.0.1``, ``0x7f.1``, ``127.1`` and
   ``127.0.0.1.`` all become ``127.0.0.1``; bracketed IPv6 is parsed and compressed; zone ids are
   refused; a host whose last label looks numeric but is not a valid IPv4 address is refused
   (browsers refuse it too, and resolvers would read it in unpredictable ways). Names such as
   ``localhost`` and ``*.localhost`` are loopback by definition (RFC 6761) and refused without
   resolving. Internationalised hosts (non-ASCII or any ``xn--`` label) are refused, or — with
   ``idn="mark"`` — accepted with a flag so that a UI shows the full URL and warns.
3. *Address*: an IP literal is judged by :func:`judge_address`, which combines explicit tables of
   special-purpose ranges with :mod:`ipaddress`'s flags (which alone miss CGNAT, NAT64, 6to4,
   IPv4-compatible and Teredo embeddings). Embedded IPv4 addresses are judged as IPv4.

Host names (not literals) still have to be resolved; that is I/O and lives in
:mod:`erlmcp_py.actors.urlcheck`, which feeds every resolved address back to :func:`check_address`.
The decision is point-in-time: DNS may answer differently when the browser opens the URL.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from dataclasses import dataclass, replace
from typing import Final, Literal, TypeAlias
from urllib.parse import quote

from erlmcp_py.core.errors import UnsafeURLError

__all__ = [
    "BROADCAST",
    "CGNAT",
    "HOST_MISSING",
    "IDN",
    "LINK_LOCAL",
    "LOOPBACK",
    "MALFORMED",
    "MULTICAST",
    "PORT",
    "PRIVATE",
    "REASONS",
    "RESERVED",
    "SCHEME",
    "SITE_LOCAL",
    "TOO_LONG",
    "UNIQUE_LOCAL",
    "UNRESOLVABLE",
    "UNSPECIFIED",
    "USERINFO",
    "ZONE_ID",
    "IPAddress",
    "ParsedURL",
    "UrlPolicy",
    "check_address",
    "judge_address",
    "parse_url",
]

IPAddress: TypeAlias = ipaddress.IPv4Address | ipaddress.IPv6Address

# --- stable reason codes (UnsafeURLError.reason) -------------------------------------------------
SCHEME: Final = "scheme"
USERINFO: Final = "userinfo"
HOST_MISSING: Final = "host_missing"
TOO_LONG: Final = "too_long"
PORT: Final = "port"
MALFORMED: Final = "malformed"
ZONE_ID: Final = "zone_id"
IDN: Final = "idn"
UNRESOLVABLE: Final = "unresolvable"
LOOPBACK: Final = "loopback"
PRIVATE: Final = "private"
LINK_LOCAL: Final = "link_local"
SITE_LOCAL: Final = "site_local"
CGNAT: Final = "cgnat"
MULTICAST: Final = "multicast"
UNSPECIFIED: Final = "unspecified"
BROADCAST: Final = "broadcast"
RESERVED: Final = "reserved"
UNIQUE_LOCAL: Final = "unique_local"

REASONS: Final[frozenset[str]] = frozenset(
    {
        SCHEME,
        USERINFO,
        HOST_MISSING,
        TOO_LONG,
        PORT,
        MALFORMED,
        ZONE_ID,
        IDN,
        UNRESOLVABLE,
        LOOPBACK,
        PRIVATE,
        LINK_LOCAL,
        SITE_LOCAL,
        CGNAT,
        MULTICAST,
        UNSPECIFIED,
        BROADCAST,
        RESERVED,
        UNIQUE_LOCAL,
    }
)

_DEFAULT_PORTS: Final[dict[str, int]] = {"https": 443, "http": 80}


@dataclass(frozen=True, slots=True)
class UrlPolicy:
    """What URLs may be handed out in URL mode.

    Attributes:
        allow_http_loopback_dev: Development switch. When on, loopback hosts (``127.0.0.0/8``,
            ``::1``, ``localhost``, ``*.localhost``) are allowed, over ``https`` or ``http``.
            Off by default: only ``https`` to public hosts.
        idn: ``"refuse"`` (default) refuses internationalised hosts (non-ASCII or punycode
            ``xn--`` labels); ``"mark"`` accepts them and sets :attr:`ParsedURL.idn` so that a
            UI shows the full URL and a warning.
        max_length: Longest URL accepted, in characters (checked before and after
            normalisation).
        resolve_timeout: Seconds the resolver step (:mod:`erlmcp_py.actors.urlcheck`) waits for DNS
            before refusing with ``"unresolvable"``. Data only; this module reads no clock.
    """

    allow_http_loopback_dev: bool = False
    idn: Literal["refuse", "mark"] = "refuse"
    max_length: int = 2048
    resolve_timeout: float = 2.0

    def __post_init__(self) -> None:
        if self.idn not in ("refuse", "mark"):
            raise ValueError(f"idn must be 'refuse' or 'mark', not {self.idn!r}")
        if self.max_length < 1:
            raise ValueError("max_length must be positive")
        if not self.resolve_timeout > 0:
            raise ValueError("resolve_timeout must be positive")


DEFAULT_POLICY: Final = UrlPolicy()


@dataclass(frozen=True, slots=True)
class ParsedURL:
    """A URL that passed the lexical and literal-address checks.

    Attributes:
        url: The normalised URL (lower-case scheme and host, default port removed, trailing dot
            of the host removed, IP literals in canonical form, non-ASCII in path/query/fragment
            percent-encoded, empty path written ``/``).
        scheme: ``"https"`` or ``"http"``.
        host: ASCII host without brackets (IPv6 compressed, IDN as punycode).
        port: Explicit non-default port, else ``None``.
        rest: Path, query and fragment, as they appear in :attr:`url`.
        ip: The address when the host is an IP literal, else ``None`` (the name still needs
            resolving, see :attr:`needs_resolution`).
        idn: True when the host is internationalised (only possible with ``idn="mark"``).
        display_host: The host as a human should see it (Unicode form of punycode labels).
    """

    url: str
    scheme: str
    host: str
    port: int | None
    rest: str
    ip: IPAddress | None
    idn: bool
    display_host: str

    @property
    def needs_resolution(self) -> bool:
        """True when the host is a name that the shell must still resolve and judge."""
        return self.ip is None

    @property
    def netloc(self) -> str:
        """``host[:port]`` as written in :attr:`url` (IPv6 in brackets)."""
        host = f"[{self.host}]" if isinstance(self.ip, ipaddress.IPv6Address) else self.host
        return host if self.port is None else f"{host}:{self.port}"


def _refuse(reason: str, detail: str) -> UnsafeURLError:
    return UnsafeURLError(reason, detail)


# --- address classification ----------------------------------------------------------------------


def _v4(net: str) -> ipaddress.IPv4Network:
    return ipaddress.IPv4Network(net)


def _v6(net: str) -> ipaddress.IPv6Network:
    return ipaddress.IPv6Network(net)


# Order matters: the first matching row wins (0.0.0.0/32 before 0/8, broadcast before 240/4).
_V4_TABLE: Final[tuple[tuple[ipaddress.IPv4Network, str], ...]] = (
    (_v4("0.0.0.0/32"), UNSPECIFIED),
    (_v4("255.255.255.255/32"), BROADCAST),
    (_v4("0.0.0.0/8"), RESERVED),  # "this network"
    (_v4("127.0.0.0/8"), LOOPBACK),
    (_v4("10.0.0.0/8"), PRIVATE),
    (_v4("172.16.0.0/12"), PRIVATE),
    (_v4("192.168.0.0/16"), PRIVATE),
    (_v4("100.64.0.0/10"), CGNAT),  # ipaddress: is_private False *and* is_global False
    (_v4("169.254.0.0/16"), LINK_LOCAL),
    (_v4("224.0.0.0/4"), MULTICAST),
    (_v4("240.0.0.0/4"), RESERVED),
    (_v4("192.0.0.0/24"), RESERVED),  # IETF protocol assignments
    (_v4("192.0.2.0/24"), RESERVED),  # TEST-NET-1
    (_v4("198.51.100.0/24"), RESERVED),  # TEST-NET-2
    (_v4("203.0.113.0/24"), RESERVED),  # TEST-NET-3
    (_v4("198.18.0.0/15"), RESERVED),  # benchmarking
    (_v4("192.88.99.0/24"), RESERVED),  # deprecated 6to4 relay anycast
)

_V6_TABLE: Final[tuple[tuple[ipaddress.IPv6Network, str], ...]] = (
    (_v6("ff00::/8"), MULTICAST),
    (_v6("fe80::/10"), LINK_LOCAL),
    (_v6("fec0::/10"), SITE_LOCAL),
    (_v6("fc00::/7"), UNIQUE_LOCAL),
)
# Inside global unicast 2000::/3, still special-purpose.
_V6_GLOBAL_EXCEPTIONS: Final[tuple[ipaddress.IPv6Network, ...]] = (
    _v6("2001::/23"),  # IETF protocol assignments (Teredo is handled before this)
    _v6("2001:db8::/32"),  # documentation
    _v6("3fff::/20"),  # documentation (RFC 9637)
)
_V6_GLOBAL_UNICAST: Final = _v6("2000::/3")
_V6_V4_COMPATIBLE: Final = _v6("::/96")
_V6_NAT64: Final = _v6("64:ff9b::/96")
_V6_SIIT_TRANSLATED: Final = _v6("::ffff:0:0:0/96")


def _judge_v4(ip: ipaddress.IPv4Address) -> str | None:
    for net, reason in _V4_TABLE:
        if ip in net:
            return reason
    if not ip.is_global:
        return RESERVED
    return None


def _embedded_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address:
    return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)


def _judge_v6(ip: ipaddress.IPv6Address) -> str | None:
    if int(ip) == 0:
        return UNSPECIFIED
    if int(ip) == 1:
        return LOOPBACK
    mapped = ip.ipv4_mapped
    if mapped is not None:  # ::ffff:a.b.c.d — a dual-stack socket connects to a.b.c.d
        return _judge_v4(mapped)
    if ip in _V6_V4_COMPATIBLE or ip in _V6_SIIT_TRANSLATED:
        # Deprecated IPv4-compatible (::a.b.c.d) and SIIT (::ffff:0:a.b.c.d): never legitimate.
        return _judge_v4(_embedded_v4(ip)) or RESERVED
    if ip in _V6_NAT64:  # 64:ff9b::a.b.c.d reaches a.b.c.d through the NAT64 gateway
        return _judge_v4(_embedded_v4(ip))
    if ip.sixtofour is not None:  # 2002:AABB:CCDD::/48 tunnels to AA.BB.CC.DD
        return _judge_v4(ip.sixtofour)
    if ip.teredo is not None:  # 2001::/32; both embedded ends judged, then refused anyway
        server, client = ip.teredo
        return _judge_v4(client) or _judge_v4(server) or RESERVED
    for net, reason in _V6_TABLE:
        if ip in net:
            return reason
    if ip not in _V6_GLOBAL_UNICAST:
        return RESERVED
    if any(ip in net for net in _V6_GLOBAL_EXCEPTIONS) or not ip.is_global:
        return RESERVED
    return None


def judge_address(ip: IPAddress | str) -> str | None:
    """Classify an address; ``None`` means publicly routable and acceptable.

    Refuses loopback, private, link-local, site-local, CGNAT, multicast, unspecified, broadcast,
    unique-local and every other special-purpose/reserved range. IPv6 addresses that embed an
    IPv4 address (IPv4-mapped, IPv4-compatible, NAT64 ``64:ff9b::/96``, 6to4, Teredo) are
    judged by the embedded IPv4 address.

    Args:
        ip: An :mod:`ipaddress` address, or its text (canonical forms only; a zone id suffix
            such as ``%eth0`` is ignored for classification).

    Returns:
        A reason code (``"loopback"``, ``"private"``, ...) or ``None``.

    Raises:
        UnsafeURLError: ``malformed`` when ``ip`` is text that is not an IP address.
    """
    if isinstance(ip, str):
        try:
            ip = ipaddress.ip_address(ip.split("%", 1)[0])
        except ValueError:
            raise _refuse(MALFORMED, f"not an IP address: {ip!r}") from None
    if isinstance(ip, ipaddress.IPv4Address):
        return _judge_v4(ip)
    return _judge_v6(ip)


def _is_loopback_reason(reason: str | None) -> bool:
    return reason == LOOPBACK


def check_address(ip: IPAddress, policy: UrlPolicy | None = None, *, scheme: str = "https") -> None:
    """Refuse ``ip`` unless it is acceptable under ``policy`` for a URL with ``scheme``.

    Loopback addresses pass only when the policy's dev switch is on; an ``http`` URL must
    point at loopback.

    Args:
        ip: A literal or resolved address.
        policy: The policy; defaults to :class:`UrlPolicy`'s defaults.
        scheme: The (already normalised) URL scheme.

    Raises:
        UnsafeURLError: With the address's reason code, or ``"scheme"`` for plain ``http`` to a
            non-loopback address.
    """
    policy = policy or DEFAULT_POLICY
    reason = judge_address(ip)
    dev_loopback = policy.allow_http_loopback_dev and _is_loopback_reason(reason)
    if reason is not None and not dev_loopback:
        raise _refuse(reason, f"{ip} is refused ({reason})")
    if scheme == "http" and not dev_loopback:
        raise _refuse(SCHEME, f"http is allowed only towards loopback in dev mode, not {ip}")


# --- lexical checks ------------------------------------------------------------------------------

_SCHEME_RE: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*\Z")
_PORT_RE: Final = re.compile(r"[0-9]*\Z")
_LABEL_RE: Final = re.compile(r"[a-z0-9_\-]+\Z")
_NUMERIC_LABEL_RE: Final = re.compile(r"(?:[0-9]+|0[xX][0-9A-Fa-f]*)\Z")
_DEC_RE: Final = re.compile(r"[0-9]+\Z")
_OCT_RE: Final = re.compile(r"[0-7]+\Z")
_HEX_RE: Final = re.compile(r"[0-9A-Fa-f]*\Z")
_MAX_NUMBER_DIGITS: Final = 40
# Characters kept as they are in path/query/fragment; everything else is percent-encoded.
_SAFE_REST: Final = "!#$%&'()*+,/:;=?@[]~-._"


def _forbidden_char(text: str) -> tuple[int, str] | None:
    for index, char in enumerate(text):
        code = ord(char)
        if (
            code < 0x20
            or 0x7F <= code <= 0x9F
            or char == "\\"
            or char.isspace()
            or unicodedata.category(char) in ("Cf", "Zs", "Zl", "Zp", "Co", "Cs")
        ):
            return index, char
    return None


def _split_authority(authority: str) -> tuple[str, str]:
    """Split ``host[:port]`` (host possibly bracketed) into host and port text."""
    if authority.startswith("["):
        close = authority.find("]")
        if close < 0:
            raise _refuse(MALFORMED, "unterminated '[' in host")
        host, after = authority[: close + 1], authority[close + 1 :]
        if after and not after.startswith(":"):
            raise _refuse(MALFORMED, "unexpected text after ']'")
        return host, after[1:]
    if authority.count(":") > 1:
        raise _refuse(MALFORMED, "IPv6 literals must be written in brackets")
    host, _, port = authority.partition(":")
    return host, port


def _parse_port(text: str, scheme: str) -> int | None:
    if not text:
        return None
    if not _PORT_RE.match(text) or len(text) > 5:
        raise _refuse(PORT, f"invalid port {text!r}")
    port = int(text)
    if not 1 <= port <= 65535:
        raise _refuse(PORT, f"port {port} out of range")
    return None if port == _DEFAULT_PORTS[scheme] else port


def _ipv4_number(part: str) -> int | None:
    if part[:2] in ("0x", "0X"):
        digits, base = part[2:], 16
        if not _HEX_RE.match(digits):
            return None
        if not digits:
            return 0
    elif len(part) > 1 and part[0] == "0":
        digits, base = part[1:], 8
        if not _OCT_RE.match(digits):
            return None
    else:
        digits, base = part, 10
        if not _DEC_RE.match(digits):
            return None
    if len(digits) > _MAX_NUMBER_DIGITS:
        return None
    return int(digits, base)


def _parse_ipv4(labels: list[str], host: str) -> ipaddress.IPv4Address:
    """WHATWG IPv4 parser: 1-4 parts, each decimal, octal (leading 0) or hex (0x)."""
    if len(labels) > 4:
        raise _refuse(MALFORMED, f"numeric host with more than four parts: {host!r}")
    numbers: list[int] = []
    for part in labels:
        number = _ipv4_number(part)
        if number is None:
            raise _refuse(MALFORMED, f"numeric-looking host is not an IPv4 address: {host!r}")
        numbers.append(number)
    *head, last = numbers
    if any(n > 255 for n in head) or last >= 256 ** (5 - len(numbers)):
        raise _refuse(MALFORMED, f"IPv4 part out of range: {host!r}")
    value = last
    for index, n in enumerate(head):
        value += n << (8 * (3 - index))
    return ipaddress.IPv4Address(value)


def _parse_ipv6(host: str) -> ipaddress.IPv6Address:
    inner = host[1:-1]
    if "%" in inner:
        raise _refuse(ZONE_ID, f"IPv6 zone identifiers are not allowed: {host!r}")
    try:
        return ipaddress.IPv6Address(inner)
    except ValueError:
        raise _refuse(MALFORMED, f"invalid IPv6 literal {host!r}") from None


def _to_ascii_host(host: str, policy: UrlPolicy) -> str:
    if policy.idn == "refuse":
        raise _refuse(IDN, f"internationalised host {host!r}")
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        raise _refuse(MALFORMED, f"host cannot be converted to ASCII: {host!r}") from None


def _display_host(host: str) -> str:
    try:
        return host.encode("ascii").decode("idna")
    except UnicodeError:
        return host


@dataclass(frozen=True, slots=True)
class _Host:
    name: str
    ip: IPAddress | None
    idn: bool


def _parse_host(raw: str, policy: UrlPolicy) -> _Host:
    if raw.startswith("["):
        return _Host("", _parse_ipv6(raw), False)
    if "%" in raw:
        raise _refuse(MALFORMED, "percent-encoded host names are not allowed")
    if "[" in raw or "]" in raw:
        raise _refuse(MALFORMED, f"stray bracket in host {raw!r}")
    idn = not raw.isascii()
    host = _to_ascii_host(raw, policy) if idn else raw
    host = host.lower()
    if host.endswith("."):
        host = host[:-1]
    if not host:
        raise _refuse(HOST_MISSING, "empty host")
    labels = host.split(".")
    if any(not label for label in labels):
        raise _refuse(MALFORMED, f"empty label in host {host!r}")
    if _NUMERIC_LABEL_RE.match(labels[-1]):
        return _Host("", _parse_ipv4(labels, host), idn)
    for label in labels:
        if len(label) > 63 or not _LABEL_RE.match(label):
            raise _refuse(MALFORMED, f"invalid host label {label[:70]!r}")
    if len(host) > 253:
        raise _refuse(MALFORMED, "host name longer than 253 characters")
    if any(label.startswith("xn--") for label in labels):
        if policy.idn == "refuse":
            raise _refuse(IDN, f"punycode host {host!r}")
        idn = True
    return _Host(host, None, idn)


def _is_localhost_name(host: str) -> bool:
    return host == "localhost" or host.endswith(".localhost")


def parse_url(url: str, policy: UrlPolicy | None = None) -> ParsedURL:
    """Check and normalise ``url`` without any I/O.

    IP literals (in every spelling a browser accepts) are judged here; host names are only
    checked lexically (plus ``localhost``/``*.localhost``) and must still be resolved by the
    shell (:func:`erlmcp_py.actors.urlcheck.check_url`) when :attr:`ParsedURL.needs_resolution`.

    Args:
        url: The URL text.
        policy: The policy; defaults to :class:`UrlPolicy`'s defaults.

    Returns:
        The normalised :class:`ParsedURL`.

    Raises:
        UnsafeURLError: With a stable ``reason`` code (see :data:`REASONS`).
    """
    policy = policy or DEFAULT_POLICY
    if not isinstance(url, str):
        raise _refuse(MALFORMED, "URL must be a string")
    if len(url) > policy.max_length:
        raise _refuse(TOO_LONG, f"{len(url)} characters > {policy.max_length}")
    bad = _forbidden_char(url)
    if bad is not None:
        raise _refuse(MALFORMED, f"forbidden character U+{ord(bad[1]):04X} at index {bad[0]}")
    scheme_text, colon, after_scheme = url.partition(":")
    if not colon or not _SCHEME_RE.match(scheme_text):
        raise _refuse(MALFORMED, "missing or invalid scheme")
    scheme = scheme_text.lower()
    if scheme not in _DEFAULT_PORTS:
        raise _refuse(SCHEME, f"scheme {scheme!r} is not allowed (https only)")
    if scheme == "http" and not policy.allow_http_loopback_dev:
        raise _refuse(SCHEME, "http is allowed only towards loopback in dev mode")
    if not after_scheme.startswith("//"):
        raise _refuse(MALFORMED, "expected '//' after the scheme")
    remainder = after_scheme[2:]
    end = min((i for i in (remainder.find(c) for c in "/?#") if i >= 0), default=len(remainder))
    authority, rest = remainder[:end], remainder[end:]
    if "@" in authority:
        raise _refuse(USERINFO, "credentials (user@) are not allowed in the URL")
    host_text, port_text = _split_authority(authority)
    if not host_text:
        raise _refuse(HOST_MISSING, "empty host")
    port = _parse_port(port_text, scheme)
    host = _parse_host(host_text, policy)

    if host.ip is not None:
        check_address(host.ip, policy, scheme=scheme)
        name = str(host.ip)
    else:
        name = host.name
        loopback_name = _is_localhost_name(name)
        if loopback_name and not policy.allow_http_loopback_dev:
            raise _refuse(LOOPBACK, f"{name!r} is a loopback name")
        if scheme == "http" and not loopback_name:
            raise _refuse(SCHEME, f"http is allowed only towards loopback in dev mode, not {name}")

    if not rest.startswith("/"):
        rest = "/" + rest
    rest = quote(rest, safe=_SAFE_REST)
    parsed = ParsedURL(
        url="",
        scheme=scheme,
        host=name,
        port=port,
        rest=rest,
        ip=host.ip,
        idn=host.idn,
        display_host=_display_host(name) if host.idn else name,
    )
    normalised = f"{scheme}://{parsed.netloc}{rest}"
    if len(normalised) > policy.max_length:
        raise _refuse(TOO_LONG, f"normalised URL has {len(normalised)} characters")
    return replace(parsed, url=normalised)
