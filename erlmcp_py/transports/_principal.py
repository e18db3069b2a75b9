"""Who a request comes from, for fair limits and for binding ``requestState``.

Without authentication the principal is the client's address (the scope's ``client``: behind
a trusted proxy, the address it names, :mod:`~erlmcp_py.transports.forwarded`). IPv4
addresses count one by one; IPv6 addresses are grouped by their /64 prefix, the smallest block
a site is usually given, so that one host cannot take many shares by rotating through its own
prefix. An IPv4-mapped IPv6 address (``::ffff:a.b.c.d``) is its IPv4 address.
"""

from __future__ import annotations

import ipaddress

__all__ = ["principal_for_address"]


def principal_for_address(host: str | None) -> str:
    """The principal of a client address.

    Args:
        host: The client's IP address as the server reports it (``None`` when unknown).

    Returns:
        ``addr:<IPv4>``, ``addr:<IPv6 /64 network>`` (e.g. ``addr:2001:db8:1:2::/64``), or
        ``addr:<host>`` for a value that is not an IP address (a Unix socket path, a name).
    """
    if not host:
        return "addr:unknown"
    try:
        address = ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return f"addr:{host[:256]}"
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return f"addr:{address.ipv4_mapped}"
        network = ipaddress.IPv6Network((address, 64), strict=False)
        return f"addr:{network}"
    return f"addr:{address}"
