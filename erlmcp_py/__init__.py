"""erlmcp-py: MCP elicitation on trio, supervised the OTP way."""

from __future__ import annotations

from erlmcp_py.actors.api import (
    ElicitationHandle as ElicitationHandle,
    ElicitationInfo as ElicitationInfo,
    ElicitationRequest as ElicitationRequest,
    RuntimeConfig as RuntimeConfig,
)
from erlmcp_py.actors.peer import Peer as Peer, PeerError as PeerError, PeerGone as PeerGone
from erlmcp_py.actors.runtime import Runtime as Runtime, open_runtime as open_runtime
from erlmcp_py.actors.urlcheck import check_url as check_url
from erlmcp_py.core.errors import (
    AlreadyTerminal as AlreadyTerminal,
    AnswerInFlight as AnswerInFlight,
    ElicitationNotFound as ElicitationNotFound,
    ErlmcpError as ErlmcpError,
    ExtensionDenied as ExtensionDenied,
    InvalidAnswer as InvalidAnswer,
    RateLimited as RateLimited,
    RequestTooLarge as RequestTooLarge,
    ResultTooLarge as ResultTooLarge,
    SchemaNotAllowed as SchemaNotAllowed,
    TooManyElicitations as TooManyElicitations,
    UnsafeURLError as UnsafeURLError,
)
from erlmcp_py.core.outcomes import (
    Accepted as Accepted,
    Cancelled as Cancelled,
    Declined as Declined,
    Failed as Failed,
    Outcome as Outcome,
    Tenant as Tenant,
    TimedOut as TimedOut,
    Unsupported as Unsupported,
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
from erlmcp_py.mcp.completion import CompletionRequest as CompletionRequest
from erlmcp_py.mcp.context import Context as Context
from erlmcp_py.mcp.errors import (
    CapabilityMissing as CapabilityMissing,
    ClientRequestError as ClientRequestError,
    ToolError as ToolError,
    UrlElicitationRequired as UrlElicitationRequired,
)
from erlmcp_py.mcp.resources import Contents as Contents, ResourceNotFound as ResourceNotFound
from erlmcp_py.mcp.server import Server as Server
from erlmcp_py.transports.stdio import serve_stdio as serve_stdio

__all__ = [
    "Accepted",
    "AlreadyTerminal",
    "AnswerError",
    "AnswerInFlight",
    "Cancelled",
    "CapabilityMissing",
    "ClientRequestError",
    "CompletionRequest",
    "Contents",
    "Context",
    "Declined",
    "ElicitationHandle",
    "ElicitationInfo",
    "ElicitationNotFound",
    "ElicitationRequest",
    "ErlmcpError",
    "ExtensionDenied",
    "Failed",
    "FormType",
    "Format",
    "InvalidAnswer",
    "Outcome",
    "Peer",
    "PeerError",
    "PeerGone",
    "RateLimited",
    "RequestTooLarge",
    "ResourceNotFound",
    "ResultTooLarge",
    "Runtime",
    "RuntimeConfig",
    "SchemaNotAllowed",
    "Server",
    "Tenant",
    "TimedOut",
    "Titles",
    "TooManyElicitations",
    "ToolError",
    "UnsafeURLError",
    "Unsupported",
    "UrlElicitationRequired",
    "UrlPolicy",
    "ValidationResult",
    "check_url",
    "open_runtime",
    "schema_for",
    "serve_stdio",
    "summarize",
    "validate_answer",
]
