"""Tasks (the ``io.modelcontextprotocol/tasks`` extension) at the stateless endpoint, in
process on trio's autojump clock: lifecycle, questions answered by ``tasks/update`` (partial,
re-prompted, refused), cancellation, the task policy's deadlines and warning, TTL, the
required-task error, capability negotiation, a tool that starts its task itself, caps, and
isolation between principals. Hours of deadlines pass in microseconds."""

from __future__ import annotations

import itertools
import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Annotated, Any

import pytest
import trio
import trio.testing
from pydantic import BaseModel, Field, SecretStr

from erlmcp_py.actors.runtime import Runtime, open_runtime
from erlmcp_py.core.outcomes import Accepted, Outcome, Tenant, TimedOut
from erlmcp_py.mcp.context import Context
from erlmcp_py.mcp.errors import ToolError
from erlmcp_py.mcp.jsonrpc import JsonRpcError, Request
from erlmcp_py.mcp.mrtr import open_continuations
from erlmcp_py.mcp.server import Server
from erlmcp_py.mcp.stateless import StatelessEndpoint
from erlmcp_py.mcp.tasks import TaskRegistry, open_tasks

V = "2026-07-28"
EXT = "io.modelcontextprotocol/tasks"
TASK_CAPS: dict[str, Any] = {"elicitation": {"form": {}, "url": {}}, "extensions": {EXT: {}}}
PLAIN_CAPS: dict[str, Any] = {"elicitation": {"form": {}}}


class Approval(BaseModel):
    approved: bool
    reviewer: Annotated[str, Field(min_length=2)]


class Token(BaseModel):
    token: SecretStr


@dataclass
class Probe:
    outcomes: list[Outcome] = field(default_factory=list)
    ended: list[str] = field(default_factory=list)
    task_ids: list[str | None] = field(default_factory=list)
    started: list[bool] = field(default_factory=list)


def build() -> tuple[Server, Probe]:
    server = Server("tasks-test", "1.0")
    probe = Probe()

    @server.tool(task=True)
    async def approve(ctx: Context, item: str) -> str:
        """One question, then the answer."""
        probe.task_ids.append(ctx.task_id)
        try:
            outcome = await ctx.elicit(f"Approve {item}?", Approval, key="approval")
            probe.outcomes.append(outcome)
            if isinstance(outcome, Accepted):
                return f"{item}: approved={outcome.content.approved} by {outcome.content.reviewer}"
            return f"{item}: {type(outcome).__name__}"
        finally:
            probe.ended.append("approve")

    @server.tool(task=True)
    async def two_reviewers(ctx: Context) -> str:
        """Two questions at once."""
        names: dict[str, str] = {}

        async def ask(key: str) -> None:
            outcome = await ctx.elicit_string(f"{key} reviewer?", "name")
            probe.outcomes.append(outcome)
            names[key] = outcome.content if isinstance(outcome, Accepted) else "-"

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask, "first")
            nursery.start_soon(ask, "second")
        return f"{names['first']}+{names['second']}"

    @server.tool(task="required")
    async def must_be_task() -> str:
        """Runs only as a task."""
        return "ran"

    @server.tool(task=True)
    async def work(seconds: float) -> str:
        """Work, then answer."""
        try:
            await trio.sleep(seconds)
            return f"worked {seconds:g} s"
        finally:
            probe.ended.append("work")

    @server.tool(task=True)
    async def late_question(ctx: Context, after: float) -> str:
        """Work, then ask."""
        try:
            await trio.sleep(after)
            outcome = await ctx.elicit_confirm("Still there?")
            probe.outcomes.append(outcome)
            return type(outcome).__name__
        finally:
            probe.ended.append("late_question")

    @server.tool(task=True)
    async def protocol_error() -> str:
        """Fail with a JSON-RPC error."""
        raise JsonRpcError(-32603, "backend refused", {"why": "quota"})

    @server.tool(task=True)
    async def tool_error() -> str:
        """Fail with a tool error."""
        raise ToolError("nothing to do")

    @server.tool(task=True, task_start="tool")
    async def ask_then_task(ctx: Context) -> str:
        """Ask in the call's round, start the task, ask again as the task."""
        name = await ctx.elicit_string("Your name?", "name", timeout=60)
        probe.outcomes.append(name)
        probe.started.append(await ctx.start_task())
        probe.task_ids.append(ctx.task_id)
        sure = await ctx.elicit_confirm("Go on?")
        probe.outcomes.append(sure)
        return f"{name.content if isinstance(name, Accepted) else '-'}:{type(sure).__name__}"

    @server.tool(task=True)
    async def chatty(ctx: Context) -> str:
        """Report progress and log: a task has no channel for them."""
        await ctx.report_progress(1, 2, "half")
        await ctx.log("warning", "a log line")
        return "chatted"

    @server.tool(task=True)
    async def secret(ctx: Context) -> str:
        """Ask for a secret: on the hosted page, never in form mode."""
        outcome = await ctx.elicit("Your API token?", Token)
        probe.outcomes.append(outcome)
        return type(outcome).__name__

    @server.tool(task=True)
    async def twice(ctx: Context) -> str:
        """Ask twice, one after the other."""
        for _ in range(2):
            probe.outcomes.append(await ctx.elicit_confirm("Sure?"))
        return "asked twice"

    @server.tool(task=True)
    async def unencodable() -> dict[str, Any]:
        """A whole result that is not JSON (a NaN in it)."""
        return {"content": [{"type": "text", "text": "x"}], "score": float("nan")}

    @server.tool()
    async def plain() -> str:
        """Never a task."""
        return "plain"

    return server, probe


def meta(caps: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": V,
        "io.modelcontextprotocol/clientCapabilities": dict(caps),
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
    }


class Ep:
    """A 2026-07-28 client of one endpoint, speaking for any principal."""

    def __init__(self, endpoint: StatelessEndpoint, runtime: Runtime, tasks: TaskRegistry) -> None:
        self.endpoint = endpoint
        self.runtime = runtime
        self.tasks = tasks
        self.ids = itertools.count(1)

    async def request(
        self,
        method: str,
        params: Mapping[str, Any],
        *,
        who: str = "alice",
        caps: Mapping[str, Any] = TASK_CAPS,
    ) -> dict[str, Any]:
        request = Request(next(self.ids), method, {**params, "_meta": meta(caps)})
        return await self.endpoint.handle(
            request, principal=who, tenant=Tenant(user=who), client_id=who
        )

    async def call(
        self, name: str, arguments: Mapping[str, Any] | None = None, **kw: Any
    ) -> dict[str, Any]:
        params = {"name": name, "arguments": dict(arguments or {})}
        return await self.request("tools/call", params, **kw)

    async def get(self, task_id: str, **kw: Any) -> dict[str, Any]:
        return await self.request("tasks/get", {"taskId": task_id}, **kw)

    async def update(self, task_id: str, responses: Any, **kw: Any) -> dict[str, Any]:
        params = {"taskId": task_id, "inputResponses": responses}
        return await self.request("tasks/update", params, **kw)

    async def cancel(self, task_id: str, **kw: Any) -> dict[str, Any]:
        return await self.request("tasks/cancel", {"taskId": task_id}, **kw)

    async def until(self, task_id: str, *statuses: str, who: str = "alice") -> dict[str, Any]:
        """Poll until the task is in one of ``statuses`` (a minute of virtual time at most)."""
        with trio.fail_after(60):
            while True:
                task = await self.get(task_id, who=who)
                if task["status"] in statuses:
                    return task
                await trio.sleep(0.5)

    async def asking(self, task_id: str, questions: int) -> dict[str, Any]:
        """Poll until the task asks ``questions`` questions at once."""
        with trio.fail_after(60):
            while True:
                task = await self.get(task_id)
                if len(task.get("inputRequests", {})) >= questions:
                    return task
                await trio.sleep(0.5)

    async def statuses(self, who: str = "alice") -> list[str]:
        rows = await self.runtime.list_elicitations(tenant=Tenant(user=who))
        return sorted(str(row.status) for row in rows)


@asynccontextmanager
async def endpoint(server: Server, **config: Any) -> AsyncIterator[Ep]:
    async with open_runtime({"rate": 10_000, **config}) as runtime:
        server.runtime = runtime
        async with open_continuations() as registry, open_tasks(runtime) as tasks:
            yield Ep(StatelessEndpoint(server, runtime, registry, tasks=tasks), runtime, tasks)


def one_request(task: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    assert task["status"] == "input_required", task
    ((key, request),) = task["inputRequests"].items()
    return key, request


def accept(content: Mapping[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": dict(content)}


# -- negotiation ---------------------------------------------------------------------------------


async def test_discover_offers_the_tasks_extension(autojump_clock: trio.testing.MockClock) -> None:
    server, _ = build()
    async with endpoint(server) as ep:
        found = await ep.request("server/discover", {})
        assert found["capabilities"]["extensions"] == {EXT: {}}
        assert "tasks" not in found["capabilities"]  # no 2025-11-25 style slot


async def test_a_client_without_the_extension_gets_a_task_tool_as_an_ordinary_call(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, probe = build()
    async with endpoint(server) as ep:
        done = await ep.call("work", {"seconds": 5}, caps=PLAIN_CAPS)
        assert done["resultType"] == "complete"
        assert done["content"][0]["text"] == "worked 5 s"
        assert "taskId" not in done
        first = await ep.call("approve", {"item": "x"}, caps=PLAIN_CAPS)
        assert first["resultType"] == "input_required"  # its question in the call's own round
        assert probe.task_ids == [None]
        assert len(ep.tasks) == 0


async def test_a_required_task_tool_answers_a_client_without_the_extension_with_32021(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = build()
    async with endpoint(server) as ep:
        with pytest.raises(JsonRpcError) as caught:
            await ep.call("must_be_task", caps=PLAIN_CAPS)
        assert caught.value.code == -32021
        assert caught.value.data == {"requiredCapabilities": {"extensions": {EXT: {}}}}
        created = await ep.call("must_be_task")
        assert created["resultType"] == "task"
        done = await ep.until(created["taskId"], "completed")
        assert done["result"]["content"][0]["text"] == "ran"


async def test_the_tasks_methods_need_the_extension_on_the_request_itself(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = build()
    async with endpoint(server) as ep:
        created = await ep.call("work", {"seconds": 10})
        task_id = created["taskId"]
        for method, params in (
            ("tasks/get", {"taskId": task_id}),
            ("tasks/update", {"taskId": task_id, "inputResponses": {}}),
            ("tasks/cancel", {"taskId": task_id}),
        ):
            with pytest.raises(JsonRpcError) as caught:
                await ep.request(method, params, caps=PLAIN_CAPS)
            assert caught.value.code == -32021, method
        assert (await ep.get(task_id))["status"] == "working"  # nothing was done to it
        for method in ("tasks/result", "tasks/list"):
            with pytest.raises(JsonRpcError) as caught:
                await ep.request(method, {"taskId": task_id})
            assert caught.value.code == -32601


async def test_a_task_whose_end_was_being_written_when_its_registry_closes_is_recorded_ended(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = build()
    async with open_runtime({"rate": 10_000}) as runtime:
        server.runtime = runtime
        store = runtime.store
        real_put = store.put_task
        in_flight = trio.Event()

        async def put_slowly(task: Any, ttl_s: float, **options: Any) -> bool:
            if task.detailed["status"] == "completed" and not in_flight.is_set():
                in_flight.set()
                await trio.sleep_forever()  # the store answers after the registry closed
            return await real_put(task, ttl_s, **options)

        store.put_task = put_slowly  # type: ignore[method-assign]
        async with open_continuations() as registry, open_tasks(runtime) as tasks:
            ep = Ep(StatelessEndpoint(server, runtime, registry, tasks=tasks), runtime, tasks)
            task_id = (await ep.call("work", {"seconds": 3}))["taskId"]
            await in_flight.wait()  # its end is being written when the registry closes
        stored = await store.get_task(task_id, "alice")
        assert stored is not None
        assert stored.detailed["status"] == "completed"  # not left working for a takeover


async def test_a_plain_tool_never_becomes_a_task_and_a_legacy_task_param_is_ignored(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = build()
    async with endpoint(server) as ep:
        params = {"name": "plain", "arguments": {}, "task": {"ttl": 60000}}
        done = await ep.request("tools/call", params)
        assert done["resultType"] == "complete"
        assert done["content"][0]["text"] == "plain"


# -- lifecycle ------------------------------------------------------------------------------------


async def test_a_task_is_recorded_before_its_create_result_and_completes_with_its_result(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = build()
    async with endpoint(server, task_poll_interval_s=5.0) as ep:
        created = await ep.call("work", {"seconds": 30})
        assert created["resultType"] == "task"
        assert created["status"] == "working"
        assert created["ttlMs"] == 24 * 3600 * 1000
        assert created["pollIntervalMs"] == 5000
        assert not {"result", "error", "inputRequests", "requestState", "task"} & set(created)
        task_id = created["taskId"]
        assert re.fullmatch("[0-9a-f]{32}", task_id)  # 128 random bits, never an option's "-"
        # recorded in the store before the answer: any replica's tasks/get resolves at once
        stored = await ep.runtime.store.get_task(task_id, "alice")
        assert stored is not None
        assert stored.detailed["status"] == "working"
        working = await ep.get(task_id)
        assert working["resultType"] == "complete"
        assert working["status"] == "working"
        assert "result" not in working
        await trio.sleep(31)
        done = await ep.get(task_id)
        assert done["status"] == "completed"
        assert done["result"] == {"content": [{"type": "text", "text": "worked 30 s"}]}
        assert done["createdAt"] < done["lastUpdatedAt"]
        stored = await ep.runtime.store.get_task(task_id, "alice")
        assert stored is not None
        assert stored.detailed["status"] == "completed"


async def test_a_tool_error_completes_with_is_error_and_a_json_rpc_error_fails_the_task(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = build()
    async with endpoint(server) as ep:
        tool = await ep.until((await ep.call("tool_error"))["taskId"], "completed", "failed")
        assert tool["status"] == "completed"
        assert tool["result"]["isError"] is True
        assert tool["result"]["content"][0]["text"] == "nothing to do"
        protocol = await ep.until(
            (await ep.call("protocol_error"))["taskId"], "completed", "failed"
        )
        assert protocol["status"] == "failed"
        assert protocol["error"] == {
            "code": -32603,
            "message": "backend refused",
            "data": {"why": "quota"},
        }
        assert protocol["statusMessage"] == "backend refused"
        assert "result" not in protocol


async def test_a_result_that_is_not_json_fails_the_task_and_the_server_serves_on(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = build()
    async with endpoint(server) as ep:
        bad = await ep.until((await ep.call("unencodable"))["taskId"], "completed", "failed")
        assert bad["status"] == "failed"
        assert bad["error"] == {"code": -32603, "message": "Result could not be encoded"}
        await trio.testing.wait_all_tasks_blocked()  # the store's write follows in the background
        stored = await ep.runtime.store.get_task(bad["taskId"], "alice")
        assert stored is not None
        assert stored.detailed["status"] == "failed"
        good = await ep.until((await ep.call("work", {"seconds": 1}))["taskId"], "completed")
        assert good["result"]["content"][0]["text"] == "worked 1 s"


async def test_a_question_of_a_task_is_an_input_request_answered_by_tasks_update(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, probe = build()
    async with endpoint(server) as ep:
        created = await ep.call("approve", {"item": "invoice"})
        task_id = created["taskId"]
        asking = await ep.until(task_id, "input_required")
        key, request = one_request(asking)
        assert key == "approval"
        assert request["method"] == "elicitation/create"
        assert request["params"]["mode"] == "form"
        assert request["params"]["message"] == "Approve invoice?"
        assert set(request["params"]["requestedSchema"]["properties"]) == {"approved", "reviewer"}
        ack = await ep.update(task_id, {key: accept({"approved": True, "reviewer": "Ada"})})
        assert ack["resultType"] == "complete"
        assert not {"taskId", "status", "result", "error", "inputRequests"} & set(ack)
        done = await ep.until(task_id, "completed")
        assert done["result"]["content"][0]["text"] == "invoice: approved=True by Ada"
        assert probe.task_ids == [task_id]
        assert isinstance(probe.outcomes[0], Accepted)
        assert isinstance(probe.outcomes[0].content, Approval)  # the typed answer, as ever
        # answering again (an answered key, an unknown key) changes nothing
        again = await ep.update(task_id, {key: accept({"approved": False, "reviewer": "Eve"})})
        assert again["resultType"] == "complete"
        assert (await ep.get(task_id))["result"] == done["result"]


async def test_partial_answers_keep_the_task_input_required_until_every_key_is_answered(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = build()
    async with endpoint(server) as ep:
        task_id = (await ep.call("two_reviewers"))["taskId"]
        asking = await ep.asking(task_id, 2)
        first, second = asking["inputRequests"]
        assert first != second
        await ep.update(task_id, {first: accept({"name": "Ada"}), "nobody-asked": accept({})})
        now = await ep.get(task_id)
        assert now["status"] == "input_required"
        assert list(now["inputRequests"]) == [second]
        await ep.update(task_id, {second: accept({"name": "Bob"})})
        done = await ep.until(task_id, "completed")
        assert sorted(done["result"]["content"][0]["text"].split("+")) == ["Ada", "Bob"]


async def test_an_invalid_answer_is_reprompted_as_a_new_input_request_with_the_errors(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, probe = build()
    async with endpoint(server) as ep:
        task_id = (await ep.call("approve", {"item": "po-7"}))["taskId"]
        key, _ = one_request(await ep.until(task_id, "input_required"))
        await ep.update(task_id, {key: accept({"approved": "yes", "reviewer": "A"})})
        with trio.fail_after(60):
            while True:
                task = await ep.get(task_id)
                if task.get("inputRequests", {}).keys() - {key}:
                    break
                await trio.sleep(0.5)
        ((again, request),) = task["inputRequests"].items()
        assert again != key  # a task never reuses a key
        assert again.startswith("approval-")
        message = request["params"]["message"]
        assert message.startswith("Approve po-7?")
        assert "not accepted (attempt 2)" in message
        assert "approved" in message  # the fields it refused
        assert "reviewer" in message
        assert "yes" not in message  # never the submitted value
        await ep.update(task_id, {key: accept({"approved": True, "reviewer": "Ada"})})  # stale
        assert (await ep.get(task_id))["status"] == "input_required"
        await ep.update(task_id, {again: accept({"approved": False, "reviewer": "Ada"})})
        done = await ep.until(task_id, "completed")
        assert done["result"]["content"][0]["text"] == "po-7: approved=False by Ada"
        assert len(probe.outcomes) == 1  # one question, one outcome


async def test_an_answer_that_is_no_answer_is_refused_and_nothing_is_delivered(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = build()
    async with endpoint(server) as ep:
        task_id = (await ep.call("approve", {"item": "z"}))["taskId"]
        key, _ = one_request(await ep.until(task_id, "input_required"))
        for responses in ({key: {"action": "maybe"}}, {key: "accept"}, ["not", "an", "object"]):
            with pytest.raises(JsonRpcError) as caught:
                await ep.update(task_id, responses)
            assert caught.value.code == -32602
        still = await ep.get(task_id)
        assert list(still["inputRequests"]) == [key]  # still outstanding, still the same


async def test_cancel_answers_the_open_questions_cancel_and_ends_the_task_cancelled(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, probe = build()
    async with endpoint(server) as ep:
        task_id = (await ep.call("two_reviewers"))["taskId"]
        await ep.asking(task_id, 2)
        ack = await ep.cancel(task_id)
        assert ack == {"resultType": "complete", "_meta": ack["_meta"]}
        done = await ep.until(task_id, "cancelled", "completed", "failed")
        assert done["status"] == "cancelled"
        assert not {"result", "error", "inputRequests"} & set(done)
        assert await ep.statuses() == ["cancelled", "cancelled"]  # as the user dismissed them
        assert (await ep.cancel(task_id))["resultType"] == "complete"  # idempotent
        work_id = (await ep.call("work", {"seconds": 600}))["taskId"]
        await ep.cancel(work_id)
        assert (await ep.until(work_id, "cancelled", "completed"))["status"] == "cancelled"
        assert probe.ended == ["work"]  # the tool was cancelled, not left running
        finished = (await ep.call("work", {"seconds": 1}))["taskId"]
        await ep.until(finished, "completed")
        await ep.cancel(finished)  # after its end: the same ack, and it stays completed
        assert (await ep.get(finished))["status"] == "completed"


async def test_a_question_of_a_task_has_the_task_deadline_and_warns_in_the_status_message(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, probe = build()
    config = {"task_form_deadline_s": 7200.0, "task_warn_before_s": 600.0}
    async with endpoint(server, **config) as ep:
        task_id = (await ep.call("approve", {"item": "q"}))["taskId"]
        key, _ = one_request(await ep.until(task_id, "input_required"))
        await trio.sleep(301)  # past the call policy's 300 s: a task's question lives on
        assert list((await ep.get(task_id))["inputRequests"]) == [key]
        assert "statusMessage" not in await ep.get(task_id)
        await trio.sleep(6600 - 301)
        warned = await ep.get(task_id)
        assert warned["status"] == "input_required"
        assert warned["statusMessage"] == "This request expires in 600 seconds."
        await trio.sleep(601)
        done = await ep.until(task_id, "completed")
        assert done["result"]["content"][0]["text"] == "q: TimedOut"
        assert "statusMessage" not in done
        assert isinstance(probe.outcomes[0], TimedOut)


async def test_a_task_past_its_ttl_is_cancelled_and_forgotten(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, probe = build()
    config = {
        "task_ttl_s": 900.0,
        "task_form_deadline_s": 600.0,
        "task_url_deadline_s": 600.0,
        "task_warn_before_s": 60.0,
    }
    async with endpoint(server, **config) as ep:
        created = await ep.call("late_question", {"after": 500})
        assert created["ttlMs"] == 900_000
        task_id = created["taskId"]
        ended = (await ep.call("work", {"seconds": 1}))["taskId"]
        await trio.sleep(501)
        one_request(await ep.get(task_id))  # asked at 500 s, its deadline would be 1100 s
        await trio.sleep(400)
        for gone in (task_id, ended):
            with pytest.raises(JsonRpcError) as caught:
                await ep.get(gone)
            assert caught.value.code == -32602
            assert await ep.runtime.store.get_task(gone, "alice") is None
        assert probe.ended == ["work", "late_question"]
        assert await ep.statuses() == ["cancelled"]
        assert probe.outcomes == []  # the tool was cancelled before it could see the outcome
        assert len(ep.tasks) == 0
        assert ep.tasks.snapshot()["expired"] == 2


async def test_progress_and_log_messages_of_a_task_are_dropped(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = build()
    async with endpoint(server) as ep:
        params = {"name": "chatty", "arguments": {}}
        created = await ep.request("tools/call", params)
        done = await ep.until(created["taskId"], "completed")
        assert done["result"]["content"][0]["text"] == "chatted"
        assert ep.tasks.snapshot()["notifications_dropped"] == 1  # the log (no progress token)


async def test_a_secret_asked_by_a_task_goes_to_the_hosted_page_in_url_mode(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = build()
    async with endpoint(server) as ep:
        ep.runtime.pages.base_url = "https://mcp.example.com"
        task_id = (await ep.call("secret"))["taskId"]
        _, request = one_request(await ep.until(task_id, "input_required"))
        params = request["params"]
        assert params["mode"] == "url"
        assert params["url"].startswith("https://mcp.example.com/elicit/")
        assert "requestedSchema" not in params  # never in form mode
        await ep.runtime.complete_elicitation(
            params["elicitationId"], {"token": "s3cr3t"}, tenant=Tenant(user="alice")
        )
        done = await ep.until(task_id, "completed")
        assert done["result"]["content"][0]["text"] == "Accepted"


async def test_a_tasks_questions_are_rate_limited_per_principal(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, probe = build()
    async with endpoint(server, rate=1, rate_window_s=3600) as ep:
        task_id = (await ep.call("twice"))["taskId"]
        key, _ = one_request(await ep.until(task_id, "input_required"))
        await ep.update(task_id, {key: accept({"confirm": True})})
        done = await ep.until(task_id, "completed")
        assert done["result"]["isError"] is True  # the second question was refused
        assert "rate" in done["result"]["content"][0]["text"].lower()
        assert len(probe.outcomes) == 1
        other = (await ep.call("approve", {"item": "b"}, who="bob"))["taskId"]
        await ep.until(other, "input_required", who="bob")  # bob has his own bucket


# -- a tool that starts its task itself -----------------------------------------------------------


async def test_a_tool_asks_in_the_calls_own_round_then_starts_its_task(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, probe = build()
    async with endpoint(server) as ep:
        first = await ep.call("ask_then_task")
        assert first["resultType"] == "input_required"
        assert "taskId" not in first
        ((key, _),) = first["inputRequests"].items()
        params = {
            "name": "ask_then_task",
            "arguments": {},
            "requestState": first["requestState"],
            "inputResponses": {key: accept({"name": "Alice"})},
        }
        created = await ep.request("tools/call", params)
        assert created["resultType"] == "task"
        assert "requestState" not in created
        assert "inputRequests" not in created
        task_id = created["taskId"]
        assert probe.started == [True]
        assert probe.task_ids == [task_id]
        asking = await ep.until(task_id, "input_required")
        key2, request = one_request(asking)
        assert request["params"]["message"] == "Go on?"
        await trio.sleep(400)  # past the call's deadline: this question is the task's
        await ep.update(task_id, {key2: accept({"confirm": True})})
        done = await ep.until(task_id, "completed")
        assert done["result"]["content"][0]["text"] == "Alice:Accepted"


async def test_start_task_for_a_client_without_the_extension_keeps_the_call(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, probe = build()
    async with endpoint(server) as ep:
        first = await ep.call("ask_then_task", caps=PLAIN_CAPS)
        ((key, _),) = first["inputRequests"].items()
        params = {
            "name": "ask_then_task",
            "arguments": {},
            "requestState": first["requestState"],
            "inputResponses": {key: accept({"name": "Bo"})},
        }
        second = await ep.request("tools/call", params, caps=PLAIN_CAPS)
        assert second["resultType"] == "input_required"  # the next question, still a call
        assert probe.started == [False]
        assert probe.task_ids == [None]
        assert len(ep.tasks) == 0


# -- isolation and bounds -------------------------------------------------------------------------


async def test_another_principals_task_answers_exactly_as_an_unknown_id(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = build()
    async with endpoint(server) as ep:
        task_id = (await ep.call("approve", {"item": "secret plan"}))["taskId"]
        key, _ = one_request(await ep.until(task_id, "input_required"))

        async def error_of(method: str, task: str, who: str) -> tuple[int, str, Any]:
            params: dict[str, Any] = {"taskId": task}
            if method == "tasks/update":
                params["inputResponses"] = {key: accept({"approved": True, "reviewer": "Eve"})}
            with pytest.raises(JsonRpcError) as caught:
                await ep.request(method, params, who=who)
            return caught.value.code, caught.value.message, caught.value.data

        for method in ("tasks/get", "tasks/update", "tasks/cancel"):
            foreign = await error_of(method, task_id, "mallory")
            unknown = await error_of(method, "x" * len(task_id), "mallory")
            assert foreign == unknown
            assert foreign[0] == -32602
        mine = await ep.get(task_id)  # untouched by mallory's attempts
        assert mine["status"] == "input_required"
        assert list(mine["inputRequests"]) == [key]
        ids = {(await ep.call("work", {"seconds": 1}))["taskId"] for _ in range(20)}
        assert len(ids) == 20


async def test_tasks_are_bounded_per_principal_forgetting_the_oldest_ended_first(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = build()
    async with endpoint(server, max_tasks_per_client=2) as ep:
        done = (await ep.call("work", {"seconds": 1}))["taskId"]
        await ep.until(done, "completed")
        running = (await ep.call("work", {"seconds": 3600}))["taskId"]
        newest = (await ep.call("work", {"seconds": 3600}))["taskId"]  # forgets `done`
        with pytest.raises(JsonRpcError) as caught:
            await ep.get(done)
        assert caught.value.code == -32602
        with pytest.raises(JsonRpcError) as caught:
            await ep.call("work", {"seconds": 1})  # two running: refused
        assert caught.value.code == -32603
        assert caught.value.data == {"reason": "tasks_principal_busy"}
        other = await ep.call("work", {"seconds": 1}, who="bob")  # bob has his own share
        assert other["resultType"] == "task"
        for kept in (running, newest):
            assert (await ep.get(kept))["status"] == "working"
        assert ep.tasks.snapshot()["shed"] == 1
        for _ in range(30):  # ended tasks cycling through bob's share: none is kept past it
            quick = (await ep.call("work", {"seconds": 0}, who="bob"))["taskId"]
            await ep.until(quick, "completed", who="bob")
        assert ep.tasks.snapshot()["held"] == 4
        assert len(ep.tasks._expiry) == 4  # the TTL timer holds only what is held
