"""The PROXY protocol header parser (v1 text, v2 binary): what it accepts, what it refuses and
that nothing but :class:`ProxyHeaderError` ever comes out of it."""

from __future__ import annotations

import ipaddress
import struct

import pytest
from hypothesis import given, settings, strategies as st

from erlmcp_py.transports._proxy_protocol import (
    V1_MAX_BYTES,
    V2_MAX_LENGTH,
    V2_SIGNATURE,
    ProxyHeader,
    ProxyHeaderError,
    parse_proxy_header,
)

AFTER = b"GET / HTTP/1.1\r\n"  # the connection's own bytes behind the header


def v1(protocol: str, source: str, destination: str, sport: int, dport: int) -> bytes:
    return f"PROXY {protocol} {source} {destination} {sport} {dport}\r\n".encode()


def v2(
    command: int = 0x21,
    family: int = 0x11,
    addresses: bytes = b"",
    tlvs: bytes = b"",
    length: int | None = None,
) -> bytes:
    body = addresses + tlvs
    size = len(body) if length is None else length
    return V2_SIGNATURE + struct.pack("!BBH", command, family, size) + body


def tlv(kind: int, value: bytes) -> bytes:
    return struct.pack("!BH", kind, len(value)) + value


def inet4(source: str, destination: str, sport: int, dport: int) -> bytes:
    packed = ipaddress.IPv4Address(source).packed + ipaddress.IPv4Address(destination).packed
    return packed + struct.pack("!HH", sport, dport)


def inet6(source: str, destination: str, sport: int, dport: int) -> bytes:
    packed = ipaddress.IPv6Address(source).packed + ipaddress.IPv6Address(destination).packed
    return packed + struct.pack("!HH", sport, dport)


def parsed(data: bytes) -> ProxyHeader:
    header = parse_proxy_header(data + AFTER)
    assert header is not None
    assert (data + AFTER)[header.length :] == AFTER  # exactly the header's bytes are taken
    return header


def refused(data: bytes) -> str:
    with pytest.raises(ProxyHeaderError) as info:
        parse_proxy_header(data)
    return str(info.value)


# -- v1 ----------------------------------------------------------------------------------------


def test_v1_tcp4_and_tcp6_name_the_source_address_and_port() -> None:
    assert parsed(v1("TCP4", "192.0.2.7", "198.51.100.1", 56324, 443)).client == (
        "192.0.2.7",
        56324,
    )
    header = parsed(v1("TCP6", "2001:db8::7", "2001:db8::1", 0, 65535))
    assert (header.client, header.version) == (("2001:db8::7", 0), 1)
    # an IPv4-mapped source is the IPv4 client, as the server reports such peers
    assert parsed(v1("TCP6", "::ffff:192.0.2.9", "::1", 1, 2)).client == ("192.0.2.9", 1)


def test_v1_unknown_names_no_client_and_ignores_the_rest_of_its_line() -> None:
    assert parsed(b"PROXY UNKNOWN\r\n").client is None
    assert parsed(b"PROXY UNKNOWN ffff::1 ffff::2 65535 65535\r\n").client is None
    longest = b"PROXY UNKNOWN " + b"x" * (V1_MAX_BYTES - 16) + b"\r\n"
    assert len(longest) == V1_MAX_BYTES
    assert parsed(longest).length == V1_MAX_BYTES


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (b"PROXY TCP4 192.0.2.7 198.51.100.1 1 2\n", "bare CR or LF"),
        (b"PROXY TCP4 192.0.2.7 198.51.100.1 1\r2\r\n", "bare CR or LF"),
        (b"PROXY TCP4  192.0.2.7 198.51.100.1 1 2\r\n", "2 addresses and 2 ports"),
        (b"PROXY TCP4 192.0.2.7 198.51.100.1 1  2\r\n", "2 addresses and 2 ports"),
        (b"PROXY TCP4 192.0.2.7 198.51.100.1 1 2 \r\n", "2 addresses and 2 ports"),
        (b"PROXY TCP4 192.0.2.7 198.51.100.1 1\r\n", "2 addresses and 2 ports"),
        (b"PROXY TCP4 192.0.2.07 198.51.100.1 1 2\r\n", "'192.0.2.07': not an IPv4 address"),
        (b"PROXY TCP4 2001:db8::1 198.51.100.1 1 2\r\n", "not an IPv4 address"),
        (b"PROXY TCP6 192.0.2.7 ::1 1 2\r\n", "'192.0.2.7': not an IPv6 address"),
        (b"PROXY TCP6 fe80::1%eth0 ::1 1 2\r\n", "not an IPv6 address"),
        (b"PROXY TCP4 192.0.2.7 198.51.100.1 01 2\r\n", "port '01'"),
        (b"PROXY TCP4 192.0.2.7 198.51.100.1 1 65536\r\n", "port '65536'"),
        (b"PROXY TCP4 192.0.2.7 198.51.100.1 +1 2\r\n", "port '+1'"),
        (b"PROXY TCP4 192.0.2.7 198.51.100.1 \xd9\xa1 2\r\n", "not ASCII"),
        (b"PROXY UDP4 192.0.2.7 198.51.100.1 1 2\r\n", "protocol 'UDP4'"),
        (b"PROXY tcp4 192.0.2.7 198.51.100.1 1 2\r\n", "protocol 'tcp4'"),
        (b"PROXY\tTCP4 192.0.2.7 198.51.100.1 1 2\r\n", "no PROXY protocol header"),
        (b"GET / HTTP/1.1\r\n", "no PROXY protocol header"),
        (b"PROXY " + b"1" * V1_MAX_BYTES, "without its CRLF in 107 bytes"),
    ],
)
def test_v1_refuses_anything_off_its_grammar(line: bytes, why: str) -> None:
    assert why in refused(line)


def test_v1_without_its_crlf_is_refused_at_its_bound_not_later() -> None:
    line = b"PROXY UNKNOWN " + b"x" * 200
    assert parse_proxy_header(line[: V1_MAX_BYTES - 1]) is None  # it may still end in time
    assert "107 bytes" in refused(line[:V1_MAX_BYTES])


# -- v2 ----------------------------------------------------------------------------------------


def test_v2_tcp_over_ipv4_and_ipv6_names_the_source() -> None:
    header = parsed(v2(addresses=inet4("203.0.113.5", "10.0.0.1", 40000, 8000)))
    assert (header.client, header.version) == (("203.0.113.5", 40000), 2)
    six = v2(family=0x21, addresses=inet6("2001:db8::5", "2001:db8::1", 1, 2))
    assert parsed(six).client == ("2001:db8::5", 1)


def test_v2_tlvs_are_skipped_within_the_header() -> None:
    tlvs = tlv(0x01, b"h2") + tlv(0xEA, b"\x01vpce-0123") + tlv(0x04, b"")
    header = parsed(v2(addresses=inet4("203.0.113.5", "10.0.0.1", 1, 2), tlvs=tlvs))
    assert header.client == ("203.0.113.5", 1)
    assert header.length == 16 + 12 + len(tlvs)


def test_v2_local_unspec_and_unix_name_no_client() -> None:
    # LOCAL (a balancer's health check): its block is not read, whatever its family says
    assert parsed(v2(command=0x20, family=0x00)).client is None
    assert parsed(v2(command=0x20, family=0xFF, addresses=b"junk")).client is None
    assert parsed(v2(family=0x00)).client is None
    assert parsed(v2(family=0x31, addresses=b"/run/a".ljust(216, b"\0"))).client is None


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (v2(command=0x11), "version 1"),
        (v2(command=0x22), "command 2"),
        (v2(family=0x12, addresses=inet4("192.0.2.1", "192.0.2.2", 1, 2)), "datagram"),
        (v2(family=0x41, addresses=inet4("192.0.2.1", "192.0.2.2", 1, 2)), "0x41"),
        (v2(family=0x11, addresses=b"\x01" * 11), "short of its 12-byte addresses"),
        (v2(family=0x21, addresses=inet4("192.0.2.1", "192.0.2.2", 1, 2)), "36-byte"),
        (v2(addresses=inet4("192.0.2.1", "192.0.2.2", 1, 2), tlvs=b"\x01\x00"), "cut short"),
        (
            v2(addresses=inet4("192.0.2.1", "192.0.2.2", 1, 2), tlvs=b"\x01\x00\x05ab"),
            "longer than the header",
        ),
        (v2(length=V2_MAX_LENGTH + 1), f"at most {V2_MAX_LENGTH}"),
        (V2_SIGNATURE[:5] + b"X", "no PROXY protocol header"),
    ],
)
def test_v2_refuses_a_malformed_header(data: bytes, why: str) -> None:
    assert why in refused(data)


def test_v2_oversized_is_refused_from_its_fixed_part_alone() -> None:
    assert "at most" in refused(v2(length=0xFFFF)[:16])  # not after 64 KiB more


# -- every version: round trips and mutations --------------------------------------------------

ipv4 = st.ip_addresses(v=4).map(str)
ipv6 = st.ip_addresses(v=6).filter(lambda a: a.ipv4_mapped is None).map(str)
ports = st.integers(0, 65535)
tlvs = st.lists(
    st.tuples(st.integers(0, 255), st.binary(max_size=40)).map(lambda t: tlv(*t)), max_size=5
).map(b"".join)


@st.composite
def headers(draw: st.DrawFn) -> tuple[bytes, tuple[str, int]]:
    """A valid header of either version, and the client it names."""
    six = draw(st.booleans())
    source, destination = draw(ipv6 if six else ipv4), draw(ipv6 if six else ipv4)
    sport, dport = draw(ports), draw(ports)
    if draw(st.booleans()):
        return v1("TCP6" if six else "TCP4", source, destination, sport, dport), (source, sport)
    block = (inet6 if six else inet4)(source, destination, sport, dport)
    data = v2(family=0x21 if six else 0x11, addresses=block, tlvs=draw(tlvs))
    return data, (source, sport)


@given(headers())
def test_a_valid_header_reads_back_its_client(case: tuple[bytes, tuple[str, int]]) -> None:
    data, client = case
    header = parsed(data)
    assert header.client == client
    assert header.length == len(data)


@given(headers())
def test_every_proper_prefix_of_a_header_asks_for_more(case: tuple[bytes, tuple[str, int]]) -> None:
    data, _ = case
    for end in range(len(data)):
        assert parse_proxy_header(data[:end]) is None


@settings(max_examples=300)
@given(headers(), st.data())
def test_mutated_headers_are_read_or_refused_never_anything_else(
    case: tuple[bytes, tuple[str, int]], data: st.DataObject
) -> None:
    original, _ = case
    mutated = bytearray(original + AFTER)
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(mutated) - 1))
        mutated[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(mutated)))
    for candidate in (bytes(mutated), bytes(mutated[:cut])):
        try:
            header = parse_proxy_header(candidate)
        except ProxyHeaderError:
            continue
        if header is not None:
            assert 0 < header.length <= len(candidate)
            assert header.length <= 16 + V2_MAX_LENGTH


@given(st.binary(max_size=300))
def test_arbitrary_bytes_are_read_or_refused_never_anything_else(data: bytes) -> None:
    try:
        header = parse_proxy_header(data)
    except ProxyHeaderError:
        return
    if header is not None:
        assert header.length <= len(data)
