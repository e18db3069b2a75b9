"""RateLimiterActor: a thin shell owning one pure ``core.ratelimit.RateLimiter``.

It reads trio's clock (the core never does), answers the calls ``Acquire`` and
``ResetPending`` and takes the casts ``Release`` and ``ReleaseMany``. Its state is soft: when
it restarts, the elicitation actor restarts after it (rest_for_one) and every pending
elicitation has already ended, so starting from empty buckets loses nothing that matters.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any

import trio

from erlmcp_py.core.policy import RatePolicy
from erlmcp_py.core.ratelimit import RateLimiter
from supervisors import Actor, ActorRef, ReplyTo

__all__ = ["Acquire", "RateLimiterActor", "Release", "ReleaseMany", "ResetPending"]


@dataclass(frozen=True, slots=True)
class Acquire:
    """Admit one elicitation of ``client``; ``charge=False``: no token (already counted)."""

    client: Hashable
    charge: bool = True


@dataclass(frozen=True, slots=True)
class Release:
    """Release one pending slot of ``client`` (a cast)."""

    client: Hashable


@dataclass(frozen=True, slots=True)
class ReleaseMany:
    """Release ``count`` pending slots per client in one cast (batched by the caller)."""

    counts: Mapping[Any, int]


@dataclass(frozen=True, slots=True)
class ResetPending:
    """Forget every pending count (the elicitation actor restarted: they all ended)."""


class RateLimiterActor(Actor):
    name = "ratelimiter"
    mailbox_size = 8192

    def __init__(self, policy: RatePolicy, registry: dict[str, ActorRef]) -> None:
        self._policy = policy
        self._registry = registry

    async def init(self) -> None:
        self.now: Callable[[], float] = trio.lowlevel.current_clock().current_time
        self.limiter = RateLimiter(self._policy)
        self._registry["ratelimiter"] = self.ref

    async def handle_call(self, msg: Any, reply_to: ReplyTo) -> Any:
        if type(msg) is Acquire:
            return self.limiter.try_acquire(msg.client, self.now(), charge=msg.charge)
        if type(msg) is ResetPending:
            self.limiter = RateLimiter(self._policy)
            return None
        if msg == "stats":
            return self.limiter.stats()
        raise TypeError(f"unknown rate limiter call {type(msg).__name__}")

    async def handle_cast(self, msg: Any) -> None:
        if type(msg) is Release:
            self.limiter.release(msg.client)
        elif type(msg) is ReleaseMany:
            for client, count in msg.counts.items():
                for _ in range(count):
                    self.limiter.release(client)
        else:
            await super().handle_cast(msg)  # raises: an unknown cast crashes the actor
