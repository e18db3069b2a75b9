"""The PROXY protocol header a TCP-mode load balancer writes before a connection's first byte.

A balancer that forwards bytes without reading HTTP (AWS NLB, HAProxy ``mode tcp``) cannot add
``X-Forwarded-For``; with the PROXY protocol it opens each connection to the server with one
header naming the client's address instead (haproxy.org/download/2.9/doc/proxy-protocol.txt).
This module reads that header from the bytes received so far, without I/O:
:func:`parse_proxy_header` answers the header, ``None`` (not all of it is here yet) or raises
:class:`ProxyHeaderError`. Both versions, told apart by their first bytes:

* v1, text: ``PROXY TCP4 192.0.2.7 198.51.100.1 56324 443\\r\\n`` (or ``TCP6`` and IPv6
  addresses), single spaces, addresses in their family's canonical notation (no leading zeros
  in IPv4, no zone index), ports 0-65535 without leading zeros, at most
  :data:`V1_MAX_BYTES` bytes with the CRLF. ``PROXY UNKNOWN`` (anything may follow, up to the
  CRLF) names no client.
* v2, binary: the 12-byte :data:`V2_SIGNATURE`, a version/command byte (``0x20`` LOCAL,
  ``0x21`` PROXY), a family/protocol byte, a big-endian length, then the addresses and
  type-length-value records. TCP over IPv4 (``0x11``) and IPv6 (``0x21``) name the client;
  UNSPEC (``0x00``) and Unix stream sockets (``0x31``) name none; the TLVs are skipped, each
  checked to lie within the header. LOCAL (a balancer's own health check) names no client
  and its block is skipped unread, as the spec asks. At most :data:`V2_MAX_LENGTH` bytes after
  the fixed 16.

A header that names no client leaves the connection's own peer as the client. Anything else is
an error: the spec says a receiver must not guess and must drop the connection, so the server
closes it without a word. A v1 header without its CRLF in :data:`V1_MAX_BYTES` bytes, and a v2
header longer than the bound, are refused as soon as that shows, not when the bytes stop.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass
from typing import Final

__all__ = [
    "V1_MAX_BYTES",
    "V2_MAX_LENGTH",
    "V2_SIGNATURE",
    "ProxyHeader",
    "ProxyHeaderError",
    "parse_proxy_header",
]

#: The longest v1 header, CRLF included (``PROXY TCP6`` with two full IPv6 addresses).
V1_MAX_BYTES: Final = 107
#: What every v2 header starts with.
V2_SIGNATURE: Final = b"\r\n\r\n\x00\r\nQUIT\n"
#: The most bytes of addresses and TLVs a v2 header may carry: the addresses (216 bytes for
#: Unix sockets) and the TLVs balancers send (a VPC endpoint ID, an ALPN, a TLS version and
#: client certificate's names) fit many times over; more only costs the server memory.
V2_MAX_LENGTH: Final = 4096

_V1_PREFIX: Final = b"PROXY "
_V2_FIXED: Final = 16
#: v2 family/protocol bytes: TCP over IPv4, TCP over IPv6 (their address block sizes).
_V2_INET: Final = {0x11: 12, 0x21: 36}
#: v2 family/protocol bytes that name no client: UNSPEC, Unix stream socket.
_V2_NO_CLIENT: Final = {0x00: 0, 0x31: 216}
_V2_DATAGRAM: Final = frozenset({0x12, 0x22, 0x32})


class ProxyHeaderError(ValueError):
    """A PROXY protocol header that is malformed, or not one at all (the message says how)."""


@dataclass(frozen=True, slots=True)
class ProxyHeader:
    """A complete header.

    Attributes:
        length: Its bytes, to drop before the connection's own data.
        client: The client's ``(address, port)`` (an IPv4-mapped IPv6 address as its IPv4
            address); ``None``: the header names none (v1 ``UNKNOWN``, v2 LOCAL, UNSPEC or a
            Unix socket), the connection's peer stays the client.
        version: 1 or 2.
    """

    length: int
    client: tuple[str, int] | None
    version: int


def parse_proxy_header(data: bytes | bytearray) -> ProxyHeader | None:
    """The PROXY header at the start of ``data`` (the bytes received so far).

    Returns:
        The header; ``None`` when ``data`` is a proper start of one and more must be read.

    Raises:
        ProxyHeaderError: ``data`` does not start with a valid header.
    """
    if not data:
        return None
    prefix = V2_SIGNATURE if data[0] == V2_SIGNATURE[0] else _V1_PREFIX
    known = min(len(data), len(prefix))
    if data[:known] != prefix[:known]:
        raise ProxyHeaderError("no PROXY protocol header (v1 or v2) at the start of the connection")
    if known < len(prefix):
        return None
    return _v2(data) if prefix is V2_SIGNATURE else _v1(data)


# -- v1 ----------------------------------------------------------------------------------------


def _v1(data: bytes | bytearray) -> ProxyHeader | None:
    end = data.find(b"\r\n", 0, V1_MAX_BYTES)
    if end < 0:
        if len(data) >= V1_MAX_BYTES:
            raise ProxyHeaderError(f"v1 header without its CRLF in {V1_MAX_BYTES} bytes")
        if b"\n" in data or (b"\r" in data[:-1]):
            raise ProxyHeaderError("v1 header with a bare CR or LF")
        return None
    line = bytes(data[:end])
    if b"\r" in line or b"\n" in line:
        raise ProxyHeaderError("v1 header with a bare CR or LF")
    if line == b"PROXY UNKNOWN" or line.startswith(b"PROXY UNKNOWN "):
        return ProxyHeader(end + 2, None, 1)  # the sender knows no client: the rest is ignored
    try:
        text = line.decode("ascii")
    except UnicodeDecodeError:
        raise ProxyHeaderError("v1 header with a byte that is not ASCII") from None
    fields = text.split(" ")
    if fields[1] not in ("TCP4", "TCP6"):
        raise ProxyHeaderError(f"v1 header with protocol {fields[1][:16]!r} (TCP4, TCP6, UNKNOWN)")
    if len(fields) != 6:
        raise ProxyHeaderError("v1 header is not PROXY, protocol, 2 addresses and 2 ports")
    version = 4 if fields[1] == "TCP4" else 6
    source = _v1_address(fields[2], version)
    _v1_address(fields[3], version)
    port = _v1_port(fields[4])
    _v1_port(fields[5])
    return ProxyHeader(end + 2, (_normal(source), port), 1)


def _v1_address(text: str, version: int) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    # the ipaddress parsers refuse IPv4 leading zeros; a zone index has no place in a header
    try:
        if version == 4:
            return ipaddress.IPv4Address(text)
        if "%" not in text:
            return ipaddress.IPv6Address(text)
    except ValueError:
        pass
    raise ProxyHeaderError(f"v1 header with {text[:48]!r}: not an IPv{version} address")


def _v1_port(text: str) -> int:
    if (
        text.isascii()
        and text.isdigit()
        and len(text) <= 5
        and (text == "0" or text[0] != "0")
        and int(text) <= 65535
    ):
        return int(text)
    raise ProxyHeaderError(f"v1 header with port {text[:8]!r}: not 0-65535 without leading zeros")


# -- v2 ----------------------------------------------------------------------------------------


def _v2(data: bytes | bytearray) -> ProxyHeader | None:
    if len(data) < _V2_FIXED:
        return None
    command, family, length = struct.unpack_from("!BBH", data, 12)
    if command >> 4 != 2:
        raise ProxyHeaderError(f"v2 header of version {command >> 4} (2 expected)")
    if length > V2_MAX_LENGTH:
        raise ProxyHeaderError(f"v2 header of {length} bytes (at most {V2_MAX_LENGTH})")
    if command & 0x0F > 1:
        raise ProxyHeaderError(f"v2 header with command {command & 0x0F} (LOCAL or PROXY)")
    total = _V2_FIXED + length
    if len(data) < total:
        return None
    if command & 0x0F == 0:  # LOCAL: the balancer's own connection; the block is not read
        return ProxyHeader(total, None, 2)
    if family in _V2_DATAGRAM:
        raise ProxyHeaderError(f"v2 header of a datagram protocol (0x{family:02x}) over TCP")
    size = _V2_INET.get(family, _V2_NO_CLIENT.get(family))
    if size is None:
        raise ProxyHeaderError(f"v2 header with family/protocol 0x{family:02x}")
    if length < size:
        raise ProxyHeaderError(f"v2 header of {length} bytes, short of its {size}-byte addresses")
    block = bytes(data[_V2_FIXED:total])
    _skip_tlvs(block, size)
    if family not in _V2_INET:
        return ProxyHeader(total, None, 2)
    half = size // 2 - 2
    address = ipaddress.ip_address(block[:half])
    (port,) = struct.unpack_from("!H", block, 2 * half)
    return ProxyHeader(total, (_normal(address), port), 2)


def _skip_tlvs(block: bytes, at: int) -> None:
    """Check that the type-length-value records from ``at`` fill ``block`` exactly."""
    while at < len(block):
        if at + 3 > len(block):
            raise ProxyHeaderError("v2 header with a TLV cut short in its type or length")
        (size,) = struct.unpack_from("!H", block, at + 1)
        at += 3 + size
        if at > len(block):
            raise ProxyHeaderError("v2 header with a TLV longer than the header")


def _normal(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    """An address as the server writes a client's (an IPv4-mapped IPv6 one as IPv4)."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(address)
