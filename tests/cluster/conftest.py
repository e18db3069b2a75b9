"""Fixtures of the cluster tests: one cluster per test module, healed before each test, and
every process's log attached to a failing test's report."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.cluster.harness import SERVE, Cluster, open_cluster


@pytest.fixture(scope="module")
def running_cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    """Redis, three replicas and HAProxy for the module; the replicas get the module's
    ``REPLICA_ARGS`` (a sequence of ``serve`` options) when it defines them, and run its
    ``REPLICA_COMMAND`` (default: ``serve`` with the cluster's server) followed by its
    ``REPLICA_TAIL`` (a gateway's ``-- UPSTREAM_CMD``); behind the shipped TCP-mode HAProxy
    sending the PROXY protocol when it sets ``PROXY_PROTOCOL = True``."""
    extra = getattr(request.module, "REPLICA_ARGS", ())
    command = getattr(request.module, "REPLICA_COMMAND", SERVE)
    tail = getattr(request.module, "REPLICA_TAIL", ())
    proxied = getattr(request.module, "PROXY_PROTOCOL", False)
    tmp = tmp_path_factory.mktemp("cluster")
    with open_cluster(tmp, extra, command, tail, proxy_protocol=proxied) as cluster:
        yield cluster


@pytest.fixture
def cluster(running_cluster: Cluster) -> Cluster:
    """The module's cluster with every replica running and in rotation."""
    running_cluster.heal()
    return running_cluster


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    funcargs = getattr(item, "funcargs", {})
    cluster = funcargs.get("cluster") or funcargs.get("running_cluster")
    if report.failed and isinstance(cluster, Cluster):
        for name, text in cluster.logs().items():
            report.sections.append((f"cluster log: {name}", text[-20_000:]))
