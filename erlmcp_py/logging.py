"""structlog setup: logs to stderr (never stdout, which belongs to MCP on stdio), as JSON or for
a console, with sensitive values redacted."""

from __future__ import annotations

import logging
import os
import select
import sys
from collections.abc import Mapping, MutableMapping
from typing import Any, Final, Literal

import structlog

__all__ = ["REDACTED", "SENSITIVE_KEYS", "configure_logging", "redact"]

REDACTED: Final = "[redacted]"

#: Keys whose values never reach a log line (compared case-insensitively, ``-`` as ``_``).
SENSITIVE_KEYS: Final = frozenset(
    {
        "content",
        "password",
        "passwd",
        "token",
        "access_token",
        "refresh_token",
        "secret",
        "client_secret",
        "api_key",
        "apikey",
        "authorization",
        "cookie",
        "set_cookie",
        "credentials",
    }
)


def _sensitive(key: object) -> bool:
    return isinstance(key, str) and key.lower().replace("-", "_") in SENSITIVE_KEYS


def _scrub(value: Any, depth: int = 0) -> Any:
    if depth > 8:
        return value
    if isinstance(value, Mapping):
        return {k: REDACTED if _sensitive(k) else _scrub(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub(v, depth + 1) for v in value]
    return value


def redact(
    _logger: Any, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """structlog processor: replace values of sensitive keys (at any depth) with ``[redacted]``."""
    for key in list(event_dict):
        if _sensitive(key):
            event_dict[key] = REDACTED
        else:
            event_dict[key] = _scrub(event_dict[key])
    return event_dict


class _BlockingWriter:
    """A text stream that waits instead of raising when its fd is non-blocking.

    ``trio.lowlevel.FdStream`` (the stdio transport) sets ``O_NONBLOCK`` on the *open file
    description* of stdin/stdout; on a terminal, stderr shares it, and a burst of log lines
    would otherwise raise ``BlockingIOError`` mid-record.
    """

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        data = text.encode("utf-8", "replace")
        fd = self._stream.fileno()
        self._stream.flush()
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(fd, view) :]
            except BlockingIOError:
                select.select([], [fd], [], 1.0)
        return len(text)

    def flush(self) -> None:
        self._stream.flush()


def _robust(stream: Any) -> Any:
    try:
        stream.fileno()
    except (AttributeError, OSError, ValueError):
        return stream  # not a real fd (tests, StringIO): nothing to guard
    return _BlockingWriter(stream)


def configure_logging(
    fmt: Literal["json", "console"] = "json", level: str = "info", stream: Any = None
) -> None:
    """Configure structlog for a server process.

    Args:
        fmt: ``json`` (one object per line) or ``console`` (human-readable).
        level: Minimum level (``debug``, ``info``, ``warning``, ``error``).
        stream: Where to write; default ``sys.stderr``.
    """
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if fmt == "json"
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            redact,
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
        ),
        logger_factory=structlog.PrintLoggerFactory(_robust(stream or sys.stderr)),
        # Loggers are bound once, not on every event (a bind per event is most of a
        # filtered-out log call's cost on the elicitation hot path).
        cache_logger_on_first_use=True,
    )
