"""Runtime counters: outcomes per mode, a pending gauge, a human-latency histogram.

Owned by the runtime (not by an actor), so the numbers survive actor restarts.
"""

from __future__ import annotations

import bisect
from collections import Counter
from typing import Any

__all__ = ["LATENCY_BUCKETS_S", "Metrics"]

LATENCY_BUCKETS_S: tuple[float, ...] = (1, 5, 10, 30, 60, 120, 300, 600, 1200)
"""Upper bounds (seconds) of the human-latency histogram; one overflow bucket follows."""


class Metrics:
    """Counters of the elicitation runtime. Read them with :meth:`snapshot`."""

    def __init__(self) -> None:
        self.created: Counter[str] = Counter()
        self.outcomes: Counter[tuple[str, str]] = Counter()
        self.refused: Counter[str] = Counter()
        self._unsupported = 0  # outcomes that never were pending (see pending)
        self.latency_counts = [0] * (len(LATENCY_BUCKETS_S) + 1)
        self.latency_sum = 0.0

    @property
    def pending(self) -> int:
        """The gauge: ``on_created`` calls minus ``on_outcome`` calls. Derived from the
        counters (every outcome but an unsupported one comes from ``on_outcome``) instead of
        kept up to date twice per elicitation."""
        return self.created.total() - (self.outcomes.total() - self._unsupported)

    def on_created(self, mode: str) -> None:
        self.created[mode] += 1

    def on_outcome(self, mode: str, outcome: str) -> None:
        self.outcomes[(outcome, mode)] += 1

    def on_unsupported(self, mode: str) -> None:
        self.outcomes[("Unsupported", mode)] += 1
        self._unsupported += 1

    def on_refused(self, limit: str) -> None:
        self.refused[limit] += 1

    def on_answer_latency(self, seconds: float) -> None:
        """Time from the request reaching the client to the human's answer."""
        self.latency_counts[bisect.bisect_left(LATENCY_BUCKETS_S, seconds)] += 1
        self.latency_sum += seconds

    def snapshot(self) -> dict[str, Any]:
        """A plain-dict copy: ``created``, ``outcomes`` (``{outcome: {mode: n}}``),
        ``refused``, ``pending`` and ``human_latency_s`` (buckets, counts, sum, count)."""
        outcomes: dict[str, dict[str, int]] = {}
        for (outcome, mode), n in sorted(self.outcomes.items()):
            outcomes.setdefault(outcome, {})[mode] = n
        return {
            "created": dict(self.created),
            "outcomes": outcomes,
            "refused": dict(self.refused),
            "pending": self.pending,
            "human_latency_s": {
                "buckets": [*LATENCY_BUCKETS_S, "inf"],
                "counts": list(self.latency_counts),
                "sum": self.latency_sum,
                "count": sum(self.latency_counts),
            },
        }
