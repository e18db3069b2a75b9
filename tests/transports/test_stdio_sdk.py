"""The official ``mcp`` 2.3.0 client as a peer of ``erlmcp-py serve`` over stdio (legacy era)."""

from __future__ import annotations

import sys
from typing import Any

import trio
from mcp import Client, StdioServerParameters, types

SERVE = ["-m", "erlmcp_py.app", "serve", "--dev", "--log-level", "warning"]
LIMIT = 30.0


def params(*extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=[*SERVE, *extra])


def text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def test_sdk_client_form_defaults_enums_decline_cancel_and_url() -> None:
    seen: list[Any] = []
    answers: list[types.ElicitResult] = []
    url_asked = trio.Event()

    async def on_elicit(_ctx: Any, p: Any) -> types.ElicitResult:
        seen.append(p)
        if isinstance(p, types.ElicitRequestURLParams):
            url_asked.set()
        return answers.pop(0)

    with trio.fail_after(LIMIT):
        async with Client(params(), mode="legacy", elicitation_callback=on_elicit) as client:
            assert client.protocol_version == "2025-11-25"

            answers.append(
                types.ElicitResult(
                    action="accept", content={"username": "testuser", "email": "t@example.com"}
                )
            )
            result = await client.call_tool("test_elicitation", {"message": "Who are you?"})
            assert text(result).startswith("User response: action=accept")
            assert seen[-1].message == "Who are you?"
            assert seen[-1].requested_schema["required"] == ["username", "email"]

            answers.append(
                types.ElicitResult(
                    action="accept",
                    content={
                        "name": "Jane Smith",
                        "age": 25,
                        "score": 88.0,
                        "status": "inactive",
                        "verified": False,
                    },
                )
            )
            result = await client.call_tool("test_elicitation_sep1034_defaults", {})
            props = seen[-1].requested_schema["properties"]
            assert props["age"] == {"type": "integer", "description": "User age", "default": 30}
            assert props["score"]["default"] == 95.5
            assert text(result).startswith("Elicitation completed: action=accept")

            answers.append(
                types.ElicitResult(
                    action="accept",
                    content={
                        "untitledSingle": "option1",
                        "titledSingle": "value1",
                        "legacyEnum": "opt1",
                        "untitledMulti": ["option1", "option2"],
                        "titledMulti": ["value1", "value2"],
                    },
                )
            )
            result = await client.call_tool("test_elicitation_sep1330_enums", {})
            assert '"titledMulti": ["value1", "value2"]' in text(result)

            answers.append(types.ElicitResult(action="decline"))
            assert text(await client.call_tool("demo_confirm", {})) == "confirm: action=decline"
            answers.append(types.ElicitResult(action="cancel"))
            assert "action=cancel" in text(await client.call_tool("demo_multi_choice", {}))

            # an invalid answer is re-prompted with the errors in the message
            answers.append(types.ElicitResult(action="accept", content={"choice": "mars"}))
            answers.append(types.ElicitResult(action="accept", content={"choice": "us-east"}))
            result = await client.call_tool("demo_choice", {})
            assert text(result) == 'region: action=accept, content="us-east"'
            assert "not accepted" in seen[-1].message

            # URL mode: consent, then the application completes it
            answers.append(types.ElicitResult(action="accept"))
            async with trio.open_nursery() as nursery:
                out: list[types.CallToolResult] = []

                async def sign_in() -> None:
                    out.append(await client.call_tool("demo_url_sign_in", {}))

                nursery.start_soon(sign_in)
                await url_asked.wait()
                url_params = seen[-1]
                assert url_params.url == "http://127.0.0.1:8765/sign-in"
                done = await client.call_tool(
                    "demo_complete_sign_in", {"elicitation_id": url_params.elicitation_id}
                )
                assert "completed" in text(done)
            assert text(out[0]) == "sign-in: action=accept, content=null"

            refused = await client.call_tool("test_elicitation_url", {"url": "file:///etc/passwd"})
            assert refused.is_error
            assert "refused" in text(refused)


async def test_sdk_client_timeout_and_cancel() -> None:
    cancelled = trio.Event()
    asked = trio.Event()

    async def never(_ctx: Any, _p: Any) -> types.ElicitResult:
        asked.set()
        try:
            await trio.sleep_forever()
        finally:
            cancelled.set()
        raise AssertionError("unreachable")

    with trio.fail_after(LIMIT):
        async with Client(
            params("--elicitation-timeout", "1"), mode="legacy", elicitation_callback=never
        ) as client:
            result = await client.call_tool("demo_confirm", {})
            assert "timed out" in text(result)
            await cancelled.wait()  # the server told the client to drop its request

            cancelled, asked = trio.Event(), trio.Event()
            async with trio.open_nursery() as nursery:

                async def give_up_once_asked() -> None:
                    await asked.wait()  # not before: under load the ask may come late
                    nursery.cancel_scope.cancel()  # the client gives up on its call

                nursery.start_soon(give_up_once_asked)
                await client.call_tool("demo_choice", {})
            await cancelled.wait()  # ... and the abandoned elicitation is withdrawn
            assert text(await client.call_tool("test_simple_text", {}))
