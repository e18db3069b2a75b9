"""A server for ``erlmcp-py serve --server tests.mcp.asking_server:build`` (the client's tests,
tests/client/test_stdio_client.py and tests/client/test_eras.py): tools that ask once, twice,
and without end."""

from __future__ import annotations

from pydantic import BaseModel, Field

from erlmcp_py.actors.api import RuntimeConfig
from erlmcp_py.core.outcomes import Accepted
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.server import Server


class Person(BaseModel):
    name: str
    age: int = Field(ge=0, le=150)


def build(config: RuntimeConfig) -> Server:
    """The server, with the policy the command's options built."""
    server = Server("asking", "1.0.0", runtime_config=config)

    @server.tool()
    async def greet(ctx: Context) -> str:
        """One question."""
        who = await ctx.elicit("Who are you?", Person)
        if not isinstance(who, Accepted):
            return f"no answer ({type(who).__name__})"
        return f"hello {who.content.name} ({who.content.age})"

    @server.tool()
    async def signup(ctx: Context, plan: str = "free") -> str:
        """Two questions, one after the other (an invalid answer is asked again)."""
        who = await ctx.elicit("Who are you?", Person)
        if not isinstance(who, Accepted):
            return f"{plan}: no account ({type(who).__name__})"
        sure = await ctx.elicit_confirm(f"Create a {plan} account for {who.content.name}?")
        if not isinstance(sure, Accepted):
            return f"{plan}: no account ({type(sure).__name__})"
        return f"{plan}: {who.content.name} ({who.content.age}) confirmed={sure.content}"

    @server.tool()
    async def pester(ctx: Context) -> str:
        """Asks again whatever the answer: never completes."""
        while True:
            await ctx.elicit_confirm("Again?")

    return server
