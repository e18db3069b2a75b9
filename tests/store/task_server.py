"""The server of the tasks-across-replicas tests, and a replica of it in a process of its own:
``python -m tests.store.task_server STORE_URL TOOL [ARGUMENTS_JSON [COUNT [CONFIG_JSON]]]``
opens a runtime on the store (``CONFIG_JSON``: runtime config besides), a durable task
registry and the endpoint, calls ``TOOL`` as a task for ``alice`` ``COUNT`` times (1),
prints each task's id, one a line, and waits to be killed."""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import trio

from erlmcp_py import Tenant, open_runtime
from erlmcp_py.actors.runtime import Runtime
from erlmcp_py.core.outcomes import Accepted
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.jsonrpc import Request
from erlmcp_py.mcp.mrtr import open_continuations
from erlmcp_py.mcp.server import Server
from erlmcp_py.mcp.stateless import StatelessEndpoint
from erlmcp_py.mcp.tasks import TaskRegistry, open_tasks

EXT = "io.modelcontextprotocol/tasks"
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {
        "elicitation": {"form": {}, "url": {}},
        "extensions": {EXT: {}},
    },
}
WHO = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


@dataclass
class Probe:
    """What the tools of one process did: each run, and each answer each run received."""

    runs: list[str] = field(default_factory=list)
    answers: list[tuple[str, str]] = field(default_factory=list)


def build(probe: Probe) -> Server:
    server = Server("tasks-replicas", "1.0")

    @server.tool(task=True)
    async def approve(ctx: Context, item: str, pause: float = 0.0) -> str:
        """Who approves (a form), then that person's confirmation; ``pause`` seconds of work
        before the first question."""
        probe.runs.append(item)
        await trio.sleep(pause)
        who = await ctx.elicit(f"Who approves {item}?", WHO, key="who")
        if not isinstance(who, Accepted):
            return f"{item}: nobody ({type(who).__name__})"
        name = who.content["name"]
        probe.answers.append((item, name))
        sure = await ctx.elicit_confirm(f"{name}, do you approve {item}?")
        probe.answers.append((item, f"confirm={type(sure).__name__}"))
        return f"{item}: {name} {type(sure).__name__}"

    @server.tool(task=True)
    async def pair(ctx: Context, item: str) -> str:
        """Two people asked at once (``left`` and ``right``), each a name."""
        probe.runs.append(item)
        got: dict[str, str] = {}

        async def ask(key: str) -> None:
            outcome = await ctx.elicit(f"{key}: who signs {item}?", WHO, key=key)
            got[key] = outcome.content["name"] if isinstance(outcome, Accepted) else "-"
            probe.answers.append((item, f"{key}={got[key]}"))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask, "left")
            nursery.start_soon(ask, "right")
        return f"{item}: {got['left']}/{got['right']}"

    @server.tool(task=True)
    async def sign_in(ctx: Context) -> str:
        """A question in URL mode, which only the process that asked can receive."""
        probe.runs.append("sign_in")
        # an address, not a name: no lookup
        outcome = await ctx.elicit_url("Sign in to Example", "https://93.184.215.14/sign-in")
        return type(outcome).__name__

    return server


class Replica:
    """One process's endpoint, driven as ``alice`` (or another principal)."""

    def __init__(
        self, endpoint: StatelessEndpoint, tasks: TaskRegistry, runtime: Runtime, probe: Probe
    ) -> None:
        self.endpoint = endpoint
        self.tasks = tasks
        self.runtime = runtime
        self.probe = probe
        self.ids = itertools.count(1)

    async def request(
        self, method: str, params: Mapping[str, Any], who: str = "alice"
    ) -> dict[str, Any]:
        request = Request(next(self.ids), method, {**params, "_meta": META})
        return await self.endpoint.handle(
            request, principal=who, tenant=Tenant(user=who), client_id=who
        )

    async def call(self, tool: str, arguments: Mapping[str, Any]) -> str:
        """Call ``tool`` as a task; its id."""
        created = await self.request("tools/call", {"name": tool, "arguments": dict(arguments)})
        assert created["resultType"] == "task", created
        task_id: str = created["taskId"]
        return task_id


#: Where the links of :func:`replica` point (the same for every replica: a balancer's).
PAGE_ORIGIN = "https://mcp.example.com"


async def answer_on_link(one: Replica, url: str, response: Mapping[str, Any]) -> None:
    """Answer a task question on its link through ``one`` as the hosted page does: the
    ticket from the store, claimed, the elicitation completed (or dismissed) through the
    runtime on the replica the ticket names.

    Raises:
        AssertionError: the ticket is not open (the link is dead).
    """
    pages = one.runtime.pages
    ticket = await pages.get(url.rsplit("/", 1)[-1])
    assert ticket is not None, url
    assert ticket.state == "open", ticket.state
    assert ticket.elicitation_id is not None
    assert await pages.claim(ticket)
    if response["action"] == "accept":
        await one.runtime.complete_elicitation(
            ticket.elicitation_id, response["content"], tenant=ticket.tenant, replica=ticket.replica
        )
    else:
        await one.runtime.answer_elicitation(
            ticket.elicitation_id, response["action"], tenant=ticket.tenant, replica=ticket.replica
        )


@asynccontextmanager
async def replica(
    url: str, *, replay: bool = True, links: bool = False, **config: Any
) -> AsyncIterator[Replica]:
    """A replica on the store ``url``: its runtime (``config`` besides), a durable task
    registry and the endpoint; leaving the block stops it as a graceful stop does. With
    ``links`` its task questions have links to a hosted page at :data:`PAGE_ORIGIN` (the
    page itself is not served: :func:`answer_on_link` answers as it does)."""
    probe = Probe()
    server = build(probe)
    async with open_runtime({"store": url, "rate": 1000, **config}) as runtime:
        if links:
            runtime.pages.base_url = PAGE_ORIGIN
        server.runtime = runtime
        async with (
            open_continuations() as registry,
            open_tasks(runtime, durable=True, replay=replay) as tasks,
        ):
            endpoint = StatelessEndpoint(server, runtime, registry, tasks=tasks)
            yield Replica(endpoint, tasks, runtime, probe)


async def main(
    url: str, tool: str, arguments: Mapping[str, Any], count: int, config: Mapping[str, Any]
) -> None:
    async with replica(url, **config) as one:
        for _ in range(count):
            print(await one.call(tool, arguments), flush=True)
        await trio.sleep_forever()


if __name__ == "__main__":
    args = sys.argv[1:] + ["{}", "1", "{}"][len(sys.argv) - 3 :]
    trio.run(main, args[0], args[1], json.loads(args[2]), int(args[3]), json.loads(args[4]))
