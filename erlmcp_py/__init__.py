"""erlmcp-py: MCP elicitation on trio, supervised the OTP way."""

from __future__ import annotations

from erlmcp_py.core.errors import (
    AlreadyTerminal as AlreadyTerminal,
    ElicitationNotFound as ElicitationNotFound,
    ErlmcpError as ErlmcpError,
    RateLimited as RateLimited,
    ResultTooLarge as ResultTooLarge,
    SchemaNotAllowed as SchemaNotAllowed,
    TooManyElicitations as TooManyElicitations,
    UnsafeURLError as UnsafeURLError,
)

__all__ = [
    "AlreadyTerminal",
    "ElicitationNotFound",
    "ErlmcpError",
    "RateLimited",
    "ResultTooLarge",
    "SchemaNotAllowed",
    "TooManyElicitations",
    "UnsafeURLError",
]
