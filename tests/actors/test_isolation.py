"""Application code cannot crash a shared actor.

The runtime's actors are shared by every user: a custom validator, its ``url_values``, a
model's validator with a bug, the resolver, a peer's methods or a bad argument to the runtime
API run in (or reach) them. Each such fault ends only the elicitation or the call it belongs
to; the actors never restart, everybody else's questions go on, and the restart intensity is
never touched however often it happens. What the application raised is logged by its type,
never by its message (it may quote the answer).
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pydantic
import pytest
import trio
import trio.testing

from erlmcp_py import (
    Accepted,
    AnswerError,
    Declined,
    ElicitationRequest,
    Failed,
    Runtime,
    Tenant,
    ValidationResult,
    ValidatorError,
    open_runtime,
    schema_for,
)
from erlmcp_py.core.forms import compile_form
from erlmcp_py.testing import MemoryPeer
from tests.actors.test_runtime_chaos import collected_logs

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
SECRET = "hunter2-the-answer"  # what the user typed: never in a log


def accept(name: str = SECRET) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": name}}


class Raising:
    """A custom validator with a bug: it raises on any answer (quoting it, as bugs do)."""

    def __init__(self, error: type[Exception] = KeyError) -> None:
        self.error = error

    def validate(self, content: object) -> ValidationResult:
        raise self.error(f"cannot handle {content!r}")


class Returning:
    """A custom validator with a bug: it returns something that is not a verdict."""

    def __init__(self, result: Any) -> None:
        self.result = result

    def validate(self, content: object) -> Any:
        return self.result


class RaisingUrls:
    """A valid verdict, then a ``url_values`` hook with a bug."""

    def validate(self, content: object) -> ValidationResult:
        assert isinstance(content, Mapping)
        return ValidationResult(True, dict(content))

    def url_values(self, content: Mapping[str, Any]) -> list[tuple[str, str]]:
        raise RuntimeError(f"no urls in {content!r}")


class Grumpy(pydantic.BaseModel):
    """A model whose validator has a bug (a TypeError is no refusal: pydantic lets it out)."""

    name: str

    @pydantic.field_validator("name")
    @classmethod
    def _check(cls, value: str) -> str:
        raise TypeError(f"oops on {value}")


def ask(validator: Any = None) -> ElicitationRequest:
    return ElicitationRequest("Name?", requested_schema=SCHEMA, validator=validator)


@pytest.fixture
async def rt() -> AsyncIterator[Runtime]:
    # The default restart intensity (5 in 10 s): any crash would show in supervisor.restarts.
    async with open_runtime({"rate": 1000}) as runtime:
        yield runtime


def restarts(rt: Runtime) -> int:
    return sum(rt.supervisor.restarts.values())


async def test_five_healthy_users_and_one_raising_answer(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    with collected_logs(logging.INFO) as events:
        peers = [MemoryPeer(peer_id=f"user-{i}") for i in range(6)]
        handles = [
            await rt.create_elicitation(
                ask(Raising() if i == 5 else None), peer=peer, tenant=Tenant(peer.peer_id)
            )
            for i, peer in enumerate(peers)
        ]
        for peer in peers:
            await peer.wait_request()
        peers[5].answer(peers[5].last().id, accept())  # hits the bug first
        await trio.testing.wait_all_tasks_blocked()
        for i, peer in enumerate(peers[:5]):
            peer.answer(peer.last().id, accept(f"user {i}"))
        outcomes = [await handle.outcome() for handle in handles]
    assert outcomes[:5] == [Accepted({"name": f"user {i}"}) for i in range(5)]
    assert outcomes[5] == Failed("validator_error", "KeyError raised by the validator")
    assert restarts(rt) == 0
    (raised,) = [e for e in events if e["event"] == "validator_failed"]
    assert raised["elicitation_id"] == handles[5].id
    assert raised["error_type"] == "KeyError"
    raise_line = Raising.validate.__code__.co_firstlineno + 1
    assert raised["at"] == f"{__file__}:{raise_line}"
    assert raised["level"] == "warning"
    assert not [e for e in events if e["event"] == "actor_crashed"]
    assert SECRET not in repr(events)


async def test_twenty_raising_answers_in_a_burst_leave_the_runtime_up(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer(auto=lambda r: accept())
    handles = [
        await rt.create_elicitation(ask(Raising(ZeroDivisionError)), peer=peer, tenant=Tenant("a"))
        for _ in range(20)
    ]
    for handle in handles:
        assert await handle.outcome() == Failed(
            "validator_error", "ZeroDivisionError raised by the validator"
        )
    assert restarts(rt) == 0
    healthy = MemoryPeer(peer_id="healthy", auto=lambda r: accept("Ada"))
    handle = await rt.create_elicitation(ask(), peer=healthy, tenant=Tenant("b"))
    assert await handle.outcome() == Accepted({"name": "Ada"})
    assert rt.metrics()["outcomes"]["Failed"] == {"form": 20}


@pytest.mark.parametrize(
    ("validator", "detail"),
    [
        (Returning(None), "the validator returned NoneType, not a ValidationResult"),
        (Returning({"ok": True}), "the validator returned dict, not a ValidationResult"),
        (
            Returning(ValidationResult(False, None, ("name is bad",))),
            "the validator returned errors that are not AnswerError values",
        ),
        (
            Returning(ValidationResult(False, None, ())),
            "the validator refused the answer without an error",
        ),
        (
            Returning(ValidationResult(1, {"name": "x"})),  # type: ignore[arg-type]
            "the validator returned a ValidationResult whose ok is not a bool",
        ),
        (RaisingUrls(), "RuntimeError raised while checking the answer's URLs"),
        (schema_for(Grumpy), "TypeError raised by the validator"),
    ],
)
async def test_every_validator_hook_with_a_bug_fails_only_its_elicitation(
    rt: Runtime, autojump_clock: trio.testing.MockClock, validator: Any, detail: str
) -> None:
    with collected_logs(logging.WARNING) as events, trio.fail_after(60):
        peer = MemoryPeer(auto=lambda r: accept())
        handle = await rt.create_elicitation(ask(validator), peer=peer, tenant=Tenant("a"))
        assert await handle.outcome() == Failed("validator_error", detail)
        assert len(peer.requests) == 1  # no re-prompt: a bug is not the user's fault
    assert restarts(rt) == 0
    assert [e["event"] for e in events] == ["validator_failed"]
    assert SECRET not in repr(events)


async def test_a_resolver_with_a_bug_fails_only_the_answer_it_was_checking(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def resolver(host: str) -> list[str]:
        await trio.lowlevel.checkpoint()
        raise LookupError(host)  # neither OSError nor an address: a bug

    webhook = compile_form(
        {"id": "hook", "title": "Hook", "fields": [{"id": "url", "type": "url", "label": "URL"}]},
        "2025-11-25",
    )
    assert webhook.requested_schema is not None
    async with open_runtime(resolver=resolver) as rt:
        peer = MemoryPeer(
            auto=lambda r: {"action": "accept", "content": {"url": "https://a.example/"}}
        )
        request = ElicitationRequest(
            "Hook?", requested_schema=webhook.requested_schema, validator=webhook
        )
        handle = await rt.create_elicitation(request, peer=peer, tenant=Tenant("a"))
        assert await handle.outcome() == Failed(
            "validator_error", "LookupError raised while checking the answer's URLs"
        )
        assert restarts(rt) == 0


async def test_an_application_completion_whose_validator_raises_ends_it_and_says_so(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer(auto=lambda r: {"action": "accept"})  # URL mode: the user consented
    request = ElicitationRequest(
        "Sign in", mode="url", url="https://93.184.216.34/login", validator=Raising(OSError)
    )
    tenant = Tenant("a")
    handle = await rt.create_elicitation(request, peer=peer, tenant=tenant)
    await peer.wait_request()
    with pytest.raises(ValidatorError) as raised:
        await rt.complete_elicitation(handle.id, {"token": SECRET}, tenant=tenant)
    assert raised.value.elicitation_id == handle.id
    assert raised.value.error_type == "OSError"
    assert SECRET not in str(raised.value)
    assert await handle.outcome() == Failed("validator_error", "OSError raised by the validator")
    assert (await rt.get_elicitation_status(handle.id, tenant=tenant)).status == "failed"
    assert restarts(rt) == 0


class ForgetfulPeer(MemoryPeer):
    """A peer whose ``forget_request`` has a bug."""

    def forget_request(self, request_id: str) -> None:
        super().forget_request(request_id)
        raise RuntimeError("forget failed")


async def test_a_peer_whose_forget_request_raises_hurts_nobody(
    autojump_clock: trio.testing.MockClock,
) -> None:
    healthy = MemoryPeer(peer_id="healthy")
    async with open_runtime({"rate": 1000}) as rt:
        buggy = ForgetfulPeer(peer_id="buggy", auto=lambda r: {"action": "decline"})
        for _ in range(10):
            handle = await rt.create_elicitation(ask(), peer=buggy, tenant=Tenant("a"))
            assert await handle.outcome() == Declined()
        # A re-prompt forgets the previous attempt; an invalid first answer makes one.
        answers = iter([{"action": "accept", "content": {"name": 7}}, accept("Ada")])
        buggy.auto = lambda r: next(answers)
        handle = await rt.create_elicitation(ask(), peer=buggy, tenant=Tenant("a"))
        assert await handle.outcome() == Accepted({"name": "Ada"})
        assert restarts(rt) == 0
        # Both kinds of peer have a question open when the runtime stops: every waiter
        # still gets its outcome, even though forgetting the buggy peer's request raises.
        buggy.auto = None
        waiting = [
            await rt.create_elicitation(ask(), peer=p, tenant=Tenant("a"))
            for p in (buggy, healthy, buggy, healthy)
        ]
        await healthy.wait_request(2)
    with trio.fail_after(60):
        for handle in waiting:
            assert await handle.outcome() == Failed("runtime_restarted")
    assert [m for m, _ in healthy.notifications] == ["notifications/cancelled"] * 2


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda rt, h, t: rt.extend_timeout(h, tenant=t, seconds=-1), ValueError, "seconds"),
        (lambda rt, h, t: rt.extend_timeout(h, tenant=t, seconds=math.nan), ValueError, "seconds"),
        (lambda rt, h, t: rt.extend_timeout(h, tenant=t, seconds="5"), TypeError, "seconds"),
        (lambda rt, h, t: rt.get_elicitation_status([h], tenant=t), TypeError, "elicitation_id"),
        (lambda rt, h, t: rt.cancel_elicitation(h, tenant=(t,)), TypeError, "tenant"),
        (lambda rt, h, t: rt.list_elicitations(tenant=None), TypeError, "tenant"),
        (
            lambda rt, h, t: rt.complete_elicitation(h, {"name": object()}, tenant=t),
            TypeError,
            "JSON",
        ),
        (lambda rt, h, t: rt.answer_elicitation(h, "accept", tenant=t), ValueError, "action"),
        (
            lambda rt, h, t: rt.create_elicitation(ask(), peer=MemoryPeer(), tenant=t, owner="me"),
            TypeError,
            "owner",
        ),
        (
            lambda rt, h, t: rt.create_elicitation(ask(), peer=MemoryPeer(), tenant=t, client_id=7),
            TypeError,
            "client",
        ),
        (
            lambda rt, h, t: rt.create_elicitation(ask(), peer=MemoryPeer(peer_id=["x"]), tenant=t),
            TypeError,
            "client",
        ),
    ],
)
async def test_a_bad_argument_is_the_callers_error_and_the_actor_serves_on(
    rt: Runtime, autojump_clock: trio.testing.MockClock, call: Any, error: type, match: str
) -> None:
    tenant = Tenant("a")
    peer = MemoryPeer()
    handle = await rt.create_elicitation(ask(), peer=peer, tenant=tenant)
    await peer.wait_request()
    for _ in range(10):  # more than the restart intensity allows
        with pytest.raises(error, match=match):
            await call(rt, handle.id, tenant)
    assert restarts(rt) == 0
    peer.answer(peer.last().id, accept("Ada"))
    assert await handle.outcome() == Accepted({"name": "Ada"})


def test_a_tenant_is_three_strings() -> None:
    assert Tenant("a") == Tenant("a", "", "")
    for bad in ({"user": 1}, {"user": "a", "workspace": None}, {"user": "a", "conversation": b"c"}):
        with pytest.raises(TypeError, match="Tenant"):
            Tenant(**bad)  # type: ignore[arg-type]


def test_a_validator_must_have_a_validate_method() -> None:
    with pytest.raises(TypeError, match="validator"):
        ElicitationRequest("Name?", requested_schema=SCHEMA, validator=object())  # type: ignore[arg-type]


class Refusing:
    """A custom validator without a bug: it refuses the first answer, then accepts."""

    def __init__(self) -> None:
        self.calls = 0

    def validate(self, content: object) -> ValidationResult:
        self.calls += 1
        if self.calls == 1:
            error = AnswerError("name", "custom", "a known name", "/name", "name: unknown.")
            return ValidationResult(False, None, (error,))
        assert isinstance(content, Mapping)
        return ValidationResult(True, dict(content))


async def test_a_custom_validator_refusal_is_still_a_reprompt(
    rt: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peer = MemoryPeer(auto=lambda r: accept("Ada"))
    handle = await rt.create_elicitation(ask(Refusing()), peer=peer, tenant=Tenant("a"))
    assert await handle.outcome() == Accepted({"name": "Ada"})
    assert "name: unknown." in peer.requests[1].params["message"]
