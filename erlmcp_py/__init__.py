"""erlmcp-py: MCP elicitation on trio, supervised the OTP way."""

from __future__ import annotations

from erlmcp_py.core.errors import (
    AlreadyTerminal as AlreadyTerminal,
    ElicitationNotFound as ElicitationNotFound,
    ErlmcpError as ErlmcpError,
    InvalidAnswer as InvalidAnswer,
    RateLimited as RateLimited,
    ResultTooLarge as ResultTooLarge,
    SchemaNotAllowed as SchemaNotAllowed,
    TooManyElicitations as TooManyElicitations,
    UnsafeURLError as UnsafeURLError,
)
from erlmcp_py.core.typeschema import (
    Format as Format,
    FormType as FormType,
    Titles as Titles,
    schema_for as schema_for,
)
from erlmcp_py.core.urlpolicy import UrlPolicy as UrlPolicy
from erlmcp_py.core.validation import (
    AnswerError as AnswerError,
    ValidationResult as ValidationResult,
    summarize as summarize,
    validate_answer as validate_answer,
)
from erlmcp_py.urlcheck import check_url as check_url

__all__ = [
    "AlreadyTerminal",
    "AnswerError",
    "ElicitationNotFound",
    "ErlmcpError",
    "FormType",
    "Format",
    "InvalidAnswer",
    "RateLimited",
    "ResultTooLarge",
    "SchemaNotAllowed",
    "Titles",
    "TooManyElicitations",
    "UnsafeURLError",
    "UrlPolicy",
    "ValidationResult",
    "check_url",
    "schema_for",
    "summarize",
    "validate_answer",
]
