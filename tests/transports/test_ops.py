"""The operations endpoints, scraped over HTTP from a real server on 127.0.0.1."""

from __future__ import annotations

import httpx2
import trio
import trio.testing
from prometheus_client.parser import text_string_to_metric_families

from erlmcp_py.transports._limits import PrincipalLimits
from erlmcp_py.transports._ops import tree_up
from erlmcp_py.transports.http import HttpConfig, Listening
from tests.transports.test_http import (
    INIT,
    TIMEOUT,
    McpHttp,
    Probe,
    call,
    client,
    message,
    serving,
)


def ops_url(listening: Listening, path: str) -> str:
    return listening.url.rsplit("/", 1)[0] + path


async def scrape(http: httpx2.AsyncClient, listening: Listening) -> dict[str, float]:
    """``{"name{label=value,...}": value}`` of every sample of ``/metrics``."""
    response = await http.get(ops_url(listening, "/metrics"))
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=")
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(response.text):
        assert family.name.startswith("erlmcp_"), family.name
        for sample in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
            out[f"{sample.name}{{{labels}}}"] = sample.value
    return out


async def test_healthz_and_readyz_answer_and_readyz_fails_while_draining() -> None:
    async with serving() as listening, httpx2.AsyncClient(timeout=TIMEOUT) as http:
        health = await http.get(ops_url(listening, "/healthz"))
        assert (health.status_code, health.text) == (200, "ok\n")
        ready = await http.get(ops_url(listening, "/readyz"))
        assert (ready.status_code, ready.text) == (200, "ready\n")
        assert (await http.post(ops_url(listening, "/readyz"))).status_code == 405
        evil = await http.get(ops_url(listening, "/healthz"), headers={"host": "evil.example"})
        assert evil.status_code == 403
        listening.transport.drain()
        drained = await http.get(ops_url(listening, "/readyz"))
        assert (drained.status_code, drained.text) == (503, "draining\n")
        assert (await http.get(ops_url(listening, "/healthz"))).status_code == 200


def test_the_tree_is_up_only_while_every_child_runs() -> None:
    class Counts:
        def __init__(self, specs: int, active: int) -> None:
            self.specs, self.active = specs, active

    class Supervisor:
        def __init__(self, counts: Counts) -> None:
            self.counts = counts

        def count_children(self) -> Counts:
            return self.counts

    class Runtime:
        def __init__(self, counts: Counts) -> None:
            self.supervisor = Supervisor(counts)

    assert tree_up(Runtime(Counts(3, 3)))
    assert not tree_up(Runtime(Counts(3, 2)))
    assert not tree_up(Runtime(Counts(0, 0)))


async def test_metrics_count_elicitations_sessions_and_refusals() -> None:
    probe = Probe()
    config = HttpConfig(limits=PrincipalLimits(sessions=2))
    async with (
        serving(probe, config=config) as listening,
        client(listening) as c,
        httpx2.AsyncClient(timeout=TIMEOUT) as http,
    ):
        with trio.fail_after(TIMEOUT):
            await c.initialize()
            before = await scrape(http, listening)
            assert before["erlmcp_sessions{}"] == 1
            assert before["erlmcp_elicitations_pending{}"] == 0
            assert before["erlmcp_suspended_calls{}"] == 0
            assert before["erlmcp_draining{}"] == 0
            async with c.stream(call(1)) as events:
                request = await events.next()
                assert request is not None
                pending = await scrape(http, listening)
                assert pending["erlmcp_elicitations_pending{}"] == 1
                assert pending["erlmcp_elicitations_created_total{mode=form}"] == 1
                # a second session of this address, left idle, makes room for a third
                await McpHttp(http, listening.url).initialize()
                third = McpHttp(http, listening.url)
                await third.initialize()
                async with third.stream(call(2)) as more:
                    asked = await more.next()
                    assert asked is not None
                    # both sessions wait for an answer: a fourth is refused
                    fourth = await McpHttp(http, listening.url).post(
                        message("initialize", INIT, id=0)
                    )
                    assert fourth.status_code == 429
                    await third.answer(asked, {"action": "decline"})
                    await more.rest()
                await c.answer(request, {"action": "decline"})
                await events.rest()
            runtime = listening.transport.runtime
            runtime.actor("validator").cast("boom")  # no handle_cast: the actor crashes
            await trio.testing.wait_all_tasks_blocked(0.01)
            after = await scrape(http, listening)
        assert after["erlmcp_elicitations_pending{}"] == 0
        assert after["erlmcp_elicitations_ended_total{mode=form,outcome=Declined}"] == 2
        assert after["erlmcp_human_answer_seconds_count{}"] == 2
        assert after["erlmcp_human_answer_seconds_bucket{le=+Inf}"] == 2
        assert after["erlmcp_sessions{}"] == 2
        assert after["erlmcp_refusals_total{reason=principal_sessions}"] == 1
        assert after["erlmcp_evictions_total{reason=principal_sessions}"] == 1
        # rest_for_one: the validator and the elicitation actor started after it
        assert after["erlmcp_actor_restarts_total{actor=validator}"] == 1
        assert after["erlmcp_actor_restarts_total{actor=elicitation}"] == 1


async def test_the_operations_endpoints_can_have_a_port_of_their_own() -> None:
    config = HttpConfig(ops_port=0)
    async with serving(config=config) as listening, httpx2.AsyncClient(timeout=TIMEOUT) as http:
        assert listening.ops_url is not None
        assert listening.ops_url != listening.url.rsplit("/", 1)[0]
        assert (await http.get(listening.ops_url + "/metrics")).status_code == 200
        assert (await http.get(listening.ops_url + "/readyz")).status_code == 200
        assert (await http.get(listening.ops_url + "/mcp")).status_code == 404
        assert (await http.get(ops_url(listening, "/metrics"))).status_code == 404
