"""The JSON of k8s.io/kube-scheduler/extender/v1, both ways.

The Go types carry no json tags, so their fields travel under their Go names (`Pod`, `Nodes`,
`NodeNames`, ...), while the Pod and Node objects inside are ordinary Kubernetes JSON (camelCase,
which msgspec gives us from the structs' rename). Go's encoder writes nil pointers, slices and
maps as `null` and sorts map keys; we do the same so that an extender sees what the reference
sends.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec

from kubesched.api.core import Node, Pod
from kubesched.extender.gojson import INT64, STRING, map_of, raw_object, slice_of, struct

_encoder = msgspec.json.Encoder()

# ---------------------------------------------------------------- requests


def extender_args(pod: Pod, nodes: Sequence[Node], node_cache_capable: bool) -> bytes:
    """ExtenderArgs: NodeNames when the extender caches nodes, else the whole v1.NodeList."""
    if node_cache_capable:
        return _encoder.encode({"Pod": pod, "Nodes": None, "NodeNames": [n.metadata.name for n in nodes]})
    return _encoder.encode({"Pod": pod, "Nodes": node_list(nodes), "NodeNames": None})


def node_list(nodes: Sequence[Node]) -> dict[str, Any]:
    """A v1.NodeList: empty TypeMeta is omitted, ListMeta is not (no omitempty on a struct)."""
    return {"metadata": {}, "items": list(nodes) if nodes else None}


def preemption_args(pod: Pod, victims: Mapping[str, tuple[Sequence[Pod], int]], node_cache_capable: bool) -> bytes:
    """ExtenderPreemptionArgs: MetaVictims (UIDs only) for node-caching extenders, else whole pods."""
    nodes = sorted(victims)
    if node_cache_capable:
        meta = {
            n: {"Pods": [{"UID": p.metadata.uid} for p in victims[n][0]], "NumPDBViolations": victims[n][1]}
            for n in nodes
        }
        return _encoder.encode({"Pod": pod, "NodeNameToVictims": None, "NodeNameToMetaVictims": meta})
    full = {n: {"Pods": list(victims[n][0]), "NumPDBViolations": victims[n][1]} for n in nodes}
    return _encoder.encode({"Pod": pod, "NodeNameToVictims": full, "NodeNameToMetaVictims": None})


def binding_args(name: str, namespace: str, uid: str, node: str) -> bytes:
    return _encoder.encode({"PodName": name, "PodNamespace": namespace, "PodUID": uid, "Node": node})


# ---------------------------------------------------------------- responses

FAILED_NODES_MAP = map_of("v1.FailedNodesMap", STRING)

NODE_LIST = struct(
    "v1.NodeList",
    ("kind", STRING),
    ("apiVersion", STRING),
    ("metadata", raw_object("v1.ListMeta")),
    ("items", slice_of("[]v1.Node", raw_object("v1.Node"))),
)

EXTENDER_FILTER_RESULT = struct(
    "v1.ExtenderFilterResult",
    ("Nodes", NODE_LIST),
    ("NodeNames", slice_of("[]string", STRING)),
    ("FailedNodes", FAILED_NODES_MAP),
    ("FailedAndUnresolvableNodes", FAILED_NODES_MAP),
    ("Error", STRING),
)

HOST_PRIORITY_LIST = slice_of(
    "v1.HostPriorityList",
    struct("v1.HostPriority", ("Host", STRING), ("Score", INT64)),
)

META_VICTIMS = struct(
    "v1.MetaVictims",
    ("Pods", slice_of("[]*v1.MetaPod", struct("v1.MetaPod", ("UID", STRING)))),
    ("NumPDBViolations", INT64),
)

EXTENDER_PREEMPTION_RESULT = struct(
    "v1.ExtenderPreemptionResult",
    ("NodeNameToMetaVictims", map_of("map[string]*v1.MetaVictims", META_VICTIMS)),
)

EXTENDER_BINDING_RESULT = struct("v1.ExtenderBindingResult", ("Error", STRING))


def field_of(obj: Mapping[str, Any] | None, name: str, default: Any = None) -> Any:
    """A decoded struct's field, the zero value when absent or null."""
    if obj is None:
        return default
    v = obj.get(name)
    return default if v is None else v


def host_priorities(decoded: Iterable[Mapping[str, Any] | None] | None) -> list[tuple[str, int]]:
    """(Host, Score) pairs; a null entry is a zero HostPriority, as Go's decoder leaves it."""
    return [(field_of(hp, "Host", ""), field_of(hp, "Score", 0)) for hp in decoded or ()]


def decode_node(raw: Mapping[str, Any]) -> Node:
    """A v1.Node of an extender's NodeList, with the checks of our manifest decoder."""
    from kubesched.api.decode import DecodeError, decode

    try:
        return decode("Node", raw)
    except DecodeError as err:
        where = f" at {err.field}" if err.field else ""
        raise ValueError(f"json: cannot unmarshal Node{where}: {err.message}") from None
