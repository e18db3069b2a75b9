"""The MCP protocol versions this server knows, each defined once.

Two eras (docs/architecture.md, "Vocabulary"): the *session era* (2025-06-18, 2025-11-25),
whose version ``initialize`` negotiates, and the *stateless* revision 2026-07-28, whose every
request names its version in ``params._meta``. Pure: constants only.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "LATEST_SESSION_VERSION",
    "LATEST_VERSION",
    "PUBLISHED_SESSION_VERSIONS",
    "SESSION_VERSIONS",
    "STATELESS_VERSIONS",
    "SUPPORTED_VERSIONS",
    "V_2025_06_18",
    "V_2025_11_25",
    "V_2026_07_28",
]

V_2025_06_18: Final = "2025-06-18"
V_2025_11_25: Final = "2025-11-25"
V_2026_07_28: Final = "2026-07-28"

#: Versions negotiated by ``initialize``, oldest first.
SESSION_VERSIONS: Final[tuple[str, ...]] = (V_2025_06_18, V_2025_11_25)
#: What ``initialize`` offers a client that asks for a version we do not speak.
LATEST_SESSION_VERSION: Final = V_2025_11_25
#: Versions served statelessly (per-request ``_meta``), newest first.
STATELESS_VERSIONS: Final[tuple[str, ...]] = (V_2026_07_28,)
#: Every version this server speaks, newest first (``server/discover``, ``-32022``'s data).
SUPPORTED_VERSIONS: Final[tuple[str, ...]] = STATELESS_VERSIONS + tuple(reversed(SESSION_VERSIONS))
#: The newest version; schemas are written (and cached) in its dialect.
LATEST_VERSION: Final = V_2026_07_28
#: Every published version of the session era, oldest first: an ``MCP-Protocol-Version`` header
#: on a session's request naming another is refused.
PUBLISHED_SESSION_VERSIONS: Final[tuple[str, ...]] = (
    "2024-11-05",
    "2025-03-26",
    V_2025_06_18,
    V_2025_11_25,
)
