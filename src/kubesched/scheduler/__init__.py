"""The scheduler (pkg/scheduler), one module per upstream file.

scheduler.py      the Scheduler: construction, queue, cache, driving (scheduler.go)
schedule_one.py   the scheduling and binding cycles, failure handling (schedule_one.go)
eventhandlers.py  watch events into the cache and the queue (eventhandlers.go)
observer.py       what reports learn of each attempt (kubesched's own)
"""

from kubesched.scheduler.eventhandlers import node_scheduling_property_changes
from kubesched.scheduler.observer import AttemptObserver, NodeScores
from kubesched.scheduler.schedule_one import (
    ERR_NO_NODES_AVAILABLE,
    MAX_MESSAGE_LENGTH,
    MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND,
    MIN_FEASIBLE_NODES_TO_FIND,
    POD_REASON_SCHEDULER_ERROR,
    POD_REASON_UNSCHEDULABLE,
    BindCaller,
    BindRunner,
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
