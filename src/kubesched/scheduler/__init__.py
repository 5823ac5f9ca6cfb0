"""The scheduler (pkg/scheduler), one module per upstream file.

scheduler.py        the Scheduler: construction, queue, cache, driving (scheduler.go)
schedule_one.py     ScheduleOne and the scheduling cycle (schedule_one.go)
schedule_pod.py     schedulePod: the nodes that fit, their scores, the host (schedule_one.go)
binding_cycle.py    the binding cycle: WaitOnPermit, PreBind, Bind, PostBind (schedule_one.go)
failure_handler.py  handleSchedulingFailure: the pod back to the queue, its condition, an event (schedule_one.go)
eventhandlers.py    watch events into the cache and the queue (eventhandlers.go)
observer.py         what reports learn of each attempt (kubesched's own)
"""

from kubesched.scheduler.binding_cycle import BindCaller, BindRunner
from kubesched.scheduler.eventhandlers import node_scheduling_property_changes
from kubesched.scheduler.failure_handler import MAX_MESSAGE_LENGTH, POD_REASON_SCHEDULER_ERROR, POD_REASON_UNSCHEDULABLE
from kubesched.scheduler.observer import AttemptObserver, NodeScores
from kubesched.scheduler.schedule_pod import (
    ERR_NO_NODES_AVAILABLE,
    MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND,
    MIN_FEASIBLE_NODES_TO_FIND,
    ScheduleResult,
    num_feasible_nodes_to_find,
)
from kubesched.scheduler.scheduler import Scheduler

__all__ = [
    "ERR_NO_NODES_AVAILABLE",
    "MAX_MESSAGE_LENGTH",
    "MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND",
    "MIN_FEASIBLE_NODES_TO_FIND",
    "POD_REASON_SCHEDULER_ERROR",
    "POD_REASON_UNSCHEDULABLE",
    "AttemptObserver",
    "BindCaller",
    "BindRunner",
    "NodeScores",
    "ScheduleResult",
    "Scheduler",
    "node_scheduling_property_changes",
    "num_feasible_nodes_to_find",
]
