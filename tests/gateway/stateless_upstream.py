"""An upstream for the gateway's tests: an erlmcp-py server spoken to on 2026-07-28.

Served with ``erlmcp-py serve --server tests.gateway.stateless_upstream:server`` (stdio or
``--transport http``). Its tool ``ask_person`` and prompt ``greeting`` call ``ctx.elicit``, which
on 2026-07-28 is an ``InputRequiredResult`` and a retry. With ``GATEWAY_TEST_MARKS`` naming a
directory, it appends there every ``inputResponses`` a retry brought (``input_responses.jsonl``)
and every outcome its tool's question ended with (``answers.jsonl``). With
``STATELESS_UPSTREAM_ONLY=1`` it serves 2026-07-28 only: ``initialize`` is refused ``-32022``, as
a server without the session era answers.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from erlmcp_py import Accepted, Context, Server
from erlmcp_py.actors.runtime import Runtime
from erlmcp_py.mcp.completion import CompletionRequest
from erlmcp_py.mcp.jsonrpc import JsonRpcError, Message, Request
from erlmcp_py.mcp.meta import UNSUPPORTED_PROTOCOL_VERSION
from erlmcp_py.mcp.mrtr import Attachment, ContinuationRegistry
from erlmcp_py.mcp.session import ServerSession
from erlmcp_py.mcp.stateless import StatelessEndpoint

MARKS = os.environ.get("GATEWAY_TEST_MARKS")
ONLY = os.environ.get("STATELESS_UPSTREAM_ONLY") == "1"


def mark(name: str, record: Any) -> None:
    if MARKS is not None:
        with (Path(MARKS) / name).open("a") as file:
            file.write(json.dumps(record) + "\n")


class Person(BaseModel):
    name: str = Field(description="Your name")
    age: int = Field(ge=0, le=150)


class ModernOnlySession(ServerSession):
    """A session that refuses ``initialize``: the server speaks 2026-07-28 only."""

    async def dispatch(self, message: Message) -> None:
        if isinstance(message, Request) and message.method == "initialize":
            refusal = JsonRpcError(
                UNSUPPORTED_PROTOCOL_VERSION,
                "Unsupported protocol version: this server speaks 2026-07-28 only",
                {"supported": ["2026-07-28"]},
                message.id,
            )
            await self.send_raw(refusal.encode())
            return
        await super().dispatch(message)


class RecordingEndpoint(StatelessEndpoint):
    """The 2026-07-28 endpoint, writing down every ``inputResponses`` it is given."""

    def accept(self, request: Request, **options: Any) -> Attachment:
        params = request.params if isinstance(request.params, Mapping) else {}
        if "inputResponses" in params:
            mark("input_responses.jsonl", params["inputResponses"])
        return super().accept(request, **options)


class StatelessUpstream(Server):
    session_class = ModernOnlySession if ONLY else ServerSession

    def stateless_endpoint(
        self, runtime: Runtime, registry: ContinuationRegistry, **options: Any
    ) -> StatelessEndpoint:
        return RecordingEndpoint(self, runtime, registry, **options)


server = StatelessUpstream("stateless-upstream", "1.0", instructions="A 2026-07-28 server.")


@server.tool()
async def ask_person(ctx: Context) -> str:
    """Ask who the user is."""
    outcome = await ctx.elicit("Who are you?", Person, key="person")
    if isinstance(outcome, Accepted):
        person = outcome.content
        mark("answers.jsonl", {"outcome": "Accepted", "content": person.model_dump()})
        return f"accept: {person.name} ({person.age})"
    mark("answers.jsonl", {"outcome": type(outcome).__name__})
    return type(outcome).__name__.lower()


@server.tool()
async def echo(text: str) -> str:
    """Say it back."""
    return text


@server.prompt()
async def greeting(ctx: Context, language: str) -> str:
    """Greet the user, whose name it asks."""
    outcome = await ctx.elicit("Your name?", Person, key="who")
    name = outcome.content.name if isinstance(outcome, Accepted) else "stranger"
    return f"Greet {name} in {language}."


@server.completion(prompt="greeting", argument="language")
def languages(request: CompletionRequest) -> list[str]:
    return [x for x in ("English", "Esperanto", "French") if x.startswith(request.value)]


@server.resource("test://motto", mime_type="text/plain")
def motto() -> str:
    """The server's motto."""
    return "Ask once, answer well."
