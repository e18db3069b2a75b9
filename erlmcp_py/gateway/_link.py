"""One downstream session's upstream: a supervised connection, restarted when it is lost.

Theory of operation
-------------------
An :class:`UpstreamLink` runs a :class:`~supervisors.Supervisor` with one permanent child: an
*incarnation* of the upstream connection (:meth:`UpstreamLink._incarnation`). The incarnation
opens the wire (:func:`~erlmcp_py.gateway._upstream.open_upstream_wire`: the server process,
or an HTTP session), a :class:`~erlmcp_py.client.ClientSession` over it, and shakes hands with
the capabilities and ``clientInfo`` the link was given; it is ready (the supervisor's
``started``) once the upstream answered its handshake. It then lives until the wire is lost
(the process exited, its output ended, an exchange failed), and exits with
:class:`UpstreamExited`, which the supervisor counts as a crash and restarts, after a backoff
(:meth:`~erlmcp_py.gateway._upstream.UpstreamPolicy.backoff`: doubling per restart within the
restart period). More than ``max_restarts`` restarts within ``restart_period_s`` and the
supervisor escalates (``RestartIntensityExceeded``): the link gives up, and every request
after that is answered with that reason (:class:`UpstreamGone`).

When an incarnation ends, everything of it ends with it: the requests it was answering fail
with :class:`~erlmcp_py.client.ConnectionLost` (the session's calls answer their client with
an error), and its nursery -- where the upstream's requests to the client are being answered,
and where its URL-mode questions wait for their completion -- is cancelled, so the
elicitations it asked end (their owner task is gone) and the client is told to drop them.

The handshake is the upstream's era's (:func:`~erlmcp_py.gateway._stateless_upstream.shake_hands`):
``initialize``, or ``server/discover`` for a 2026-07-28 upstream, whose connection then speaks
2026-07-28 (``connection.session.stateless``). The first incarnation is the downstream
``initialize``: :meth:`UpstreamLink.run` reports
ready once it is up (with :attr:`UpstreamLink.initialize_result`), or raises
:class:`~supervisors.StartError` whose cause says why it could not start
(:class:`UpstreamRefused` when the upstream answered ``initialize`` with an error). A restarted
incarnation shakes hands again with the same parameters and hands the new connection to
``on_connected``, which puts back what the client had set (log level, subscriptions).

Every link holds one of the server's :class:`UpstreamSlots` while it runs, so the gateway never
runs more than ``max_upstreams`` upstream connections (processes, for a command).
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import structlog
import trio

from erlmcp_py.client import (
    ClientRequestError,
    ClientSession,
    ServerRequest,
    open_client_session,
)
from erlmcp_py.core.versions import V_2026_07_28
from erlmcp_py.gateway._stateless_upstream import shake_hands
from erlmcp_py.gateway._upstream import (
    Upstream,
    UpstreamPolicy,
    WatchedWire,
    open_upstream_wire,
)
from supervisors import (
    BRUTAL_KILL,
    ChildSpec,
    RestartIntensityExceeded,
    StartError,
    Supervisor,
)

__all__ = [
    "Connection",
    "LinkEvents",
    "UpstreamExited",
    "UpstreamGone",
    "UpstreamLink",
    "UpstreamRefused",
    "UpstreamSlots",
    "start_failure",
]

log = structlog.get_logger("erlmcp.gateway")


class UpstreamGone(Exception):
    """No upstream connection can answer now: the link gave up, was closed, or the upstream
    did not come back in time (the message says which)."""


class UpstreamExited(Exception):
    """An incarnation's connection was lost (the message says how); the supervisor restarts
    it."""


class UpstreamRefused(Exception):
    """The upstream answered ``initialize`` with a JSON-RPC error.

    Attributes:
        error: Its error, passed on to the client as it is.
    """

    def __init__(self, error: ClientRequestError) -> None:
        super().__init__(f"the upstream refused initialize: {error.code}: {error.message}")
        self.error = error


def start_failure(exc: BaseException) -> BaseException:
    """Why a link could not start: the cause of a :class:`~supervisors.StartError`, and of an
    exception group (from the nurseries of a connection) its first leaf that is not a
    cancellation."""
    if isinstance(exc, StartError):
        return start_failure(exc.cause)
    if isinstance(exc, BaseExceptionGroup):
        leaves = [start_failure(e) for e in exc.exceptions]
        meaningful = [e for e in leaves if not isinstance(e, trio.Cancelled)]
        return (meaningful or leaves)[0]
    return exc


class UpstreamSlots:
    """The number of upstream connections a gateway may run at once.

    Args:
        limit: Most links running at once.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.in_use = 0

    def take(self) -> None:
        """Take a slot (give it back with :meth:`release`).

        Raises:
            UpstreamGone: every slot is taken.
        """
        if self.in_use >= self.limit:
            raise UpstreamGone(
                f"the gateway runs {self.limit} upstream sessions already, its limit; "
                "try again when one has ended"
            )
        self.in_use += 1

    def release(self) -> None:
        """Give back a slot taken with :meth:`take`."""
        self.in_use -= 1


@dataclass(frozen=True, slots=True, eq=False)
class Connection:
    """One incarnation of the upstream connection.

    Attributes:
        session: The client session with the upstream.
        wire: Its wire (``wire.lost`` is set when it ends).
        nursery: Lives as long as the connection: what must end with it runs there.
        number: 1 for the first incarnation, then one more per attempt to start another.
    """

    session: ClientSession
    wire: WatchedWire
    nursery: trio.Nursery
    number: int


class LinkEvents(Protocol):
    """What a link tells its downstream session (the gateway session implements it)."""

    def upstream_request(
        self, connection: Connection, request: ServerRequest
    ) -> Awaitable[Mapping[str, Any] | None]:
        """Answer a request of the upstream (called by the session's reader; awaited in a
        task of its own, cancelled when the upstream cancels the request)."""
        ...

    def upstream_notification(
        self, connection: Connection, method: str, params: Mapping[str, Any]
    ) -> None:
        """A notification of the upstream, as it arrives (called by the session's reader)."""
        ...

    async def upstream_connected(self, connection: Connection) -> None:
        """A connection is up and has shaken hands (before any request is relayed on it)."""
        ...


class UpstreamLink:
    """A downstream session's supervised upstream connection (see the module docstring).

    Args:
        upstream: Where the upstream is.
        policy: Start timeout, restart intensity and backoff, process close timeout.
        events: The downstream session.
        slots: The server's upstream slots.
        name: The supervisor's name in logs (the downstream session's id).
        protocol_version: The version asked for in ``initialize``.
        capabilities: The client capabilities declared upstream.
        client_info: The ``clientInfo`` declared upstream.
        locale: The user's locale, declared upstream in ``_meta``.
    """

    def __init__(
        self,
        upstream: Upstream,
        policy: UpstreamPolicy,
        events: LinkEvents,
        slots: UpstreamSlots,
        *,
        name: str,
        protocol_version: str,
        capabilities: Mapping[str, Any],
        client_info: Mapping[str, Any],
        locale: str | None = None,
    ) -> None:
        self.upstream = upstream
        self.policy = policy
        self._events = events
        self._slots = slots
        self._requested = protocol_version
        self._options: dict[str, Any] = {
            "protocol_version": V_2026_07_28 if upstream.era == V_2026_07_28 else protocol_version,
            "capabilities": dict(capabilities),
            "client_info": dict(client_info),
            "locale": locale,
        }
        self.initialize_result: dict[str, Any] = {}
        self.current: Connection | None = None
        self._changed = trio.Event()
        self._gone: str | None = None
        self._attempts: list[float] = []  # when each incarnation began, for the backoff
        self._starting: set[trio.CancelScope] = set()
        self._incarnations = 0  # incarnations begun, the first one included
        self._supervisor = Supervisor(
            [ChildSpec("upstream", self._incarnation, shutdown=BRUTAL_KILL)],
            max_restarts=policy.max_restarts,
            max_seconds=policy.restart_period_s,
            name=f"gateway-upstream:{name}",
        )
        self._log = log.bind(upstream=upstream.describe(), session=name)

    @property
    def gone(self) -> bool:
        """Whether the link was closed or gave up: no connection will come any more."""
        return self._gone is not None

    @property
    def restarts(self) -> int:
        """How many times the upstream was restarted."""
        return self._supervisor.restarts["upstream"]

    # -- running ------------------------------------------------------------------------------

    async def run(
        self, *, task_status: trio.TaskStatus[Supervisor] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Run the link: ready once the first connection has shaken hands; until
        :meth:`close`, or until the supervisor gives up.

        Raises:
            UpstreamGone: every upstream slot of the server is taken.
            StartError: the first connection could not be made; its ``cause`` says why
                (:class:`UpstreamRefused`, ``OSError``, ``ConnectionLost``,
                ``trio.TooSlowError``).
        """
        self._slots.take()
        try:
            await self._supervisor.run(task_status=task_status)
        except RestartIntensityExceeded:
            policy = self.policy
            self._give_up(
                f"the upstream server was lost more than {policy.max_restarts} times "
                f"within {policy.restart_period_s:g} s; the gateway gave up on it"
            )
        finally:
            self._slots.release()
            self._give_up("the session has ended", closed=True)

    def close(self) -> None:
        """Stop the upstream connection (its process's stdin is closed, then it is killed if
        it does not exit in time). Idempotent."""
        self._give_up("the session has ended", closed=True)
        self._supervisor.request_stop()
        for scope in list(self._starting):
            scope.cancel()

    def _give_up(self, reason: str, *, closed: bool = False) -> None:
        if self._gone is None:
            self._gone = reason
            if closed:
                self._log.info("upstream_closed", restarts=self.restarts)
            else:
                self._log.error("upstream_given_up", reason=reason, restarts=self.restarts)
        self._signal()

    def _signal(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def connection(self) -> Connection:
        """The live connection; while the upstream restarts, waits for it (at most the start
        timeout and the longest backoff).

        Raises:
            UpstreamGone: the link gave up or was closed, or the upstream did not come back.
        """
        with trio.move_on_after(self.policy.start_timeout_s + self.policy.max_backoff_s):
            while True:
                if self._gone is not None:
                    raise UpstreamGone(self._gone)
                if self.current is not None:
                    return self.current
                await self._changed.wait()
        raise UpstreamGone("the upstream server is restarting and did not come back in time")

    # -- one incarnation ----------------------------------------------------------------------

    def _backoff(self) -> float:
        now = trio.current_time()
        window = self.policy.restart_period_s
        self._attempts = [t for t in self._attempts if now - t < window]
        delay = self.policy.backoff(len(self._attempts))
        self._attempts.append(now + delay)
        return delay

    async def _incarnation(self, *, task_status: trio.TaskStatus[None]) -> None:
        """One connection to the upstream (the supervisor's child; module docstring)."""
        self._incarnations += 1
        number = self._incarnations
        starting = trio.CancelScope()
        self._starting.add(starting)
        try:
            with starting:  # cancelled by close() until it has started
                delay = self._backoff()
                if delay:
                    self._log.info("upstream_backoff", seconds=round(delay, 3), incarnation=number)
                    await trio.sleep(delay)
                await self._connect(number, starting, task_status)
        finally:
            self._starting.discard(starting)

    async def _connect(
        self, number: int, starting: trio.CancelScope, task_status: trio.TaskStatus[None]
    ) -> None:
        cell: list[Connection] = []

        def on_request(request: ServerRequest) -> Awaitable[Mapping[str, Any] | None]:
            return self._events.upstream_request(cell[0], request)

        def on_notification(method: str, params: Mapping[str, Any]) -> None:
            self._events.upstream_notification(cell[0], method, params)

        policy = self.policy
        async with (
            open_upstream_wire(self.upstream, policy) as wire,
            open_client_session(
                wire,
                handler=on_request,
                on_notification=on_notification,
                cancel_timeout=policy.close_timeout_s,
                **self._options,
            ) as session,
            trio.open_nursery() as nursery,
        ):
            connection = Connection(session, wire, nursery, number)
            cell.append(connection)
            with trio.fail_after(policy.start_timeout_s):
                try:
                    result = await shake_hands(session, self.upstream.era, self._requested)
                except ClientRequestError as exc:
                    raise UpstreamRefused(exc) from None
                await self._events.upstream_connected(connection)
            if number == 1:
                self.initialize_result = result
            self._starting.discard(starting)  # from now on the supervisor stops it
            self.current = connection
            self._signal()
            self._log.info(
                "upstream_connected",
                incarnation=number,
                server=str(session.server_info.get("name", ""))[:80],
                version=session.protocol_version,
            )
            task_status.started()
            try:
                await wire.lost.wait()
            finally:
                self.current = None
                self._signal()
                nursery.cancel_scope.cancel()
            self._log.warning("upstream_lost", incarnation=number, reason=wire.reason)
        raise UpstreamExited(wire.reason)
