"""Chaos: thousands of concurrent elicitations against the whole runtime, under fire.

Random client answers (valid, invalid -> re-prompt, decline, cancel, garbage, JSON-RPC error,
twice, never, late), random delays (some beyond the deadline), extensions, server-side
cancellations and completions, owner deaths (shared owners and self-owned waiters), client
disappearances and random actor kills (a cast to an actor without ``handle_cast`` crashes it;
the rest_for_one tree restarts it and the actors after it).

Asserted: every elicitation created gets exactly one outcome of the six types; every API call
ends in its answer or a typed error; nothing hangs (``fail_after`` in virtual time); no task
leaks; after quiescence the registry holds only terminal records within retention, no owner
watch or child task is left, the peers hold no forgotten correlation; ``runtime.metrics()``
agrees with our own tally, outcome by outcome.

The seed is printed; set ERLMCP_CHAOS_SEED to replay one. ``--long`` runs ~20 000.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import time
from collections import Counter
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from typing import Any

import pytest
import structlog
import trio
import trio.testing

from erlmcp_py import (
    Accepted,
    AlreadyTerminal,
    AnswerInFlight,
    Cancelled,
    Declined,
    ElicitationHandle,
    ElicitationNotFound,
    ElicitationRequest,
    ExtensionDenied,
    Failed,
    InvalidAnswer,
    Outcome,
    RateLimited,
    Runtime,
    RuntimeConfig,
    Tenant,
    TimedOut,
    TooManyElicitations,
    Unsupported,
    ValidationResult,
    open_runtime,
)
from erlmcp_py.actors._elicitation import ElicitationActor
from erlmcp_py.actors._record import Record, info_of
from erlmcp_py.actors.peer import PeerError
from erlmcp_py.core.lifecycle import status_for_outcome
from erlmcp_py.testing import MemoryPeer, SentRequest
from supervisors import (
    Actor,
    ActorGone,
    ActorRef,
    Busy,
    CallTimeout,
    ChildSpec,
    Supervisor,
    actor_starter,
)
from tests.conftest import count_tasks

OUTCOME_TYPES = (Accepted, Declined, Cancelled, TimedOut, Unsupported, Failed)
FAILED_REASONS = {"validation", "transport", "runtime_restarted", "abandoned"}
# Typed errors an API call may end in while actors are being killed under it.
CHAOS_ERRORS = (ActorGone, Busy, CallTimeout)

SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {"n": {"type": "integer", "minimum": 0}, "note": {"type": "string"}},
    "required": ["n"],
}
URL = "https://93.184.216.34/consent"  # an IP literal: checked without resolving anything

CONFIG = RuntimeConfig.model_validate(
    {
        "form_deadline_s": 20.0,
        "url_deadline_s": 30.0,
        "warn_before_s": 5.0,
        "max_extensions": 2,
        "extension_s": 10.0,
        "max_reprompts": 2,
        "rate": 10**9,
        "max_pending_per_client": 10**9,
        "retention_max_records": 400,
        "retention_max_age_s": 120.0,
        "call_timeout_s": 5.0,
        "max_restarts": 10**6,
        "restart_period_s": 1.0,
    }
)

# Events the runtime must never log during chaos (each one is a bug or a lost message).
FORBIDDEN_EVENTS = {
    "actor_terminate_failed",
    "actor_terminate_timed_out",
    "monitor_callback_failed",
    "elicitation_send_failed",
    "elicitation_notify_failed",
    "child_restart_failed",
}


@contextmanager
def collected_logs(level: int) -> Iterator[list[dict[str, Any]]]:
    """Drop structlog events below ``level``; collect the others instead of printing them."""
    events: list[dict[str, Any]] = []
    saved = structlog.get_config()

    def collect(_logger: Any, _name: str, event_dict: MutableMapping[str, Any]) -> Any:
        events.append(dict(event_dict))
        raise structlog.DropEvent

    structlog.configure(
        processors=[structlog.processors.add_log_level, collect],
        wrapper_class=structlog.make_filtering_bound_logger(level),
    )
    try:
        yield events
    finally:
        structlog.configure(**saved)


@pytest.fixture
def log_events() -> Iterator[list[dict[str, Any]]]:
    """Silence the runtime's info logs; collect warnings and errors for assertions."""
    with collected_logs(logging.WARNING) as events:
        yield events


class Chaos:
    """State of one chaos run: the dice, the peers, the tallies."""

    def __init__(self, runtime: Runtime, rng: random.Random, n: int, span: float) -> None:
        self.runtime = runtime
        self.rng = rng
        self.n = n
        self.span = span
        self.tenants = [Tenant(f"user{k}", "ws", f"conv{k % 2}") for k in range(4)]
        self.stranger = Tenant("mallory", "ws", "conv0")
        self.peers: list[MemoryPeer] = []
        self.all_peers: list[MemoryPeer] = []
        self.peer_seq = 0
        self.owners: list[trio.lowlevel.Task] = []
        self.handles: dict[int, ElicitationHandle] = {}
        self.modes: dict[int, str] = {}
        self.outcomes: dict[int, Outcome] = {}
        self.unsupported = 0
        self.create_errors: Counter[str] = Counter()
        self.api: Counter[str] = Counter()
        self.fates: Counter[str] = Counter()
        self.kills: Counter[str] = Counter()
        self.disconnects = 0
        self.bursts = [rng.uniform(0, span) for _ in range(5)]
        self.clients: trio.Nursery | None = None
        self.server: trio.Nursery | None = None

    # -- clients -------------------------------------------------------------------------

    def new_peer(self, *, capable: bool = True) -> MemoryPeer:
        self.peer_seq += 1
        modes = frozenset({"form", "url"}) if capable else frozenset({"url"})
        peer = MemoryPeer(peer_id=f"peer{self.peer_seq}", modes=modes)
        peer.auto = lambda sent, peer=peer: self.on_request(peer, sent)
        self.all_peers.append(peer)
        return peer

    def on_request(self, peer: MemoryPeer, sent: SentRequest) -> Mapping[str, Any] | None:
        """A request reached the client: pick its fate (answered by a client task, mostly)."""
        rng = self.rng
        url = sent.params.get("mode") == "url"
        fates = ["valid", "invalid", "decline", "cancel", "garbage", "error", "twice", "never"]
        if sent.id.endswith(".1"):
            fate = rng.choices(fates, weights=[30, 14, 10, 8, 4, 4, 5, 8])[0]
        else:  # a re-prompt: this user tends to get it wrong again (exhausts re-prompts)
            fate = rng.choices(fates, weights=[10, 30, 2, 2, 1, 1, 1, 2])[0]
        self.fates[fate] += 1
        if fate == "never":
            return None
        reply = self.reply_for(fate, url)
        roll = rng.random()
        if roll < 0.08 and fate != "twice":
            return reply  # type: ignore[no-any-return]  # answered synchronously (inside send)
        # Mostly within the deadline, sometimes beyond it (a late answer is dropped).
        delay = rng.uniform(0, 16) if roll < 0.85 else rng.uniform(18, 60)
        assert self.clients is not None
        self.clients.start_soon(self.respond, peer, sent.id, reply, delay, fate == "twice")
        return None

    def reply_for(self, fate: str, url: bool) -> Any:
        rng = self.rng
        if fate in ("valid", "twice"):
            return {"action": "accept"} if url else {"action": "accept", "content": {"n": 7}}
        if fate == "invalid":
            return rng.choice(
                [
                    {"action": "accept", "content": {"n": "seven"}},
                    {"action": "accept", "content": {}},
                    {"action": "accept", "content": {"n": -1, "extra": True}},
                    {"action": "accept", "content": "not an object"},
                ]
            )
        if fate == "decline":
            return {"action": "decline"}
        if fate == "cancel":
            return {"action": "cancel"}
        if fate == "garbage":
            return rng.choice([{"action": "maybe"}, {"content": {"n": 1}}, {}, ["accept"], 42])
        assert fate == "error"
        return PeerError(-32603, "client exploded")

    async def respond(
        self, peer: MemoryPeer, rid: str, reply: Any, delay: float, twice: bool
    ) -> None:
        await trio.sleep(delay)
        self.api["answer_delivered" if peer.answer(rid, reply) else "answer_dropped"] += 1
        if twice:
            await trio.sleep(self.rng.uniform(0, 2))
            # The second answer to the same request id must be dropped by the session.
            assert not peer.answer(rid, {"action": "decline"})
            self.api["answer_twice_dropped"] += 1

    # -- owners --------------------------------------------------------------------------

    async def owner(self, task_status: trio.TaskStatus[trio.lowlevel.Task]) -> None:
        """A tool invocation that owns elicitations; it dies (cancelled or returning) or not."""
        rng = self.rng
        fate = rng.random()
        with trio.CancelScope() as scope:
            task_status.started(trio.lowlevel.current_task())
            if fate < 0.6:
                await trio.sleep_forever()  # outlives the storm
            elif fate < 0.8:
                await trio.sleep(rng.uniform(0, self.span))  # returns normally
            else:
                await trio.sleep(rng.uniform(0, self.span))
                scope.cancel()  # killed
                await trio.lowlevel.checkpoint()

    # -- the storm -----------------------------------------------------------------------

    def request(self, url: bool) -> ElicitationRequest:
        if url:
            return ElicitationRequest("Open the consent page", mode="url", url=URL)
        return ElicitationRequest("Pick a number", requested_schema=SCHEMA)

    async def waiter(self, i: int) -> None:
        rng = self.rng
        if rng.random() < 0.1:  # a burst: many creates at the very same instant
            await trio.sleep(rng.choice(self.bursts))
        else:
            await trio.sleep(rng.uniform(0, self.span))
        url = rng.random() < 0.1
        tenant = rng.choice(self.tenants)
        # Slot 0 is the client without form capability: its form requests are Unsupported.
        peer = self.peers[0] if rng.random() < 0.04 else rng.choice(self.peers[1:])
        self_owned = rng.random() < 0.3
        owner = None if self_owned else rng.choice(self.owners)
        try:
            handle = await self.runtime.create_elicitation(
                self.request(url), peer=peer, tenant=tenant, owner=owner
            )
        except (RateLimited, TooManyElicitations, *CHAOS_ERRORS) as exc:
            self.create_errors[type(exc).__name__] += 1
            return
        if not handle.id:
            outcome = await handle.outcome()
            assert isinstance(outcome, Unsupported), outcome
            self.unsupported += 1
            return
        self.handles[i] = handle
        self.modes[i] = handle.mode
        assert self.server is not None
        self.server.start_soon(self.meddle, handle, tenant, url)
        if self_owned and rng.random() < 0.3:
            # The owner is this very task and it dies while waiting: the outcome is
            # collected after the storm (it must be there, most likely Failed("abandoned")).
            with trio.move_on_after(rng.uniform(0, 25)):
                self.deliver(i, await handle.outcome())
            return
        self.deliver(i, await handle.outcome())

    def deliver(self, i: int, outcome: Outcome) -> None:
        assert i not in self.outcomes, f"second outcome for waiter {i}: {outcome!r}"
        assert isinstance(outcome, OUTCOME_TYPES), outcome
        if isinstance(outcome, Failed):
            assert outcome.reason in FAILED_REASONS, outcome
        self.outcomes[i] = outcome

    async def meddle(self, handle: ElicitationHandle, tenant: Tenant, url: bool) -> None:
        """The server side: extensions, cancellations, completions, foreign tenants."""
        rng = self.rng
        runtime = self.runtime
        for _ in range(rng.choice([0, 0, 1, 1, 2])):
            await trio.sleep(rng.uniform(0, 25))
            roll = rng.random()
            try:
                if roll < 0.35:
                    self.api["extend"] += 1
                    seconds = rng.choice([None, 3.0, 1000.0])
                    await runtime.extend_timeout(handle.id, tenant=tenant, seconds=seconds)
                elif roll < 0.55:
                    self.api["cancel"] += 1
                    info = await runtime.cancel_elicitation(handle.id, tenant=tenant)
                    assert info.status == "cancelled", info
                elif roll < 0.65 or (url and roll < 0.85):
                    self.api["complete"] += 1
                    content: Any = rng.choice([{"n": 3}, {"n": "x"}] if not url else [{}, None])
                    await runtime.complete_elicitation(handle.id, content, tenant=tenant)
                elif roll < 0.75:
                    self.api["foreign"] += 1
                    op = rng.choice(["status", "cancel", "extend"])
                    with pytest.raises(ElicitationNotFound):
                        if op == "status":
                            await runtime.get_elicitation_status(handle.id, tenant=self.stranger)
                        elif op == "cancel":
                            await runtime.cancel_elicitation(handle.id, tenant=self.stranger)
                        else:
                            await runtime.extend_timeout(handle.id, tenant=self.stranger)
                else:
                    self.api["status"] += 1
                    info = await runtime.get_elicitation_status(handle.id, tenant=tenant)
                    assert info.id == handle.id
            except (
                AlreadyTerminal,
                AnswerInFlight,  # complete_elicitation while a client answer is validated
                ElicitationNotFound,
                ExtensionDenied,
                InvalidAnswer,
                *CHAOS_ERRORS,
            ) as exc:
                self.api[f"err:{type(exc).__name__}"] += 1

    async def kill_actors(self, stop: trio.Event) -> None:
        rng = self.rng
        while not stop.is_set():
            await trio.sleep(rng.uniform(25, 125))  # ~3 kill rounds in CI, ~35 in --long
            if stop.is_set():
                break
            for _ in range(rng.choice([1, 1, 1, 2])):  # sometimes again, mid-restart
                name = rng.choices(["elicitation", "validator", "ratelimiter"], [3, 2, 1])[0]
                try:
                    self.runtime.actor(name).cast("boom")  # no handle_cast: the actor crashes
                    self.kills[name] += 1
                except (Busy, ActorGone):
                    self.kills["missed"] += 1
                await trio.sleep(rng.choice([0, 0.001, 0.1]))

    async def disconnect_clients(self, stop: trio.Event) -> None:
        rng = self.rng
        while not stop.is_set():
            await trio.sleep(rng.uniform(5, 35))
            if stop.is_set():
                break
            slot = rng.randrange(1, len(self.peers))  # slot 0 is the form-incapable client
            self.peers[slot].disconnect()
            self.peers[slot] = self.new_peer()
            self.disconnects += 1


async def run_chaos(seed: int, n: int, events: list[dict[str, Any]]) -> None:
    rng = random.Random(seed)
    span = max(200.0, n / 8)  # arrivals spread so ~10^2 are pending at once
    baseline = count_tasks()
    started = time.perf_counter()
    with trio.fail_after(span + 3600):  # virtual seconds: a hang is a TooSlowError
        async with trio.open_nursery() as aux:
            async with open_runtime(CONFIG) as runtime:
                chaos = Chaos(runtime, rng, n, span)
                chaos.peers = [chaos.new_peer(capable=False)]
                chaos.peers += [chaos.new_peer() for _ in range(7)]
                async with trio.open_nursery() as owners:
                    for _ in range(max(10, n // 20)):
                        chaos.owners.append(await owners.start(chaos.owner))
                    async with trio.open_nursery() as clients:
                        chaos.clients = clients
                        async with trio.open_nursery() as server:
                            chaos.server = server
                            stop = trio.Event()
                            aux.start_soon(chaos.kill_actors, stop)
                            aux.start_soon(chaos.disconnect_clients, stop)
                            async with trio.open_nursery() as waiters:
                                for i in range(n):
                                    waiters.start_soon(chaos.waiter, i)
                            stop.set()
                    # Every client answer (late ones too) has been delivered or dropped.
                    # Self-owned waiters that died: their outcome must be there (no hang).
                    for i, handle in chaos.handles.items():
                        if i not in chaos.outcomes:
                            chaos.api["collected_after_owner_death"] += 1
                            chaos.deliver(i, await handle.outcome())
                    owners.cancel_scope.cancel()
                await check_quiescent(chaos)
            aux.cancel_scope.cancel()
    assert count_tasks() == baseline, "tasks leaked"
    report(chaos, seed, time.perf_counter() - started, events)


async def check_quiescent(chaos: Chaos) -> None:
    runtime = chaos.runtime
    # Exactly one outcome per elicitation created, and the handle keeps giving the same one.
    assert set(chaos.outcomes) == set(chaos.handles)
    for i, handle in chaos.handles.items():
        assert handle.outcome_nowait() is chaos.outcomes[i]
        assert await handle.outcome() is chaos.outcomes[i]

    # The runtime still serves after all that chaos (and this gives us the live actor).
    probe_peer = MemoryPeer(
        peer_id="probe", auto=lambda s: {"action": "accept", "content": {"n": 1}}
    )
    probe = await runtime.create_elicitation(
        ElicitationRequest("probe", requested_schema=SCHEMA),
        peer=probe_peer,
        tenant=chaos.tenants[0],
    )
    assert await probe.outcome() == Accepted({"n": 1})
    await trio.testing.wait_all_tasks_blocked()  # the probe's slot release is flushed
    # The rate limiter agrees: no client holds a pending slot any more.
    assert await _pending_at_limiter(runtime) == 0

    # Metrics agree with our tally (the probe included).
    tally: Counter[tuple[str, str]] = Counter(
        (type(o).__name__, chaos.modes[i]) for i, o in chaos.outcomes.items()
    )
    tally[("Accepted", "form")] += 1
    created: Counter[str] = Counter(chaos.modes.values())
    created["form"] += 1
    metrics = runtime.metrics()
    assert metrics["pending"] == 0, metrics
    assert Counter(metrics["created"]) == created, (metrics["created"], created)
    reported: Counter[tuple[str, str]] = Counter()
    for name, by_mode in metrics["outcomes"].items():
        for mode, count in by_mode.items():
            reported[(name, mode)] = count
    unsupported = sum(v for (name, _), v in reported.items() if name == "Unsupported")
    assert unsupported == chaos.unsupported
    del reported[("Unsupported", "form")]
    assert +reported == +tally, (reported, tally)
    assert sum(reported.values()) == sum(created.values())
    assert (
        sum(metrics["refused"].values())
        == chaos.create_errors["RateLimited"] + (chaos.create_errors["TooManyElicitations"])
    )

    # The registry: only terminal records, within retention (count and age), nothing live.
    rows = [r for t in chaos.tenants for r in await runtime.list_elicitations(tenant=t)]
    now = trio.current_time()
    retention = runtime.config
    assert len(rows) <= retention.retention_max_records
    for row in rows:
        assert row.status not in ("pending", "active"), row
        assert row.ended_at is not None
        assert now - row.ended_at < retention.retention_max_age_s
    actor = runtime.actor("elicitation")._shared.actor  # the live incarnation (read-only)
    assert isinstance(actor, ElicitationActor)
    assert len(actor.records) == len(rows)
    # Every child is done: the registry keeps only plain ended rows, no Record.
    assert not any(isinstance(r, Record) for r in actor.records.values())
    assert actor.live == 0
    assert actor.hub.watched_tasks() == 0, "an owner watch outlived its elicitation"
    leftover = [
        t.name
        for t in actor.nursery.child_tasks
        if not t.name.endswith(("_flush_releases", "MonitorHub._serve"))
    ]
    assert not leftover, f"a child task outlived its elicitation: {leftover}"
    for i, handle in chaos.handles.items():
        entry = actor.records.get(handle.id)
        if entry is not None:  # retained by this incarnation: status agrees with outcome
            info = info_of(entry)
            assert info.outcome == type(chaos.outcomes[i]).__name__
            assert info.status == status_for_outcome(chaos.outcomes[i]).value

    # No peer still correlates a request nobody waits for; notices name real requests.
    for peer in chaos.all_peers:
        assert not peer.pending, (peer.peer_id, list(peer.pending)[:5])
        sent_ids = {r.id for r in peer.requests}
        for method, params in peer.notifications:
            if method == "notifications/cancelled":
                assert params["requestId"] in sent_ids
                chaos.api["cancelled_notices"] += 1
            elif method == "notifications/message":
                chaos.api["warnings"] += 1
    # The probe's own request is correlated by nobody either.
    assert not probe_peer.pending


def report(chaos: Chaos, seed: int, wall: float, events: list[dict[str, Any]]) -> None:
    kinds: Counter[str] = Counter()
    for o in chaos.outcomes.values():
        kinds[f"Failed({o.reason})" if isinstance(o, Failed) else type(o).__name__] += 1
    kinds["Unsupported"] = chaos.unsupported
    logged = Counter(str(e.get("event")) for e in events)
    print(
        f"\nruntime chaos seed={seed} n={chaos.n} created={len(chaos.handles)} "
        f"wall={wall:.1f}s virtual={trio.current_time():.0f}s\n"
        f"  outcomes: {dict(sorted(kinds.items()))}\n"
        f"  create errors: {dict(chaos.create_errors)}  kills: {dict(chaos.kills)}  "
        f"disconnects: {chaos.disconnects}\n"
        f"  client fates: {dict(chaos.fates)}\n"
        f"  api: {dict(sorted(chaos.api.items()))}\n"
        f"  logged (warning+): {dict(logged)}"
    )
    forbidden = {name: n for name, n in logged.items() if name in FORBIDDEN_EVENTS}
    assert not forbidden, forbidden
    for e in events:
        if e.get("event") == "actor_crashed":
            # The only crashes are the ones the chaos monkey caused.
            assert "does not handle casts" in str(e.get("reason")), e
    # The chaos reached every kind of ending.
    for kind in (
        "Accepted",
        "Declined",
        "Cancelled",
        "TimedOut",
        "Unsupported",
        "Failed(validation)",
        "Failed(transport)",
        "Failed(abandoned)",
        "Failed(runtime_restarted)",
    ):
        assert kinds[kind] > 0, (kind, kinds)


async def test_runtime_chaos(
    autojump_clock: trio.testing.MockClock, long_run: bool, log_events: list[dict[str, Any]]
) -> None:
    seed = int(os.environ.get("ERLMCP_CHAOS_SEED", random.randrange(2**32)))
    print(f"runtime chaos seed={seed} (replay: ERLMCP_CHAOS_SEED={seed})")
    await run_chaos(seed, 20_000 if long_run else 2_000, log_events)


# -- runtime bugs the chaos found (fixed; these pin them) ----------------------------------


async def test_busy_rate_limiter_does_not_crash_the_elicitation_actor(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Naturally: 20 000 pending elicitations of one owner; the owner exits; 20 000 child
    # tasks call Release at once and fill the rate limiter's mailbox (8192); a create from
    # anyone at that moment crashes the elicitation actor. Here the mailbox is filled with
    # info messages (ActorRef.send is public; handle_info ignores them), same effect, fast.
    # trio shuffles each scheduling batch, so the limiter may drain one message before the
    # elicitation actor posts its Acquire: try a few times (each try hit it with p~1/2).
    with collected_logs(logging.ERROR):
        async with open_runtime(CONFIG) as runtime:
            tenant = Tenant("user0")
            peer = MemoryPeer(peer_id="quiet")  # never answers
            request = ElicitationRequest("Pick a number", requested_schema=SCHEMA)
            bystander = await runtime.create_elicitation(request, peer=peer, tenant=tenant)
            actor = runtime.actor("elicitation")
            busy = 0
            for _ in range(24):
                limiter = runtime.actor("ratelimiter")
                with contextlib.suppress(Busy):
                    while True:
                        limiter.send("filler")
                try:
                    await runtime.create_elicitation(request, peer=peer, tenant=tenant)
                except Busy:
                    busy += 1  # the typed answer we expect under back-pressure
                await trio.sleep(0.1)
                if runtime.actor("elicitation") is not actor or busy >= 2:
                    break  # crashed, or the back-pressure path was hit often enough
            assert runtime.actor("elicitation") is actor, "the elicitation actor crashed"
            assert busy > 0, "the back-pressure path was never exercised"
            with pytest.raises(trio.WouldBlock):
                bystander.outcome_nowait()  # an unrelated waiter was not failed


class _DeclineWhileValidating:
    """A validator during whose run the client's ``decline`` arrives (a real interleaving:
    the peer's response callback runs while the elicitation actor awaits the validator)."""

    def __init__(self, peer: MemoryPeer) -> None:
        self.peer = peer

    def validate(self, content: Any) -> ValidationResult:
        self.peer.answer(self.peer.last().id, {"action": "decline"})
        return ValidationResult(True, content, ())


async def test_complete_racing_a_client_answer_says_already_terminal(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with collected_logs(logging.ERROR):
        async with open_runtime(CONFIG) as runtime:
            tenant = Tenant("user0")
            peer = MemoryPeer(peer_id="decliner")
            request = ElicitationRequest(
                "Pick a number", requested_schema=SCHEMA, validator=_DeclineWhileValidating(peer)
            )
            handle = await runtime.create_elicitation(request, peer=peer, tenant=tenant)
            await peer.wait_request()
            with pytest.raises(AlreadyTerminal):
                await runtime.complete_elicitation(handle.id, {"n": 1}, tenant=tenant)
            assert await handle.outcome() == Declined()


class _SlowToCancel(Actor):
    """An actor whose two helper tasks take 2 s to clean up (like 100 000 elicitation child
    tasks being cancelled, plus ``terminate`` notifying their clients)."""

    def __init__(self, refs: dict[str, ActorRef]) -> None:
        self.refs = refs

    async def init(self) -> None:
        self.refs["slow"] = self.ref
        for _ in range(2):
            self.nursery.start_soon(self.helper)

    async def helper(self) -> None:
        try:
            await trio.sleep_forever()
        finally:
            with trio.CancelScope(shield=True):
                await trio.sleep(2)


async def test_slow_shutdown_is_not_a_crash(autojump_clock: trio.testing.MockClock) -> None:
    refs: dict[str, ActorRef] = {}
    spec = ChildSpec("slow", actor_starter(lambda: _SlowToCancel(refs)), shutdown=1.0)
    with collected_logs(logging.WARNING) as events:
        sup = Supervisor([spec])
        async with trio.open_nursery() as nursery:
            await nursery.start(sup.run)
            sup.request_stop()
    assert not isinstance(refs["slow"].exit_reason, BaseExceptionGroup), refs["slow"]
    assert "actor_crashed" not in {e["event"] for e in events}


# A sibling call that times out is still in the sibling's mailbox and is applied later:
# Acquire and ReleaseMany are not idempotent, so treating CallTimeout as "did not happen"
# (give up on Acquire, retry ReleaseMany) corrupts the rate limiter's pending counts.
# mock_clock (no autojump): virtual time moves only when the test jumps it, so the timeout
# fires deterministically while the call waits behind a backlog in the limiter's mailbox.


def _backlog(runtime: Runtime) -> None:
    """Queue filler in the rate limiter's mailbox, ahead of whatever the runtime posts next."""
    limiter = runtime.actor("ratelimiter")
    for _ in range(4000):
        limiter.send("filler")  # handle_info ignores it; the limiter drains one per batch


async def _pending_at_limiter(runtime: Runtime) -> int:
    stats = await runtime.actor("ratelimiter").call("stats")
    return int(stats.pending_total)


async def test_timed_out_acquire_does_not_leak_a_slot(mock_clock: trio.testing.MockClock) -> None:
    config = RuntimeConfig.model_validate({"rate": 10**9, "max_pending_per_client": 2})
    request = ElicitationRequest("Pick a number", requested_schema=SCHEMA)
    tenant = Tenant("user0")
    peer = MemoryPeer(peer_id="client")  # never answers
    with collected_logs(logging.ERROR):
        async with open_runtime(config) as runtime:
            _backlog(runtime)
            async with trio.open_nursery() as nursery:

                async def create() -> None:
                    with pytest.raises(CallTimeout):
                        await runtime.create_elicitation(request, peer=peer, tenant=tenant)

                nursery.start_soon(create)
                for _ in range(20):  # the Acquire is now queued behind the filler
                    await trio.lowlevel.checkpoint()
                mock_clock.jump(config.call_timeout_s + 1)
            await trio.testing.wait_all_tasks_blocked()  # the limiter drained its backlog
            assert runtime.metrics()["pending"] == 0
            assert await _pending_at_limiter(runtime) == 0, "a slot leaked"
            for _ in range(config.max_pending_per_client):  # the client's whole cap is free
                await runtime.create_elicitation(request, peer=peer, tenant=tenant)


async def test_timed_out_release_is_not_applied_twice(
    mock_clock: trio.testing.MockClock,
) -> None:
    config = RuntimeConfig.model_validate({"rate": 10**9, "max_pending_per_client": 2})
    request = ElicitationRequest("Pick a number", requested_schema=SCHEMA)
    tenant = Tenant("user0")
    peer = MemoryPeer(peer_id="client")  # never answers
    with collected_logs(logging.ERROR):
        async with open_runtime(config) as runtime:
            first = await runtime.create_elicitation(request, peer=peer, tenant=tenant)
            await runtime.create_elicitation(request, peer=peer, tenant=tenant)
            await trio.testing.wait_all_tasks_blocked()
            assert await _pending_at_limiter(runtime) == 2
            _backlog(runtime)
            await runtime.cancel_elicitation(first.id, tenant=tenant)
            for _ in range(20):  # the flusher's ReleaseMany is queued behind the filler
                await trio.lowlevel.checkpoint()
            mock_clock.jump(config.call_timeout_s + 1)  # it times out ...
            for _ in range(20):
                await trio.lowlevel.checkpoint()
            mock_clock.jump(1)  # ... and the flusher sends it again
            await trio.testing.wait_all_tasks_blocked()
            assert runtime.metrics()["pending"] == 1
            assert await _pending_at_limiter(runtime) == 1, "released twice"
            await runtime.create_elicitation(request, peer=peer, tenant=tenant)
            with pytest.raises(TooManyElicitations):  # the cap (2) holds
                await runtime.create_elicitation(request, peer=peer, tenant=tenant)
