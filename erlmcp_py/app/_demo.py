"""``erlmcp-py demo``: run the example server over stdio and drive it with a scripted client
(``demo --gateway``: ``erlmcp-py gateway`` in front of a server on the official MCP SDK).

Prints a readable transcript: each elicitation kind, what the "user" answered, and the
outcome the tool saw — including an invalid answer that is re-prompted, a decline, a cancel, a
URL-mode sign-in completed by the application, the ``-32042`` error, an unsafe URL refused,
a client that cancels its call, and a user who never answers (timeout).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from typing import Any, Final

import trio

from erlmcp_py.client import ClientRequestError, ServerRequest, StdioClient, open_stdio_client

__all__ = ["run_demo"]

Answer = Callable[[ServerRequest], Mapping[str, Any] | None]


def _out(text: str = "") -> None:
    print(text, flush=True)


def _fields(params: Mapping[str, Any]) -> str:
    schema = params.get("requestedSchema") or {}
    required = set(schema.get("required") or ())
    names = [f"{n}{'*' if n in required else ''}" for n in (schema.get("properties") or {})]
    return ", ".join(names)


def _show_request(req: ServerRequest) -> None:
    p = req.params
    first_line = str(p.get("message", "")).splitlines()[0] if p.get("message") else ""
    if p.get("mode") == "url":
        _out(f"    <- elicitation/create (url): {first_line!r}")
        _out(f"       url={p.get('url')}  elicitationId={p.get('elicitationId')}")
    else:
        _out(f"    <- elicitation/create (form): {first_line!r}  fields: {_fields(p)}")
        extra = str(p.get("message", "")).splitlines()[1:]
        for line in extra:
            if line.strip():
                _out(f"       | {line}")


def _text(result: Mapping[str, Any]) -> str:
    parts = [c.get("text", f"<{c.get('type')}>") for c in result.get("content", [])]
    flag = "  [isError]" if result.get("isError") else ""
    return " ".join(parts) + flag


class _Script:
    def __init__(self, client: StdioClient) -> None:
        self.client = client
        self.answers: list[Answer] = []

    async def handler(self, req: ServerRequest) -> Mapping[str, Any] | None:
        _show_request(req)
        if not self.answers:
            _out("    .. (the user does not answer)")
            return None
        answer = self.answers.pop(0)(req)
        if answer is None:
            _out("    .. (the user does not answer)")
        else:
            _out(f"    -> answer: {json.dumps(answer)}")
        return answer

    async def scene(self, title: str, tool: str, *answers: Answer, **arguments: Any) -> None:
        _out(f"\n== {title}")
        _out(f"  -> tools/call {tool} {json.dumps(arguments) if arguments else ''}".rstrip())
        self.answers = list(answers)
        before = len(self.client.notifications)
        try:
            result = await self.client.call_tool(tool, arguments)
        except ClientRequestError as exc:
            _show_notifications(self.client, _NOTICES, since=before)
            _out(f"  <- error {exc.code}: {exc.message}")
            if exc.data:
                _out(f"     data: {json.dumps(exc.data)}")
            return
        # what the server notified while the call ran came before its result
        _show_notifications(self.client, _NOTICES, since=before)
        _out(f"  <- result: {_text(result)}")


#: The notifications a scene shows (the deadline warning, a withdrawn request).
_NOTICES: Final = ("notifications/message", "notifications/cancelled")


def _accept(content: Mapping[str, Any] | None = None) -> Answer:
    def answer(_req: ServerRequest) -> Mapping[str, Any]:
        return {"action": "accept"} if content is None else {"action": "accept", "content": content}

    return answer


def _action(action: str) -> Answer:
    return lambda _req: {"action": action}


def _silence(_req: ServerRequest) -> None:
    return None


async def _main(elicitation_timeout: float) -> None:
    command = [
        sys.executable,
        "-m",
        "erlmcp_py.app",
        "serve",
        "--dev",
        "--elicitation-timeout",
        str(elicitation_timeout),
        "--log-level",
        "error",
    ]
    script: _Script
    async with open_stdio_client(command, handler=lambda r: script.handler(r)) as client:
        script = _Script(client)
        init = await client.initialize({"elicitation": {"form": {}, "url": {}}})
        info = init["serverInfo"]
        _out(f"connected to {info['name']} {info['version']} over stdio")
        _out(f"protocol {init['protocolVersion']}; client declared elicitation form + url")
        tools = (await client.request("tools/list"))["tools"]
        _out(f"{len(tools)} tools: {', '.join(t['name'] for t in tools)}")

        await script.scene(
            "A multi-field form; the first answer is invalid and is re-prompted",
            "demo_profile_form",
            _accept({"name": "Ada", "email": "not-an-email", "age": 7}),
            _accept({"name": "Ada Lovelace", "email": "ada@example.com", "age": 36}),
        )
        await script.scene("elicit_string", "demo_string", _accept({"name": "Ada"}))
        await script.scene("elicit_confirm, declined", "demo_confirm", _action("decline"))
        await script.scene("elicit_choice", "demo_choice", _accept({"choice": "eu-west"}))
        await script.scene("elicit_titled_choice", "demo_titled_choice", _accept({"choice": "m"}))
        await script.scene("elicit_multi_choice, cancelled", "demo_multi_choice", _action("cancel"))
        await script.scene(
            "elicit_titled_multi_choice",
            "demo_titled_multi_choice",
            _accept({"choices": ["mail", "push"]}),
        )
        await _url_scene(script)
        await script.scene(
            "A tool that needs a URL-mode elicitation first (-32042)", "demo_requires_sign_in"
        )
        await script.scene(
            "An unsafe URL is refused before anything is sent",
            "test_elicitation_url",
            url="http://169.254.169.254/latest/meta-data",
        )
        await _cancel_scene(script)
        await script.scene(
            f"Nobody answers: the {elicitation_timeout:g} s deadline passes", "demo_confirm"
        )
        _out("\nclosing stdin: the server ends the session and exits")


async def _url_scene(script: _Script) -> None:
    client = script.client
    _out("\n== URL mode: consent, then the application completes the sign-in")
    _out("  -> tools/call demo_url_sign_in")
    script.answers = [_accept()]
    done = len(client.notifications)
    async with trio.open_nursery() as nursery:
        results: list[Mapping[str, Any]] = []

        async def call() -> None:
            results.append(await client.call_tool("demo_url_sign_in"))

        nursery.start_soon(call)
        request = await client.next_server_request(len(client.server_requests))
        eid = request.params.get("elicitationId")
        _out(f"  (the sign-in page's backend finishes) -> tools/call demo_complete_sign_in {eid}")
        completion = await client.call_tool("demo_complete_sign_in", {"elicitation_id": eid})
        _out(f"  <- result: {_text(completion)}")
    for method, params in client.notifications[done:]:
        if method == "notifications/elicitation/complete":
            _out(f"  <- notifications/elicitation/complete {json.dumps(dict(params))}")
    _out(f"  <- result of demo_url_sign_in: {_text(results[0])}")


async def _cancel_scene(script: _Script) -> None:
    client = script.client
    _out("\n== The client cancels its tools/call while the user is being asked")
    _out("  -> tools/call demo_choice")
    script.answers = [_silence]
    before = len(client.notifications)
    call_id = client.next_id()
    await client.send(
        {
            "jsonrpc": "2.0",
            "id": call_id,
            "method": "tools/call",
            "params": {"name": "demo_choice", "arguments": {}},
        }
    )
    request = await client.next_server_request(len(client.server_requests))
    _out(f"  -> notifications/cancelled requestId={call_id}")
    await client.notify("notifications/cancelled", {"requestId": call_id, "reason": "demo"})
    await client.wait_for(
        lambda: any(
            m == "notifications/cancelled" and p.get("requestId") == request.id
            for m, p in client.notifications[before:]
        )
    )
    _out(f"  <- notifications/cancelled for {request.id} (the elicitation was abandoned)")
    _out("  (no response to the cancelled call, as the spec requires)")


def _show_notifications(client: StdioClient, methods: tuple[str, ...], *, since: int) -> None:
    """What the server notified since the ``since``-th notification, in arrival order."""
    for method, params in client.notifications[since:]:
        if method in methods:
            _out(f"  <- {method} {json.dumps(dict(params))}")


async def _gateway_main(elicitation_timeout: float) -> None:
    """The gateway in front of the official SDK's server: its questions asked through the
    runtime, with nothing configured."""
    upstream = [sys.executable, "-m", "erlmcp_py.app.examples.sdk_server"]
    command = [
        sys.executable,
        "-m",
        "erlmcp_py.app",
        "gateway",
        "--ask-missing-arguments",
        "--elicitation-timeout",
        str(elicitation_timeout),
        "--log-level",
        "error",
        "--",
        *upstream,
    ]
    script: _Script
    async with open_stdio_client(command, handler=lambda r: script.handler(r)) as client:
        script = _Script(client)
        init = await client.initialize({"elicitation": {"form": {}}})
        info = init["serverInfo"]
        _out(f"$ erlmcp-py gateway --ask-missing-arguments -- python -m {upstream[-1]}")
        _out(f"connected through the gateway to {info['name']} (the official MCP SDK's MCPServer)")
        _out(f"protocol {init['protocolVersion']}; client declared elicitation form")
        tools = (await client.request("tools/list"))["tools"]
        _out(f"{len(tools)} tools: {', '.join(t['name'] for t in tools)}")

        await script.scene(
            "The SDK's form (its model's title dropped); an invalid answer is asked again",
            "register",
            _accept({"name": "Ada", "age": 200}),
            _accept({"name": "Ada", "age": 36}),
        )
        await script.scene(
            "The user declines: the SDK tool receives decline", "register", _action("decline")
        )
        await script.scene(
            "A call without a required argument: the gateway asks for it",
            "book",
            _accept({"nights": 3}),
            city="Lisbon",
        )
        await script.scene(
            f"Nobody answers: at the {elicitation_timeout:g} s deadline the SDK tool receives "
            "cancel",
            "register",
        )
        _out("\nclosing stdin: the gateway ends the session and stops the SDK server")


def run_demo(elicitation_timeout: float = 2.0, *, gateway: bool = False) -> int:
    """Run the demo (``gateway``: the gateway in front of the official SDK's server); returns
    the process exit code."""
    if gateway:
        import importlib.util

        if importlib.util.find_spec("mcp") is None:
            print(
                "erlmcp-py: demo --gateway runs a server on the official MCP SDK: "
                "pip install 'erlmcp-py[gateway-demo]' (make demo-gateway does)",
                file=sys.stderr,
            )
            return 2
        trio.run(_gateway_main, elicitation_timeout)
        return 0
    trio.run(_main, elicitation_timeout)
    return 0
