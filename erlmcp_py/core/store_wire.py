"""The store's wire format, what replicas share through it: its address, key names, the
bucket's integers, and the wire form of records and forwarded calls. Pure: the store client
(``erlmcp_py.store``) does the I/O.

Theory of operation
-------------------

A store URL (:func:`parse_store_url`) names either the embedded in-memory store
(``memory``) or a Redis/Valkey server (``redis://HOST:PORT/DB``). Every key the server holds
starts with the URL's ``prefix`` (:class:`Keys`), so several deployments can share one
database.

Rate limits run on the server in a script with the same token bucket as
``core.ratelimit``: :class:`BucketParams` turns a :class:`~erlmcp_py.core.policy.RatePolicy`
into the script's integers (microseconds and token-microseconds, exact below 2**53), and
:func:`retry_after_s` turns the script's wait back into a ``Retry-After`` rounded up to the
next whole microsecond, as the in-memory limiter does.

A record is an elicitation's status row as its holder replica published it, with the
tenant and the replica. When a replica dies, a survivor marks its live records ``dead``
(with the server's wall clock); :func:`decode_record` then reads such a record as
``failed`` with outcome ``Failed`` (reason ``runtime_restarted``), ended when it was found
dead, on the holder's clock.

Calls forwarded to the holder replica (cancel, extend, complete, and for the hosted page its
decline or cancel, ``answer``, and its status with the seconds left, ``left``) and their
replies travel as JSON; :func:`error_to_wire` and
:func:`error_from_wire` carry the runtime's errors over.

A hosted page's ticket (:class:`StoreTicket`) is what any replica needs to render the page
and check its form: the token, the question, the CSRF value, the tenant and, once bound,
the elicitation's id; never an answer. Its state (``open`` -> ``used`` -> ``closed``) is kept
beside it, so that claiming it for one answer is one atomic step in the store.

A task's record (:class:`StoreTask`, the ``io.modelcontextprotocol/tasks`` extension) is
what ``tasks/get`` answers, as the replica running the task last wrote it: the
``DetailedTask`` (:meth:`~erlmcp_py.core.tasks.TaskState.detailed`), the principal it is
bound to (another principal's task reads exactly as an unknown one, :func:`task_visible_to`)
and the replica that runs it (its *holder*). It is written before the ``CreateTaskResult``
is sent, after every change, and kept until the task's TTL runs out. A record of a durable
task also carries what another replica needs to run the task again when its holder is gone
(:class:`TaskReplay`): the call, the facts of the state the ``DetailedTask`` does not show,
how many questions were charged, and why it cannot be replayed, if it cannot. Beside the
record the store keeps the task's *journal*: every answer the task accepted, in order, each
under the question it answered (:data:`TaskAnswer`), as a replayable ``requestState`` seals
them for a 2026-07-28 replay.

Calls forwarded to a task's holder (:data:`TaskOp`: ``update``, ``cancel``) travel as JSON
too (:func:`encode_task_call`); their replies are the holder's own JSON.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal
from urllib.parse import parse_qs, unquote, urlsplit

from erlmcp_py.core.errors import (
    AlreadyTerminal,
    AnswerInFlight,
    ElicitationNotFound,
    ErlmcpError,
    ExtensionDenied,
    InvalidAnswer,
    ResultTooLarge,
    StoreUnavailable,
    ValidatorError,
)
from erlmcp_py.core.outcomes import Tenant
from erlmcp_py.core.policy import RatePolicy
from erlmcp_py.core.validation import AnswerError

__all__ = [
    "BucketParams",
    "Keys",
    "StoreRecord",
    "StoreTask",
    "StoreTicket",
    "StoreUrl",
    "TaskAnswer",
    "TaskOp",
    "TaskReplay",
    "TicketState",
    "closed_ticket",
    "decode_call",
    "decode_record",
    "decode_task",
    "decode_task_answer",
    "decode_task_call",
    "decode_ticket",
    "encode_call",
    "encode_record",
    "encode_task",
    "encode_task_answer",
    "encode_task_call",
    "encode_ticket",
    "error_from_wire",
    "error_to_wire",
    "parse_store_url",
    "retry_after_s",
    "task_visible_to",
    "tenant_digest",
    "visible_to",
]

_US_PER_S: Final = 1_000_000
_EXACT: Final = 2**53  # the largest integer a Lua number (a double) holds exactly

StoreKind = Literal["memory", "redis"]


@dataclass(frozen=True, slots=True)
class StoreUrl:
    """A parsed ``--store`` value.

    Attributes:
        kind: ``"memory"`` (embedded, the default) or ``"redis"`` (Redis or Valkey).
        host: The server's host (``redis`` only).
        port: The server's port (default 6379).
        db: The database number (the URL's path, default 0).
        prefix: The first part of every key (query ``prefix``, default ``erlmcp``).
        timeout_s: The deadline of every store call (query ``timeout``, default 1 s).
        heartbeat_s: How often a replica says it is alive (query ``heartbeat``, default 1 s).
        heartbeat_ttl_s: How long a silent replica counts as alive (query ``heartbeat_ttl``,
            default 5 s): past it, a survivor fails its elicitations.
        username: The ACL user (``redis://USER:PASSWORD@HOST``), if any.
        password: The password (``redis://:PASSWORD@HOST``), if any; never shown.
    """

    kind: StoreKind = "memory"
    host: str = ""
    port: int = 6379
    db: int = 0
    prefix: str = "erlmcp"
    timeout_s: float = 1.0
    heartbeat_s: float = 1.0
    heartbeat_ttl_s: float = 5.0
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    def __str__(self) -> str:
        if self.kind == "memory":
            return "memory"
        return f"redis://{self.host}:{self.port}/{self.db}"


_QUERY = {"prefix": "prefix", "timeout": "timeout_s", "heartbeat": "heartbeat_s",
          "heartbeat_ttl": "heartbeat_ttl_s"}  # fmt: skip


def parse_store_url(text: str) -> StoreUrl:
    """Parse ``memory`` or ``redis://[[USER]:PASSWORD@]HOST[:PORT][/DB][?prefix=…&timeout=…
    &heartbeat=…&heartbeat_ttl=…]`` (``valkey://`` is the same).

    Raises:
        ValueError: not one of these forms, or a value out of range (the message names it,
            never the password).
    """
    if text == "memory":
        return StoreUrl()
    parts = urlsplit(text)
    if parts.scheme not in ("redis", "valkey"):
        scheme = f"a {parts.scheme}: URL" if parts.scheme else repr(text)
        raise ValueError(f"a store is 'memory' or redis://HOST:PORT/DB, got {scheme}")
    if not parts.hostname:
        raise ValueError("the store URL names no host")
    try:
        port = parts.port or 6379
    except ValueError:
        raise ValueError("the store URL has a bad port") from None
    path = parts.path.strip("/")
    if path and not path.isdigit():
        raise ValueError(f"the store URL's database must be a number, got {path!r}")
    fields: dict[str, Any] = {"kind": "redis", "host": parts.hostname, "port": port,
                              "db": int(path or 0)}  # fmt: skip
    if parts.password:
        fields["password"] = unquote(parts.password)
        fields["username"] = unquote(parts.username) if parts.username else None
    elif parts.username:
        raise ValueError("the store URL names a user without a password")
    for key, values in parse_qs(parts.query, keep_blank_values=True, strict_parsing=False).items():
        if key not in _QUERY:
            raise ValueError(f"unknown store URL option {key!r} (known: {', '.join(_QUERY)})")
        value = values[-1]
        if key == "prefix":
            if not value or not value.replace("-", "").replace("_", "").isalnum():
                raise ValueError("prefix must be letters, digits, '-' or '_'")
            fields["prefix"] = value
            continue
        try:
            seconds = float(value)
        except ValueError:
            raise ValueError(f"store URL option {key} must be seconds, got {value!r}") from None
        if not (seconds > 0 and math.isfinite(seconds)):
            raise ValueError(f"store URL option {key} must be a positive number of seconds")
        fields[_QUERY[key]] = seconds
    url = StoreUrl(**fields)
    if url.heartbeat_ttl_s <= url.heartbeat_s:
        raise ValueError("heartbeat_ttl must be longer than heartbeat")
    return url


@dataclass(frozen=True, slots=True)
class Keys:
    """The names of everything a deployment keeps in the store, under ``prefix``."""

    prefix: str

    def bucket(self, client: str) -> str:
        """A client's token bucket (a hash: ``level``, ``at``)."""
        return f"{self.prefix}:bucket:{client}"

    @property
    def replicas(self) -> str:
        """The live replicas (a sorted set: replica → heartbeat expiry, ms)."""
        return f"{self.prefix}:replicas"

    @property
    def pending_prefix(self) -> str:
        """Per replica, its pending counts (a hash: ``c:<client>`` → n, ``#`` → total)."""
        return f"{self.prefix}:pending:"

    @property
    def live_prefix(self) -> str:
        """Per replica, the ids of its live elicitations (a set)."""
        return f"{self.prefix}:live:"

    @property
    def record_prefix(self) -> str:
        """Per elicitation, its record (a hash: ``j`` the JSON, ``w`` wall ms, ``dead``)."""
        return f"{self.prefix}:rec:"

    @property
    def index_prefix(self) -> str:
        """Per tenant digest, its elicitation ids (a sorted set by first publication)."""
        return f"{self.prefix}:idx:"

    def ticket(self, token: str) -> str:
        """A hosted page's ticket (a hash: ``j`` the JSON, ``e`` the elicitation id, ``s``
        the state; a closed one keeps only ``e`` and ``s``)."""
        return f"{self.prefix}:page:{token}"

    def task(self, task_id: str) -> str:
        """A task's record (a hash: ``j`` :func:`encode_task`'s JSON, ``h`` its holder),
        expiring with the task."""
        return f"{self.prefix}:task:{task_id}"

    def task_journal(self, task_id: str) -> str:
        """A task's journal (a list of :func:`encode_task_answer`'s JSON, oldest first),
        expiring with the task."""
        return f"{self.prefix}:taskj:{task_id}"

    @property
    def task_prefix(self) -> str:
        """Per task, its record (see :meth:`task`)."""
        return f"{self.prefix}:task:"

    @property
    def task_set_prefix(self) -> str:
        """Per replica, the ids of the durable tasks it runs (a set)."""
        return f"{self.prefix}:taskset:"

    @property
    def orphans(self) -> str:
        """The ids of durable tasks whose holder is gone, waiting for a replica to take them
        over (a set)."""
        return f"{self.prefix}:orphans"

    def channel(self, replica: str) -> str:
        """The pub/sub channel a replica listens on (forwarded calls and their replies)."""
        return f"{self.prefix}:ch:{replica}"


@dataclass(frozen=True, slots=True)
class BucketParams:
    """The token bucket of a :class:`RatePolicy` in the store script's integers.

    Attributes:
        window_us: One token, in token-microseconds (the window in microseconds).
        rate: Token-microseconds gained per microsecond.
        capacity_level: A full bucket, in token-microseconds.
        max_pending_per_client: The client cap.
        max_pending_global: The global cap, 0 for none.
    """

    window_us: int
    rate: int
    capacity_level: int
    max_pending_per_client: int
    max_pending_global: int

    @classmethod
    def from_policy(cls, policy: RatePolicy) -> BucketParams:
        """Raises:
        ValueError: the bucket does not fit the script's exact integers."""
        window_us = max(1, round(policy.window_s * _US_PER_S))
        capacity_level = policy.capacity * window_us
        if capacity_level >= _EXACT // 2:
            raise ValueError("rate window times capacity is too large for the shared store")
        return cls(
            window_us=window_us,
            rate=policy.rate,
            capacity_level=capacity_level,
            max_pending_per_client=policy.max_pending_per_client,
            max_pending_global=policy.max_pending_global or 0,
        )

    def args(self) -> list[str]:
        """The script's arguments, in its order."""
        return [str(self.window_us), str(self.rate), str(self.capacity_level),
                str(self.max_pending_per_client), str(self.max_pending_global)]  # fmt: skip


def retry_after_s(wait_us: int) -> float:
    """Seconds until a token, from the script's wait in whole microseconds: rounded up to
    the next whole microsecond, so a retry at ``now + retry_after`` is never short."""
    return (wait_us + 1) / _US_PER_S


def tenant_digest(tenant: Tenant) -> str:
    """A fixed-length key part naming one tenant (its index of elicitations)."""
    text = json.dumps([tenant.user, tenant.workspace, tenant.conversation])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class StoreRecord:
    """An elicitation's status row as the store holds it.

    Attributes:
        row: The status row's fields (``ElicitationInfo``'s), times on the holder's clock.
        tenant: Whose it is.
        replica: The replica that holds it.
    """

    row: Mapping[str, Any]
    tenant: Tenant
    replica: str

    @property
    def terminal(self) -> bool:
        """Whether it has its outcome."""
        return self.row.get("outcome") is not None


def encode_record(row: Mapping[str, Any], tenant: Tenant, replica: str) -> str:
    """The JSON of a record (the store stamps it with its wall clock)."""
    return json.dumps(
        {
            "row": dict(row),
            "tenant": [tenant.user, tenant.workspace, tenant.conversation],
            "replica": replica,
        },
        separators=(",", ":"),
    )


def decode_record(text: str, wall_ms: int, dead_ms: int | None) -> StoreRecord:
    """A record from its JSON, its publication wall time and, when its replica was found
    dead at ``dead_ms`` (wall), as that death left it: a live one ends ``failed`` with
    outcome ``Failed``, ended at that time on the holder's clock.

    Raises:
        ValueError, TypeError: not a record.
    """
    data = json.loads(text)
    if not isinstance(data, dict) or not isinstance(data.get("row"), dict):
        raise TypeError("not a store record")
    user, workspace, conversation = data["tenant"]
    row = dict(data["row"])
    if dead_ms is not None and row.get("outcome") is None:
        last = row.get("sent_at") or row["created_at"]
        row.update(
            status="failed",
            outcome="Failed",
            ended_at=last + max(0, dead_ms - wall_ms) / 1000,
        )
    return StoreRecord(row, Tenant(user, workspace, conversation), str(data["replica"]))


def visible_to(record: StoreRecord | None, tenant: Tenant) -> StoreRecord | None:
    """``record`` if ``tenant`` may see it; another tenant's looks exactly like none."""
    if record is None or record.tenant != tenant:
        return None
    return record


# -- hosted page tickets -----------------------------------------------------------------------

TicketState = Literal["open", "used", "closed"]


@dataclass(frozen=True, slots=True)
class StoreTicket:
    """A hosted page's ticket as the store holds it.

    Attributes:
        token: The page's single-use token (the last part of its URL).
        url: The page's URL.
        csrf: The value the page's form must send back.
        tenant: Whose question it is: the page reaches the elicitation only as this tenant.
        message: The question's message.
        schema: The question's object schema (what the page renders and checks).
        widgets: Per field, the page's rendering facts.
        replica: The replica that opened it (and holds its elicitation).
        elicitation_id: The elicitation asked with this URL, once bound.
        state: ``open`` (answerable once bound), ``used`` (an answer is being given) or
            ``closed`` (the elicitation ended: the ticket keeps its elicitation's id and its
            state, nothing else).
        server: The name of the server that asks (the page shows it).
        tool: The tool that asks.
    """

    token: str
    url: str
    csrf: str
    tenant: Tenant
    message: str
    schema: Mapping[str, Any]
    widgets: Mapping[str, Mapping[str, Any]]
    replica: str
    elicitation_id: str | None = None
    state: TicketState = "open"
    server: str = ""
    tool: str = ""


def closed_ticket(token: str, elicitation_id: str | None) -> StoreTicket:
    """What is left of a ticket once its elicitation ended: its token, its elicitation's id
    and its state."""
    return StoreTicket(token, "", "", Tenant(""), "", {}, {}, "", elicitation_id, "closed")


def encode_ticket(ticket: StoreTicket) -> str:
    """The JSON of a ticket's fixed part (its elicitation id and state are kept beside it)."""
    return json.dumps(
        {
            "url": ticket.url,
            "csrf": ticket.csrf,
            "tenant": [ticket.tenant.user, ticket.tenant.workspace, ticket.tenant.conversation],
            "message": ticket.message,
            "schema": ticket.schema,
            "widgets": ticket.widgets,
            "replica": ticket.replica,
            "server": ticket.server,
            "tool": ticket.tool,
        },
        separators=(",", ":"),
    )


def decode_ticket(
    token: str, text: str | None, elicitation_id: str | None, state: str
) -> StoreTicket:
    """A ticket from :func:`encode_ticket`'s JSON, its elicitation id and its state; a closed
    one (``text`` ``None``) carries no question.

    Raises:
        ValueError, TypeError, KeyError: not a ticket.
    """
    checked: TicketState
    if state == "open":
        checked = "open"
    elif state == "used":
        checked = "used"
    elif state == "closed":
        checked = "closed"
    else:
        raise ValueError(f"not a ticket state: {state!r}")
    if text is None:
        if checked != "closed":
            raise ValueError("an open ticket without its question")
        return closed_ticket(token, elicitation_id)
    data = json.loads(text)
    user, workspace, conversation = data["tenant"]
    return StoreTicket(
        token=token,
        url=str(data["url"]),
        csrf=str(data["csrf"]),
        tenant=Tenant(user, workspace, conversation),
        message=str(data["message"]),
        schema=dict(data["schema"]),
        widgets=dict(data["widgets"]),
        replica=str(data["replica"]),
        elicitation_id=elicitation_id,
        state=checked,
        server=str(data.get("server", "")),  # a replica of an older release writes none
        tool=str(data.get("tool", "")),
    )


# -- tasks -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TaskReplay:
    """What another replica needs to run a durable task again, its holder being gone.

    Attributes:
        tool: The tool's name (for logs).
        call: What runs the tool again: the endpoint's own JSON (the tool's name, arguments,
            tenant, locale…), opaque to the store.
        client_id: The rate-limit key of its questions.
        protocol_version: The protocol version of the request that created it.
        capabilities: What the client declared on the latest request about it.
        required: The tool runs only as a task.
        issued: Every key the task ever used for an input request.
        cancel_requested: Whether its client asked to cancel it.
        message_key: The input request its ``statusMessage`` is about, if any.
        charged: How many of its questions its client was charged a rate token for.
        blocked: Why it cannot be run again (``url_elicitation``: it asked a question in URL
            mode, which only its holder could receive), or ``None``.
    """

    tool: str
    call: Mapping[str, Any]
    client_id: str
    protocol_version: str
    capabilities: Mapping[str, Any]
    required: bool = False
    issued: tuple[str, ...] = ()
    cancel_requested: bool = False
    message_key: str | None = None
    charged: int = 0
    blocked: str | None = None


@dataclass(frozen=True, slots=True)
class StoreTask:
    """A task's record as the store holds it.

    Attributes:
        task_id: The task's id.
        detailed: Its ``DetailedTask`` (what ``tasks/get`` answers, without ``resultType``).
        principal: The principal it is bound to.
        replica: The replica that runs (or ran) it: its holder.
        replay: What running it again takes (a durable task), or ``None``.
    """

    task_id: str
    detailed: Mapping[str, Any]
    principal: str
    replica: str
    replay: TaskReplay | None = None

    @property
    def terminal(self) -> bool:
        """Whether the task had ended when this was written."""
        return self.detailed.get("status") in ("completed", "failed", "cancelled")

    @property
    def durable(self) -> bool:
        """Whether another replica takes the task over when its holder is gone."""
        return self.replay is not None


def encode_task(task: StoreTask) -> str:
    """The JSON of a task's record."""
    data: dict[str, Any] = {
        "id": task.task_id,
        "task": dict(task.detailed),
        "principal": task.principal,
        "replica": task.replica,
    }
    replay = task.replay
    if replay is not None:
        data["replay"] = {
            "tool": replay.tool,
            "call": dict(replay.call),
            "client": replay.client_id,
            "version": replay.protocol_version,
            "caps": dict(replay.capabilities),
            "required": replay.required,
            "issued": list(replay.issued),
            "cancel": replay.cancel_requested,
            "messageKey": replay.message_key,
            "charged": replay.charged,
            "blocked": replay.blocked,
        }
    return json.dumps(data, separators=(",", ":"))


def decode_task(text: str, holder: str | None = None) -> StoreTask:
    """A task's record from :func:`encode_task`'s JSON; ``holder``, when the store keeps it
    beside the record, names the replica that holds it now (it may have taken it over).

    Raises:
        ValueError, TypeError, KeyError: not a task's record.
    """
    data = json.loads(text)
    if not isinstance(data, dict) or not isinstance(data.get("task"), dict):
        raise TypeError("not a task's record")
    for name in ("id", "principal", "replica"):
        if not isinstance(data.get(name), str):
            raise TypeError(f"a task's record needs a string {name}")
    replay = None
    raw = data.get("replay")
    if raw is not None:
        if not isinstance(raw, dict):
            raise TypeError("a task's replay facts are an object")
        charged = raw["charged"]
        if type(charged) is not int:
            raise TypeError("charged must be an integer")
        message_key, blocked = raw.get("messageKey"), raw.get("blocked")
        replay = TaskReplay(
            tool=str(raw["tool"]),
            call=dict(raw["call"]),
            client_id=str(raw["client"]),
            protocol_version=str(raw["version"]),
            capabilities=dict(raw["caps"]),
            required=bool(raw["required"]),
            issued=tuple(str(key) for key in raw["issued"]),
            cancel_requested=bool(raw["cancel"]),
            message_key=None if message_key is None else str(message_key),
            charged=charged,
            blocked=None if blocked is None else str(blocked),
        )
    return StoreTask(data["id"], data["task"], data["principal"], holder or data["replica"], replay)


def task_visible_to(task: StoreTask | None, principal: str) -> StoreTask | None:
    """``task`` if ``principal`` may see it; another principal's looks exactly like none."""
    if task is None or task.principal != principal:
        return None
    return task


TaskAnswer = tuple[str | None, str, Mapping[str, Any]]
"""One answer of a task's journal: the key of the input request it answered (``None`` for an
answer of a call's own rounds before it became the task), the question it answered (what a
replay recognizes a request by: a digest of its method and params) and the response."""


def encode_task_answer(answer: TaskAnswer) -> str:
    """The JSON of one answer of a task's journal."""
    key, question, response = answer
    return json.dumps([key, question, dict(response)], separators=(",", ":"))


def decode_task_answer(text: str) -> TaskAnswer:
    """One answer of a task's journal from :func:`encode_task_answer`'s JSON.

    Raises:
        ValueError, TypeError: not an answer.
    """
    data = json.loads(text)
    if not (isinstance(data, list) and len(data) == 3):
        raise TypeError("an answer is [key, question, response]")
    key, question, response = data
    if not (key is None or isinstance(key, str)) or not isinstance(question, str):
        raise TypeError("an answer's key is a string or null, its question a string")
    if not isinstance(response, dict):
        raise TypeError("an answer's response is an object")
    return key, question, response


TaskOp = Literal["update", "cancel"]


def encode_task_call(
    op: TaskOp, task_id: str, principal: str, argument: Any = None
) -> dict[str, Any]:
    """A ``tasks/update`` (``argument``: its ``inputResponses`` and the request's declared
    capabilities) or ``tasks/cancel`` to forward to the task's holder."""
    return {"op": op, "id": task_id, "principal": principal, "arg": argument}


def decode_task_call(data: Mapping[str, Any]) -> tuple[TaskOp, str, str, Any]:
    """The parts of a forwarded task call.

    Raises:
        ValueError, TypeError: not a task call.
    """
    op = data.get("op")
    task_id, principal = data.get("id"), data.get("principal")
    if op not in ("update", "cancel") or not isinstance(task_id, str):
        raise ValueError("not a forwarded task call")
    if not isinstance(principal, str):
        raise TypeError("a forwarded task call names its principal")
    return op, task_id, principal, data.get("arg")


# -- forwarded calls ---------------------------------------------------------------------------

CallOp = Literal["cancel", "extend", "complete", "answer", "left"]


def encode_call(
    op: CallOp, elicitation_id: str, tenant: Tenant, argument: Any = None
) -> dict[str, Any]:
    """A call to forward to the holder (``argument``: extend's seconds, complete's content,
    answer's action: ``decline`` or ``cancel``)."""
    return {
        "op": op,
        "id": elicitation_id,
        "tenant": [tenant.user, tenant.workspace, tenant.conversation],
        "arg": argument,
    }


def decode_call(data: Mapping[str, Any]) -> tuple[CallOp, str, Tenant, Any]:
    """The parts of a forwarded call.

    Raises:
        ValueError: not a call.
    """
    op = data.get("op")
    if op not in ("cancel", "extend", "complete", "answer", "left") or not isinstance(
        data.get("id"), str
    ):
        raise ValueError("not a forwarded call")
    user, workspace, conversation = data["tenant"]
    return op, data["id"], Tenant(user, workspace, conversation), data.get("arg")


def error_to_wire(exc: BaseException) -> dict[str, Any]:
    """A runtime error as JSON, for the replica that forwarded the call."""
    if isinstance(exc, ElicitationNotFound):
        return {"type": "ElicitationNotFound", "id": exc.elicitation_id}
    if isinstance(exc, AlreadyTerminal):
        return {"type": "AlreadyTerminal", "status": exc.status}
    if isinstance(exc, ExtensionDenied):
        return {"type": "ExtensionDenied", "reason": exc.reason, "max": exc.max_extensions}
    if isinstance(exc, ResultTooLarge):
        return {"type": "ResultTooLarge", "size": exc.size, "limit": exc.limit}
    if isinstance(exc, AnswerInFlight):
        return {"type": "AnswerInFlight", "id": exc.elicitation_id}
    if isinstance(exc, InvalidAnswer):
        errors = [dataclasses.asdict(e) for e in exc.errors if isinstance(e, AnswerError)]
        return {"type": "InvalidAnswer", "errors": errors, "summary": str(exc)}
    if isinstance(exc, ValidatorError):
        return {"type": "ValidatorError", "id": exc.elicitation_id, "error": exc.error_type}
    return {"type": "StoreUnavailable", "op": f"remote {type(exc).__name__}"}


def error_from_wire(data: Mapping[str, Any]) -> ErlmcpError:
    """The error :func:`error_to_wire` wrote."""
    kind = data.get("type")
    if kind == "ElicitationNotFound":
        return ElicitationNotFound(str(data["id"]))
    if kind == "AlreadyTerminal":
        return AlreadyTerminal(str(data["status"]))
    if kind == "ExtensionDenied":
        return ExtensionDenied(str(data["reason"]), int(data["max"]))
    if kind == "ResultTooLarge":
        return ResultTooLarge(int(data["size"]), int(data["limit"]))
    if kind == "AnswerInFlight":
        return AnswerInFlight(str(data["id"]))
    if kind == "InvalidAnswer":
        errors = tuple(_answer_error(e) for e in data.get("errors", ()))
        return InvalidAnswer(errors, str(data.get("summary", "")))
    if kind == "ValidatorError":
        return ValidatorError(str(data["id"]), str(data["error"]))
    return StoreUnavailable(str(data.get("op", "forward")))


def _answer_error(data: Mapping[str, Any]) -> AnswerError:
    fields = dict(data)
    expected = fields.get("expected")
    if isinstance(expected, list):
        fields["expected"] = tuple(expected)
    return AnswerError(**fields)
