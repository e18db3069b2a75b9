"""Resources, resource templates, subscriptions, prompts, completion and ``ctx.sample``,
in-process against the real session engine on trio's autojump clock."""

from __future__ import annotations

import base64
import json
from typing import Annotated, Any, Literal

import pytest
import trio
import trio.lowlevel
import trio.testing
from pydantic import Field

from erlmcp_py.actors.peer import PeerGone
from erlmcp_py.app.examples.everything import PNG_1X1, STATIC_TEXT
from erlmcp_py.app.examples.server import build_server
from erlmcp_py.core.outcomes import Accepted
from erlmcp_py.core.versions import V_2026_07_28
from erlmcp_py.mcp._prompts import make_prompt
from erlmcp_py.mcp._uritemplate import UriTemplate, UriTemplateError
from erlmcp_py.mcp.client_results import SampledMessage
from erlmcp_py.mcp.completion import MAX_VALUES, CompletionRequest
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.errors import CapabilityMissing, ClientRequestError
from erlmcp_py.mcp.resources import Contents, ResourceNotFound
from erlmcp_py.mcp.server import Server
from erlmcp_py.mcp.session import MAX_SUBSCRIPTIONS
from tests.mcp.harness import Wire, connect

WATCHED = "test://watched-resource"


def error_of(response: dict[str, Any]) -> tuple[int, str]:
    return response["error"]["code"], response["error"]["message"]


# -- URI templates (pure) ------------------------------------------------------------------------


def test_uri_template_expand_and_match() -> None:
    t = UriTemplate.parse("test://template/{id}/data{suffix}")
    assert t.variables == ("id", "suffix")
    assert t.expand({"id": "a b/c", "suffix": ".json"}) == "test://template/a%20b%2Fc/data.json"
    assert t.match("test://template/a%20b%2Fc/data.json") == {"id": "a b/c", "suffix": ".json"}
    assert t.match("test://template/1/2/data.x") is None  # '/' never inside a value
    assert t.match("test://template//data.x") is None  # empty value
    assert t.match("test://other/1/data.x") is None


@pytest.mark.parametrize(
    "bad", ["test://{+path}", "test://{a,b}", "test://{id:3}", "test://{a}/{a}", "test://{", "x://"]
)
def test_uri_template_refuses_what_is_not_level_1(bad: str) -> None:
    with pytest.raises(UriTemplateError):
        UriTemplate.parse(bad)


# -- registration ------------------------------------------------------------------------------


def test_registration_errors() -> None:
    server = Server("t", "1")
    server.add_resource(lambda: "x", "test://a", name="a")
    with pytest.raises(ValueError, match="already registered"):
        server.add_resource(lambda: "y", "test://a", name="a2")
    with pytest.raises(ValueError, match="absolute"):
        server.add_resource(lambda: "x", "no-scheme", name="b")
    with pytest.raises(ValueError, match="resource_template"):
        server.add_resource(lambda: "x", "test://{id}", name="c")
    with pytest.raises(TypeError, match="no value"):
        server.add_resource(lambda needed: "x", "test://d", name="d")

    def by_id(id: str) -> str:
        return id

    with pytest.raises(TypeError, match="no parameter for other"):
        server.add_resource_template(by_id, "test://{id}/{other}")

    def extra(id: str, nope: str) -> str:
        return id

    with pytest.raises(TypeError, match="not a template variable"):
        server.add_resource_template(extra, "test://{id}")

    def numbers(n: int) -> str:
        return str(n)

    with pytest.raises(ValueError, match="level-1"):
        server.add_resource_template(numbers, "test://{+n}")

    def bad_prompt(count: int) -> str:
        return str(count)

    with pytest.raises(TypeError, match="strings"):
        server.add_prompt(bad_prompt)
    server.add_prompt(lambda: "hi", name="p")
    with pytest.raises(ValueError, match="already registered"):
        server.add_prompt(lambda: "hi", name="p")
    with pytest.raises(ValueError, match="exactly one"):
        server.completion(argument="x")(lambda r: [])
    server.completion()(lambda r: [])
    with pytest.raises(ValueError, match="already registered"):
        server.completion()(lambda r: [])


async def test_capabilities_only_for_what_is_registered(
    autojump_clock: trio.testing.MockClock,
) -> None:
    bare = Server("bare", "1")
    async with connect(bare) as wire:
        caps = (await wire.initialize())["result"]["capabilities"]
        assert caps == {"tools": {"listChanged": False}, "logging": {}}
        for method, params in [
            ("resources/list", {}),
            ("resources/read", {"uri": "test://x"}),
            ("resources/subscribe", {"uri": "test://x"}),
            ("prompts/list", {}),
            ("completion/complete", {}),
        ]:
            assert error_of(await wire.request(method, params))[0] == -32601, method
    async with connect(build_server()) as wire:
        caps = (await wire.initialize())["result"]["capabilities"]
        assert caps["resources"] == {"subscribe": True, "listChanged": False}
        assert caps["prompts"] == {"listChanged": False}
        assert caps["completions"] == {}


async def test_only_after_initialize(autojump_clock: trio.testing.MockClock) -> None:
    async with connect(build_server()) as wire:
        assert error_of(await wire.request("resources/list"))[0] == -32600


# -- resources ---------------------------------------------------------------------------------


async def test_everything_resources(autojump_clock: trio.testing.MockClock) -> None:
    async with connect(build_server()) as wire:
        await wire.initialize()
        listed = (await wire.request("resources/list"))["result"]["resources"]
        by_uri = {r["uri"]: r for r in listed}
        assert set(by_uri) == {"test://static-text", "test://static-binary", WATCHED}
        assert all(r["name"] and r["description"] for r in listed)
        assert by_uri["test://static-binary"]["mimeType"] == "image/png"
        templates = (await wire.request("resources/templates/list"))["result"]
        assert [t["uriTemplate"] for t in templates["resourceTemplates"]] == [
            "test://template/{id}/data"
        ]

        text = (await wire.request("resources/read", {"uri": "test://static-text"}))["result"]
        assert text["contents"] == [
            {"uri": "test://static-text", "mimeType": "text/plain", "text": STATIC_TEXT}
        ]
        binary = (await wire.request("resources/read", {"uri": "test://static-binary"}))["result"]
        (item,) = binary["contents"]
        assert item["mimeType"] == "image/png"
        assert base64.b64decode(item["blob"]) == base64.b64decode(PNG_1X1)

        data = await wire.request("resources/read", {"uri": "test://template/123/data"})
        (item,) = data["result"]["contents"]
        assert item["uri"] == "test://template/123/data"
        assert item["mimeType"] == "application/json"
        assert json.loads(item["text"]) == {
            "id": "123",
            "templateTest": True,
            "data": "Data for ID: 123",
        }


async def test_resource_errors(autojump_clock: trio.testing.MockClock) -> None:
    server = Server("t", "1")

    @server.resource("test://broken", description="raises")
    def broken() -> str:
        raise RuntimeError("secret detail")

    @server.resource("test://gone")
    def gone() -> str:
        raise ResourceNotFound("test://gone")

    @server.resource_template("test://items/{n}")
    def item(n: int) -> dict[str, int]:
        return {"n": n, "double": 2 * n}

    async with connect(server) as wire:
        await wire.initialize()
        code, message = error_of(await wire.request("resources/read", {"uri": "test://nope"}))
        assert (code, message) == (-32002, "Resource not found: test://nope")
        missing = await wire.request("resources/read", {"uri": "test://nope"})
        assert missing["error"]["data"] == {"uri": "test://nope"}
        assert error_of(await wire.request("resources/read", {"uri": "test://gone"}))[0] == -32002
        code, message = error_of(await wire.request("resources/read", {"uri": "test://broken"}))
        assert code == -32603
        assert "test://broken" in message
        assert "secret" not in message
        code, message = error_of(await wire.request("resources/read", {"uri": 5}))
        assert code == -32602
        assert "uri" in message
        assert error_of(await wire.request("resources/read", {}))[0] == -32602
        assert error_of(await wire.request("resources/list", {"cursor": "x"}))[0] == -32602
        # typed template variables: converted, and a refused value is "not found"
        read = await wire.request("resources/read", {"uri": "test://items/21"})
        assert json.loads(read["result"]["contents"][0]["text"]) == {"n": 21, "double": 42}
        assert error_of(await wire.request("resources/read", {"uri": "test://items/x"}))[0] == (
            -32002
        )
        # the session keeps serving
        assert (await wire.request("ping"))["result"] == {}


async def test_resource_return_values(autojump_clock: trio.testing.MockClock) -> None:
    server = Server("t", "1")

    @server.resource("test://two")
    async def two() -> list[Contents]:
        await trio.lowlevel.checkpoint()
        return [Contents("a"), Contents(b"\x00\x01", mime_type="application/x-raw", uri="x://b")]

    @server.resource("test://md", mime_type="text/markdown")
    def md() -> str:
        return "# hi"

    async with connect(server) as wire:
        await wire.initialize()
        contents = (await wire.request("resources/read", {"uri": "test://two"}))["result"]
        assert contents["contents"] == [
            {"uri": "test://two", "mimeType": "text/plain", "text": "a"},
            {"uri": "x://b", "mimeType": "application/x-raw", "blob": "AAE="},
        ]
        md_read = (await wire.request("resources/read", {"uri": "test://md"}))["result"]
        assert md_read["contents"][0]["mimeType"] == "text/markdown"


async def test_slow_read_is_cancellable(autojump_clock: trio.testing.MockClock) -> None:
    server = Server("t", "1")
    started = trio.Event()

    @server.resource("test://slow")
    async def slow() -> str:
        started.set()
        await trio.sleep_forever()
        raise AssertionError  # pragma: no cover

    async with connect(server) as wire:
        await wire.initialize()
        await wire.feed(
            {
                "jsonrpc": "2.0",
                "id": 50,
                "method": "resources/read",
                "params": {"uri": "test://slow"},
            }
        )
        await started.wait()
        assert (await wire.request("ping"))["result"] == {}  # feed did not wait on the read
        await wire.notify("notifications/cancelled", {"requestId": 50})
        await trio.sleep(1)
        assert not [f for f in wire.out if f.get("id") == 50]


# -- subscriptions -------------------------------------------------------------------------------


async def test_subscribe_notify_unsubscribe(autojump_clock: trio.testing.MockClock) -> None:
    server = build_server()
    async with connect(server) as wire:
        await wire.initialize()
        assert (await wire.request("resources/subscribe", {"uri": WATCHED}))["result"] == {}
        assert wire.session.subscriptions == {WATCHED}
        assert await server.notify_resource_updated(WATCHED) == 1
        assert await server.notify_resource_updated("test://static-text") == 0
        result = await wire.call("test_update_watched_resource")
        assert "version 1" in result["result"]["content"][0]["text"]
        assert wire.notifications("notifications/resources/updated") == [
            {"uri": WATCHED},
            {"uri": WATCHED},
        ]
        read = await wire.request("resources/read", {"uri": WATCHED})
        assert "version 1" in read["result"]["contents"][0]["text"]
        assert (await wire.request("resources/unsubscribe", {"uri": WATCHED}))["result"] == {}
        assert (await wire.request("resources/unsubscribe", {"uri": WATCHED}))["result"] == {}
        assert await server.notify_resource_updated(WATCHED) == 0
        assert len(wire.notifications("notifications/resources/updated")) == 2
        # templated URIs can be subscribed to; unknown ones cannot
        templated = {"uri": "test://template/7/data"}
        assert (await wire.request("resources/subscribe", templated))["result"] == {}
        code, _ = error_of(await wire.request("resources/subscribe", {"uri": "test://nope"}))
        assert code == -32002
        assert error_of(await wire.request("resources/subscribe", {"uri": None}))[0] == -32602
    assert server.sessions == set()  # the closed session is forgotten
    assert await server.notify_resource_updated(WATCHED) == 0


async def test_subscriptions_are_per_session_and_bounded(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = build_server()
    async with connect(server) as first, connect(server) as second:
        await first.initialize()
        await second.initialize()
        await first.request("resources/subscribe", {"uri": WATCHED})
        assert await server.notify_resource_updated(WATCHED) == 1
        assert first.notifications("notifications/resources/updated") == [{"uri": WATCHED}]
        assert second.notifications("notifications/resources/updated") == []
        second.session.subscriptions.update(f"test://template/{i}/data" for i in range(1024))
        assert len(second.session.subscriptions) == MAX_SUBSCRIPTIONS
        too_many = await second.request("resources/subscribe", {"uri": WATCHED})
        assert error_of(too_many)[0] == -32602
        again = await second.request("resources/subscribe", {"uri": "test://template/1/data"})
        assert again["result"] == {}


# -- prompts -------------------------------------------------------------------------------------


async def test_everything_prompts(autojump_clock: trio.testing.MockClock) -> None:
    async with connect(build_server()) as wire:
        await wire.initialize()
        prompts = (await wire.request("prompts/list"))["result"]["prompts"]
        by_name = {p["name"]: p for p in prompts}
        assert set(by_name) == {
            "test_simple_prompt",
            "test_prompt_with_arguments",
            "test_prompt_with_embedded_resource",
            "test_prompt_with_image",
            "test_input_required_result_prompt",
        }
        assert all(p["description"] for p in prompts)
        # its Context parameter is injected, not an argument
        assert "arguments" not in by_name["test_input_required_result_prompt"]
        assert by_name["test_prompt_with_arguments"]["arguments"] == [
            {"name": "arg1", "description": "First test argument", "required": True},
            {"name": "arg2", "description": "Second test argument", "required": True},
        ]
        assert "arguments" not in by_name["test_simple_prompt"]

        simple = (await wire.request("prompts/get", {"name": "test_simple_prompt"}))["result"]
        assert simple["messages"] == [
            {
                "role": "user",
                "content": {"type": "text", "text": "This is a simple prompt for testing."},
            }
        ]
        with_args = await wire.request(
            "prompts/get",
            {"name": "test_prompt_with_arguments", "arguments": {"arg1": "hello", "arg2": "world"}},
        )
        assert with_args["result"]["messages"][0]["content"]["text"] == (
            "Prompt with arguments: arg1='hello', arg2='world'"
        )
        embedded = await wire.request(
            "prompts/get",
            {
                "name": "test_prompt_with_embedded_resource",
                "arguments": {"resourceUri": "test://example-resource"},
            },
        )
        first, second = embedded["result"]["messages"]
        assert first["content"]["type"] == "resource"
        assert first["content"]["resource"]["uri"] == "test://example-resource"
        assert second["content"]["text"] == "Please process the embedded resource above."
        image = (await wire.request("prompts/get", {"name": "test_prompt_with_image"}))["result"]
        assert image["messages"][0]["content"] == {
            "type": "image",
            "data": PNG_1X1,
            "mimeType": "image/png",
        }


async def test_prompt_errors(autojump_clock: trio.testing.MockClock) -> None:
    server = Server("t", "1")

    @server.prompt(description="Needs two")
    def two(a: str, b: str | None = None) -> str:
        return f"{a}-{b}"

    @server.prompt()
    async def broken() -> object:
        return 42

    @server.prompt()
    def crashes() -> str:
        raise RuntimeError("secret detail")

    async with connect(server) as wire:
        await wire.initialize()
        listed = (await wire.request("prompts/list"))["result"]["prompts"]
        assert listed[0]["arguments"] == [
            {"name": "a", "required": True},
            {"name": "b", "required": False},
        ]
        ok = await wire.request("prompts/get", {"name": "two", "arguments": {"a": "x"}})
        assert ok["result"]["messages"][0]["content"]["text"] == "x-None"
        assert ok["result"]["description"] == "Needs two"
        code, message = error_of(await wire.request("prompts/get", {"name": "two"}))
        assert (code, message) == (-32602, "Missing required argument for prompt 'two': a")
        code, message = error_of(await wire.request("prompts/get", {"name": "nope"}))
        assert (code, message) == (-32602, "Unknown prompt: nope")
        wrong = await wire.request("prompts/get", {"name": "two", "arguments": {"a": 1}})
        assert error_of(wrong) == (
            -32602,
            "Invalid params: arguments.a: Input should be a valid string",
        )
        code, message = error_of(await wire.request("prompts/get", {"name": "broken"}))
        assert code == -32603
        code, message = error_of(await wire.request("prompts/get", {"name": "crashes"}))
        assert code == -32603
        assert "secret" not in message


async def test_prompt_return_shapes(autojump_clock: trio.testing.MockClock) -> None:
    server = Server("t", "1")

    @server.prompt()
    def dialogue() -> list[Any]:
        return [
            "question",
            {"role": "assistant", "content": {"type": "text", "text": "answer"}},
            {"type": "text", "text": "follow-up"},
        ]

    @server.prompt()
    def whole() -> dict[str, Any]:
        return {"description": "custom", "messages": ["m"]}

    @server.prompt()
    def bad_role() -> dict[str, Any]:
        return {"role": "system", "content": {"type": "text", "text": "x"}}

    async with connect(server) as wire:
        await wire.initialize()
        got = (await wire.request("prompts/get", {"name": "dialogue"}))["result"]["messages"]
        assert [m["role"] for m in got] == ["user", "assistant", "user"]
        assert [m["content"]["text"] for m in got] == ["question", "answer", "follow-up"]
        whole_result = (await wire.request("prompts/get", {"name": "whole"}))["result"]
        assert whole_result["description"] == "custom"
        assert error_of(await wire.request("prompts/get", {"name": "bad_role"}))[0] == -32603


def test_a_prompts_context_parameter_is_injected_not_an_argument() -> None:
    async def ask(ctx: Context, topic: str) -> str:
        return topic

    spec = make_prompt(ask, context_type=Context)
    assert spec.context_param == "ctx"
    assert [a.name for a in spec.arguments] == ["topic"]
    # without a context type the parameter would be an argument, and not a string one
    with pytest.raises(TypeError, match="ctx"):
        make_prompt(ask)


async def test_a_prompt_that_takes_a_context_needs_one_to_render() -> None:
    async def ask(ctx: Context) -> str:
        return "never"

    with pytest.raises(TypeError, match="takes a context"):
        await make_prompt(ask, context_type=Context).render({})


async def test_in_a_session_a_prompt_asks_through_server_requests(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server("t", "1")

    @server.prompt()
    async def brief(ctx: Context, topic: str) -> str:
        outcome = await ctx.elicit_string(f"Who reads the {topic} brief?", "reader")
        draft = await ctx.sample(f"Draft a {topic} brief", max_tokens=10)
        roots = await ctx.list_roots()
        reader = outcome.content if isinstance(outcome, Accepted) else type(outcome).__name__
        return f"{reader}: {draft.text} ({roots[0].uri})"

    @server.prompt()
    async def samples(ctx: Context) -> str:
        return str(await ctx.sample("x", max_tokens=1))

    async with connect(server) as wire, trio.open_nursery() as nursery:
        await wire.initialize({"elicitation": {}, "sampling": {}, "roots": {}})
        rid = next(wire.ids)
        params = {"name": "brief", "arguments": {"topic": "cache"}}
        msg = {"jsonrpc": "2.0", "id": rid, "method": "prompts/get", "params": params}
        nursery.start_soon(wire.feed, msg)
        asked = await wire.server_request(0)
        assert asked["method"] == "elicitation/create"
        assert asked["params"]["message"] == "Who reads the cache brief?"
        await wire.answer(asked["id"], {"action": "accept", "content": {"reader": "Ada"}})
        sampled = await wire.server_request(1)
        assert sampled["method"] == "sampling/createMessage"
        reply = {"role": "assistant", "content": {"type": "text", "text": "TTL"}, "model": "m"}
        await wire.answer(sampled["id"], reply)
        listed = await wire.server_request(2)
        assert listed["method"] == "roots/list"
        await wire.answer(listed["id"], {"roots": [{"uri": "file:///r"}]})
        done = (await wire.response(rid))["result"]
        assert done["messages"][0]["content"]["text"] == "Ada: TTL (file:///r)"
        assert "resultType" not in done  # the session era's GetPromptResult

    async with connect(server) as wire:
        await wire.initialize({"elicitation": {}})  # no sampling: a clear error, nothing sent
        code, message = error_of(await wire.request("prompts/get", {"name": "samples"}))
        assert code == -32603
        assert message == "Prompt 'samples' failed: the client does not support sampling"
        assert not [f for f in wire.out if "method" in f and "id" in f]


# -- completion ----------------------------------------------------------------------------------


def complete_params(ref: dict[str, Any], name: str, value: str, **context: str) -> dict[str, Any]:
    params: dict[str, Any] = {"ref": ref, "argument": {"name": name, "value": value}}
    if context:
        params["context"] = {"arguments": context}
    return params


async def complete(wire: Wire, *args: Any, **context: str) -> dict[str, Any]:
    return await wire.request("completion/complete", complete_params(*args, **context))


async def test_everything_completion(autojump_clock: trio.testing.MockClock) -> None:
    async with connect(build_server()) as wire:
        await wire.initialize()
        ref = {"type": "ref/prompt", "name": "test_prompt_with_arguments"}
        got = (await complete(wire, ref, "arg1", "test"))["result"]["completion"]
        assert got == {
            "values": ["test", "testValue1", "testValue2"],
            "total": 3,
            "hasMore": False,
        }
        template = {"type": "ref/resource", "uri": "test://template/{id}/data"}
        ids = (await complete(wire, template, "id", "1"))["result"]["completion"]["values"]
        assert ids == ["1", "123"]


async def test_completion_sources_and_errors(autojump_clock: trio.testing.MockClock) -> None:
    server = Server("t", "1")
    seen: list[CompletionRequest] = []

    @server.prompt()
    def pick(
        colour: Literal["red", "green", "grey"],
        city: Annotated[str, Field(description="A city")],
        many: str = "",
    ) -> str:
        return colour

    @server.completion(prompt="pick", argument="city")
    async def cities(request: CompletionRequest) -> list[str]:
        seen.append(request)
        return [c for c in ("Paris", "Porto", "Paris") if c.startswith(request.value)]

    @server.completion()
    def everything_else(request: CompletionRequest) -> list[str]:
        return [f"{request.argument}{i}" for i in range(250)]

    async with connect(server) as wire:
        await wire.initialize()
        ref = {"type": "ref/prompt", "name": "pick"}
        colours = (await complete(wire, ref, "colour", "gr"))["result"]["completion"]
        assert colours["values"] == ["green", "grey"]
        found = await complete(wire, ref, "city", "P", colour="red")
        assert found["result"]["completion"]["values"] == ["Paris", "Porto"]  # unique
        assert seen[-1] == CompletionRequest(
            ref_type="ref/prompt", ref="pick", argument="city", value="P", context={"colour": "red"}
        )
        many = (await complete(wire, ref, "many", ""))["result"]["completion"]
        assert len(many["values"]) == MAX_VALUES
        assert (many["total"], many["hasMore"]) == (250, True)

        code, message = error_of(
            await complete(wire, {"type": "ref/prompt", "name": "no"}, "a", "")
        )
        assert (code, message) == (-32602, "Unknown prompt: no")
        code, message = error_of(await complete(wire, ref, "nope", ""))
        assert code == -32602
        assert "no argument 'nope'" in message
        code, _ = error_of(
            await complete(wire, {"type": "ref/resource", "uri": "x://{a}"}, "a", "")
        )
        assert code == -32602
        assert error_of(await complete(wire, {"type": "ref/other"}, "a", ""))[0] == -32602
        missing = await wire.request("completion/complete", {"ref": ref})
        assert error_of(missing)[0] == -32602


async def test_literal_arguments_alone_offer_completion(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server("t", "1")

    @server.prompt()
    def mood(level: Literal["low", "high"]) -> str:
        return level

    async with connect(server) as wire:
        caps = (await wire.initialize())["result"]["capabilities"]
        assert caps["completions"] == {}
        got = await complete(wire, {"type": "ref/prompt", "name": "mood"}, "level", "")
        assert got["result"]["completion"]["values"] == ["low", "high"]
        bad = await wire.request("prompts/get", {"name": "mood", "arguments": {"level": "mid"}})
        assert error_of(bad)[0] == -32602


# -- ctx.request / ctx.sample --------------------------------------------------------------------


def sampling_server() -> tuple[Server, list[Any]]:
    server = Server("t", "1")
    outcomes: list[Any] = []

    @server.tool()
    async def ask(ctx: Context, prompt: str) -> str:
        try:
            result = await ctx.sample(prompt, max_tokens=50, system_prompt="be brief", timeout=30)
        except (CapabilityMissing, ClientRequestError, trio.TooSlowError, PeerGone) as exc:
            outcomes.append(exc)
            return f"failed: {type(exc).__name__}"
        outcomes.append(result)
        return str(result.text)

    return server, outcomes


async def test_sample_round_trip(autojump_clock: trio.testing.MockClock) -> None:
    server, outcomes = sampling_server()
    async with connect(server) as wire, trio.open_nursery() as nursery:
        await wire.initialize({"sampling": {}})
        call = wire.start_call(nursery, "ask", {"prompt": "2+2?"})
        request = await wire.server_request()
        assert request["method"] == "sampling/createMessage"
        assert request["params"] == {
            "messages": [{"role": "user", "content": {"type": "text", "text": "2+2?"}}],
            "maxTokens": 50,
            "systemPrompt": "be brief",
        }
        reply = {"role": "assistant", "content": {"type": "text", "text": "4"}, "model": "m"}
        await wire.answer(request["id"], reply)
        response = await wire.response(call)
        assert response["result"]["content"][0]["text"] == "4"
        assert outcomes == [
            SampledMessage(role="assistant", content=reply["content"], model="m", stop_reason=None)
        ]


async def test_sample_errors(autojump_clock: trio.testing.MockClock) -> None:
    server, outcomes = sampling_server()
    async with connect(server) as wire, trio.open_nursery() as nursery:
        await wire.initialize({})  # no sampling capability: nothing is sent
        assert (await wire.call("ask", {"prompt": "x"}))["result"]["content"][0]["text"] == (
            "failed: CapabilityMissing"
        )
        assert not [f for f in wire.out if f.get("method") == "sampling/createMessage"]

    server, outcomes = sampling_server()
    async with connect(server) as wire, trio.open_nursery() as nursery:
        await wire.initialize({"sampling": {}})
        call = wire.start_call(nursery, "ask", {"prompt": "x"})
        request = await wire.server_request()
        await wire.feed(
            {
                "jsonrpc": "2.0",
                "id": request["id"],
                "error": {"code": -1, "message": "user said no"},
            }
        )
        await wire.response(call)
        assert isinstance(outcomes[-1], ClientRequestError)
        assert (outcomes[-1].code, outcomes[-1].message) == (-1, "user said no")

        call = wire.start_call(nursery, "ask", {"prompt": "never answered"})
        request = await wire.server_request(1)
        response = await wire.response(call)
        assert response["result"]["content"][0]["text"] == "failed: TooSlowError"
        assert {"requestId": request["id"], "reason": "timed out"} in wire.notifications(
            "notifications/cancelled"
        )
        await wire.answer(request["id"], {"late": True})  # ignored
        assert (await wire.request("ping"))["result"] == {}


# -- 2026-07-28 (stateless) ----------------------------------------------------------------------

STATELESS_META: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": V_2026_07_28,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
}


async def test_stateless_requests(autojump_clock: trio.testing.MockClock) -> None:
    async with connect(build_server()) as wire:

        async def stateless(method: str, **params: Any) -> dict[str, Any]:
            return await wire.request(method, {**params, "_meta": STATELESS_META})

        caps = (await stateless("server/discover"))["result"]["capabilities"]
        assert caps["resources"] == {"listChanged": False}
        assert caps["prompts"] == {"listChanged": False}
        assert caps["completions"] == {}
        listed = (await stateless("resources/list"))["result"]
        assert listed["resultType"] == "complete"
        assert listed["cacheScope"] == "public"
        assert len(listed["resources"]) == 3
        read = (await stateless("resources/read", uri="test://static-text"))["result"]
        assert read["contents"][0]["text"] == STATIC_TEXT
        assert read["resultType"] == "complete"
        # 2026-07-28 answers an unknown resource with invalid params (-32002 in sessions)
        assert error_of(await stateless("resources/read", uri="test://nope"))[0] == -32602
        prompt = (await stateless("prompts/get", name="test_simple_prompt"))["result"]
        assert prompt["messages"][0]["role"] == "user"
        ref = {"type": "ref/prompt", "name": "test_prompt_with_arguments"}
        done = await stateless(
            "completion/complete", ref=ref, argument={"name": "arg2", "value": "w"}
        )
        assert done["result"]["completion"]["values"] == ["world"]
        assert error_of(await stateless("resources/subscribe", uri=WATCHED))[0] == -32601
