"""The plugin API: everything an out-of-tree plugin needs, from one module (k8s.io/kube-scheduler/framework).

A plugin is a class deriving from the extension points it implements; each
method receives the pod as a `PodInfo` (`.pod` is the API object) and returns
a `Status`, where None means success. Between extension points of one
scheduling cycle, state lives in the `CycleState` under a key prefixed with
the plugin's name. `NodeInfo` and `Snapshot` are read-only views of the
cluster as the cycle sees it; the `Handle` (given to `new`) reaches the
cluster's objects (listers), the nominator, the clock, the pods waiting at
Permit, the profile's own framework, and the API (`handle.client`, a
`ClusterClient`).

Besides the framework: resource quantities (`parse_quantity`,
`parse_resource_list`, `to_amounts`, `format_quantity`), `EPOCH` (the datetime
a simulation's clock starts at: `handle.now()` and queue timestamps count
seconds from it), and what a plugin with
a kind of its own (a CRD) needs: `K8sStruct` and `ObjectMeta` to define it,
`register_kind` for scenarios and listers to know it, and `register_watched`
with its `APIResource` for `kubesched run` to watch it (these two load the live
mode's resource table on first use).

Enable a plugin by import path (`name: mypkg.plugins:MyPlugin`) or by an
entry point of the `kubesched.plugins` group; declare `args_type` (a dataclass
or msgspec Struct) to receive its pluginConfig args typed and checked.
See docs/plugins.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from kubesched.api.decode import register_kind
from kubesched.api.meta import K8sStruct, ObjectMeta
from kubesched.api.quantity import QuantityError, format_quantity, parse_quantity
from kubesched.api.resources import is_extended_resource_name, parse_resource_list, to_amounts
from kubesched.cluster.clock import EPOCH
from kubesched.framework.cluster_client import ClusterClient
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
    FilterVerdicts,
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
    RowScore,
    ScorePlugin,
    SummableScorePlugin,
    VectorFilterPlugin,
    VectorScorePlugin,
)
from kubesched.framework.registry import ENTRY_POINT_GROUP
from kubesched.framework.snapshot import Snapshot
from kubesched.framework.status import Code, Status
from kubesched.framework.types import NodeInfo, PodInfo, QueuedPodInfo, Resource
from kubesched.framework.waiting_pods import WaitingPod
from kubesched.plugins.helper import default_normalize_score

if TYPE_CHECKING:
    from kubesched.live.resources import Resource as APIResource
    from kubesched.live.resources import register_watched

# Names of `kubesched run`'s watched-resource table, imported when first asked for: a plugin
# loaded by `simulate` does not load the live mode. name -> (module, attribute).
_LIVE: dict[str, tuple[str, str]] = {
    "APIResource": ("kubesched.live.resources", "Resource"),
    "register_watched": ("kubesched.live.resources", "register_watched"),
}


def __getattr__(name: str) -> Any:
    where = _LIVE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(where[0]), where[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LIVE})


__all__ = [
    "ENTRY_POINT_GROUP",
    "EPOCH",
    "MAX_NODE_SCORE",
    "MIN_NODE_SCORE",
    "APIResource",
    "ActionType",
    "BindPlugin",
    "ClusterClient",
    "ClusterEvent",
    "ClusterEventWithHint",
    "Code",
    "CycleState",
    "EnqueueExtensions",
    "EventResource",
    "FilterPlugin",
    "FilterVerdicts",
    "Handle",
    "K8sStruct",
    "Lister",
    "NodeInfo",
    "NodeScoreList",
    "NotFoundError",
    "ObjectMeta",
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
    "QuantityError",
    "QueuedPodInfo",
    "QueueingHint",
    "ReservePlugin",
    "Resource",
    "RowScore",
    "ScorePlugin",
    "Snapshot",
    "Status",
    "SummableScorePlugin",
    "VectorFilterPlugin",
    "VectorScorePlugin",
    "WaitingPod",
    "default_normalize_score",
    "format_quantity",
    "is_extended_resource_name",
    "parse_quantity",
    "parse_resource_list",
    "register_kind",
    "register_watched",
    "to_amounts",
]
