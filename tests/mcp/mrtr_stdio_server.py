"""A stdio server for the 2026-07-28 end-to-end tests: ``python -m tests.mcp.mrtr_stdio_server``.

A tool asking two questions one after the other, and a prompt asking three at once.

Env: ``MRTR_FORM_DEADLINE`` (seconds, default 300) sets the runtime's form deadline.
"""

from __future__ import annotations

import os
import sys

import trio
from pydantic import BaseModel

from erlmcp_py.actors.api import RuntimeConfig
from erlmcp_py.core.outcomes import Accepted
from erlmcp_py.logging import configure_logging
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.server import Server
from erlmcp_py.transports.stdio import serve_stdio


class Person(BaseModel):
    name: str
    age: int


def build() -> Server:
    deadline = float(os.environ.get("MRTR_FORM_DEADLINE", "300"))
    config = RuntimeConfig.model_validate({"form_deadline_s": deadline, "warn_before_s": 0})
    server = Server("mrtr-stdio", "1.0.0", runtime_config=config)

    @server.tool()
    async def signup(ctx: Context, plan: str = "free") -> str:
        """Asks who you are, then for confirmation: two rounds, one coroutine."""
        who = await ctx.elicit("Who are you?", Person)
        if not isinstance(who, Accepted):
            return f"{plan}: no account ({type(who).__name__})"
        sure = await ctx.elicit_confirm(f"Create a {plan} account for {who.content.name}?")
        if not isinstance(sure, Accepted):
            return f"{plan}: no account ({type(sure).__name__})"
        return f"{plan}: {who.content.name} ({who.content.age}) confirmed={sure.content}"

    @server.prompt()
    async def briefing(ctx: Context, topic: str) -> str:
        """Asks the user, the client's LLM and the client's roots at once, then briefs."""
        got: dict[str, str] = {}

        async def reader() -> None:
            who = await ctx.elicit(f"Who reads the {topic} brief?", Person, key="reader")
            got["reader"] = who.content.name if isinstance(who, Accepted) else type(who).__name__

        async def draft() -> None:
            sampled = await ctx.sample(f"Draft a {topic} brief", max_tokens=20, key="draft")
            got["draft"] = str(sampled.text)

        async def roots() -> None:
            got["roots"] = ",".join(root.uri for root in await ctx.list_roots(key="roots"))

        async with trio.open_nursery() as nursery:
            for ask in (reader, draft, roots):
                nursery.start_soon(ask)
        return f"For {got['reader']}: {got['draft']} (roots: {got['roots']})"

    return server


def serve_over_stdio(server: Server) -> None:
    """Serve ``server`` on this process's stdio: MCP on the real stdout, anything else
    printed (and the JSON logs) on stderr."""
    configure_logging("json", "info", sys.stderr)
    mcp_out = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    trio.run(lambda: serve_stdio(server, stdout_fd=mcp_out))


def main() -> None:
    serve_over_stdio(build())


if __name__ == "__main__":
    main()
