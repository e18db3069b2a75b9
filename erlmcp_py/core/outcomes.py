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

    Raises:
        TypeError: a part is not a ``str`` (a tenant is a key of the store's records and
            indexes, shared by every user: a bad one is refused where it is made).
    """

    user: str
    workspace: str = ""
    conversation: str = ""

    def __post_init__(self) -> None:
        for name in ("user", "workspace", "conversation"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise TypeError(f"Tenant.{name} must be a str, got {type(value).__name__}")


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
    not read), ``validator_error`` (application code judging the answer failed: a custom
    validator, its ``url_values``, a model's own validator raised something other than a
    refusal, or returned no verdict; ``detail`` names the exception type, never its
    message), ``runtime_restarted`` (an actor restarted under the waiter), ``abandoned``
    (owner gone).
    """

    reason: str
    detail: str = ""


Outcome: TypeAlias = Accepted[Any] | Declined | Cancelled | TimedOut | Unsupported | Failed
