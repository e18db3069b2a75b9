"""The bundled example server (``erlmcp-py serve``).

It exposes the tools the official conformance suite calls, with the exact names and schemas it
checks (``test_elicitation``, ``test_elicitation_sep1034_defaults``,
``test_elicitation_sep1330_enums`` and a few of the everything-server tools), a demo tool for
each kind of elicitation (a multi-field form, each of the mcp-bash-style helpers, a URL-mode
sign-in and its completion, the ``-32042`` error), and ``test_elicitation_url``; with
:mod:`~erlmcp_py.app.examples.everything` and :mod:`~erlmcp_py.app.examples.conformance`,
every tool, resource and prompt the conformance suite calls by name that this server can
serve.
"""

from __future__ import annotations

import json
from datetime import date
from enum import Enum
from typing import Annotated, Any

import trio
from pydantic import BaseModel, Field

from erlmcp_py.actors.api import RuntimeConfig
from erlmcp_py.app.examples.conformance import add_conformance_tools
from erlmcp_py.app.examples.everything import add_everything_tools
from erlmcp_py.core.errors import ErlmcpError, UnsafeURLError
from erlmcp_py.core.outcomes import (
    Accepted,
    Cancelled,
    Declined,
    Failed,
    Outcome,
    TimedOut,
    Unsupported,
)
from erlmcp_py.core.schema import (
    boolean_field,
    enum_field,
    integer_field,
    multi_select_field,
    number_field,
    object_schema,
    string_field,
)
from erlmcp_py.core.typeschema import Format
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.errors import ToolError, UrlElicitationRequired
from erlmcp_py.mcp.server import Server

__all__ = ["SIGN_IN_URL", "build_server", "describe"]

#: Where the URL-mode demo sends the user (a loopback page: needs ``--dev``).
SIGN_IN_URL = "http://127.0.0.1:8765/sign-in"

# -- conformance schemas (exactly as the conformance suite checks them) ------------------------

CONTACT_SCHEMA = object_schema(
    {
        "username": string_field(description="User's response"),
        "email": string_field(description="User's email address"),
    },
    required=["username", "email"],
)

DEFAULTS_SCHEMA = object_schema(
    {
        "name": string_field(description="User name", default="John Doe"),
        "age": integer_field(description="User age", default=30),
        "score": number_field(description="User score", default=95.5),
        "status": enum_field(
            ["active", "inactive", "pending"], description="User status", default="active"
        ),
        "verified": boolean_field(description="Verification status", default=True),
    }
)

_TITLED = {"value1": "First Option", "value2": "Second Option", "value3": "Third Option"}
_TITLED_MULTI = {"value1": "First Choice", "value2": "Second Choice", "value3": "Third Choice"}

ENUMS_SCHEMA = object_schema(
    {
        "untitledSingle": enum_field(
            ["option1", "option2", "option3"], description="Select one option"
        ),
        "titledSingle": enum_field(_TITLED, description="Select one option with titles"),
        "legacyEnum": enum_field(
            {"opt1": "Option One", "opt2": "Option Two", "opt3": "Option Three"},
            description="Select one option (legacy)",
            legacy_names=True,
        ),
        "untitledMulti": multi_select_field(
            ["option1", "option2", "option3"],
            description="Select multiple options",
            min_items=1,
            max_items=3,
        ),
        "titledMulti": multi_select_field(
            _TITLED_MULTI,
            description="Select multiple options with titles",
            min_items=1,
            max_items=3,
        ),
    }
)


def describe(outcome: Outcome) -> str:
    """A one-line, human-readable rendering of an outcome."""
    if isinstance(outcome, Accepted):
        content = outcome.content
        if isinstance(content, BaseModel):
            content = content.model_dump(mode="json")
        elif isinstance(content, Enum):
            content = content.value
        return f"action=accept, content={json.dumps(content, default=str, sort_keys=False)}"
    if isinstance(outcome, Declined):
        return "action=decline"
    if isinstance(outcome, Cancelled):
        return f"action=cancel (by {outcome.by})"
    if isinstance(outcome, TimedOut):
        return "timed out: nobody answered before the deadline"
    if isinstance(outcome, Unsupported):
        return f"unsupported: the client cannot show {outcome.mode}-mode elicitations"
    if isinstance(outcome, Failed):
        return f"failed: {outcome.reason}" + (f" ({outcome.detail})" if outcome.detail else "")
    return repr(outcome)  # pragma: no cover


class Plan(Enum):
    """Subscription plans of the profile demo."""

    FREE = "free"
    PRO = "pro"
    TEAM = "team"


class Profile(BaseModel):
    """The multi-field form of the profile demo."""

    name: str = Field(title="Full name", min_length=1, max_length=80)
    email: Annotated[str, Format("email")] = Field(title="Email address")
    age: int = Field(title="Age", ge=13, le=130)
    birthday: date | None = Field(default=None, title="Birthday")
    plan: Plan = Field(default=Plan.FREE, title="Plan")
    newsletter: bool = Field(default=False, title="Subscribe to the newsletter")


def build_server(config: RuntimeConfig | None = None, *, sign_in_url: str = SIGN_IN_URL) -> Server:
    """Build the example server.

    Args:
        config: Runtime policy (deadlines etc.).
        sign_in_url: The page the URL-mode sign-in demo sends the user to.
    """
    server = Server(
        "erlmcp-py-example",
        "0.1.0",
        title="erlmcp-py example server",
        instructions="Demo and conformance tools for MCP elicitation.",
        runtime_config=config,
    )

    # -- conformance: elicitation --------------------------------------------------------------

    @server.tool()
    async def test_elicitation(ctx: Context, message: str) -> dict[str, Any]:
        """Ask the user for a username and an email address (conformance)."""
        if not ctx.supports("form"):
            raise ToolError("the client does not support elicitation")
        outcome = await ctx.elicit(message, CONTACT_SCHEMA)
        return {"content": [{"type": "text", "text": f"User response: {describe(outcome)}"}]}

    @server.tool()
    async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
        """Ask for five fields, each with a default (SEP-1034 conformance)."""
        outcome = await ctx.elicit("Please review and update the form fields", DEFAULTS_SCHEMA)
        return f"Elicitation completed: {describe(outcome)}"

    @server.tool()
    async def test_elicitation_sep1330_enums(ctx: Context) -> str:
        """Ask with every enum shape of SEP-1330 (conformance)."""
        outcome = await ctx.elicit("Please select options", ENUMS_SCHEMA)
        return f"Elicitation completed: {describe(outcome)}"

    @server.tool()
    async def test_elicitation_url(
        ctx: Context, url: str, message: str = "Please continue in your browser."
    ) -> dict[str, Any]:
        """Start a URL-mode elicitation to ``url``; an unsafe URL is refused with its reason."""
        try:
            outcome = await ctx.elicit_url(message, url)
        except UnsafeURLError as exc:
            text = f"URL refused ({exc.reason}): {exc.detail}" if exc.detail else str(exc)
            return {"content": [{"type": "text", "text": text}], "isError": True}
        return {"content": [{"type": "text", "text": f"URL elicitation: {describe(outcome)}"}]}

    # -- conformance: the everything-server basics --------------------------------------------

    @server.tool()
    async def test_simple_text() -> str:
        """Return a fixed text."""
        return "This is a simple text response for testing."

    @server.tool()
    async def test_error_handling() -> str:
        """Always fail (an isError result)."""
        raise ToolError("This tool intentionally returns an error for testing")

    @server.tool()
    async def test_tool_with_logging(ctx: Context) -> str:
        """Send three log messages while running."""
        for text in ("Tool execution started", "Tool processing data", "Tool execution completed"):
            await ctx.log("info", text)
            await trio.sleep(0.05)
        return "Tool with logging executed successfully"

    @server.tool()
    async def test_tool_with_progress(ctx: Context) -> str:
        """Report progress 0, 50, 100 of 100."""
        for step in (0, 50, 100):
            await ctx.report_progress(step, 100, f"Completed step {step} of 100")
            await trio.sleep(0.05)
        return "Tool with progress executed successfully"

    # -- demos: one per kind of elicitation ----------------------------------------------------

    @server.tool()
    async def demo_profile_form(ctx: Context) -> str:
        """A multi-field form (text, email, integer, optional date, enum, boolean)."""
        outcome = await ctx.elicit("Tell us about yourself", Profile)
        return f"profile: {describe(outcome)}"

    @server.tool()
    async def demo_string(ctx: Context) -> str:
        """elicit_string: free text."""
        return f"name: {describe(await ctx.elicit_string('What should we call you?', 'name'))}"

    @server.tool()
    async def demo_confirm(ctx: Context) -> str:
        """elicit_confirm: yes/no."""
        return f"confirm: {describe(await ctx.elicit_confirm('Delete 3 old drafts?'))}"

    @server.tool()
    async def demo_choice(ctx: Context) -> str:
        """elicit_choice: one of several options."""
        outcome = await ctx.elicit_choice("Pick a region", ["eu-west", "us-east", "ap-south"])
        return f"region: {describe(outcome)}"

    @server.tool()
    async def demo_titled_choice(ctx: Context) -> str:
        """elicit_titled_choice: one option shown by its title."""
        outcome = await ctx.elicit_titled_choice(
            "Pick a size", ["s:Small (1 vCPU)", "m:Medium (2 vCPU)", "l:Large (4 vCPU)"]
        )
        return f"size: {describe(outcome)}"

    @server.tool()
    async def demo_multi_choice(ctx: Context) -> str:
        """elicit_multi_choice: any of several options."""
        outcome = await ctx.elicit_multi_choice("Which topics?", ["news", "releases", "security"])
        return f"topics: {describe(outcome)}"

    @server.tool()
    async def demo_titled_multi_choice(ctx: Context) -> str:
        """elicit_titled_multi_choice: any of several options shown by title."""
        outcome = await ctx.elicit_titled_multi_choice(
            "Notify me by", {"mail": "E-mail", "sms": "Text message", "push": "Push notification"}
        )
        return f"channels: {describe(outcome)}"

    @server.tool()
    async def demo_url_sign_in(ctx: Context) -> str:
        """URL mode: send the user to a sign-in page; finishes when the sign-in completes.

        The elicitation id is what ``demo_complete_sign_in`` (standing in for the sign-in
        page's backend) passes to the runtime's ``complete_elicitation``.
        """
        handle = await ctx.begin_elicit_url("Sign in to Example Co to continue", sign_in_url)
        if isinstance(handle, Unsupported):
            return f"sign-in: {describe(handle)}"
        await ctx.log("info", {"signInElicitationId": handle.id}, logger="demo")
        return f"sign-in: {describe(await ctx.wait(handle))}"

    @server.tool()
    async def demo_complete_sign_in(ctx: Context, elicitation_id: str) -> str:
        """Finish a pending sign-in (what the sign-in page's backend would call)."""
        try:
            info = await ctx.runtime.complete_elicitation(elicitation_id, None, tenant=ctx.tenant)
        except ErlmcpError as exc:
            raise ToolError(f"cannot complete {elicitation_id}: {exc}") from None
        return f"completed {info.id}: {info.status}"

    @server.tool()
    async def demo_requires_sign_in() -> str:
        """Refuse with -32042: a URL-mode elicitation must be completed first."""
        raise UrlElicitationRequired(
            [
                {
                    "elicitationId": "demo-sign-in",
                    "url": sign_in_url,
                    "message": "Authorization is required to access your files.",
                }
            ]
        )

    @server.tool(timeout=1.0)
    async def demo_budgeted(ctx: Context) -> str:
        """A 1 s tool budget: the clock pauses while the user answers."""
        await trio.sleep(0.5)
        outcome = await ctx.elicit_confirm("Continue the (budgeted) job?")
        await trio.sleep(0.4)
        return f"budgeted: {describe(outcome)}; {ctx.clock.remaining():.1f} s of tool time left"

    add_everything_tools(server)  # the rest of the conformance everything-server contract
    add_conformance_tools(server)  # the tools of the 2026-07-28 (MRTR, stateless) scenarios
    return server
