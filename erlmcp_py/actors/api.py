"""Values that cross the runtime's API: requests, handles, status rows, config.

Frozen value types at the boundary; :class:`RuntimeConfig` is a pydantic model so that a bad
configuration fails when the runtime starts, with a message naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import InitVar, dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol

import trio
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from erlmcp_py.core.i18n import DEFAULT_LOCALE, LOCALES
from erlmcp_py.core.outcomes import Outcome, Unsupported
from erlmcp_py.core.policy import (
    TASK_LIFECYCLE,
    LifecyclePolicy,
    Policy,
    RatePolicy,
    RetentionPolicy,
    SizePolicy,
    TaskPolicy,
    check_timeout,
)
from erlmcp_py.core.shared import parse_store_url
from erlmcp_py.core.validation import ValidationResult

if TYPE_CHECKING:
    from erlmcp_py.actors.record import Record

__all__ = [
    "AnswerValidator",
    "ElicitationHandle",
    "ElicitationInfo",
    "ElicitationRequest",
    "RuntimeConfig",
]

Mode = Literal["form", "url"]


class AnswerValidator(Protocol):
    """Anything that validates an accepted answer: a ``FormType``, a ``CompiledForm``.

    ``validate(content)`` returns a ``ValidationResult``: valid (its ``answer`` becomes the
    ``Accepted`` content), or refused with ``AnswerError`` values (a re-prompt listing
    their messages). Raising is not refusing: a validator that raises, or returns anything
    else, has a bug, and only the elicitation it was judging ends, ``Failed("validator_error")``
    (the exception's type is logged, never its message).

    A validator may also offer ``url_values(content) -> [(field id, url), ...]``: the runtime
    then resolves each URL's host (``check_url``) after validation and re-prompts when one
    is refused, since resolution is I/O and validation is pure.
    """

    def validate(self, content: object) -> ValidationResult: ...


@dataclass(frozen=True, slots=True)
class ElicitationRequest:
    """What to ask.

    Attributes:
        message: the text shown to the user.
        mode: ``"form"`` (``requested_schema`` required) or ``"url"`` (``url`` required).
        requested_schema: the wire schema, already down-levelled for the client's version.
        url: the page the user is sent to (checked by ``check_url`` at creation).
        validator: validates accepted content (an ``AnswerValidator``); defaults to strict
            validation against ``requested_schema``.
        timeout: this question's deadline in seconds, from creation; the runtime clamps it
            to its policy's deadline for the mode (the server's maximum) and warns at the
            same proportion of it as of the policy's. ``None``: the policy's deadline.
            Extensions move it as they move the policy's.
        locale: the language of what the runtime itself says to the user about this question
            (re-prompt summaries, the deadline warning), one of ``"en-US"``, ``"pt-BR"``;
            ``None``: the runtime's default (:attr:`RuntimeConfig.locale`).
        meta: the request's own ``_meta`` members (vendor keys such as
            ``io.erlmcp/pageUrl``), sent with every attempt of it; ``None``: no ``_meta``.

    Every way of asking (``ctx.elicit*``, :meth:`Runtime.ask`, a request built by hand) has
    its question's deadline checked here; ``timeout_name`` (not kept) is what the error names
    a bad ``timeout`` by: the caller's own parameter (``ctx.elicit`` passes ``"timeout"``).
    """

    message: str
    mode: Mode = "form"
    requested_schema: Mapping[str, Any] | None = None
    url: str | None = None
    validator: AnswerValidator | None = None
    timeout: float | None = None
    locale: str | None = None
    meta: Mapping[str, Any] | None = None
    timeout_name: InitVar[str] = "ElicitationRequest.timeout"

    def __post_init__(self, timeout_name: str) -> None:
        if not isinstance(self.message, str):
            raise TypeError("ElicitationRequest.message must be a str")
        if self.timeout is not None:
            check_timeout(timeout_name, self.timeout)
        if self.validator is not None and not callable(getattr(self.validator, "validate", None)):
            raise TypeError(
                "ElicitationRequest.validator must have a validate(content) method, got "
                f"{type(self.validator).__name__}"
            )
        if self.locale is not None and self.locale not in LOCALES:
            raise ValueError(
                f"ElicitationRequest.locale must be one of {', '.join(LOCALES)} or None, "
                f"got {self.locale!r}"
            )
        if self.meta is not None and not (
            isinstance(self.meta, Mapping) and all(isinstance(k, str) for k in self.meta)
        ):
            raise TypeError("ElicitationRequest.meta must be a mapping with str keys, or None")
        if self.mode == "form":
            if self.requested_schema is None or self.url is not None:
                raise ValueError("a form elicitation needs requested_schema and no url")
        elif self.mode == "url":
            if self.url is None or self.requested_schema is not None:
                raise ValueError("a url elicitation needs url and no requested_schema")
        else:
            raise ValueError(f"mode must be 'form' or 'url', got {self.mode!r}")


@dataclass(frozen=True, slots=True)
class ElicitationInfo:
    """A status row (``get_elicitation_status``, ``list_elicitations``). Never holds content."""

    id: str
    mode: Mode
    status: str
    client: str
    created_at: float
    deadline: float
    sent_at: float | None
    ended_at: float | None
    extensions_used: int
    reprompts_used: int
    outcome: str | None
    """The outcome's type name (``Accepted``, ``TimedOut``…) once terminal."""


class ElicitationHandle:
    """The waiter's side of one elicitation: ``await handle.outcome()`` yields exactly once.

    Once it has the outcome, the handle keeps only that object and lets go of the
    elicitation's record (its request, its peer).

    Attributes:
        id: The elicitation's id; empty when the client cannot be asked in this mode
            (:attr:`unsupported`): nothing was created.
        mode: ``"form"`` or ``"url"``.
    """

    __slots__ = ("_outcome", "_record", "id", "mode")

    def __init__(self, elicitation_id: str, mode: Mode, record: Record | None,
                 outcome: Outcome | None = None) -> None:  # fmt: skip
        self.id = elicitation_id
        self.mode = mode
        self._record = record
        self._outcome = outcome

    async def outcome(self) -> Outcome:
        """Wait for the one outcome: ``Accepted | Declined | Cancelled | TimedOut |
        Unsupported | Failed``. Never hangs: deadlines, owner exit and actor restarts all
        resolve it."""
        if self._outcome is None:
            record = self._record
            assert record is not None
            if record.outcome is None:
                # Parked on the record itself (no Event: most memory goes to pending ones);
                # the Resolve effect reschedules every waiter.
                task = trio.lowlevel.current_task()
                if record.waiters is None:
                    record.waiters = []
                waiters = record.waiters
                waiters.append(task)

                def abort(_: Any) -> trio.lowlevel.Abort:
                    waiters.remove(task)
                    return trio.lowlevel.Abort.SUCCEEDED

                await trio.lowlevel.wait_task_rescheduled(abort)
            else:
                await trio.lowlevel.checkpoint()
            self._outcome = record.outcome
            self._record = None
        else:
            await trio.lowlevel.checkpoint()
        assert self._outcome is not None
        return self._outcome

    @property
    def unsupported(self) -> Unsupported | None:
        """The outcome when the client cannot be asked in this mode (nothing was created and
        nothing sent); ``None`` for an elicitation that was created."""
        outcome = self._outcome
        return outcome if isinstance(outcome, Unsupported) else None

    def outcome_nowait(self) -> Outcome:
        """The outcome if already decided.

        Raises:
            trio.WouldBlock: still pending.
        """
        if self._outcome is None:
            if self._record is None or self._record.outcome is None:
                raise trio.WouldBlock
            self._outcome = self._record.outcome
            self._record = None
        return self._outcome

    def __repr__(self) -> str:
        return f"<ElicitationHandle {self.id} {self.mode}>"


_TASKS: Final = TaskPolicy()  # the defaults of the task fields


class RuntimeConfig(BaseModel):
    """Server-owned policy (the policy defaults). A peer can never raise any of these limits."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    form_deadline_s: float = Field(300.0, gt=0, allow_inf_nan=False)
    url_deadline_s: float = Field(600.0, gt=0, allow_inf_nan=False)
    warn_before_s: float = Field(60.0, ge=0, allow_inf_nan=False)
    max_extensions: int = Field(2, ge=0)
    extension_s: float = Field(300.0, gt=0, allow_inf_nan=False)
    max_reprompts: int = Field(3, ge=0)
    rate: int = Field(10, gt=0, description="new elicitations per client per rate_window_s")
    rate_window_s: float = Field(60.0, gt=0, allow_inf_nan=False)
    max_pending_per_client: int = Field(100, gt=0)
    max_pending_global: int | None = Field(None, gt=0)
    answer_bytes: int = Field(1 << 20, gt=0)
    schema_bytes: int = Field(64 << 10, gt=0)
    message_bytes: int = Field(16 << 10, gt=0)
    frame_bytes: int = Field(4 << 20, gt=0)
    retention_max_records: int = Field(10_000, ge=1)
    retention_max_age_s: float = Field(900.0, gt=0, allow_inf_nan=False)
    url_dev: bool = Field(False, description="allow http:// to loopback hosts (development)")
    call_timeout_s: float = Field(5.0, gt=0, allow_inf_nan=False)
    max_restarts: int = Field(5, ge=0)
    restart_period_s: float = Field(10.0, gt=0, allow_inf_nan=False)
    store: str = Field(
        "memory", description="shared state: 'memory' (embedded) or redis://HOST:PORT/DB"
    )
    sensitive_names: tuple[str, ...] = Field(
        (), description="names added to the sensitive-name list (core/sensitive.py)"
    )
    not_sensitive_names: tuple[str, ...] = Field(
        (), description="names removed from the sensitive-name list"
    )
    locale: str = Field(
        DEFAULT_LOCALE,
        description="the language of the runtime's texts for a client that asks for none "
        "(en-US or pt-BR)",
    )
    task_form_deadline_s: float = Field(
        TASK_LIFECYCLE.form_deadline_s,
        gt=0,
        allow_inf_nan=False,
        description="initial deadline of a form question a task asks (docs/tasks.md)",
    )
    task_url_deadline_s: float = Field(
        TASK_LIFECYCLE.url_deadline_s,
        gt=0,
        allow_inf_nan=False,
        description="initial deadline of a URL-mode question a task asks",
    )
    task_warn_before_s: float = Field(
        TASK_LIFECYCLE.warn_before_s,
        ge=0,
        allow_inf_nan=False,
        description="how long before a task question's deadline its task's statusMessage warns",
    )
    task_ttl_s: float = Field(
        _TASKS.ttl_s,
        gt=0,
        allow_inf_nan=False,
        description="a task's life from its creation (ttlMs); then it is cancelled and forgotten",
    )
    task_poll_interval_s: float = Field(
        _TASKS.poll_interval_s,
        gt=0,
        allow_inf_nan=False,
        description="the polling interval suggested to clients (pollIntervalMs)",
    )
    max_tasks_per_client: int = Field(
        _TASKS.max_per_client, gt=0, description="tasks one principal holds at most"
    )
    max_tasks: int = Field(_TASKS.max_total, gt=0, description="tasks held in all at most")
    task_page_links: bool = Field(
        True,
        description="each form question of a task gets a link to the hosted page that answers "
        "it (io.erlmcp/pageUrl in its _meta; docs/tasks.md); only where the page is served",
    )

    @field_validator("locale")
    @classmethod
    def _known_locale(cls, value: str) -> str:
        if value not in LOCALES:
            raise ValueError(f"must be one of {', '.join(LOCALES)}")
        return value

    @model_validator(mode="after")
    def _check_policy(self) -> RuntimeConfig:
        self.to_policy()  # the core's own checks, surfaced as a validation error
        parse_store_url(self.store)
        return self

    def to_policy(self) -> Policy:
        """The pure core's policy objects."""
        return Policy(
            lifecycle=LifecyclePolicy(
                form_deadline_s=self.form_deadline_s,
                url_deadline_s=self.url_deadline_s,
                warn_before_s=self.warn_before_s,
                max_extensions=self.max_extensions,
                extension_s=self.extension_s,
                max_reprompts=self.max_reprompts,
            ),
            rate=RatePolicy(
                rate=self.rate,
                window_s=self.rate_window_s,
                capacity=self.rate,
                max_pending_per_client=self.max_pending_per_client,
                max_pending_global=self.max_pending_global,
            ),
            sizes=SizePolicy(
                answer_bytes=self.answer_bytes,
                schema_bytes=self.schema_bytes,
                message_bytes=self.message_bytes,
                frame_bytes=self.frame_bytes,
            ),
            retention=RetentionPolicy(
                max_records=self.retention_max_records, max_age_s=self.retention_max_age_s
            ),
            task_lifecycle=LifecyclePolicy(
                form_deadline_s=self.task_form_deadline_s,
                url_deadline_s=self.task_url_deadline_s,
                warn_before_s=self.task_warn_before_s,
                max_extensions=self.max_extensions,
                extension_s=self.extension_s,
                max_reprompts=self.max_reprompts,
            ),
            tasks=TaskPolicy(
                ttl_s=self.task_ttl_s,
                poll_interval_s=self.task_poll_interval_s,
                max_per_client=self.max_tasks_per_client,
                max_total=self.max_tasks,
            ),
        )
