"""An upstream for the gateway's tests written on fastmcp 4.x, with a tool that asks with
``ctx.elicit``. It runs on the interpreter of fastmcp's own virtualenv (``.ci/upstreams.sh``),
never imported by the tests.

Run as ``python fastmcp_upstream.py stdio`` or ``python fastmcp_upstream.py http PORT``. With
``GATEWAY_TEST_MARKS`` naming a directory, every answer the tool received is appended to
``answers.jsonl`` there.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from fastmcp import Context, FastMCP  # type: ignore[import-not-found]
from pydantic import BaseModel, Field

MARKS = os.environ.get("GATEWAY_TEST_MARKS")

server = FastMCP("fastmcp-upstream", instructions="A fastmcp server behind the gateway.")


class Person(BaseModel):
    name: str = Field(description="Your name")
    age: int = Field(ge=0, le=150)


def record(answer: dict[str, object]) -> None:
    if MARKS is not None:
        with (Path(MARKS) / "answers.jsonl").open("a") as file:
            file.write(json.dumps(answer) + "\n")


@server.tool
async def ask_person(ctx: Context) -> str:
    """Ask who the user is."""
    result = await ctx.elicit("Who are you?", Person)
    if result.action == "accept":
        record({"action": "accept", "data": result.data.model_dump()})
        return f"accept: {result.data.name} ({result.data.age})"
    record({"action": result.action})
    return result.action


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        server.run(show_banner=False)
    else:
        server.run(
            "http", host="127.0.0.1", port=int(sys.argv[2]), show_banner=False, log_level="warning"
        )
