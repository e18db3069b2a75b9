"""Connection hygiene and fair limits of the HTTP transport: request bodies and principals.

*Frames.* :func:`frame_limit` is the frame limit of every transport: the server's
``frame_bytes`` policy, which a transport's own setting can only narrow.

*Bodies.* :func:`read_body` reads one ASGI request body under two bounds: a size cap (a
declared ``Content-Length`` over it is refused after at most its first ``head_bytes``,
kept to tell whose answer it was) and a minimum rate.
A body must arrive within ``grace_s`` plus one second per ``min_rate`` bytes received so far,
so a client that trickles bytes is cut off after ``grace_s`` while one that sends at the
minimum rate or faster is never. The request head is bounded by the server's keep-alive
deadline, which runs until a complete head has arrived (:mod:`~erlmcp_py.transports._server`).

*Principals.* :class:`PrincipalCounter` counts what each principal holds (requests in flight)
against a per-principal cap, so that one principal filling its share never takes another's.
Sessions are held in :class:`~erlmcp_py.core.shares.Shares`, which also names the idle session
to end when a share or the global cap is full.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import trio

if TYPE_CHECKING:
    from erlmcp_py.mcp.server import Server

__all__ = [
    "DEFAULT_BODY_BYTES",
    "BodyPolicy",
    "BodyTooLarge",
    "BodyTooSlow",
    "PrincipalCounter",
    "PrincipalLimits",
    "frame_limit",
    "read_body",
]

#: Default cap of a POST body. A JSON parse holds the event loop (and the GIL, so a worker
#: thread does not help): 4 MiB of small objects take about 110 ms on a 2-core box, 1 MiB
#: about 25 ms; strings parse at about 7 ms per MiB.
DEFAULT_BODY_BYTES: Final = 1 << 20


@dataclass(frozen=True, slots=True)
class BodyPolicy:
    """Bounds of one request body.

    Attributes:
        max_bytes: Largest body (a larger one is refused with 413).
        grace_s: Seconds a body may take beyond what ``min_rate`` allows.
        min_rate: Bytes per second a client must keep up once past ``grace_s``.
    """

    max_bytes: int = DEFAULT_BODY_BYTES
    grace_s: float = 10.0
    min_rate: int = 32 * 1024


@dataclass(frozen=True, slots=True)
class PrincipalLimits:
    """Caps per principal (see :mod:`erlmcp_py.transports._principal`).

    Attributes:
        sessions: Open sessions of one principal; at it, a new one ends the principal's least
            recently used idle session (429 only when none is idle).
        requests: HTTP requests of one principal being served at once (GET streams count).
        suspended: 2026-07-28 tool calls of one principal alive in the continuation registry.
    """

    sessions: int = 32
    requests: int = 64
    suspended: int = 256


def frame_limit(server: Server, own: int | None = None) -> int:
    """The frame limit of a transport serving ``server``.

    Args:
        server: The server; its ``runtime_config.frame_bytes`` is the policy.
        own: The transport's own limit, if it has one.

    Returns:
        The policy's ``frame_bytes``, or ``own`` when that is smaller.
    """
    policy = server.runtime_config.frame_bytes
    return policy if own is None else min(own, policy)


class BodyTooLarge(Exception):
    """The body is larger than allowed.

    Attributes:
        size: Its size: the declared length, or the bytes received (a lower bound).
        limit: The cap.
        head: Its first bytes as far as they were read (at most the ``head_bytes`` asked
            for), to tell whose answer it was.
    """

    def __init__(self, size: int, limit: int, head: bytes = b"") -> None:
        super().__init__(f"body of at least {size} bytes over the limit of {limit}")
        self.size = size
        self.limit = limit
        self.head = head


class BodyTooSlow(Exception):
    """The body did not arrive at the minimum rate."""

    def __init__(self, received: int) -> None:
        super().__init__(f"body too slow: {received} bytes received")
        self.received = received


async def read_body(
    receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
    declared: int | None,
    policy: BodyPolicy,
    *,
    head_bytes: int = 0,
) -> bytes | None:
    """Read a whole ASGI request body.

    Args:
        receive: The ASGI ``receive``.
        declared: The ``Content-Length``, when given.
        policy: The bounds.
        head_bytes: How much of a body over the cap to keep for :attr:`BodyTooLarge.head`.
            A body declared over the cap is read only that far (within ``grace_s``); ``0``:
            refused before anything is read.

    Returns:
        The body, or ``None`` when the client went away before it was complete.

    Raises:
        BodyTooLarge: the declared or received size is over ``policy.max_bytes``.
        BodyTooSlow: the body did not keep up with ``policy.min_rate`` after ``grace_s``.
    """
    start = trio.current_time()
    if declared is not None and declared > policy.max_bytes:
        head = bytearray()
        with trio.move_on_at(start + policy.grace_s):
            while len(head) < head_bytes:
                message = await receive()
                head += message.get("body", b"")
                if message["type"] == "http.disconnect" or not message.get("more_body", False):
                    break
        raise BodyTooLarge(declared, policy.max_bytes, bytes(head[:head_bytes]))
    body = bytearray()
    while True:
        deadline = start + policy.grace_s + len(body) / policy.min_rate
        with trio.move_on_at(deadline):
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            body += message.get("body", b"")
            if len(body) > policy.max_bytes:
                raise BodyTooLarge(len(body), policy.max_bytes, bytes(body[:head_bytes]))
            if not message.get("more_body", False):
                return bytes(body)
            continue
        raise BodyTooSlow(len(body))


class PrincipalCounter:
    """What each principal holds of one resource, against a per-principal cap.

    Args:
        cap: Units one principal may hold at once.
    """

    def __init__(self, cap: int) -> None:
        if cap < 1:
            raise ValueError("a per-principal cap must be at least 1")
        self.cap = cap
        self._held: Counter[str] = Counter()

    def acquire(self, principal: str) -> bool:
        """Take one unit for ``principal``; False (nothing taken) when it holds its cap."""
        if self._held[principal] >= self.cap:
            return False
        self._held[principal] += 1
        return True

    def release(self, principal: str) -> None:
        """Give back one unit ``principal`` took."""
        left = self._held[principal] - 1
        if left > 0:
            self._held[principal] = left
        else:
            del self._held[principal]

    def held(self, principal: str) -> int:
        """Units ``principal`` holds."""
        return self._held.get(principal, 0)

    @property
    def principals(self) -> int:
        """Principals holding at least one unit."""
        return len(self._held)
