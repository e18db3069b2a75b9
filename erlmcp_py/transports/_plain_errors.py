"""What leaves :func:`~erlmcp_py.transports.http.serve_http` and
:func:`~erlmcp_py.transports.stdio.serve_stdio` as itself, not wrapped in the exception groups
of the library's own nurseries (trio's strict exception groups wrap whatever leaves a
nursery, once per nursery).

A Ctrl-C (``KeyboardInterrupt``) leaves as a plain ``KeyboardInterrupt``, so Python prints
its usual short message and exits as interrupted; a lone ``OSError`` (an address already in
use) leaves as that ``OSError``. Anything else keeps its group: several errors at once are
several errors.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["cannot_listen", "plain_errors"]


def _leaves(group: BaseExceptionGroup[BaseException]) -> Iterator[BaseException]:
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            yield from _leaves(exc)
        else:
            yield exc


def _plain(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    leaves = list(_leaves(group))
    if leaves and all(isinstance(exc, KeyboardInterrupt) for exc in leaves):
        return KeyboardInterrupt()  # raised here: a traceback of the caller's frames only
    if len(leaves) == 1 and isinstance(leaves[0], OSError):
        return leaves[0]
    return None


@contextmanager
def plain_errors() -> Iterator[None]:
    """Raise a ``KeyboardInterrupt`` or a lone ``OSError`` out of the block as itself."""
    try:
        yield
    except BaseExceptionGroup as group:
        plain = _plain(group)
        if plain is None:
            raise
        raise plain from None


def cannot_listen(exc: OSError, host: str, port: int) -> OSError:
    """The error of a listener that cannot open, naming where: ``cannot listen on
    127.0.0.1:8000: address already in use`` (its ``strerror``; the ``errno`` is kept)."""
    name = host.strip("[]")
    where = f"[{name}]:{port}" if ":" in name else f"{name}:{port}"
    reason = exc.strerror or str(exc)
    reason = reason[:1].lower() + reason[1:]
    return OSError(exc.errno, f"cannot listen on {where}: {reason}")
