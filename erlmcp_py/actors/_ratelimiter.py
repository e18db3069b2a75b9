"""RateLimiterActor: a thin shell asking the store to admit and release.

It reads trio's clock (the core never does), answers the calls ``Acquire`` and
``ResetPending`` and takes the casts ``Release`` and ``ReleaseMany``, each by one call to the
store (``erlmcp_py.store``): the in-memory store runs the pure ``core.ratelimit.RateLimiter``,
the Redis/Valkey store runs the same bucket atomically for every replica. A store that
cannot answer refuses the admission with ``StoreUnavailable``.

The state lives in the store, not in the actor, so a restart of the actor keeps it; the
elicitation actor restarts after it (rest_for_one) and resets the pending counts, since every
pending elicitation of its previous incarnation has ended.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import trio

from erlmcp_py.core.errors import StoreUnavailable
from erlmcp_py.store import Store
from supervisors import Actor, ActorRef, ErrorReply, ReplyTo

__all__ = ["Acquire", "RateLimiterActor", "Release", "ReleaseMany", "ResetPending"]


@dataclass(frozen=True, slots=True)
class Acquire:
    """Admit one elicitation of ``client``; ``charge=False``: no token (already counted)."""

    client: str
    charge: bool = True


@dataclass(frozen=True, slots=True)
class Release:
    """Release one pending slot of ``client`` (a cast)."""

    client: str


@dataclass(frozen=True, slots=True)
class ReleaseMany:
    """Release ``count`` pending slots per client in one cast (batched by the caller)."""

    counts: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class ResetPending:
    """Forget every pending count (the elicitation actor restarted: they all ended)."""


class RateLimiterActor(Actor):
    name = "ratelimiter"
    mailbox_size = 8192

    def __init__(self, store: Store, registry: dict[str, ActorRef]) -> None:
        self.store = store
        self._registry = registry

    async def init(self) -> None:
        self.now: Callable[[], float] = trio.lowlevel.current_clock().current_time
        self._registry["ratelimiter"] = self.ref

    async def handle_call(self, msg: Any, reply_to: ReplyTo) -> Any:
        if type(msg) is Acquire:
            try:
                return await self.store.admit(msg.client, self.now(), charge=msg.charge)
            except StoreUnavailable as exc:
                return ErrorReply(exc)
        if type(msg) is ResetPending:
            await self.store.reset_pending()
            return None
        if msg == "stats":
            return self.store.rate_stats()
        raise TypeError(f"unknown rate limiter call {type(msg).__name__}")

    async def handle_cast(self, msg: Any) -> None:
        if type(msg) is Release:
            await self.store.release({msg.client: 1})
        elif type(msg) is ReleaseMany:
            await self.store.release(msg.counts)
        else:
            await super().handle_cast(msg)  # raises: an unknown cast crashes the actor
