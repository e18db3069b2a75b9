"""Where the gateway's upstream server is, and how one connection to it is opened.

An :class:`Upstream` is a command (the server runs as a subprocess of the gateway, spoken to
over its stdio) or the URL of a Streamable HTTP endpoint (with the headers every request
carries: ``Authorization``…). :func:`open_upstream_wire` opens one connection: a process
started in a session of its own (a terminal's Ctrl-C, a process group's SIGTERM reach the
gateway, which decides when the upstream stops), its stderr the gateway's; or one HTTP
session. The wire it yields is :class:`WatchedWire`: the connection as the client session
uses it, plus :attr:`WatchedWire.lost`, set once the upstream can no longer answer (its output
ended, it exited, an exchange failed), with the reason.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

import trio

from erlmcp_py.client import (
    ConnectionLost,
    Inbound,
    StdioWire,
    Wire,
    open_http_wire,
    open_stdio_wire,
)
from erlmcp_py.core.versions import V_2026_07_28
from erlmcp_py.mcp.jsonrpc import Message

__all__ = [
    "ERAS",
    "Upstream",
    "UpstreamPolicy",
    "WatchedWire",
    "open_upstream_wire",
    "parse_header",
]

#: What :attr:`Upstream.era` may say: ``"auto"`` (``initialize``, and 2026-07-28 when the
#: upstream refuses it for its version), ``"session"`` (``initialize`` only) or
#: ``"2026-07-28"`` (``server/discover``, and every request stateless).
ERAS: Final = ("auto", "session", V_2026_07_28)

#: An HTTP field name (RFC 9110 ``token``).
_FIELD_NAME: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


def parse_header(text: str) -> tuple[str, str]:
    """``"Name: value"`` as a header pair.

    Raises:
        ValueError: not ``Name: value``, or a name or value HTTP does not allow.
    """
    name, sep, value = text.partition(":")
    name, value = name.strip(), value.strip()
    if not sep or not _FIELD_NAME.fullmatch(name):
        raise ValueError(f"not a header 'Name: value': {text[:80]!r}")
    if any((ord(c) < 0x20 and c != "\t") or ord(c) == 0x7F for c in value):
        raise ValueError(f"header {name}: its value has a control character")
    return name, value


@dataclass(frozen=True, slots=True)
class Upstream:
    """The server a gateway stands in front of: exactly one of ``command`` and ``url``.

    Attributes:
        command: The server's command line; it is started once per downstream session and
            spoken to over its stdin/stdout.
        url: A Streamable HTTP endpoint (``http://`` or ``https://``); one MCP session is
            opened there per downstream session.
        headers: Sent on every request to ``url`` (``("Authorization", "Bearer …")``).
        era: The protocol era the upstream speaks (:data:`ERAS`): ``"auto"`` finds out,
            ``"session"`` insists on ``initialize``, ``"2026-07-28"`` never sends it.
    """

    command: tuple[str, ...] = ()
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    era: str = "auto"

    def __post_init__(self) -> None:
        object.__setattr__(self, "command", tuple(self.command))
        object.__setattr__(self, "headers", tuple(tuple(h) for h in self.headers))
        if bool(self.command) == (self.url is not None):
            raise ValueError("an upstream is a command or a URL: give exactly one")
        if self.url is not None:
            parts = urlsplit(self.url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(f"the upstream URL is not an http(s) URL: {self.url[:200]}")
        elif self.headers:
            raise ValueError("upstream headers go with an upstream URL, not a command")
        for name, value in self.headers:
            parse_header(f"{name}: {value}")
        if self.era not in ERAS:
            raise ValueError(
                f"the upstream era is one of {', '.join(ERAS)}, not {str(self.era)[:40]!r}"
            )

    def describe(self) -> str:
        """The upstream in a few words, for logs and errors (never its headers)."""
        if self.url is not None:
            return self.url
        return " ".join(self.command)[:200]


@dataclass(frozen=True, slots=True)
class UpstreamPolicy:
    """How the gateway runs its upstream connections.

    Attributes:
        max_upstreams: Upstream connections open at once (processes, for a command), over
            every downstream session; an ``initialize`` past it is refused.
        start_timeout_s: Seconds an upstream has to start and answer ``initialize``.
        max_restarts: Restarts of one downstream session's upstream within
            ``restart_period_s`` before the gateway gives up on it.
        restart_period_s: The sliding window of ``max_restarts``.
        backoff_s: Wait before the first restart, doubled for each restart that follows
            within ``restart_period_s``.
        max_backoff_s: The longest wait before a restart.
        close_timeout_s: Seconds an upstream process has to exit once its stdin is closed,
            before it is killed.
        notification_queue: Upstream notifications queued for the client at most; past it
            they are dropped (and logged).
        pool_size: Upstream sessions the 2026-07-28 calls run on at most (the pool's; each
            holds one of ``max_upstreams``).
        pool_idle_s: A pooled session nobody leased this long is closed.
        pool_wait_s: Longest wait of a 2026-07-28 call for a pooled session when all are
            lent; past it the call is refused (``upstream_unavailable``).
    """

    max_upstreams: int = 64
    start_timeout_s: float = 30.0
    max_restarts: int = 5
    restart_period_s: float = 10.0
    backoff_s: float = 0.1
    max_backoff_s: float = 5.0
    close_timeout_s: float = 3.0
    notification_queue: int = 1024
    pool_size: int = 8
    pool_idle_s: float = 60.0
    pool_wait_s: float = 30.0

    def __post_init__(self) -> None:
        for name in ("max_upstreams", "max_restarts", "notification_queue", "pool_size"):
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise ValueError(f"UpstreamPolicy.{name} must be a whole number of at least 1")
        for name in (
            "start_timeout_s",
            "restart_period_s",
            "backoff_s",
            "max_backoff_s",
            "close_timeout_s",
            "pool_idle_s",
            "pool_wait_s",
        ):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not 0 < value < float("inf"):
                raise ValueError(f"UpstreamPolicy.{name} must be a positive number of seconds")

    def backoff(self, restarts: int) -> float:
        """Seconds to wait before the ``restarts``-th restart within the period (1, 2…)."""
        if restarts <= 0:
            return 0.0
        return float(min(self.max_backoff_s, self.backoff_s * 2 ** (restarts - 1)))


class WatchedWire:
    """A wire, and whether its upstream can still answer (see the module docstring).

    Attributes:
        lost: Set once nothing more can come from the upstream.
        reason: Why, once :attr:`lost` is set.
    """

    def __init__(self, wire: Wire) -> None:
        self._wire = wire
        self._process = wire.process if isinstance(wire, StdioWire) else None
        self.lost = trio.Event()
        self.reason = ""

    @property
    def session_id(self) -> str | None:
        """The upstream's HTTP session id, if it has one."""
        return self._wire.session_id

    def set_protocol(self, version: str) -> None:
        """The protocol version in use."""
        self._wire.set_protocol(version)

    async def send(self, message: Message) -> None:
        """Send one message; a failure marks the upstream lost."""
        try:
            await self._wire.send(message)
        except ConnectionLost as exc:
            self.mark_lost(str(exc))
            raise

    async def receive(self) -> Inbound:
        """The next message from the upstream; its end marks the upstream lost."""
        try:
            return await self._wire.receive()
        except ConnectionLost as exc:
            self.mark_lost(str(exc))
            raise

    async def aclose(self) -> None:
        """Close the connection."""
        await self._wire.aclose()

    def mark_lost(self, reason: str) -> None:
        """The upstream can no longer answer, for ``reason`` (the first reason is kept)."""
        if not self.lost.is_set():
            status = self._process.returncode if self._process is not None else None
            self.reason = reason if status is None else f"{reason} (exit status {status})"
            self.lost.set()


@asynccontextmanager
async def open_upstream_wire(
    upstream: Upstream, policy: UpstreamPolicy
) -> AsyncIterator[WatchedWire]:
    """One connection to ``upstream`` (see the module docstring); closed on the way out (the
    process's stdin closed and the process waited for, then killed; the HTTP session
    deleted).

    Raises:
        OSError: the command cannot be started.
    """
    if upstream.url is not None:
        async with open_http_wire(
            upstream.url, headers=upstream.headers, timeout=policy.start_timeout_s
        ) as http:
            yield WatchedWire(http)
        return
    async with open_stdio_wire(
        upstream.command,
        stderr=None,  # the upstream's own log lines go where the gateway's go
        close_timeout=policy.close_timeout_s,
        start_new_session=True,
    ) as stdio:
        yield WatchedWire(stdio)
