"""``Server``: its runtime policy given as a ``RuntimeConfig`` or as a mapping of its fields;
its URL policy is the one its runtime applies, and a URL is checked (its host resolved) once."""

from __future__ import annotations

import pydantic
import pytest
import trio
import trio.testing

from erlmcp_py import Context, RuntimeConfig, Server, UnsafeURLError, Unsupported, UrlPolicy
from erlmcp_py.mcp.context import ToolServer
from tests.mcp.harness import connect


def test_runtime_config_accepts_a_mapping_as_open_runtime_does() -> None:
    server = Server("s", "1", runtime_config={"rate": 3, "url_dev": True})
    assert isinstance(server.runtime_config, RuntimeConfig)
    assert server.runtime_config.rate == 3
    assert server.url_policy.allow_http_loopback_dev is True


def test_runtime_config_defaults_and_objects_are_kept() -> None:
    config = RuntimeConfig.model_validate({"rate": 7})
    assert Server("s", "1", runtime_config=config).runtime_config is config
    assert Server("s", "1").runtime_config == RuntimeConfig.model_validate({})


def test_a_bad_runtime_config_mapping_names_the_field() -> None:
    with pytest.raises(pydantic.ValidationError, match="rate"):
        Server("s", "1", runtime_config={"rate": "many"})


async def _public(host: str) -> list[str]:
    await trio.lowlevel.checkpoint()
    return ["93.184.215.14"]


async def test_the_servers_url_policy_is_the_one_its_runtime_applies(
    autojump_clock: trio.testing.MockClock,
) -> None:
    marking = UrlPolicy(idn="mark")
    server = Server("s", "1", url_policy=marking, url_resolver=_public)
    started: list[str] = []

    @server.tool()
    async def visit(ctx: Context) -> str:
        handle = await ctx.begin_elicit_url("Open the shop", "https://bücher.example/cart")
        assert not isinstance(handle, Unsupported)
        started.append(handle.id)
        # the tool owns the elicitation: it waits, or its return would abandon the question
        return repr(await ctx.wait(handle))

    form = {
        "id": "shop",
        "title": "Your shop",
        "fields": [{"id": "site", "type": "url", "label": "Site", "required": True}],
    }

    @server.tool()
    async def ask_site(ctx: Context) -> str:
        outcome = await ctx.elicit("Where is your shop?", form)
        return repr(outcome)

    async with connect(server) as wire:
        assert server.runtime is not None
        assert server.runtime.url_policy is marking
        await wire.initialize({"elicitation": {"form": {}, "url": {}}})
        async with trio.open_nursery() as nursery:
            visiting = wire.start_call(nursery, "visit")
            request = await wire.server_request(0)
            assert request["params"]["url"] == "https://xn--bcher-kva.example/cart"
            await wire.answer(request["id"], {"action": "decline"})
            visited = await wire.response(visiting)
        assert "Declined" in visited["result"]["content"][0]["text"], visited
        async with trio.open_nursery() as nursery:
            rid = wire.start_call(nursery, "ask_site")
            asked = await wire.server_request(1)
            site = {"site": "https://xn--bcher-kva.example/"}  # an IDN host: accepted when marked
            await wire.answer(asked["id"], {"action": "accept", "content": site})
            answered = await wire.response(rid)
        assert "Accepted" in answered["result"]["content"][0]["text"], answered
    assert len(started) == 1


async def test_a_url_mode_question_resolves_its_host_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    resolved: list[str] = []

    async def counting(host: str) -> list[str]:
        resolved.append(host)
        return await _public(host)

    server = Server("s", "1", url_resolver=counting)

    @server.tool()
    async def visit(ctx: Context) -> str:
        return repr(await ctx.elicit_url("Open the shop", "https://shop.example/cart"))

    async with connect(server) as wire:
        await wire.initialize({"elicitation": {"form": {}, "url": {}}})
        async with trio.open_nursery() as nursery:
            rid = wire.start_call(nursery, "visit")
            request = await wire.server_request(0)
            await wire.answer(request["id"], {"action": "decline"})
            answered = await wire.response(rid)
    assert "Declined" in answered["result"]["content"][0]["text"], answered
    assert resolved == ["shop.example"]


@pytest.mark.parametrize("url", ["", "ftp://shop.example/", "https://127.0.0.1/"])
async def test_a_url_the_policy_refuses_is_an_error_and_nothing_is_sent(
    url: str, autojump_clock: trio.testing.MockClock
) -> None:
    server = Server("s", "1", url_resolver=_public)

    @server.tool()
    async def visit(ctx: Context) -> str:
        try:
            await ctx.elicit_url("Open the shop", url)
        except UnsafeURLError as exc:
            return f"refused: {exc.reason}"
        return "asked"

    async with connect(server) as wire:
        await wire.initialize({"elicitation": {"form": {}, "url": {}}})
        answered = await wire.call("visit")
        assert answered["result"]["content"][0]["text"].startswith("refused: ")
        assert not [f for f in wire.out if f.get("method") == "elicitation/create"]


def test_a_server_is_what_a_context_sees_of_its_server() -> None:
    server = Server("acme", "1.0", title="Acme")

    @server.tool(title="Sign in")
    async def sign_in() -> str:
        return "ok"

    @server.tool()
    async def plain() -> str:
        return "ok"

    seen: ToolServer = server  # mypy checks the protocol; this checks what it answers
    assert (seen.name, seen.title) == ("acme", "Acme")
    assert seen.tool_title("sign_in") == "Sign in"
    assert seen.tool_title("plain") is None
    assert seen.tool_title("no_such_tool") is None
