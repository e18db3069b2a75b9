"""Servers for ``erlmcp-py serve --server tests.deploy.servers:build`` (the graceful-stop
tests): the example's policy and two tools that make a stop hard."""

from __future__ import annotations

import structlog
import trio

from erlmcp_py.actors.api import RuntimeConfig
from erlmcp_py.core.outcomes import Accepted
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.server import Server

log = structlog.get_logger("test-server")


def build(config: RuntimeConfig) -> Server:
    server = Server("deploy-test", "1.0.0", runtime_config=config)

    @server.tool()
    async def stubborn() -> str:
        """Sleep a minute, shielded from cancellation: no graceful stop can finish."""
        log.warning("stubborn_started")
        with trio.CancelScope(shield=True):
            await trio.sleep(60)
        return "done"

    @server.tool()
    async def slow() -> str:
        """Sleep a minute (cancellable): a graceful stop answers it with an error."""
        log.warning("slow_started")
        await trio.sleep(60)
        return "done"

    @server.tool()
    async def brief() -> str:
        """Work a third of a second: a call a drain lets finish."""
        await trio.sleep(0.3)
        return "done"

    @server.tool()
    async def long_tail(ctx: Context) -> str:
        """Ask; then take many turns of the scheduler (no waiting on time or I/O) to answer."""
        outcome = await ctx.elicit_confirm("Proceed?")
        for _ in range(500):
            await trio.lowlevel.checkpoint()
        return "accepted" if isinstance(outcome, Accepted) else f"not accepted: {outcome}"

    return server
