"""Tasks on the cluster: three ``erlmcp-py serve --transport http --store redis://…`` replicas
behind HAProxy (round-robin, no stickiness), driven with raw 2026-07-28 requests. A task's
replica is SIGKILLed between two ``tasks/update`` rounds (the first answer in, the second
question outstanding): another replica takes the task over, runs the tool again with the
journal's answers and completes it; the question answered before is never asked again, and
the side effect after the last answer runs once. The same holds when the first question is
answered on its link (the hosted page, through HAProxy): after the kill the question asked
again has a new link, which answers it, and the dead replica's link is closed (410). A task
that asked in URL mode cannot be run again: when its replica is killed it ends ``failed``
with a named reason.

The replicas' heartbeats are the defaults (1 s, a replica is dead after 5 s of silence): a
takeover takes some seconds of real time, every wait is bounded.
"""

from __future__ import annotations

from typing import Any

import httpx2
import trio

from erlmcp_py.actors.pages import PAGE_URL_META
from tests.cluster.harness import Cluster, until
from tests.transports.test_http_tasks import Client
from tests.transports.test_page import CSRF

LIMIT = 60.0  # seconds: bound of one test (a takeover included)
#: Every request of this module comes from 127.0.0.1: the per-client rate is raised so that
#: the module's questions measure durability, not rate.
REPLICA_ARGS = ("--rate", "600")
CAPS: dict[str, Any] = {
    "elicitation": {"form": {}, "url": {}},
    "extensions": {"io.modelcontextprotocol/tasks": {}},
}
WHO = {"action": "accept", "content": {"name": "Ada", "age": 36}}
SURE = {"action": "accept", "content": {"confirm": True}}


class Polling:
    """A client that polls a task through HAProxy, keeping every input request it was shown
    (key and message, in the order first seen), and retries what a moving task refuses."""

    def __init__(self, client: Client, task_id: str) -> None:
        self.client = client
        self.task_id = task_id
        self.shown: list[tuple[str, str]] = []

    async def get(self) -> dict[str, Any]:
        response = await self.retrying("tasks/get", {"taskId": self.task_id})
        task: dict[str, Any] = response.json()["result"]
        for key, request in task.get("inputRequests", {}).items():
            shown = (key, request["params"]["message"])
            if shown not in self.shown:
                self.shown.append(shown)
        return task

    async def until(self, done: Any) -> dict[str, Any]:
        """Poll until ``done(task)``."""
        while True:
            task = await self.get()
            if done(task):
                return task
            await trio.sleep(0.05)

    async def update(self, responses: dict[str, Any]) -> None:
        """``tasks/update`` until it is acknowledged."""
        params = {"taskId": self.task_id, "inputResponses": responses}
        response = await self.retrying("tasks/update", params)
        assert response.json()["result"]["resultType"] == "complete", response.text

    async def retrying(self, method: str, params: dict[str, Any]) -> httpx2.Response:
        """``method`` until it is answered 200. A 503 is retried after its ``Retry-After``
        (at most half a second): a replica's ``task_moving`` (no replica holds the task for
        now) or HAProxy's own (every replica it tried was gone: it has not seen the kill)."""
        while True:
            response = await self.client.post(method, params, caps=CAPS)
            if response.status_code == 200:
                return response
            assert response.status_code == 503, response.text
            if response.headers.get("content-type", "").startswith("application/json"):
                assert response.json()["error"]["data"]["reason"] == "task_moving", response.text
            await trio.sleep(min(float(response.headers.get("retry-after", 0.5)), 0.5))


def asking(*keys: str) -> Any:
    return lambda task: set(task.get("inputRequests", {})) == set(keys)


def status(wanted: str) -> Any:
    return lambda task: task["status"] == wanted


def holder_of(cluster: Cluster, tag: str) -> str:
    """The replica whose log shows the first run of the tool called with ``tag``."""
    [name] = [n for n, replica in cluster.replicas.items() if replica.events(tag=tag)]
    return name


async def create(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    created = await client.result("tools/call", {"name": tool, "arguments": arguments}, caps=CAPS)
    assert created["resultType"] == "task", created
    task_id: str = created["taskId"]
    return task_id


async def test_a_task_whose_replica_is_killed_between_updates_completes_on_another(
    cluster: Cluster,
) -> None:
    tag = "killed-between-updates"
    with trio.fail_after(LIMIT):
        async with httpx2.AsyncClient(timeout=10) as http:
            client = Client(http, cluster.url)
            task_id = await create(client, "approve", {"tag": tag, "item": "INV-7"})
            polling = Polling(client, task_id)
            await polling.until(asking("who"))
            holder = holder_of(cluster, tag)
            await polling.update({"who": WHO})  # to the holder, or forwarded to it
            before = await polling.until(asking("elicitation"))
            dying = cluster.replicas[holder]
            await until(lambda: bool(dying.events(tag=tag, question="who")), "the first answer")
            cluster.kill(holder)  # SIGKILL: no goodbye to the store
            # the answer to the question left open, sent while the task moves
            await polling.update({"elicitation": SURE})
            done = await polling.until(status("completed"))
    assert done["result"]["content"][0]["text"] == "INV-7: Ada approved=True"
    assert done["createdAt"] == before["createdAt"]
    # the client was shown each question once, under one key: the answered one never again
    assert polling.shown == [
        ("who", "Who approves INV-7?"),
        ("elicitation", "Ada, do you approve INV-7?"),
    ]
    [taker] = [
        name
        for name, replica in cluster.replicas.items()
        if name != holder and replica.events(tag=tag, event="tool_run")
    ]
    survivor = cluster.replicas[taker]
    assert survivor.events(event="tasks_store", durable=True)  # what its startup said
    assert survivor.events(event="task_resumed", task=task_id[:8], answers=1)
    # the killed replica ran the tool once and took the first answer; the taker ran it once
    # more (a replay runs the code before each question again) and took both answers there
    assert len(dying.events(tag=tag, event="tool_run")) == 1
    assert len(survivor.events(tag=tag, event="tool_run")) == 1
    assert [e["question"] for e in survivor.events(tag=tag, event="answer_received")] == [
        "who",
        "confirm",
    ]
    # the side effect after the last answer ran once, over the whole cluster
    recorded = [e for r in cluster.replicas.values() for e in r.events(tag=tag)]
    assert [e["approved"] for e in recorded if e["event"] == "approval_recorded"] == [True]


def link_of(task: dict[str, Any], key: str) -> str:
    url: str = task["inputRequests"][key]["params"]["_meta"][PAGE_URL_META]
    return url


def linked(key: str, other_than: str) -> Any:
    """The task asks ``key`` alone, with a link other than ``other_than``."""

    def ok(task: dict[str, Any]) -> bool:
        requests = task.get("inputRequests", {})
        meta = requests.get(key, {}).get("params", {}).get("_meta", {})
        return set(requests) == {key} and meta.get(PAGE_URL_META, other_than) != other_than

    return ok


async def answer_on_page(http: httpx2.AsyncClient, url: str, **fields: str) -> httpx2.Response:
    """Open a question's link (through HAProxy: any replica) and send its form."""
    page = await http.get(url)
    assert page.status_code == 200, page.text
    (csrf,) = CSRF.findall(page.text)
    return await http.post(url, data={"_csrf": csrf, "_action": "accept", **fields})


async def test_a_question_answered_on_its_link_is_not_asked_again_after_its_replica_is_killed(
    cluster: Cluster,
) -> None:
    tag = "link-then-killed"
    with trio.fail_after(LIMIT):
        async with httpx2.AsyncClient(timeout=10) as http:
            client = Client(http, cluster.url)
            task_id = await create(client, "approve", {"tag": tag, "item": "INV-8"})
            polling = Polling(client, task_id)
            asked = await polling.until(asking("who"))
            holder = holder_of(cluster, tag)
            # the approver answers on the link, served by whichever replica HAProxy picks
            done = await answer_on_page(http, link_of(asked, "who"), name="Ada", age="36")
            assert done.status_code == 200, done.text
            before = await polling.until(asking("elicitation"))
            old_link = link_of(before, "elicitation")
            dying = cluster.replicas[holder]
            await until(lambda: bool(dying.events(tag=tag, question="who")), "the link's answer")
            cluster.kill(holder)
            # taken over: the open question asked again, with a link of the new holder's
            after = await polling.until(linked("elicitation", old_link))
            new_link = link_of(after, "elicitation")
            assert (await http.get(old_link)).status_code == 410  # the dead replica's: closed
            done = await answer_on_page(http, new_link, confirm="true")
            assert done.status_code == 200, done.text
            ended = await polling.until(status("completed"))
    assert ended["result"]["content"][0]["text"] == "INV-8: Ada approved=True"
    # the question answered on its link was never asked again
    assert polling.shown == [
        ("who", "Who approves INV-8?"),
        ("elicitation", "Ada, do you approve INV-8?"),
    ]
    [taker] = [
        name
        for name, replica in cluster.replicas.items()
        if name != holder and replica.events(tag=tag, event="tool_run")
    ]
    survivor = cluster.replicas[taker]
    assert survivor.events(event="task_resumed", task=task_id[:8], answers=1)
    assert [e["question"] for e in survivor.events(tag=tag, event="answer_received")] == [
        "who",
        "confirm",
    ]
    recorded = [e for r in cluster.replicas.values() for e in r.events(tag=tag)]
    assert [e["approved"] for e in recorded if e["event"] == "approval_recorded"] == [True]


async def test_a_task_that_asked_in_url_mode_ends_failed_when_its_replica_is_killed(
    cluster: Cluster,
) -> None:
    tag = "url-killed"
    with trio.fail_after(LIMIT):
        async with httpx2.AsyncClient(timeout=10) as http:
            client = Client(http, cluster.url)
            task_id = await create(client, "sign_in_task", {"tag": tag})
            polling = Polling(client, task_id)
            asked = await polling.until(status("input_required"))
            [request] = asked["inputRequests"].values()
            assert request["params"]["mode"] == "url"
            holder = holder_of(cluster, tag)
            cluster.kill(holder)
            failed = await polling.until(status("failed"))
    assert failed["error"]["code"] == -32603
    assert failed["error"]["data"] == {"reason": "task_not_resumable", "cause": "url_elicitation"}
    assert "URL mode" in failed["statusMessage"]
    # no replica ran the tool again
    runs = [r.name for r in cluster.replicas.values() if r.events(tag=tag, event="tool_run")]
    assert runs == [holder]
