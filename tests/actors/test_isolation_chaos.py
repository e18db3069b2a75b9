"""Chaos: application code with bugs among healthy users, against one runtime.

Hundreds of users arrive over a virtual minute. Each question is either healthy (accepted,
accepted after a re-prompt, refused once by its model's own validator, declined; some through
a peer whose ``forget_request`` raises) or hits a bug in application code: a custom validator
that raises (any exception type), one that returns something that is not a verdict, a
``url_values`` hook that raises, a model validator with a bug, an application completion
whose validator raises. Meanwhile a prankster calls the runtime API with bad arguments.

Asserted: every healthy question gets exactly the outcome its user chose; every faulty one ends
``Failed("validator_error")`` and nothing else; every bad call is the caller's ``TypeError`` or
``ValueError``; the runtime's actors never restart (the default intensity, 5 in 10 s, is never
approached); no log event carries an answer.

Every decision is drawn up front from the seed, which is printed; set ERLMCP_CHAOS_SEED to
replay one. ``--long`` runs ten times as many users.
"""

from __future__ import annotations

import logging
import os
import random
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pydantic
import trio
import trio.testing

from erlmcp_py import (
    Accepted,
    Declined,
    ElicitationHandle,
    ElicitationRequest,
    Failed,
    Outcome,
    Runtime,
    Tenant,
    ValidatorError,
    open_runtime,
)
from erlmcp_py.testing import MemoryPeer
from tests.actors.test_isolation import (
    SCHEMA,
    ForgetfulPeer,
    Grumpy,
    Raising,
    RaisingUrls,
    Returning,
)
from tests.actors.test_runtime_chaos import collected_logs

ERRORS = (KeyError, TypeError, RuntimeError, ZeroDivisionError, AttributeError, OSError)
URL = "https://93.184.216.34/consent"  # an IP literal: checked without resolving anything


class Signup(pydantic.BaseModel):
    """A healthy model: its validator refuses one name, which is a re-prompt."""

    username: str

    @pydantic.field_validator("username")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        if value == "admin":
            raise ValueError("the name admin is reserved")
        return value


@dataclass(frozen=True)
class Plan:
    """One user's question, drawn from the seed."""

    user: int
    kind: str
    start: float
    delays: tuple[float, ...]  # before each answer
    error: type[Exception]


HEALTHY = ("accept", "reprompt", "typed", "decline", "forgetful")
FAULTY = ("raising", "returning", "url_values", "model_bug", "completion")


def secret(user: int) -> str:
    return f"secret-answer-{user}"


def draw(rng: random.Random, users: int, span: float) -> list[Plan]:
    return [
        Plan(
            user=i,
            kind=rng.choice(HEALTHY + FAULTY),
            start=rng.uniform(0, span),
            delays=(rng.uniform(0, 20), rng.uniform(0, 20)),
            error=rng.choice(ERRORS),
        )
        for i in range(users)
    ]


def script(plan: Plan) -> tuple[Any, list[dict[str, Any]], Any]:
    """(validator or form, the user's answers in order, the expected outcome)."""
    name = {"name": secret(plan.user)}
    accept = {"action": "accept", "content": name}
    kind = plan.kind
    if kind in ("accept", "forgetful"):
        return None, [accept], Accepted(name)
    if kind == "reprompt":
        return None, [{"action": "accept", "content": {"name": 7}}, accept], Accepted(name)
    if kind == "typed":
        answers = [
            {"action": "accept", "content": {"username": "admin"}},
            {"action": "accept", "content": {"username": secret(plan.user)}},
        ]
        return Signup, answers, Accepted(Signup(username=secret(plan.user)))
    if kind == "decline":
        return None, [{"action": "decline"}], Declined()
    if kind == "raising":
        detail = f"{plan.error.__name__} raised by the validator"
        return Raising(plan.error), [accept], Failed("validator_error", detail)
    if kind == "returning":
        detail = "the validator returned list, not a ValidationResult"
        return Returning([True]), [accept], Failed("validator_error", detail)
    if kind == "url_values":
        detail = "RuntimeError raised while checking the answer's URLs"
        return RaisingUrls(), [accept], Failed("validator_error", detail)
    if kind == "model_bug":
        answers = [{"action": "accept", "content": {"name": secret(plan.user)}}]
        return Grumpy, answers, Failed("validator_error", "TypeError raised by the validator")
    assert kind == "completion"
    detail = f"{plan.error.__name__} raised by the validator"
    return Raising(plan.error), [{"action": "accept"}], Failed("validator_error", detail)


class Run:
    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.live: list[ElicitationHandle] = []
        self.wrong: list[str] = []
        self.outcomes: Counter[str] = Counter()
        self.bad_calls = 0

    async def user(self, plan: Plan) -> None:
        await trio.sleep(plan.start)
        validator, answers, expected = script(plan)
        peer_type = ForgetfulPeer if plan.kind == "forgetful" else MemoryPeer
        peer = peer_type(peer_id=f"user-{plan.user}")
        tenant = Tenant(f"user-{plan.user}")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.answer, peer, plan, answers)
            outcome = await self.ask(plan, validator, peer, tenant)
            nursery.cancel_scope.cancel()  # a user who had more to say is not asked again
        self.outcomes[f"{plan.kind}:{type(outcome).__name__}"] += 1
        if outcome != expected:
            self.wrong.append(f"user {plan.user} ({plan.kind}): {outcome!r} != {expected!r}")

    async def ask(self, plan: Plan, validator: Any, peer: MemoryPeer, tenant: Tenant) -> Outcome:
        if isinstance(validator, type):
            return await self.rt.ask("Who?", validator, peer=peer, tenant=tenant)
        if plan.kind == "completion":
            request = ElicitationRequest("Sign in", mode="url", url=URL, validator=validator)
        else:
            request = ElicitationRequest("Who?", requested_schema=SCHEMA, validator=validator)
        handle = await self.rt.create_elicitation(request, peer=peer, tenant=tenant)
        self.live.append(handle)
        try:
            if plan.kind == "completion":
                await peer.wait_request()
                await trio.sleep(plan.delays[1])
                try:
                    await self.rt.complete_elicitation(
                        handle.id, {"token": secret(plan.user)}, tenant=tenant
                    )
                except ValidatorError as exc:
                    if exc.elicitation_id != handle.id:
                        self.wrong.append(f"user {plan.user}: {exc!r}")
                else:
                    self.wrong.append(f"user {plan.user}: the completion did not raise")
            return await handle.outcome()
        finally:
            self.live.remove(handle)

    async def answer(self, peer: MemoryPeer, plan: Plan, answers: list[dict[str, Any]]) -> None:
        for n, (answer, delay) in enumerate(zip(answers, plan.delays, strict=False), start=1):
            request = await peer.wait_request(n)
            await trio.sleep(delay)
            peer.answer(request.id, answer)

    async def prankster(self, rng: random.Random, span: float, tries: int) -> None:
        calls = [
            (rng.uniform(0, span), rng.randrange(4), rng.randrange(1 << 30)) for _ in range(tries)
        ]
        for at, which, pick in sorted(calls):
            await trio.sleep_until(at)
            if not self.live:
                continue
            handle = self.live[pick % len(self.live)]
            tenant = Tenant("prankster")
            try:
                if which == 0:
                    await self.rt.extend_timeout(handle.id, tenant=tenant, seconds=-pick)
                elif which == 1:
                    await self.rt.get_elicitation_status([handle.id], tenant=tenant)  # type: ignore[arg-type]
                elif which == 2:
                    await self.rt.complete_elicitation(handle.id, {"x": object()}, tenant=tenant)
                else:
                    await self.rt.list_elicitations(tenant=handle.id)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                self.bad_calls += 1
            else:
                self.wrong.append(f"prankster call {which} did not raise")


async def test_bugs_in_application_code_never_reach_the_healthy_users(
    autojump_clock: trio.testing.MockClock, long_run: bool
) -> None:
    seed = int(os.environ.get("ERLMCP_CHAOS_SEED", random.randrange(1 << 32)))
    print(f"isolation chaos seed: {seed} (ERLMCP_CHAOS_SEED={seed} to replay)")
    rng = random.Random(seed)
    users = 10_000 if long_run else 1000
    span = 60.0
    plans = draw(rng, users, span)
    with collected_logs(logging.WARNING) as events:
        async with open_runtime({"rate": 10**6, "max_pending_per_client": 10**6}) as rt:
            run = Run(rt)
            with trio.fail_after(span + 600):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(run.prankster, random.Random(rng.random()), span, users // 5)
                    for plan in plans:
                        nursery.start_soon(run.user, plan)
            restarts = dict(rt.supervisor.restarts)
            pending = rt.metrics()["pending"]
            # Still serving: one more healthy question after all of it.
            healthy = MemoryPeer(auto=lambda r: {"action": "accept", "content": {"name": "Ada"}})
            last = await rt.ask(ElicitationRequest("Who?", requested_schema=SCHEMA),
                                peer=healthy, tenant=Tenant("last"))  # fmt: skip
    print(f"outcomes: {dict(sorted(run.outcomes.items()))}; bad calls refused: {run.bad_calls}")
    assert run.wrong == [], f"seed {seed}"
    assert restarts == {}, f"seed {seed}"
    assert pending == 0
    assert last == Accepted({"name": "Ada"})
    faulty = sum(1 for plan in plans if plan.kind in FAULTY)
    failed = [e for e in events if e["event"] == "validator_failed"]
    assert len(failed) == faulty, f"seed {seed}"
    assert not [e for e in events if e["event"] in ("actor_crashed", "child_restarted")]
    logged = repr(events)
    assert not [plan.user for plan in plans if secret(plan.user) in logged], f"seed {seed}"
