"""The elicitation runtime's guarantees, each with a test that fails without it.

All under trio's autojump clock: deadlines of 300 s pass in microseconds.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Literal

import pydantic
import pytest
import structlog.testing
import trio
import trio.testing

from erlmcp_py import (
    Accepted,
    AlreadyTerminal,
    Cancelled,
    Declined,
    ElicitationInfo,
    ElicitationNotFound,
    ElicitationRequest,
    ExtensionDenied,
    Failed,
    InvalidAnswer,
    RateLimited,
    RequestTooLarge,
    ResultTooLarge,
    Runtime,
    RuntimeConfig,
    SchemaNotAllowed,
    Tenant,
    TimedOut,
    TooManyElicitations,
    UnsafeURLError,
    Unsupported,
    UrlPolicy,
    open_runtime,
    schema_for,
)
from erlmcp_py.actors._elicitation import ElicitationActor
from erlmcp_py.actors._record import Record
from erlmcp_py.actors.peer import AnswerTooLarge, PeerError
from erlmcp_py.core.errors import StoreUnavailable
from erlmcp_py.core.outcomes import Outcome
from erlmcp_py.core.schema import RequestedSchema
from erlmcp_py.core.store_wire import StoreRecord
from erlmcp_py.testing import MemoryPeer
from tests.conftest import count_tasks

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "age": {"type": "integer", "minimum": 0, "default": 30},
    },
    "required": ["name"],
}
ALICE = Tenant("alice", "ws1", "conv1")


async def public_resolver(host: str) -> list[str]:
    """Tests never touch DNS: every name resolves to a documentation-free public address."""
    await trio.lowlevel.checkpoint()
    return ["93.184.215.14"]


BOB = Tenant("bob", "ws1", "conv1")


def form(message: str = "Who are you?", schema: dict[str, Any] | None = None) -> ElicitationRequest:
    return ElicitationRequest(message, requested_schema=schema or SCHEMA)


@pytest.fixture
async def rt() -> AsyncIterator[Runtime]:
    # pytest-trio only honours a clock fixture named in the test's own arguments, so every
    # test using ``rt`` also takes ``autojump_clock``.
    async with open_runtime({"rate": 1000}, resolver=public_resolver) as runtime:
        yield runtime


async def test_accept_returns_validated_content_with_defaults(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer(auto=lambda r: {"action": "accept", "content": {"name": "Ada"}})
    handle = await rt.create_elicitation(form(), peer=peer, tenant=ALICE)
    assert await handle.outcome() == Accepted({"name": "Ada", "age": 30})
    assert await handle.outcome() == Accepted({"name": "Ada", "age": 30})  # idempotent
    sent = peer.requests[0]
    assert sent.method == "elicitation/create"
    assert sent.params == {"message": "Who are you?", "requestedSchema": SCHEMA}
    info = await rt.get_elicitation_status(handle.id, tenant=ALICE)
    assert (info.status, info.outcome) == ("completed", "Accepted")


async def test_an_ended_elicitations_status_row_keeps_every_field(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer()  # answered by hand below
    start = trio.current_time()
    handle = await rt.create_elicitation(form(), peer=peer, tenant=ALICE)
    await trio.sleep(1)
    assert peer.answer(peer.requests[0].id, {"action": "accept", "content": {"name": ""}})
    await trio.sleep(2)  # the re-prompt's answer, 3 s after the start
    assert peer.answer(peer.requests[1].id, {"action": "accept", "content": {"name": "Ada"}})
    assert await handle.outcome() == Accepted({"name": "Ada", "age": 30})
    live = await rt.get_elicitation_status(handle.id, tenant=ALICE)
    await trio.sleep(1)  # the child is done: the registry keeps the ended row
    info = await rt.get_elicitation_status(handle.id, tenant=ALICE)
    assert info == live
    assert info == ElicitationInfo(
        id=handle.id,
        mode="form",
        status="completed",
        client=peer.peer_id,
        created_at=start,
        deadline=start + 300,
        sent_at=start,  # the first request's
        ended_at=start + 3,
        extensions_used=0,
        reprompts_used=1,
        outcome="Accepted",
    )


@pytest.mark.parametrize(
    ("action", "expected", "status"),
    [("decline", Declined(), "declined"), ("cancel", Cancelled(by="client"), "cancelled")],
)
async def test_decline_and_cancel(
    rt: Runtime, autojump_clock: trio.testing.MockClock, action: str, expected: Any, status: str
) -> None:
    peer = MemoryPeer(auto=lambda r: {"action": action})
    handle = await rt.create_elicitation(form(), peer=peer, tenant=ALICE)
    assert await handle.outcome() == expected
    assert (await rt.get_elicitation_status(handle.id, tenant=ALICE)).status == status
    assert peer.notifications == []  # the client ended it: nothing to cancel


async def test_invalid_answer_is_reprompted_with_errors_then_fails(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer(auto=lambda r: {"action": "accept", "content": {"name": "", "age": "36"}})
    handle = await rt.create_elicitation(form(), peer=peer, tenant=ALICE)
    outcome = await handle.outcome()
    assert isinstance(outcome, Failed)
    assert outcome.reason == "validation"
    assert len(peer.requests) == 4  # the first ask and three re-prompts
    reprompt = peer.requests[1].params["message"]
    assert reprompt.startswith(
        "Who are you?\n\nYour previous answer was not accepted (attempt 2):\n- "
    )
    assert reprompt.count("not accepted") == 1  # said once, then the problems
    assert "age" in reprompt
    assert "name" in reprompt
    assert '"36"' not in reprompt
    assert "36" not in reprompt
    assert [r.id for r in peer.requests] == [f"{handle.id}.{n}" for n in (1, 2, 3, 4)]


async def test_a_requests_meta_goes_out_with_every_attempt_of_it(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    answers = iter([{"name": ""}, {"name": "Ada"}])
    peer = MemoryPeer(auto=lambda r: {"action": "accept", "content": next(answers)})
    meta = {"io.erlmcp/pageUrl": "https://example.com/elicit/t"}
    request = ElicitationRequest("Who?", requested_schema=SCHEMA, meta=meta)
    handle = await rt.create_elicitation(request, peer=peer, tenant=ALICE)
    assert await handle.outcome() == Accepted({"name": "Ada", "age": 30})
    assert [r.params["_meta"] for r in peer.requests] == [meta, meta]  # the re-prompt too
    plain = await rt.create_elicitation(form(), peer=peer, tenant=ALICE)
    await plain.outcome()
    assert "_meta" not in peer.requests[-1].params


@pytest.mark.parametrize("meta", [["io.erlmcp/pageUrl"], {1: "x"}, "x"])
def test_a_requests_meta_is_a_mapping_with_str_keys(meta: Any) -> None:
    with pytest.raises(TypeError, match="meta must be a mapping with str keys"):
        ElicitationRequest("Who?", requested_schema=SCHEMA, meta=meta)


def test_a_page_ticket_lives_as_long_as_the_longest_question_it_may_serve() -> None:
    """A task's form question has a link to the page: its ticket must outlive it, even when
    form questions wait longer than URL-mode ones."""
    config = RuntimeConfig(task_form_deadline_s=50_000.0, task_url_deadline_s=20_000.0)
    longest = 50_000.0 + config.max_extensions * config.extension_s
    assert Runtime(config).pages.ttl_s == longest


async def test_a_pt_br_request_gets_its_reprompt_and_warning_in_portuguese(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:

    def first_only(request: Any) -> dict[str, Any] | None:  # answers once, wrongly
        first = request.id.endswith(".1")
        return {"action": "accept", "content": {"name": 7}} if first else None

    peer = MemoryPeer(auto=first_only)
    request = ElicitationRequest("Quem é você?", requested_schema=SCHEMA, locale="pt-BR")
    handle = await rt.create_elicitation(request, peer=peer, tenant=ALICE)
    assert await handle.outcome() == TimedOut()
    reprompt = peer.requests[1].params["message"]
    assert reprompt.startswith(
        "Quem é você?\n\nSua resposta anterior não foi aceita (tentativa 2):\n- name: "
    )
    warning = peer.notifications[0][1]["data"]["message"]
    assert warning == "Este pedido expira em 60 segundos."


async def test_the_runtime_locale_is_the_default_of_a_request_that_names_none(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_runtime({"locale": "pt-BR", "form_deadline_s": 2, "warn_before_s": 1}) as rt:
        peer = MemoryPeer()
        await rt.create_elicitation(form(), peer=peer, tenant=ALICE)
        english = ElicitationRequest("Who?", requested_schema=SCHEMA, locale="en-US")
        handle = await rt.create_elicitation(english, peer=peer, tenant=ALICE)
        assert await handle.outcome() == TimedOut()
        await trio.testing.wait_all_tasks_blocked()
    messages = sorted(
        n[1]["data"]["message"] for n in peer.notifications if n[0] == "notifications/message"
    )
    assert messages == ["Este pedido expira em 1 segundo.", "This request expires in 1 second."]


async def test_an_answer_too_large_is_refused_in_the_request_locale(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_runtime({"answer_bytes": 100, "max_reprompts": 1}) as rt:
        answers = iter([{"name": "x" * 200}, {"name": "Ada"}])
        peer = MemoryPeer(auto=lambda r: {"action": "accept", "content": next(answers)})
        request = ElicitationRequest("Nome?", requested_schema=SCHEMA, locale="pt-BR")
        handle = await rt.create_elicitation(request, peer=peer, tenant=ALICE)
        assert isinstance(await handle.outcome(), Accepted)
    assert "- A resposta é grande demais (" in peer.requests[1].params["message"]


def test_a_locale_must_be_one_of_the_catalog() -> None:
    with pytest.raises(ValueError, match=r"ElicitationRequest\.locale must be one of en-US, pt-BR"):
        ElicitationRequest("Who?", requested_schema=SCHEMA, locale="fr-FR")
    with pytest.raises(pydantic.ValidationError, match="locale"):
        RuntimeConfig.model_validate({"locale": "pt"})


async def test_reprompt_then_valid_answer_completes(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    answers = iter([{"name": 7}, {"name": "Ada", "age": 3.0}])
    peer = MemoryPeer(auto=lambda r: {"action": "accept", "content": next(answers)})
    handle = await rt.create_elicitation(form(), peer=peer, tenant=ALICE)
    assert await handle.outcome() == Accepted({"name": "Ada", "age": 3})
    assert (await rt.get_elicitation_status(handle.id, tenant=ALICE)).reprompts_used == 1


async def test_timeout_warns_then_times_out_and_cancels_client_request(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer()  # never answers
    start = trio.current_time()
    handle = await rt.create_elicitation(form(), peer=peer, tenant=ALICE)
    assert await handle.outcome() == TimedOut()
    assert trio.current_time() - start == pytest.approx(300)
    await trio.testing.wait_all_tasks_blocked()  # Resolve comes first, the notice right after
    (warning, cancelled) = peer.notifications
    assert warning[0] == "notifications/message"
    assert warning[1]["level"] == "warning"
    assert warning[1]["data"]["elicitationId"] == handle.id
    assert warning[1]["data"]["remainingSeconds"] == 60
    assert cancelled == (
        "notifications/cancelled",
        {"requestId": peer.requests[0].id, "reason": "elicitation timed out"},
    )
    assert peer.pending == {}  # correlation dropped: a late answer is ignored
    assert peer.answer(peer.requests[0].id, {"action": "accept"}) is False


async def test_a_request_timeout_ends_it_then_with_the_warning_moved_along(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer()  # never answers
    start = trio.current_time()
    request = ElicitationRequest("Quick?", requested_schema=SCHEMA, timeout=2)
    handle = await rt.create_elicitation(request, peer=peer, tenant=ALICE)
    info = await rt.get_elicitation_status(handle.id, tenant=ALICE)
    assert info.deadline - start == pytest.approx(2)
    await trio.sleep(1.59)
    assert peer.notifications == []
    await trio.sleep(0.02)  # the warning: 20 % of the time left, as 60 s is of 300 s
    ((method, params),) = peer.notifications
    assert method == "notifications/message"
    assert params["data"]["remainingSeconds"] == 1
    assert await handle.outcome() == TimedOut()
    assert trio.current_time() - start == pytest.approx(2)


async def test_a_request_timeout_is_clamped_to_the_policy_deadline(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer()
    start = trio.current_time()
    request = ElicitationRequest("Slow?", requested_schema=SCHEMA, timeout=10_000)
    handle = await rt.create_elicitation(request, peer=peer, tenant=ALICE)
    assert await handle.outcome() == TimedOut()
    assert trio.current_time() - start == pytest.approx(300)
    assert peer.notifications[0][1]["data"]["remainingSeconds"] == 60


async def test_a_tasks_question_has_the_task_policys_deadline_and_warning(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer()
    start = trio.current_time()
    handle = await rt.create_elicitation(form(), peer=peer, tenant=ALICE, for_task=True)
    assert await handle.outcome() == TimedOut()
    assert trio.current_time() - start == pytest.approx(4 * 3600)  # not the call's 300 s
    assert peer.notifications[0][1]["data"]["remainingSeconds"] == 900
    start = trio.current_time()
    clamped = ElicitationRequest("Slow?", requested_schema=SCHEMA, timeout=10 * 3600)
    handle = await rt.create_elicitation(clamped, peer=peer, tenant=ALICE, for_task=True)
    assert await handle.outcome() == TimedOut()
    assert trio.current_time() - start == pytest.approx(4 * 3600)  # clamped to the task's


async def test_a_request_timeout_is_extended_as_the_policy_deadline_is(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer()
    start = trio.current_time()
    request = ElicitationRequest("Quick?", requested_schema=SCHEMA, timeout=10)
    handle = await rt.create_elicitation(request, peer=peer, tenant=ALICE)
    await peer.wait_request()
    info = await rt.extend_timeout(handle.id, tenant=ALICE, seconds=5)
    assert info.deadline - start == pytest.approx(15)
    assert await handle.outcome() == TimedOut()
    assert trio.current_time() - start == pytest.approx(15)
    await trio.testing.wait_all_tasks_blocked()
    (warning, _cancelled) = peer.notifications
    assert warning[1]["data"]["remainingSeconds"] == 2  # 2 s before: 20 % of 10 s


async def test_ask_takes_a_timeout_with_a_message_text(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    start = trio.current_time()
    assert await rt.ask("Ok?", bool, peer=MemoryPeer(), tenant=ALICE, timeout=3) == TimedOut()
    assert trio.current_time() - start == pytest.approx(3)
    with pytest.raises(TypeError, match="only with a message text"):
        await rt.ask(form(), peer=MemoryPeer(), tenant=ALICE, timeout=3)


@pytest.mark.parametrize("bad", [0, -2, float("nan"), float("inf")])
def test_a_request_timeout_must_be_positive_and_finite(bad: float) -> None:
    with pytest.raises(ValueError, match=r"ElicitationRequest\.timeout must be a positive, finite"):
        ElicitationRequest("Quick?", requested_schema=SCHEMA, timeout=bad)
    with pytest.raises(TypeError, match=r"ElicitationRequest\.timeout must be a number"):
        ElicitationRequest("Quick?", requested_schema=SCHEMA, timeout="2")  # type: ignore[arg-type]


class StuckPeer(MemoryPeer):
    """A client whose transport never takes the request (its pipe is full)."""

    async def send_request(self, method: str, params: Any, **kwargs: Any) -> None:
        await trio.sleep_forever()


async def test_a_send_stuck_in_the_transport_still_times_out_on_time(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = StuckPeer()
    start = trio.current_time()
    handle = await rt.create_elicitation(form(), peer=peer, tenant=ALICE)
    with trio.fail_after(1000):  # a lost deadline fails here instead of hanging the suite
        assert await handle.outcome() == TimedOut()
    assert trio.current_time() - start == pytest.approx(300)
    await trio.testing.wait_all_tasks_blocked()
    # The deadline cancelled the stuck send: the child is gone and holds nothing.
    assert rt.metrics()["pending"] == 0
    children = [t.name for t in rt.actor("elicitation")._shared.actor.nursery.child_tasks]
    assert not [name for name in children if name.endswith(".child")], children


async def test_extensions_are_bounded_and_rearm_the_warning(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer()
    start = trio.current_time()
    handle = await rt.create_elicitation(form(), peer=peer, tenant=ALICE)
    await peer.wait_request()
    info = await rt.extend_timeout(handle.id, tenant=ALICE)
    assert info.deadline - start == pytest.approx(600)
    info = await rt.extend_timeout(handle.id, tenant=ALICE, seconds=10_000)  # clamped to 300
    assert info.deadline - start == pytest.approx(900)
    with pytest.raises(ExtensionDenied) as denied:
        await rt.extend_timeout(handle.id, tenant=ALICE)
    assert denied.value.reason == "max_extensions"
    assert await handle.outcome() == TimedOut()
    assert trio.current_time() - start == pytest.approx(900)
    warnings = [n for n in peer.notifications if n[0] == "notifications/message"]
    assert len(warnings) == 1  # one warning for the final deadline (earlier ones were re-armed)


async def test_owner_exit_abandons_and_tells_client(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer()
    handles = []

    async def tool(task_status: trio.TaskStatus[None]) -> None:
        for _ in range(5):
            handles.append(await rt.create_elicitation(form(), peer=peer, tenant=ALICE))
        task_status.started()
        await trio.sleep_forever()

    async with trio.open_nursery() as nursery:
        await nursery.start(tool)
        await peer.wait_request(5)
        nursery.cancel_scope.cancel()  # the tool invocation (owner) goes away
    await trio.testing.wait_all_tasks_blocked()
    for handle in handles:
        outcome = await handle.outcome()
        assert outcome == Failed("abandoned")
        assert (await rt.get_elicitation_status(handle.id, tenant=ALICE)).status == "abandoned"
    cancelled = [n for n in peer.notifications if n[0] == "notifications/cancelled"]
    assert len(cancelled) == 5


async def test_owner_argument_and_one_watch_per_owner(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer()
    async with trio.open_nursery() as nursery:

        async def owner(*, task_status: trio.TaskStatus[trio.lowlevel.Task]) -> None:
            task_status.started(trio.lowlevel.current_task())
            await trio.sleep_forever()

        owner_task = await nursery.start(owner)
        handles = [
            await rt.create_elicitation(form(), peer=peer, tenant=ALICE, owner=owner_task)
            for _ in range(50)
        ]
        await trio.testing.wait_all_tasks_blocked()
        hub = rt.actor("elicitation")._shared.actor.hub  # type: ignore[union-attr]
        assert hub.watched_tasks() == 1
        assert hub.subscriber_count(owner_task) == 50
        await rt.cancel_elicitation(handles[0].id, tenant=ALICE)
        assert hub.subscriber_count(owner_task) == 49  # terminal: unsubscribed
        nursery.cancel_scope.cancel()
    assert {await h.outcome() for h in handles[1:]} == {Failed("abandoned")}


async def test_server_cancel(rt: Runtime, autojump_clock: trio.testing.MockClock) -> None:
    peer = MemoryPeer()
    handle = await rt.create_elicitation(form(), peer=peer, tenant=ALICE)
    request = await peer.wait_request()
    info = await rt.cancel_elicitation(handle.id, tenant=ALICE)
    assert info.status == "cancelled"
    assert await handle.outcome() == Cancelled(by="server")
    await trio.testing.wait_all_tasks_blocked()
    assert (
        "notifications/cancelled",
        {"requestId": request.id, "reason": "elicitation cancelled"},
    ) in peer.notifications
    with pytest.raises(AlreadyTerminal) as err:
        await rt.cancel_elicitation(handle.id, tenant=ALICE)
    assert err.value.status == "cancelled"


async def test_other_tenant_id_is_indistinguishable_from_unknown(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer()
    handle = await rt.create_elicitation(form(), peer=peer, tenant=ALICE)
    for call in (
        lambda t, i: rt.get_elicitation_status(i, tenant=t),
        lambda t, i: rt.cancel_elicitation(i, tenant=t),
        lambda t, i: rt.extend_timeout(i, tenant=t),
        lambda t, i: rt.complete_elicitation(i, {"name": "x"}, tenant=t),
    ):
        with pytest.raises(ElicitationNotFound) as foreign:
            await call(BOB, handle.id)
        with pytest.raises(ElicitationNotFound) as unknown:
            await call(BOB, "no-such-id")
        assert str(foreign.value) == str(unknown.value)
    assert await rt.list_elicitations(tenant=BOB) == []
    assert [i.id for i in await rt.list_elicitations(tenant=ALICE)] == [handle.id]
    await peer.wait_request()  # (the calls above may all have run before the send)
    assert (await rt.get_elicitation_status(handle.id, tenant=ALICE)).status == "active"


async def test_only_the_current_request_can_answer(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer()
    handle = await rt.create_elicitation(form(), peer=peer, tenant=ALICE)
    first = await peer.wait_request()
    pending_first = peer.pending[first.id]
    peer.answer(first.id, {"action": "accept", "content": {"name": 1}})  # invalid: re-prompt
    second = await peer.wait_request(2)
    pending_first.on_response({"action": "accept", "content": {"name": "stale"}})  # old attempt
    await trio.testing.wait_all_tasks_blocked()
    with pytest.raises(trio.WouldBlock):
        handle.outcome_nowait()
    peer.answer(second.id, {"action": "accept", "content": {"name": "Ada"}})
    assert peer.answer(second.id, {"action": "decline"}) is False  # duplicate dropped
    assert await handle.outcome() == Accepted({"name": "Ada", "age": 30})


@pytest.mark.parametrize(
    ("reply", "detail"),
    [
        ({"action": "maybe"}, "invalid response"),
        ({"content": {}}, "invalid response"),
        (PeerError(-32601, "Method not found"), "client error -32601"),
    ],
)
async def test_garbage_or_error_answer_fails_transport(
    rt: Runtime, reply: Any, detail: str
) -> None:
    peer = MemoryPeer(auto=lambda r: reply)
    handle = await rt.create_elicitation(form(), peer=peer, tenant=ALICE)
    outcome = await handle.outcome()
    assert isinstance(outcome, Failed)
    assert outcome.reason == "transport"
    assert detail in outcome.detail


async def test_an_answer_too_large_to_read_fails_at_once(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer()
    handle = await rt.create_elicitation(form(), peer=peer, tenant=ALICE)
    request = await peer.wait_request()
    start = trio.current_time()
    peer.answer(request.id, AnswerTooLarge(5_000_000, 1 << 20))
    outcome = await handle.outcome()
    assert outcome == Failed(
        "answer_too_large", "answer of at least 5000000 bytes > frame limit 1048576"
    )
    assert trio.current_time() == start  # at once, not at the deadline
    info = await rt.get_elicitation_status(handle.id, tenant=ALICE)
    assert info.status == "failed"


async def test_client_disconnect_fails_transport(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer()
    handle = await rt.create_elicitation(form(), peer=peer, tenant=ALICE)
    await peer.wait_request()
    peer.disconnect()
    assert await handle.outcome() == Failed("transport", "client gone")
    gone_before_send = await rt.create_elicitation(form(), peer=peer, tenant=ALICE)
    assert await gone_before_send.outcome() == Failed("transport", "client gone")


async def test_unsupported_when_capability_missing(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer(modes=frozenset({"form"}))
    handle = await rt.create_elicitation(
        ElicitationRequest("Sign in", mode="url", url="https://example.com/login"),
        peer=peer,
        tenant=ALICE,
    )
    assert await handle.outcome() == Unsupported("url")
    assert peer.requests == []
    assert rt.metrics()["outcomes"]["Unsupported"] == {"url": 1}


async def test_size_and_schema_limits(rt: Runtime, autojump_clock: trio.testing.MockClock) -> None:
    peer = MemoryPeer()
    with pytest.raises(RequestTooLarge) as big:
        await rt.create_elicitation(form("x" * (16 * 1024 + 1)), peer=peer, tenant=ALICE)
    assert (big.value.part, big.value.limit) == ("message", 16 * 1024)
    nested = {"type": "object", "properties": {"a": {"type": "object", "properties": {}}}}
    with pytest.raises(SchemaNotAllowed):
        await rt.create_elicitation(form(schema=nested), peer=peer, tenant=ALICE)
    assert peer.requests == []  # refused before anything was sent


async def test_oversize_answer_is_reprompted_never_accepted(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_runtime({"answer_bytes": 1000, "max_reprompts": 0}) as rt:
        peer = MemoryPeer(auto=lambda r: {"action": "accept", "content": {"name": "x" * 2000}})
        handle = await rt.create_elicitation(form(), peer=peer, tenant=ALICE)
        outcome = await handle.outcome()
        assert isinstance(outcome, Failed)
        assert outcome.reason == "validation"


async def test_rate_limit_and_pending_cap(autojump_clock: trio.testing.MockClock) -> None:
    async with open_runtime({"rate": 3, "rate_window_s": 60, "max_pending_per_client": 2}) as rt:
        peer = MemoryPeer()
        await rt.create_elicitation(form(), peer=peer, tenant=ALICE)
        h2 = await rt.create_elicitation(form(), peer=peer, tenant=ALICE)
        with pytest.raises(TooManyElicitations):
            await rt.create_elicitation(form(), peer=peer, tenant=ALICE)
        await rt.cancel_elicitation(h2.id, tenant=ALICE)
        await trio.testing.wait_all_tasks_blocked()  # the slot is released
        await rt.create_elicitation(form(), peer=peer, tenant=ALICE)
        other = MemoryPeer(peer_id="other")  # limits are per client
        await rt.create_elicitation(form(), peer=other, tenant=ALICE)
        # Rate: 3 per 60 s for "memory-peer" are used up (the refused one spent nothing).
        await rt.cancel_elicitation((await rt.list_elicitations(tenant=ALICE))[0].id, tenant=ALICE)
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(RateLimited) as limited:
            await rt.create_elicitation(form(), peer=peer, tenant=ALICE)
        assert 0 < limited.value.retry_after <= 20.001
        await trio.sleep(limited.value.retry_after)
        await rt.create_elicitation(form(), peer=peer, tenant=ALICE)
        assert rt.metrics()["refused"] == {"client_pending": 1, "rate": 1}


async def test_url_mode_consent_then_application_completes(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer(auto=lambda r: {"action": "accept"})
    handle = await rt.create_elicitation(
        ElicitationRequest("Sign in to continue", mode="url", url="https://example.com/login"),
        peer=peer,
        tenant=ALICE,
    )
    request = await peer.wait_request()
    assert request.params == {
        "mode": "url",
        "message": "Sign in to continue",
        "url": "https://example.com/login",
        "elicitationId": handle.id,
    }
    await trio.testing.wait_all_tasks_blocked()
    assert (await rt.get_elicitation_status(handle.id, tenant=ALICE)).status == "active"
    await rt.complete_elicitation(handle.id, {"signed_in": True}, tenant=ALICE)
    assert await handle.outcome() == Accepted({"signed_in": True})
    await trio.testing.wait_all_tasks_blocked()
    assert peer.notifications == [
        ("notifications/elicitation/complete", {"elicitationId": handle.id})
    ]


@pytest.mark.parametrize("content", [["s3cr3t", "list"], "s3cr3t text", 7, True])
async def test_url_mode_completion_with_a_non_object_says_what_is_wrong(
    rt: Runtime, autojump_clock: trio.testing.MockClock, content: object
) -> None:
    peer = MemoryPeer(auto=lambda r: {"action": "accept"})
    handle = await rt.create_elicitation(
        ElicitationRequest("Sign in", mode="url", url="https://example.com/login"),
        peer=peer,
        tenant=ALICE,
    )
    await peer.wait_request()
    with pytest.raises(InvalidAnswer) as refused:
        await rt.complete_elicitation(handle.id, content, tenant=ALICE)  # type: ignore[arg-type]
    message = str(refused.value)
    assert "valid" not in message.replace("invalid", "")
    assert "must be an object" in message
    assert [e.constraint for e in refused.value.errors] == ["type"]  # type: ignore[attr-defined]
    assert "s3cr3t" not in message
    info = await rt.complete_elicitation(handle.id, {"signed_in": True}, tenant=ALICE)
    assert info.status == "completed"


async def test_the_url_policy_given_to_the_runtime_is_the_one_it_applies(
    autojump_clock: trio.testing.MockClock,
) -> None:
    idn = "https://bücher.example/login"
    async with open_runtime(resolver=public_resolver) as strict:
        with pytest.raises(UnsafeURLError) as refused:
            await strict.create_elicitation(
                ElicitationRequest("go", mode="url", url=idn), peer=MemoryPeer(), tenant=ALICE
            )
        assert refused.value.reason == "idn"
    marking = UrlPolicy(idn="mark")
    async with open_runtime(resolver=public_resolver, url_policy=marking) as rt:
        assert rt.url_policy is marking
        peer = MemoryPeer()
        await rt.create_elicitation(
            ElicitationRequest("go", mode="url", url=idn), peer=peer, tenant=ALICE
        )
        request = await peer.wait_request()
        assert request.params["url"] == "https://xn--bcher-kva.example/login"


async def test_url_mode_refuses_unsafe_urls(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer()
    for url in ("http://example.com/", "https://127.0.0.1/", "https://user@example.com/"):
        with pytest.raises(UnsafeURLError):
            await rt.create_elicitation(
                ElicitationRequest("go", mode="url", url=url), peer=peer, tenant=ALICE
            )
    assert peer.requests == []


async def test_a_schema_over_schema_bytes_is_refused_at_create(
    autojump_clock: trio.testing.MockClock,
) -> None:
    hidden = "S3CRET-TITLE"
    wide = {
        "type": "object",
        "properties": {
            f"f{i}": {"type": "string", "title": f"{hidden} {'x' * 80}"} for i in range(60)
        },
    }
    fields: dict[str, Any] = {
        f"f{i}": (str, pydantic.Field(title=f"{hidden} {'x' * 80}")) for i in range(60)
    }
    model = pydantic.create_model("Wide", **fields)
    async with open_runtime({"schema_bytes": 1000}) as rt:
        peer = MemoryPeer()
        with pytest.raises(RequestTooLarge) as by_request:
            await rt.create_elicitation(form(schema=wide), peer=peer, tenant=ALICE)
        with pytest.raises(RequestTooLarge) as by_type:
            await rt.ask("Fill this in", model, peer=peer, tenant=ALICE)
        for refused in (by_request.value, by_type.value):
            assert (refused.part, refused.limit) == ("requestedSchema", 1000)
            assert refused.size > 6000
            assert str(refused) == f"requestedSchema too large: {refused.size} bytes > 1000 bytes"
            assert hidden not in str(refused)
        assert peer.requests == []
        assert await rt.list_elicitations(tenant=ALICE) == []
        # a schema within the limit is asked
        await rt.create_elicitation(form(), peer=peer, tenant=ALICE)
        assert len(await rt.list_elicitations(tenant=ALICE)) == 1


async def test_a_schema_over_schema_bytes_is_refused_for_its_size_allowed_or_not(
    autojump_clock: trio.testing.MockClock,
) -> None:
    peer = MemoryPeer()
    patterned = {"type": "string", "pattern": "x" * 80}  # outside the MCP subset
    wide_and_refused = {"type": "object", "properties": {f"f{i}": patterned for i in range(20)}}
    narrow_and_refused = {"type": "object", "properties": {"a": {"type": "string", "pattern": "x"}}}
    async with open_runtime({"schema_bytes": 1000}) as rt:
        with pytest.raises(RequestTooLarge) as refused:
            await rt.create_elicitation(form(schema=wide_and_refused), peer=peer, tenant=ALICE)
        assert (refused.value.part, refused.value.limit) == ("requestedSchema", 1000)
        with pytest.raises(SchemaNotAllowed) as not_allowed:
            await rt.create_elicitation(form(schema=narrow_and_refused), peer=peer, tenant=ALICE)
        assert not_allowed.value.keyword == "pattern"
    huge = {"type": "string", "description": "x" * (70 << 10)}
    async with open_runtime() as rt:  # the policy's 64 KiB, the MCP subset's own size limit
        with pytest.raises(RequestTooLarge) as too_large:
            await rt.create_elicitation(
                form(schema={"type": "object", "properties": {"a": huge}}), peer=peer, tenant=ALICE
            )
        assert too_large.value.limit == 64 << 10
    assert peer.requests == []


async def test_complete_validates_and_checks_size(autojump_clock: trio.testing.MockClock) -> None:
    async with open_runtime({"answer_bytes": 100}) as rt:
        peer = MemoryPeer()
        handle = await rt.create_elicitation(form(), peer=peer, tenant=ALICE)
        await peer.wait_request()
        with pytest.raises(InvalidAnswer):
            await rt.complete_elicitation(handle.id, {"name": 5}, tenant=ALICE)
        with pytest.raises(ResultTooLarge):
            await rt.complete_elicitation(handle.id, {"name": "x" * 200}, tenant=ALICE)
        info = await rt.complete_elicitation(handle.id, {"name": "Ada"}, tenant=ALICE)
        assert info.status == "completed"
        assert await handle.outcome() == Accepted({"name": "Ada", "age": 30})
        with pytest.raises(AlreadyTerminal):
            await rt.complete_elicitation(handle.id, {"name": "Ada"}, tenant=ALICE)
        await trio.testing.wait_all_tasks_blocked()
        assert [n[0] for n in peer.notifications] == ["notifications/cancelled"]


async def test_completion_racing_the_first_send(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer()  # the send takes a turn: the completion may overtake it
    handle = await rt.create_elicitation(form(), peer=peer, tenant=ALICE)
    assert peer.requests == []
    info = await rt.complete_elicitation(handle.id, {"name": "Ada"}, tenant=ALICE)
    assert info.status == "completed"
    assert await handle.outcome() == Accepted({"name": "Ada", "age": 30})
    await trio.testing.wait_all_tasks_blocked()
    # Whichever ran first (trio may run the child's first turn before or after us), the
    # client never keeps a form for an ended elicitation: either it was never sent, or it
    # is withdrawn right after it.
    if peer.requests:
        (request,) = peer.requests
        assert peer.notifications == [
            (
                "notifications/cancelled",
                {"requestId": request.id, "reason": "elicitation completed"},
            )
        ]
    else:
        assert peer.notifications == []


@pytest.mark.parametrize("victim", ["ratelimiter", "validator", "elicitation"])
async def test_actor_crash_fails_waiters_and_runtime_recovers(
    rt: Runtime, autojump_clock: trio.testing.MockClock, victim: str
) -> None:
    peer = MemoryPeer()
    handles = [await rt.create_elicitation(form(), peer=peer, tenant=ALICE) for _ in range(10)]
    await peer.wait_request(10)
    rt.actor(victim).cast("crash!")  # no handle_cast: the actor crashes
    for handle in handles:
        assert await handle.outcome() == Failed("runtime_restarted")
    # rest_for_one restarted the elicitation actor; the runtime serves again.
    peer.auto = lambda r: {"action": "accept", "content": {"name": "again"}}
    handle = await rt.create_elicitation(form(), peer=peer, tenant=ALICE)
    assert await handle.outcome() == Accepted({"name": "again", "age": 30})
    metrics = rt.metrics()
    assert metrics["pending"] == 0
    assert metrics["outcomes"]["Failed"] == {"form": 10}


async def test_retention_is_bounded_by_count_and_age(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_runtime({"retention_max_records": 3, "retention_max_age_s": 100}) as rt:
        peer = MemoryPeer(auto=lambda r: {"action": "decline"})
        ids = []
        for _ in range(5):
            handle = await rt.create_elicitation(form(), peer=peer, tenant=ALICE)
            await handle.outcome()
            ids.append(handle.id)
        kept = [i.id for i in await rt.list_elicitations(tenant=ALICE)]
        assert kept == ids[2:]
        with pytest.raises(ElicitationNotFound):
            await rt.get_elicitation_status(ids[0], tenant=ALICE)
        await trio.sleep(101)
        assert await rt.list_elicitations(tenant=ALICE) == []


async def test_ids_are_random_url_safe_128_bit(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer()
    ids = set()
    for i in range(600):  # more than one 4 KiB pool of random bytes (256 ids)
        handle = await rt.create_elicitation(
            form(), peer=peer, tenant=ALICE, client_id=f"c{i % 10}"
        )
        ids.add(handle.id)
    assert len(ids) == 600
    for elicitation_id in ids:
        assert len(elicitation_id) == 22  # 16 bytes, base64url without padding
        assert set(elicitation_id) <= set(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
        )


async def test_logs_carry_ids_and_never_content(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    secret = "hunter2-super-secret"
    peer = MemoryPeer(auto=lambda r: {"action": "accept", "content": {"name": secret}})
    with structlog.testing.capture_logs() as events:
        handle = await rt.create_elicitation(form(), peer=peer, tenant=ALICE)
        await handle.outcome()
    names = [e["event"] for e in events if e.get("elicitation_id") == handle.id]
    assert names[0] == "created"
    assert {"sent", "answered", "outcome"} <= set(names)
    for event in events:
        if event.get("elicitation_id") == handle.id:
            assert event["user"] == "alice"
            assert event["client"] == "memory-peer"
        assert secret not in repr(event)


async def test_metrics_add_up(rt: Runtime, autojump_clock: trio.testing.MockClock) -> None:
    replies = iter(
        [
            {"action": "decline"},
            {"action": "cancel"},
            {"action": "accept", "content": {"name": "x"}},
        ]
    )
    peer = MemoryPeer(auto=lambda r: next(replies))
    for _ in range(3):
        await (await rt.create_elicitation(form(), peer=peer, tenant=ALICE)).outcome()
    never = MemoryPeer(peer_id="slow")
    pending = await rt.create_elicitation(form(), peer=never, tenant=ALICE)
    await never.wait_request()
    m = rt.metrics()
    assert m["created"] == {"form": 4}
    assert m["outcomes"] == {
        "Accepted": {"form": 1},
        "Cancelled": {"form": 1},
        "Declined": {"form": 1},
    }
    assert m["pending"] == 1
    assert m["human_latency_s"]["count"] == 3
    await rt.cancel_elicitation(pending.id, tenant=ALICE)
    assert rt.metrics()["pending"] == 0


async def test_invalid_config_fails_at_start_with_field_name() -> None:
    with pytest.raises(pydantic.ValidationError, match="form_deadline_s"):
        async with open_runtime({"form_deadline_s": -1}):
            pass
    with pytest.raises(pydantic.ValidationError, match="no_such_option"):
        async with open_runtime({"no_such_option": 1}):
            pass
    with pytest.raises(pydantic.ValidationError, match="retention_max_records"):
        async with open_runtime({"retention_max_records": 0}):
            pass


async def test_runtime_leaves_no_tasks(autojump_clock: trio.testing.MockClock) -> None:
    baseline = count_tasks()
    async with open_runtime({"rate": 100}) as rt:
        peer = MemoryPeer()
        handles = [await rt.create_elicitation(form(), peer=peer, tenant=ALICE) for _ in range(20)]
    for handle in handles:
        assert await handle.outcome() == Failed("runtime_restarted")  # shutdown resolves them
    assert count_tasks() == baseline


async def test_url_fields_are_resolved_and_refused_when_any_address_is_private(
    autojump_clock: trio.testing.MockClock,
) -> None:
    from erlmcp_py.core.forms import compile_form

    async def split_horizon(host: str) -> list[str]:
        await trio.lowlevel.checkpoint()
        return (
            ["93.184.215.14", "10.1.2.3"] if host == "hooks.intranet.example" else ["93.184.215.14"]
        )

    webhook_form = compile_form(
        {
            "id": "hook",
            "title": "Where should we post?",
            "fields": [
                {"id": "webhook_url", "type": "url", "label": "Webhook URL", "required": True}
            ],
        },
        "2025-11-25",
    )
    assert webhook_form.requested_schema is not None
    answers = iter(
        [
            {"webhook_url": "https://hooks.intranet.example/x"},  # parses fine, resolves private
            {"webhook_url": "https://api.example.com/hook"},
        ]
    )
    async with open_runtime(resolver=split_horizon) as rt:
        peer = MemoryPeer(auto=lambda r: {"action": "accept", "content": next(answers)})
        request = ElicitationRequest(
            "Webhook?", requested_schema=webhook_form.requested_schema, validator=webhook_form
        )
        handle = await rt.create_elicitation(request, peer=peer, tenant=ALICE)
        assert await handle.outcome() == Accepted({"webhook_url": "https://api.example.com/hook"})
        reprompt = peer.requests[1].params["message"]
        assert "webhook_url" in reprompt
        assert "private" in reprompt
        assert "intranet" not in reprompt  # the refused value is never echoed


# -- Runtime.ask: create + wait, the caller owns the elicitation -----------------------------


def hub_of(rt: Runtime) -> Any:
    return rt.actor("elicitation")._shared.actor.hub  # read-only inspection


async def test_ask_watches_its_waiting_owner(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer()
    watched_while_waiting: list[int] = []

    async def look() -> None:
        await peer.wait_request()
        watched_while_waiting.append(hub_of(rt).watched_tasks())
        peer.answer(peer.last().id, {"action": "accept", "content": {"name": "Ada"}})

    async with trio.open_nursery() as nursery:
        nursery.start_soon(look)
        outcome = await rt.ask(form(), peer=peer, tenant=ALICE)
    assert outcome == Accepted({"name": "Ada", "age": 30})
    assert watched_while_waiting == [1]  # the asking task is watched


async def test_ask_owner_cancelled_while_waiting_abandons_and_tells_client(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer()

    async def tool() -> None:
        await rt.ask(form(), peer=peer, tenant=ALICE)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(tool)
        request = await peer.wait_request()
        nursery.cancel_scope.cancel()  # the tool invocation goes away mid-question
    await trio.testing.wait_all_tasks_blocked()
    handle_id = request.id.rsplit(".", 1)[0]
    assert (await rt.get_elicitation_status(handle_id, tenant=ALICE)).status == "abandoned"
    assert peer.notifications == [
        ("notifications/cancelled", {"requestId": request.id, "reason": "elicitation abandoned"})
    ]
    assert hub_of(rt).watched_tasks() == 0  # the watch fired and went


async def test_ask_owner_that_survives_its_cancellation_keeps_the_elicitation(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer()
    handle_id: list[str] = []

    async def tool(task_status: trio.TaskStatus[None]) -> None:
        with trio.move_on_after(5):  # the tool gives up waiting, but lives on
            await rt.ask(form(), peer=peer, tenant=ALICE)
        handle_id.append(peer.last().id.rsplit(".", 1)[0])
        task_status.started()
        await trio.sleep_forever()

    async with trio.open_nursery() as nursery:
        await nursery.start(tool)
        info = await rt.get_elicitation_status(handle_id[0], tenant=ALICE)
        assert info.status == "active"  # its owner is alive: still open
        nursery.cancel_scope.cancel()  # now the owner exits
    await trio.testing.wait_all_tasks_blocked()
    info = await rt.get_elicitation_status(handle_id[0], tenant=ALICE)
    assert info.status == "abandoned"


async def test_runtime_stop_tells_the_client_before_it_wakes_the_waiter(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # A woken tool answers its call at once; on Streamable HTTP that closes the stream the
    # notice must travel on. So the notice has gone out when the waiter sees its outcome.
    peer = MemoryPeer()
    seen: list[tuple[Any, list[Any]]] = []
    async with trio.open_nursery() as nursery, open_runtime({"rate": 1000}) as rt:
        handle = await rt.create_elicitation(form(), peer=peer, tenant=ALICE)
        request = await peer.wait_request()

        async def waiter() -> None:
            outcome = await handle.outcome()
            seen.append((outcome, list(peer.notifications)))

        nursery.start_soon(waiter)
        await trio.testing.wait_all_tasks_blocked()
    ((outcome, notices),) = seen
    assert outcome == Failed("runtime_restarted")
    assert notices == [
        (
            "notifications/cancelled",
            {"requestId": request.id, "reason": "elicitation failed (runtime_restarted)"},
        )
    ]


# -- ask is create_elicitation + outcome() -----------------------------------------------------

Ask = Callable[[Runtime, ElicitationRequest, MemoryPeer], Awaitable[Outcome]]


async def via_ask(rt: Runtime, request: ElicitationRequest, peer: MemoryPeer) -> Outcome:
    return await rt.ask(request, peer=peer, tenant=ALICE)


async def via_handle(rt: Runtime, request: ElicitationRequest, peer: MemoryPeer) -> Outcome:
    handle = await rt.create_elicitation(request, peer=peer, tenant=ALICE)
    return await handle.outcome()


def answer(content: Any) -> Callable[[Any], Any]:
    return lambda r: {"action": "accept", "content": content}


SCENARIOS: dict[str, dict[str, Any]] = {
    "accept": {"auto": answer({"name": "Ada"})},
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
    peer = MemoryPeer(auto=scenario["auto"])
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
async def test_ask_is_a_checkpoint_for_a_cancelled_caller_as_create_is(
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


# -- the registry's live count -----------------------------------------------------------------


def _check(actor: Any) -> None:
    assert isinstance(actor, ElicitationActor)
    assert actor.live == sum(
        isinstance(r, Record) and r.outcome is None for r in actor.records.values()
    )


@pytest.mark.parametrize("max_records", [1, 3, 100])
async def test_live_counts_the_records_that_have_not_ended(
    autojump_clock: trio.testing.MockClock, max_records: int
) -> None:
    config = {"rate": 1000, "retention_max_records": max_records, "retention_max_age_s": 50.0}
    async with open_runtime(config) as rt:
        peer = MemoryPeer()
        handles = []
        for i in range(8):
            handles.append(
                await rt.create_elicitation(
                    ElicitationRequest(f"q{i}", requested_schema=SCHEMA), peer=peer, tenant=ALICE
                )
            )
            actor = rt.actor("elicitation")._shared.actor
            _check(actor)
        assert actor.live == 8
        peer.answer(peer.requests[0].id, {"action": "accept", "content": {"name": "A"}})
        peer.answer(peer.requests[1].id, {"action": "decline"})
        await rt.cancel_elicitation(handles[2].id, tenant=ALICE)
        await trio.testing.wait_all_tasks_blocked()
        _check(actor)
        assert actor.live == 5
        await trio.sleep(60)  # the first endings age out of the retention (and the registry)
        await rt.list_elicitations(tenant=ALICE)  # an API call evicts what has aged
        _check(actor)
        peer.answer(peer.requests[3].id, {"action": "cancel"})
        await trio.sleep(400)  # the rest time out
        _check(actor)
        assert actor.live == 0
        assert len(actor.records) == len(actor.retention) <= max_records


# -- asking with a type, from a peer that is not an MCP client ---------------------------------


class Region(pydantic.BaseModel):
    region: Literal["eu", "us"]
    replicas: int = 1


async def test_ask_with_a_type_returns_an_instance_of_it(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer(auto=lambda r: {"action": "accept", "content": {"region": "eu"}})
    outcome = await rt.ask("Pick a region", Region, peer=peer, tenant=ALICE)
    assert outcome == Accepted(Region(region="eu", replicas=1))
    schema = peer.requests[0].params["requestedSchema"]
    assert schema["properties"]["region"]["enum"] == ["eu", "us"]
    failed = await rt.ask("Replicate?", bool, peer=peer, tenant=ALICE)  # a region is no bool
    assert isinstance(failed, Failed)
    assert failed.reason == "validation"
    peer.auto = lambda r: {"action": "decline"}
    assert await rt.ask("Pick a region", Region, peer=peer, tenant=ALICE) == Declined()


class Account(pydantic.BaseModel):
    """A model with a rule of its own: one name is reserved."""

    username: str

    @pydantic.field_validator("username")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        if value == "admin":
            raise ValueError("the name admin is reserved")
        return value


async def test_ask_reprompts_with_the_model_validators_message_then_gives_the_instance(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    names = iter(["admin", "ada"])
    peer = MemoryPeer(auto=lambda r: {"action": "accept", "content": {"username": next(names)}})
    outcome = await rt.ask("Pick a user name", Account, peer=peer, tenant=ALICE)
    assert outcome == Accepted(Account(username="ada"))
    reprompt = peer.requests[1].params["message"]
    assert "username: the name admin is reserved." in reprompt
    info = (await rt.list_elicitations(tenant=ALICE))[0]
    assert (info.status, info.reprompts_used) == ("completed", 1)


async def test_a_form_type_as_a_requests_validator_gives_the_instance(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    account = schema_for(Account)
    request = ElicitationRequest(
        "Pick a user name", requested_schema=account.schema, validator=account
    )
    peer = MemoryPeer(auto=lambda r: {"action": "accept", "content": {"username": "ada"}})
    handle = await rt.create_elicitation(request, peer=peer, tenant=ALICE)
    assert await handle.outcome() == Accepted(Account(username="ada"))


async def test_an_application_completion_refused_by_the_model_is_invalid_answer(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    account = schema_for(Account)
    request = ElicitationRequest(
        "Sign up", mode="url", url="https://93.184.216.34/signup", validator=account
    )
    peer = MemoryPeer()
    handle = await rt.create_elicitation(request, peer=peer, tenant=ALICE)
    with pytest.raises(InvalidAnswer) as refused:
        await rt.complete_elicitation(handle.id, {"username": "admin"}, tenant=ALICE)
    (error,) = refused.value.errors
    assert (error.field, error.path, error.constraint) == ("username", "/username", "model")
    assert error.message == "username: the name admin is reserved."
    await rt.complete_elicitation(handle.id, {"username": "ada"}, tenant=ALICE)
    assert await handle.outcome() == Accepted(Account(username="ada"))


async def test_ask_needs_a_type_with_a_message_and_none_with_a_request(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer()
    with pytest.raises(TypeError):
        await rt.ask("Pick a region", peer=peer, tenant=ALICE)
    with pytest.raises(TypeError):
        await rt.ask(form(), Region, peer=peer, tenant=ALICE)
    assert peer.requests == []


class PlainPeer:
    """A peer of an application that does not speak MCP: no protocol version at all."""

    peer_id = "plain"

    def __init__(self) -> None:
        self.inner = MemoryPeer(auto=lambda r: {"action": "accept", "content": {"region": "us"}})

    def supports(self, mode: str) -> bool:
        return mode == "form"

    async def send_request(self, method: str, params: Any, **kwargs: Any) -> None:
        await self.inner.send_request(method, params, **kwargs)

    def forget_request(self, request_id: str) -> None:
        self.inner.forget_request(request_id)

    async def send_notification(self, method: str, params: Any) -> None:
        await self.inner.send_notification(method, params)


async def test_a_peer_without_a_protocol_version_gets_the_newest_schema_subset(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = PlainPeer()
    outcome = await rt.ask("Pick a region", Region, peer=peer, tenant=ALICE)  # type: ignore[arg-type]
    assert outcome == Accepted(Region(region="us"))
    with_default = {"type": "object", "properties": {"name": {"type": "string", "default": "x"}}}
    # A string default exists only in the newer subsets: taken from a peer without a version,
    # refused for a 2025-06-18 client.
    handle = await rt.create_elicitation(form(schema=with_default), peer=peer, tenant=ALICE)  # type: ignore[arg-type]
    assert handle.id
    old_client = MemoryPeer(protocol_version="2025-06-18")
    with pytest.raises(SchemaNotAllowed):
        await rt.create_elicitation(form(schema=with_default), peer=old_client, tenant=ALICE)


async def test_a_raw_schema_is_checked_at_create_and_a_checked_one_goes_out_as_it_is(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    plain = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    old_client = MemoryPeer(protocol_version="2025-06-18")
    await rt.create_elicitation(form(schema=plain), peer=old_client, tenant=ALICE)
    sent = (await old_client.wait_request()).params["requestedSchema"]
    assert (type(sent), sent.version, sent) == (RequestedSchema, "2025-06-18", plain)
    checked = RequestedSchema(plain, "2025-06-18")
    await rt.create_elicitation(form(schema=checked), peer=old_client, tenant=ALICE)
    assert (await old_client.wait_request(2)).params["requestedSchema"] is checked
    # checked for a wider subset than the client's: checked again for the client's version
    with pytest.raises(SchemaNotAllowed) as refused:
        await rt.create_elicitation(
            form(schema=RequestedSchema(SCHEMA)), peer=old_client, tenant=ALICE
        )
    assert (refused.value.path, refused.value.keyword) == ("/properties/age", "default")
    assert len(old_client.requests) == 2


@pytest.mark.parametrize(
    ("row", "raised"),
    [
        (None, StoreUnavailable),  # not listening yet, and no row: the caller tries again
        ({"status": "failed", "outcome": "Failed"}, AlreadyTerminal),  # its holder died
    ],
)
async def test_a_call_to_a_named_holder_that_does_not_answer_says_what_the_store_knows(
    rt: Runtime,
    autojump_clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
    row: dict[str, Any] | None,
    raised: type[Exception],
) -> None:
    forwarded: list[str] = []

    async def unreachable(replica: str, op: str, *args: Any) -> Any:
        forwarded.append(f"{op}@{replica}")
        raise StoreUnavailable("forward: the replica holding it is not reachable")

    async def find(elicitation_id: str, tenant: Tenant) -> StoreRecord | None:
        return None if row is None else StoreRecord(row, tenant, "r-other")

    monkeypatch.setattr(rt.store, "forward", unreachable)
    monkeypatch.setattr(rt.store, "find", find)
    with pytest.raises(raised):
        await rt.complete_elicitation("e-there", {"name": "x"}, tenant=ALICE, replica="r-other")
    with pytest.raises(raised):
        await rt.answer_elicitation("e-there", "decline", tenant=ALICE, replica="r-other")
    assert forwarded == ["complete@r-other", "answer@r-other"]  # sent there first, at once
