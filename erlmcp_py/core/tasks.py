"""The state of one task (the ``io.modelcontextprotocol/tasks`` extension, SEP-2663): pure.

Theory of operation
-------------------
A server may answer a 2026-07-28 ``tools/call`` with a *task*: a durable handle the client
polls (``tasks/get``), answers (``tasks/update``) and may cancel (``tasks/cancel``). This
module is the task's state and nothing else: no trio, no clock (every change takes ``now``,
wall-clock seconds), no I/O. The shell (``erlmcp_py.mcp.tasks``) runs the tool and feeds it.

* **Status** is derived, never stored apart from the facts: a task that has ended is
  ``completed`` (its ``result``), ``failed`` (its JSON-RPC ``error``) or ``cancelled``, and
  stays so (the first end wins, later ones change nothing); otherwise it is
  ``input_required`` while it has outstanding input requests, else ``working``.
* **Input requests** are the questions the tool is asking (an ``elicitation/create``, a
  ``sampling/createMessage``, a ``roots/list``), each under a key. A key is unique over the
  task's whole life (the SEP: a key is never reused, so an answer always names the request
  the client means): :meth:`TaskState.ask` takes the key the tool named, or a
  ``<prefix>-<n>`` when it was issued before (a re-prompt of an invalid answer is a new
  request under a new key). A request leaves the map when it is answered
  (:meth:`TaskState.take_answers`: only outstanding keys are taken, so no request is answered
  twice, and unknown or answered keys are ignored), or withdrawn (:meth:`TaskState.withdraw`:
  its deadline passed, or the tool stopped waiting).
* **statusMessage** carries what a person polling should know: the deadline warning of an
  outstanding question (:meth:`TaskState.warn`, cleared when that request leaves the map),
  or the error's message of a failed task.
* **Wire form**: :meth:`TaskState.detailed` is the ``DetailedTask`` of ``tasks/get`` (and of
  the store), :meth:`TaskState.created` the ``Task`` fields of a ``CreateTaskResult``; times
  are ISO 8601 UTC with milliseconds, ``ttlMs`` and ``pollIntervalMs`` integer milliseconds.
* **Restored**: :meth:`TaskState.restore` is the state a ``DetailedTask`` and the few facts it
  does not show (:attr:`TaskState.issued_keys`, :attr:`TaskState.cancel_requested`,
  :attr:`TaskState.message_key`) describe: what another replica resumes a task from when the
  replica running it is gone. Times come back at the wire's millisecond precision.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Final

__all__ = [
    "TASKS_EXTENSION",
    "TERMINAL_STATUSES",
    "InputRequest",
    "TaskState",
    "TaskStatus",
    "iso_time",
    "parse_iso_time",
]

#: The extension's identifier: in ``capabilities.extensions`` of ``server/discover`` and of a
#: client's per-request capabilities.
TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"


class TaskStatus(StrEnum):
    """A task's status, as the wire names it."""

    WORKING = "working"
    INPUT_REQUIRED = "input_required"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


#: The statuses a task ends in; once in one, a task never changes.
TERMINAL_STATUSES: Final = frozenset(
    {TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED}
)


def iso_time(seconds: float) -> str:
    """Wall-clock seconds as ISO 8601 UTC with milliseconds (``2026-07-28T10:30:00.000Z``)."""
    moment = datetime.fromtimestamp(seconds, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_iso_time(text: str) -> float:
    """The wall-clock seconds of an :func:`iso_time` string.

    Raises:
        ValueError: not an ISO 8601 time with a zone.
    """
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError(f"a task's time names its zone, got {text!r}")
    return moment.timestamp()


def _millis(seconds: float) -> int:
    """Whole milliseconds of a duration (the wire's integers), at least 1."""
    return max(1, round(seconds * 1000))


@dataclass(frozen=True, slots=True)
class InputRequest:
    """One question of a task as the client sees it in ``inputRequests``.

    Attributes:
        key: Its key, unique over the task's life.
        method: ``elicitation/create``, ``sampling/createMessage``, ``roots/list``…
        params: The request's params (JSON values).
    """

    key: str
    method: str
    params: Mapping[str, Any]

    def wire(self) -> dict[str, Any]:
        """The entry of ``inputRequests``."""
        return {"method": self.method, "params": dict(self.params)}


@dataclass(slots=True)
class TaskState:
    """One task's state. Create with :meth:`new`; every change takes ``now`` (wall seconds).

    Attributes:
        task_id: The task's id (the shell draws it: unguessable).
        created_at: When it was created.
        updated_at: When it last changed (never before ``created_at``, never backwards).
        ttl_s: Its life from ``created_at``, or ``None`` for unlimited.
        poll_interval_s: The polling interval suggested to the client.
        requests: The outstanding input requests by key, in the order they were asked.
        result: The tool's result once ``completed``.
        error: The JSON-RPC error object once ``failed``.
        cancelled: Whether it ended ``cancelled``.
        cancel_requested: Whether the client asked to cancel it (it may still end otherwise).
    """

    task_id: str
    created_at: float
    updated_at: float
    ttl_s: float | None
    poll_interval_s: float
    requests: dict[str, InputRequest] = field(default_factory=dict)
    result: Mapping[str, Any] | None = None
    error: Mapping[str, Any] | None = None
    cancelled: bool = False
    cancel_requested: bool = False
    _issued: set[str] = field(default_factory=set)
    _serial: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _message: str | None = None
    _message_key: str | None = None

    @classmethod
    def new(
        cls, task_id: str, now: float, *, ttl_s: float | None, poll_interval_s: float
    ) -> TaskState:
        """A task just created: ``working``, no input requests.

        Raises:
            ValueError: ``ttl_s`` or ``poll_interval_s`` is not a positive, finite number, or
                ``task_id`` is empty.
        """
        if not task_id:
            raise ValueError("a task needs an id")
        for name, value in (("ttl_s", ttl_s), ("poll_interval_s", poll_interval_s)):
            if value is not None and not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive, finite number, got {value!r}")
        return cls(task_id, now, now, ttl_s, poll_interval_s)

    @classmethod
    def restore(
        cls,
        detailed: Mapping[str, Any],
        *,
        issued: Iterable[str] = (),
        cancel_requested: bool = False,
        message_key: str | None = None,
    ) -> TaskState:
        """The state that :meth:`detailed` gave ``detailed``, with the facts it does not
        show: the keys ever issued, whether a cancel was asked, and which request the
        ``statusMessage`` is about. Its outstanding input requests are those of
        ``inputRequests``; it ends as it ended.

        Raises:
            ValueError, TypeError, KeyError: ``detailed`` is no ``DetailedTask``.
        """
        ttl_ms = detailed["ttlMs"]
        if ttl_ms is not None and type(ttl_ms) is not int:
            raise TypeError("ttlMs must be an integer or null")
        poll_ms = detailed["pollIntervalMs"]
        if type(poll_ms) is not int:
            raise TypeError("pollIntervalMs must be an integer")
        created_at = parse_iso_time(str(detailed["createdAt"]))
        state = cls.new(
            str(detailed["taskId"]),
            created_at,
            ttl_s=None if ttl_ms is None else ttl_ms / 1000,
            poll_interval_s=poll_ms / 1000,
        )
        state.updated_at = max(created_at, parse_iso_time(str(detailed["lastUpdatedAt"])))
        requests = detailed.get("inputRequests") or {}
        if not isinstance(requests, Mapping):
            raise TypeError("inputRequests must be an object")
        for key, request in requests.items():
            method, params = request["method"], request["params"]
            if not (isinstance(method, str) and isinstance(params, Mapping)):
                raise TypeError("an input request has a method and params")
            state.requests[str(key)] = InputRequest(str(key), method, dict(params))
        state._issued = {*issued, *state.requests}
        state.cancel_requested = bool(cancel_requested)
        status = detailed["status"]
        if status == TaskStatus.COMPLETED:
            state.result = dict(detailed["result"])
        elif status == TaskStatus.FAILED:
            state.error = dict(detailed["error"])
        elif status == TaskStatus.CANCELLED:
            state.cancelled = True
        elif status not in (TaskStatus.WORKING, TaskStatus.INPUT_REQUIRED):
            raise ValueError(f"not a task status: {status!r}")
        if state.terminal:
            state.requests.clear()
        message = detailed.get("statusMessage")
        if isinstance(message, str):
            state._message = message
            state._message_key = message_key if message_key in state.requests else None
        return state

    # -- what it is ------------------------------------------------------------------------------

    @property
    def status(self) -> TaskStatus:
        """The status the facts give (see the module docstring)."""
        if self.result is not None:
            return TaskStatus.COMPLETED
        if self.error is not None:
            return TaskStatus.FAILED
        if self.cancelled:
            return TaskStatus.CANCELLED
        return TaskStatus.INPUT_REQUIRED if self.requests else TaskStatus.WORKING

    @property
    def terminal(self) -> bool:
        """Whether the task has ended."""
        return self.status in TERMINAL_STATUSES

    @property
    def status_message(self) -> str | None:
        """What a person polling should know now, if anything."""
        return self._message

    def expires_at(self) -> float:
        """When its TTL runs out (``inf`` without one)."""
        return math.inf if self.ttl_s is None else self.created_at + self.ttl_s

    def issued(self, key: str) -> bool:
        """Whether ``key`` was ever used for an input request of this task."""
        return key in self._issued

    @property
    def issued_keys(self) -> tuple[str, ...]:
        """Every key ever used for an input request of this task (in no order)."""
        return tuple(self._issued)

    @property
    def message_key(self) -> str | None:
        """The input request the ``statusMessage`` is about (its deadline warning), if any."""
        return self._message_key

    # -- changes ----------------------------------------------------------------------------------

    def ask(self, hint: str, method: str, params: Mapping[str, Any], now: float) -> str:
        """Record a new input request; its key: ``hint`` when never issued, else a fresh
        ``<hint>-<n>``.

        Raises:
            ValueError: the task has ended (nothing more can be asked), or ``hint`` is empty.
        """
        if self.terminal:
            raise ValueError(f"task {self.task_id} has ended ({self.status}): nothing to ask")
        if not hint:
            raise ValueError("an input request needs a key")
        key = hint
        while key in self._issued:
            key = f"{hint}-{next(self._serial)}"
        self._issued.add(key)
        self.requests[key] = InputRequest(key, method, dict(params))
        self._touch(now)
        return key

    def reask(self, key: str, params: Mapping[str, Any], now: float) -> bool:
        """An outstanding request asked again under its key (its task moved to another
        process): its params as asked now (the same question; its ``_meta``, such as its
        link, may differ); whether that changed it (a key not outstanding is left alone)."""
        request = self.requests.get(key)
        if request is None or request.params == params:
            return False
        self.requests[key] = InputRequest(key, request.method, dict(params))
        self._touch(now)
        return True

    def withdraw(self, key: str, now: float) -> bool:
        """Take an outstanding request out of the map without an answer (its deadline passed,
        the tool stopped waiting); whether it was outstanding."""
        if self.requests.pop(key, None) is None:
            return False
        self._left(key)
        self._touch(now)
        return True

    def take_answers(self, responses: Mapping[str, Any], now: float) -> dict[str, Any]:
        """The responses that answer outstanding requests, which leave the map; every other
        key (never issued, answered already, withdrawn) is ignored. A partial set is fine:
        the rest stay outstanding."""
        taken = {key: value for key, value in responses.items() if key in self.requests}
        for key in taken:
            del self.requests[key]
            self._left(key)
        if taken:
            self._touch(now)
        return taken

    def outstanding(self, keys: Iterable[str]) -> list[str]:
        """Those of ``keys`` that name outstanding requests, in the order given."""
        return [key for key in keys if key in self.requests]

    def warn(self, key: str | None, message: str, now: float) -> None:
        """Show ``message`` (a question's deadline warning) in ``statusMessage`` until the
        request ``key`` leaves the map (``None``: until the next change of the map). Ignored
        once the task has ended, or when ``key`` is not outstanding."""
        if self.terminal or (key is not None and key not in self.requests):
            return
        self._message = message
        self._message_key = key
        self._touch(now)

    def request_cancel(self, now: float) -> bool:
        """The client asked to cancel; whether it was news (not ended, not asked before)."""
        if self.terminal or self.cancel_requested:
            return False
        self.cancel_requested = True
        self._touch(now)
        return True

    def complete(self, result: Mapping[str, Any], now: float) -> bool:
        """End ``completed`` with the tool's result; whether this ended it (the first end
        wins)."""
        return self._end(now, result=dict(result))

    def fail(self, error: Mapping[str, Any], now: float) -> bool:
        """End ``failed`` with a JSON-RPC error object (``code``, ``message``, ``data``?);
        whether this ended it."""
        if not (isinstance(error.get("code"), int) and isinstance(error.get("message"), str)):
            raise TypeError("a task fails with a JSON-RPC error object (code, message)")
        return self._end(now, error=dict(error))

    def cancel(self, now: float) -> bool:
        """End ``cancelled``; whether this ended it."""
        return self._end(now, cancelled=True)

    def _end(
        self,
        now: float,
        *,
        result: Mapping[str, Any] | None = None,
        error: Mapping[str, Any] | None = None,
        cancelled: bool = False,
    ) -> bool:
        if self.terminal:
            return False
        self.result, self.error, self.cancelled = result, error, cancelled
        self.requests.clear()
        self._message = str(error["message"]) if error is not None else None
        self._message_key = None
        self._touch(now)
        return True

    def _left(self, key: str) -> None:
        """Request ``key`` left the map: a warning about it (or about no request) goes."""
        if self._message is not None and self._message_key in (key, None):
            self._message = None
            self._message_key = None

    def _touch(self, now: float) -> None:
        self.updated_at = max(self.updated_at, now)

    # -- wire form --------------------------------------------------------------------------------

    def created(self) -> dict[str, Any]:
        """The ``Task`` fields of the ``CreateTaskResult`` (without ``resultType``)."""
        out: dict[str, Any] = {
            "taskId": self.task_id,
            "status": str(self.status),
            "createdAt": iso_time(self.created_at),
            "lastUpdatedAt": iso_time(self.updated_at),
            "ttlMs": None if self.ttl_s is None else _millis(self.ttl_s),
            "pollIntervalMs": _millis(self.poll_interval_s),
        }
        if self._message is not None:
            out["statusMessage"] = self._message
        return out

    def detailed(self) -> dict[str, Any]:
        """The ``DetailedTask`` of ``tasks/get``: the ``Task`` fields and, by status,
        ``inputRequests``, ``result`` or ``error``."""
        out = self.created()
        if self.requests:
            out["inputRequests"] = {key: r.wire() for key, r in self.requests.items()}
        elif self.result is not None:
            out["result"] = dict(self.result)
        elif self.error is not None:
            out["error"] = dict(self.error)
        return out
