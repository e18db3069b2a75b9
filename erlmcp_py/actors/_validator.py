"""ValidatorActor: strict answer validation with a bounded cache of compiled validators.

A request either brings its own validator (a ``FormType`` from ``schema_for``, a compiled
form, an application's own) or is validated strictly against its ``requestedSchema``.

A request's own validator is application code running in an actor every user shares. Whatever
it raises, or anything it returns that is not a verdict, is answered as
:class:`ValidatorRaised`, never let out: the elicitation it was judging ends
``Failed("validator_error")`` and this actor, everybody else's questions and the restart
intensity are untouched. The exception's message is never kept (it may quote the answer):
its type and where it was raised are.
"""

from __future__ import annotations

import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from erlmcp_py.actors.api import AnswerValidator
from erlmcp_py.core.validation import (
    AnswerError,
    ValidationResult,
    ValidatorCache,
    not_an_object,
)
from supervisors import Actor, ActorRef, ReplyTo

__all__ = ["Validate", "ValidatorActor", "ValidatorRaised"]


@dataclass(frozen=True, slots=True)
class Validate:
    schema: Mapping[str, Any] | None
    validator: AnswerValidator | None
    content: Any


@dataclass(frozen=True, slots=True)
class ValidatorRaised:
    """The verdict when application code judging an answer failed.

    Attributes:
        detail: What failed, for ``Failed.detail`` and logs: an exception's type, or what is
            wrong with the verdict; never an exception's message.
        error_type: The exception's type name (``""``: no exception, a malformed verdict).
        at: Where it was raised (``file:line`` of the innermost frame), or ``""``.
    """

    detail: str
    error_type: str = ""
    at: str = ""

    @classmethod
    def of(cls, exc: BaseException, stage: str = "by the validator") -> ValidatorRaised:
        """The verdict for ``exc``, raised during ``stage``."""
        name = type(exc).__qualname__
        return cls(f"{name} raised {stage}", name, _where(exc))


def _where(exc: BaseException) -> str:
    """``file:line`` of the innermost frame of ``exc``'s traceback (no source is read)."""
    last = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        last = (frame.f_code.co_filename, lineno)
    if last is None:
        return ""
    return f"{last[0]}:{last[1]}"


def checked_verdict(result: object) -> ValidationResult | ValidatorRaised:
    """``result`` if it is a verdict the runtime can act on, else why not."""
    if not isinstance(result, ValidationResult):
        return ValidatorRaised(
            f"the validator returned {type(result).__name__}, not a ValidationResult"
        )
    ok = result.ok
    if type(ok) is not bool:
        return ValidatorRaised("the validator returned a ValidationResult whose ok is not a bool")
    errors = result.errors
    if not isinstance(errors, tuple | list):
        return ValidatorRaised(_NOT_ANSWER_ERRORS)
    if errors:  # an acceptance has none to look at
        if not all(isinstance(e, AnswerError) for e in errors):
            return ValidatorRaised(_NOT_ANSWER_ERRORS)
        if ok:
            return ValidatorRaised("the validator accepted the answer with errors")
    elif not ok:
        return ValidatorRaised("the validator refused the answer without an error")
    return result


_NOT_ANSWER_ERRORS = "the validator returned errors that are not AnswerError values"


class ValidatorActor(Actor):
    name = "validator"
    mailbox_size = 8192

    def __init__(self, registry: dict[str, ActorRef], cache_size: int = 256) -> None:
        self._registry = registry
        self._cache_size = cache_size

    async def init(self) -> None:
        self.cache = ValidatorCache(self._cache_size)
        self._registry["validator"] = self.ref

    async def handle_call(self, msg: Any, reply_to: ReplyTo) -> ValidationResult | ValidatorRaised:
        if type(msg) is not Validate:
            raise TypeError(f"unknown validator call {type(msg).__name__}")
        if msg.validator is not None:
            try:
                result = msg.validator.validate(msg.content)
            except Exception as exc:  # application code: its bug ends its elicitation only
                return ValidatorRaised.of(exc)
            return checked_verdict(result)
        if msg.schema is None:
            # URL mode without a schema: any JSON object (or nothing) is a valid completion;
            # anything else is refused for what it is (its JSON type, never its value).
            if msg.content is None or isinstance(msg.content, Mapping):
                return ValidationResult(True, None if msg.content is None else dict(msg.content))
            return not_an_object(msg.content)
        return self.cache.get(msg.schema).validate(msg.content)
