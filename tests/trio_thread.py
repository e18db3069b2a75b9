"""Run one trio loop in a thread so a hypothesis RuleBasedStateMachine can drive it rule by rule.

The loop's clock is a ``MockClock(rate=0)``: time moves only when a rule calls :meth:`jump`.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from typing import Any

import trio
import trio.testing


class TrioThread:
    def __init__(self) -> None:
        self.clock = trio.testing.MockClock(rate=0)
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._thread_main, daemon=True)
        self._thread.start()
        self._ready.wait()

    def _thread_main(self) -> None:
        try:
            trio.run(self._main, clock=self.clock)
        except BaseException as exc:  # surfaced by close()
            self._error = exc
            self._ready.set()

    async def _main(self) -> None:
        self.token = trio.lowlevel.current_trio_token()
        self._stop = trio.Event()
        async with trio.open_nursery() as nursery:
            self.nursery = nursery
            self._ready.set()
            await self._stop.wait()
            nursery.cancel_scope.cancel()

    def run(self, afn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        """Run ``afn(*args)`` inside the loop and return its result."""
        return trio.from_thread.run(afn, *args, trio_token=self.token)

    def jump(self, seconds: float) -> None:
        trio.from_thread.run_sync(self.clock.jump, seconds, trio_token=self.token)

    def close(self) -> None:
        if self._error is None:
            trio.from_thread.run_sync(self._stop.set, trio_token=self.token)
        self._thread.join(timeout=10)
        if self._error is not None:
            raise self._error
