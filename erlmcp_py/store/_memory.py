"""The embedded store: one process, nothing shared, no server.

Admission is the pure ``core.ratelimit.RateLimiter`` fed the caller's clock. There are no
other replicas: their records are none, and no call is ever forwarded.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import trio

from erlmcp_py.core.errors import ElicitationNotFound
from erlmcp_py.core.outcomes import Tenant
from erlmcp_py.core.policy import RatePolicy
from erlmcp_py.core.ratelimit import Decision, RateLimiter, RateLimiterStats
from erlmcp_py.core.shared import CallOp, SharedRecord

__all__ = ["MemoryStore"]


class MemoryStore:
    """The in-memory :class:`~erlmcp_py.store.Store` (``--store memory``, the default)."""

    def __init__(self, policy: RatePolicy, replica: str) -> None:
        self.replica = replica
        self._policy = policy
        self._limiter = RateLimiter(policy)

    async def admit(self, client: str, now: float, *, charge: bool) -> Decision:
        return self._limiter.try_acquire(client, now, charge=charge)

    async def release(self, counts: Mapping[str, int]) -> None:
        for client, count in counts.items():
            for _ in range(count):
                self._limiter.release(client)

    async def reset_pending(self) -> None:
        self._limiter = RateLimiter(self._policy)

    def rate_stats(self) -> RateLimiterStats:
        return self._limiter.stats()

    def changed(self, elicitation_id: str, snapshot: Callable[[], SharedRecord]) -> None:
        pass  # no other replica to tell

    async def find(self, elicitation_id: str, tenant: Tenant) -> SharedRecord | None:
        await trio.lowlevel.checkpoint()
        return None

    async def list_for(self, tenant: Tenant) -> list[SharedRecord]:
        await trio.lowlevel.checkpoint()
        return []

    async def forward(
        self, replica: str, op: CallOp, elicitation_id: str, tenant: Tenant, argument: Any
    ) -> Mapping[str, Any]:
        raise ElicitationNotFound(elicitation_id)  # no other replica holds anything

    def stats(self) -> dict[str, Any]:
        return {"kind": "memory", "available": True, "errors": {}}
