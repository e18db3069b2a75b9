"""A form type's own validators are part of the form, in both protocol eras.

A model's ``field_validator``, ``model_validator`` and ``Annotated`` validators judge the
answer where the schema does: a refusal is a re-prompt carrying the validator's message, up
to ``max_reprompts`` times and then ``failed: validation``; a valid answer reaches the tool as
the model instance, made once. A validator that raises anything but a refusal (a bug) ends
only that question, ``Failed("validator_error")``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import pydantic
import pytest
import trio
import trio.testing

from erlmcp_py.client import ServerRequest, open_memory_client
from erlmcp_py.core.outcomes import Accepted, Failed
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.server import Server

ERAS = ["2025-11-25", "2026-07-28"]
CHECKS: list[str] = []  # every value the username validator saw, in order


class Signup(pydantic.BaseModel):
    username: str
    age: int = 30

    @pydantic.field_validator("username")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        CHECKS.append(value)
        if value == "admin":
            raise ValueError("the name admin is reserved")
        return value

    @pydantic.model_validator(mode="after")
    def _adult(self) -> Signup:
        if self.age < 18:
            raise AssertionError("you must be an adult to sign up")  # a refusal too
        return self


def _even(value: int) -> int:
    if value % 2:
        raise pydantic_core_error()
    return value


def pydantic_core_error() -> Exception:
    from pydantic_core import PydanticCustomError

    return PydanticCustomError("odd", "pick an even number")


class Buggy(pydantic.BaseModel):
    username: str

    @pydantic.field_validator("username")
    @classmethod
    def _broken(cls, value: str) -> str:
        return value.no_such_method()  # type: ignore[attr-defined,no-any-return]


def build() -> Server:
    server = Server("validators", "1.0", runtime_config={"rate": 1000})

    @server.tool()
    async def signup(ctx: Context) -> str:
        outcome = await ctx.elicit("Pick a user name", Signup)
        if isinstance(outcome, Accepted):
            who = outcome.content
            return f"{type(who).__name__} {who.username} {who.age}"
        return repr(outcome)

    @server.tool()
    async def even(ctx: Context) -> str:
        outcome = await ctx.elicit("Pick a number", Annotated[int, pydantic.AfterValidator(_even)])
        return repr(outcome)

    @server.tool()
    async def buggy(ctx: Context) -> str:
        outcome = await ctx.elicit("Pick a user name", Buggy)
        assert isinstance(outcome, Failed)
        return f"{outcome.reason}: {outcome.detail}"

    return server


def user(*answers: Mapping[str, Any]) -> Any:
    """A user who gives ``answers`` in turn, one per question (a re-prompt is a question)."""
    given = iter(answers)

    def answer(request: ServerRequest) -> Mapping[str, Any]:
        assert request.method == "elicitation/create"
        return {"action": "accept", "content": next(given)}

    return answer


def text(result: Mapping[str, Any]) -> str:
    return str(result["content"][0]["text"])


def messages(client: Any) -> list[str]:
    return [str(r.params["message"]) for r in client.server_requests]


@pytest.fixture(autouse=True)
def fresh_checks() -> None:
    CHECKS.clear()


@pytest.mark.parametrize("version", ERAS)
async def test_a_field_validator_refusal_is_a_reprompt_with_its_message(
    version: str, autojump_clock: trio.testing.MockClock
) -> None:
    answers = user({"username": "admin"}, {"username": "ada"})
    async with open_memory_client(build(), handler=answers, protocol_version=version) as client:
        assert text(await client.call_tool("signup")) == "Signup ada 30"
        first, reprompt = messages(client)
    assert first == "Pick a user name"
    assert reprompt.startswith("Pick a user name")
    assert "username: the name admin is reserved." in reprompt
    assert "Value error" not in reprompt
    assert CHECKS == ["admin", "ada"]  # once per answer: the validation made the instance


@pytest.mark.parametrize("version", ERAS)
async def test_a_model_validator_refusal_is_a_reprompt_for_the_whole_answer(
    version: str, autojump_clock: trio.testing.MockClock
) -> None:
    answers = user({"username": "kid", "age": 12}, {"username": "kid", "age": 19})
    async with open_memory_client(build(), handler=answers, protocol_version=version) as client:
        assert text(await client.call_tool("signup")) == "Signup kid 19"
        reprompt = messages(client)[1]
    assert "\n- you must be an adult to sign up." in reprompt
    assert "Assertion failed" not in reprompt


@pytest.mark.parametrize("version", ERAS)
async def test_refusals_until_the_reprompts_end_fail_validation(
    version: str, autojump_clock: trio.testing.MockClock
) -> None:
    answers = user(*[{"username": "admin"}] * 4)
    async with open_memory_client(build(), handler=answers, protocol_version=version) as client:
        result = text(await client.call_tool("signup"))
        assert len(client.server_requests) == 4  # the question and three re-prompts
    assert result.startswith("Failed(reason='validation'")


@pytest.mark.parametrize("version", ERAS)
async def test_an_annotated_validator_of_a_bare_type_reprompts_at_its_field(
    version: str, autojump_clock: trio.testing.MockClock
) -> None:
    answers = user({"value": 3}, {"value": 4})
    async with open_memory_client(build(), handler=answers, protocol_version=version) as client:
        assert text(await client.call_tool("even")) == "Accepted(content=4)"
        assert "value: pick an even number." in messages(client)[1]


@pytest.mark.parametrize("version", ERAS)
async def test_a_validator_with_a_bug_ends_only_its_question(
    version: str, autojump_clock: trio.testing.MockClock
) -> None:
    server = build()
    async with open_memory_client(
        server, handler=user({"username": "ada"}), protocol_version=version
    ) as client:
        result = text(await client.call_tool("buggy"))
        assert len(client.server_requests) == 1  # no re-prompt: it is not the user's fault
        assert sum(server.runtime.supervisor.restarts.values()) == 0
    assert result == "validator_error: AttributeError raised by the validator"
