"""The HAProxy backend that docs/scaling.md shows is the shipped one (the one the cluster
tests run), setting for setting."""

from __future__ import annotations

import re

from tests.cluster.harness import SHIPPED_HAPROXY
from tests.deploy.support import REPO


def settings(lines: list[str]) -> list[str]:
    return [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]


def test_the_documented_backend_is_the_shipped_backend() -> None:
    doc = (REPO / "docs" / "scaling.md").read_text()
    [block] = [
        b for b in re.findall(r"```haproxy\n(.*?)```", doc, re.S) if "backend erlmcp-py" in b
    ]
    shipped = SHIPPED_HAPROXY.read_text().split("\nbackend erlmcp-py\n", 1)[1]
    assert settings(block.splitlines()) == ["backend erlmcp-py", *settings(shipped.splitlines())]
