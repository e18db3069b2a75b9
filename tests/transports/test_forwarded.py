"""The client's address behind trusted proxies (``transports/forwarded.py``): whom to trust,
which entry of ``X-Forwarded-For`` / ``Forwarded`` is the client, and that no header value
can break it."""

from __future__ import annotations

import ipaddress
import re

import pytest
from hypothesis import given, strategies as st

from erlmcp_py.transports.forwarded import MAX_HOPS, Resolved, TrustedProxies, resolve_client

PROXY = ("10.0.0.9", 40000)  # a trusted peer: the balancer
STRANGER = ("192.0.2.50", 40001)  # a peer nobody trusts
TRUSTED = TrustedProxies.parse("10.0.0.0/8, 127.0.0.1, 2001:db8:ffff::/48")


def resolve(
    *headers: tuple[str, str],
    peer: tuple[str, int] | None = PROXY,
    trusted: TrustedProxies = TRUSTED,
) -> Resolved:
    raw = [(name.lower().encode(), value.encode("latin-1")) for name, value in headers]
    return resolve_client(peer, raw, trusted)


def xff(value: str) -> tuple[str, str]:
    return ("X-Forwarded-For", value)


def fwd(value: str) -> tuple[str, str]:
    return ("Forwarded", value)


# -- the list of trusted proxies ---------------------------------------------------------------


def test_the_list_takes_addresses_networks_and_a_star() -> None:
    trusted = TrustedProxies.parse(" 127.0.0.1 ,10.0.0.0/8,::1, [::2], 2001:db8::/32,, ")
    assert trusted.entries == ("127.0.0.1", "10.0.0.0/8", "::1", "::2", "2001:db8::/32")
    assert trusted.trusts(ipaddress.ip_address("10.200.0.1"))
    assert not trusted.trusts(ipaddress.ip_address("11.0.0.1"))
    assert trusted.trusts_peer("::ffff:10.1.2.3")  # an IPv4 peer on a dual-stack socket
    assert trusted.trusts_peer("2001:db8:77::1")
    assert not trusted.trusts_peer("127.0.0.2")
    assert not trusted.trusts_peer(None)  # no address (a Unix socket): not a trusted proxy
    assert not trusted.trusts_peer("/run/erlmcp.sock")
    anyone = TrustedProxies.parse("*")
    assert anyone.everyone
    assert anyone.entries == ("*",)
    assert anyone.trusts_peer(None)
    assert anyone.trusts_peer("203.0.113.1")
    assert TrustedProxies.parse(["127.0.0.1", "10.0.0.0/8,127.0.0.1"]).entries == (
        "127.0.0.1",
        "10.0.0.0/8",
    )


def test_an_empty_list_trusts_no_one() -> None:
    for spec in ("", " , ", ()):
        nobody = TrustedProxies.parse(spec)
        assert not nobody
        assert not nobody.trusts_peer("127.0.0.1")
    spoofed = resolve(xff("203.0.113.7"), trusted=TrustedProxies())
    assert spoofed == Resolved(PROXY)


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ("10.0.0.1/8", "'10.0.0.1/8' has host bits set (the network is 10.0.0.0/8)"),
        ("proxy.example.com", "'proxy.example.com' is not an IP address, a CIDR network or *"),
        ("10.0.0.0/33", "'10.0.0.0/33' is not an IP address"),
        ("1.2.3.4.5", "'1.2.3.4.5' is not an IP address"),
        ("**", "'**' is not an IP address"),
    ],
)
def test_a_bad_entry_is_refused_by_name(entry: str, why: str) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(why)):
        TrustedProxies.parse(f"127.0.0.1,{entry}")


# -- who the client is -------------------------------------------------------------------------


def test_a_trusted_peer_names_the_client() -> None:
    assert resolve(xff("203.0.113.7")) == Resolved(("203.0.113.7", 0), "x-forwarded-for")
    assert resolve(fwd("for=203.0.113.7")) == Resolved(("203.0.113.7", 0), "forwarded")
    assert resolve() == Resolved(PROXY)  # no header: the peer itself


def test_an_untrusted_peer_cannot_name_anyone() -> None:
    for headers in (
        [xff("203.0.113.7")],
        [fwd("for=203.0.113.7")],
        [xff("10.0.0.1, 203.0.113.7"), fwd('for="[2001:db8::1]"')],
        [xff("not an address")],  # nothing read: nothing to complain about
    ):
        assert resolve(*headers, peer=STRANGER) == Resolved(STRANGER)
    assert resolve(xff("203.0.113.7"), peer=None) == Resolved(None)


def test_the_right_most_untrusted_hop_is_the_client() -> None:
    # what the client wrote comes first; each trusted proxy appended the address it saw
    chain = xff("198.51.100.1, 203.0.113.7, 10.0.0.5, 10.0.0.6")
    assert resolve(chain).client == ("203.0.113.7", 0)
    # a client forging a "trusted" hop of its own only adds entries left of the real one
    assert resolve(xff("10.0.0.1, 203.0.113.7")).client == ("203.0.113.7", 0)
    assert resolve(fwd("for=198.51.100.1, for=203.0.113.7, for=10.0.0.5")).client == (
        "203.0.113.7",
        0,
    )


def test_several_header_lines_are_one_list_in_order() -> None:
    lines = (xff("198.51.100.1"), xff("203.0.113.7, 10.0.0.5"), xff("10.0.0.6"))
    assert resolve(*lines).client == ("203.0.113.7", 0)
    lines = (fwd("for=198.51.100.1"), fwd("for=203.0.113.7;proto=https"), fwd("for=10.0.0.6"))
    assert resolve(*lines).client == ("203.0.113.7", 0)


def test_when_every_hop_is_trusted_the_left_most_is_the_client() -> None:
    assert resolve(xff("127.0.0.1, 10.0.0.5")).client == ("127.0.0.1", 0)
    assert resolve(fwd("for=10.1.1.1, for=10.0.0.5")).client == ("10.1.1.1", 0)


def test_a_star_trusts_every_hop_so_the_left_most_is_the_client() -> None:
    anyone = TrustedProxies.parse("*")
    headers = xff("198.51.100.1, 203.0.113.7, 192.0.2.9")
    assert resolve(headers, peer=STRANGER, trusted=anyone).client == ("198.51.100.1", 0)
    assert resolve(xff("203.0.113.7"), peer=None, trusted=anyone).client == ("203.0.113.7", 0)


def test_ipv6_clients_and_ports() -> None:
    assert resolve(xff("2001:db8::1")).client == ("2001:db8::1", 0)
    assert resolve(xff("[2001:DB8::1]")).client == ("2001:db8::1", 0)
    assert resolve(xff("[2001:db8::1]:4711")).client == ("2001:db8::1", 4711)
    assert resolve(xff("203.0.113.7:4711")).client == ("203.0.113.7", 4711)
    assert resolve(xff("::ffff:203.0.113.7")).client == ("203.0.113.7", 0)
    quoted = fwd('for="[2001:db8::1]:4711";proto=https;by=10.0.0.9')
    assert resolve(quoted) == Resolved(("2001:db8::1", 4711), "forwarded")
    assert resolve(fwd('For="[2001:db8::1]"')).client == ("2001:db8::1", 0)
    # a trusted IPv6 proxy in the chain is skipped like any other
    chain = xff("2001:db8:1::7, 2001:db8:ffff:1::2")
    assert resolve(chain, peer=("2001:db8:ffff::1", 443)).client == ("2001:db8:1::7", 0)


def test_forwarded_quoting_and_parameters() -> None:
    # a comma inside a quoted string does not split elements; parameters in any order and case
    assert resolve(fwd('by="a, b";for=203.0.113.7, proto=https')).client == ("203.0.113.7", 0)
    assert resolve(fwd('PROTO=https; FOR = "203.0.113.7:80"')).client == ("203.0.113.7", 80)
    assert resolve(fwd(r'for="203.0.113.7";x="a \"quoted\" word"')).client == ("203.0.113.7", 0)
    # elements without for= name no hop: the hop left of them is the next one
    assert resolve(fwd("for=203.0.113.7, proto=https")).client == ("203.0.113.7", 0)
    assert resolve(fwd("proto=https;host=mcp.example.com")) == Resolved(PROXY)


@pytest.mark.parametrize(
    "node",
    ["unknown", "UNKNOWN", "_hidden", "_SEVKISEK", '"_abc.def-1:_port"', '"unknown:4711"'],
)
def test_unknown_and_obfuscated_clients_are_never_taken_as_addresses(node: str) -> None:
    found = resolve(fwd(f"for={node}, for=10.0.0.5"))
    assert found.client == PROXY
    assert found.problem == "Forwarded: the client is unknown or obfuscated"


def test_an_unknown_x_forwarded_for_client_is_not_an_address() -> None:
    found = resolve(xff("unknown"))
    assert found.client == PROXY
    assert found.problem == "X-Forwarded-For: the client is unknown or obfuscated"


def test_both_headers_must_name_the_same_client() -> None:
    agree = resolve(xff("203.0.113.7"), fwd('for="203.0.113.7:4711"'))
    assert agree == Resolved(("203.0.113.7", 4711), "forwarded")
    # a proxy appends to one of them: a client may have written the other
    for headers in (
        (xff("203.0.113.7"), fwd("for=198.51.100.1")),
        (xff("203.0.113.7"), fwd("for=_hidden")),
        (xff("unknown"), fwd("for=203.0.113.7")),
    ):
        found = resolve(*headers)
        assert found.client == PROXY
        assert found.problem == "X-Forwarded-For and Forwarded name different clients"


@pytest.mark.parametrize(
    ("headers", "why"),
    [
        ([xff("203.0.113.7, bogus")], "X-Forwarded-For: not an IP address: 'bogus'"),
        ([xff("1.2.3.4.5")], "X-Forwarded-For: not an IP address"),
        ([xff("203.0.113.07")], "X-Forwarded-For: not an IP address"),  # leading zero
        ([xff("203.0.113.7:99999")], "X-Forwarded-For: a bad port"),
        ([xff("203.0.113.7:")], "X-Forwarded-For: a bad port"),
        ([xff("[203.0.113.7]")], "X-Forwarded-For: not an IPv6 address"),
        ([xff("[2001:db8::1")], "X-Forwarded-For: an unclosed ["),
        ([xff("[2001:db8::1]x")], "X-Forwarded-For: junk after the address"),
        ([xff("fe80::1%eth0")], "X-Forwarded-For: an address with a zone index"),
        ([xff("\xe9\xe9")], "X-Forwarded-For: not an IP address"),
        ([xff("10.0.0.1," * (MAX_HOPS + 1))], f"X-Forwarded-For: more than {MAX_HOPS} hops"),
        ([fwd("for=2001:db8::1")], "Forwarded: an IPv6 address must be in brackets"),
        ([fwd('for="[2001:db8::1"')], "Forwarded: an unclosed ["),
        ([fwd("for=203.0.113.7;for=198.51.100.1")], "Forwarded: for= given twice"),
        ([fwd('for="203.0.113.7')], "Forwarded: not a name=value list"),
        ([fwd("for")], "Forwarded: not a name=value list"),
        ([fwd("for=")], "Forwarded: not a name=value list"),
        ([fwd("for=203.0.113.7 junk")], "Forwarded: not a name=value list"),
        ([fwd("for=_")], "Forwarded: not an IP address"),
        ([fwd('for="_x:_"')], "Forwarded: a bad port"),
        ([fwd("for=localhost")], "Forwarded: not an IP address"),
    ],
)
def test_malformed_values_from_a_trusted_peer_leave_its_own_address(
    headers: list[tuple[str, str]], why: str
) -> None:
    found = resolve(*headers)
    assert found.client == PROXY
    assert found.source == "peer"
    assert found.problem is not None
    assert found.problem.startswith(why), found.problem


def test_garbage_left_of_the_client_is_never_read() -> None:
    # what a client wrote before the proxy's entry is not walked over: it cannot spoil it
    assert resolve(xff("garbage, [oops, 203.0.113.7")).client == ("203.0.113.7", 0)
    assert resolve(fwd("for=nonsense;for=twice, for=203.0.113.7")).client == ("203.0.113.7", 0)
    assert resolve(fwd('for="x, y'), fwd("for=203.0.113.7")).client == ("203.0.113.7", 0)
    long = xff(", ".join(["garbage"] * 1000 + ["203.0.113.7"]))
    assert resolve(long).client == ("203.0.113.7", 0)


def test_a_problem_quotes_a_bounded_part_of_the_value() -> None:
    found = resolve(xff("x" * 10_000))
    assert found.problem is not None
    assert len(found.problem) < 120


# -- robustness: any header value, from any peer -----------------------------------------------

ADDRESSES = st.one_of(
    st.ip_addresses(v=4).map(str),
    st.ip_addresses(v=6).map(str),
    st.sampled_from(["10.0.0.5", "127.0.0.1", "2001:db8:ffff::3", "203.0.113.7"]),
)
PEERS = st.one_of(
    st.sampled_from([PROXY, ("127.0.0.1", 1), ("::ffff:10.1.1.1", 2), ("2001:db8:ffff::1", 3)]),
    st.none(),
    st.tuples(ADDRESSES, st.integers(0, 65535)),
    st.tuples(st.text(max_size=20), st.integers(0, 65535)),
)
HEADER_VALUES = st.one_of(
    st.binary(max_size=200),
    st.text(
        alphabet=st.sampled_from('0123456789abcdef.:[],;="\\ _-forunkwFORUNKW'), max_size=80
    ).map(lambda text: text.encode()),
    st.lists(ADDRESSES, max_size=6).map(lambda hops: ", ".join(hops).encode()),
    st.lists(ADDRESSES, max_size=6).map(
        lambda hops: ", ".join(f'for="[{h}]"' if ":" in h else f"for={h}" for h in hops).encode()
    ),
)
HEADERS = st.lists(
    st.tuples(st.sampled_from([b"x-forwarded-for", b"forwarded", b"host"]), HEADER_VALUES),
    max_size=4,
)
TRUST = st.sampled_from(
    [TRUSTED, TrustedProxies.parse("*"), TrustedProxies(), TrustedProxies.parse("::/0")]
)


@given(peer=PEERS, headers=HEADERS, trusted=TRUST)
def test_any_headers_give_the_peer_or_an_address_they_name(
    peer: tuple[str, int] | None, headers: list[tuple[bytes, bytes]], trusted: TrustedProxies
) -> None:
    found = resolve_client(peer, headers, trusted)  # never raises
    if found.source == "peer":
        assert found.client == peer
        return
    assert trusted.trusts_peer(peer[0] if peer else None)
    assert found.problem is None
    assert found.client is not None
    host, port = found.client
    address = ipaddress.ip_address(host)
    assert str(address) == host  # a normal form, never a raw header string
    assert 0 <= port <= 65535
    named = b" ".join(value for name, value in headers if name != b"host").decode("latin-1")
    assert address in addresses_in(named)


def addresses_in(text: str) -> set[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """Every IP address written in ``text`` (with or without a port; mapped IPv4 as IPv4)."""
    out = set()
    for run in re.findall(r"[0-9A-Fa-f.:]+", text):
        for candidate in (run, run.rsplit(":", 1)[0]):
            try:
                address = ipaddress.ip_address(candidate)
            except ValueError:
                continue
            mapped = getattr(address, "ipv4_mapped", None)
            out.add(mapped or address)
    return out


@given(
    client=st.ip_addresses(v=4),
    forged=st.lists(ADDRESSES, max_size=4),
    proxies=st.lists(st.sampled_from(["10.0.0.5", "10.9.9.9", "127.0.0.1"]), max_size=4),
)
def test_the_client_a_trusted_proxy_saw_wins_over_anything_the_client_wrote(
    client: ipaddress.IPv4Address, forged: list[str], proxies: list[str]
) -> None:
    if TRUSTED.trusts(client):
        return  # a client at a trusted address is itself a proxy: the hop before it counts
    chain = ", ".join([*forged, str(client), *proxies])
    assert resolve(xff(chain)).client == (str(client), 0)
    nodes = ", ".join(f'for="[{h}]"' if ":" in h else f"for={h}" for h in forged)
    elements = [nodes] if nodes else []
    hops = ", ".join([*elements, f"for={client}", *(f"for={p}" for p in proxies)])
    assert resolve(fwd(hops)).client == (str(client), 0)
