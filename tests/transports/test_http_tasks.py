"""Tasks (the ``io.modelcontextprotocol/tasks`` extension) over Streamable HTTP: a real server
on 127.0.0.1 driven with raw HTTP. The lifecycle with a question answered by ``tasks/update``,
the routing headers of the tasks methods, the required-task error, isolation between
principals, and a principal's share of tasks answered 429."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import httpx2
import structlog
import trio

from erlmcp_py.actors.api import RuntimeConfig
from erlmcp_py.core.outcomes import Accepted, Tenant
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.server import Server
from erlmcp_py.transports.http import HttpConfig, Listening, serve_http

TIMEOUT = 10  # seconds: bound of every wait in this file
EXT = "io.modelcontextprotocol/tasks"
CAPS: dict[str, Any] = {"elicitation": {"form": {}}, "extensions": {EXT: {}}}
NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
COUNT_SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer", "minimum": 1}},
    "required": ["n"],
}


def build(**runtime: Any) -> Server:
    server = Server("tasks-http", "1.0", runtime_config=RuntimeConfig.model_validate(runtime))

    @server.tool(task=True)
    async def hello(ctx: Context) -> str:
        """Ask a name, greet."""
        outcome = await ctx.elicit("Your name?", NAME_SCHEMA, key="name")
        return f"Hello, {outcome.content['name'] if isinstance(outcome, Accepted) else '-'}!"

    @server.tool(task=True)
    async def pair(ctx: Context) -> str:
        """Ask two people at once, each a number of at least 1."""
        got: dict[str, str] = {}

        async def ask(key: str) -> None:
            outcome = await ctx.elicit(f"{key}: how many?", COUNT_SCHEMA, key=key)
            got[key] = str(outcome.content["n"]) if isinstance(outcome, Accepted) else "-"

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask, "left")
            nursery.start_soon(ask, "right")
        return f"{got['left']}/{got['right']}"

    @server.tool(task="required")
    async def long_job(seconds: float = 3600) -> str:
        """Runs only as a task."""
        await trio.sleep(seconds)
        return "done"

    return server


@asynccontextmanager
async def serving(config: HttpConfig | None = None, **runtime: Any) -> AsyncIterator[Listening]:
    server = build(**runtime)
    async with server.running(), trio.open_nursery() as nursery:
        listening: Listening = await nursery.start(
            partial(serve_http, server, host="127.0.0.1", port=0, config=config)
        )
        try:
            yield listening
        finally:
            nursery.cancel_scope.cancel()


class Client:
    """A hand-driven 2026-07-28 client: one POST per request, headers under its control."""

    def __init__(self, http: httpx2.AsyncClient, url: str, principal: str | None = None) -> None:
        self.http = http
        self.url = url
        self.principal = principal
        self.ids = itertools.count(1)

    async def post(
        self,
        method: str,
        params: Mapping[str, Any],
        *,
        caps: Mapping[str, Any] = CAPS,
        name: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> httpx2.Response:
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": dict(caps),
        }
        body = {"jsonrpc": "2.0", "id": next(self.ids), "method": method,
                "params": {**params, "_meta": meta}}  # fmt: skip
        sent = {
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": method,
        }
        routed = name if name is not None else params.get("name", params.get("taskId"))
        if isinstance(routed, str):
            sent["mcp-name"] = routed
        if self.principal is not None:
            sent["x-principal"] = self.principal
        sent.update(headers or {})
        return await self.http.post(self.url, content=json.dumps(body).encode(), headers=sent)

    async def result(self, method: str, params: Mapping[str, Any], **kw: Any) -> dict[str, Any]:
        response = await self.post(method, params, **kw)
        assert response.status_code == 200, response.text
        assert "mcp-session-id" not in response.headers
        result: dict[str, Any] = response.json()["result"]
        return result

    async def until(self, task_id: str, status: str) -> dict[str, Any]:
        with trio.fail_after(TIMEOUT):
            while True:
                task = await self.result("tasks/get", {"taskId": task_id})
                if task["status"] == status:
                    return task
                await trio.sleep(0.02)

    async def asking(self, task_id: str, keys: set[str]) -> dict[str, Any]:
        """Poll until the task's outstanding keys are exactly ``keys``."""
        with trio.fail_after(TIMEOUT):
            while True:
                task = await self.result("tasks/get", {"taskId": task_id})
                if set(task.get("inputRequests", {})) == keys:
                    return task
                await trio.sleep(0.02)

    async def update(self, task_id: str, responses: Mapping[str, Any]) -> None:
        params = {"taskId": task_id, "inputResponses": dict(responses)}
        assert (await self.result("tasks/update", params))["resultType"] == "complete"


def error(response: httpx2.Response, status: int, code: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    found: dict[str, Any] = response.json()["error"]
    assert found["code"] == code, found
    return found


async def test_a_task_over_http_asks_is_answered_and_completes() -> None:
    async with serving() as listening, httpx2.AsyncClient(timeout=TIMEOUT) as http:
        client = Client(http, listening.url)
        found = await client.result("server/discover", {})
        assert found["capabilities"]["extensions"] == {EXT: {}}
        created = await client.result("tools/call", {"name": "hello", "arguments": {}})
        assert created["resultType"] == "task"
        task_id = created["taskId"]
        asking = await client.until(task_id, "input_required")
        assert asking["resultType"] == "complete"
        assert list(asking["inputRequests"]) == ["name"]
        answer = {"name": {"action": "accept", "content": {"name": "Ada"}}}
        ack = await client.result("tasks/update", {"taskId": task_id, "inputResponses": answer})
        assert ack["resultType"] == "complete"
        done = await client.until(task_id, "completed")
        assert done["result"]["content"][0]["text"] == "Hello, Ada!"


async def test_the_tasks_methods_must_name_their_task_in_mcp_name() -> None:
    async with serving() as listening, httpx2.AsyncClient(timeout=TIMEOUT) as http:
        client = Client(http, listening.url)
        task_id = (await client.result("tools/call", {"name": "long_job", "arguments": {}}))[
            "taskId"
        ]
        for method, params in (
            ("tasks/get", {"taskId": task_id}),
            ("tasks/update", {"taskId": task_id, "inputResponses": {}}),
            ("tasks/cancel", {"taskId": task_id}),
        ):
            wrong = await client.post(method, params, name="another-task")
            assert "Mcp-Name" in error(wrong, 400, -32020)["message"]
            missing = await client.post(method, params, name="", headers={})
            error(missing, 400, -32020)
        assert (await client.result("tasks/get", {"taskId": task_id}))["status"] == "working"


async def test_a_client_without_the_extension_gets_a_call_or_400_and_32021() -> None:
    async with serving() as listening, httpx2.AsyncClient(timeout=TIMEOUT) as http:
        client = Client(http, listening.url)
        refused = await client.post(
            "tools/call", {"name": "long_job", "arguments": {}}, caps={"elicitation": {}}
        )
        found = error(refused, 400, -32021)
        assert found["data"] == {"requiredCapabilities": {"extensions": {EXT: {}}}}
        gated = await client.post("tasks/get", {"taskId": "anything"}, caps={})
        error(gated, 400, -32021)
        call = await client.post(
            "tools/call", {"name": "pair", "arguments": {}}, caps={"elicitation": {}}
        )
        assert call.status_code == 200
        assert call.json()["result"]["resultType"] == "input_required"  # a call, not a task


async def test_a_task_is_bound_to_its_principal_over_http() -> None:
    config = HttpConfig(principal_header="X-Principal")
    async with serving(config) as listening, httpx2.AsyncClient(timeout=TIMEOUT) as http:
        alice = Client(http, listening.url, principal="alice")
        mallory = Client(http, listening.url, principal="mallory")
        task_id = (await alice.result("tools/call", {"name": "hello", "arguments": {}}))["taskId"]
        await alice.until(task_id, "input_required")
        answer = {"name": {"action": "accept", "content": {"name": "Mallory"}}}
        for method, params in (
            ("tasks/get", {"taskId": task_id}),
            ("tasks/update", {"taskId": task_id, "inputResponses": answer}),
            ("tasks/cancel", {"taskId": task_id}),
        ):
            theirs = error(await mallory.post(method, params), 400, -32602)
            unknown = error(
                await mallory.post(method, {**params, "taskId": "x" * len(task_id)}), 400, -32602
            )
            assert theirs == unknown  # code, message, data: nothing tells them apart
        still = await alice.result("tasks/get", {"taskId": task_id})
        assert still["status"] == "input_required"
        assert list(still["inputRequests"]) == ["name"]


async def test_a_principal_at_its_share_of_running_tasks_is_answered_429() -> None:
    config = HttpConfig(principal_header="X-Principal", retry_after_s=7)
    async with (
        serving(config, max_tasks_per_client=1) as listening,
        httpx2.AsyncClient(timeout=TIMEOUT) as http,
    ):
        alice = Client(http, listening.url, principal="alice")
        bob = Client(http, listening.url, principal="bob")
        call = {"name": "long_job", "arguments": {}}
        assert (await alice.result("tools/call", call))["resultType"] == "task"
        refused = await alice.post("tools/call", call)
        assert error(refused, 429, -32603)["data"] == {"reason": "tasks_principal_busy"}
        assert refused.headers["retry-after"] == "7"
        assert (await bob.result("tools/call", call))["resultType"] == "task"
        metrics = (await http.get(listening.url.replace("/mcp", "/metrics"))).text
        assert 'erlmcp_tasks{state="running"} 2.0' in metrics
        assert 'erlmcp_refusals_total{reason="principal_tasks"} 1.0' in metrics


async def test_over_http_a_partial_answer_and_an_invalid_one_re_prompted_under_a_new_key() -> None:
    async with serving() as listening, httpx2.AsyncClient(timeout=TIMEOUT) as http:
        client = Client(http, listening.url)
        task_id = (await client.result("tools/call", {"name": "pair", "arguments": {}}))["taskId"]
        await client.asking(task_id, {"left", "right"})
        await client.update(task_id, {"left": {"action": "accept", "content": {"n": 0}}})
        asking = await client.asking(task_id, {"right", "left-1"})  # left re-prompted
        message = asking["inputRequests"]["left-1"]["params"]["message"]
        assert message.startswith("left: how many?")
        assert "not accepted (attempt 2)" in message
        await client.update(task_id, {"right": {"action": "accept", "content": {"n": 2}}})
        assert (await client.result("tasks/get", {"taskId": task_id}))["status"] == (
            "input_required"
        )
        await client.update(task_id, {"left-1": {"action": "accept", "content": {"n": 3}}})
        done = await client.until(task_id, "completed")
        assert done["result"]["content"][0]["text"] == "3/2"


async def test_over_http_cancel_ends_the_questions_cancelled_and_the_task_cancelled() -> None:
    async with serving() as listening, httpx2.AsyncClient(timeout=TIMEOUT) as http:
        client = Client(http, listening.url)
        task_id = (await client.result("tools/call", {"name": "pair", "arguments": {}}))["taskId"]
        await client.asking(task_id, {"left", "right"})
        ack = await client.result("tasks/cancel", {"taskId": task_id})
        assert set(ack) == {"resultType", "_meta"}
        assert (await client.until(task_id, "cancelled"))["status"] == "cancelled"
        runtime = listening.transport.runtime
        rows = await runtime.list_elicitations(tenant=Tenant(user="addr:127.0.0.1"))
        assert sorted(str(row.status) for row in rows) == ["cancelled", "cancelled"]


async def test_over_http_a_task_past_its_ttl_is_forgotten() -> None:
    policy = {"task_form_deadline_s": 0.5, "task_url_deadline_s": 0.5,
              "task_warn_before_s": 0.0, "task_ttl_s": 0.8}  # fmt: skip
    async with serving(**policy) as listening, httpx2.AsyncClient(timeout=TIMEOUT) as http:
        client = Client(http, listening.url)
        created = await client.result("tools/call", {"name": "long_job", "arguments": {}})
        assert created["ttlMs"] == 800
        task_id = created["taskId"]
        assert (await client.result("tasks/get", {"taskId": task_id}))["status"] == "working"
        with trio.fail_after(TIMEOUT):
            while True:  # real time: the TTL runs out
                response = await client.post("tasks/get", {"taskId": task_id})
                if response.status_code != 200:
                    break
                await trio.sleep(0.05)
        assert error(response, 400, -32602)["message"] == "Failed to retrieve task: Task not found"


async def test_the_embedded_store_keeps_tasks_for_the_life_of_the_process_and_says_so() -> None:
    with structlog.testing.capture_logs() as logs:
        async with serving() as listening, httpx2.AsyncClient(timeout=TIMEOUT) as http:
            client = Client(http, listening.url)
            created = await client.result("tools/call", {"name": "hello", "arguments": {}})
            assert created["resultType"] == "task"
    [said] = [event for event in logs if event["event"] == "tasks_store"]
    assert said["durable"] is False
    assert said["kept"].startswith("in this process (the embedded store), for the life of")
    assert "a restart loses every task" in said["kept"]
