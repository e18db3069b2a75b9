"""erlmcp-py: MCP elicitation on trio, supervised the OTP way.

The public API, in groups (``docs/architecture.md``, "Public API", gives the reasons):

* Serving MCP: :class:`Server`, the tool :class:`Context`, :func:`serve_stdio`,
  :func:`serve_http`, and what tools raise or read (:class:`ToolError`,
  :class:`CompletionRequest`, :class:`Contents`, ...).
* The elicitation runtime without the MCP layer: :func:`open_runtime`, :class:`Runtime`,
  :class:`RuntimeConfig`, :class:`ElicitationRequest`, :class:`ElicitationHandle`,
  :class:`ElicitationInfo`, the :class:`Peer` interface, :func:`check_url` and
  :class:`UrlPolicy`.
* Outcomes and scope: :class:`Accepted`, :class:`Declined`, :class:`Cancelled`,
  :class:`TimedOut`, :class:`Unsupported`, :class:`Failed` (together :data:`Outcome`), and
  :class:`Tenant`.
* Forms: from Python types (:func:`schema_for`, :class:`FormType`, :class:`Format`,
  :class:`Titles`) and from the form definition language (:func:`load_form`,
  :class:`FormDefinition`, :class:`FormDefinitionError`).
* Answer validation: :func:`validate_answer`, :class:`ValidationResult`, :class:`AnswerError`
  and :func:`summarize` are public. A custom ``ElicitationRequest.validator`` returns a
  ``ValidationResult`` of ``AnswerError`` values; :class:`InvalidAnswer` carries them;
  ``validate_answer`` is the runtime's own strict check, for an answer that arrives by
  another route or a validator that adds a rule on top of it; ``summarize`` words errors as
  the runtime's re-prompts do.
* Errors: every error the runtime raises on purpose derives from :class:`ErlmcpError`; the
  actor kernel's :class:`Busy` and :class:`ActorGone` reach a caller when an actor's mailbox is
  full or the actor is gone.
"""

import erlmcp_py.logging  # noqa: F401  (the library's log lines go to stderr unless configured)
from erlmcp_py.actors.api import (
    ElicitationHandle as ElicitationHandle,
    ElicitationInfo as ElicitationInfo,
    ElicitationRequest as ElicitationRequest,
    RuntimeConfig as RuntimeConfig,
)
from erlmcp_py.actors.peer import (
    Peer as Peer,
    PeerError as PeerError,
    PeerGone as PeerGone,
    PeerResponse as PeerResponse,
)
from erlmcp_py.actors.runtime import Runtime as Runtime, open_runtime as open_runtime
from erlmcp_py.actors.urlcheck import check_url as check_url
from erlmcp_py.core.errors import (
    AlreadyTerminal as AlreadyTerminal,
    AnswerInFlight as AnswerInFlight,
    ElicitationNotFound as ElicitationNotFound,
    ErlmcpError as ErlmcpError,
    ExtensionDenied as ExtensionDenied,
    FormDefinitionError as FormDefinitionError,
    InvalidAnswer as InvalidAnswer,
    RateLimited as RateLimited,
    RequestTooLarge as RequestTooLarge,
    ResultTooLarge as ResultTooLarge,
    SchemaNotAllowed as SchemaNotAllowed,
    TooManyElicitations as TooManyElicitations,
    UnsafeURLError as UnsafeURLError,
    ValidatorError as ValidatorError,
)
from erlmcp_py.core.forms import FormDefinition as FormDefinition, load_form as load_form
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
from erlmcp_py.mcp.client_results import (
    InvalidClientResult as InvalidClientResult,
    Root as Root,
    SampledMessage as SampledMessage,
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
from erlmcp_py.transports.asgi import McpApp as McpApp
from erlmcp_py.transports.http import serve_http as serve_http
from erlmcp_py.transports.stdio import serve_stdio as serve_stdio
from supervisors import ActorGone as ActorGone, Busy as Busy

__all__ = [
    "Accepted",
    "ActorGone",
    "AlreadyTerminal",
    "AnswerError",
    "AnswerInFlight",
    "Busy",
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
    "FormDefinition",
    "FormDefinitionError",
    "FormType",
    "Format",
    "InvalidAnswer",
    "InvalidClientResult",
    "McpApp",
    "Outcome",
    "Peer",
    "PeerError",
    "PeerGone",
    "PeerResponse",
    "RateLimited",
    "RequestTooLarge",
    "ResourceNotFound",
    "ResultTooLarge",
    "Root",
    "Runtime",
    "RuntimeConfig",
    "SampledMessage",
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
    "ValidatorError",
    "check_url",
    "load_form",
    "open_runtime",
    "schema_for",
    "serve_http",
    "serve_stdio",
    "summarize",
    "validate_answer",
]
