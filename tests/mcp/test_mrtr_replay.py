"""Replay of 2026-07-28 calls a process does not hold, over the memory pair.

Each round of a call goes to a fresh session with a registry of its own that shares only
the key ring: what a retry meets on another replica, or after a restart. The tool is run
again from the start and its requests are answered from the answers sealed in the state.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing
from pydantic import BaseModel

from erlmcp_py.client import MemoryClient, open_memory_client
from erlmcp_py.core.outcomes import Accepted, Outcome, Tenant
from erlmcp_py.core.state_token import KeyRing
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.server import Server
from erlmcp_py.mcp.session import ServerSession

V = "2026-07-28"
RING = KeyRing("shared", b"s" * 32)


class Person(BaseModel):
    name: str
    age: int


def make_server(seen: dict[str, Any], **runtime: Any) -> Server:
    def tenant_for(session: ServerSession) -> Tenant:
        return Tenant(user=session.peer_id)  # the principal of its states

    server = Server("replay", "1.0", tenant=tenant_for)
    server.runtime_config = server.runtime_config.model_copy(update=runtime)

    @server.tool()
    async def signup(ctx: Context, plan: str = "free") -> str:
        """Two questions, one after the other."""
        seen["starts"] += 1
        who = await ctx.elicit("Who are you?", Person)
        seen["outcomes"].append(who)
        sure = await ctx.elicit_confirm("Create the account?")
        seen["outcomes"].append(sure)
        if not isinstance(who, Accepted) or not isinstance(sure, Accepted):
            return f"{plan}: no account"
        return f"{plan}: {who.content.name} ({who.content.age}) confirmed={sure.content}"

    @server.tool()
    async def three(ctx: Context) -> str:
        """Three questions: three rounds."""
        seen["starts"] += 1
        words = []
        for n in range(3):
            outcome: Outcome = await ctx.elicit_string(f"Word {n}?")
            words.append(outcome.content if isinstance(outcome, Accepted) else "-")
        return " ".join(words)

    @server.tool()
    async def two_at_once(ctx: Context) -> str:
        """Two questions asked together (their order among the tasks is not fixed)."""
        seen["starts"] += 1
        results: dict[str, str] = {}

        async def ask(name: str) -> None:
            outcome = await ctx.elicit_string(f"{name}?", name)
            results[name] = outcome.content if isinstance(outcome, Accepted) else "-"

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask, "first")
            nursery.start_soon(ask, "second")
        results["after"] = str(await ctx.elicit_confirm("Done?"))
        return ",".join(f"{k}={v}" for k, v in sorted(results.items()))

    @server.tool()
    async def haiku(ctx: Context) -> str:
        """Ask the client's LLM, then the user: a sampling request replays too."""
        seen["starts"] += 1
        draft = await ctx.sample("Write a haiku", max_tokens=50)
        keep = await ctx.elicit_confirm(f"Keep {draft.text!r}?")
        return f"{draft.text}: {keep}"

    return server


@asynccontextmanager
async def replica(
    server: Server, mrtr: str = "auto", peer_id: str = "alice", **options: Any
) -> AsyncIterator[MemoryClient]:
    """One connection with a continuation registry of its own (the shared key ring)."""
    continuations = {"keyring": RING, "mrtr": mrtr, **options}
    async with open_memory_client(
        server,
        protocol_version=V,
        capabilities={"elicitation": {"form": {}}, "sampling": {}},
        initialize=False,
        peer_id=peer_id,
        continuations=continuations,
    ) as client:
        yield client


def call(
    name: str = "signup",
    state: str | None = None,
    responses: Mapping[str, Any] | None = None,
    **arguments: Any,
) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if state is not None:
        params["requestState"] = state
        params["inputResponses"] = dict(responses or {})
    return params


async def attempt(server: Server, params: Mapping[str, Any], **replica_options: Any) -> Any:
    """One round on a replica of its own; the whole response message."""
    async with replica(server, **replica_options) as client:
        return await client.request_raw("tools/call", client.with_meta(params))


def asked(message: Mapping[str, Any]) -> tuple[str, dict[str, Any], str]:
    result = message["result"]
    assert result["resultType"] == "input_required", message
    ((key, request),) = result["inputRequests"].items()
    return key, request["params"], result["requestState"]


def refused(message: Mapping[str, Any], reason: str) -> None:
    assert "result" not in message, message
    assert message["error"]["data"]["reason"] == reason, message["error"]


def new_seen() -> dict[str, Any]:
    return {"starts": 0, "outcomes": []}


ADA = {"action": "accept", "content": {"name": "Ada", "age": 36}}
YES = {"action": "accept", "content": {"confirm": True}}


@pytest.mark.parametrize("mrtr", ["auto", "replay"])
async def test_a_call_completes_when_every_round_meets_a_new_registry(
    mrtr: str, autojump_clock: trio.testing.MockClock
) -> None:
    seen = new_seen()
    server = make_server(seen)
    async with server.running():
        key, params, state = asked(await attempt(server, call(plan="pro"), mrtr=mrtr))
        assert params["message"] == "Who are you?"
        key2, params2, state2 = asked(
            await attempt(server, call("signup", state, {key: ADA}, plan="pro"), mrtr=mrtr)
        )
        assert params2["message"] == "Create the account?"
        done = await attempt(server, call("signup", state2, {key2: YES}, plan="pro"), mrtr=mrtr)
    assert done["result"]["content"][0]["text"] == "pro: Ada (36) confirmed=True"
    assert seen["starts"] == 3  # run again from the start on every registry
    # every earlier answer reached the replayed tool again, validated and converted
    assert seen["outcomes"][-2:] == [Accepted(Person(name="Ada", age=36)), Accepted(True)]


async def test_suspend_mode_refuses_a_call_it_does_not_hold(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen = new_seen()
    server = make_server(seen)
    async with server.running():
        key, _, state = asked(await attempt(server, call(), mrtr="suspend"))
        again = await attempt(server, call("signup", state, {key: ADA}), mrtr="suspend")
        refused(again, "unknown_continuation")
        # a state sealed in suspend mode carries no answers: another mode cannot replay it
        refused(await attempt(server, call("signup", state, {key: ADA})), "unknown_continuation")
    assert seen["starts"] == 1


async def test_replay_mode_keeps_no_call_between_rounds(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen = new_seen()
    server = make_server(seen)
    async with server.running(), replica(server, mrtr="replay") as client:
        first = await client.request_raw("tools/call", client.with_meta(call()))
        key, _, state = asked(first)
        stateless = client.session._stateless
        assert stateless is not None
        registry = stateless.endpoint.registry
        assert len(registry) == 0  # nothing suspended: the tool was ended
        second = await client.request_raw(
            "tools/call", client.with_meta(call("signup", state, {key: ADA}))
        )
        key2, _, state2 = asked(second)
        assert len(registry) == 0
        # the same state again replays again (a replayed state is not single-use)
        assert (
            asked(
                await client.request_raw(
                    "tools/call", client.with_meta(call("signup", state, {key: ADA}))
                )
            )[0]
            == key2
        )
        done = await client.request_raw(
            "tools/call", client.with_meta(call("signup", state2, {key2: YES}))
        )
        assert done["result"]["content"][0]["text"] == "free: Ada (36) confirmed=True"
        assert registry.snapshot()["replayed"] == 3
    assert seen["starts"] == 4


async def test_an_invalid_answer_on_a_replayed_round_is_asked_again(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen = new_seen()
    server = make_server(seen)
    async with server.running():
        key, _, state = asked(await attempt(server, call(), mrtr="replay"))
        bad = {key: {"action": "accept", "content": {"name": "Ada", "age": "36"}}}
        key_again, params, state_again = asked(
            await attempt(server, call("signup", state, bad), mrtr="replay")
        )
        assert "not accepted" in params["message"]
        assert "age" in params["message"]
        key2, params2, state2 = asked(
            await attempt(server, call("signup", state_again, {key_again: ADA}), mrtr="replay")
        )
        assert params2["message"] == "Create the account?"
        done = await attempt(server, call("signup", state2, {key2: YES}), mrtr="replay")
    assert done["result"]["content"][0]["text"] == "free: Ada (36) confirmed=True"
    # the last replay received the rejected answer, then its correction: one outcome
    assert seen["outcomes"][-2:] == [Accepted(Person(name="Ada", age=36)), Accepted(True)]


async def test_replayed_states_stay_bound_to_principal_request_and_expiry(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen = new_seen()
    server = make_server(seen)
    async with server.running():
        key, _, state = asked(await attempt(server, call(plan="pro"), mrtr="replay"))
        answer = {key: ADA}
        raw = bytearray(base64.urlsafe_b64decode(state + "=" * (-len(state) % 4)))
        raw[-1] ^= 0x01
        tampered = base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()
        refused(await attempt(server, call("signup", tampered, answer, plan="pro")), "invalid")
        refused(
            await attempt(server, call("signup", state, answer, plan="pro"), peer_id="mallory"),
            "wrong_principal",
        )
        refused(
            await attempt(server, call("signup", state, answer, plan="free")), "request_mismatch"
        )
        other = KeyRing("other", b"o" * 32)
        refused(
            await attempt(server, call("signup", state, answer, plan="pro"), keyring=other),
            "invalid",
        )
        await trio.sleep(10_000)  # past the state's lifetime
        refused(await attempt(server, call("signup", state, answer, plan="pro")), "expired")
    assert seen["starts"] == 1  # no refused state ran the tool


async def test_replayed_questions_are_charged_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen = new_seen()
    server = make_server(seen, rate=3)  # three new elicitations a minute per client
    async with server.running():
        state, responses = None, {}
        for n in range(3):
            message = await attempt(server, call("three", state, responses), mrtr="replay")
            key, params, state = asked(message)
            assert params["message"] == f"Word {n}?"
            responses = {key: {"action": "accept", "content": {"value": f"w{n}"}}}
        done = await attempt(server, call("three", state, responses), mrtr="replay")
        assert done["result"]["content"][0]["text"] == "w0 w1 w2"
        assert seen["starts"] == 4  # 3 + 2 + 1 questions replayed over 4 rounds
        # charged 3, not 6: the bucket is empty now, so the next new question is refused
        refused_call = await attempt(server, call("three"), mrtr="replay")
        assert refused_call["result"]["isError"] is True
        assert "rate" in refused_call["result"]["content"][0]["text"].lower()


async def test_replayed_answers_are_not_counted_as_human_answer_times(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen = new_seen()
    server = make_server(seen)
    async with server.running() as runtime:
        state, responses = None, {}
        for n in range(3):
            key, _, state = asked(await attempt(server, call("three", state, responses)))
            await trio.sleep(7)  # the user takes 7 s to answer
            responses = {key: {"action": "accept", "content": {"value": f"w{n}"}}}
        done = await attempt(server, call("three", state, responses))
        assert done["result"]["content"][0]["text"] == "w0 w1 w2"
        # every round met a new registry: each answer reached the tool from the sealed state
        # at once, and this replica never saw how long anybody took
        assert runtime.metrics()["human_latency_s"]["count"] == 0

    held = new_seen()
    server = make_server(held)
    async with server.running() as runtime, replica(server) as client:
        state, responses = None, {}
        for n in range(3):
            message = await client.request_raw(
                "tools/call", client.with_meta(call("three", state, responses))
            )
            key, _, state = asked(message)
            await trio.sleep(7)
            responses = {key: {"action": "accept", "content": {"value": f"w{n}"}}}
        done = await client.request_raw(
            "tools/call", client.with_meta(call("three", state, responses))
        )
        assert done["result"]["content"][0]["text"] == "w0 w1 w2"
        assert held["starts"] == 1  # one registry held the call: three human answers, timed
        latency = runtime.metrics()["human_latency_s"]
        assert latency["count"] == 3
        assert latency["sum"] == pytest.approx(21, abs=0.1)


async def test_a_state_past_its_size_bound_ends_the_call_with_a_clear_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen = new_seen()
    server = make_server(seen)
    long_name = {"action": "accept", "content": {"name": "A" * 2000, "age": 36}}
    async with server.running():
        key, _, state = asked(await attempt(server, call(), mrtr="replay", max_state_chars=2000))
        message = await attempt(
            server, call("signup", state, {key: long_name}), mrtr="replay", max_state_chars=2000
        )
        error = message["error"]
        assert error["code"] == -32603
        assert error["data"] == {"reason": "state_too_large", "limit": 2000}
        assert "--mrtr suspend" in error["message"]
        # suspend mode carries no answers: the same call fits
        async with replica(server, mrtr="suspend", max_state_chars=2000) as client:
            first = await client.request_raw("tools/call", client.with_meta(call()))
            key, _, state = asked(first)
            second = await client.request_raw(
                "tools/call", client.with_meta(call("signup", state, {key: long_name}))
            )
            assert asked(second)[1]["message"] == "Create the account?"


async def test_questions_asked_together_get_their_own_answers_on_replay(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen = new_seen()
    server = make_server(seen, rate=1000)
    async with server.running():
        for _ in range(6):  # the tasks reach their questions in either order
            first = (await attempt(server, call("two_at_once"), mrtr="replay"))["result"]
            assert "inputRequests" in first, first
            requests = first["inputRequests"]
            answers = {
                key: {"action": "accept", "content": {r["params"]["message"][:-1]: "A-" + key}}
                for key, r in requests.items()
            }
            by_name = {r["params"]["message"][:-1]: key for key, r in requests.items()}
            second = await attempt(
                server, call("two_at_once", first["requestState"], answers), mrtr="replay"
            )
            key, params, state = asked(second)
            assert params["message"] == "Done?"
            done = await attempt(server, call("two_at_once", state, {key: YES}), mrtr="replay")
            text = done["result"]["content"][0]["text"]
            assert text == (
                f"after=Accepted(content=True),first=A-{by_name['first']},"
                f"second=A-{by_name['second']}"
            )


async def test_answers_given_to_a_resumed_call_replay_after_a_restart(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen = new_seen()
    server = make_server(seen)
    async with server.running():
        async with replica(server) as client:  # rounds 1 and 2: the call is held and resumed
            first = await client.request_raw("tools/call", client.with_meta(call()))
            key, _, state = asked(first)
            second = await client.request_raw(
                "tools/call", client.with_meta(call("signup", state, {key: ADA}))
            )
            key2, _, state2 = asked(second)
            assert seen["starts"] == 1
        # the process is gone; a new one with the same key ring gets the last round
        done = await attempt(server, call("signup", state2, {key2: YES}))
    assert done["result"]["content"][0]["text"] == "free: Ada (36) confirmed=True"
    assert seen["starts"] == 2


async def test_a_sampling_answer_replays_like_an_elicitation(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen = new_seen()
    server = make_server(seen)
    poem = {"role": "assistant", "content": {"type": "text", "text": "old pond"}, "model": "m"}
    async with server.running():
        first = (await attempt(server, call("haiku"), mrtr="replay"))["result"]
        ((key, request),) = first["inputRequests"].items()
        assert request["method"] == "sampling/createMessage"
        key2, params, state2 = asked(
            await attempt(server, call("haiku", first["requestState"], {key: poem}), mrtr="replay")
        )
        assert params["message"] == "Keep 'old pond'?"
        done = await attempt(server, call("haiku", state2, {key2: YES}), mrtr="replay")
    assert done["result"]["content"][0]["text"] == "old pond: Accepted(content=True)"
    assert seen["starts"] == 3


@pytest.mark.parametrize("mrtr", ["auto", "replay"])
async def test_a_prompt_replays_on_a_new_registry_as_a_tool_does(
    mrtr: str, autojump_clock: trio.testing.MockClock
) -> None:
    seen = new_seen()
    server = make_server(seen)

    @server.prompt()
    async def onboarding(ctx: Context, team: str) -> str:
        seen["starts"] += 1
        who = await ctx.elicit("Who are you?", Person, key="who")
        sure = await ctx.elicit_confirm(f"Add them to {team}?")
        name = who.content.name if isinstance(who, Accepted) else "nobody"
        return f"{name} -> {team}: {sure}"

    def get(state: str | None = None, responses: Mapping[str, Any] | None = None) -> Any:
        params: dict[str, Any] = {"name": "onboarding", "arguments": {"team": "core"}}
        if state is not None:
            params["requestState"] = state
            params["inputResponses"] = dict(responses or {})
        return params

    async def prompt_attempt(params: Mapping[str, Any]) -> Any:
        async with replica(server, mrtr=mrtr) as client:
            return await client.request_raw("prompts/get", client.with_meta(params))

    async with server.running():
        key, params, state = asked(await prompt_attempt(get()))
        assert (key, params["message"]) == ("who", "Who are you?")
        key2, params2, state2 = asked(await prompt_attempt(get(state, {key: ADA})))
        assert params2["message"] == "Add them to core?"
        done = await prompt_attempt(get(state2, {key2: YES}))
    assert done["result"]["resultType"] == "complete"
    text = done["result"]["messages"][0]["content"]["text"]
    assert text == "Ada -> core: Accepted(content=True)"
    assert seen["starts"] == 3


def test_a_state_opens_in_another_process_whose_clock_reads_otherwise() -> None:
    """trio's clock is each process's own (its system clock starts at a random offset): the
    state's times are on the wall clock, so another process opens it (two runs here, the
    second one's trio clock a million seconds apart from the first one's)."""
    seen = new_seen()
    server = make_server(seen)

    async def first_round() -> tuple[str, dict[str, Any], str]:
        async with server.running():
            return asked(await attempt(server, call(plan="pro"), mrtr="replay"))

    async def second_round(key: str, state: str) -> tuple[str, dict[str, Any], str]:
        async with server.running():
            answer = {key: ADA}
            return asked(await attempt(server, call("signup", state, answer, plan="pro")))

    key, _, state = trio.run(first_round, clock=trio.testing.MockClock())
    elsewhere = trio.testing.MockClock()
    elsewhere.jump(1_000_000)
    _, params, _ = trio.run(second_round, key, state, clock=elsewhere)
    assert params["message"] == "Create the account?"
    assert seen["starts"] == 2  # issued by the first run, replayed by the second
