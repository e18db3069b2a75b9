"""A server for ``erlmcp-py serve --server tests.deploy.stubborn_server:build``: one tool that
ignores cancellation for a minute, so that a graceful stop cannot finish in time (the
``--shutdown-timeout`` bound and the second signal are tested with it)."""

from __future__ import annotations

import structlog
import trio

from erlmcp_py.actors.api import RuntimeConfig
from erlmcp_py.mcp.server import Server


def build(config: RuntimeConfig) -> Server:
    """The example's policy, one stubborn tool."""
    server = Server("stubborn", "1.0.0", runtime_config=config)

    @server.tool()
    async def stubborn() -> str:
        """Sleep a minute, shielded from cancellation."""
        structlog.get_logger("stubborn").warning("stubborn_started")
        with trio.CancelScope(shield=True):
            await trio.sleep(60)
        return "done"

    return server
