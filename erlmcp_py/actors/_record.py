"""One elicitation's shell state (:class:`Record`) and the elicitation actor's messages.

A :class:`Record` owns one pure ``core.lifecycle.Elicitation`` and the I/O-side facts the
lifecycle does not model: the peer, the waiters, the JSON-RPC id of the request on the wire,
the child task's cancel scope. :meth:`Record.feed` hands an event to the lifecycle and
executes the effects that need no I/O at once (wake the waiters, move the child's scope to
the lifecycle's next wake-up, hand a reply to the caller); the others (send a request,
validate, warn, notify) are queued on ``work`` for the record's child task, which is woken to
perform them. The record decides nothing: what an answer means, which timer is next, when a
warning is due and whether a completion may come now are the lifecycle's.

The messages below are what :class:`~erlmcp_py.actors.runtime.Runtime` sends to the
elicitation actor's mailbox, each named for the runtime call that sends it
(``create_elicitation`` sends :class:`CreateElicitation`); the actor answers each in its own
task. Each message checks its
arguments when it is made, in the caller's task: a bad argument is the caller's ``TypeError``
or ``ValueError`` and never reaches the actor every user shares.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeAlias

import pydantic_core
import trio

from erlmcp_py.actors.api import ElicitationInfo, ElicitationRequest, Mode
from erlmcp_py.actors.peer import (
    AnswerTooLarge,
    Peer,
    PeerError,
    PeerGone,
    PeerResponse,
    Recorded,
)
from erlmcp_py.core.lifecycle import (
    Answer,
    AnswerRefused,
    Consented,
    Effect,
    Elicitation,
    Event,
    ExtensionGranted,
    ExtensionRefused,
    OwnerDown,
    Resolve,
    SetDeadline,
    TransportFailed,
)
from erlmcp_py.core.outcomes import Outcome, Tenant
from erlmcp_py.core.policy import check_timeout
from erlmcp_py.core.schema import RequestedSchema
from erlmcp_py.core.store_wire import StoreRecord
from supervisors import MonitorRef

if TYPE_CHECKING:
    from erlmcp_py.actors._elicitation import ElicitationActor

__all__ = [
    "AnswerElicitation",
    "CancelElicitation",
    "CompleteElicitation",
    "CreateElicitation",
    "Ended",
    "ExtendTimeout",
    "GetElicitationStatus",
    "ListElicitations",
    "Record",
    "Reply",
    "RepublishRecords",
    "ResponseRoute",
    "ended",
    "info_of",
    "info_row",
    "json_size",
    "shared_record",
    "tenant_of",
]

_ACTIONS = ("accept", "decline", "cancel")  # compared by equality: any JSON value is safe
_INFO_FIELDS: Final = tuple(f.name for f in dataclasses.fields(ElicitationInfo))
_N_INFO: Final = len(_INFO_FIELDS)


def info_row(info: ElicitationInfo) -> dict[str, Any]:
    """A status row as a plain dict (what the store keeps; ``ElicitationInfo(**row)`` again)."""
    return {name: getattr(info, name) for name in _INFO_FIELDS}


# -- what the registry keeps of an ended elicitation -------------------------------------------

Ended: TypeAlias = tuple[Any, ...]
"""An ended elicitation as the registry keeps it once its child task is done with it: its
status row's values in :class:`ElicitationInfo`'s field order, then its tenant's user,
workspace and conversation. Only strings, numbers and ``None``: the garbage collector stops
tracking such a tuple, and it holds nothing of the request, the peer or the waiters (the
waiter's handle keeps the outcome object)."""


def ended(record: Record) -> Ended:
    """What the registry keeps of ``record`` once it has ended and its child is done."""
    tenant = record.tenant
    return (*record.row(), tenant.user, tenant.workspace, tenant.conversation)


def info_of(entry: Record | Ended) -> ElicitationInfo:
    """The status row of a registry entry, live or ended."""
    if isinstance(entry, Record):
        return entry.info()
    return ElicitationInfo(*entry[:_N_INFO])


def tenant_of(entry: Record | Ended) -> Tenant:
    """The tenant of a registry entry, live or ended."""
    if isinstance(entry, Record):
        return entry.tenant
    return Tenant(*entry[_N_INFO:])


def shared_record(entry: Record | Ended, replica: str) -> StoreRecord:
    """A registry entry as the store publishes it (taken when the store writes)."""
    return StoreRecord(info_row(info_of(entry)), tenant_of(entry), replica)


# -- the elicitation actor's call protocol -----------------------------------------------------


def json_size(value: Any) -> int:
    """Bytes of ``value``'s compact UTF-8 JSON encoding (how answer sizes are measured).

    Raises:
        TypeError: ``value`` has no JSON encoding.
    """
    try:
        return len(pydantic_core.to_json(value))
    except pydantic_core.PydanticSerializationError as exc:
        raise TypeError(f"the content must be JSON (a dict of JSON values): {exc}") from None


def _check_tenant(tenant: object) -> None:
    if not isinstance(tenant, Tenant):
        raise TypeError(f"tenant must be a Tenant, got {type(tenant).__name__}")


def _check_target(elicitation_id: object, tenant: object) -> None:
    if not isinstance(elicitation_id, str):
        raise TypeError(f"elicitation_id must be a str, got {type(elicitation_id).__name__}")
    _check_tenant(tenant)


@dataclass(frozen=True, slots=True)
class CreateElicitation:
    """Register a new elicitation, start its child, reply with an ``ElicitationHandle``.

    ``schema`` is the request's requestedSchema checked for the peer's version (``None`` in
    URL mode). ``charge=False``: the client was already charged a rate token for this
    question. ``for_task``: a task asks it (its deadlines are the task policy's).
    """

    request: ElicitationRequest
    schema: RequestedSchema | None
    peer: Peer
    tenant: Tenant
    owner: trio.lowlevel.Task
    client: str
    charge: bool = True
    for_task: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.request, ElicitationRequest):
            raise TypeError(
                f"request must be an ElicitationRequest, got {type(self.request).__name__}"
            )
        _check_tenant(self.tenant)
        if not isinstance(self.owner, trio.lowlevel.Task):
            raise TypeError(f"owner must be a trio task, got {type(self.owner).__name__}")
        if not isinstance(self.client, str):
            raise TypeError(
                f"the client id (client_id, else the peer's peer_id) must be a str, "
                f"got {type(self.client).__name__}"
            )


@dataclass(frozen=True, slots=True)
class GetElicitationStatus:
    """Reply with the :class:`ElicitationInfo` of one elicitation."""

    elicitation_id: str
    tenant: Tenant

    def __post_init__(self) -> None:
        _check_target(self.elicitation_id, self.tenant)


@dataclass(frozen=True, slots=True)
class ListElicitations:
    """Reply with every retained elicitation of ``tenant``."""

    tenant: Tenant

    def __post_init__(self) -> None:
        _check_tenant(self.tenant)


@dataclass(frozen=True, slots=True)
class CancelElicitation:
    """Cancel one elicitation on the server's behalf."""

    elicitation_id: str
    tenant: Tenant

    def __post_init__(self) -> None:
        _check_target(self.elicitation_id, self.tenant)


@dataclass(frozen=True, slots=True)
class ExtendTimeout:
    """Move one elicitation's deadline (``seconds=None``: the policy's extension).

    Raises:
        TypeError, ValueError: ``seconds`` is not ``None`` or a positive, finite number.
    """

    elicitation_id: str
    tenant: Tenant
    seconds: float | None

    def __post_init__(self) -> None:
        _check_target(self.elicitation_id, self.tenant)
        if self.seconds is not None:
            check_timeout("seconds", self.seconds)


@dataclass(frozen=True, slots=True)
class CompleteElicitation:
    """Complete one elicitation from the application side with ``content``, whose JSON size
    is measured here, in the caller's task.

    Raises:
        TypeError: ``content`` has no JSON encoding.
    """

    elicitation_id: str
    tenant: Tenant
    content: Any
    size: int = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        _check_target(self.elicitation_id, self.tenant)
        object.__setattr__(self, "size", json_size(self.content))


@dataclass(frozen=True, slots=True)
class AnswerElicitation:
    """Decline or cancel one elicitation on its user's behalf (the hosted page's buttons).

    Raises:
        ValueError: ``action`` is neither ``"decline"`` nor ``"cancel"``.
    """

    elicitation_id: str
    tenant: Tenant
    action: str

    def __post_init__(self) -> None:
        _check_target(self.elicitation_id, self.tenant)
        if self.action not in ("decline", "cancel"):
            raise ValueError(f"action must be 'decline' or 'cancel', got {self.action!r}")


@dataclass(frozen=True, slots=True)
class RepublishRecords:
    """Publish every record to the store again (a cast: the store lost this replica's)."""


# -- the record --------------------------------------------------------------------------------

Reply: TypeAlias = ExtensionGranted | ExtensionRefused | AnswerRefused
"""An effect that answers the caller of the event (an ``Extend``, a ``Complete``, a
``Dismiss``), returned by :meth:`Record.feed` rather than executed."""
_REPLIES: Final = (ExtensionGranted, ExtensionRefused, AnswerRefused)


class ResponseRoute:
    """What the peer calls with the answer to one attempt: the record and that attempt's id.

    A two-slot object rather than a closure, because the peer holds one for every pending
    elicitation.
    """

    __slots__ = ("record", "rid")

    def __init__(self, record: Record, rid: str) -> None:
        self.record = record
        self.rid = rid

    def __call__(self, response: PeerResponse) -> None:
        self.record.on_response(self.rid, response)


class Record:
    """One elicitation: its lifecycle, its peer, its waiters. Fed by :meth:`feed`.

    ``outcome`` is set by the :class:`Resolve` effect, which the lifecycle emits exactly
    when it enters a terminal status. Calling a record is the abort of its parked child
    (see :meth:`__call__`).
    """

    __slots__ = (
        "actor",
        "client",
        "core",
        "ended_at",
        "id",
        "mode",
        "monitor",
        "outcome",
        "owner_down",
        "peer",
        "performing",
        "request",
        "rid",
        "schema",
        "scope",
        "tenant",
        "waiter",
        "waiters",
        "work",
    )

    def __init__(
        self,
        actor: ElicitationActor,
        elicitation_id: str,
        request: ElicitationRequest,
        schema: RequestedSchema | None,
        peer: Peer,
        tenant: Tenant,
        client: str,
        now: float,
        *,
        for_task: bool = False,
    ) -> None:
        self.actor = actor
        self.id = elicitation_id
        self.mode: Mode = request.mode
        self.request = request
        self.schema = schema  # the requestedSchema as checked for the peer (form mode)
        self.peer = peer
        self.tenant = tenant
        self.client = client
        self.core = Elicitation(
            actor.policy.lifecycle_for(task=for_task),
            now,
            mode=request.mode,
            timeout_s=request.timeout,
        )
        self.work: list[Effect] = []  # effects queued for the child
        self.waiters: list[trio.lowlevel.Task] | None = None  # ElicitationHandle.outcome()
        self.outcome: Outcome | None = None
        self.waiter: trio.lowlevel.Task | None = None  # the child, while parked
        self.scope: trio.CancelScope | None = None  # the child's deadline scope
        self.rid: str | None = None  # JSON-RPC id of our latest elicitation/create
        self.monitor: MonitorRef | None = None
        self.owner_down = False  # the owner exited; the child feeds OwnerDown
        self.performing = False  # the child performs live effects, one after another, till it parks
        self.ended_at: float | None = None

    # -- feeding the lifecycle (synchronous: callable from any trio task) -------------------

    def start(self) -> None:
        """Start the lifecycle: the deadline runs and the first request is queued."""
        self.apply(self.core.start())

    def feed(self, event: Event) -> tuple[Reply, ...]:
        """Hand ``event`` to the lifecycle and :meth:`apply` its effects."""
        return self.apply(self.core.handle(event))

    def apply(self, effects: list[Effect]) -> tuple[Reply, ...]:
        """Execute or queue ``effects``, in order, then wake the child.

        Returns:
            The replies among the effects, for the caller of the event.
        """
        replies: tuple[Reply, ...] = ()
        for effect in effects:
            if isinstance(effect, Resolve):
                self.outcome = effect.outcome
                waiters, self.waiters = self.waiters, None
                for task in waiters or ():
                    trio.lowlevel.reschedule(task)
                self.actor.on_resolved(self)
            elif isinstance(effect, SetDeadline):
                self.move_scope()
            elif isinstance(effect, _REPLIES):
                replies = (*replies, effect)
            elif not isinstance(effect, Consented):  # a consent is only logged (on_response)
                self.work.append(effect)
        self.wake()
        self.actor.changed(self.id, self)
        return replies

    def on_response(self, rid: str, response: PeerResponse) -> None:
        """The peer's answer to our request ``rid`` (called once, synchronously)."""
        if rid != self.rid or self.outcome is not None:
            return  # an answer to an earlier attempt, or too late: ignored
        if isinstance(response, PeerGone):
            self.feed(TransportFailed("client gone"))
            return
        if isinstance(response, PeerError):
            self.feed(TransportFailed(f"client error {response.code}: {response.message}"))
            return
        if isinstance(response, AnswerTooLarge):
            detail = f"answer of at least {response.size} bytes > frame limit {response.limit}"
            self.feed(TransportFailed(detail, reason="answer_too_large"))
            return
        recorded = isinstance(response, Recorded)
        if isinstance(response, Recorded):
            response = response.result
        action = response.get("action") if isinstance(response, Mapping) else None
        if action not in _ACTIONS:
            self.feed(TransportFailed("invalid response: action must be accept|decline|cancel"))
            return
        actor = self.actor
        if not recorded:
            # From the request reaching the client (or, if it answered before our send
            # returned, from creation) to the human's answer.
            sent_at = self.core.sent_at
            asked_at = self.core.created_at if sent_at is None else sent_at
            actor.metrics.on_answer_latency(actor.now() - asked_at)
        content = response.get("content") if action == "accept" else None
        effects = self.core.handle(Answer(action, content))
        if effects and isinstance(effects[0], Consented):
            actor.event("consented", self)
        else:
            actor.event("answered", self, action=action)
        self.apply(effects)

    def on_owner_down(self, _task: trio.lowlevel.Task) -> None:
        """The owner exited (the monitor hub's callback): signal the child, which feeds
        ``OwnerDown`` itself."""
        self.monitor = None
        if self.outcome is None:
            self.owner_down = True
            if self.scope is not None:
                self.scope.cancel()
            self.wake()

    def feed_owner_down(self) -> None:
        """The child's half of :meth:`on_owner_down`."""
        self.owner_down = False
        self.feed(OwnerDown())

    # -- the child's timer and sleep -----------------------------------------------------------

    def set_performing(self, performing: bool) -> None:
        """The child starts or stops performing live effects: the scope's deadline follows."""
        if self.performing is not performing:
            self.performing = performing
            self.move_scope()

    def move_scope(self) -> None:
        """Set the child's scope deadline to the lifecycle's next wake-up (while the child
        performs a live effect, the one that may interrupt it)."""
        scope = self.scope
        if scope is not None:
            scope.deadline = self.core.next_wakeup(busy=self.performing)

    def wake(self) -> None:
        """Reschedule the parked child (a no-op while it runs)."""
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            trio.lowlevel.reschedule(waiter)

    def __call__(self, _raise_cancel: Any) -> trio.lowlevel.Abort:
        """trio's abort function of the parked child (``wait_task_rescheduled(record)``):
        the child was cancelled while parked, so it is no longer there to wake.

        The record itself is the abort function, rather than a bound method made at each
        park, because the child of every pending elicitation is parked.
        """
        self.waiter = None
        return trio.lowlevel.Abort.SUCCEEDED

    def info(self) -> ElicitationInfo:
        """This elicitation's status row."""
        return ElicitationInfo(*self.row())

    def row(self) -> tuple[Any, ...]:
        """The values of this elicitation's status row, in :class:`ElicitationInfo`'s field
        order (what :func:`ended` keeps: no row object is built for it)."""
        core = self.core
        outcome = self.outcome
        return (
            self.id,
            self.mode,
            core.status.value,
            self.client,
            core.created_at,
            core.deadline,
            core.sent_at,
            self.ended_at,
            core.extensions_used,
            core.reprompts_used,
            None if outcome is None else type(outcome).__name__,
        )
