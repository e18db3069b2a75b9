"""An upstream for the gateway's tests: the official ``mcp`` 2.3.0 ``MCPServer``, with
imperative ``ctx.elicit`` / ``ctx.elicit_url`` tools and one of every other feature.

Run as ``python sdk_upstream.py stdio`` or ``python sdk_upstream.py http PORT`` (uvicorn, as
``benchmarks/bench_http.py`` runs the SDK). With ``GATEWAY_TEST_MARKS`` naming a directory,
a tool cancelled by its client writes ``cancelled-<tool>`` there, and ``answers`` appends
every answer the upstream received to ``answers.jsonl`` there.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
from mcp import types
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, Field

MARKS = os.environ.get("GATEWAY_TEST_MARKS")

server = MCPServer(
    "sdk-upstream", instructions="An SDK server behind the gateway.", log_level="WARNING"
)


def mark(name: str, record: Any = None) -> None:
    if MARKS is None:
        return
    path = Path(MARKS)
    if record is None:
        (path / name).write_text("1")
    else:
        with (path / name).open("a") as file:
            file.write(json.dumps(record) + "\n")


class Person(BaseModel):
    name: str = Field(description="Your name")
    age: int = Field(ge=0, le=150)


class Credentials(BaseModel):
    api_key: str


@server.tool()
def echo(text: str) -> str:
    """Say it back."""
    return text


@server.tool()
def pid() -> int:
    """This process's id."""
    return os.getpid()


@server.tool()
async def ask_person(ctx: Context) -> str:
    """Ask who the user is (the SDK's titled schema)."""
    result = await ctx.elicit("Who are you?", Person)
    mark("answers.jsonl", result.model_dump(mode="json"))
    if result.action == "accept":
        return f"accept: {result.data.name} ({result.data.age})"
    return result.action


@server.tool()
async def ask_key(ctx: Context) -> str:
    """Ask for an API key (a secret)."""
    try:
        result = await ctx.elicit("Your API key?", Credentials)
    except Exception as exc:  # the gateway refused: the tool says why
        return f"refused: {exc}"
    mark("answers.jsonl", result.model_dump(mode="json"))
    if result.action == "accept":
        return f"accept: key of {len(result.data.api_key)} characters"
    return result.action


@server.tool()
async def ask_raw(ctx: Context, schema: dict[str, Any]) -> str:
    """Ask with the requestedSchema given."""
    try:
        result = await ctx.session.elicit_form("Fill this in", schema, ctx.request_id)
    except Exception as exc:
        return f"refused: {exc}"
    mark("answers.jsonl", result.model_dump(mode="json", exclude_none=True))
    return json.dumps(result.model_dump(mode="json", exclude_none=True), sort_keys=True)


@server.tool()
async def ask_url(ctx: Context, url: str, elicitation_id: str = "upstream-eid-1") -> str:
    """Send the user to a URL."""
    try:
        result = await ctx.elicit_url("Sign in, please", url, elicitation_id)
    except Exception as exc:
        return f"refused: {exc}"
    return result.action


@server.tool()
async def complete_url(ctx: Context, elicitation_id: str = "upstream-eid-1") -> str:
    """The out-of-band flow of a URL elicitation finished."""
    await ctx.session.send_elicit_complete(elicitation_id)
    return "completed"


@server.tool()
async def slow(ctx: Context, seconds: float = 30.0) -> str:
    """Report progress, log, then wait."""
    await ctx.report_progress(1, 3, "started")
    await ctx.info("slow is running")
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        mark("cancelled-slow")
        raise
    return "done"


@server.tool()
async def ask_then_wait(ctx: Context, marks: str, seconds: float = 60.0) -> str:
    """Ask who the user is, then wait; answered, write ``answered-ask_then_wait`` in the
    directory ``marks`` (a gateway started without ``GATEWAY_TEST_MARKS`` names it), and
    cancelled, ``cancelled-ask_then_wait``."""
    await ctx.elicit("Who are you?", Person)
    (Path(marks) / "answered-ask_then_wait").write_text("1")
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        (Path(marks) / "cancelled-ask_then_wait").write_text("1")
        raise
    return "done"


@server.tool()
async def ask_then_report(ctx: Context, steps: int = 3) -> str:
    """Ask who the user is, then report the progress of each step of the work and log it."""
    result = await ctx.elicit("Who are you?", Person)
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
        await ctx.info(f"step {step} of {steps}")
    return f"{result.action}: {steps} steps"


@server.tool()
async def sample(ctx: Context) -> str:
    """Ask the client's model."""
    result = await ctx.session.create_message(
        messages=[
            types.SamplingMessage(role="user", content=types.TextContent(type="text", text="hi"))
        ],
        max_tokens=10,
    )
    content = result.content
    return content.text if isinstance(content, types.TextContent) else "?"


@server.tool()
async def roots(ctx: Context) -> str:
    """The client's roots."""
    result = await ctx.session.list_roots()
    return ",".join(str(root.uri) for root in result.roots)


@server.tool()
async def ping_client(ctx: Context) -> str:
    """Ping the client."""
    await ctx.session.send_ping()
    return "pong"


@server.tool()
async def changes(ctx: Context) -> str:
    """Announce changes: tools, resources, prompts, one resource."""
    await ctx.session.send_tool_list_changed()
    await ctx.session.send_resource_list_changed()
    await ctx.session.send_prompt_list_changed()
    await ctx.session.send_resource_updated("test://motd")
    return "announced"


@server.tool()
async def client_caps(ctx: Context) -> str:
    """The capabilities the client declared to this server."""
    caps = ctx.session.client_params.capabilities if ctx.session.client_params else None
    return json.dumps(
        caps.model_dump(mode="json", by_alias=True, exclude_none=True) if caps else None
    )


@server.tool()
async def meta(ctx: Context) -> str:
    """The ``_meta`` of this call, as received."""
    received = ctx.request_context.meta
    return json.dumps(dict(received) if received else None, sort_keys=True)


@server.tool()
async def ask_with_timeout(ctx: Context, seconds: float) -> str:
    """Ask with the question's own deadline in the request's ``_meta``."""
    params = types.ElicitRequestFormParams(
        message="Quick: your name?",
        requested_schema={"type": "object", "properties": {"name": {"type": "string"}}},
        _meta={"io.erlmcp/timeout": seconds},
    )
    result = await ctx.session.send_request(types.ElicitRequest(params=params), types.ElicitResult)
    return result.action


@server.tool()
def book(city: str, nights: Annotated[int, Field(ge=1, le=30)], breakfast: bool = False) -> str:
    """Book a stay (required arguments of primitive types)."""
    mark("booked.jsonl", {"city": city, "nights": nights, "breakfast": breakfast})
    return f"booked {city} for {nights} nights"


class Point(BaseModel):
    x: float
    y: float


@server.tool()
def locate(where: Point, label: str) -> str:
    """Place a label (an object argument: no form can ask for it)."""
    mark("located.jsonl", {"label": label})
    return f"{label} at {where.x},{where.y}"


def grown(colour: Literal["red", "green"]) -> str:
    """A tool added while the server runs."""
    return f"grown {colour}"


@server.tool()
async def grow(ctx: Context) -> str:
    """Add the tool ``grown`` and announce the change."""
    server.add_tool(grown)
    await ctx.session.send_tool_list_changed()
    return "grew"


@server.tool()
def fails() -> str:
    """Raise."""
    raise ValueError("it failed on purpose")


@server.resource("test://motd", mime_type="text/plain")
def motd() -> str:
    """The message of the day."""
    return "Welcome."


@server.resource("test://items/{id}")
def item(id: str) -> str:
    """One item."""
    return f"item {id}"


@server.prompt()
def review(code: str, language: Literal["python", "rust"] = "python") -> str:
    """Review some code."""
    return f"Please review this {language}:\n{code}"


@server.completion()
async def complete(ref: Any, argument: Any, context: Any) -> types.Completion:
    values = [v for v in ("python", "rust") if v.startswith(argument.value)]
    return types.Completion(values=values)


async def subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
    mark("subscribed.jsonl", str(params.uri))
    return types.EmptyResult()


server._lowlevel_server.add_request_handler(  # the SDK's MCPServer has no public hook for it
    "resources/subscribe", types.SubscribeRequestParams, subscribe
)


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        server.run()
    else:
        import uvicorn

        app = server.streamable_http_app(host="127.0.0.1", max_sessions=None)
        uvicorn.run(
            app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning", access_log=False
        )
