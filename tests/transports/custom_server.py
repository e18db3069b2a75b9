"""Servers for ``erlmcp-py serve --server MODULE:NAME`` (tests/transports/test_stdio.py)."""

from __future__ import annotations

from erlmcp_py.actors.api import RuntimeConfig
from erlmcp_py.core.outcomes import Accepted
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.server import Server


def build(config: RuntimeConfig) -> Server:
    """A factory: gets the policy built from the command's options."""
    server = Server("custom", "2.0.0", runtime_config=config)

    @server.tool()
    async def policy(ctx: Context) -> str:
        outcome = await ctx.elicit_confirm("Show the policy?")
        if not isinstance(outcome, Accepted):
            return type(outcome).__name__
        cfg = server.runtime_config
        return f"rate={cfg.rate} deadline={cfg.form_deadline_s:g}"

    return server


#: A ready-made server object (keeps its own policy but for the options given).
instance = build(RuntimeConfig.model_validate({"rate": 7}))

not_a_server = 42
