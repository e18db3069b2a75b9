"""Principals of client addresses: IPv4 one by one, IPv6 by /64."""

from __future__ import annotations

from erlmcp_py.transports._principal import principal_for_address


def test_ipv4_addresses_are_principals_of_their_own() -> None:
    assert principal_for_address("127.0.0.2") == "addr:127.0.0.2"
    assert principal_for_address("127.0.0.3") != principal_for_address("127.0.0.2")


def test_ipv6_addresses_group_by_their_64_prefix() -> None:
    one = principal_for_address("2001:db8:1:2::1")
    assert one == "addr:2001:db8:1:2::/64"
    assert principal_for_address("2001:db8:1:2:ffff:ffff:ffff:ffff") == one
    assert principal_for_address("[2001:db8:1:2::7]") == one
    assert principal_for_address("fe80::1%eth0") == "addr:fe80::/64"
    assert principal_for_address("2001:db8:1:3::1") != one


def test_mapped_ipv4_is_the_ipv4_address_and_odd_values_stay_apart() -> None:
    assert principal_for_address("::ffff:192.0.2.7") == "addr:192.0.2.7"
    assert principal_for_address(None) == "addr:unknown"
    assert principal_for_address("") == "addr:unknown"
    assert principal_for_address("/run/erlmcp.sock") == "addr:/run/erlmcp.sock"
