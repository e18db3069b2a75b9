"""A bounded pool of session-era upstream connections, leased to one call at a time.

A 2026-07-28 client has no session: each of its calls stands alone, and a session-era upstream
(the official SDK's ``MCPServer``, say) needs one to answer it. :class:`UpstreamPool` keeps
such upstream sessions (each an :class:`~erlmcp_py.gateway._link.UpstreamLink`, supervised as a
downstream session's is) and lends one to a call for its duration: :meth:`UpstreamPool.lease`.
While a call holds a connection, everything the upstream asks or says goes to that call's
:class:`~erlmcp_py.gateway._link.LinkEvents` (its questions are asked of that call's client,
through the call's peer), so a question always belongs to exactly one call.

The capabilities an upstream session declared at its ``initialize`` cannot change, so the
pool keeps sessions by the capabilities they declared (what the gateway carries of the
client's: :func:`~erlmcp_py.gateway._session.upstream_capabilities`) and lends a call only one
that declared exactly what its client has. Bounds: at most ``size`` sessions; a lease waits
for one to be given back, at most ``wait_s``, then fails with
:class:`~erlmcp_py.gateway._link.UpstreamGone`; a session nobody leased for ``idle_s`` is
closed (its process stopped), and a free place goes to a session of the capabilities asked.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import structlog
import trio

from erlmcp_py.client import CLIENT_INFO, ClientRequestError, ServerRequest
from erlmcp_py.core.versions import LATEST_SESSION_VERSION
from erlmcp_py.gateway._link import (
    Connection,
    LinkEvents,
    UpstreamGone,
    UpstreamLink,
    UpstreamSlots,
    start_failure,
)
from erlmcp_py.gateway._upstream import Upstream, UpstreamPolicy
from erlmcp_py.mcp.jsonrpc import INTERNAL_ERROR
from supervisors import StartError

__all__ = ["UpstreamPool"]

log = structlog.get_logger("erlmcp.gateway.pool")


class _Lessee:
    """A pooled link's events: whatever call holds it now, or nobody."""

    def __init__(self) -> None:
        self.events: LinkEvents | None = None

    def upstream_request(
        self, connection: Connection, request: ServerRequest
    ) -> Awaitable[dict[str, Any] | None] | Any:
        events = self.events
        if events is None:
            return _refuse(request)
        return events.upstream_request(connection, request)

    def upstream_notification(
        self, connection: Connection, method: str, params: Mapping[str, Any]
    ) -> None:
        if self.events is not None:
            self.events.upstream_notification(connection, method, params)

    async def upstream_connected(self, connection: Connection) -> None:
        if self.events is not None:
            await self.events.upstream_connected(connection)


async def _refuse(request: ServerRequest) -> dict[str, Any]:
    """An upstream that asks between calls asks nobody."""
    raise ClientRequestError(
        INTERNAL_ERROR,
        f"no call is using this upstream session: {request.method[:80]} has nobody to ask",
        {"reason": "no_call"},
    )


@dataclass(eq=False)
class _Pooled:
    link: UpstreamLink
    key: str
    lessee: _Lessee
    scope: trio.CancelScope
    leased: bool = False
    idle_since: float = field(default_factory=trio.current_time)


class UpstreamPool:
    """Upstream sessions lent to one call at a time (see the module docstring).

    Args:
        upstream: Where the upstream is.
        policy: How each upstream connection is run.
        slots: The server's upstream slots (a pooled session holds one, as a downstream
            session's does).
        size: Most sessions in the pool.
        idle_s: A session nobody leased this long is closed.
        wait_s: Longest wait for a session when all are lent.
    """

    def __init__(
        self,
        upstream: Upstream,
        policy: UpstreamPolicy,
        slots: UpstreamSlots,
        *,
        size: int = 8,
        idle_s: float = 60.0,
        wait_s: float = 30.0,
    ) -> None:
        if type(size) is not int or size < 1:
            raise ValueError("UpstreamPool size must be a whole number of at least 1")
        for name, value in (("idle_s", idle_s), ("wait_s", wait_s)):
            if not 0 < value < float("inf"):
                raise ValueError(f"UpstreamPool {name} must be a positive number of seconds")
        self.upstream = upstream
        self.policy = policy
        self.size = size
        self.idle_s = idle_s
        self.wait_s = wait_s
        self._slots = slots
        self._pooled: list[_Pooled] = []
        self._changed = trio.Event()
        self._nursery: trio.Nursery | None = None
        self._made = 0

    @property
    def sessions(self) -> int:
        """Sessions in the pool, lent or not."""
        return len(self._pooled)

    def _signal(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Host the pool's sessions and close the idle ones, until cancelled (every session is
        closed then)."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                task_status.started()
                while True:
                    await self._reap_idle()
        finally:
            self._nursery = None

    async def _reap_idle(self) -> None:
        """Close the sessions idle past ``idle_s``; wait for the next to be, or a change."""
        now = trio.current_time()
        for pooled in list(self._pooled):
            if not pooled.leased and now - pooled.idle_since >= self.idle_s:
                self._drop(pooled, "idle")
        idle = [p.idle_since for p in self._pooled if not p.leased]
        with trio.move_on_at(min(idle) + self.idle_s if idle else float("inf")):
            await self._changed.wait()

    def _drop(self, pooled: _Pooled, why: str) -> None:
        if pooled in self._pooled:
            self._pooled.remove(pooled)
            pooled.link.close()
            pooled.scope.cancel()
            log.info("pooled_upstream_closed", why=why, key=pooled.key[:200])
            self._signal()

    @asynccontextmanager
    async def lease(
        self, capabilities: Mapping[str, Any], events: LinkEvents
    ) -> AsyncIterator[UpstreamLink]:
        """Lend a session that declared ``capabilities`` for the block; what the upstream
        asks or says meanwhile goes to ``events``.

        Raises:
            UpstreamGone: none could be had within ``wait_s``, or it could not be started
                (the message says why).
            RuntimeError: the pool is not running.
        """
        pooled = await self._take(json.dumps(dict(capabilities), sort_keys=True), capabilities)
        pooled.lessee.events = events
        try:
            yield pooled.link
        finally:
            pooled.lessee.events = None
            pooled.leased = False
            pooled.idle_since = trio.current_time()
            if pooled.link.gone:
                self._drop(pooled, "given up")
            self._signal()

    async def _take(self, key: str, capabilities: Mapping[str, Any]) -> _Pooled:
        room = False
        with trio.move_on_after(self.wait_s):  # the wait for a free session, not its start
            while True:
                for pooled in self._pooled:
                    if pooled.key == key and not pooled.leased and not pooled.link.gone:
                        pooled.leased = True
                        return pooled
                if len(self._pooled) >= self.size:
                    spare = [p for p in self._pooled if not p.leased]
                    if spare:  # make room: the longest idle session of other capabilities
                        self._drop(min(spare, key=lambda p: p.idle_since), "room")
                if len(self._pooled) < self.size:
                    room = True
                    break
                await self._changed.wait()
        if room:  # its place is taken before any checkpoint; the start has its own timeout
            return await self._start(key, capabilities)
        raise UpstreamGone(
            f"all {self.size} pooled upstream sessions are busy; none was free within "
            f"{self.wait_s:g} s"
        )

    async def _start(self, key: str, capabilities: Mapping[str, Any]) -> _Pooled:
        nursery = self._nursery
        if nursery is None:
            raise RuntimeError("the upstream pool is not running")
        self._made += 1
        lessee = _Lessee()
        link = UpstreamLink(
            self.upstream,
            self.policy,
            lessee,
            self._slots,
            name=f"pool-{self._made}",
            protocol_version=LATEST_SESSION_VERSION,
            capabilities=capabilities,
            client_info=CLIENT_INFO,
        )
        pooled = _Pooled(link, key, lessee, trio.CancelScope(), leased=True)
        self._pooled.append(pooled)  # its place is held while it starts
        try:
            await nursery.start(self._host, pooled)
        except (StartError, UpstreamGone) as exc:
            self._drop(pooled, "not started")
            why = start_failure(exc)
            raise UpstreamGone(f"the pooled upstream could not be started: {why}") from None
        except BaseException:
            self._drop(pooled, "not started")
            raise
        return pooled

    async def _host(self, pooled: _Pooled, *, task_status: trio.TaskStatus[Any]) -> None:
        """Run one pooled session's link until it is closed or gives up."""
        try:
            with pooled.scope:
                await pooled.link.run(task_status=task_status)
        finally:
            self._drop(pooled, "ended")
