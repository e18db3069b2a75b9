"""The registry's holding of calls (:class:`HeldCalls`, what a
:class:`~erlmcp_py.mcp._continuations.ContinuationRegistry` is built on): its settings, the
live calls within their bounds (a share per principal, the cap in all, a detached call evicted
at the cap), the results kept for a late retry, and the one timer that expires suspended calls
and ends the hold of retries (docs/mrtr.md: expiry, the registry's bounds and eviction).
"""

from __future__ import annotations

import heapq
import math
import secrets
from collections import Counter
from collections.abc import Callable
from typing import Any, Final

import structlog
import trio

from erlmcp_py.core.shares import Refuse, Shares, Shed
from erlmcp_py.core.state_token import MAX_TOKEN_CHARS, KeyRing
from erlmcp_py.mcp._call_record import Continuation
from erlmcp_py.mcp._mrtr_peer import MrtrPeer
from erlmcp_py.mcp.jsonrpc import internal_error
from erlmcp_py.mcp.versions import ClientCapabilities

__all__ = ["DEFAULT_STATE_TTL_S", "MRTR_MODES", "PRINCIPAL_BUSY", "HeldCalls"]

log = structlog.get_logger("erlmcp.mrtr")

#: ``data.reason`` of the refusal of a new call whose principal holds its share of the
#: registry (``max_per_principal``); the registry-wide ``busy`` is the last resort.
PRINCIPAL_BUSY = "principal_busy"

#: Default lifetime of a ``requestState`` (and of a detached continuation): the longest
#: default elicitation deadline (URL mode, 600 s) plus a minute for the retry to arrive.
DEFAULT_STATE_TTL_S: Final = 660.0

#: What a retry whose call this process does not hold gets: ``auto`` resumes a held call and
#: replays any other; ``suspend`` refuses it (``unknown_continuation``); ``replay`` never keeps
#: a call across rounds, so every retry replays.
MRTR_MODES: Final = ("auto", "suspend", "replay")


class HeldCalls:
    """The calls a :class:`~erlmcp_py.mcp._continuations.ContinuationRegistry` holds, and its
    settings (its arguments are documented there): admitting a call within its principal's
    share and the cap, evicting a detached call at the cap, forgetting a call, and expiring
    what falls due (:meth:`run_timer`)."""

    def __init__(
        self,
        nursery: trio.Nursery,
        *,
        keyring: KeyRing | None = None,
        state_ttl: float = DEFAULT_STATE_TTL_S,
        max_continuations: int = 10_000,
        max_per_principal: int | None = None,
        hold_s: float = 30.0,
        settle_checkpoints: int = 10,
        mrtr: str = "auto",
        max_state_chars: int = MAX_TOKEN_CHARS,
        on_call_end: Callable[[], None] | None = None,
    ) -> None:
        # A state must expire (an infinite ttl would only fail later, in seal, mid-call).
        if not (0 < state_ttl < math.inf) or not hold_s > 0 or max_continuations < 1:
            raise ValueError(
                "state_ttl must be positive and finite, hold_s positive, max_continuations >= 1"
            )
        if mrtr not in MRTR_MODES:
            raise ValueError(f"mrtr must be one of {', '.join(MRTR_MODES)}, got {mrtr!r}")
        if max_state_chars < 256:
            raise ValueError("max_state_chars must be at least 256")
        self.mrtr = mrtr
        self.max_state_chars = max_state_chars
        self._nursery = nursery
        self.keyring = keyring or KeyRing(f"proc-{secrets.token_hex(4)}", secrets.token_bytes(32))
        self.state_ttl = state_ttl
        self.max_continuations = max_continuations
        self.max_per_principal = max_per_principal or max_continuations
        self.hold_s = hold_s
        self.settle_checkpoints = settle_checkpoints
        # Live continuations by id, each principal's within its share, all within the cap.
        self._entries: Shares[str, Continuation] = Shares(
            max_per_principal or None, max_continuations, shed_own=False
        )
        self._finals: list[tuple[float, str]] = []  # heap of (expiry, id) of parked results
        # What the one timer of the registry ends when due (see run_timer): the suspended
        # calls by id, in the order of their expiry (``state_ttl`` after their round ended),
        # and the attached retries by id with the end of their hold (``hold_s`` after they
        # attached), in that order. No call has a deadline of its own.
        self._suspended: dict[str, Continuation] = {}
        self._holding: dict[str, tuple[float, Continuation]] = {}
        self._closed = False
        self._on_call_end = on_call_end
        self.counters: Counter[str] = Counter()
        self.holder: str | None = None

    def __len__(self) -> int:
        """Live continuations (suspended, running, or holding a result for a late retry)."""
        self._evict(trio.current_time())
        return len(self._entries)

    def snapshot(self) -> dict[str, Any]:
        """Gauges and counters: ``live``, ``unfinished`` (tools still running or suspended),
        ``suspended``, and ``started``, ``rounds``, ``completed``, ``expired``,
        ``evicted``, ``refused.<reason>``…"""
        self._evict(trio.current_time())
        unfinished = [c for c in self._entries.values() if not c.done]
        suspended = sum(1 for c in unfinished if not c.attached)
        return {
            "live": len(self._entries),
            "unfinished": len(unfinished),
            "suspended": suspended,
            **self.counters,
        }

    def close(self) -> None:
        """Refuse new calls and end every continuation (their tools are cancelled)."""
        self._closed = True
        for cont in list(self._entries.values()):
            cont.life.cancel()
        self._nursery.cancel_scope.cancel()

    def _open(
        self,
        principal: str,
        digest: str,
        capabilities: ClientCapabilities,
        protocol_version: str,
        client_id: str,
    ) -> Continuation:
        """A new registered continuation, for which a detached call may be evicted at the
        registry's cap; ``busy`` when the registry is closed, or full of attached calls;
        :data:`PRINCIPAL_BUSY` when ``principal`` holds its share."""
        admission = self._entries.admit(principal, _detached)
        if self._closed or (isinstance(admission, Refuse) and admission.scope == "total"):
            self.counters["refused.busy"] += 1
            raise internal_error(
                "Too many suspended tool calls on this server; retry later", {"reason": "busy"}
            )
        if isinstance(admission, Refuse):
            self.counters[f"refused.{PRINCIPAL_BUSY}"] += 1
            raise internal_error(
                "Too many suspended tool calls for this client; retry later",
                {"reason": PRINCIPAL_BUSY},
            )
        if isinstance(admission, Shed):
            self._shed(admission)
        cont = Continuation(principal, digest, capabilities)
        cont.peer = MrtrPeer(
            cont, client_id, protocol_version, self.counters, keeps_call=self.mrtr != "replay"
        )
        self._entries.add(principal, cont.id, cont)
        return cont

    def _shed(self, shed: Shed[str, Continuation]) -> None:
        """Evict a detached call to make room at the registry's cap: its tool is cancelled (its
        elicitations end ``abandoned`` through the owner watch) and its entry removed, so its
        retry replays it, or is refused ``unknown_continuation`` (``mrtr="suspend"``)."""
        cont = shed.value
        self.counters["evicted"] += 1
        log.info(
            "continuation_evicted",
            continuation=cont.id[:8],
            round=cont.round,
            finished=cont.done,
            held=self._entries.held(shed.principal),
            why="max_continuations",
        )
        self._discard(cont)

    def _discard(self, cont: Continuation) -> None:
        """End a call this process will not keep: its tool is cancelled, its entry gone."""
        cont.discarded = True
        cont.life.cancel()
        self._forget(cont.id)

    async def run_timer(self) -> None:
        """Run the registry's timer until it is cancelled (the registry closes).

        It ends what is due: a suspended call whose state expired (its tool is cancelled), a
        retry that waited ``hold_s`` (it answers with the state). Both are kept in the order
        they fall due (``state_ttl`` and ``hold_s`` are constant), so only the first of each
        is looked at; sleeping at most the shorter of the two at a time, the timer never
        sleeps past anything added while it slept.
        :func:`~erlmcp_py.mcp._continuations.open_continuations` runs it.
        """
        suspended, holding = self._suspended, self._holding
        longest = min(self.state_ttl, self.hold_s)
        while True:
            now = trio.current_time()
            wake = now + longest
            while suspended:
                cont = next(iter(suspended.values()))
                if cont.expires_at > now:
                    wake = min(wake, cont.expires_at)
                    break
                del suspended[cont.id]
                cont.life.cancel()
            while holding:
                cid, (due, cont) = next(iter(holding.items()))
                if due > now:
                    wake = min(wake, due)
                    break
                del holding[cid]
                cont.held = True
                cont.touch()
            await trio.sleep_until(wake)

    def _evict(self, now: float) -> None:
        finals = self._finals
        while finals and finals[0][0] <= now:
            _, cid = heapq.heappop(finals)
            cont = self._entries.get(cid)
            if cont is not None and cont.done and not cont.attached:
                self._forget(cid)
                self.counters["expired"] += 1

    def _forget(self, cid: str) -> None:
        self._suspended.pop(cid, None)
        self._entries.remove(cid)


def _detached(cont: Continuation) -> bool:
    """Whether a call may be evicted: no request is attached to it (it is suspended between
    rounds, or finished and kept for a late retry)."""
    return not cont.attached
