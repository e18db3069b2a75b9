"""The one outcome every elicitation waiter gets, and the tenant scope of every call.

Frozen, slotted value types. A waiter receives exactly one of
``Accepted | Declined | Cancelled | TimedOut | Unsupported | Failed``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeAlias, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Tenant:
    """Who is asking: every runtime call is scoped to one tenant.

    Another tenant's elicitation id behaves exactly like an unknown id.
    """

    user: str
    workspace: str = ""
    conversation: str = ""


@dataclass(frozen=True, slots=True)
class Accepted(Generic[T]):
    """The user accepted and the answer passed validation."""

    content: T


@dataclass(frozen=True, slots=True)
class Declined:
    """The user explicitly declined."""


@dataclass(frozen=True, slots=True)
class Cancelled:
    """The user dismissed the request, or the server/application cancelled it."""

    by: str = "client"


@dataclass(frozen=True, slots=True)
class TimedOut:
    """Nobody answered before the deadline (after any extensions)."""


@dataclass(frozen=True, slots=True)
class Unsupported:
    """The client did not declare the capability this elicitation needs."""

    mode: str = "form"


@dataclass(frozen=True, slots=True)
class Failed:
    """The elicitation could not finish: ``reason`` is a stable code.

    Codes: ``validation`` (re-prompts exhausted), ``transport`` (peer gone or send failed),
    ``answer_too_large`` (the client's answer was over the transport's frame limit and was
    not read), ``runtime_restarted`` (an actor restarted under the waiter), ``abandoned``
    (owner gone).
    """

    reason: str
    detail: str = ""


Outcome: TypeAlias = Accepted[Any] | Declined | Cancelled | TimedOut | Unsupported | Failed
