"""The plugin API: everything an out-of-tree plugin needs, from one module (k8s.io/kube-scheduler/framework).

A plugin is a class deriving from the extension points it implements; each
method receives the pod as a `PodInfo` (`.pod` is the API object) and returns
a `Status`, where None means success. Between extension points of one
scheduling cycle, state lives in the `CycleState` under a key prefixed with
the plugin's name. `NodeInfo` and `Snapshot` are read-only views of the
cluster as the cycle sees it; the `Handle` (given to `new`) reaches the
cluster's objects (listers), the nominator, the clock, the pods waiting at
Permit, and the profile's own framework.

Enable a plugin by import path (`name: mypkg.plugins:MyPlugin`) or by an
entry point of the `kubesched.plugins` group; declare `args_type` (a dataclass
or msgspec Struct) to receive its pluginConfig args typed and checked.
See docs/plugins.md.
"""

from __future__ import annotations

from kubesched.framework.cycle_state import CycleState, NotFoundError
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from kubesched.framework.events import Resource as EventResource
from kubesched.framework.handle import Handle, Lister
from kubesched.framework.interface import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    BindPlugin,
    EnqueueExtensions,
    FilterPlugin,
    NodeScoreList,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
    VectorFilterPlugin,
    VectorScorePlugin,
)
from kubesched.framework.registry import ENTRY_POINT_GROUP
from kubesched.framework.snapshot import Snapshot
from kubesched.framework.status import Code, Status
from kubesched.framework.types import NodeInfo, PodInfo, QueuedPodInfo, Resource
from kubesched.framework.waiting_pods import WaitingPod
from kubesched.plugins.helper import default_normalize_score

__all__ = [
    "ENTRY_POINT_GROUP",
    "MAX_NODE_SCORE",
    "MIN_NODE_SCORE",
    "ActionType",
    "BindPlugin",
    "ClusterEvent",
    "ClusterEventWithHint",
    "Code",
    "CycleState",
    "EnqueueExtensions",
    "EventResource",
    "FilterPlugin",
    "Handle",
    "Lister",
    "NodeInfo",
    "NodeScoreList",
    "NotFoundError",
    "PermitPlugin",
    "Plugin",
    "PodInfo",
    "PostBindPlugin",
    "PostFilterPlugin",
    "PostFilterResult",
    "PreBindPlugin",
    "PreEnqueuePlugin",
    "PreFilterExtensions",
    "PreFilterPlugin",
    "PreFilterResult",
    "PreScorePlugin",
    "QueueSortPlugin",
    "QueuedPodInfo",
    "QueueingHint",
    "ReservePlugin",
    "Resource",
    "ScorePlugin",
    "Snapshot",
    "Status",
    "VectorFilterPlugin",
    "VectorScorePlugin",
    "WaitingPod",
    "default_normalize_score",
]
