"""ValidatorActor: strict answer validation with a bounded cache of compiled validators.

A request either brings its own validator (a ``FormType`` from ``schema_for``, a compiled
form) or is validated strictly against its ``requestedSchema``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from erlmcp_py.actors.api import AnswerValidator
from erlmcp_py.core.validation import ValidationResult, ValidatorCache, not_an_object
from supervisors import Actor, ActorRef, ReplyTo

__all__ = ["Validate", "ValidatorActor"]


@dataclass(frozen=True, slots=True)
class Validate:
    schema: Mapping[str, Any] | None
    validator: AnswerValidator | None
    content: Any


class ValidatorActor(Actor):
    name = "validator"
    mailbox_size = 8192

    def __init__(self, registry: dict[str, ActorRef], cache_size: int = 256) -> None:
        self._registry = registry
        self._cache_size = cache_size

    async def init(self) -> None:
        self.cache = ValidatorCache(self._cache_size)
        self._registry["validator"] = self.ref

    async def handle_call(self, msg: Any, reply_to: ReplyTo) -> ValidationResult:
        if type(msg) is not Validate:
            raise TypeError(f"unknown validator call {type(msg).__name__}")
        if msg.validator is not None:
            return msg.validator.validate(msg.content)
        if msg.schema is None:
            # URL mode without a schema: any JSON object (or nothing) is a valid completion;
            # anything else is refused for what it is (its JSON type, never its value).
            if msg.content is None or isinstance(msg.content, Mapping):
                return ValidationResult(True, None if msg.content is None else dict(msg.content))
            return not_an_object(msg.content)
        return self.cache.get(msg.schema).validate(msg.content)
