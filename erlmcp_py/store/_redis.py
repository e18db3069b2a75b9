"""The shared store on Redis or Valkey (``--store redis://HOST:PORT/DB``), with valkey-glide.

Theory of operation
-------------------

Two clients: one for commands (connected lazily, so a replica starts while the server is
down) and one subscribed to this replica's channel. Every command runs under the URL's
deadline (``timeout``, 1 s by default). A failed command marks the store *down*: from then on
every call fails at once with :class:`~erlmcp_py.core.errors.StoreUnavailable` instead of
waiting, until the heartbeat gets through again (the store is *up*: logged, counted).

The heartbeat (every ``heartbeat`` s) registers this replica in the live set for
``heartbeat_ttl`` s and, in the same script, ends every replica whose registration
expired: their live records are marked dead (read back as ``Failed(runtime_restarted)``)
and their pending counts dropped. When the heartbeat finds this replica was not registered
(it was found dead during an outage, or the server restarted empty), it asks the host to
publish every record again.

Admission is one script (``ADMIT``): the client's pending count and the total, summed over
the live replicas, then the token bucket. Releases are written in the background (the rate
limiter never waits for them); the heartbeat writes those that failed while the store was
down. A changed record is written a few milliseconds later, in a batch (``PUBLISH``), and
read by ``HMGET``/``LIST``; one that cannot be written waits for the next try. A call
forwarded to the holder replica is a message on its channel; the holder runs it through its
runtime and answers on the caller's channel. A forwarded request whose caller stops waiting
(cancelled, or out of time) is followed by a cancel naming it, which cancels its handler on
the holder. The notes a forwarded request's handler sends its caller (a 2026-07-28 call's
progress and log messages) go on the caller's channel too, each naming the request, from a
bounded queue that the answer follows (:mod:`~erlmcp_py.store._notes`).

A hosted page's ticket is a hash that expires with the longest life its elicitation can
have; every step of its life (open, bind, claim, release, close) is one script
(``TICKET``), so a claim is atomic across replicas. A closed ticket keeps only its state and
its elicitation's id, for the retention period. A replica remembers its open tickets and
writes them again when the heartbeat finds the server lost its state.

A task's record is a hash (its JSON and its holder) expiring with the task, and its journal a
list beside it: the holder writes the record whole at every change and appends answers to
the journal, each write a script that is taken only while the writer is the holder
(``TASK_PUT``, ``TASK_ANSWER``: *fenced*); any replica reads them. A durable task that runs
is in its holder's task set; the heartbeat script makes a dead replica's set orphans and
hands at most a few orphans to each live replica that beats with room for them, making it
their holder in the same step. A ``tasks/update`` or ``tasks/cancel`` for a task another
replica holds goes to it on its channel, as elicitation calls do.
"""

from __future__ import annotations

import dataclasses
import json
import secrets
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Any, TypeVar

import structlog
import trio
from glide import (
    GlideClient,
    GlideClientConfiguration,
    GlideError,
    Logger as GlideLogger,
    LogLevel as GlideLogLevel,
    NodeAddress,
    Script,
    ServerCredentials,
)

from erlmcp_py.core.errors import ErlmcpError, StoreUnavailable
from erlmcp_py.core.outcomes import Tenant
from erlmcp_py.core.policy import Policy
from erlmcp_py.core.ratelimit import Admitted, Decision, Limit, RateLimiterStats, Refused
from erlmcp_py.core.store_wire import (
    BucketParams,
    CallOp,
    Keys,
    StoreRecord,
    StoreTask,
    StoreTicket,
    StoreUrl,
    TaskAnswer,
    TaskOp,
    decode_call,
    decode_record,
    decode_task,
    decode_task_answer,
    decode_task_call,
    decode_ticket,
    encode_call,
    encode_record,
    encode_task,
    encode_task_answer,
    encode_task_call,
    encode_ticket,
    error_from_wire,
    error_to_wire,
    retry_after_s,
    task_visible_to,
    tenant_digest,
    visible_to,
)
from erlmcp_py.store._base import NoteSink, StoreHost, TaskHost
from erlmcp_py.store._notes import NoteOutbox
from erlmcp_py.store._scripts import (
    ADMIT,
    BEAT,
    LIST,
    PUBLISH,
    RELEASE,
    TASK_ANSWER,
    TASK_DELETE,
    TASK_LOAD,
    TASK_PUT,
    TASK_RELEASE,
    TICKET,
)

__all__ = ["RedisStore", "open_redis_store"]

log = structlog.get_logger("erlmcp_py.store")

T = TypeVar("T")

_CLOSE_S = 1.0  # longest wait for a client to close
_PUBLISH_DELAY_S = 0.005  # a fast elicitation's changes (created, sent, ended): one write
_PUBLISH_BATCH = 512  # records per write
_CLAIM_PER_BEAT = 64  # dead replicas' tasks one heartbeat takes over, at most


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes | bytearray) else str(value)


class RedisStore:
    """The Redis/Valkey :class:`~erlmcp_py.store.Store`. Open it with :func:`open_redis_store`."""

    shared = True

    def __init__(
        self,
        url: StoreUrl,
        policy: Policy,
        replica: str,
        host: StoreHost,
        *,
        call_timeout_s: float = 5.0,
    ) -> None:
        self.replica = replica
        self.url = url
        self.keys = Keys(url.prefix)
        self._host = host
        self._bucket = BucketParams.from_policy(policy.rate)
        longest = max(
            max(lifecycle.form_deadline_s, lifecycle.url_deadline_s)
            + lifecycle.max_extensions * lifecycle.extension_s
            for lifecycle in (policy.lifecycle, policy.task_lifecycle)
        )
        self._live_ttl_ms = round((longest + 3600) * 1000)
        self._keep_ms = round(policy.retention.max_age_s * 1000)
        self._keep_n = policy.retention.max_records
        self._forward_timeout_s = url.timeout_s + call_timeout_s
        scripts = {"admit": ADMIT, "release": RELEASE, "publish": PUBLISH, "list": LIST,
                   "beat": BEAT, "ticket": TICKET, "task_put": TASK_PUT,
                   "task_answer": TASK_ANSWER, "task_load": TASK_LOAD,
                   "task_delete": TASK_DELETE, "task_release": TASK_RELEASE}  # fmt: skip
        self._scripts: dict[str, Script] = {
            name: Script(code)  # type: ignore[no-untyped-call]
            for name, code in scripts.items()
        }
        self._client: GlideClient | None = None
        self.available = True
        self._errors: Counter[str] = Counter()
        self._recoveries = 0
        self._reaped = 0
        self._forwarded = 0
        # the forwarded requests running here, by (sender, cid): a cancel names one
        self._serving: dict[tuple[str, str], trio.CancelScope] = {}
        self._taken_over = 0
        self._task_host: TaskHost | None = None
        # a task set outlives the longest task it may hold: its members are running tasks
        self._task_set_ttl_ms = round((policy.tasks.ttl_s + 3600) * 1000)
        self._owed: Counter[str] = Counter()  # releases not written yet
        self._reset_owed = False
        self._owed_due = trio.Event()
        self._outbox: dict[str, Callable[[], StoreRecord]] = {}  # records to publish
        self._outbox_due = trio.Event()
        self._pending: Counter[str] = Counter()  # this replica's admitted, not released
        self._admitted = 0
        self._refused: Counter[str] = Counter()
        self._replies: dict[str, trio.MemorySendChannel[Mapping[str, Any]]] = {}
        self._notes: dict[str, NoteSink] = {}  # the requests forwarded from here, by cid
        self._tickets: dict[str, tuple[StoreTicket, float]] = {}  # ours: ticket, expiry
        self._nursery: trio.Nursery | None = None

    # -- plumbing -----------------------------------------------------------------------------

    def _config(self, *, subscribe: bool = False) -> GlideClientConfiguration:
        subscriptions = None
        if subscribe:
            modes = GlideClientConfiguration.PubSubChannelModes
            subscriptions = GlideClientConfiguration.PubSubSubscriptions(
                {modes.Exact: {self.keys.channel(self.replica)}}, None, None
            )
        return GlideClientConfiguration(
            [NodeAddress(self.url.host, self.url.port)],
            database_id=self.url.db,
            credentials=None
            if self.url.password is None
            else ServerCredentials(self.url.password, self.url.username),
            request_timeout=max(1, round(self.url.timeout_s * 1000)),
            client_name=f"erlmcp-{self.replica}",
            pubsub_subscriptions=subscriptions,
            lazy_connect=not subscribe,
        )

    async def _run(self, op: str, call: Callable[[GlideClient], Awaitable[T]]) -> T:
        """Run one command under the deadline; a failure marks the store down."""
        if not self.available or self._client is None:
            self._errors[op] += 1
            raise StoreUnavailable(op)
        return await self._attempt(op, call, self._client)

    async def _attempt(
        self, op: str, call: Callable[[GlideClient], Awaitable[T]], client: GlideClient
    ) -> T:
        try:
            with trio.fail_after(self.url.timeout_s):
                return await call(client)
        except (trio.TooSlowError, GlideError) as exc:
            self._errors[op] += 1
            if self.available:
                self.available = False
                log.warning("store_down", op=op, store=str(self.url), error=type(exc).__name__)
            raise StoreUnavailable(op) from None

    def _script(
        self, name: str, keys: list[str], args: list[str]
    ) -> Callable[[GlideClient], Awaitable[Any]]:
        script = self._scripts[name]

        async def call(client: GlideClient) -> Any:
            return await client.invoke_script(script, keys=list(keys), args=list(args))

        return call

    # -- admission ----------------------------------------------------------------------------

    async def admit(self, client: str, now: float, *, charge: bool) -> Decision:
        keys = [self.keys.bucket(client), self.keys.replicas]
        args = [client, self.replica, "1" if charge else "0", *self._bucket.args(),
                self.keys.pending_prefix]  # fmt: skip
        result = await self._run("admit", self._script("admit", keys, args))
        verdict = _text(result[0])
        if verdict == "ok":
            self._pending[client] += 1
            if charge:
                self._admitted += 1
            return Admitted(int(result[1]), int(result[2]) / self._bucket.window_us)
        self._refused[verdict] += 1
        if verdict == "rate":
            return Refused("rate", retry_after=retry_after_s(int(result[1])))
        limit: Limit = "client_pending" if verdict == "client_pending" else "global_pending"
        return Refused(limit, cap=int(result[1]))

    async def release(self, counts: Mapping[str, int]) -> None:
        for client, count in counts.items():
            left = self._pending[client] - count
            if left > 0:
                self._pending[client] = left
            else:
                self._pending.pop(client, None)
        self._owed.update(counts)
        self._owed_due.set()  # written by _flush_owed: the caller does not wait for it
        await trio.lowlevel.checkpoint()

    async def _flush_owed(self) -> None:
        while True:
            await self._owed_due.wait()
            self._owed_due = trio.Event()
            with suppress(StoreUnavailable):  # else written by the heartbeat once it is back
                await self._write_owed()

    async def _write_owed(self) -> None:
        """Write the releases (and a reset) not written yet; on failure they stay owed."""
        key = self.keys.pending_prefix + self.replica
        if self._reset_owed:
            await self._run("reset_pending", lambda c: c.delete([key]))
            self._reset_owed = False
        if not self._owed:
            return
        owed, self._owed = self._owed, Counter()
        args = [part for client, n in owed.items() for part in (client, str(n))]
        try:
            await self._run("release", self._script("release", [key], args))
        except StoreUnavailable:
            self._owed.update(owed)

    async def reset_pending(self) -> None:
        self._pending.clear()
        self._owed.clear()
        self._reset_owed = True
        with suppress(StoreUnavailable):  # else written by the heartbeat once it is back
            await self._write_owed()

    def rate_stats(self) -> RateLimiterStats:
        return RateLimiterStats(
            buckets=0,
            clients_pending=len(self._pending),
            pending_total=sum(self._pending.values()),
            admitted=self._admitted,
            refused_rate=self._refused["rate"],
            refused_client_pending=self._refused["client_pending"],
            refused_global_pending=self._refused["global_pending"],
            pruned=0,
        )

    # -- records ------------------------------------------------------------------------------

    def changed(self, elicitation_id: str, snapshot: Callable[[], StoreRecord]) -> None:
        self._outbox[elicitation_id] = snapshot
        self._outbox_due.set()

    async def _flush_outbox(self) -> None:
        """Publish the changed records in batches, a moment after the first change; what
        cannot be written stays for the next try (a newer change of it wins)."""
        while True:
            await self._outbox_due.wait()
            await trio.sleep(_PUBLISH_DELAY_S)
            self._outbox_due = trio.Event()
            try:
                await self._publish_some()
            except StoreUnavailable:
                await trio.sleep(self.url.heartbeat_s)
            if self._outbox:
                self._outbox_due.set()

    async def _publish_some(self) -> None:
        batch = dict(list(self._outbox.items())[:_PUBLISH_BATCH])
        for elicitation_id in batch:
            del self._outbox[elicitation_id]
        try:
            await self._publish([snapshot() for snapshot in batch.values()])
        except StoreUnavailable:
            for elicitation_id, snapshot in batch.items():
                self._outbox.setdefault(elicitation_id, snapshot)
            raise

    async def _publish(self, records: Sequence[StoreRecord]) -> None:
        args = [self.replica, self.keys.live_prefix, self.keys.record_prefix,
                self.keys.index_prefix, str(self._live_ttl_ms), str(self._keep_ms),
                str(self._keep_n)]  # fmt: skip
        for record in records:
            args += [
                str(record.row["id"]),
                tenant_digest(record.tenant),
                encode_record(record.row, record.tenant, record.replica),
                "1" if record.terminal else "0",
            ]
        await self._run("publish", self._script("publish", [], args))

    async def find(self, elicitation_id: str, tenant: Tenant) -> StoreRecord | None:
        key = self.keys.record_prefix + elicitation_id
        got = await self._run("find", lambda c: c.hmget(key, ["j", "w", "dead"]))
        if got[0] is None:
            return None
        record = decode_record(
            _text(got[0]), int(_text(got[1])), None if got[2] is None else int(_text(got[2]))
        )
        return visible_to(record, tenant)

    async def list_for(self, tenant: Tenant) -> list[StoreRecord]:
        index = self.keys.index_prefix + tenant_digest(tenant)
        flat = await self._run("list", self._script("list", [index], [self.keys.record_prefix]))
        records = []
        for i in range(0, len(flat), 4):
            dead = _text(flat[i + 3])
            record = decode_record(
                _text(flat[i + 1]), int(_text(flat[i + 2])), int(dead) if dead else None
            )
            if visible_to(record, tenant) is not None:
                records.append(record)
        return records

    # -- hosted page tickets ------------------------------------------------------------------

    async def _ticket(self, token: str, step: str, *args: str) -> bool:
        call = self._script("ticket", [self.keys.ticket(token)], [step, *args])
        return int(await self._run(f"ticket_{step}", call)) == 1

    async def put_ticket(self, ticket: StoreTicket, ttl_s: float) -> None:
        await self._write_ticket(ticket, ttl_s)
        self._tickets[ticket.token] = (ticket, trio.current_time() + ttl_s)

    async def _write_ticket(self, ticket: StoreTicket, ttl_s: float) -> None:
        ttl_ms = str(max(1, round(ttl_s * 1000)))
        await self._ticket(ticket.token, "open", encode_ticket(ticket), ttl_ms)
        if ticket.elicitation_id is not None:
            await self._ticket(ticket.token, "bind", ticket.elicitation_id)

    async def bind_ticket(self, token: str, elicitation_id: str) -> None:
        mine = self._tickets.get(token)
        if mine is not None:
            bound = dataclasses.replace(mine[0], elicitation_id=elicitation_id)
            self._tickets[token] = (bound, mine[1])
        await self._ticket(token, "bind", elicitation_id)

    async def get_ticket(self, token: str) -> StoreTicket | None:
        key = self.keys.ticket(token)
        got = await self._run("ticket_get", lambda c: c.hmget(key, ["j", "e", "s"]))
        if got[2] is None:
            return None
        text = None if got[0] is None else _text(got[0])
        bound = None if got[1] is None else _text(got[1])
        return decode_ticket(token, text, bound, _text(got[2]))

    async def claim_ticket(self, token: str) -> bool:
        return await self._ticket(token, "claim")

    async def release_ticket(self, token: str) -> None:
        await self._ticket(token, "release")

    async def close_ticket(self, token: str) -> None:
        self._tickets.pop(token, None)
        await self._ticket(token, "close", str(max(1000, self._keep_ms)))

    async def _rewrite_tickets(self) -> None:
        """Write this replica's open tickets again (the server lost them)."""
        now = trio.current_time()
        for token, (ticket, expiry) in list(self._tickets.items()):
            if expiry <= now:
                del self._tickets[token]
            elif token in self._tickets:
                await self._write_ticket(ticket, expiry - now)

    # -- tasks --------------------------------------------------------------------------------

    async def put_task(
        self,
        task: StoreTask,
        ttl_s: float,
        *,
        create: bool = False,
        journal: Sequence[TaskAnswer] = (),
    ) -> bool:
        task_id = task.task_id
        keys = [self.keys.task(task_id), self.keys.task_journal(task_id),
                self.keys.task_set_prefix + self.replica, self.keys.orphans]  # fmt: skip
        running = task.durable and not task.terminal
        args = [self.replica, task_id, encode_task(task), str(max(1, round(ttl_s * 1000))),
                "1" if create else "0", "1" if running else "0", str(self._task_set_ttl_ms),
                *(encode_task_answer(answer) for answer in journal)]  # fmt: skip
        return int(await self._run("task_put", self._script("task_put", keys, args))) == 1

    async def append_task_answers(self, task_id: str, answers: Sequence[TaskAnswer]) -> bool:
        if not answers:
            return True
        keys = [self.keys.task(task_id), self.keys.task_journal(task_id)]
        args = [self.replica, *(encode_task_answer(answer) for answer in answers)]
        return int(await self._run("task_answer", self._script("task_answer", keys, args))) == 1

    async def get_task(self, task_id: str, principal: str) -> StoreTask | None:
        key = self.keys.task(task_id)
        got = await self._run("task_get", lambda c: c.hmget(key, ["j", "h"]))
        if got[0] is None:
            return None
        try:
            task = decode_task(_text(got[0]), None if got[1] is None else _text(got[1]))
        except (ValueError, TypeError, KeyError):
            log.warning("task_record_unreadable", task=task_id[:8])
            return None
        return task_visible_to(task, principal)

    async def load_task(self, task_id: str) -> tuple[StoreTask, list[TaskAnswer]] | None:
        keys = [self.keys.task(task_id), self.keys.task_journal(task_id)]
        got = await self._run("task_load", self._script("task_load", keys, []))
        if not got:
            return None
        try:
            task = decode_task(_text(got[0]), _text(got[1]) or None)
            return task, [decode_task_answer(_text(answer)) for answer in got[2:]]
        except (ValueError, TypeError, KeyError):
            log.warning("task_record_unreadable", task=task_id[:8])
            return None

    async def delete_task(self, task_id: str) -> None:
        keys = [self.keys.task(task_id), self.keys.task_journal(task_id),
                self.keys.task_set_prefix + self.replica]  # fmt: skip
        await self._run("task_delete", self._script("task_delete", keys, [self.replica, task_id]))

    async def release_task(self, task_id: str) -> None:
        keys = [self.keys.task(task_id), self.keys.task_set_prefix + self.replica,
                self.keys.orphans]  # fmt: skip
        args = [self.replica, task_id, str(self._task_set_ttl_ms)]
        await self._run("task_release", self._script("task_release", keys, args))

    def serve_tasks(self, host: TaskHost | None) -> None:
        self._task_host = host

    async def forward_task(
        self, replica: str, op: TaskOp, task_id: str, principal: str, argument: Any
    ) -> Mapping[str, Any]:
        reply = await self._send(
            replica, {"kind": "task", "call": encode_task_call(op, task_id, principal, argument)}
        )
        if "error" in reply:
            raise error_from_wire(reply["error"])
        row: Mapping[str, Any] = reply["row"]
        return row

    # -- forwarded calls ----------------------------------------------------------------------

    async def forward(
        self, replica: str, op: CallOp, elicitation_id: str, tenant: Tenant, argument: Any
    ) -> Mapping[str, Any]:
        reply = await self._send(
            replica, {"kind": "call", "call": encode_call(op, elicitation_id, tenant, argument)}
        )
        if "error" in reply:
            raise error_from_wire(reply["error"])
        row: Mapping[str, Any] = reply["row"]
        return row

    async def _send(self, replica: str, message: Mapping[str, Any]) -> Mapping[str, Any]:
        """Send a call to ``replica``'s channel and wait for its reply.

        Raises:
            StoreUnavailable: nobody listens on its channel, no reply came in time, or the
                store is down.
        """
        cid = secrets.token_hex(8)
        text = json.dumps({**message, "cid": cid, "from": self.replica})
        send, receive = trio.open_memory_channel[Mapping[str, Any]](1)
        self._replies[cid] = send
        try:
            channel = self.keys.channel(replica)
            receivers = await self._run("forward", lambda c: c.publish(text, channel))
            if not receivers:
                raise StoreUnavailable("forward: the replica holding it is not reachable")
            with trio.move_on_after(self._forward_timeout_s):
                reply = await receive.receive()
                self._forwarded += 1
                return reply
            self._errors["forward"] += 1
            raise StoreUnavailable("forward: no answer from the replica holding it")
        finally:
            del self._replies[cid]

    async def forward_request(
        self,
        replica: str,
        request: Mapping[str, Any],
        timeout_s: float,
        on_note: NoteSink | None = None,
    ) -> Mapping[str, Any]:
        cid = secrets.token_hex(8)
        message = json.dumps(
            {
                "kind": "request",
                "cid": cid,
                "from": self.replica,
                "request": dict(request),
                "notes": on_note is not None,
            }
        )
        send, receive = trio.open_memory_channel[Mapping[str, Any]](1)
        self._replies[cid] = send
        if on_note is not None:
            self._notes[cid] = on_note
        try:
            channel = self.keys.channel(replica)
            receivers = await self._run("forward", lambda c: c.publish(message, channel))
            if not receivers:
                raise StoreUnavailable("forward: the replica holding it is not reachable")
            answered = False
            try:
                with trio.move_on_after(timeout_s):
                    reply = await receive.receive()
                    answered = True
                    self._forwarded += 1
                    answer = reply.get("answer")
                    if not isinstance(answer, Mapping):
                        raise StoreUnavailable(
                            "forward: the replica holding it has no such handler"
                        )
                    return answer
            finally:
                if not answered:  # cancelled or out of time: the holder stops too
                    await self._cancel_request(channel, cid)
            self._errors["forward"] += 1
            raise StoreUnavailable("forward: no answer from the replica holding it")
        finally:
            del self._replies[cid]
            self._notes.pop(cid, None)

    async def _cancel_request(self, channel: str, cid: str) -> None:
        """Tell the replica on ``channel`` that nobody waits for request ``cid`` any more:
        its handler is cancelled there, as if its own client had gone (shielded, since the
        caller is often being cancelled; the store's deadline bounds it)."""
        text = json.dumps({"kind": "cancel", "cid": cid, "from": self.replica})
        with trio.CancelScope(shield=True), suppress(StoreUnavailable):
            await self._run("forward_cancel", lambda c: c.publish(text, channel))

    async def _serve_request(self, message: Mapping[str, Any], scope: trio.CancelScope) -> None:
        """Answer a request forwarded here; the notes its handler sends go first, from their
        outbox, on the caller's channel (see :mod:`~erlmcp_py.store._notes`)."""
        key = (str(message.get("from")), str(message.get("cid")))
        reply: dict[str, Any] = {"kind": "reply", "cid": message.get("cid")}
        request = message.get("request")
        channel = self.keys.channel(str(message.get("from")))

        async def publish(text: str) -> int:
            return await self._run("note", lambda c: c.publish(text, channel))

        outbox = NoteOutbox(publish, str(message.get("cid")))
        note = outbox.put if message.get("notes") is True else _no_note
        try:
            with scope:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(outbox.run)
                    try:
                        reply["answer"] = dict(
                            await self._host.forwarded_request(
                                request if isinstance(request, Mapping) else {}, note
                            )
                        )
                    except LookupError as exc:
                        log.info("store_forwarded_request_refused", why=str(exc)[:200])
                    except Exception as exc:
                        log.warning("store_forwarded_request_failed", error=type(exc).__name__)
                    finally:
                        outbox.close()  # its notes go out, then the answer
        finally:
            self._serving.pop(key, None)
            outbox.report()
        if scope.cancelled_caught:  # its caller stopped waiting: nobody reads a reply
            log.info("store_forwarded_request_cancelled")
            return
        text = json.dumps(reply)
        with suppress(StoreUnavailable):  # else the caller's deadline answers it
            await self._run("reply", lambda c: c.publish(text, channel))

    def _on_message(self, data: bytes | str) -> None:
        try:
            message = json.loads(data)
            kind = message["kind"]
        except (ValueError, KeyError, TypeError):
            log.warning("store_message_ignored")
            return
        if kind == "reply":
            send = self._replies.get(message.get("cid"))
            if send is not None:
                with suppress(trio.WouldBlock):  # a duplicate reply
                    send.send_nowait(message)
        elif kind == "note":  # before its request's reply: the holder published it first
            on_note = self._notes.get(message.get("cid"))
            note = message.get("note")
            if on_note is not None and isinstance(note, Mapping):
                on_note(note)
        elif kind in ("call", "task") and self._nursery is not None:
            self._nursery.start_soon(self._serve_call, message)
        elif kind == "request" and self._nursery is not None:
            # registered before it starts: a cancel may follow it at once
            scope = trio.CancelScope()
            self._serving[(str(message.get("from")), str(message.get("cid")))] = scope
            self._nursery.start_soon(self._serve_request, message, scope)
        elif kind == "cancel":
            serving = self._serving.get((str(message.get("from")), str(message.get("cid"))))
            if serving is not None:
                serving.cancel()

    async def _serve_call(self, message: Mapping[str, Any]) -> None:
        reply: dict[str, Any] = {"kind": "reply", "cid": message.get("cid")}
        try:
            if message["kind"] == "task":
                reply["row"] = await self._serve_task_call(message["call"])
            else:
                op, elicitation_id, tenant, argument = decode_call(message["call"])
                row = await self._host.forwarded(op, elicitation_id, tenant, argument)
                reply["row"] = dict(row)
        except ErlmcpError as exc:
            reply["error"] = error_to_wire(exc)
        except Exception as exc:
            log.warning("store_forwarded_call_failed", error=type(exc).__name__)
            reply["error"] = error_to_wire(exc)
        channel = self.keys.channel(str(message.get("from")))
        text = json.dumps(reply)
        with suppress(StoreUnavailable):  # else the caller's deadline answers it
            await self._run("reply", lambda c: c.publish(text, channel))

    async def _serve_task_call(self, call: Mapping[str, Any]) -> dict[str, Any]:
        """A task call forwarded here: run by the task host (none: this replica holds no
        task, which the caller reads as "not held")."""
        op, task_id, principal, argument = decode_task_call(call)
        host = self._task_host
        if host is None:
            return {"held": False}
        return dict(await host.task_forwarded(op, task_id, principal, argument))

    # -- background ---------------------------------------------------------------------------

    async def _beat(self, ttl_ms: int, claim: int = 0) -> list[Any]:
        args = [self.replica, str(ttl_ms), self.keys.live_prefix, self.keys.record_prefix,
                self.keys.pending_prefix, str(self._keep_ms), self.keys.task_set_prefix,
                self.keys.orphans, self.keys.task_prefix, str(claim),
                str(self._task_set_ttl_ms)]  # fmt: skip
        assert self._client is not None
        result: list[Any] = await self._attempt(
            "heartbeat", self._script("beat", [self.keys.replicas], args), self._client
        )
        return result

    async def _heartbeat(self) -> None:
        ttl_ms = round(self.url.heartbeat_ttl_s * 1000)
        first = True
        while True:
            tasks = self._task_host
            claim = min(_CLAIM_PER_BEAT, tasks.claim_room()) if tasks is not None else 0
            try:
                result = await self._beat(ttl_ms, max(0, claim))
            except StoreUnavailable:
                pass
            else:
                if not self.available:
                    self.available = True
                    self._recoveries += 1
                    log.info("store_up", store=str(self.url))
                ended = [_text(r) for r in result[1]]
                if ended:
                    self._reaped += len(ended)
                    log.warning("replicas_ended", replicas=ended)
                claimed = [_text(r) for r in result[2]]
                if claimed:
                    self._taken_over += len(claimed)
                    log.warning("tasks_taken_over", count=len(claimed))
                    if tasks is not None:
                        tasks.tasks_claimed(claimed)
                if int(result[0]) == 1 and not first:
                    log.warning("store_rejoined", replica=self.replica)
                    self._host.rejoined()
                    if tasks is not None:
                        tasks.tasks_rejoined()
                    with suppress(StoreUnavailable):  # else lost: their pages say 404
                        await self._rewrite_tickets()
                first = False
                with suppress(StoreUnavailable):
                    await self._write_owed()
            await trio.sleep(self.url.heartbeat_s)

    async def _subscribe(self) -> None:
        """Listen on this replica's channel; reconnect when the subscription cannot start."""
        while True:
            try:
                with trio.fail_after(self.url.timeout_s * 2):
                    client = await GlideClient.create(self._config(subscribe=True))
            except (trio.TooSlowError, GlideError):
                await trio.sleep(self.url.heartbeat_s)
                continue
            try:
                while True:
                    message = await client.get_pubsub_message()
                    self._on_message(message.message)
            except GlideError as exc:  # the subscription broke for good: open a new one
                log.warning("store_subscription_lost", error=type(exc).__name__)
            finally:
                with trio.move_on_after(_CLOSE_S) as cleanup:
                    cleanup.shield = True
                    await client.close()
            await trio.sleep(self.url.heartbeat_s)

    def stats(self) -> dict[str, Any]:
        return {
            "kind": "redis",
            "available": self.available,
            "errors": dict(self._errors),
            "recoveries": self._recoveries,
            "replicas_ended": self._reaped,
            "forwarded": self._forwarded,
            "tasks_taken_over": self._taken_over,
        }

    @asynccontextmanager
    async def running(self) -> AsyncIterator[RedisStore]:
        """Connect, heartbeat and listen until the block exits; then leave (this replica's
        live records end ``Failed(runtime_restarted)``) and close."""
        self._client = await GlideClient.create(self._config())
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                nursery.start_soon(self._heartbeat)
                nursery.start_soon(self._flush_owed)
                nursery.start_soon(self._flush_outbox)
                nursery.start_soon(self._subscribe)
                try:
                    yield self
                finally:
                    nursery.cancel_scope.cancel()
        finally:
            self._nursery = None
            with trio.move_on_after(2 * self.url.timeout_s + _CLOSE_S) as cleanup:
                cleanup.shield = True
                try:
                    while self._outbox and self.available:  # the outcomes of the stop
                        await self._publish_some()
                    await self._beat(0)
                except StoreUnavailable:
                    log.warning("store_leave_failed", replica=self.replica)
                await self._client.close()
            self._client = None


def _no_note(note: Mapping[str, Any]) -> None:
    """The notes of a request whose caller takes none."""


_quiet = False


@asynccontextmanager
async def open_redis_store(
    url: StoreUrl,
    policy: Policy,
    host: StoreHost,
    *,
    call_timeout_s: float = 5.0,
) -> AsyncIterator[RedisStore]:
    """Open the Redis/Valkey store of ``url`` for this replica (a random id)."""
    global _quiet
    if not _quiet:  # the client's own log goes to stderr in its own format: ours says it all
        GlideLogger.set_logger_config(GlideLogLevel.OFF)
        _quiet = True
    store = RedisStore(url, policy, secrets.token_hex(6), host, call_timeout_s=call_timeout_s)
    async with store.running():
        yield store
