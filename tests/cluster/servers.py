"""The server the cluster's replicas run (``erlmcp-py serve --server
tests.cluster.servers:build``): tools that ask several questions in turn, and log each run and
each answer with the call's ``tag``, so that a replica's log shows which calls it served."""

from __future__ import annotations

import structlog

from erlmcp_py.actors.api import RuntimeConfig
from erlmcp_py.core.outcomes import Accepted
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.server import Server

log = structlog.get_logger("cluster-test")

WHO = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
    "required": ["name", "age"],
}


def build(config: RuntimeConfig) -> Server:
    server = Server("cluster-test", "1.0.0", runtime_config=config)

    @server.tool()
    async def signup(ctx: Context, tag: str, plan: str = "free") -> str:
        """Three questions, one after the other: who (a form, re-prompted when invalid), the
        city, then a confirmation. Logs every run (the first one and each replay)."""
        log.info("tool_run", tool="signup", tag=tag)
        who = await ctx.elicit("Who are you?", WHO)
        log.info("answer_received", tag=tag, question="who")
        if not isinstance(who, Accepted):
            return f"{plan}: no account"
        name = who.content["name"]
        city = await ctx.elicit_string(f"Where do you live, {name}?", "city")
        log.info("answer_received", tag=tag, question="city")
        sure = await ctx.elicit_confirm(f"Create a {plan} account for {name}?")
        log.info("answer_received", tag=tag, question="confirm")
        if not isinstance(city, Accepted) or not isinstance(sure, Accepted):
            return f"{plan}: no account"
        return f"{plan}: {name}, {who.content['age']}, {city.content}, confirmed={sure.content}"

    return server
