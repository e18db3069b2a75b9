"""A real ``redis-server`` per test module (``tests/store/server.py``). Each test names its own
key prefix, so tests never see each other's state."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator

import pytest

from tests.components import require
from tests.store.server import RedisServer


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    executable = require("redis-server")
    with tempfile.TemporaryDirectory(prefix="erlmcp-redis-") as directory:
        server = RedisServer(executable, directory)
        server.start()
        try:
            yield server
        finally:
            server.stop()
