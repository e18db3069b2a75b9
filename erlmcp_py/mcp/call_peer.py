"""The client as one call sees it: the :class:`CallPeer` a tool's ``Context`` asks through.

A call is a ``tools/call`` or a ``prompts/get`` whose function may ask the client. The runtime
needs a :class:`~erlmcp_py.actors.peer.Peer` to send requests and notifications through; the
``Context`` needs a little more about the call, and gets all of it from this one interface:
the negotiated protocol version, the client's declared capabilities, the progress token of the
request the call works for, the log and progress path, and the bookkeeping of a 2026-07-28
round (which questions are being asked, which were charged already).

Three implementations: :class:`~erlmcp_py.mcp.session.RequestPeer` (the session era: one
connection, requests sent on it), :class:`~erlmcp_py.mcp.mrtr.MrtrPeer` (2026-07-28: the
requests become input requests of an ``InputRequiredResult``) and
:class:`~erlmcp_py.mcp.tasks.TaskPeer` (a call that runs as a task, the
``io.modelcontextprotocol/tasks`` extension: the requests become input requests of the task,
which the client reads with ``tasks/get`` and answers with ``tasks/update``).
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any, Protocol

from erlmcp_py.actors.peer import Peer
from erlmcp_py.mcp.versions import ClientCapabilities

__all__ = ["CallPeer", "TaskStarter"]


class CallPeer(Peer, Protocol):
    """The :class:`~erlmcp_py.actors.peer.Peer` of one call, with what its ``Context`` needs."""

    @property
    def protocol_version(self) -> str:
        """The protocol version of the call (negotiated, or named by the request)."""
        ...

    @property
    def capabilities(self) -> ClientCapabilities:
        """What the client declared (``initialize``, or the latest request's ``_meta``)."""
        ...

    @property
    def progress_token(self) -> str | int | None:
        """The ``_meta.progressToken`` of the request the call reports progress to, if any."""
        ...

    @property
    def task_id(self) -> str | None:
        """The id of the task the call runs as, or ``None`` for a call answered in its own
        request (its questions then have the runtime's ordinary deadlines, a task's the task
        policy's)."""
        ...

    @property
    def keeps_call(self) -> bool:
        """Whether the call stays in this process while the client is asked: what the
        server's hosted page needs, whose answer reaches only the call that asked."""
        ...

    @property
    def asking(self) -> AbstractContextManager[None]:
        """Entered around each question, from its start to its answer: a 2026-07-28 round
        ends only once every question begun has its request recorded."""
        ...

    def count_question(self) -> bool:
        """Count one new elicitation of the call; whether the client is charged a rate token
        for it (a replayed 2026-07-28 call asks its earlier questions again, charged already)."""
        ...

    def with_key(self, key: str) -> CallPeer:
        """This peer, its requests named ``key`` where requests are named (a 2026-07-28
        ``inputRequests`` key); itself where they are not."""
        ...

    async def notify(self, method: str, params: Mapping[str, Any]) -> None:
        """Send a progress or log notification related to the call; one that cannot be sent
        (the client is gone, nobody is attached) is dropped, never raised."""
        ...


class TaskStarter(Protocol):
    """What turns a call into a task where its tool says so (``await ctx.start_task()``, for
    a tool registered with ``task_start="tool"``): the questions asked before go out in the
    call's own rounds (2026-07-28 ``InputRequiredResult``), the request being answered gets
    the ``CreateTaskResult``, and the tool goes on as the task."""

    async def start(self, peer: CallPeer) -> CallPeer | None:
        """Make the call a task from now on; the peer its questions go through from then on,
        or ``None`` when it stays a call (the latest request of the call did not declare the
        extension, and the tool does not require a task).

        Raises:
            JsonRpcError: the task cannot be made (the client's or the server's share of
                tasks is full, the store cannot record it, the tool requires a task and the
                client did not declare the extension: ``-32021``).
            RuntimeError: a question of the tool is being asked right now.
        """
        ...
