"""Operations endpoints of the HTTP transport: liveness, readiness and Prometheus metrics.

``/healthz`` answers 200 while the process serves HTTP at all. ``/readyz`` answers 200 when
the elicitation runtime's supervision tree has every child running and the transport is not
draining, else 503 (a load balancer then sends new clients elsewhere). ``/metrics`` is the
Prometheus text exposition, built at scrape time from the runtime's counters
(:meth:`Runtime.metrics`) and the transport's own gauges, refusal and eviction counters,
every name prefixed ``erlmcp_``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from erlmcp_py.actors.runtime import Runtime

__all__ = ["OPS_PATHS", "OpsAnswer", "OpsSource", "answer_ops"]

#: The operations paths, answered on GET beside the MCP endpoint.
OPS_PATHS: Final = frozenset({"/healthz", "/readyz", "/metrics"})


class OpsSource(Protocol):
    """What the operations endpoints read (the HTTP transport)."""

    @property
    def runtime(self) -> Runtime: ...

    @property
    def draining(self) -> bool: ...

    @property
    def session_count(self) -> int: ...

    @property
    def suspended_calls(self) -> int: ...

    @property
    def tasks(self) -> Mapping[str, int]: ...

    @property
    def refusals(self) -> Mapping[str, int]: ...

    @property
    def evictions(self) -> Mapping[str, int]: ...


@dataclass(frozen=True, slots=True)
class OpsAnswer:
    """An operations response."""

    status: int
    body: bytes
    content_type: str


def tree_up(runtime: Runtime) -> bool:
    """Whether every child of the runtime's supervision tree is running."""
    try:
        counts = runtime.supervisor.count_children()
    except Exception:  # a tree being torn down
        return False
    return bool(counts.specs) and counts.active == counts.specs


def answer_ops(source: OpsSource, path: str, registry: CollectorRegistry) -> OpsAnswer:
    """The answer of one operations path (one of :data:`OPS_PATHS`)."""
    if path == "/healthz":
        return OpsAnswer(200, b"ok\n", "text/plain; charset=utf-8")
    if path == "/readyz":
        if source.draining:
            return OpsAnswer(503, b"draining\n", "text/plain; charset=utf-8")
        if not tree_up(source.runtime):
            return OpsAnswer(503, b"runtime not running\n", "text/plain; charset=utf-8")
        return OpsAnswer(200, b"ready\n", "text/plain; charset=utf-8")
    return OpsAnswer(200, generate_latest(registry), CONTENT_TYPE_LATEST)


def metrics_registry(source: OpsSource) -> CollectorRegistry:
    """A registry of its own (never the process-global one) reading ``source`` at scrape."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(source))
    return registry


class _Collector:
    def __init__(self, source: OpsSource) -> None:
        self._source = source

    def collect(self) -> Iterator[Metric]:
        source = self._source
        snapshot: dict[str, Any] = source.runtime.metrics()
        created = CounterMetricFamily(
            "erlmcp_elicitations_created", "Elicitations created, by mode.", labels=["mode"]
        )
        for mode, n in sorted(snapshot.get("created", {}).items()):
            created.add_metric([mode], n)
        yield created
        ended = CounterMetricFamily(
            "erlmcp_elicitations_ended",
            "Elicitations ended, by outcome and mode.",
            labels=["outcome", "mode"],
        )
        for outcome, modes in sorted(snapshot.get("outcomes", {}).items()):
            for mode, n in sorted(modes.items()):
                ended.add_metric([outcome, mode], n)
        yield ended
        yield GaugeMetricFamily(
            "erlmcp_elicitations_pending",
            "Elicitations waiting for their outcome.",
            value=snapshot.get("pending", 0),
        )
        yield _latency(snapshot.get("human_latency_s"))
        yield GaugeMetricFamily(
            "erlmcp_sessions", "Open Streamable HTTP sessions.", value=source.session_count
        )
        yield GaugeMetricFamily(
            "erlmcp_suspended_calls",
            "2026-07-28 tool calls suspended, waiting for the client's retry.",
            value=source.suspended_calls,
        )
        tasks = source.tasks
        held = GaugeMetricFamily(
            "erlmcp_tasks",
            "2026-07-28 tasks held (io.modelcontextprotocol/tasks): running, or ended and kept.",
            labels=["state"],
        )
        held.add_metric(["running"], tasks.get("running", 0))
        held.add_metric(["ended"], tasks.get("held", 0) - tasks.get("running", 0))
        yield held
        ended_tasks = CounterMetricFamily(
            "erlmcp_tasks_ended",
            "Tasks ended, by status; expired: forgotten past their TTL.",
            labels=["status"],
        )
        for status in ("completed", "failed", "cancelled", "expired"):
            ended_tasks.add_metric([status], tasks.get(status, 0))
        yield ended_tasks
        refusals = CounterMetricFamily(
            "erlmcp_refusals", "Requests and elicitations refused, by reason.", labels=["reason"]
        )
        reasons: dict[str, int] = dict(source.refusals)
        for limit, n in snapshot.get("refused", {}).items():
            key = f"elicitation_{limit}"
            reasons[key] = reasons.get(key, 0) + n
        for reason, n in sorted(reasons.items()):
            refusals.add_metric([reason], n)
        yield refusals
        evictions = CounterMetricFamily(
            "erlmcp_evictions",
            "Idle sessions and suspended calls ended to admit a new one at a cap, by the cap "
            "reached (the reasons of erlmcp_refusals).",
            labels=["reason"],
        )
        for reason, n in sorted(source.evictions.items()):
            evictions.add_metric([reason], n)
        yield evictions
        restarts = CounterMetricFamily(
            "erlmcp_actor_restarts",
            "Restarts of the runtime's actors by their supervisor, by actor.",
            labels=["actor"],
        )
        for actor, n in sorted(source.runtime.supervisor.restarts.items()):
            restarts.add_metric([actor], n)
        yield restarts
        yield GaugeMetricFamily(
            "erlmcp_draining", "1 while the server drains before stopping.", value=source.draining
        )


def _latency(histogram: Mapping[str, Any] | None) -> HistogramMetricFamily:
    name = "erlmcp_human_answer_seconds"
    doc = (
        "Time from an elicitation reaching the client to the human's answer "
        "(answers replayed from a 2026-07-28 requestState excluded)."
    )
    if not histogram:
        return HistogramMetricFamily(name, doc, buckets=[("+Inf", 0)], sum_value=0.0)
    buckets: list[tuple[str, float]] = []
    total = 0
    for bound, n in zip(histogram["buckets"], histogram["counts"], strict=True):
        total += n
        buckets.append(("+Inf" if bound == "inf" else f"{float(bound):g}", total))
    return HistogramMetricFamily(name, doc, buckets=buckets, sum_value=histogram["sum"])
