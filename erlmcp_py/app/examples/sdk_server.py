"""A server on the official MCP Python SDK (``mcp``'s ``MCPServer``), as people write them:
its tools ask with ``ctx.elicit`` and nothing else. ``erlmcp-py demo --gateway`` serves it
through ``erlmcp-py gateway``, which asks its questions through the runtime.

Run over stdio: ``python -m erlmcp_py.app.examples.sdk_server`` (needs the ``mcp`` package:
``pip install 'erlmcp-py[gateway-demo]'``).
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, Field

server = MCPServer("people", instructions="An MCP SDK server.", log_level="WARNING")


class Person(BaseModel):
    name: str = Field(description="Your name")
    age: int = Field(ge=0, le=150)


@server.tool()
async def register(ctx: Context) -> str:
    """Ask who the user is, and say what came back."""
    result = await ctx.elicit("Who are you?", Person)
    if result.action == "accept":
        return f"registered {result.data.name}, {result.data.age}"
    return f"not registered: the SDK tool received {result.action!r}"


@server.tool()
def book(city: str, nights: Annotated[int, Field(ge=1, le=30)]) -> str:
    """Book a stay."""
    return f"booked {city} for {nights} nights"


if __name__ == "__main__":
    server.run()
