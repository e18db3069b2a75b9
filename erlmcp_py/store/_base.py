"""The store interface the actors use, whichever store is configured."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from erlmcp_py.core.outcomes import Tenant
from erlmcp_py.core.ratelimit import Decision, RateLimiterStats
from erlmcp_py.core.store_wire import (
    CallOp,
    StoreRecord,
    StoreTask,
    StoreTicket,
    TaskAnswer,
    TaskOp,
)

__all__ = ["NoteSink", "Store", "StoreHost", "TaskHost"]

NoteSink = Callable[[Mapping[str, Any]], None]
"""Takes one *note* (a JSON object) that the handler of a forwarded request sends its caller
before its answer (a 2026-07-28 call's progress and log messages): it never blocks and never
raises; a note that cannot be carried is dropped."""


class StoreHost(Protocol):
    """What a store calls back into: the runtime of this replica."""

    async def forwarded(
        self, op: CallOp, elicitation_id: str, tenant: Tenant, argument: Any
    ) -> Mapping[str, Any]:
        """Run a call another replica forwarded here; its status row.

        Raises:
            ErlmcpError: the runtime's error, carried back to the caller.
        """
        ...

    async def forwarded_request(
        self, request: Mapping[str, Any], note: NoteSink
    ) -> Mapping[str, Any]:
        """Answer a request another replica forwarded to a handler of this one (see
        :meth:`Store.forward_request`); its answer. What the handler passes to ``note`` goes
        to the caller, in order, before the answer.

        Raises:
            LookupError: no handler of this replica takes it.
        """
        ...

    def rejoined(self) -> None:
        """The store lost this replica's published state (it was found dead, or the server
        restarted empty): publish every record again."""


class TaskHost(Protocol):
    """What a store calls back into for tasks: the task registry of this replica."""

    async def task_forwarded(
        self, op: TaskOp, task_id: str, principal: str, argument: Any
    ) -> Mapping[str, Any]:
        """Run a ``tasks/update`` or ``tasks/cancel`` another replica forwarded here; the
        reply (JSON) to carry back. Never raises for the call's own sake."""
        ...

    def claim_room(self) -> int:
        """How many durable tasks of dead replicas this replica may take over now."""
        ...

    def tasks_claimed(self, task_ids: Sequence[str]) -> None:
        """The store made this replica the holder of these tasks (their holder is gone):
        run them again. Never blocks."""
        ...

    def tasks_rejoined(self) -> None:
        """The store lost this replica's registration (it was found dead, or the server
        restarted empty): another replica may hold some of its tasks now."""
        ...


class Store(Protocol):
    """Shared state: admission (rate buckets, pending caps), the records of every replica,
    calls forwarded to the replica holding an elicitation, the hosted page's tickets, and
    the records of tasks (the ``io.modelcontextprotocol/tasks`` extension).

    Every method that reaches a server runs under the store's deadline and raises
    :class:`~erlmcp_py.core.errors.StoreUnavailable` past it (or at once while the store is
    known to be down); :meth:`release` and :meth:`changed` hand their writes over, and the
    store keeps what it could not write until it is back.
    """

    replica: str
    """This replica's id (random per process)."""

    shared: bool
    """Whether other replicas share this store (what survives this process lives there)."""

    async def admit(self, client: str, now: float, *, charge: bool) -> Decision:
        """Admit one new elicitation of ``client`` or say which limit refuses, as
        :meth:`~erlmcp_py.core.ratelimit.RateLimiter.try_acquire` (``now``: the shell's
        clock, used by the in-memory store)."""
        ...

    async def release(self, counts: Mapping[str, int]) -> None:
        """Release pending slots, ``client → count``. Never raises."""
        ...

    async def reset_pending(self) -> None:
        """Forget this replica's pending counts (its elicitation actor restarted)."""
        ...

    def rate_stats(self) -> RateLimiterStats:
        """Admission counters of this replica."""
        ...

    def changed(self, elicitation_id: str, snapshot: Callable[[], StoreRecord]) -> None:
        """An elicitation of this replica changed: publish it for the other replicas
        (``snapshot`` is called when the store writes it; terminal ones are kept for the
        retention period). Never blocks, never raises."""
        ...

    async def find(self, elicitation_id: str, tenant: Tenant) -> StoreRecord | None:
        """Another replica's record, if ``tenant`` may see it (otherwise ``None``, exactly
        as for an unknown id)."""
        ...

    async def list_for(self, tenant: Tenant) -> list[StoreRecord]:
        """Every record of ``tenant``, of every replica."""
        ...

    async def forward(
        self, replica: str, op: CallOp, elicitation_id: str, tenant: Tenant, argument: Any
    ) -> Mapping[str, Any]:
        """Run a call on the replica that holds the elicitation; its status row.

        Raises:
            ErlmcpError: the holder's error; ``StoreUnavailable`` when it cannot be reached.
        """
        ...

    async def forward_request(
        self,
        replica: str,
        request: Mapping[str, Any],
        timeout_s: float,
        on_note: NoteSink | None = None,
    ) -> Mapping[str, Any]:
        """Send a request (any JSON object) to ``replica``, whose host answers it
        (:meth:`StoreHost.forwarded_request`), and wait at most ``timeout_s`` for its answer:
        what reaches the process that holds something only in its memory (a 2026-07-28 call
        held by a gateway replica). A caller that stops waiting (cancelled, or out of time)
        cancels the request's handler on ``replica`` too, as if its own client had gone.

        The notes the handler sends meanwhile reach ``on_note``, in order, each before the
        answer is returned. The holder publishes them from a queue of its own, so its handler
        never waits for them; a note it cannot publish (the store is down, nobody listens
        for it any more) is dropped with every later one, a note past the queue's bound
        (:data:`~erlmcp_py.store.NOTES_QUEUED`) too, and the holder logs how many
        (``forwarded_notes_dropped``) once per request.

        Raises:
            StoreUnavailable: no other replica (the embedded store), the replica is not
                listening (gone), it did not answer in time, or it has no handler for it.
        """
        ...

    async def put_ticket(self, ticket: StoreTicket, ttl_s: float) -> None:
        """Publish a new, open ticket for at most ``ttl_s`` seconds."""
        ...

    async def bind_ticket(self, token: str, elicitation_id: str) -> None:
        """Bind an open ticket to the elicitation asked with its URL."""
        ...

    async def get_ticket(self, token: str) -> StoreTicket | None:
        """The ticket of ``token`` in any state (a closed one without its question), or
        ``None`` when unknown, expired or forgotten."""
        ...

    async def claim_ticket(self, token: str) -> bool:
        """Atomically take a bound, open ticket for one answer (``open`` -> ``used``), on
        every replica at once; ``False`` when it is not open or not bound."""
        ...

    async def release_ticket(self, token: str) -> None:
        """Give a claimed ticket back (``used`` -> ``open``: the answer was refused)."""
        ...

    async def close_ticket(self, token: str) -> None:
        """The elicitation ended: drop the ticket's question and CSRF value, and keep only
        its ``closed`` state and elicitation id for a while (its page says "expired or
        used")."""
        ...

    async def put_task(
        self,
        task: StoreTask,
        ttl_s: float,
        *,
        create: bool = False,
        journal: Sequence[TaskAnswer] = (),
    ) -> bool:
        """Write a task's record (its creation, or a change), kept ``ttl_s`` seconds from now
        (the rest of the task's life); it reads back at once (:meth:`get_task`) on every
        replica. ``task.replica`` must be this replica: a write is *fenced*, taken only while
        this replica holds the task. A creation (``create``) may start its journal with
        ``journal``. A durable record (``task.durable``) of a running task counts among the
        tasks this replica runs, which another replica takes over if this one dies.

        Returns:
            Whether it was written: ``False`` when another replica holds the task now (it
            took it over), or, for a change, when the record is gone (past its life).
        """
        ...

    async def append_task_answers(self, task_id: str, answers: Sequence[TaskAnswer]) -> bool:
        """Add answers to a task's journal, in order, before they are applied: whether they
        were added (``False``: this replica does not hold the task, or it is gone)."""
        ...

    async def get_task(self, task_id: str, principal: str) -> StoreTask | None:
        """A task's record, if ``principal`` may see it (another principal's task, an unknown
        or an expired one: ``None`` alike); ``replica`` names its holder now."""
        ...

    async def load_task(self, task_id: str) -> tuple[StoreTask, list[TaskAnswer]] | None:
        """A task's record (of whichever principal) and its journal, oldest answer first;
        ``None`` when unknown or expired."""
        ...

    async def delete_task(self, task_id: str) -> None:
        """Forget a task's record and journal (its life ended, or it made room for another),
        unless another replica holds it now."""
        ...

    async def release_task(self, task_id: str) -> None:
        """Give back a task this replica took over and cannot run (no room): another replica
        takes it over instead."""
        ...

    async def forward_task(
        self, replica: str, op: TaskOp, task_id: str, principal: str, argument: Any
    ) -> Mapping[str, Any]:
        """Run a task call on the replica that holds the task; its :class:`TaskHost`'s reply.

        Raises:
            StoreUnavailable: the holder cannot be reached (it may be gone), or the store.
        """
        ...

    def serve_tasks(self, host: TaskHost | None) -> None:
        """Run the task calls other replicas forward here, and take over the durable tasks
        of dead replicas, through ``host`` (``None``: no longer)."""
        ...

    def stats(self) -> dict[str, Any]:
        """The store's counters for metrics: kind, availability, errors by operation."""
        ...
