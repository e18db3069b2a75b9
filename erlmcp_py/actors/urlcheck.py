"""The I/O half of the URL policy: resolve a host name and judge every address it maps to.

:mod:`erlmcp_py.core.urlpolicy` decides everything that can be decided from the text alone (and
judges IP literals). This module adds the one step that needs the network: a host *name* is
resolved (with a deadline) and refused if **any** of its addresses is unsafe, so a name that
round-robins between a public and a private address cannot slip through.

The resolver is injectable (an async callable ``host -> list of address strings``) so that tests
never touch the network.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable, Sequence

import trio

from erlmcp_py.core.errors import UnsafeURLError
from erlmcp_py.core.urlpolicy import (
    DEFAULT_POLICY,
    UNRESOLVABLE,
    IPAddress,
    UrlPolicy,
    check_address,
    parse_url,
)

__all__ = ["Resolver", "check_url", "default_resolver"]

Resolver = Callable[[str], Awaitable[Sequence[str]]]
"""An async callable mapping a host name to the text of its addresses."""


async def default_resolver(host: str) -> list[str]:
    """Resolve ``host`` with :func:`trio.socket.getaddrinfo` (A and AAAA records).

    Args:
        host: An ASCII host name.

    Returns:
        The distinct addresses, in resolver order, as text (IPv6 zone ids may be present).

    Raises:
        OSError: When resolution fails (``socket.gaierror``).
    """
    infos = await trio.socket.getaddrinfo(host, None, type=trio.socket.SOCK_STREAM)
    seen: dict[str, None] = {}
    for *_, sockaddr in infos:
        seen.setdefault(str(sockaddr[0]), None)
    return list(seen)


def _to_address(host: str, text: str) -> IPAddress:
    try:
        # getaddrinfo writes link-local IPv6 with a zone ("fe80::1%eth0"); judge the address.
        return ipaddress.ip_address(str(text).split("%", 1)[0])
    except ValueError:
        raise UnsafeURLError(
            UNRESOLVABLE, f"resolver returned a non-address for {host!r}: {text!r}"
        ) from None


async def check_url(
    url: str, policy: UrlPolicy | None = None, *, resolver: Resolver | None = None
) -> str:
    """Check ``url`` under ``policy``, resolving its host name if it has one.

    IP literals are judged without resolving. A host name is resolved within
    ``policy.resolve_timeout`` seconds and refused if it has no address or if **any** address
    is unsafe. The verdict is point-in-time: DNS may answer differently later.

    Args:
        url: The URL text.
        policy: The policy; defaults to :class:`~erlmcp_py.core.urlpolicy.UrlPolicy`'s defaults.
        resolver: Async ``host -> addresses`` callable; defaults to :func:`default_resolver`.

    Returns:
        The normalised URL.

    Raises:
        UnsafeURLError: With a stable reason code; ``"unresolvable"`` when resolution fails,
            times out or returns nothing usable.
    """
    policy = policy or DEFAULT_POLICY
    parsed = parse_url(url, policy)
    if not parsed.needs_resolution:
        return parsed.url
    resolve = resolver or default_resolver
    addresses: Sequence[str] = ()
    with trio.move_on_after(policy.resolve_timeout) as scope:
        try:
            addresses = await resolve(parsed.host)
        except (OSError, UnicodeError) as exc:
            raise UnsafeURLError(UNRESOLVABLE, f"cannot resolve {parsed.host!r}: {exc}") from exc
    if scope.cancelled_caught:
        raise UnsafeURLError(
            UNRESOLVABLE, f"no answer for {parsed.host!r} within {policy.resolve_timeout} s"
        )
    if not addresses:
        raise UnsafeURLError(UNRESOLVABLE, f"{parsed.host!r} has no address")
    for text in addresses:
        ip = _to_address(parsed.host, text)
        try:
            check_address(ip, policy, scheme=parsed.scheme)
        except UnsafeURLError as exc:
            raise UnsafeURLError(exc.reason, f"{parsed.host} resolves to {exc.detail}") from None
    return parsed.url
