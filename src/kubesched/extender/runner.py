"""Extenders within a scheduling cycle (schedule_one.go: findNodesThatPassExtenders, prioritizeNodes).

Filter: extenders run one after the other, each on the nodes the previous ones kept, skipping
those not interested in the pod, stopping when no node is left. Their failed nodes go into the
cycle's NodeToStatus (FailedAndUnresolvableNodes win over FailedNodes), so that they count in
the FailedScheduling message and preemption skips the unresolvable ones. An ignorable
extender's error is skipped; any other error fails the attempt with the extender's error text.

Prioritize: every interested extender's scores are added as score × weight × 10
(MaxNodeScore / MaxExtenderPriority); an extender that fails gives no score, silently.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kubesched.framework.diagnosis import NodeToStatus
from kubesched.framework.interface import MAX_NODE_SCORE
from kubesched.framework.snapshot import Snapshot
from kubesched.framework.status import Code, Status
from kubesched.framework.types import NodeInfo, PodInfo

MAX_EXTENDER_PRIORITY = 10


class ExtenderError(Exception):
    """A not-ignorable extender failed; str() is the message the pod gets."""


@dataclass
class FilterResult:
    """The nodes that passed every extender, in the order the last extender returned them.

    feasible: their indices in the snapshot.
    nodes: their NodeInfos. When `replaced`, some extender answered with Node objects
    (nodeCacheCapable false) and these are fresh NodeInfos without pods: scoring must use
    them instead of the snapshot's, as upstream scores the NodeInfos Filter returned.
    """

    feasible: np.ndarray
    nodes: list[NodeInfo]
    replaced: bool


def filter_with_extenders(
    extenders: Sequence[Any],
    pod: PodInfo,
    feasible_idx: np.ndarray,
    snapshot: Snapshot,
    node_to_status: NodeToStatus,
) -> FilterResult:
    nodes = [snapshot.nodes[int(i)] for i in feasible_idx]
    for ext in extenders:
        if not nodes:
            break
        if not ext.is_interested(pod):
            continue
        try:
            reply = ext.filter(pod, nodes)
        except Exception as err:  # any extender failure: skipped if ignorable, else the attempt's error
            if ext.is_ignorable():
                continue
            raise ExtenderError(str(err)) from err
        for name, msg in reply.failed_and_unresolvable.items():
            node_to_status.set(name, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg))
        for name, msg in reply.failed.items():
            if name not in reply.failed_and_unresolvable:
                node_to_status.set(name, Status(Code.UNSCHEDULABLE, msg))
        nodes = reply.nodes
    return _result(nodes, snapshot)


def _result(nodes: list[NodeInfo], snapshot: Snapshot) -> FilterResult:
    """Index the surviving nodes; a node the snapshot does not know cannot be scheduled on and is dropped.

    (Upstream would go on with such a node, which only an extender returning nodes it was not
    sent can produce.)
    """
    known = [ni for ni in nodes if ni.name in snapshot.node_map]
    idx = np.fromiter((snapshot.node_map[ni.name].index for ni in known), np.int64, len(known))
    replaced = any(ni is not snapshot.node_map[ni.name] for ni in known)
    return FilterResult(idx, known, replaced)


def prioritize_with_extenders(extenders: Sequence[Any], pod: PodInfo, nodes: Sequence[NodeInfo]) -> np.ndarray:
    """Each node's extender score total, aligned with `nodes`."""
    totals = np.zeros(len(nodes), np.int64)
    if not nodes:
        return totals
    pos: dict[str, list[int]] = {}
    for i, ni in enumerate(nodes):
        pos.setdefault(ni.name, []).append(i)
    scale = MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY
    for ext in extenders:
        if not ext.is_interested(pod):
            continue
        try:
            scores, weight = ext.prioritize(pod, nodes)
        except Exception:  # noqa: BLE001 - upstream ignores prioritize errors: no score from this extender
            continue
        for host, score in scores:
            for i in pos.get(host, ()):
                totals[i] += _int64(score * weight * scale)
    return totals


def _int64(v: int) -> int:
    """Go's int64 arithmetic wraps around."""
    return (v + (1 << 63)) % (1 << 64) - (1 << 63)
