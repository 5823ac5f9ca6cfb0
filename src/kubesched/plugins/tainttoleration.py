"""TaintToleration (framework/plugins/tainttoleration).

Filter: a NoSchedule/NoExecute taint the pod does not tolerate rejects the node.
Score: fewer untolerated PreferNoSchedule taints is better (normalized, reversed).
Nodes share few distinct taint lists, so the vector paths judge each distinct
list once and broadcast the verdict to its nodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kubesched.api.core import Node, Pod, Taint, Toleration
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, Resource
from kubesched.framework.interface import (
    MAX_NODE_SCORE,
    EnqueueExtensions,
    FilterVerdicts,
    NodeScoreList,
    PreScorePlugin,
    SummableScorePlugin,
    VectorFilterPlugin,
)
from kubesched.framework.snapshot import Snapshot
from kubesched.framework.status import Code, Status
from kubesched.framework.types import NodeInfo, PodInfo
from kubesched.plugins import names
from kubesched.plugins.helper import default_normalize_score

_PRE_SCORE_KEY = "PreScore" + names.TAINT_TOLERATION
_DO_NOT_SCHEDULE = ("NoSchedule", "NoExecute")


def tolerations_tolerate_taint(tolerations: Sequence[Toleration], taint: Taint) -> bool:
    return any(t.tolerates(taint) for t in tolerations)


def find_untolerated_taint(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> Taint | None:
    """v1helper.FindMatchingUntoleratedTaint for NoSchedule/NoExecute taints: the first one not tolerated."""
    for taint in taints:
        if taint.effect in _DO_NOT_SCHEDULE and not tolerations_tolerate_taint(tolerations, taint):
            return taint
    return None


def _untolerated_status(taint: Taint) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}")


def _count_intolerable_prefer_no_schedule(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> int:
    return sum(1 for t in taints if t.effect == "PreferNoSchedule" and not tolerations_tolerate_taint(tolerations, t))


def _taint_groups(snapshot: Snapshot) -> list[tuple[tuple[Taint, ...], np.ndarray]]:
    """Nodes grouped by identical taint lists (nodes without taints are left out)."""

    def build() -> list[tuple[tuple[Taint, ...], np.ndarray]]:
        groups: dict[tuple[tuple[str, str, str], ...], tuple[tuple[Taint, ...], list[int]]] = {}
        for i, ni in enumerate(snapshot.nodes):
            taints = ni.node.spec.taints if ni.node is not None else []
            if not taints:
                continue
            key = tuple((t.key, t.value, t.effect) for t in taints)
            groups.setdefault(key, (tuple(taints), []))[1].append(i)
        return [(taints, np.array(ix, np.int64)) for taints, ix in groups.values()]

    return snapshot.node_cache("taint-groups", build)


def _prefer_no_schedule_groups(snapshot: Snapshot) -> list[tuple[tuple[Taint, ...], np.ndarray]]:
    """The taint groups with a PreferNoSchedule taint: the only ones Score counts (often none)."""
    return snapshot.node_cache(
        "taint-groups/prefer-no-schedule",
        lambda: [g for g in _taint_groups(snapshot) if any(t.effect == "PreferNoSchedule" for t in g[0])],
    )


def tolerated_mask(snapshot: Snapshot, tolerations: Sequence[Toleration]) -> np.ndarray:
    """Per node: the pod tolerates all its NoSchedule/NoExecute taints (one check per distinct taint list)."""
    ok = np.ones(snapshot.num_nodes, bool)
    for taints, ix in _taint_groups(snapshot):
        if find_untolerated_taint(taints, tolerations) is not None:
            ok[ix] = False
    return ok


class _PreScoreState:
    __slots__ = ("tolerations",)

    def __init__(self, tolerations: list[Toleration]) -> None:
        self.tolerations = tolerations

    def clone(self) -> _PreScoreState:
        return self


class TaintToleration(VectorFilterPlugin, PreScorePlugin, SummableScorePlugin, EnqueueExtensions):
    name = names.TAINT_TOLERATION
    depends_on_node_pods = False

    # ------------------------------------------------------------ Filter

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return None
        taint = find_untolerated_taint(node.spec.taints, pod.pod.spec.tolerations)
        return None if taint is None else _untolerated_status(taint)

    def filter_all(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> FilterVerdicts | None:
        groups = _taint_groups(snapshot)
        if not groups:
            return None
        tolerations = pod.pod.spec.tolerations
        failed = np.zeros(snapshot.num_nodes, bool)
        keys = np.zeros(snapshot.num_nodes, np.int64)
        statuses: list[Status] = []
        for taints, ix in groups:
            taint = find_untolerated_taint(taints, tolerations)
            if taint is not None:
                failed[ix] = True
                keys[ix] = len(statuses)
                statuses.append(_untolerated_status(taint))
        if not statuses:
            return None
        return FilterVerdicts(failed, keys=keys, status_of_key=statuses.__getitem__)

    # ------------------------------------------------------------ Score

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        if not nodes:
            return None
        tolerations = [t for t in pod.pod.spec.tolerations if t.effect in ("", "PreferNoSchedule")]
        state.write(_PRE_SCORE_KEY, _PreScoreState(tolerations))
        return None

    def _tolerations(self, state: CycleState, pod: PodInfo) -> list[Toleration]:
        s = state.get(_PRE_SCORE_KEY)
        if s is None:
            return [t for t in pod.pod.spec.tolerations if t.effect in ("", "PreferNoSchedule")]
        return s.tolerations

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status | None]:
        node = node_info.node
        taints = node.spec.taints if node is not None else []
        return _count_intolerable_prefer_no_schedule(taints, self._tolerations(state, pod)), None

    def score_terms(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> int | None:
        # No PreferNoSchedule taint anywhere: every count is 0, which NormalizeScore (reversed) makes the maximum.
        return None if _prefer_no_schedule_groups(snapshot) else MAX_NODE_SCORE

    def score_all(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray:
        groups = _prefer_no_schedule_groups(snapshot)
        if not groups:
            return np.zeros(len(idx), np.int64)
        counts = np.zeros(snapshot.num_nodes, np.int64)
        tolerations = self._tolerations(state, pod)
        for taints, ix in groups:
            c = _count_intolerable_prefer_no_schedule(taints, tolerations)
            if c:
                counts[ix] = c
        return counts[idx]

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: NodeScoreList) -> Status | None:
        scores.scores = default_normalize_score(scores.scores, reverse=True)
        return None

    # ------------------------------------------------------------ queueing

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT), _node_change
            ),
            ClusterEventWithHint(ClusterEvent(Resource.POD, ActionType.UPDATE_POD_TOLERATION), _pod_toleration_change),
        ]


def _node_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    new_node: Node = new
    was_untolerated = True
    if old is not None:
        was_untolerated = find_untolerated_taint(old.spec.taints, pod.spec.tolerations) is not None
    is_untolerated = find_untolerated_taint(new_node.spec.taints, pod.spec.tolerations) is not None
    return QueueingHint.QUEUE if was_untolerated and not is_untolerated else QueueingHint.QUEUE_SKIP


def _pod_toleration_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    if new is not None and new.metadata.uid == pod.metadata.uid:
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP
