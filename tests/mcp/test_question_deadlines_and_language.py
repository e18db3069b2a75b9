"""The ``Context``'s per-question deadlines and the language of what the server says to the
user (for a tool's questions and a prompt's), end to end through the memory pair, in both
protocol eras (a 2025-11-25 session, and 2026-07-28 by MRTR), on trio's autojump clock."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pytest
import trio
import trio.testing

from erlmcp_py.client import ServerRequest, open_memory_client
from erlmcp_py.core.i18n import LOCALE_META_KEY
from erlmcp_py.core.outcomes import Accepted, Outcome
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.server import Server

ERAS = ["2025-11-25", "2026-07-28"]
QUICK_FORM: dict[str, Any] = {
    "id": "quick",
    "title": "Your name, quickly",
    "fields": [{"id": "name", "type": "text", "label": "Name"}],
    "timeout": 2000,  # milliseconds
}


def build() -> tuple[Server, list[float]]:
    """A server whose tools ask with their own deadlines; each records how long it waited."""
    server = Server("deadlines", "1.0.0", runtime_config={"rate": 1000})
    waited: list[float] = []

    async def timed(ask: Any) -> str:
        start = trio.current_time()
        outcome: Outcome = await ask
        waited.append(trio.current_time() - start)
        return type(outcome).__name__ if not isinstance(outcome, Accepted) else "Accepted"

    @server.tool()
    async def form_definition(ctx: Context) -> str:
        return await timed(ctx.elicit("Who?", QUICK_FORM))

    @server.tool()
    async def form_definition_overridden(ctx: Context) -> str:
        return await timed(ctx.elicit("Who?", QUICK_FORM, timeout=5))

    @server.tool()
    async def helper(ctx: Context, kind: str, seconds: float) -> str:
        asks = {
            "string": lambda: ctx.elicit_string("Name?", timeout=seconds),
            "confirm": lambda: ctx.elicit_confirm("Sure?", timeout=seconds),
            "choice": lambda: ctx.elicit_choice("Which?", ["a", "b"], timeout=seconds),
            "titled_choice": lambda: ctx.elicit_titled_choice(
                "Which?", {"a": "A"}, timeout=seconds
            ),
            "multi_choice": lambda: ctx.elicit_multi_choice("Which?", ["a"], timeout=seconds),
            "titled_multi_choice": lambda: ctx.elicit_titled_multi_choice(
                "Which?", ["a:A"], timeout=seconds
            ),
            "typed": lambda: ctx.elicit("Sure?", bool, timeout=seconds),
        }
        return await timed(asks[kind]())

    @server.tool()
    async def bad_timeout(ctx: Context, seconds: Any) -> str:
        try:
            await ctx.elicit_confirm("Sure?", timeout=float(seconds))
        except ValueError as exc:
            return str(exc)
        return "asked"

    return server, waited


def slow_user(seconds: float) -> Any:
    """A user who answers ``accept`` after ``seconds``."""

    async def answer(request: ServerRequest) -> Mapping[str, Any]:
        await trio.sleep(seconds)
        return {"action": "accept", "content": {"name": "Ada"}}

    return answer


def text(result: Mapping[str, Any]) -> str:
    return str(result["content"][0]["text"])


@pytest.mark.parametrize("version", ERAS)
async def test_a_form_definition_timeout_of_2000_ms_ends_the_question_in_2_s(
    version: str, autojump_clock: trio.testing.MockClock
) -> None:
    server, waited = build()
    async with open_memory_client(server, handler=slow_user(60), protocol_version=version) as c:
        assert text(await c.call_tool("form_definition")) == "TimedOut"
    assert waited == [pytest.approx(2)]


@pytest.mark.parametrize("version", ERAS)
async def test_the_call_timeout_wins_over_the_form_definition_timeout(
    version: str, autojump_clock: trio.testing.MockClock
) -> None:
    server, waited = build()
    async with open_memory_client(server, handler=slow_user(4), protocol_version=version) as c:
        assert text(await c.call_tool("form_definition_overridden")) == "Accepted"
    assert waited == [pytest.approx(4)]


@pytest.mark.parametrize("version", ERAS)
@pytest.mark.parametrize(
    "kind",
    [
        "string",
        "confirm",
        "choice",
        "titled_choice",
        "multi_choice",
        "titled_multi_choice",
        "typed",
    ],
)
async def test_every_helper_takes_a_timeout(
    version: str, kind: str, autojump_clock: trio.testing.MockClock
) -> None:
    server, waited = build()
    async with open_memory_client(server, handler=slow_user(60), protocol_version=version) as c:
        result = await c.call_tool("helper", {"kind": kind, "seconds": 7})
    assert text(result) == "TimedOut"
    assert waited == [pytest.approx(7)]


@pytest.mark.parametrize("version", ERAS)
async def test_a_timeout_past_the_server_maximum_is_clamped(
    version: str, autojump_clock: trio.testing.MockClock
) -> None:
    server, waited = build()
    server.runtime_config = server.runtime_config.model_copy(
        update={"form_deadline_s": 30.0, "warn_before_s": 6.0}
    )
    async with open_memory_client(server, handler=slow_user(600), protocol_version=version) as c:
        result = await c.call_tool("helper", {"kind": "confirm", "seconds": 3600})
    assert text(result) == "TimedOut"
    assert waited == [pytest.approx(30)]


async def test_the_warning_comes_at_the_policy_proportion_of_a_question_deadline(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = build()
    async with open_memory_client(server, handler=slow_user(600)) as client:
        async with trio.open_nursery() as nursery:
            start = trio.current_time()
            nursery.start_soon(client.call_tool, "helper", {"kind": "confirm", "seconds": 10})
            await client.wait_for(lambda: bool(client.notifications))
            warned_after = trio.current_time() - start
            (method, params) = client.notifications[0]
        assert method == "notifications/message"
        assert warned_after == pytest.approx(8)  # 20 % of the time before, as 60 s of 300 s
        assert params["data"]["remainingSeconds"] == 2


async def test_an_extended_question_deadline_moves_its_warning(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, waited = build()
    async with (
        open_memory_client(server, handler=slow_user(600)) as client,
        trio.open_nursery() as nursery,
    ):
        nursery.start_soon(client.call_tool, "helper", {"kind": "confirm", "seconds": 10})
        await client.next_server_request()
        runtime = server.runtime
        tenant = client.session.tenant
        (row,) = await runtime.list_elicitations(tenant=tenant)
        await runtime.extend_timeout(row.id, tenant=tenant, seconds=20)
        await client.wait_for(lambda: bool(client.notifications))
        assert client.notifications[0][1]["data"]["remainingSeconds"] == 2
    assert waited == [pytest.approx(30)]


@pytest.mark.parametrize("bad", [0, -1, math.inf, math.nan])
async def test_a_timeout_that_is_not_positive_and_finite_is_a_clear_error(
    bad: float, autojump_clock: trio.testing.MockClock
) -> None:
    server, _ = build()
    async with open_memory_client(server, handler=slow_user(1)) as client:
        result = await client.call_tool("bad_timeout", {"seconds": str(bad)})
    assert (
        text(result) == f"timeout must be a positive, finite number of seconds, got {float(bad)!r}"
    )
    assert client.server_requests == []


# -- the language of what the server says ---------------------------------------------------------

NAME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string", "minLength": 1}},
    "required": ["name"],
}
PT_BR: dict[str, Any] = {LOCALE_META_KEY: "pt-BR"}


def asking_server() -> Server:
    server = Server("idiomas", "1.0.0", runtime_config={"rate": 1000})

    @server.tool()
    async def ask_name(ctx: Context) -> str:
        outcome = await ctx.elicit("Seu nome?", NAME_SCHEMA, timeout=10)
        return f"{type(outcome).__name__} {ctx.locale}"

    return server


def empty_then_silent(request: ServerRequest) -> Any:
    """Answers the first question with an empty name, then never again."""
    if request.id.endswith(".1"):
        return {"action": "accept", "content": {"name": ""}}
    return None


async def test_a_pt_br_session_client_gets_a_pt_br_reprompt_and_deadline_warning(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_memory_client(
        asking_server(), handler=empty_then_silent, initialize=False
    ) as client:
        await client.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {"elicitation": {"form": {}}},
                "clientInfo": {"name": "cliente", "version": "1"},
                "_meta": PT_BR,
            },
        )
        await client.notify("notifications/initialized")
        assert client.session.locale == "pt-BR"
        assert text(await client.call_tool("ask_name")) == "TimedOut pt-BR"
    reprompt = client.server_requests[1].params["message"]
    assert reprompt.startswith(
        "Seu nome?\n\nSua resposta anterior não foi aceita (tentativa 2):\n- name: "
    )
    (warning,) = [p for m, p in client.notifications if m == "notifications/message"]
    assert warning["data"]["message"] == "Este pedido expira em 2 segundos."


async def test_a_session_client_that_declares_no_locale_gets_the_server_default(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = asking_server()
    server.runtime_config = server.runtime_config.model_copy(update={"locale": "pt-BR"})
    async with open_memory_client(server, handler=empty_then_silent) as client:
        assert client.session.locale is None
        assert text(await client.call_tool("ask_name")) == "TimedOut None"
    (warning,) = [p for m, p in client.notifications if m == "notifications/message"]
    assert warning["data"]["message"] == "Este pedido expira em 2 segundos."


async def test_a_pt_br_2026_client_gets_a_pt_br_reprompt(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_memory_client(asking_server(), protocol_version="2026-07-28") as client:
        params: dict[str, Any] = {"name": "ask_name", "arguments": {}, "_meta": PT_BR}
        first = await client.request("tools/call", params)
        ((key, _asked),) = first["inputRequests"].items()
        answer = {key: {"action": "accept", "content": {"name": ""}}}
        retry = {**params, "requestState": first["requestState"], "inputResponses": answer}
        second = await client.request("tools/call", retry)
        ((key, asked),) = second["inputRequests"].items()
        assert asked["params"]["message"].startswith(
            "Seu nome?\n\nSua resposta anterior não foi aceita (tentativa 2):\n- "
        )
        answer = {key: {"action": "accept", "content": {"name": "Ana"}}}
        done = {**params, "requestState": second["requestState"], "inputResponses": answer}
        assert text(await client.request("tools/call", done)) == "Accepted pt-BR"


# -- a prompt that asks speaks the client's language too ------------------------------------------


def prompt_server() -> Server:
    server = Server("idiomas", "1.0.0", runtime_config={"rate": 1000})

    @server.prompt()
    async def greeting(ctx: Context) -> str:
        """A greeting for a name the user gives."""
        outcome = await ctx.elicit("Seu nome?", NAME_SCHEMA, timeout=10)
        name = outcome.content["name"] if isinstance(outcome, Accepted) else "?"
        return f"Olá, {name} ({ctx.locale})"

    return server


def prompt_text(result: Mapping[str, Any]) -> str:
    return str(result["messages"][0]["content"]["text"])


REPROMPT_PT_BR = "Seu nome?\n\nSua resposta anterior não foi aceita (tentativa 2):\n- name: "


async def test_a_pt_br_session_client_gets_a_pt_br_reprompt_from_a_prompt(
    autojump_clock: trio.testing.MockClock,
) -> None:
    answers = iter([{"name": ""}, {"name": "Ana"}])

    def empty_then_ana(request: ServerRequest) -> Mapping[str, Any]:
        return {"action": "accept", "content": next(answers)}

    async with open_memory_client(
        prompt_server(), handler=empty_then_ana, initialize=False
    ) as client:
        await client.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {"elicitation": {"form": {}}},
                "clientInfo": {"name": "cliente", "version": "1"},
                "_meta": PT_BR,
            },
        )
        await client.notify("notifications/initialized")
        result = await client.request("prompts/get", {"name": "greeting"})
    assert prompt_text(result) == "Olá, Ana (pt-BR)"
    first, reprompt = (request.params["message"] for request in client.server_requests)
    assert first == "Seu nome?"
    assert reprompt.startswith(REPROMPT_PT_BR)


async def test_a_pt_br_2026_client_gets_a_pt_br_reprompt_from_a_prompt(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_memory_client(prompt_server(), protocol_version="2026-07-28") as client:
        params: dict[str, Any] = {"name": "greeting", "_meta": PT_BR}
        first = await client.request("prompts/get", params)
        ((key, _asked),) = first["inputRequests"].items()
        answer = {key: {"action": "accept", "content": {"name": ""}}}
        retry = {**params, "requestState": first["requestState"], "inputResponses": answer}
        second = await client.request("prompts/get", retry)
        ((key, asked),) = second["inputRequests"].items()
        assert asked["params"]["message"].startswith(REPROMPT_PT_BR)
        answer = {key: {"action": "accept", "content": {"name": "Ana"}}}
        done = {**params, "requestState": second["requestState"], "inputResponses": answer}
        result = await client.request("prompts/get", done)
    assert result["resultType"] == "complete"
    assert prompt_text(result) == "Olá, Ana (pt-BR)"
