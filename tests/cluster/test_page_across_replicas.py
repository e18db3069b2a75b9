"""The hosted elicitation page through HAProxy: a 2025-11-25 session's tool asks for a secret,
so the question goes to the server's own page on the session's replica, whose link names
HAProxy (the replicas' ``--public-url``); the browser's ``GET`` and ``POST`` of the page go
through HAProxy round-robin (no session header) and land on the other replicas, which render
the page from the ticket in the shared store and forward the answer to the replica holding
the elicitation.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import httpx2
import trio
from pydantic import BaseModel, SecretStr

from erlmcp_py.actors.api import RuntimeConfig
from erlmcp_py.core.outcomes import Accepted
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.server import Server
from tests.cluster.harness import BACKEND, Cluster, until
from tests.cluster.servers import build as build_cluster_server

LIMIT = 30.0  # seconds: bound of the test's calls
#: This module's server (the cluster's, with a tool that asks for a secret); the per-client
#: rate raised as in the other modules (every request comes from HAProxy's address).
REPLICA_ARGS = ("--server", "tests.cluster.test_page_across_replicas:build", "--rate", "600")


class Credentials(BaseModel):
    """An account and its API key: the key may not be asked in form mode."""

    account: str
    api_key: SecretStr


def build(config: RuntimeConfig) -> Server:
    """The cluster's server with ``connect_account``, which asks for an API key."""
    server = build_cluster_server(config)

    @server.tool()
    async def connect_account(ctx: Context) -> str:
        """Ask for an account and its API key (on the hosted page)."""
        outcome = await ctx.elicit("Connect your Acme account", Credentials)
        if not isinstance(outcome, Accepted):
            return f"not connected: {type(outcome).__name__}"
        key = outcome.content.api_key.get_secret_value()
        return f"connected {outcome.content.account} key={key}"

    return server


def text(result: Any) -> str:
    value: str = result.content[0].text
    return value


async def test_a_sessions_page_is_rendered_and_answered_through_the_other_replicas(
    cluster: Cluster,
) -> None:
    from mcp import Client, types

    asked: list[Any] = []

    async def open_the_page(_ctx: Any, params: Any) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestURLParams), params
        asked.append(params)
        return types.ElicitResult(action="accept")  # the user agreed to open the page

    results: list[Any] = []
    with trio.fail_after(LIMIT):
        async with (
            Client(cluster.url, mode="legacy", elicitation_callback=open_the_page) as client,  # type: ignore[arg-type]
            trio.open_nursery() as nursery,
        ):
            assert client.protocol_version == "2025-11-25"

            async def connect() -> None:
                results.append(await client.call_tool("connect_account", {}))

            nursery.start_soon(connect)
            await until(lambda: bool(asked), "the page's URL")
            [params] = asked
            # the replicas' --public-url: the page's link names HAProxy, not a replica
            assert urlsplit(params.url)[:2] == ("http", f"127.0.0.1:{cluster.frontend}")

            def consented() -> list[str]:
                return [
                    name
                    for name, replica in cluster.replicas.items()
                    if replica.events(event="consented", elicitation_id=params.elicitation_id)
                ]

            # the session's consent reached its replica
            await until(lambda: bool(consented()), "a replica to log the user's consent")
            [home] = consented()
            # the browser reaches the page through HAProxy; the session's replica drains
            # (its session stays on it, the call's answer and the client's next requests
            # with it), so every page request lands on another replica
            cluster.admin(f"set server {BACKEND}/{home} state drain")
            others = [n for n in cluster.replicas if n != home]
            cluster.wait_states({n: ("DRAIN" if n == home else "UP") for n in cluster.replicas})
            page_url = params.url
            browser = {"origin": f"http://127.0.0.1:{cluster.frontend}"}
            async with httpx2.AsyncClient(timeout=10, headers=browser) as http:
                for _ in others:  # round-robin: once on each other replica
                    page = await http.get(page_url)
                    assert page.status_code == 200, page.text
                    assert "Connect your Acme account" in page.text
                csrf = page.text.split('name="_csrf" value="', 1)[1].split('"', 1)[0]
                answer = {"_csrf": csrf, "_action": "accept", "account": "ada",
                          "api_key": "k-cluster"}  # fmt: skip
                done = await http.post(page_url, data=answer)
                assert done.status_code == 200, done.text
                again = await http.post(page_url, data=answer)  # single use, on the other
                assert again.status_code == 410
            cluster.admin(f"set server {BACKEND}/{home} state ready")
    [result] = results
    assert text(result) == "connected ada key=k-cluster"
    answered = {n for n, r in cluster.replicas.items() if r.events(event="page_answered")}
    assert len(answered) == 1
    assert answered <= set(others)
    # the replica that held it ended it; the others only forwarded
    holder = cluster.replicas[home]
    assert holder.events(event="outcome", elicitation_id=params.elicitation_id, outcome="Accepted")
