"""2026-07-28 on a byte-stream session: stateless requests and imperative ``ctx.elicit`` by MRTR.

Everything runs in-process under trio's autojump clock: a tiny client feeds frames into a
``ServerSession`` (the stdio path) and reads what it writes. Deadlines of minutes pass in
microseconds.
"""

from __future__ import annotations

import base64
import itertools
import math
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import pydantic_core
import pytest
import trio
import trio.testing
from pydantic import BaseModel

from erlmcp_py.actors.runtime import open_runtime
from erlmcp_py.core.outcomes import Accepted, Outcome, TimedOut
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.mrtr import open_continuations
from erlmcp_py.mcp.server import Server
from erlmcp_py.mcp.session import ServerSession, open_session
from erlmcp_py.mcp.versions import ClientCapabilities
from tests.conftest import count_tasks

V = "2026-07-28"
FORM_CAPS: dict[str, Any] = {"elicitation": {}}


class Person(BaseModel):
    name: str
    age: int


def meta(caps: Mapping[str, Any] | None = None, version: str = V) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": dict(FORM_CAPS if caps is None else caps),
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
    }


class Client:
    """The client end of one session: frames in, frames out."""

    def __init__(self) -> None:
        self.out: list[dict[str, Any]] = []
        self.changed = trio.Event()
        self.ids = itertools.count(1)
        self.session: ServerSession

    async def write(self, frame: bytes) -> None:
        self.out.append(pydantic_core.from_json(frame))
        self.changed.set()
        self.changed = trio.Event()

    async def send(self, message: Mapping[str, Any]) -> None:
        await self.session.feed(pydantic_core.to_json(dict(message)))

    async def response(self, id: Any) -> dict[str, Any]:
        while True:
            for frame in self.out:
                if frame.get("id") == id and "method" not in frame:
                    return frame
            await self.changed.wait()

    async def request(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        rid = next(self.ids)
        await self.send(
            {"jsonrpc": "2.0", "id": rid, "method": method, "params": dict(params or {})}
        )
        return await self.response(rid)

    async def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        state: str | None = None,
        responses: Mapping[str, Any] | None = None,
        caps: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """One ``tools/call`` attempt; the raw response frame."""
        params: dict[str, Any] = {
            "name": name,
            "arguments": dict(arguments or {}),
            "_meta": meta(caps),
        }
        if state is not None:
            params["requestState"] = state
        if responses is not None:
            params["inputResponses"] = dict(responses)
        return await self.request("tools/call", params)

    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        state: str | None = None,
        responses: Mapping[str, Any] | None = None,
        caps: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """One ``prompts/get`` attempt; the raw response frame."""
        params: dict[str, Any] = {"name": name, "_meta": meta(caps)}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        if state is not None:
            params["requestState"] = state
        if responses is not None:
            params["inputResponses"] = dict(responses)
        return await self.request("prompts/get", params)


@asynccontextmanager
async def connect(server: Server, mrtr: str = "auto", **config: Any) -> AsyncIterator[Client]:
    client = Client()
    async with open_runtime({"rate": 10_000, **config}) as runtime:
        server.runtime = runtime
        continuations = {"mrtr": mrtr}
        async with open_session(
            server, runtime, client.write, peer_id="t", continuations=continuations
        ) as session:
            client.session = session
            yield client
            session.close()


def only_request(result: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    assert result["resultType"] == "input_required"
    ((key, request),) = result["inputRequests"].items()
    assert request["method"] == "elicitation/create"
    return key, request["params"]


def refused(frame: Mapping[str, Any], reason: str) -> None:
    assert "result" not in frame, frame
    assert frame["error"]["code"] == -32602
    assert frame["error"]["data"]["reason"] == reason, frame["error"]


def make_server() -> tuple[Server, dict[str, Any]]:
    server = Server("mrtr-test", "1.0.0")
    seen: dict[str, Any] = {"invocations": 0, "outcomes": []}

    @server.tool()
    async def signup(ctx: Context, plan: str = "free") -> str:
        """Two questions, one after the other, in one coroutine."""
        seen["invocations"] += 1
        local = f"plan={plan}"  # lives across rounds only if the coroutine is the same
        who = await ctx.elicit("Who are you?", Person)
        seen["outcomes"].append(who)
        sure = await ctx.elicit_confirm("Create the account?")
        seen["outcomes"].append(sure)
        if not isinstance(who, Accepted) or not isinstance(sure, Accepted):
            return f"{local}: no account ({type(who).__name__}, {type(sure).__name__})"
        return f"{local}: {who.content.name} ({who.content.age}) confirmed={sure.content}"

    @server.tool()
    async def ask_once(ctx: Context) -> str:
        outcome: Outcome = await ctx.elicit_string("Say something")
        seen["outcomes"].append(outcome)
        return type(outcome).__name__ if not isinstance(outcome, Accepted) else outcome.content

    @server.tool()
    async def plain(x: int) -> int:
        return x * 2

    @server.tool()
    async def two_at_once(ctx: Context) -> str:
        results: dict[str, Outcome] = {}

        async def ask(name: str) -> None:
            results[name] = await ctx.elicit_string(f"{name}?", name)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask, "first")
            nursery.start_soon(ask, "second")
        return ",".join(
            f"{k}={v.content if isinstance(v, Accepted) else type(v).__name__}"
            for k, v in sorted(results.items())
        )

    return server, seen


async def test_discover_tools_list_and_version_errors(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = make_server()
    async with connect(server) as client:
        found = (await client.request("server/discover", {"_meta": meta()}))["result"]
        assert found["resultType"] == "complete"
        assert found["supportedVersions"][0] == V
        assert "2025-11-25" in found["supportedVersions"]
        assert found["capabilities"]["tools"] == {"listChanged": False}
        assert found["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mrtr-test"

        tools = (await client.request("tools/list", {"_meta": meta()}))["result"]
        assert tools["resultType"] == "complete"
        assert {t["name"] for t in tools["tools"]} >= {"signup", "plain"}
        assert tools["cacheScope"] == "public"
        assert tools["ttlMs"] == 0

        # No initialize was needed; a plain tool completes in one round.
        done = (await client.call("plain", {"x": 21}))["result"]
        assert done["resultType"] == "complete"
        assert done["content"][0]["text"] == "42"

        wrong = await client.request("tools/list", {"_meta": meta(version="2099-01-01")})
        assert wrong["error"]["code"] == -32022
        assert wrong["error"]["data"] == {
            "supported": ["2026-07-28", "2025-11-25", "2025-06-18"],
            "requested": "2099-01-01",
        }
        bare = await client.request("server/discover", {})
        assert bare["error"]["code"] == -32602
        no_caps = await client.request(
            "tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": V}}
        )
        assert no_caps["error"]["code"] == -32602
        assert "clientCapabilities" in no_caps["error"]["message"]
        gone = await client.request("ping", {"_meta": meta()})
        assert gone["error"]["code"] == -32601


async def test_two_elicitations_resume_the_same_coroutine(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, seen = make_server()
    async with connect(server) as client:
        first = (await client.call("signup", {"plan": "pro"}))["result"]
        key1, params1 = only_request(first)
        assert params1["mode"] == "form"
        assert params1["message"] == "Who are you?"
        assert set(params1["requestedSchema"]["properties"]) == {"name", "age"}
        assert first["_meta"]["io.modelcontextprotocol/serverInfo"]["version"] == "1.0.0"

        answer = {key1: {"action": "accept", "content": {"name": "Ada", "age": 36}}}
        second = (
            await client.call(
                "signup", {"plan": "pro"}, state=first["requestState"], responses=answer
            )
        )["result"]
        key2, params2 = only_request(second)
        assert key2 != key1
        assert params2["message"] == "Create the account?"
        assert second["requestState"] != first["requestState"]

        final = (
            await client.call(
                "signup",
                {"plan": "pro"},
                state=second["requestState"],
                responses={key2: {"action": "accept", "content": {"confirm": True}}},
            )
        )["result"]
        assert final["resultType"] == "complete"
        assert final["content"][0]["text"] == "plan=pro: Ada (36) confirmed=True"
        assert seen["invocations"] == 1  # resumed, never re-run
        assert isinstance(seen["outcomes"][0].content, Person)
        snap = client.session._stateless.endpoint.registry.snapshot()  # type: ignore[union-attr]
        assert snap["live"] == 0
        assert snap["rounds"] == 2
        assert snap["completed"] == 1


@pytest.mark.parametrize(("action", "expected"), [("decline", "Declined"), ("cancel", "Cancelled")])
async def test_decline_and_cancel_reach_the_tool(
    autojump_clock: trio.testing.MockClock, action: str, expected: str
) -> None:
    server, _ = make_server()
    async with connect(server) as client:
        first = (await client.call("ask_once"))["result"]
        key, _ = only_request(first)
        final = (
            await client.call(
                "ask_once", state=first["requestState"], responses={key: {"action": action}}
            )
        )["result"]
        assert final["content"][0]["text"] == expected


async def test_invalid_accept_is_reprompted_strictly_then_accepted(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, seen = make_server()
    async with connect(server) as client:
        first = (await client.call("signup"))["result"]
        key, _ = only_request(first)
        # "36" is not an integer: strict validation, no coercion; the runtime asks again.
        bad = {key: {"action": "accept", "content": {"name": "Ada", "age": "36"}}}
        again = (await client.call("signup", state=first["requestState"], responses=bad))["result"]
        key2, params = only_request(again)
        assert key2 != key
        assert "not accepted" in params["message"]
        assert "age" in params["message"]
        good = {key2: {"action": "accept", "content": {"name": "Ada", "age": 36}}}
        third = (await client.call("signup", state=again["requestState"], responses=good))["result"]
        _, params3 = only_request(third)
        assert params3["message"] == "Create the account?"
        assert seen["outcomes"][0] == Accepted(Person(name="Ada", age=36))


async def test_missing_answers_are_asked_again_and_extra_keys_ignored(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = make_server()
    async with connect(server) as client:
        first = (await client.call("ask_once"))["result"]
        key, params = only_request(first)
        again = (
            await client.call(
                "ask_once", state=first["requestState"], responses={"nope": {"action": "accept"}}
            )
        )["result"]
        key2, params2 = only_request(again)
        assert (key2, params2) == (key, params)  # the same question, a fresh state
        final = (
            await client.call(
                "ask_once",
                state=again["requestState"],
                responses={key: {"action": "accept", "content": {"value": "hi"}}},
            )
        )["result"]
        assert final["content"][0]["text"] == "hi"


async def test_concurrent_elicitations_of_one_call_share_a_round(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = make_server()
    async with connect(server) as client:
        first = (await client.call("two_at_once"))["result"]
        requests = first["inputRequests"]
        assert sorted(r["params"]["message"] for r in requests.values()) == ["first?", "second?"]
        answers = {
            key: {
                "action": "accept",
                "content": {r["params"]["message"][:-1]: r["params"]["message"]},
            }
            for key, r in requests.items()
        }
        final = (await client.call("two_at_once", state=first["requestState"], responses=answers))[
            "result"
        ]
        assert final["content"][0]["text"] == "first=first?,second=second?"


async def test_a_named_elicitation_keeps_its_key_across_reprompts(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server("keys", "1.0.0")

    @server.tool()
    async def named(ctx: Context) -> str:
        outcome = await ctx.elicit("Who are you?", Person, key="who")
        return outcome.content.name if isinstance(outcome, Accepted) else type(outcome).__name__

    async with connect(server) as client:
        first = (await client.call("named"))["result"]
        assert only_request(first)[0] == "who"
        bad = {"who": {"action": "accept", "content": {"name": "Ada", "age": "36"}}}
        again = (await client.call("named", state=first["requestState"], responses=bad))["result"]
        key, params = only_request(again)
        assert key == "who"
        assert "not accepted" in params["message"]
        good = {"who": {"action": "accept", "content": {"name": "Ada", "age": 36}}}
        done = (await client.call("named", state=again["requestState"], responses=good))["result"]
        assert done["content"][0]["text"] == "Ada"


async def test_two_requests_under_one_key_get_distinct_keys(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server("keys", "1.0.0")

    @server.tool()
    async def twice(ctx: Context) -> str:
        answers: list[str] = []

        async def ask(message: str) -> None:
            outcome = await ctx.elicit(message, str, key="q")
            answers.append(outcome.content if isinstance(outcome, Accepted) else "-")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask, "one?")
            nursery.start_soon(ask, "two?")
        return ",".join(sorted(answers))

    async with connect(server) as client:
        first = (await client.call("twice"))["result"]
        requests = first["inputRequests"]
        assert len(requests) == 2
        assert "q" in requests
        (other,) = set(requests) - {"q"}
        assert other.startswith("q-")
        answers = {
            key: {"action": "accept", "content": {"value": r["params"]["message"]}}
            for key, r in requests.items()
        }
        done = (await client.call("twice", state=first["requestState"], responses=answers))[
            "result"
        ]
        assert done["content"][0]["text"] == "one?,two?"


PIN_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {"pin": {"type": "string", "format": "password"}},
    "required": ["pin"],
}


async def test_a_page_question_and_a_form_question_asked_together_share_a_round(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server("page-and-form", "1.0.0")

    @server.tool()
    async def both(ctx: Context) -> str:
        results: dict[str, Outcome] = {}

        async def ask(name: str, form: Any) -> None:
            results[name] = await ctx.elicit(f"{name}?", form)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask, "pin", PIN_FORM)  # a secret: asked on the hosted page
            nursery.start_soon(ask, "name", str)
        return " ".join(f"{k}={type(v).__name__}" for k, v in sorted(results.items()))

    caps = {"elicitation": {"form": {}, "url": {}}}
    async with connect(server) as client:
        assert server.runtime is not None
        server.runtime.pages.base_url = "https://srv.example"
        first = (await client.call("both", caps=caps))["result"]
        assert first["resultType"] == "input_required"
        asked = {r["params"]["message"]: r["params"] for r in first["inputRequests"].values()}
        assert sorted(asked) == ["name?", "pin?"]
        assert asked["pin?"]["mode"] == "url"
        assert asked["pin?"]["url"].startswith("https://srv.example/elicit/")
        assert "requestedSchema" in asked["name?"]
        answers = {
            key: {"action": "decline"}
            if r["params"]["message"] == "pin?"
            else {"action": "accept", "content": {"value": "Ada"}}
            for key, r in first["inputRequests"].items()
        }
        done = await client.call("both", state=first["requestState"], responses=answers, caps=caps)
        assert done["result"]["content"][0]["text"] == "name=Accepted pin=Declined"


async def test_an_empty_key_is_refused(autojump_clock: trio.testing.MockClock) -> None:
    server = Server("keys", "1.0.0")

    @server.tool()
    async def empty(ctx: Context) -> str:
        with pytest.raises(TypeError, match="key"):
            await ctx.elicit("Who?", str, key="")
        return "refused"

    async with connect(server) as client:
        assert (await client.call("empty"))["result"]["content"][0]["text"] == "refused"


async def test_sampling_and_roots_requests_join_an_elicitation_round(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server("inputs", "1.0.0")

    @server.tool()
    async def gather(ctx: Context) -> str:
        got: dict[str, Any] = {}

        async def elicit() -> None:
            outcome = await ctx.elicit("Name?", str, key="name")
            got["name"] = outcome.content if isinstance(outcome, Accepted) else None

        async def sample() -> None:
            got["llm"] = (await ctx.sample("Hi?", max_tokens=5, key="llm")).text

        async def roots() -> None:
            got["roots"] = (await ctx.list_roots(key="roots"))[0]

        async with trio.open_nursery() as nursery:
            for fn in (elicit, sample, roots):
                nursery.start_soon(fn)
        return f"{got['name']}|{got['llm']}|{got['roots']}"

    caps = {"elicitation": {}, "sampling": {}, "roots": {}}
    async with connect(server) as client:
        first = (await client.call("gather", caps=caps))["result"]
        asked = {key: r["method"] for key, r in first["inputRequests"].items()}
        assert asked == {
            "name": "elicitation/create",
            "llm": "sampling/createMessage",
            "roots": "roots/list",
        }
        assert first["inputRequests"]["llm"]["params"]["maxTokens"] == 5
        assert first["inputRequests"]["roots"]["params"] == {}
        hello = {"type": "text", "text": "Hello"}
        responses = {
            "name": {"action": "accept", "content": {"value": "Ada"}},
            "llm": {"role": "assistant", "content": hello, "model": "m"},
            "roots": {"roots": [{"uri": "file:///r", "name": "R"}]},
        }
        done = await client.call(
            "gather", state=first["requestState"], responses=responses, caps=caps
        )
        text = done["result"]["content"][0]["text"]
        assert text == "Ada|Hello|Root(uri='file:///r', name='R')"


async def test_a_request_a_tool_makes_with_ctx_request_is_an_input_request_too(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server("raw", "1.0.0")

    @server.tool()
    async def raw(ctx: Context) -> str:
        result = await ctx.request("roots/list", {}, key="mine")
        return str(result["roots"][0]["uri"])

    async with connect(server) as client:
        first = (await client.call("raw", caps={"roots": {}}))["result"]
        assert first["inputRequests"] == {"mine": {"method": "roots/list", "params": {}}}
        responses = {"mine": {"roots": [{"uri": "file:///x"}]}}
        done = await client.call("raw", state=first["requestState"], responses=responses)
        assert done["result"]["content"][0]["text"] == "file:///x"


async def test_no_elicitation_capability_gives_unsupported_and_no_input_request(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = make_server()
    async with connect(server) as client:
        final = (await client.call("ask_once", caps={}))["result"]
        assert final["resultType"] == "complete"
        assert final["content"][0]["text"] == "Unsupported"


# -- refusals -----------------------------------------------------------------------------------


def flip(token: str, at: int) -> str:
    raw = bytearray(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    raw[at] ^= 1
    return base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()


async def test_tampered_state_is_refused_and_the_call_still_resumes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = make_server()
    async with connect(server) as client:
        first = (await client.call("ask_once"))["result"]
        key, _ = only_request(first)
        token = first["requestState"]
        answer = {key: {"action": "accept", "content": {"value": "x"}}}
        for bad in (
            flip(token, 40),
            flip(token, len(token) * 3 // 4 - 1),
            token[:-4],
            "garbage!",
            "",
        ):
            refused(await client.call("ask_once", state=bad, responses=answer), "invalid")
        # Refusals delivered nothing: the genuine state still works.
        final = (await client.call("ask_once", state=token, responses=answer))["result"]
        assert final["content"][0]["text"] == "x"


async def test_mismatched_request_is_refused(autojump_clock: trio.testing.MockClock) -> None:
    server, _ = make_server()
    async with connect(server) as client:
        first = (await client.call("signup", {"plan": "free"}))["result"]
        key, _ = only_request(first)
        answer = {key: {"action": "decline"}}
        # Same tool, other arguments; and another tool.
        refused(
            await client.call(
                "signup", {"plan": "pro"}, state=first["requestState"], responses=answer
            ),
            "request_mismatch",
        )
        refused(
            await client.call("ask_once", state=first["requestState"], responses=answer),
            "request_mismatch",
        )


async def test_foreign_principal_is_refused(autojump_clock: trio.testing.MockClock) -> None:
    from erlmcp_py.mcp.jsonrpc import JsonRpcError, Request
    from erlmcp_py.mcp.mrtr import RequestStateRefused, open_continuations
    from erlmcp_py.mcp.stateless import StatelessEndpoint

    server, _ = make_server()
    async with open_runtime({"rate": 1000}) as runtime, open_continuations() as registry:
        endpoint = StatelessEndpoint(server, runtime, registry)
        params: dict[str, Any] = {"name": "ask_once", "arguments": {}, "_meta": meta()}
        first = await endpoint.handle(Request(1, "tools/call", params), principal="alice")
        key, _ = only_request(first)
        retry = {
            **params,
            "requestState": first["requestState"],
            "inputResponses": {key: {"action": "accept", "content": {"value": "mine"}}},
        }
        with pytest.raises(RequestStateRefused) as caught:
            await endpoint.handle(Request(2, "tools/call", retry), principal="mallory")
        assert caught.value.reason == "wrong_principal"
        assert isinstance(caught.value, JsonRpcError)
        assert caught.value.code == -32602
        done = await endpoint.handle(Request(3, "tools/call", retry), principal="alice")
        assert done["content"][0]["text"] == "mine"


async def test_answers_without_state_ask_again_and_unknown_or_superseded_state_is_refused(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, seen = make_server()
    async with connect(server, mrtr="suspend") as client:
        first = (await client.call("signup"))["result"]
        key, _ = only_request(first)
        answer = {key: {"action": "accept", "content": {"name": "Ada", "age": 36}}}
        # Answers without a state, under a key the tool did not name: a fresh call, asked again.
        fresh = (await client.call("signup", responses=answer))["result"]
        assert only_request(fresh)[1]["message"] == "Who are you?"
        assert fresh["requestState"] != first["requestState"]
        assert seen["outcomes"] == []

        second = (await client.call("signup", state=first["requestState"], responses=answer))[
            "result"
        ]
        key2, _ = only_request(second)
        # Replaying the first round's state: single use.
        refused(
            await client.call("signup", state=first["requestState"], responses=answer), "superseded"
        )
        final = (
            await client.call(
                "signup",
                state=second["requestState"],
                responses={key2: {"action": "accept", "content": {"confirm": False}}},
            )
        )["result"]
        assert final["resultType"] == "complete"
        # The call is over: its last state names nothing held here any more (replayed
        # states are the business of tests/mcp/test_mrtr_replay.py).
        refused(
            await client.call("signup", state=second["requestState"], responses={}),
            "unknown_continuation",
        )


async def test_bad_input_responses_are_refused_without_losing_the_round(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = make_server()
    async with connect(server) as client:
        first = (await client.call("ask_once"))["result"]
        key, _ = only_request(first)
        state = first["requestState"]
        refused(
            await client.call("ask_once", state=state, responses={key: {"action": "maybe"}}),
            "bad_input_responses",
        )
        refused(
            await client.call("ask_once", state=state, responses={key: "accept"}),
            "bad_input_responses",
        )
        frame = await client.request(
            "tools/call",
            {
                "name": "ask_once",
                "arguments": {},
                "_meta": meta(),
                "requestState": state,
                "inputResponses": [1],
            },
        )
        refused(frame, "bad_input_responses")
        final = (
            await client.call("ask_once", state=state, responses={key: {"action": "decline"}})
        )["result"]
        assert final["content"][0]["text"] == "Declined"


async def test_expired_state_is_refused_and_the_suspended_call_is_gone(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, seen = make_server()
    async with connect(server) as client:
        baseline = count_tasks()
        first = (await client.call("ask_once"))["result"]
        key, _ = only_request(first)
        await trio.sleep(10_000)  # past the runtime deadline and the state's lifetime
        frame = await client.call(
            "ask_once",
            state=first["requestState"],
            responses={key: {"action": "accept", "content": {"value": "late"}}},
        )
        refused(frame, "expired")
        registry = client.session._stateless.endpoint.registry  # type: ignore[union-attr]
        assert len(registry) == 0
        assert isinstance(seen["outcomes"][0], TimedOut)
        # + the stateless host task of the connection, and its task registry's store writer
        # and TTL timer
        assert count_tasks() == baseline + 3


# -- deadlines, concurrency, cancellation, leaks ------------------------------------------------


async def test_deadline_between_rounds_times_out_and_a_late_retry_gets_the_result(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, seen = make_server()
    async with connect(server, form_deadline_s=30.0, warn_before_s=5.0) as client:
        first = (await client.call("ask_once"))["result"]
        key, _ = only_request(first)
        await trio.sleep(31)  # the runtime's deadline passes while nobody is attached
        assert isinstance(seen["outcomes"][0], TimedOut)
        registry = client.session._stateless.endpoint.registry  # type: ignore[union-attr]
        assert registry.snapshot()["suspended"] == 0  # no task: only the result waits
        late = (
            await client.call(
                "ask_once", state=first["requestState"], responses={key: {"action": "decline"}}
            )
        )["result"]
        assert late["resultType"] == "complete"
        assert late["content"][0]["text"] == "TimedOut"
        assert len(registry) == 0
        status = await client.session._runtime.list_elicitations(tenant=client.session.tenant)
        assert [row.status for row in status] == ["timed_out"]


async def test_a_client_that_never_retries_leaks_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, seen = make_server()
    async with connect(server) as client:
        await client.call("plain", {"x": 1})  # starts the connection's stateless host
        baseline = count_tasks()
        for _ in range(20):
            only_request((await client.call("signup"))["result"])
        registry = client.session._stateless.endpoint.registry  # type: ignore[union-attr]
        assert registry.snapshot()["suspended"] == 20
        assert count_tasks() > baseline
        await trio.sleep(10_000)
        assert len(registry) == 0
        assert count_tasks() == baseline
        assert registry.snapshot()["expired"] == 20
        # Each tool saw TimedOut for both questions (each bounded by the runtime's deadline);
        # its result waited, without a task, for a retry until the state expired.
        assert len(seen["outcomes"]) == 40
        assert all(isinstance(o, TimedOut) for o in seen["outcomes"])
        metrics = server.runtime.metrics()  # type: ignore[union-attr]
        assert metrics["pending"] == 0


async def test_many_suspended_calls_resume_independently(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, seen = make_server()
    n = 200
    async with connect(server, max_pending_per_client=1000) as client:
        await client.call("plain", {"x": 1})
        baseline = count_tasks()
        firsts: dict[int, dict[str, Any]] = {}

        async def start(i: int) -> None:
            firsts[i] = (await client.call("signup", {"plan": f"p{i}"}))["result"]

        async with trio.open_nursery() as nursery:
            for i in range(n):
                nursery.start_soon(start, i)
        registry = client.session._stateless.endpoint.registry  # type: ignore[union-attr]
        assert registry.snapshot()["suspended"] == n
        finals: dict[int, str] = {}

        async def finish(i: int) -> None:
            result = firsts[i]
            key, _ = only_request(result)
            answer = {key: {"action": "accept", "content": {"name": f"user{i}", "age": i}}}
            result = (
                await client.call(
                    "signup", {"plan": f"p{i}"}, state=result["requestState"], responses=answer
                )
            )["result"]
            key, _ = only_request(result)
            answer = {key: {"action": "accept", "content": {"confirm": i % 2 == 0}}}
            result = (
                await client.call(
                    "signup", {"plan": f"p{i}"}, state=result["requestState"], responses=answer
                )
            )["result"]
            finals[i] = result["content"][0]["text"]

        async with trio.open_nursery() as nursery:
            for i in reversed(range(n)):
                nursery.start_soon(finish, i)
        assert finals == {i: f"plan=p{i}: user{i} ({i}) confirmed={i % 2 == 0}" for i in range(n)}
        assert seen["invocations"] == n
        assert len(registry) == 0
        for _ in range(5):
            await trio.lowlevel.checkpoint()
        assert count_tasks() == baseline


async def test_cancelling_a_retry_cancels_the_tool(autojump_clock: trio.testing.MockClock) -> None:
    server = Server("s", "1")
    events: list[str] = []

    @server.tool()
    async def work(ctx: Context) -> str:
        outcome = await ctx.elicit_confirm("Start?")
        events.append(type(outcome).__name__)
        try:
            await trio.sleep_forever()  # long work after the answer
        finally:
            events.append("tool cancelled")
        return "unreachable"

    async with connect(server) as client:
        first = (await client.call("work"))["result"]
        key, _ = only_request(first)
        params = {
            "name": "work",
            "arguments": {},
            "_meta": meta(),
            "requestState": first["requestState"],
            "inputResponses": {key: {"action": "accept", "content": {"confirm": True}}},
        }
        await client.send({"jsonrpc": "2.0", "id": 1000, "method": "tools/call", "params": params})
        await trio.sleep(1)  # held: the tool is working
        registry = client.session._stateless.endpoint.registry  # type: ignore[union-attr]
        assert len(registry) == 1
        assert events == ["Accepted"]
        cancel = {"requestId": 1000, "reason": "user stopped it"}
        await client.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
        await trio.sleep(1)
        assert events == ["Accepted", "tool cancelled"]
        assert len(registry) == 0
        assert not [f for f in client.out if f.get("id") == 1000]  # a cancelled call gets no answer


async def test_cancelling_a_first_call_cancels_the_tool_and_answers_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server("s", "1")
    events: list[str] = []

    @server.tool()
    async def work(ctx: Context) -> str:
        events.append("started")
        try:
            await trio.sleep_forever()  # long work before any question
        finally:
            events.append("tool cancelled")
        return "unreachable"

    async with connect(server) as client:
        params = {"name": "work", "arguments": {}, "_meta": meta()}
        await client.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params})
        await trio.sleep(1)
        registry = client.session._stateless.endpoint.registry  # type: ignore[union-attr]
        assert events == ["started"]
        assert len(registry) == 1
        cancel = {"requestId": 7, "reason": "user stopped it"}
        await client.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
        await trio.sleep(1)
        assert events == ["started", "tool cancelled"]
        assert len(registry) == 0
        assert not [f for f in client.out if f.get("id") == 7]
        # The id is free again: a new call under it is answered.
        await client.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params})
        await trio.sleep(1)
        assert events == ["started", "tool cancelled", "started"]


async def test_a_held_retry_sheds_with_a_state_only_result(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server("s", "1")
    gate = trio.Event()

    @server.tool()
    async def slow(ctx: Context) -> str:
        outcome = await ctx.elicit_confirm("Go?")
        await gate.wait()  # long work after the answer
        return f"done {type(outcome).__name__}"

    async with connect(server) as client:
        first = (await client.call("slow"))["result"]
        key, _ = only_request(first)
        held = (
            await client.call(
                "slow",
                state=first["requestState"],
                responses={key: {"action": "accept", "content": {"confirm": True}}},
            )
        )["result"]
        assert held == {
            "resultType": "input_required",
            "requestState": held["requestState"],
            "_meta": held["_meta"],
        }
        gate.set()
        final = (await client.call("slow", state=held["requestState"]))["result"]
        assert final["content"][0]["text"] == "done Accepted"


async def test_session_and_stateless_requests_share_a_connection(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = make_server()
    async with connect(server) as client:
        init = await client.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {"elicitation": {}},
                "clientInfo": {"name": "c", "version": "1"},
            },
        )
        assert init["result"]["protocolVersion"] == "2025-11-25"
        await client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        legacy = await client.request("tools/call", {"name": "plain", "arguments": {"x": 2}})
        assert legacy["result"] == {"content": [{"type": "text", "text": "4"}]}  # no resultType
        stateless = (await client.call("plain", {"x": 3}))["result"]
        assert stateless["resultType"] == "complete"


async def test_registry_bound_and_key_rotation(autojump_clock: trio.testing.MockClock) -> None:
    from erlmcp_py.core.state_token import KeyRing
    from erlmcp_py.mcp.jsonrpc import Request
    from erlmcp_py.mcp.mrtr import RequestStateRefused, open_continuations
    from erlmcp_py.mcp.stateless import StatelessEndpoint

    server, _ = make_server()
    ring = KeyRing("k1", b"1" * 32)
    async with (
        open_runtime({"rate": 1000}) as runtime,
        open_continuations(keyring=ring, max_continuations=2) as registry,
    ):
        endpoint = StatelessEndpoint(server, runtime, registry)
        params: dict[str, Any] = {"name": "ask_once", "arguments": {}, "_meta": meta()}
        await endpoint.handle(Request(1, "tools/call", params))
        a = await endpoint.handle(Request(2, "tools/call", params))
        # full: the least recently used suspended call makes room (tests/mcp/test_mrtr_eviction.py)
        await endpoint.handle(Request(3, "tools/call", params))
        assert len(registry) == 2
        assert registry.counters["evicted"] == 1

        # Rotation: states sealed with the old key still open until it is retired.
        registry.keyring = ring.rotate("k2", b"2" * 32)
        key, _ = only_request(a)
        retry = {
            **params,
            "requestState": a["requestState"],
            "inputResponses": {key: {"action": "decline"}},
        }
        done = await endpoint.handle(Request(4, "tools/call", retry))
        assert done["content"][0]["text"] == "Declined"
        assert registry.counters["replayed"] == 0  # resumed where it was
        b = await endpoint.handle(Request(5, "tools/call", params))  # a slot is free again
        assert registry.counters["evicted"] == 1
        registry.keyring = registry.keyring.retire("k1")
        key, _ = only_request(b)
        retry = {
            **params,
            "requestState": b["requestState"],
            "inputResponses": {key: {"action": "decline"}},
        }
        done = await endpoint.handle(Request(6, "tools/call", retry))  # sealed with k2
        assert done["content"][0]["text"] == "Declined"
        registry.keyring = KeyRing("k3", b"3" * 32)
        with pytest.raises(RequestStateRefused) as gone:
            await endpoint.handle(Request(7, "tools/call", retry))
        assert gone.value.reason == "invalid"  # unknown key: the log says unknown_key
        registry.close()


@pytest.mark.parametrize(
    "options",
    [
        {"state_ttl": math.inf},
        {"state_ttl": math.nan},
        {"state_ttl": 0},
        {"hold_s": 0},
        {"max_continuations": 0},
        {"mrtr": "sticky"},
        {"max_state_chars": 100},
    ],
)
async def test_registry_options_are_checked_up_front(options: dict[str, Any]) -> None:
    from erlmcp_py.mcp.mrtr import ContinuationRegistry

    async with trio.open_nursery() as nursery:
        with pytest.raises(ValueError, match="must be"):
            ContinuationRegistry(nursery, **options)


# -- how a round settles ----------------------------------------------------------------------


def _record(peer: Any, message: str) -> Any:
    """What the runtime does to ask: ``send_request`` on the call's peer."""

    def ignore(_: Any) -> None:
        pass

    return peer.send_request(
        "elicitation/create",
        {"message": message, "requestedSchema": {"type": "object"}},
        request_id=message,
        on_response=ignore,
    )


def _tool_asking_twice(gap: int) -> Any:
    async def run(peer: Any) -> Mapping[str, Any]:
        await _record(peer, "first?")
        for _ in range(gap):
            await trio.lowlevel.checkpoint()
        await _record(peer, "second?")
        await trio.sleep_forever()
        raise AssertionError

    return run


def _start(registry: Any, run: Any) -> Any:
    return registry.start(
        principal="alice",
        method="tools/call",
        params={"name": "t", "arguments": {}},
        capabilities=ClientCapabilities(frozenset({"form"})),
        protocol_version=V,
        client_id="c1",
        run=run,
    )


async def _first_round(registry: Any, gap: int) -> list[str]:
    result = await _start(registry, _tool_asking_twice(gap))
    assert result["resultType"] == "input_required"
    return sorted(r["params"]["message"] for r in result["inputRequests"].values())


async def test_requests_within_the_settle_checkpoints_share_a_round(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_continuations(settle_checkpoints=10) as registry:
        assert await _first_round(registry, gap=5) == ["first?", "second?"]


async def test_a_request_after_the_settle_checkpoints_waits_for_the_next_round(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_continuations(settle_checkpoints=10) as registry:
        assert await _first_round(registry, gap=40) == ["first?"]


def _tool_asking_while_another_question_is_on_its_way(gap: int) -> Any:
    """A question recorded at once, and one begun with it that takes ``gap`` checkpoints to
    reach its recording (as an elicitation's way through the runtime does)."""

    async def run(peer: Any) -> Mapping[str, Any]:
        async def slow() -> None:
            with peer.asking:
                for _ in range(gap):
                    await trio.lowlevel.checkpoint()
                await _record(peer, "second?")
                await trio.sleep_forever()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(slow)
            with peer.asking:
                await _record(peer, "first?")
                await trio.sleep_forever()
        raise AssertionError

    return run


async def test_a_question_begun_with_the_round_joins_it_however_late_it_is_recorded(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_continuations(settle_checkpoints=1) as registry:
        result = await _start(registry, _tool_asking_while_another_question_is_on_its_way(gap=40))
        asked = sorted(r["params"]["message"] for r in result["inputRequests"].values())
        assert asked == ["first?", "second?"]


async def test_a_failed_question_lets_the_tool_react_before_the_round_ends(
    autojump_clock: trio.testing.MockClock,
) -> None:
    from erlmcp_py.mcp.jsonrpc import JsonRpcError

    async def run(peer: Any) -> Mapping[str, Any]:
        async def waits() -> None:
            with peer.asking:
                await _record(peer, "first?")
                try:
                    await trio.sleep_forever()
                finally:
                    peer.forget_request("first?")

        async def fails() -> None:
            with peer.asking:
                await trio.lowlevel.checkpoint()
                raise RuntimeError("refused")

        async with trio.open_nursery() as nursery:  # the failure cancels the other question
            nursery.start_soon(waits)
            nursery.start_soon(fails)
        raise AssertionError

    async with open_continuations() as registry:
        with pytest.raises(JsonRpcError):  # the tool's failure, not a round asking "first?"
            await _start(registry, run)


async def test_one_principal_holds_at_most_its_share_of_the_registry(
    autojump_clock: trio.testing.MockClock,
) -> None:
    from erlmcp_py.mcp.jsonrpc import JsonRpcError, Request
    from erlmcp_py.mcp.mrtr import PRINCIPAL_BUSY, open_continuations
    from erlmcp_py.mcp.stateless import StatelessEndpoint

    server, _ = make_server()
    async with (
        open_runtime({"rate": 1000}) as runtime,
        open_continuations(max_continuations=10, max_per_principal=2) as registry,
    ):
        endpoint = StatelessEndpoint(server, runtime, registry)
        params: dict[str, Any] = {"name": "ask_once", "arguments": {}, "_meta": meta()}
        for i in range(2):
            await endpoint.handle(Request(i, "tools/call", params), principal="a", client_id="a")
        with pytest.raises(JsonRpcError) as full:
            await endpoint.handle(Request(3, "tools/call", params), principal="a", client_id="a")
        assert full.value.data == {"reason": PRINCIPAL_BUSY}
        other = await endpoint.handle(Request(4, "tools/call", params), principal="b")
        assert other["resultType"] == "input_required"
        assert registry.counters[f"refused.{PRINCIPAL_BUSY}"] == 1
        registry.close()


# -- prompts/get asks for input as tools/call does ----------------------------------------------

ALL_CAPS: dict[str, Any] = {"elicitation": {}, "sampling": {}, "roots": {}}


def prompt_server() -> tuple[Server, dict[str, Any]]:
    server = Server("prompts", "1.0.0")
    seen: dict[str, Any] = {"runs": 0, "tasks": set()}

    @server.prompt()
    async def review(ctx: Context, language: str) -> list[dict[str, Any]]:
        """Asks who reviews, in one coroutine across rounds."""
        seen["runs"] += 1
        seen["tasks"].add(id(trio.lowlevel.current_task()))
        who = await ctx.elicit(f"Who reviews the {language} code?", Person, key="reviewer")
        name = who.content.name if isinstance(who, Accepted) else type(who).__name__
        return [{"role": "user", "content": {"type": "text", "text": f"{name} reviews {language}"}}]

    @server.prompt()
    async def gather(ctx: Context) -> str:
        """Asks the user, the client's LLM and its roots at once."""
        got: dict[str, Any] = {}

        async def ask_user() -> None:
            outcome = await ctx.elicit("Topic?", str, key="topic")
            got["topic"] = outcome.content if isinstance(outcome, Accepted) else None

        async def ask_llm() -> None:
            got["draft"] = (await ctx.sample("Draft it", max_tokens=9, key="draft")).text

        async def ask_roots() -> None:
            got["roots"] = [root.uri for root in await ctx.list_roots(key="roots")]

        async with trio.open_nursery() as nursery:
            for fn in (ask_user, ask_llm, ask_roots):
                nursery.start_soon(fn)
        return f"{got['topic']}: {got['draft']} in {got['roots']}"

    @server.prompt()
    async def needs_roots(ctx: Context) -> str:
        """Raises CapabilityMissing without roots."""
        return str(await ctx.list_roots())

    @server.prompt()
    def plain() -> str:
        return "no questions"

    return server, seen


ADA = {"action": "accept", "content": {"name": "Ada", "age": 36}}


async def test_a_prompt_that_elicits_answers_input_required_then_its_messages(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, seen = prompt_server()
    async with connect(server) as client:
        first = (await client.get_prompt("review", {"language": "Rust"}))["result"]
        key, params = only_request(first)
        assert key == "reviewer"
        assert params["message"] == "Who reviews the Rust code?"
        assert "messages" not in first
        done = (
            await client.get_prompt(
                "review",
                {"language": "Rust"},
                state=first["requestState"],
                responses={key: ADA},
            )
        )["result"]
        assert done["resultType"] == "complete"
        assert done["messages"] == [
            {"role": "user", "content": {"type": "text", "text": "Ada reviews Rust"}}
        ]
        assert done["description"] == "Asks who reviews, in one coroutine across rounds."
        assert "serverInfo" in str(done["_meta"])
    assert seen["runs"] == 1  # resumed, never re-run
    assert len(seen["tasks"]) == 1


async def test_a_prompt_asks_elicitation_sampling_and_roots_in_one_round(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = prompt_server()
    async with connect(server) as client:
        first = (await client.get_prompt("gather", caps=ALL_CAPS))["result"]
        asked = {key: r["method"] for key, r in first["inputRequests"].items()}
        assert asked == {
            "topic": "elicitation/create",
            "draft": "sampling/createMessage",
            "roots": "roots/list",
        }
        responses = {
            "topic": {"action": "accept", "content": {"value": "caching"}},
            "draft": {
                "role": "assistant",
                "content": {"type": "text", "text": "TTLs"},
                "model": "m",
            },
            "roots": {"roots": [{"uri": "file:///repo"}]},
        }
        done = await client.get_prompt(
            "gather", state=first["requestState"], responses=responses, caps=ALL_CAPS
        )
        text = done["result"]["messages"][0]["content"]["text"]
        assert text == "caching: TTLs in ['file:///repo']"


async def test_a_prompts_state_is_bound_to_its_prompt_and_arguments(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = prompt_server()
    async with connect(server) as client:
        first = (await client.get_prompt("review", {"language": "Rust"}))["result"]
        state, answer = first["requestState"], {"reviewer": ADA}
        other = {"language": "Go"}
        refused(
            await client.get_prompt("review", other, state=state, responses=answer),
            "request_mismatch",
        )
        as_tool = await client.call("review", {"language": "Rust"}, state=state, responses=answer)
        assert as_tool["error"]["code"] == -32602  # no such tool: never reaches the state
        done = await client.get_prompt(
            "review", {"language": "Rust"}, state=state, responses=answer
        )
        assert done["result"]["resultType"] == "complete"


async def test_prompt_errors_are_answered_before_anything_runs(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, seen = prompt_server()
    async with connect(server) as client:
        unknown = await client.get_prompt("nope")
        assert unknown["error"]["code"] == -32602
        assert unknown["error"]["data"] == {"name": "nope"}
        missing = await client.get_prompt("review")
        assert missing["error"]["code"] == -32602
        assert "language" in missing["error"]["message"]
        registry = client.session._stateless.endpoint.registry  # type: ignore[union-attr]
        assert "started" not in registry.snapshot()  # no continuation was opened for either
        plain = (await client.get_prompt("plain"))["result"]
        assert plain["resultType"] == "complete"
        assert plain["messages"][0]["content"]["text"] == "no questions"
        no_roots = await client.get_prompt("needs_roots", caps={})
        assert no_roots["error"]["code"] == -32603
        assert "the client does not support roots" in no_roots["error"]["message"]
    assert seen["runs"] == 0  # bad arguments: the prompt function never ran


async def test_a_prompt_is_cancelled_with_its_request(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server("s", "1")
    events: list[str] = []

    @server.prompt()
    async def slow(ctx: Context) -> str:
        try:
            await ctx.elicit_confirm("Go?")
            await trio.sleep_forever()
        finally:
            events.append("cancelled")
        return "unreachable"

    async with connect(server) as client:
        first = (await client.get_prompt("slow"))["result"]
        key, _ = only_request(first)
        params = {
            "name": "slow",
            "_meta": meta(),
            "requestState": first["requestState"],
            "inputResponses": {key: {"action": "accept", "content": {"confirm": True}}},
        }
        await client.send({"jsonrpc": "2.0", "id": 77, "method": "prompts/get", "params": params})
        await trio.sleep(1)
        assert events == []
        cancel = {"requestId": 77, "reason": "stop"}
        await client.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
        await trio.sleep(1)
        assert events == ["cancelled"]
        assert not [f for f in client.out if f.get("id") == 77]


# -- a first call that already carries inputResponses ------------------------------------------


def named_server() -> tuple[Server, list[Outcome]]:
    server = Server("named", "1.0.0")
    outcomes: list[Outcome] = []

    @server.tool()
    async def greet(ctx: Context) -> str:
        outcome = await ctx.elicit("Name?", Person, key="user_name")
        outcomes.append(outcome)
        return f"Hello, {outcome.content.name}!" if isinstance(outcome, Accepted) else "no"

    @server.tool()
    async def two_steps(ctx: Context) -> str:
        first = await ctx.elicit_string("First?", "a")
        second = await ctx.elicit("Second?", Person, key="second")
        return f"{first.content if isinstance(first, Accepted) else first}/{second}"

    return server, outcomes


async def test_a_first_calls_answer_under_the_key_the_tool_names_is_used(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, outcomes = named_server()
    async with connect(server) as client:
        extra = {"action": "accept", "content": {"foo": "bar"}}
        responses = {"user_name": ADA, "unknown_extra_key": extra, "junk": 3}
        done = (await client.call("greet", responses=responses))["result"]
        assert done["resultType"] == "complete"
        assert done["content"][0]["text"] == "Hello, Ada!"
        registry = client.session._stateless.endpoint.registry  # type: ignore[union-attr]
        assert registry.snapshot()["first_call_answers"] == 2  # the object entries
    assert outcomes == [Accepted(Person(name="Ada", age=36))]


async def test_a_first_calls_answers_under_other_keys_are_ignored_and_the_tool_asks(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, outcomes = named_server()
    async with connect(server) as client:
        wrong = (await client.call("greet", responses={"wrong_key": ADA}))["result"]
        assert only_request(wrong)[0] == "user_name"
        # an answer of the wrong shape for its request is no answer: asked again
        bad = {"user_name": {"action": "maybe"}}
        assert only_request((await client.call("greet", responses=bad))["result"])[0] == "user_name"
        params = {"name": "greet", "arguments": {}, "_meta": meta(), "inputResponses": ["x"]}
        not_an_object = await client.request("tools/call", params)
        refused(not_an_object, "bad_input_responses")
    assert outcomes == []


async def test_a_first_calls_invalid_answer_is_validated_and_reprompted(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, outcomes = named_server()
    async with connect(server) as client:
        invalid = {"user_name": {"action": "accept", "content": {"name": "Ada", "age": "old"}}}
        again = (await client.call("greet", responses=invalid))["result"]
        key, params = only_request(again)
        assert key == "user_name"  # a re-prompt keeps its key
        assert "age" in params["message"]
        assert "old" not in params["message"]
        done = await client.call("greet", state=again["requestState"], responses={key: ADA})
        assert done["result"]["content"][0]["text"] == "Hello, Ada!"
    assert outcomes == [Accepted(Person(name="Ada", age=36))]


async def test_a_first_calls_answers_serve_its_first_round_only(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = named_server()
    async with connect(server) as client:
        first = (await client.call("two_steps", responses={"second": ADA}))["result"]
        key, params = only_request(first)
        assert params["message"] == "First?"
        answer = {key: {"action": "accept", "content": {"a": "one"}}}
        second = await client.call("two_steps", state=first["requestState"], responses=answer)
        key2, params2 = only_request(second["result"])  # the early answer was not kept
        assert (key2, params2["message"]) == ("second", "Second?")


async def test_a_refused_state_never_falls_back_to_the_first_calls_answers(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, outcomes = named_server()
    async with connect(server) as client:
        first = (await client.call("greet"))["result"]
        forged = flip(first["requestState"], 10)
        refused(await client.call("greet", state=forged, responses={"user_name": ADA}), "invalid")
    assert outcomes == []


# -- sampling and roots over MRTR: deadline, malformed answers -------------------------------------


async def test_an_input_request_nobody_answers_times_out_in_the_tool(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server("slow", "1")

    @server.tool()
    async def roots(ctx: Context) -> str:
        try:
            await ctx.list_roots(timeout=20)
        except trio.TooSlowError as exc:
            return f"timed out: {exc}"
        return "answered"

    async with connect(server) as client:
        first = (await client.call("roots", caps=ALL_CAPS))["result"]
        key, _ = only_request_any(first)
        await trio.sleep(21)
        late = await client.call(
            "roots", state=first["requestState"], responses={key: {"roots": []}}, caps=ALL_CAPS
        )
        text = late["result"]["content"][0]["text"]
        assert text == "timed out: the client did not answer roots/list in 20 s"


async def test_a_malformed_sampling_answer_is_a_clear_tool_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server("llm", "1")

    @server.tool()
    async def ask(ctx: Context) -> str:
        return str((await ctx.sample("Hi", max_tokens=3, key="llm")).text)

    async with connect(server) as client:
        first = (await client.call("ask", caps=ALL_CAPS))["result"]
        bad = {"llm": {"role": "assistant", "content": {"type": "text", "text": "x"}}}
        done = (await client.call("ask", state=first["requestState"], responses=bad))["result"]
        assert done["isError"] is True
        assert (
            "sampling/createMessage is malformed: model: Field required"
            in (done["content"][0]["text"])
        )


def only_request_any(result: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    assert result["resultType"] == "input_required"
    ((key, request),) = result["inputRequests"].items()
    return key, request


async def test_a_prompts_log_messages_go_to_the_request_it_works_for(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server("logs", "1")

    @server.prompt()
    async def chatty(ctx: Context) -> str:
        await ctx.log("info", "rendering")
        return "done"

    async with connect(server) as client:
        params = {
            "name": "chatty",
            "_meta": {**meta(), "io.modelcontextprotocol/logLevel": "info"},
        }
        done = await client.request("prompts/get", params)
        assert done["result"]["messages"][0]["content"]["text"] == "done"
        logged = [f for f in client.out if f.get("method") == "notifications/message"]
        assert [f["params"]["data"] for f in logged] == ["rendering"]
        assert client.out.index(logged[0]) < client.out.index(done)  # before the response


# -- where the answer is awaited --------------------------------------------------------------


class _ClientLeft(Exception):
    pass


class _OwnWait:
    """A transport's own wait (a :class:`~erlmcp_py.mcp.mrtr.Waiter`): parked until woken,
    and raising once its request's client has left."""

    def __init__(self) -> None:
        self.wakes = 0
        self.left = False
        self._woken = trio.Event()

    def wake(self) -> None:
        self.wakes += 1
        self._woken.set()

    async def park(self) -> None:
        await self._woken.wait()
        self._woken = trio.Event()
        if self.left:
            raise _ClientLeft


async def test_an_answer_awaited_in_a_waiter_of_its_own_is_woken_by_the_call(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_continuations() as registry:
        waiter = _OwnWait()
        result = await _start(registry, _tool_asking_twice(gap=0)).answer(waiter)
        assert result["resultType"] == "input_required"
        assert sorted(r["params"]["message"] for r in result["inputRequests"].values()) == [
            "first?",
            "second?",
        ]
        assert waiter.wakes >= 1


async def test_what_the_waiter_raises_cancels_the_call_and_reaches_the_caller(
    autojump_clock: trio.testing.MockClock,
) -> None:
    ended = trio.Event()

    async def work(peer: Any) -> Mapping[str, Any]:
        try:
            await trio.sleep_forever()
        finally:
            ended.set()
        raise AssertionError

    async with open_continuations() as registry, trio.open_nursery() as nursery:
        waiter = _OwnWait()

        async def client_leaves() -> None:
            await trio.sleep(1)
            waiter.left = True
            waiter.wake()

        nursery.start_soon(client_leaves)
        with pytest.raises(_ClientLeft):
            await _start(registry, work).answer(waiter)
        with trio.fail_after(1):
            await ended.wait()
        await trio.testing.wait_all_tasks_blocked()
        assert len(registry) == 0
        assert registry.counters["completed"] == 0
