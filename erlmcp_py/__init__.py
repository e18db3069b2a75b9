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
from erlmcp_py.core.urlpolicy import UrlPolicy as UrlPolicy
from erlmcp_py.urlcheck import check_url as check_url

__all__ = [
    "AlreadyTerminal",
    "ElicitationNotFound",
    "ErlmcpError",
    "RateLimited",
    "ResultTooLarge",
    "SchemaNotAllowed",
    "TooManyElicitations",
    "UnsafeURLError",
    "UrlPolicy",
    "check_url",
]
