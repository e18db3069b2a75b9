"""Errors that say what happened.

Pure value types: no trio, no I/O. Every error carries the facts a caller needs to act on it
(``retry_after``, ``path`` and ``keyword``, ``reason``) as attributes, not only in its text.
"""

from __future__ import annotations


class ErlmcpError(Exception):
    """Base class of every error erlmcp-py raises on purpose."""


class RateLimited(ErlmcpError):
    """The client asked for new elicitations faster than its token bucket refills."""

    def __init__(self, retry_after: float) -> None:
        super().__init__(f"rate limited: retry after {retry_after:.3f} s")
        self.retry_after = retry_after


class TooManyElicitations(ErlmcpError):
    """A pending cap (per client or global) is reached."""

    def __init__(self, scope: str, limit: int) -> None:
        super().__init__(f"too many pending elicitations ({scope} cap {limit})")
        self.scope = scope
        self.limit = limit


class UnsafeURLError(ErlmcpError):
    """A URL was refused by the URL policy; ``reason`` is a stable code."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"unsafe URL ({reason})" + (f": {detail}" if detail else ""))
        self.reason = reason
        self.detail = detail


class SchemaNotAllowed(ErlmcpError):
    """A requestedSchema uses something the negotiated protocol version does not allow.

    Attributes:
        inexpressible_in: The protocol version that has no way to express this schema, which
            a newer one allows (a multi-select for 2025-06-18): its client cannot be asked the
            form. ``None``: no version allows the schema.
    """

    def __init__(
        self, path: str, keyword: str, detail: str = "", *, inexpressible_in: str | None = None
    ) -> None:
        msg = f"schema not allowed at {path or '/'}: {keyword!r}"
        super().__init__(msg + (f" ({detail})" if detail else ""))
        self.path = path
        self.keyword = keyword
        self.detail = detail
        self.inexpressible_in = inexpressible_in


class ElicitationNotFound(ErlmcpError):
    """No elicitation with that id is visible to the caller's tenant."""

    def __init__(self, elicitation_id: str) -> None:
        super().__init__("elicitation not found")
        self.elicitation_id = elicitation_id


class AlreadyTerminal(ErlmcpError):
    """The elicitation has already reached a terminal status."""

    def __init__(self, status: str) -> None:
        super().__init__(f"elicitation already terminal ({status})")
        self.status = status


class ResultTooLarge(ErlmcpError):
    """An answer (measured on its JSON encoding) exceeds the size policy."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"result too large: {size} bytes > {limit} bytes")
        self.size = size
        self.limit = limit


class FormDefinitionError(ErlmcpError, ValueError):
    """A form definition (the form definition language) is invalid.

    ``problems`` lists ``(location, message)`` pairs; a location is a dotted path into the
    definition (``fields.2.validation.minLength``), or ``""`` for the form as a whole.
    """

    def __init__(self, problems: tuple[tuple[str, str], ...] | list[tuple[str, str]]) -> None:
        self.problems: tuple[tuple[str, str], ...] = tuple(problems)
        shown = "; ".join(f"{loc or '<form>'}: {msg}" for loc, msg in self.problems)
        super().__init__(f"invalid form definition: {shown}")


class StateTokenError(ErlmcpError):
    """A sealed MRTR ``requestState`` was refused; ``reason`` is a stable code.

    Reasons: ``malformed``, ``unknown_key``, ``bad_signature``, ``expired``, ``not_yet_valid``,
    ``wrong_principal``, ``request_mismatch``, ``too_large``. Each has its own subclass. The text
    never contains token contents; a server should answer every reason with the same client-facing
    error and keep ``reason`` for its log.
    """

    reason: str = "invalid"

    def __init__(self, detail: str = "") -> None:
        super().__init__(
            f"request state refused ({self.reason})" + (f": {detail}" if detail else "")
        )
        self.detail = detail


class StateTokenMalformed(StateTokenError):
    """The token is not a well-formed token of a version we understand."""

    reason = "malformed"


class StateTokenUnknownKey(StateTokenError):
    """The token names a key id that is not (or no longer) in the key ring."""

    reason = "unknown_key"


class StateTokenBadSignature(StateTokenError):
    """The token's MAC does not verify: it was forged or altered."""

    reason = "bad_signature"


class StateTokenExpired(StateTokenError):
    """The token is authentic but past its expiry (``expired_at``, on the caller's clock)."""

    reason = "expired"

    def __init__(self, expired_at: float) -> None:
        super().__init__()
        self.expired_at = expired_at


class StateTokenNotYetValid(StateTokenError):
    """The token is authentic but was issued later than ``now`` plus the allowed clock skew.

    ``issued_at`` is on the sealer's clock: a clock that stepped back, or another node's clock
    running ahead. Accepting it would stretch the token's life past its ttl.
    """

    reason = "not_yet_valid"

    def __init__(self, issued_at: float) -> None:
        super().__init__()
        self.issued_at = issued_at


class StateTokenWrongPrincipal(StateTokenError):
    """The token is authentic but was sealed for another principal."""

    reason = "wrong_principal"


class StateTokenRequestMismatch(StateTokenError):
    """The token is authentic but was sealed for another request (method or parameters)."""

    reason = "request_mismatch"


class StateTokenTooLarge(StateTokenError):
    """The token (or the token a payload would make) exceeds the size limit, in characters."""

    reason = "too_large"

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"{size} > {limit} characters")
        self.size = size
        self.limit = limit


class InvalidAnswer(ErlmcpError, ValueError):
    """An accepted form answer does not match its form.

    ``errors`` are :class:`erlmcp_py.core.validation.AnswerError` values; neither they nor the
    message (a re-prompt summary) contain the submitted value.
    """

    def __init__(self, errors: tuple[object, ...], summary: str) -> None:
        super().__init__(summary)
        self.errors = errors


class ValidatorError(ErlmcpError):
    """The elicitation's validator failed on an application-side completion
    (``complete_elicitation``): it raised something other than a refusal, or returned no
    verdict. That elicitation has ended ``Failed("validator_error")``; nothing else is
    affected. ``error_type`` names what was raised (never its message: it may quote the
    answer)."""

    def __init__(self, elicitation_id: str, error_type: str) -> None:
        super().__init__(
            f"the validator of elicitation {elicitation_id} failed ({error_type}); "
            "it has ended failed: validator_error"
        )
        self.elicitation_id = elicitation_id
        self.error_type = error_type


class ExtensionDenied(ErlmcpError):
    """``extend_timeout`` was refused: ``reason`` is ``max_extensions`` or ``expired``."""

    def __init__(self, reason: str, max_extensions: int) -> None:
        super().__init__(f"extension denied ({reason}; at most {max_extensions} extensions)")
        self.reason = reason
        self.max_extensions = max_extensions


class RequestTooLarge(ErlmcpError):
    """A part of an elicitation request exceeds the size policy (measured in UTF-8 bytes)."""

    def __init__(self, part: str, size: int, limit: int) -> None:
        super().__init__(f"{part} too large: {size} bytes > {limit} bytes")
        self.part = part
        self.size = size
        self.limit = limit


class AnswerInFlight(ErlmcpError):
    """``complete_elicitation`` arrived while a client answer is being validated; retry."""

    def __init__(self, elicitation_id: str) -> None:
        super().__init__("a client answer to this elicitation is being validated; retry")
        self.elicitation_id = elicitation_id


class StoreUnavailable(ErlmcpError):
    """The shared store (``--store redis://…``) did not answer within its deadline, or is
    known to be down: ``op`` names what needed it. Nothing was admitted or changed; retry."""

    def __init__(self, op: str) -> None:
        super().__init__(f"shared store unavailable ({op}); retry later")
        self.op = op
