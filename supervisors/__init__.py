"""supervisors — a generic OTP kernel on trio (knows nothing of MCP).

* :class:`Actor` / :class:`ActorRef` — gen_server with a bounded mailbox and calls that never
  hang: ``Busy`` at once when full, ``CallTimeout`` covering enqueue and wait,
  ``ActorGone`` for every waiter when the actor exits.
* :class:`Supervisor` / :class:`ChildSpec` — ``one_for_one``, ``one_for_all``,
  ``rest_for_one``; restart intensity per supervisor; ordered start, reverse-ordered stop;
  nested supervisors; dynamic children.
* :class:`MonitorHub` / :func:`wait_task_exit` — watch any trio task's exit (one trio
  instrument per hub, no task per watched task) and link it to a cancel scope.
"""

from supervisors._errors import (
    ActorError as ActorError,
    ActorGone as ActorGone,
    Busy as Busy,
    CallTimeout as CallTimeout,
    RestartIntensityExceeded as RestartIntensityExceeded,
    StartError as StartError,
    SupervisorError as SupervisorError,
)
from supervisors._policy import (
    ExitKind as ExitKind,
    Restart as Restart,
    RestartIntensity as RestartIntensity,
    Strategy as Strategy,
    should_restart as should_restart,
    victims as victims,
)
from supervisors.actor import (
    NOREPLY as NOREPLY,
    Actor as Actor,
    ActorRef as ActorRef,
    ErrorReply as ErrorReply,
    ReplyTo as ReplyTo,
    actor_starter as actor_starter,
    start_actor as start_actor,
)
from supervisors.monitor import (
    MonitorHub as MonitorHub,
    MonitorRef as MonitorRef,
    open_monitor_hub as open_monitor_hub,
    wait_task_exit as wait_task_exit,
)
from supervisors.supervisor import (
    BRUTAL_KILL as BRUTAL_KILL,
    ChildCounts as ChildCounts,
    ChildInfo as ChildInfo,
    ChildSpec as ChildSpec,
    Supervisor as Supervisor,
)

__all__ = [
    "Actor",
    "ActorError",
    "ActorGone",
    "ActorRef",
    "BRUTAL_KILL",
    "Busy",
    "CallTimeout",
    "ChildCounts",
    "ChildInfo",
    "ChildSpec",
    "ErrorReply",
    "ExitKind",
    "MonitorHub",
    "MonitorRef",
    "NOREPLY",
    "ReplyTo",
    "Restart",
    "RestartIntensity",
    "RestartIntensityExceeded",
    "StartError",
    "Strategy",
    "Supervisor",
    "SupervisorError",
    "actor_starter",
    "open_monitor_hub",
    "should_restart",
    "start_actor",
    "victims",
    "wait_task_exit",
]
