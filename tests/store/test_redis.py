"""The Redis/Valkey store against a real ``redis-server``: two runtimes in this process share
one store, each with its own client, as two replicas would; a third replica is a process
killed with SIGKILL.

Real time here (the server's clock and TTLs run on it): every wait is bounded.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import pytest
import trio
from structlog.testing import capture_logs

from erlmcp_py import (
    Accepted,
    AlreadyTerminal,
    Declined,
    ElicitationNotFound,
    ElicitationRequest,
    Failed,
    InvalidAnswer,
    RateLimited,
    Runtime,
    Tenant,
    TooManyElicitations,
    open_runtime,
)
from erlmcp_py.core.errors import StoreUnavailable
from erlmcp_py.store import NOTES_QUEUED, NoteSink, _redis as redis_store
from erlmcp_py.testing import MemoryPeer
from tests.store.server import RedisServer

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
ALICE = Tenant("alice", "ws1")
BOB = Tenant("bob", "ws1")
T = TypeVar("T")


def form() -> ElicitationRequest:
    return ElicitationRequest("Who are you?", requested_schema=SCHEMA)


async def public_resolver(host: str) -> list[str]:
    await trio.lowlevel.checkpoint()
    return ["93.184.215.14"]


@asynccontextmanager
async def replicas(url: str, n: int = 2, **config: Any) -> AsyncIterator[list[Runtime]]:
    """``n`` runtimes sharing the store ``url``."""
    async with open_runtime({"store": url, **config}, resolver=public_resolver) as first:
        if n == 1:
            yield [first]
            return
        async with replicas(url, n - 1, **config) as rest:
            yield [first, *rest]


async def eventually(probe: Callable[[], Awaitable[T]], ok: Callable[[T], bool]) -> T:
    """``probe()`` until ``ok`` of its value, within 5 s."""
    with trio.fail_after(5):
        while True:
            value = await probe()
            if ok(value):
                return value
            await trio.sleep(0.02)


async def test_the_rate_limit_holds_across_replicas(redis_server: RedisServer) -> None:
    async with replicas(redis_server.url(), rate=3, rate_window_s=60) as (a, b):
        peer = MemoryPeer(peer_id="client-1")
        await a.create_elicitation(form(), peer=peer, tenant=ALICE)
        await b.create_elicitation(form(), peer=peer, tenant=ALICE)
        await a.create_elicitation(form(), peer=peer, tenant=ALICE)
        for runtime in (a, b):  # the 4th is refused wherever it lands
            with pytest.raises(RateLimited) as limited:
                await runtime.create_elicitation(form(), peer=peer, tenant=ALICE)
            assert 0 < limited.value.retry_after <= 20.000001
        await b.create_elicitation(form(), peer=MemoryPeer(peer_id="client-2"), tenant=ALICE)
        assert a.metrics()["refused"] == {"rate": 1}
        assert b.metrics()["refused"] == {"rate": 1}


async def test_the_shared_bucket_refills_at_the_rate_and_retry_after_is_never_short(
    redis_server: RedisServer,
) -> None:
    async with replicas(redis_server.url(), rate=2, rate_window_s=0.4) as (a, b):
        peer = MemoryPeer(peer_id="client-1")
        await a.create_elicitation(form(), peer=peer, tenant=ALICE)
        await b.create_elicitation(form(), peer=peer, tenant=ALICE)
        with pytest.raises(RateLimited) as limited:
            await a.create_elicitation(form(), peer=peer, tenant=ALICE)
        assert 0 < limited.value.retry_after <= 0.200001  # one token: 0.4 s / 2
        await trio.sleep(limited.value.retry_after)
        await b.create_elicitation(form(), peer=peer, tenant=ALICE)  # refilled, on the other


async def test_a_replayed_question_takes_no_token_on_another_replica(
    redis_server: RedisServer,
) -> None:
    async with replicas(redis_server.url(), rate=1) as (a, b):
        peer = MemoryPeer(peer_id="client-1")
        await a.create_elicitation(form(), peer=peer, tenant=ALICE)
        await b.create_elicitation(form(), peer=peer, tenant=ALICE, charge=False)
        with pytest.raises(RateLimited):
            await b.create_elicitation(form(), peer=peer, tenant=ALICE)


async def test_pending_caps_hold_across_replicas_and_free_on_release(
    redis_server: RedisServer,
) -> None:
    config = {"rate": 100, "max_pending_per_client": 2, "max_pending_global": 3}
    async with replicas(redis_server.url(), **config) as (a, b):
        one, two, three = (MemoryPeer(peer_id=f"client-{i}") for i in range(3))
        first = await a.create_elicitation(form(), peer=one, tenant=ALICE)
        await b.create_elicitation(form(), peer=one, tenant=ALICE)
        with pytest.raises(TooManyElicitations, match="client cap 2"):
            await a.create_elicitation(form(), peer=one, tenant=ALICE)
        await b.create_elicitation(form(), peer=two, tenant=ALICE)
        with pytest.raises(TooManyElicitations, match="global cap 3"):
            await a.create_elicitation(form(), peer=three, tenant=ALICE)
        await a.cancel_elicitation(first.id, tenant=ALICE)  # its slot is released …
        await eventually(
            lambda: _try_create(b, three), lambda created: created
        )  # … for every replica


async def _try_create(runtime: Runtime, peer: MemoryPeer) -> bool:
    try:
        await runtime.create_elicitation(form(), peer=peer, tenant=ALICE)
    except (TooManyElicitations, StoreUnavailable):
        return False
    return True


async def test_status_and_list_span_replicas_and_stay_tenant_scoped(
    redis_server: RedisServer,
) -> None:
    async with replicas(redis_server.url(), rate=100) as (a, b):
        handle = await a.create_elicitation(form(), peer=MemoryPeer(), tenant=ALICE)
        row = await eventually(
            lambda: _status(b, handle.id, ALICE),
            lambda info: info is not None and info.status == "active",
        )
        assert row is not None
        assert row.id == handle.id
        assert [r.id for r in await b.list_elicitations(tenant=ALICE)] == [handle.id]
        # Another tenant's id is exactly an unknown id, on the replica that holds it or not.
        for runtime in (a, b):
            with pytest.raises(ElicitationNotFound) as foreign:
                await runtime.get_elicitation_status(handle.id, tenant=BOB)
            with pytest.raises(ElicitationNotFound) as unknown:
                await runtime.get_elicitation_status("no-such-id", tenant=BOB)
            assert str(foreign.value) == str(unknown.value)
            assert await runtime.list_elicitations(tenant=BOB) == []
        extended = await b.extend_timeout(handle.id, tenant=ALICE, seconds=30)  # forwarded to a
        assert (extended.extensions_used, extended.deadline) == (1, row.deadline + 30)
        await b.cancel_elicitation(handle.id, tenant=ALICE)  # forwarded to a
        assert (await handle.outcome()).__class__.__name__ == "Cancelled"
        ended = await eventually(
            lambda: _status(b, handle.id, ALICE),
            lambda info: info is not None and info.status == "cancelled",
        )
        assert ended is not None
        assert ended.outcome == "Cancelled"
        with pytest.raises(AlreadyTerminal):
            await b.cancel_elicitation(handle.id, tenant=ALICE)


async def _status(runtime: Runtime, elicitation_id: str, tenant: Tenant) -> Any:
    try:
        return await runtime.get_elicitation_status(elicitation_id, tenant=tenant)
    except ElicitationNotFound:
        return None


async def test_a_url_completion_on_one_replica_reaches_the_one_holding_it(
    redis_server: RedisServer,
) -> None:
    async with replicas(redis_server.url(), rate=100) as (a, b):
        peer = MemoryPeer(auto=lambda r: {"action": "accept"})
        handle = await a.create_elicitation(
            ElicitationRequest("Sign in", mode="url", url="https://example.com/login"),
            peer=peer,
            tenant=ALICE,
        )
        await eventually(
            lambda: _status(b, handle.id, ALICE),
            lambda info: info is not None and info.status == "active",
        )
        with pytest.raises(ElicitationNotFound):  # tenant-scoped on the way too
            await b.complete_elicitation(handle.id, {"ok": True}, tenant=BOB)
        info = await b.complete_elicitation(handle.id, {"ok": True}, tenant=ALICE)
        assert info.status == "completed"
        with trio.fail_after(5):
            assert await handle.outcome() == Accepted({"ok": True})
        await eventually(lambda: _notified(peer), bool)
        assert b.metrics()["store"]["forwarded"] == 1


async def test_a_completion_naming_its_holder_reaches_it_before_the_store_has_the_record(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The store's copy of a record is written a moment after each change; a hosted page's
    # ticket names the holder, so an answer submitted at once on another replica reaches it.
    monkeypatch.setattr(redis_store, "_PUBLISH_DELAY_S", 30.0)
    async with replicas(redis_server.url(), rate=100) as (a, b):
        answered = await a.create_elicitation(form(), peer=MemoryPeer(), tenant=ALICE)
        declined = await a.create_elicitation(form(), peer=MemoryPeer(), tenant=ALICE)
        holder = a.store.replica
        with pytest.raises(ElicitationNotFound):  # without the holder: not in the store yet
            await b.complete_elicitation(answered.id, {"name": "Ada"}, tenant=ALICE)
        with pytest.raises(ElicitationNotFound):  # the holder checks the tenant
            await b.complete_elicitation(answered.id, {"name": "Ada"}, tenant=BOB, replica=holder)
        info = await b.complete_elicitation(
            answered.id, {"name": "Ada"}, tenant=ALICE, replica=holder
        )
        assert info.status == "completed"
        await b.answer_elicitation(declined.id, "decline", tenant=ALICE, replica=holder)
        with trio.fail_after(5):
            assert await answered.outcome() == Accepted({"name": "Ada"})
            assert await declined.outcome() == Declined()


async def test_a_forwarded_completion_is_validated_by_the_holder_and_refused_with_its_errors(
    redis_server: RedisServer,
) -> None:
    async with replicas(redis_server.url(), rate=100) as (a, b):
        handle = await a.create_elicitation(form(), peer=MemoryPeer(), tenant=ALICE)
        await eventually(lambda: _status(b, handle.id, ALICE), lambda info: info is not None)
        with pytest.raises(InvalidAnswer) as refused:
            await b.complete_elicitation(handle.id, {"name": 5}, tenant=ALICE)
        ((error,),) = (refused.value.errors,)
        assert (error.field, error.constraint) == ("name", "type")
        assert "5" not in str(refused.value)  # the submitted value never travels back
        info = await b.complete_elicitation(handle.id, {"name": "Ada"}, tenant=ALICE)
        assert info.status == "completed"
        assert await handle.outcome() == Accepted({"name": "Ada"})


async def _notified(peer: MemoryPeer) -> bool:
    await trio.lowlevel.checkpoint()
    return ("notifications/elicitation/complete", {"elicitationId": peer.requests[0].params[
        "elicitationId"]}) in peer.notifications  # fmt: skip


async def first_line(process: trio.Process) -> str:
    """The first line a subprocess writes on its stdout (what it says it is), within 30 s."""
    assert process.stdout is not None
    line = b""
    with trio.fail_after(30):
        while not line.endswith(b"\n"):
            line += await process.stdout.receive_some()
    return line.decode().strip()


async def test_a_dead_replicas_elicitations_end_failed(redis_server: RedisServer) -> None:
    url = redis_server.url()
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "tests.store.replica", url, "alice"],
        stdout=subprocess.PIPE,
        env=env,
    )
    try:
        elicitation_id = await first_line(process)
        async with replicas(url, 1) as (b,):
            await eventually(
                lambda: _status(b, elicitation_id, Tenant("alice")),
                lambda info: info is not None and info.status == "active",
            )
            process.send_signal(signal.SIGKILL)
            await process.wait()
            ended = await eventually(
                lambda: b.get_elicitation_status(elicitation_id, tenant=Tenant("alice")),
                lambda info: info.status == "failed",
            )
            assert ended.outcome == "Failed"
            assert ended.ended_at is not None

            async def reaped() -> int:  # counted once the heartbeat that reaped it returns
                await trio.lowlevel.checkpoint()
                return int(b.metrics()["store"]["replicas_ended"])

            assert await eventually(reaped, lambda n: n >= 1) == 1
            with pytest.raises(AlreadyTerminal):
                await b.complete_elicitation(elicitation_id, {}, tenant=Tenant("alice"))
    finally:
        process.kill()
        with trio.move_on_after(5):
            await process.wait()


async def test_a_stopped_replica_ends_its_elicitations_in_the_store(
    redis_server: RedisServer,
) -> None:
    url = redis_server.url()
    async with replicas(url, 1) as (b,):
        async with replicas(url, 1) as (a,):
            handle = await a.create_elicitation(form(), peer=MemoryPeer(), tenant=ALICE)
            await eventually(lambda: _status(b, handle.id, ALICE), lambda info: info is not None)
        assert await handle.outcome() == Failed("runtime_restarted")
        ended = await b.get_elicitation_status(handle.id, tenant=ALICE)
        assert (ended.status, ended.outcome) == ("failed", "Failed")


async def test_a_store_outage_is_a_clear_error_without_a_hang_and_recovers(
    redis_server: RedisServer,
) -> None:
    async with replicas(redis_server.url(), 1, rate=100) as (a,):
        peer = MemoryPeer()
        held = await a.create_elicitation(form(), peer=peer, tenant=ALICE)
        redis_server.stop()
        try:
            for _ in range(3):
                with trio.fail_after(2):  # within the store's deadline, every time
                    with pytest.raises(StoreUnavailable, match="shared store unavailable"):
                        await a.create_elicitation(form(), peer=peer, tenant=ALICE)
            with trio.fail_after(2), pytest.raises(StoreUnavailable):
                await a.get_elicitation_status("elsewhere", tenant=ALICE)
            with trio.fail_after(2), pytest.raises(StoreUnavailable):
                await a.list_elicitations(tenant=ALICE)
            # What this replica holds still answers.
            assert (await a.get_elicitation_status(held.id, tenant=ALICE)).status == "active"
            await a.cancel_elicitation(held.id, tenant=ALICE)
            metrics = a.metrics()
            assert metrics["store"]["available"] is False
            assert metrics["store"]["errors"]["admit"] >= 3
            assert metrics["refused"]["store_unavailable"] >= 3
        finally:
            redis_server.start()
        await eventually(lambda: _try_create(a, peer), bool)
        assert a.metrics()["store"]["available"] is True
        assert a.metrics()["store"]["recoveries"] >= 1
        # The server came back empty: this replica published its records again.
        await eventually(
            lambda: _store_row(a, held.id),
            lambda row: row is not None and row.row["status"] == "cancelled",
        )


async def test_a_replica_starts_while_the_store_is_down_and_admits_once_it_is_up(
    redis_server: RedisServer,
) -> None:
    redis_server.stop()
    try:
        async with replicas(redis_server.url(), 1, rate=100) as (a,):
            peer = MemoryPeer()
            with trio.fail_after(2), pytest.raises(StoreUnavailable):
                await a.create_elicitation(form(), peer=peer, tenant=ALICE)
            redis_server.start()
            await eventually(lambda: _try_create(a, peer), bool)
    finally:
        if redis_server.process is None:
            redis_server.start()


async def _store_row(runtime: Runtime, elicitation_id: str) -> Any:
    return await runtime.store.find(elicitation_id, ALICE)


async def test_a_server_with_a_password_takes_it_from_the_url(tmp_path: Any) -> None:
    from tests.components import require

    server = RedisServer(require("redis-server"), str(tmp_path), "--requirepass", "s3cret")
    server.start()
    try:
        async with replicas(server.url(":s3cret@"), 1, rate=100) as (a,):
            await a.create_elicitation(form(), peer=MemoryPeer(), tenant=ALICE)
        async with replicas(server.url(":wrong@"), 1, rate=100) as (b,):
            with trio.fail_after(2), pytest.raises(StoreUnavailable):
                await b.create_elicitation(form(), peer=MemoryPeer(), tenant=ALICE)
    finally:
        server.stop()


@pytest.mark.parametrize("stop", ["cancelled", "out_of_time"])
async def test_a_forwarded_request_its_caller_stops_waiting_for_is_cancelled_on_the_holder(
    redis_server: RedisServer, stop: str
) -> None:
    async with replicas(redis_server.url(), rate=100) as (a, b):
        started, cancelled = trio.Event(), trio.Event()

        async def handler(body: Any, note: Any) -> dict[str, Any]:
            started.set()
            try:
                await trio.sleep_forever()
            finally:
                cancelled.set()

        b.handle_requests("test.wait", handler)
        timeout = 30.0 if stop == "cancelled" else 0.5
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:

                async def forward() -> None:
                    with pytest.raises(StoreUnavailable):
                        await a.forward_request(b.store.replica, "test.wait", {}, timeout)

                nursery.start_soon(forward)
                await started.wait()
                if stop == "cancelled":
                    nursery.cancel_scope.cancel()
            await cancelled.wait()  # the holder's handler ends with its caller's wait


async def test_a_forwarded_requests_notes_reach_its_caller_in_order_before_its_answer(
    redis_server: RedisServer,
) -> None:
    async with replicas(redis_server.url(), rate=100) as (a, b):

        async def handler(body: Any, note: NoteSink) -> dict[str, Any]:
            for n in range(body["notes"]):
                note({"n": n})
                await trio.lowlevel.checkpoint()  # the handler goes on: notes are not waited for
            return {"sent": body["notes"]}

        b.handle_requests("test.notes", handler)
        seen: list[Any] = []
        with trio.fail_after(10), capture_logs() as logs:
            answer = await a.forward_request(
                b.store.replica, "test.notes", {"notes": 50}, 5.0, seen.append
            )
            seen.append(answer)
    assert seen == [*({"n": n} for n in range(50)), {"sent": 50}]
    assert not [e for e in logs if e["event"] == "forwarded_notes_dropped"]


async def test_a_flood_of_notes_is_bounded_on_the_holder_the_newest_dropped_and_logged_once(
    redis_server: RedisServer,
) -> None:
    async with replicas(redis_server.url(), rate=100) as (a, b):

        async def handler(body: Any, note: NoteSink) -> dict[str, Any]:
            for n in range(NOTES_QUEUED + 100):  # faster than any store: nothing is sent yet
                note({"n": n})
            return {"done": True}

        b.handle_requests("test.notes", handler)
        seen: list[Any] = []
        with trio.fail_after(10), capture_logs() as logs:
            answer = await a.forward_request(b.store.replica, "test.notes", {}, 5.0, seen.append)
    assert answer == {"done": True}
    assert seen == [{"n": n} for n in range(NOTES_QUEUED)]  # the oldest kept, in order
    (dropped,) = [e for e in logs if e["event"] == "forwarded_notes_dropped"]
    assert (dropped["count"], dropped["why"]) == (100, "the queue is full")


async def test_the_notes_for_a_forwarder_that_is_gone_stop_at_the_first_and_never_delay_the_answer(
    redis_server: RedisServer,
) -> None:
    url = redis_server.url()
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    async with replicas(url, 1, rate=100) as (b,):
        started, gone = trio.Event(), trio.Event()
        returned: list[float] = []

        async def handler(body: Any, note: NoteSink) -> dict[str, Any]:
            started.set()
            await gone.wait()
            for n in range(200):
                note({"n": n})  # never blocks: the round goes on at once
            returned.append(trio.current_time())
            return {"done": True}

        b.handle_requests("test.notes", handler)
        process = await trio.lowlevel.open_process(
            [sys.executable, "-m", "tests.store.forwarder", url, b.store.replica],
            stdout=subprocess.PIPE,
            env=env,
        )
        try:
            replica = await first_line(process)
            with trio.fail_after(30):
                channel = b.store.keys.channel(replica)  # type: ignore[attr-defined]
                await started.wait()
            process.send_signal(signal.SIGKILL)  # gone, without a word to the holder
            await process.wait()
            await eventually(
                lambda: trio.to_thread.run_sync(redis_server.cli, "pubsub", "numsub", channel),
                lambda numsub: numsub[-1] == "0",
            )
            published = _publishes(redis_server)
            with capture_logs() as logs:

                async def drops() -> list[Any]:
                    await trio.lowlevel.checkpoint()
                    return [e for e in logs if e["event"] == "forwarded_notes_dropped"]

                gone.set()
                with trio.fail_after(1):  # within the store's deadline (0.5 s), twice
                    await eventually(drops, bool)
            # one note found nobody listening; the other 199 were never tried; the answer
            # went out after it (to nobody: the forwarder is gone)
            await eventually(
                lambda: trio.to_thread.run_sync(_publishes, redis_server),
                lambda n: n == published + 2,
            )
            (dropped,) = [e for e in logs if e["event"] == "forwarded_notes_dropped"]
            assert (dropped["count"], dropped["why"]) == (200, "the caller is gone")
            assert returned
        finally:
            process.kill()
            with trio.move_on_after(5):
                await process.wait()


def _publishes(server: RedisServer) -> int:
    """How many PUBLISH commands the server has run."""
    for line in server.cli("info", "commandstats"):
        if line.startswith("cmdstat_publish:"):
            return int(line.split("calls=")[1].split(",")[0])
    return 0
