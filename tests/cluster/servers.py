"""The server the cluster's replicas run (``erlmcp-py serve --server
tests.cluster.servers:build``): the bundled example server (its URL-mode sign-in,
``demo_url_sign_in``, and what completes it, ``demo_complete_sign_in``, among its tools), plus
a tool that asks several questions in turn and logs each run and each answer with the call's
``tag``, so that a replica's log shows which calls it served, a tool that reads an
elicitation's status the way an application would, and two tools that run as tasks: an
approval (two form questions, then its side effect, logged) and a URL-mode sign-in."""

from __future__ import annotations

import structlog

from erlmcp_py.actors.api import RuntimeConfig
from erlmcp_py.app.examples.server import build_server
from erlmcp_py.core.errors import ElicitationNotFound
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
    server = build_server(config)

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

    @server.tool()
    async def elicitation_status(ctx: Context, elicitation_id: str, tag: str) -> str:
        """The status of one of the caller's elicitations (``unknown`` for an id it may not
        see), wherever it runs; logs the ``tag``."""
        log.info("status_read", tag=tag)
        try:
            info = await ctx.runtime.get_elicitation_status(elicitation_id, tenant=ctx.tenant)
        except ElicitationNotFound:
            return "unknown"
        return str(info.status)

    @server.tool(task=True)
    async def approve(ctx: Context, tag: str, item: str) -> str:
        """Who approves ``item`` (a form), then that person's confirmation; the approval is
        recorded (logged ``approval_recorded``) after the last answer, once per answer. Logs
        every run and each answer the tool receives."""
        log.info("tool_run", tool="approve", tag=tag)
        who = await ctx.elicit(f"Who approves {item}?", WHO, key="who")
        log.info("answer_received", tag=tag, question="who")
        if not isinstance(who, Accepted):
            return f"{item}: nobody"
        name = who.content["name"]
        sure = await ctx.elicit_confirm(f"{name}, do you approve {item}?")
        log.info("answer_received", tag=tag, question="confirm")
        approved = isinstance(sure, Accepted) and sure.content is True
        log.info("approval_recorded", tag=tag, item=item, approved=approved)
        return f"{item}: {name} approved={approved}"

    @server.tool(task=True)
    async def sign_in_task(ctx: Context, tag: str) -> str:
        """One question in URL mode (only the replica that asked can receive its answer)."""
        log.info("tool_run", tool="sign_in_task", tag=tag)
        outcome = await ctx.elicit_url("Sign in to Example", "https://93.184.215.14/sign-in")
        return type(outcome).__name__

    return server
