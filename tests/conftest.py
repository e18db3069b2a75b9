"""Shared test fixtures: a ``--long`` switch for chaos runs and a task counter for leak checks."""

from __future__ import annotations

import pytest
import trio


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--long", action="store_true", default=False, help="run long chaos/soak variants"
    )


@pytest.fixture
def long_run(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--long"))


def count_tasks() -> int:
    """Every task alive in the current trio run (system tasks included)."""
    root = trio.lowlevel.current_root_task()
    assert root is not None
    total = 0
    stack = [root]
    while stack:
        task = stack.pop()
        total += 1
        for nursery in task.child_nurseries:
            stack.extend(nursery.child_tasks)
    return total
