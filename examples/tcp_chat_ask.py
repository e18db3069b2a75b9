"""A plain trio TCP line server that asks its connected users questions through erlmcp-py.

No MCP anywhere: each connection is wrapped in :class:`LinePeer`, this program's own
implementation of :class:`erlmcp_py.Peer`. A question goes out as one line; the user's next
line is the answer (``/decline`` and ``/cancel`` are the other two answers). The runtime
owns everything else — the deadline and its warning, re-prompting an invalid answer with
the errors, rate limits, and cleaning up when the user disconnects.

Run it and talk to it with ``nc 127.0.0.1 7878``::

    python examples/tcp_chat_ask.py --port 7878 --deadline 30

or let it drive itself (three scripted users: one answers, one declines, one stays silent)::

    python examples/tcp_chat_ask.py --demo --deadline 1
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import logging
import sys
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, Literal

import pydantic
import structlog
import trio

from erlmcp_py import (
    Accepted,
    Declined,
    PeerGone,
    PeerResponse,
    Runtime,
    Tenant,
    TimedOut,
    open_runtime,
)

HOST = "127.0.0.1"


class Deployment(pydantic.BaseModel):
    """What the server asks each user."""

    region: Literal["eu", "us", "ap"]


class LinePeer:
    """One TCP connection seen by the runtime as a :class:`erlmcp_py.Peer`.

    Forms with one field are asked as one line; the field's name keys the answer's content.
    This peer speaks no MCP, so it claims no protocol version.
    """

    protocol_version = None

    def __init__(self, stream: trio.SocketStream, peer_id: str) -> None:
        self.stream = stream
        self.peer_id = peer_id
        # Open questions, oldest first: request id -> (field name, JSON type, on_response).
        self.open: dict[str, tuple[str, str, Callable[[PeerResponse], None]]] = {}
        self._write_lock = trio.Lock()

    def supports(self, mode: str) -> bool:
        return mode == "form"

    async def write(self, text: str) -> None:
        async with self._write_lock:
            await self.stream.send_all(text.encode() + b"\n")

    async def send_request(
        self,
        method: str,
        params: Mapping[str, Any],
        *,
        request_id: str,
        on_response: Callable[[PeerResponse], None],
    ) -> None:
        schema = params["requestedSchema"]
        ((field, prop),) = schema["properties"].items()  # this server asks one field at a time
        choices = prop.get("enum")
        hint = f" [{'/'.join(choices)}]" if choices else ""
        # Registered before the write: the user may answer before send_all returns.
        self.open[request_id] = (field, prop.get("type", "string"), on_response)
        first, *details = params["message"].splitlines()  # a re-prompt lists the errors
        text = "\n".join([f"? {first}{hint}", *(f"  {line}" for line in details if line)])
        try:
            await self.write(text)
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            self.open.pop(request_id, None)
            raise PeerGone(self.peer_id) from exc

    def forget_request(self, request_id: str) -> None:
        self.open.pop(request_id, None)

    async def send_notification(self, method: str, params: Mapping[str, Any]) -> None:
        if method == "notifications/cancelled":
            text = f"(question withdrawn: {params.get('reason', '')})"
        elif method == "notifications/message":
            text = f"({params['data']['message']})"
        else:
            return
        try:
            await self.write(text)
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise PeerGone(self.peer_id) from exc

    def on_line(self, line: str) -> None:
        """One line from the user: the answer to the oldest open question (if any)."""
        if not self.open:
            return
        request_id = next(iter(self.open))
        field, json_type, on_response = self.open.pop(request_id)
        if line == "/decline":
            on_response({"action": "decline"})
        elif line == "/cancel":
            on_response({"action": "cancel"})
        else:
            on_response({"action": "accept", "content": {field: _typed(line, json_type)}})

    def disconnected(self) -> None:
        """The user went away: every open question gets ``PeerGone``."""
        open_now, self.open = self.open, {}
        for _field, _type, on_response in open_now.values():
            on_response(PeerGone(self.peer_id))

    async def read_lines(self) -> None:
        """Feed the user's lines to :meth:`on_line` until the connection ends."""
        buffer = b""
        try:
            async for chunk in self.stream:
                buffer += chunk
                while b"\n" in buffer:
                    raw, buffer = buffer.split(b"\n", 1)
                    self.on_line(raw.decode(errors="replace").strip())
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            self.disconnected()


def _typed(text: str, json_type: str) -> Any:
    """A typed line: numbers and yes/no for the fields that want them, else the text."""
    try:
        if json_type == "integer":
            return int(text)
        if json_type == "number":
            return float(text)
    except ValueError:
        return text  # the runtime's validation says what is wrong and asks again
    if json_type == "boolean":
        return {"yes": True, "y": True, "no": False, "n": False}.get(text.lower(), text)
    return text


async def handle_connection(stream: trio.SocketStream, rt: Runtime, ids: Any) -> None:
    """One user: ask where to deploy, say what happened, hang up."""
    peer = LinePeer(stream, f"tcp-{next(ids)}")
    tenant = Tenant(peer.peer_id, "tcp-chat", peer.peer_id)
    async with stream, trio.open_nursery() as nursery:
        nursery.start_soon(peer.read_lines)
        try:
            await peer.write(f"hello {peer.peer_id}")
            outcome = await rt.ask("Where should we deploy?", Deployment, peer=peer, tenant=tenant)
            if isinstance(outcome, Accepted):
                reply = f"deploying to {outcome.content.region}"
            elif isinstance(outcome, Declined):
                reply = "not deploying"
            elif isinstance(outcome, TimedOut):
                reply = "no answer: giving up"
            else:
                reply = f"ended: {outcome!r}"
            await peer.write(f"= {reply}")
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the user left; the runtime has already ended the question
        nursery.cancel_scope.cancel()


async def serve(
    port: int,
    deadline: float,
    *,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve on ``127.0.0.1:port`` (0: any free port); report the port once listening."""
    config = {"form_deadline_s": deadline, "warn_before_s": deadline / 2}
    async with open_runtime(config) as rt:
        listeners = await trio.open_tcp_listeners(port, host=HOST)
        bound = listeners[0].socket.getsockname()[1]
        print(f"listening on {HOST}:{bound}", flush=True)
        task_status.started(bound)
        await trio.serve_listeners(
            partial(handle_connection, rt=rt, ids=itertools.count(1)), listeners
        )


async def scripted_user(port: int, answers: list[str]) -> list[str]:
    """Connect, answer each question with the next of ``answers`` (none left: stay silent),
    return the transcript until the server hangs up."""
    transcript: list[str] = []
    pending = list(answers)
    stream = await trio.open_tcp_stream(HOST, port)
    async with stream:
        buffer = b""
        async for chunk in stream:
            buffer += chunk
            while b"\n" in buffer:
                raw, buffer = buffer.split(b"\n", 1)
                line = raw.decode()
                transcript.append(line)
                if line.startswith("?") and pending:
                    await stream.send_all(pending.pop(0).encode() + b"\n")
    return transcript


async def demo(deadline: float) -> None:
    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve, 0, deadline)
        for answers in (["mars", "ap"], ["/decline"], []):
            print(f"--- a user who answers {answers or '(silent)'}", flush=True)
            for line in await scripted_user(port, answers):
                print(f"    {line}", flush=True)
        nursery.cancel_scope.cancel()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port", type=int, default=7878, help="TCP port (0: any free port)")
    parser.add_argument("--deadline", type=float, default=300.0, help="seconds per question")
    parser.add_argument("--demo", action="store_true", help="run three scripted users and exit")
    args = parser.parse_args(argv)
    # The runtime logs through structlog: keep stdout for this program, warnings to stderr.
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C stops the server quietly
        if args.demo:
            trio.run(demo, args.deadline)
        else:
            trio.run(serve, args.port, args.deadline)


if __name__ == "__main__":
    main()
