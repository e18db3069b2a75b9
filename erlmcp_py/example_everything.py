"""The rest of the conformance suite's "everything server" tool contract (spec reference §3.4).

:func:`add_everything_tools` registers, on a :class:`~erlmcp_py.mcp.server.Server`, the tools
the official conformance suite calls besides the elicitation ones and those
``example_server`` already has: content of every type (image, audio, embedded resource, mixed)
and ``test_sampling``, which asks the client's LLM through ``sampling/createMessage`` on the
originating request's stream. Tools that already exist on the server are left alone.
"""

from __future__ import annotations

import base64
import secrets
from typing import Any, Final

import trio

from erlmcp_py.actors.peer import PeerError, PeerGone, PeerResponse
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.errors import ToolError
from erlmcp_py.mcp.server import Server

__all__ = ["PNG_1X1", "WAV_SILENCE", "add_everything_tools"]

#: A 1x1 red PNG (what ``test_image_content`` returns), base64.
PNG_1X1: Final = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ"
    "AAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)


def _wav_silence(samples: int = 8) -> str:
    """A minimal mono 8 kHz 8-bit PCM WAV of ``samples`` silent samples, base64."""
    data = b"\x80" * samples
    header = (
        b"RIFF"
        + (36 + len(data)).to_bytes(4, "little")
        + b"WAVEfmt "
        + (16).to_bytes(4, "little")
        + (1).to_bytes(2, "little")  # PCM
        + (1).to_bytes(2, "little")  # mono
        + (8000).to_bytes(4, "little")  # sample rate
        + (8000).to_bytes(4, "little")  # byte rate
        + (1).to_bytes(2, "little")  # block align
        + (8).to_bytes(2, "little")  # bits per sample
        + b"data"
        + len(data).to_bytes(4, "little")
    )
    return base64.b64encode(header + data).decode()


#: A short silent WAV (what ``test_audio_content`` returns), base64.
WAV_SILENCE: Final = _wav_silence()

_RESOURCE: Final = {
    "uri": "test://embedded-resource",
    "mimeType": "text/plain",
    "text": "This is an embedded resource content.",
}

#: Seconds ``test_sampling`` waits for the client's LLM.
SAMPLING_TIMEOUT: Final = 60.0


async def _create_message(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """Send ``sampling/createMessage`` to the client of ``ctx`` and wait for its result.

    Goes through the call's request peer, so that on Streamable HTTP the request travels on
    the stream of the ``tools/call`` that asked.
    """
    peer = ctx._peer  # the call's RequestPeer (no public Context API for sampling yet)
    request_id = f"sampling-{secrets.token_hex(8)}"
    done = trio.Event()
    answer: list[PeerResponse] = []

    def on_response(response: PeerResponse) -> None:
        answer.append(response)
        done.set()

    try:
        with trio.move_on_after(SAMPLING_TIMEOUT):
            await peer.send_request(
                "sampling/createMessage", params, request_id=request_id, on_response=on_response
            )
            await done.wait()
    finally:
        peer.forget_request(request_id)
    if not answer:
        raise ToolError("the client did not answer the sampling request in time")
    response = answer[0]
    if isinstance(response, PeerError):
        raise ToolError(f"sampling failed: {response.message}")
    if isinstance(response, PeerGone | BaseException):
        raise ToolError("the client went away")
    return dict(response)


def add_everything_tools(server: Server) -> None:
    """Register the everything-server tools ``server`` does not have yet.

    Args:
        server: The server to extend (usually the bundled example server).
    """

    async def test_image_content() -> dict[str, Any]:
        """Return an image (a 1x1 PNG)."""
        return {"content": [{"type": "image", "data": PNG_1X1, "mimeType": "image/png"}]}

    async def test_audio_content() -> dict[str, Any]:
        """Return audio (a short silent WAV)."""
        return {"content": [{"type": "audio", "data": WAV_SILENCE, "mimeType": "audio/wav"}]}

    async def test_embedded_resource() -> dict[str, Any]:
        """Return an embedded text resource."""
        return {"content": [{"type": "resource", "resource": dict(_RESOURCE)}]}

    async def test_multiple_content_types() -> dict[str, Any]:
        """Return text, an image and an embedded resource."""
        return {
            "content": [
                {"type": "text", "text": "Multiple content types test:"},
                {"type": "image", "data": PNG_1X1, "mimeType": "image/png"},
                {
                    "type": "resource",
                    "resource": {
                        "uri": "test://mixed-content-resource",
                        "mimeType": "application/json",
                        "text": '{"test": "data", "value": 123}',
                    },
                },
            ]
        }

    async def test_sampling(ctx: Context, prompt: str) -> str:
        """Ask the client's LLM to complete ``prompt`` (sampling/createMessage)."""
        if not ctx._peer.session.client_capabilities.sampling:
            raise ToolError("the client does not support sampling")
        result = await _create_message(
            ctx,
            {
                "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
                "maxTokens": 100,
            },
        )
        content = result.get("content")
        text = content.get("text") if isinstance(content, dict) else None
        shown = text if isinstance(text, str) else repr(content)
        return f"LLM response: {shown}"

    for fn in (
        test_image_content,
        test_audio_content,
        test_embedded_resource,
        test_multiple_content_types,
        test_sampling,
    ):
        if fn.__name__ not in server.tools:
            server.add_tool(fn)
