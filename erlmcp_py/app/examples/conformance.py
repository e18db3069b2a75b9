"""The tools the official conformance suite calls by name to exercise 2026-07-28 (MRTR and the
stateless server), for the bundled example server.

:func:`add_conformance_tools` registers, on a :class:`~erlmcp_py.mcp.server.Server`:

* the ``input-required-result-*`` tools and the prompt ``test_input_required_result_prompt``:
  each asks what its scenario expects through the ordinary imperative API (``ctx.elicit``,
  ``ctx.sample``, ``ctx.list_roots``), so on 2026-07-28 the call (``tools/call`` or
  ``prompts/get``) answers an ``InputRequiredResult`` and the retry with ``inputResponses``
  resumes the same suspended coroutine (see ``docs/mrtr.md``); in a 2025 session the same
  functions send the requests to the client;
* the diagnostic tools of the stateless-server scenario: ``test_missing_capability`` (needs
  ``sampling``: without it, ``-32021`` naming it), ``test_streaming_elicitation`` (asks for
  input: on 2026-07-28 the answer is an ``InputRequiredResult``, never a request on the stream)
  and ``test_logging_tool`` (logs while it runs: nothing is sent to a request that named no
  log level);
* the fixtures of the ``tasks-*`` scenarios (the ``io.modelcontextprotocol/tasks`` extension,
  ``docs/tasks.md``): ``greet`` (never a task), ``slow_compute`` (a task that works for
  ``seconds``), ``failing_job`` (a task only, ending with a tool error), ``protocol_error_job``
  (a task ending ``failed`` with a JSON-RPC error), ``confirm_delete`` and ``multi_input`` (a
  task asking one question, or two at once), and ``test_tool_with_task`` (asks in the call's
  own round, then starts its task: ``task_start="tool"``).

Whatever already exists on the server is left alone.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Final

import trio
from pydantic import Field

from erlmcp_py.app.examples.everything import SAMPLING_TIMEOUT
from erlmcp_py.core.outcomes import Accepted, Outcome
from erlmcp_py.core.schema import boolean_field, object_schema, string_field
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.errors import ToolError
from erlmcp_py.mcp.jsonrpc import INTERNAL_ERROR, JsonRpcError
from erlmcp_py.mcp.meta import missing_capability
from erlmcp_py.mcp.server import Server

__all__ = ["add_conformance_tools"]

NAME_SCHEMA: Final = object_schema({"name": string_field()}, required=["name"])
COLOR_SCHEMA: Final = object_schema({"color": string_field()}, required=["color"])
OK_SCHEMA: Final = object_schema({"ok": boolean_field()}, required=["ok"])
CONTEXT_SCHEMA: Final = object_schema({"context": string_field()}, required=["context"])
CONFIRM_SCHEMA: Final = object_schema({"confirm": boolean_field()}, required=["confirm"])
REVIEWER_SCHEMA: Final = object_schema(
    {"name": string_field(), "confirm": boolean_field()}, required=["name", "confirm"]
)


def _text(outcome: Outcome, field: str) -> str:
    """The accepted answer's ``field``, or the outcome's name (``Declined``, ``TimedOut``…)."""
    if isinstance(outcome, Accepted) and isinstance(outcome.content, dict):
        return str(outcome.content.get(field))
    return type(outcome).__name__


async def _sample(ctx: Context, prompt: str, max_tokens: int) -> str:
    result = await ctx.sample(prompt, max_tokens=max_tokens, timeout=SAMPLING_TIMEOUT)
    return result.text if result.text is not None else repr(result.content)


async def _list_roots(ctx: Context) -> list[str]:
    return [root.uri for root in await ctx.list_roots(timeout=SAMPLING_TIMEOUT)]


async def test_input_required_result_elicitation(ctx: Context) -> str:
    """Ask the user's name (input request ``user_name``) and greet them."""
    outcome = await ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
    return f"Hello, {_text(outcome, 'name')}!"


async def test_input_required_result_sampling(ctx: Context) -> str:
    """Ask the client's LLM a question (an input request ``sampling/createMessage``)."""
    return f"LLM response: {await _sample(ctx, 'What is the capital of France?', 100)}"


async def test_input_required_result_list_roots(ctx: Context) -> str:
    """Ask the client for its roots (an input request ``roots/list``)."""
    return f"Client roots: {', '.join(await _list_roots(ctx)) or 'none'}"


async def test_input_required_result_request_state(ctx: Context) -> str:
    """Ask for a confirmation; the answer arrives with the sealed ``requestState``."""
    outcome = await ctx.elicit("Please confirm", OK_SCHEMA, key="confirm")
    return f"state-ok: the request state was verified; ok={_text(outcome, 'ok')}"


async def test_input_required_result_multiple_inputs(ctx: Context) -> str:
    """Ask for an elicitation, a sampling and the roots at once: one round, three requests."""
    answers: dict[str, str] = {}

    async def ask(name: str, fn: Callable[[], Awaitable[str]]) -> None:
        answers[name] = await fn()

    async def roots() -> str:
        return ", ".join(await _list_roots(ctx))

    async def name() -> str:
        return _text(await ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name"), "name")

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask, "name", name)
            nursery.start_soon(ask, "greeting", lambda: _sample(ctx, "Generate a greeting", 50))
            nursery.start_soon(ask, "roots", roots)
    except ExceptionGroup as group:  # e.g. RateLimited: say what happened, not "a group"
        raise ToolError("; ".join(str(e) for e in group.exceptions)) from None
    return f"name={answers['name']}; greeting={answers['greeting']}; roots={answers['roots']}"


async def test_input_required_result_multi_round(ctx: Context) -> str:
    """Ask the name, then the favourite colour: two rounds, each with its own state."""
    name = await ctx.elicit("Step 1: What is your name?", NAME_SCHEMA, key="step1")
    color = await ctx.elicit("Step 2: What is your favorite color?", COLOR_SCHEMA, key="step2")
    return f"{_text(name, 'name')} likes {_text(color, 'color')}"


async def test_input_required_result_tampered_state(ctx: Context) -> str:
    """Ask for a confirmation (the suite then retries with a tampered state: refused)."""
    outcome = await ctx.elicit("Please confirm", OK_SCHEMA, key="confirm")
    return f"Confirmed: {_text(outcome, 'ok')}"


async def test_input_required_result_capabilities(ctx: Context) -> str:
    """Ask only through what this request declared: elicitation, sampling, or neither."""
    if ctx.supports("form"):
        outcome = await ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
        return f"Elicited: {_text(outcome, 'name')}"
    if ctx.client_capabilities.sampling:
        return f"Sampled: {await _sample(ctx, 'What is your name?', 50)}"
    return "The client declared neither elicitation nor sampling: nothing was asked."


async def test_missing_capability(ctx: Context) -> str:
    """Needs ``sampling``: a client that did not declare it gets ``-32021`` naming it."""
    if not ctx.client_capabilities.sampling:
        raise missing_capability({"sampling": {}})
    return f"LLM response: {await _sample(ctx, 'Say hello', 20)}"


async def test_streaming_elicitation(ctx: Context) -> str:
    """Ask for input while the call's answer is open (2026-07-28: an InputRequiredResult)."""
    outcome = await ctx.elicit("Continue?", OK_SCHEMA, key="continue")
    return f"Continue: {_text(outcome, 'ok')}"


async def test_logging_tool(ctx: Context) -> str:
    """Log at several levels while running; sent only to a request that asked for logs."""
    for level in ("debug", "info", "warning"):
        await ctx.log(level, f"test_logging_tool: a {level} message")
    return "Logged three messages"


async def test_input_required_result_prompt(ctx: Context) -> list[dict[str, Any]]:
    """A prompt that first asks which context to use (input request ``user_context``)."""
    outcome = await ctx.elicit(
        "What context should the prompt use?", CONTEXT_SCHEMA, key="user_context"
    )
    context = _text(outcome, "context")
    return [
        {"role": "user", "content": {"type": "text", "text": f"Use this context: {context}"}},
        {"role": "assistant", "content": {"type": "text", "text": "Understood."}},
    ]


# -- the tasks extension (the tasks-* scenarios) ------------------------------------------------


async def greet(name: str) -> str:
    """Greet someone at once (a tool that never runs as a task)."""
    return f"Hello, {name}!"


async def slow_compute(seconds: Annotated[float, Field(ge=0, le=3600)], label: str = "") -> str:
    """Work for ``seconds`` seconds, then answer (a task for a client that declared the tasks
    extension; tasks/cancel ends it cancelled)."""
    await trio.sleep(seconds)
    return f"Computed {label or 'result'} in {seconds:g} s"


async def failing_job() -> str:
    """Work for a second, then fail with a tool error (runs only as a task)."""
    await trio.sleep(1)
    raise ToolError("failing_job: the job failed")


async def protocol_error_job() -> str:
    """Fail with a JSON-RPC error (a task ending failed, with that error)."""
    await trio.lowlevel.checkpoint()
    raise JsonRpcError(INTERNAL_ERROR, "protocol_error_job: the job hit a protocol error")


async def confirm_delete(ctx: Context, filename: str) -> str:
    """Ask for a confirmation (the task's one input request), then answer."""
    outcome = await ctx.elicit(f"Delete {filename}?", CONFIRM_SCHEMA, key="confirm")
    if isinstance(outcome, Accepted) and outcome.content.get("confirm") is True:
        return f"Deleted {filename}"
    return f"Kept {filename} ({type(outcome).__name__})"


async def multi_input(ctx: Context) -> str:
    """Ask two reviewers at once (two input requests of the task), then answer."""
    answers: dict[str, str] = {}

    async def ask(key: str) -> None:
        outcome = await ctx.elicit(f"Reviewer {key}: your name?", REVIEWER_SCHEMA, key=key)
        answers[key] = _text(outcome, "name")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask, "first")
        nursery.start_soon(ask, "second")
    return f"Reviewed by {answers['first']} and {answers['second']}"


async def test_tool_with_task(ctx: Context) -> str:
    """Ask the user's name in the call's own round, then run on as a task and greet them."""
    outcome = await ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
    await ctx.start_task()
    await trio.lowlevel.checkpoint()
    return f"Hello, {_text(outcome, 'name')}! (task {ctx.task_id})"


#: The tasks scenarios' tools with their registration: ``task=`` and ``task_start=``.
TASK_TOOLS: Final[tuple[tuple[Callable[..., Awaitable[str]], dict[str, Any]], ...]] = (
    (greet, {}),
    (slow_compute, {"task": True}),
    (failing_job, {"task": "required"}),
    (protocol_error_job, {"task": True}),
    (confirm_delete, {"task": True}),
    (multi_input, {"task": True}),
    (test_tool_with_task, {"task": "required", "task_start": "tool"}),
)


TOOLS: Final = (
    test_input_required_result_elicitation,
    test_input_required_result_sampling,
    test_input_required_result_list_roots,
    test_input_required_result_request_state,
    test_input_required_result_multiple_inputs,
    test_input_required_result_multi_round,
    test_input_required_result_tampered_state,
    test_input_required_result_capabilities,
    test_missing_capability,
    test_streaming_elicitation,
    test_logging_tool,
)


PROMPTS: Final = (test_input_required_result_prompt,)


def add_conformance_tools(server: Server) -> None:
    """Register the conformance suite's 2026-07-28 tools (those of the tasks extension too)
    and prompts ``server`` does not have yet.

    Args:
        server: The server to extend (usually the bundled example server).
    """
    for fn in TOOLS:
        if fn.__name__ not in server.tools:
            server.add_tool(fn)
    for task_fn, options in TASK_TOOLS:
        if task_fn.__name__ not in server.tools:
            server.add_tool(task_fn, **options)
    for prompt in PROMPTS:
        if prompt.__name__ not in server.prompts:
            server.add_prompt(prompt)
