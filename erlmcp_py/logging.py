"""structlog setup: logs to stderr (never stdout, which belongs to MCP on stdio), as JSON or for
a console, with sensitive values redacted.

The library never writes a log line to stdout unless the application configures structlog to.
Importing ``erlmcp_py`` leaves a structlog configuration the application made alone; when there
is none yet, it sets a quiet default (:func:`stderr_by_default`): lines at ``info`` and above,
readable console lines on ``sys.stderr`` (unconfigured structlog would print every debug line to
stdout, the MCP stream of a stdio server), coloured only when stderr is a terminal and
``NO_COLOR`` is unset, sensitive values redacted. ``ERLMCP_LOG_LEVEL`` sets that default's
level. An application's own ``structlog.configure`` (or :func:`configure_logging`) replaces it.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import select
import sys
from collections.abc import Mapping, MutableMapping
from typing import Any, Final, Literal

import pydantic_core
import structlog

__all__ = ["REDACTED", "SENSITIVE_KEYS", "configure_logging", "redact", "stderr_by_default"]

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


@functools.lru_cache(maxsize=4096)
def _sensitive_name(key: str) -> bool:
    return key.lower().replace("-", "_") in SENSITIVE_KEYS


def _sensitive(key: object) -> bool:
    # Log keys are a small fixed vocabulary: the normalised lookup is cached per key.
    return isinstance(key, str) and _sensitive_name(key)


#: Values that cannot hold a nested key: returned as they are, without the ABC checks below
#: (every log line carries a dozen of them; this processor runs on every line).
_LEAVES: Final = frozenset({str, int, float, bool, type(None)})


def _scrub(value: Any, depth: int = 0) -> Any:
    if type(value) in _LEAVES or depth > 8:
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
    for key, value in list(event_dict.items()):
        if _sensitive(key):
            event_dict[key] = REDACTED
        elif type(value) not in _LEAVES:
            event_dict[key] = _scrub(value)
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


def _json_line(event: Any, **_: Any) -> str:
    """One event as JSON, by pydantic-core (several times faster than ``json.dumps``; this runs
    for every line). Unknown objects are written as their ``str``, infinities as strings; a
    value it still cannot write (bytes that are not UTF-8…) takes structlog's default path
    (``json.dumps``, unknown values as their ``repr``): never an error mid-line."""
    try:
        return pydantic_core.to_json(event, serialize_unknown=True, inf_nan_mode="strings").decode()
    except pydantic_core.PydanticSerializationError:
        return json.dumps(event, default=repr)


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
        structlog.processors.JSONRenderer(serializer=_json_line)
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
        # One write per line (print() writes the line and its newline separately).
        logger_factory=structlog.WriteLoggerFactory(_robust(stream or sys.stderr)),
        # Loggers are bound once, not on every event.
        cache_logger_on_first_use=True,
    )


def _stderr_logger(*_args: Any) -> Any:
    """structlog logger factory: one line per write to the current ``sys.stderr``."""
    return structlog.WriteLogger(_robust(sys.stderr))


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, OSError, ValueError):
        return False


def stderr_by_default() -> None:
    """Give structlog a quiet default when nobody has configured it: ``info`` and above (or
    ``ERLMCP_LOG_LEVEL``), console lines on ``sys.stderr``, colours only on a terminal
    without ``NO_COLOR``, sensitive values redacted.

    Does nothing once structlog is configured (by the application, or by this function).
    Called when ``erlmcp_py`` is imported.
    """
    if structlog.is_configured():
        return
    level = os.environ.get("ERLMCP_LOG_LEVEL", "info").upper()
    colours = _is_terminal(sys.stderr) and not os.environ.get("NO_COLOR")
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.StackInfoRenderer(),
            structlog.dev.set_exc_info,
            structlog.processors.TimeStamper(fmt="%Y-%m-%d %H:%M:%S", utc=False),
            redact,
            structlog.dev.ConsoleRenderer(colors=colours),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping().get(level, logging.INFO)
        ),
        logger_factory=_stderr_logger,
    )


stderr_by_default()
