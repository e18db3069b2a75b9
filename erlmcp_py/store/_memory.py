"""The embedded store: one process, nothing shared, no server.

Admission is the pure ``core.ratelimit.RateLimiter`` fed the caller's clock. There are no
other replicas: their records are none, and no call is ever forwarded. The hosted page's
tickets are kept in a dict, with a bounded memory of the closed ones. Tasks' records and
journals are kept in a dict until their TTL (or their deletion): for the life of the process
at most, since nothing of this store outlives it. With no other replica, no task is ever
taken over.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import trio

from erlmcp_py.core.errors import ElicitationNotFound, StoreUnavailable
from erlmcp_py.core.outcomes import Tenant
from erlmcp_py.core.policy import RatePolicy
from erlmcp_py.core.ratelimit import Decision, RateLimiter, RateLimiterStats
from erlmcp_py.core.store_wire import (
    CallOp,
    StoreRecord,
    StoreTask,
    StoreTicket,
    TaskAnswer,
    TaskOp,
    closed_ticket,
    task_visible_to,
)
from erlmcp_py.store._base import NoteSink, TaskHost

__all__ = ["MemoryStore"]


class MemoryStore:
    """The in-memory :class:`~erlmcp_py.store.Store` (``--store memory``, the default)."""

    shared = False

    def __init__(self, policy: RatePolicy, replica: str, *, remembered: int = 10_000) -> None:
        self.replica = replica
        self._policy = policy
        self._limiter = RateLimiter(policy)
        self._tickets: dict[str, StoreTicket] = {}
        self._closed: deque[str] = deque()
        self._remembered = remembered  # closed tickets kept to say "expired or used"
        # per task: its record, its expiry (trio clock) and its journal
        self._tasks: dict[str, tuple[StoreTask, float, list[TaskAnswer]]] = {}

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

    def changed(self, elicitation_id: str, snapshot: Callable[[], StoreRecord]) -> None:
        pass  # no other replica to tell

    async def find(self, elicitation_id: str, tenant: Tenant) -> StoreRecord | None:
        await trio.lowlevel.checkpoint()
        return None

    async def list_for(self, tenant: Tenant) -> list[StoreRecord]:
        await trio.lowlevel.checkpoint()
        return []

    async def forward(
        self, replica: str, op: CallOp, elicitation_id: str, tenant: Tenant, argument: Any
    ) -> Mapping[str, Any]:
        raise ElicitationNotFound(elicitation_id)  # no other replica holds anything

    async def forward_request(
        self,
        replica: str,
        request: Mapping[str, Any],
        timeout_s: float,
        on_note: NoteSink | None = None,
    ) -> Mapping[str, Any]:
        await trio.lowlevel.checkpoint()
        raise StoreUnavailable("forward: no other replica shares the embedded store")

    async def put_ticket(self, ticket: StoreTicket, ttl_s: float) -> None:
        self._tickets[ticket.token] = ticket  # ends when its elicitation ends (close_ticket)
        await trio.lowlevel.checkpoint()

    async def bind_ticket(self, token: str, elicitation_id: str) -> None:
        self._move(token, "open", {"elicitation_id": elicitation_id})
        await trio.lowlevel.checkpoint()

    async def get_ticket(self, token: str) -> StoreTicket | None:
        await trio.lowlevel.checkpoint()
        return self._tickets.get(token)

    async def claim_ticket(self, token: str) -> bool:
        await trio.lowlevel.checkpoint()
        ticket = self._tickets.get(token)
        if ticket is None or ticket.elicitation_id is None:
            return False
        return self._move(token, "open", {"state": "used"})

    async def release_ticket(self, token: str) -> None:
        self._move(token, "used", {"state": "open"})
        await trio.lowlevel.checkpoint()

    async def close_ticket(self, token: str) -> None:
        await trio.lowlevel.checkpoint()
        ticket = self._tickets.get(token)
        if ticket is None or ticket.state == "closed":
            return
        self._tickets[token] = closed_ticket(token, ticket.elicitation_id)
        self._closed.append(token)
        while len(self._closed) > self._remembered:
            self._tickets.pop(self._closed.popleft(), None)

    def _move(self, token: str, state: str, changes: Mapping[str, Any]) -> bool:
        """Change a ticket that is in ``state``; whether it was."""
        ticket = self._tickets.get(token)
        if ticket is None or ticket.state != state:
            return False
        self._tickets[token] = dataclasses.replace(ticket, **changes)
        return True

    async def put_task(
        self,
        task: StoreTask,
        ttl_s: float,
        *,
        create: bool = False,
        journal: Sequence[TaskAnswer] = (),
    ) -> bool:
        await trio.lowlevel.checkpoint()
        found = self._live_task(task.task_id)
        if found is None and not create:
            return False  # past its life
        answers = [] if found is None else found[2]
        answers.extend(journal)
        self._tasks[task.task_id] = (task, trio.current_time() + ttl_s, answers)
        return True

    async def append_task_answers(self, task_id: str, answers: Sequence[TaskAnswer]) -> bool:
        await trio.lowlevel.checkpoint()
        found = self._live_task(task_id)
        if found is None:
            return False
        found[2].extend(answers)
        return True

    async def get_task(self, task_id: str, principal: str) -> StoreTask | None:
        await trio.lowlevel.checkpoint()
        found = self._live_task(task_id)
        return None if found is None else task_visible_to(found[0], principal)

    async def load_task(self, task_id: str) -> tuple[StoreTask, list[TaskAnswer]] | None:
        await trio.lowlevel.checkpoint()
        found = self._live_task(task_id)
        return None if found is None else (found[0], list(found[2]))

    def _live_task(self, task_id: str) -> tuple[StoreTask, float, list[TaskAnswer]] | None:
        found = self._tasks.get(task_id)
        if found is not None and found[1] <= trio.current_time():
            del self._tasks[task_id]
            return None
        return found

    async def delete_task(self, task_id: str) -> None:
        self._tasks.pop(task_id, None)
        await trio.lowlevel.checkpoint()

    async def release_task(self, task_id: str) -> None:
        await trio.lowlevel.checkpoint()  # nothing is ever taken over here

    async def forward_task(
        self, replica: str, op: TaskOp, task_id: str, principal: str, argument: Any
    ) -> Mapping[str, Any]:
        raise StoreUnavailable("forward_task: no other replica")

    def serve_tasks(self, host: TaskHost | None) -> None:
        pass  # no other replica forwards anything, and none dies

    def stats(self) -> dict[str, Any]:
        return {"kind": "memory", "available": True, "errors": {}}
