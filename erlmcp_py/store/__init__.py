"""Shared state between replicas: the store the actors use for admission, records and
calls forwarded to the replica holding an elicitation.

``memory`` (the default) is embedded: one process, no server. ``redis://HOST:PORT/DB``
shares everything through a Redis or Valkey server (the ``redis`` extra installs its client,
valkey-glide). The actors use either through the one :class:`Store` interface; see
``docs/scaling.md``, "Shared store".
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from erlmcp_py.core.policy import Policy
from erlmcp_py.core.store_wire import StoreUrl, parse_store_url
from erlmcp_py.store._base import NoteSink, Store, StoreHost
from erlmcp_py.store._memory import MemoryStore
from erlmcp_py.store._notes import NOTES_QUEUED

__all__ = [
    "NOTES_QUEUED",
    "MemoryStore",
    "NoteSink",
    "Store",
    "StoreHost",
    "StoreUrl",
    "open_store",
    "parse_store_url",
]


@asynccontextmanager
async def open_store(
    url: str | StoreUrl,
    *,
    policy: Policy,
    host: StoreHost,
    call_timeout_s: float = 5.0,
) -> AsyncIterator[Store]:
    """Open the store ``url`` names for this replica, until the block exits.

    Args:
        url: ``"memory"`` or ``"redis://HOST:PORT/DB"`` (see
            :func:`~erlmcp_py.core.store_wire.parse_store_url`), or a parsed one.
        policy: The runtime's policy (rate buckets, caps, retention, deadlines).
        host: The runtime, which runs the calls other replicas forward here.
        call_timeout_s: The runtime's call timeout (bounds a forwarded call).

    Raises:
        ValueError: a bad URL.
        ImportError: a Redis store without its client (``pip install 'erlmcp-py[redis]'``).
    """
    parsed = url if isinstance(url, StoreUrl) else parse_store_url(url)
    if parsed.kind == "memory":
        yield MemoryStore(policy.rate, secrets.token_hex(6))
        return
    try:
        from erlmcp_py.store._redis import open_redis_store
    except ImportError as exc:  # pragma: no cover - the extra is installed with the tests
        raise ImportError(
            f"--store {parsed} needs valkey-glide: pip install 'erlmcp-py[redis]'"
        ) from exc
    async with open_redis_store(parsed, policy, host, call_timeout_s=call_timeout_s) as store:
        yield store
