"""The rest of the conformance suite's "everything server" contract.

:func:`add_everything_tools` registers, on a :class:`~erlmcp_py.mcp.server.Server`, what the
official conformance suite calls besides the elicitation tools and those
:mod:`~erlmcp_py.app.examples.server` already has:

* tools returning content of every type (image, audio, embedded resource, mixed), and
  ``test_sampling``, which asks the client's LLM (``ctx.sample``: ``sampling/createMessage`` on
  the originating request's stream);
* resources ``test://static-text``, ``test://static-binary``, ``test://watched-resource`` (for
  subscriptions; the tool ``test_update_watched_resource`` changes it and notifies
  subscribers) and the template ``test://template/{id}/data``;
* prompts ``test_simple_prompt``, ``test_prompt_with_arguments(arg1, arg2)``,
  ``test_prompt_with_embedded_resource(resourceUri)``, ``test_prompt_with_image``;
* completion of ``test_prompt_with_arguments``'s arguments and of the template's ``id``.

Whatever already exists on the server is left alone.
"""

from __future__ import annotations

import base64
import json
from typing import Annotated, Any, Final

import trio
from pydantic import Field

from erlmcp_py.actors.peer import PeerGone
from erlmcp_py.mcp.client_results import InvalidClientResult
from erlmcp_py.mcp.completion import CompletionRequest
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.errors import CapabilityMissing, ClientRequestError, ToolError
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


#: What ``test://static-text`` reads.
STATIC_TEXT: Final = "This is the content of the static text resource."

#: Suggestions for ``test_prompt_with_arguments``'s arguments (filtered by prefix).
ARGUMENT_SUGGESTIONS: Final = ("test", "testValue1", "testValue2", "hello", "world")


def _add_resources(server: Server) -> None:
    watched = {"version": 0}

    def static_text() -> str:
        return STATIC_TEXT

    def static_binary() -> bytes:
        return base64.b64decode(PNG_1X1)

    def watched_resource() -> str:
        return f"Watched resource content, version {watched['version']}."

    def template_data(id: str) -> str:
        return json.dumps(
            {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}, separators=(",", ":")
        )

    async def test_update_watched_resource(ctx: Context) -> str:
        """Change test://watched-resource and notify its subscribers."""
        watched["version"] += 1
        told = await ctx.server.notify_resource_updated("test://watched-resource")
        return f"test://watched-resource is now version {watched['version']} ({told} notified)"

    resources = (
        ("test://static-text", static_text, "text/plain", "A static text resource"),
        ("test://static-binary", static_binary, "image/png", "A static binary resource (PNG)"),
        (
            "test://watched-resource",
            watched_resource,
            "text/plain",
            "A resource to subscribe to (test_update_watched_resource changes it)",
        ),
    )
    for uri, fn, mime_type, description in resources:
        if uri not in server.resources.resources:
            server.add_resource(fn, uri, mime_type=mime_type, description=description)
    if "test://template/{id}/data" not in server.resources.templates:
        server.add_resource_template(
            template_data,
            "test://template/{id}/data",
            mime_type="application/json",
            description="Data for one id, through a URI template",
        )
        server.completion(resource_template="test://template/{id}/data", argument="id")(
            lambda request: [i for i in ("1", "42", "123") if i.startswith(request.value)]
        )
    if "test_update_watched_resource" not in server.tools:
        server.add_tool(test_update_watched_resource)


def _add_prompts(server: Server) -> None:
    def test_simple_prompt() -> str:
        """A simple prompt without arguments."""
        return "This is a simple prompt for testing."

    def test_prompt_with_arguments(
        arg1: Annotated[str, Field(description="First test argument")],
        arg2: Annotated[str, Field(description="Second test argument")],
    ) -> str:
        """A prompt with two required arguments."""
        return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"

    def test_prompt_with_embedded_resource(
        resourceUri: Annotated[str, Field(description="URI of the resource to embed")],
    ) -> list[dict[str, Any]]:
        """A prompt embedding a resource."""
        resource = {
            "uri": resourceUri,
            "mimeType": "text/plain",
            "text": "Embedded resource content for testing.",
        }
        return [
            {"type": "resource", "resource": resource},
            {"type": "text", "text": "Please process the embedded resource above."},
        ]

    def test_prompt_with_image() -> list[dict[str, Any]]:
        """A prompt with an image."""
        return [
            {"type": "image", "data": PNG_1X1, "mimeType": "image/png"},
            {"type": "text", "text": "Please analyze the image above."},
        ]

    def suggest(request: CompletionRequest) -> list[str]:
        return [s for s in ARGUMENT_SUGGESTIONS if s.startswith(request.value)]

    for fn in (
        test_simple_prompt,
        test_prompt_with_arguments,
        test_prompt_with_embedded_resource,
        test_prompt_with_image,
    ):
        if fn.__name__ not in server.prompts:
            server.add_prompt(fn)
            if fn is test_prompt_with_arguments:
                for argument in ("arg1", "arg2"):
                    server.completion(prompt=fn.__name__, argument=argument)(suggest)


def add_everything_tools(server: Server) -> None:
    """Register the everything-server tools, resources, prompts and completers ``server``
    does not have yet.

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
        try:
            result = await ctx.sample(prompt, max_tokens=100, timeout=SAMPLING_TIMEOUT)
        except CapabilityMissing:
            raise ToolError("the client does not support sampling") from None
        except trio.TooSlowError:
            raise ToolError("the client did not answer the sampling request in time") from None
        except ClientRequestError as exc:
            raise ToolError(f"sampling failed: {exc.message}") from None
        except InvalidClientResult as exc:
            raise ToolError(str(exc)) from None
        except PeerGone:
            raise ToolError("the client went away") from None
        shown = result.text if result.text is not None else repr(result.content)
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
    _add_resources(server)
    _add_prompts(server)
