"""A form a tool or prompt asks for that cannot be sent fails at registration, not at the first
call: the forms the function's code names are built when it is decorated."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field

from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.server import Server


class Expense(BaseModel):
    amount: float = Field(gt=0)  # an exclusive bound: no requestedSchema can say it


class Fine(BaseModel):
    amount: float = Field(ge=0)


class Nested(BaseModel):
    inner: Fine  # a nested object: the MCP subset is flat


class Forms:
    expense = Expense


NOT_FLAT = {"type": "object", "properties": {"where": {"type": "object"}}}


def test_a_tool_asking_an_exclusive_bound_fails_at_its_decorator() -> None:
    server = Server("forms", "1.0.0")
    with pytest.raises(TypeError) as refused:

        @server.tool()
        async def record_expense(ctx: Context) -> str:
            first = await ctx.elicit("Fine?", Fine)
            second = await ctx.elicit("How much?", Expense)
            return f"{first} {second}"

    message = str(refused.value)
    assert "tool 'record_expense'" in message
    assert "exclusive bounds (gt/lt) cannot be expressed" in message
    assert f"line {record_expense_line()}" in message
    assert "record_expense" not in server.tools


def record_expense_line() -> int:
    """The line of the ``Expense`` question above."""
    import inspect

    source, first = inspect.getsourcelines(
        test_a_tool_asking_an_exclusive_bound_fails_at_its_decorator
    )
    return first + next(i for i, line in enumerate(source) if '"How much?"' in line)


@pytest.mark.parametrize(
    "ask",
    [
        lambda: _tool_asking_nested,
        lambda: _tool_asking_dotted,
        lambda: _tool_asking_keyword,
        lambda: _tool_asking_a_schema_dict,
    ],
)
def test_every_way_of_naming_a_form_is_checked(ask: object) -> None:
    server = Server("forms", "1.0.0")
    with pytest.raises(TypeError, match="asks for a form that cannot be sent"):
        server.add_tool(ask())  # type: ignore[operator]


async def _tool_asking_nested(ctx: Context) -> str:
    return str(await ctx.elicit("Nested?", Nested))


async def _tool_asking_dotted(ctx: Context) -> str:
    return str(await ctx.elicit("How much?", Forms.expense))


async def _tool_asking_keyword(ctx: Context) -> str:
    return str(await ctx.elicit("How much?", form=Expense))


async def _tool_asking_a_schema_dict(ctx: Context) -> str:
    return str(await ctx.elicit("Where?", NOT_FLAT))


def test_a_prompt_asking_a_bad_form_fails_at_its_decorator() -> None:
    server = Server("forms", "1.0.0")
    with pytest.raises(TypeError, match="prompt 'plan'"):

        @server.prompt()
        async def plan(ctx: Context) -> str:
            return str(await ctx.elicit("How much?", Expense))


def test_forms_known_only_at_run_time_and_good_forms_register() -> None:
    server = Server("forms", "1.0.0")

    @server.tool()
    async def fine(ctx: Context) -> str:
        return str(await ctx.elicit("How much?", Fine))

    @server.tool()
    async def made_in_the_call(ctx: Context, strict: bool = False) -> str:
        form = Expense if strict else Fine  # bound by the call: checked when asked
        return str(await ctx.elicit("How much?", form))

    @server.tool()
    async def not_a_context_call(ctx: Context) -> str:
        other = Helper()
        return str(await other.elicit("x", Expense))

    assert set(server.tools) == {"fine", "made_in_the_call", "not_a_context_call"}


class Helper:
    async def elicit(self, message: str, form: object) -> str:
        return message


def test_a_tool_whose_source_cannot_be_read_still_registers() -> None:
    namespace: dict[str, object] = {"Context": Context, "Expense": Expense}
    # a function with no source file, as a REPL makes
    exec(
        "async def typed_in(ctx: Context) -> str:\n"
        "    return str(await ctx.elicit('How much?', Expense))\n",
        namespace,
    )
    server = Server("forms", "1.0.0")
    server.add_tool(namespace["typed_in"])  # type: ignore[arg-type]
    assert "typed_in" in server.tools
