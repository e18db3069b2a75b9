"""``Runtime.ask`` on a form writes ``create_elicitation`` + ``handle.outcome()`` out inline
(no ``_create``/``_call``/``outcome()`` coroutine layers, no handle: an inline create answers
with the record). This pins it to the general path: for every scenario, asking through
``ask`` and through ``create_elicitation`` + ``outcome()`` gives the same outcome or error,
the same requests and notices at the client, the same statuses and the same metrics — and
both are a checkpoint for a cancelled caller.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import structlog.testing
import trio
import trio.testing

from erlmcp_py import ElicitationRequest, Runtime, open_runtime
from erlmcp_py.actors.peer import PeerError
from erlmcp_py.core.outcomes import Outcome
from erlmcp_py.testing import MemoryPeer
from tests.actors.test_runtime import ALICE, SCHEMA, make_elicitation_actor_busy

Ask = Callable[[Runtime, ElicitationRequest, MemoryPeer], Awaitable[Outcome]]


async def via_ask(rt: Runtime, request: ElicitationRequest, peer: MemoryPeer) -> Outcome:
    return await rt.ask(request, peer=peer, tenant=ALICE)


async def via_handle(rt: Runtime, request: ElicitationRequest, peer: MemoryPeer) -> Outcome:
    handle = await rt.create_elicitation(request, peer=peer, tenant=ALICE)
    return await handle.outcome()


def form(message: str = "Who are you?", schema: Any = None) -> ElicitationRequest:
    return ElicitationRequest(message, requested_schema=schema or SCHEMA)


def answer(content: Any) -> Callable[[Any], Any]:
    return lambda r: {"action": "accept", "content": content}


SCENARIOS: dict[str, dict[str, Any]] = {
    "accept": {"auto": answer({"name": "Ada"})},
    "accept_awaited_send": {"auto": answer({"name": "Ada"}), "nowait": False},
    "decline": {"auto": lambda r: {"action": "decline"}},
    "cancel": {"auto": lambda r: {"action": "cancel"}},
    "invalid_then_failed": {"auto": answer({"name": ""})},
    "peer_error": {"auto": lambda r: PeerError(-32000, "nope")},
    "bad_action": {"auto": lambda r: {"action": "maybe"}},
    "unsupported": {"auto": answer({"name": "Ada"}), "modes": frozenset({"url"})},
    "timed_out": {"auto": None},
    "peer_gone": {"auto": None, "gone": True},
    "too_large": {"auto": answer({"name": "Ada"}), "message": "x" * 20_000},
    "schema_not_allowed": {
        "auto": answer({"name": "Ada"}),
        "schema": {"type": "object", "properties": {"n": {"type": "object"}}},
    },
    "rate_limited": {"auto": answer({"name": "Ada"}), "rate": 1, "times": 2},
    "too_many_pending": {"auto": None, "max_pending": 1, "times": 2, "concurrent": True},
}


async def observe(path: Ask, scenario: dict[str, Any]) -> tuple[Any, ...]:
    config = {
        "rate": scenario.get("rate", 1000),
        "max_pending_per_client": scenario.get("max_pending", 100),
    }
    peer = MemoryPeer(auto=scenario["auto"], nowait=scenario.get("nowait", True))
    if "modes" in scenario:
        peer.modes = scenario["modes"]
    peer.gone = scenario.get("gone", False)
    request = form(scenario.get("message", "Who are you?"), scenario.get("schema"))
    results: list[Any] = []

    async def ask_all(rt: Runtime) -> None:
        times = scenario.get("times", 1)
        if scenario.get("concurrent"):
            async with trio.open_nursery() as nursery:
                for _ in range(times):
                    nursery.start_soon(one, rt)
                    await trio.testing.wait_all_tasks_blocked()
                await trio.sleep(1000)  # the deadlines pass
        else:
            for _ in range(times):
                await one(rt)

    async def one(rt: Runtime) -> None:
        try:
            results.append(await path(rt, request, peer))
        except Exception as exc:
            results.append((type(exc).__name__, str(exc)))

    with structlog.testing.capture_logs() as logs:
        async with open_runtime(config) as rt:
            await ask_all(rt)
            await trio.testing.wait_all_tasks_blocked()
            rows = await rt.list_elicitations(tenant=ALICE)
            statuses = sorted((r.status, r.outcome, r.reprompts_used) for r in rows)
            metrics = rt.metrics()
    sent = [(r.method, r.params) for r in peer.requests]
    # Ids are random: compare the notices' and log events' shapes.
    notices = [(m, sorted(p)) for m, p in peer.notifications]
    events = [(e["event"], sorted(e)) for e in logs if "elicitation_id" in e]
    return results, statuses, metrics, sent, notices, events


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_ask_agrees_with_create_and_outcome(
    autojump_clock: trio.testing.MockClock, name: str
) -> None:
    scenario = SCENARIOS[name]
    assert await observe(via_ask, scenario) == await observe(via_handle, scenario)


@pytest.mark.parametrize("modes", [frozenset({"form"}), frozenset({"url"})], ids=["form", "none"])
async def test_ask_is_a_checkpoint_for_a_cancelled_caller_as_the_general_path(
    autojump_clock: trio.testing.MockClock, modes: frozenset[str]
) -> None:
    seen: dict[str, Any] = {}
    for label, path in (("ask", via_ask), ("handle", via_handle)):
        peer = MemoryPeer(auto=answer({"name": "Ada"}), modes=modes)
        async with open_runtime() as rt:
            with trio.CancelScope() as scope:
                scope.cancel()
                await path(rt, form(), peer)
            seen[label] = (
                scope.cancelled_caught,
                len(peer.requests),
                await rt.list_elicitations(tenant=ALICE),
                rt.metrics(),
            )
    assert seen["ask"] == seen["handle"]
    assert seen["ask"][0]  # the cancelled caller was stopped at the checkpoint


async def test_ask_through_the_mailbox_agrees_with_inline(
    autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    inline = await observe(via_ask, SCENARIOS["accept"])

    async def busy_ask(rt: Runtime, request: ElicitationRequest, peer: MemoryPeer) -> Outcome:
        with monkeypatch.context() as patch:
            make_elicitation_actor_busy(patch, rt)
            return await rt.ask(request, peer=peer, tenant=ALICE)

    assert await observe(busy_ask, SCENARIOS["accept"]) == inline


async def test_a_caller_that_stops_asking_is_no_longer_the_records_asker(
    autojump_clock: trio.testing.MockClock,
) -> None:
    peer = MemoryPeer()  # nobody answers
    async with open_runtime() as rt:
        with trio.move_on_after(5):
            await rt.ask(form(), peer=peer, tenant=ALICE)
        elicitation_id = peer.last().id.rsplit(".", 1)[0]
        actor = rt.actor("elicitation")._shared.actor  # read-only inspection
        assert actor is not None
        assert actor.records[elicitation_id].asker is None  # the abort forgot the task
        # The end wakes nobody: the former asker is running (this very call).
        info = await rt.cancel_elicitation(elicitation_id, tenant=ALICE)
        assert info.status == "cancelled"
