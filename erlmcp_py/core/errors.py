"""Errors that say what happened (DESIGN.md §4).

Pure value types: no trio, no I/O. Every error carries the facts a caller needs to act on it
(``retry_after``, ``path`` and ``keyword``, ``reason``) as attributes, not only in its text.
"""

from __future__ import annotations


class ErlmcpError(Exception):
    """Base class of every error erlmcp-py raises on purpose."""


class RateLimited(ErlmcpError):
    """The client asked for new elicitations faster than its token bucket refills."""

    def __init__(self, retry_after: float) -> None:
        super().__init__(f"rate limited: retry after {retry_after:.3f} s")
        self.retry_after = retry_after


class TooManyElicitations(ErlmcpError):
    """A pending cap (per client or global) is reached."""

    def __init__(self, scope: str, limit: int) -> None:
        super().__init__(f"too many pending elicitations ({scope} cap {limit})")
        self.scope = scope
        self.limit = limit


class UnsafeURLError(ErlmcpError):
    """A URL was refused by the URL policy; ``reason`` is a stable code."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"unsafe URL ({reason})" + (f": {detail}" if detail else ""))
        self.reason = reason
        self.detail = detail


class SchemaNotAllowed(ErlmcpError):
    """A requestedSchema uses something the negotiated protocol version does not allow."""

    def __init__(self, path: str, keyword: str, detail: str = "") -> None:
        msg = f"schema not allowed at {path or '/'}: {keyword!r}"
        super().__init__(msg + (f" ({detail})" if detail else ""))
        self.path = path
        self.keyword = keyword
        self.detail = detail


class ElicitationNotFound(ErlmcpError):
    """No elicitation with that id is visible to the caller's tenant."""

    def __init__(self, elicitation_id: str) -> None:
        super().__init__("elicitation not found")
        self.elicitation_id = elicitation_id


class AlreadyTerminal(ErlmcpError):
    """The elicitation has already reached a terminal status."""

    def __init__(self, status: str) -> None:
        super().__init__(f"elicitation already terminal ({status})")
        self.status = status


class ResultTooLarge(ErlmcpError):
    """An answer (measured on its JSON encoding) exceeds the size policy."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"result too large: {size} bytes > {limit} bytes")
        self.size = size
        self.limit = limit
