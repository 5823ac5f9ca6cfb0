"""NodeResourcesBalancedAllocation: prefer nodes whose cpu and memory use stay balanced after placement."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kubesched.config.types import NodeResourcesBalancedAllocationArgs, ResourceSpec
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, Resource
from kubesched.framework.interface import EnqueueExtensions, PreScorePlugin, RowScore, SummableScorePlugin
from kubesched.framework.snapshot import Snapshot
from kubesched.framework.status import SKIP, Status
from kubesched.framework.types import NodeInfo, PodInfo
from kubesched.plugins import names
from kubesched.plugins.noderesources.resource_allocation import BALANCED, ResourceAllocationScorer

_PRE_SCORE_KEY = "PreScore" + names.NODE_RESOURCES_BALANCED_ALLOCATION


class _PreScoreState:
    __slots__ = ("pod_requests",)

    def __init__(self, pod_requests: list[int]) -> None:
        self.pod_requests = pod_requests

    def clone(self) -> _PreScoreState:
        return self


def _is_best_effort(requests: list[int]) -> bool:
    """isBestEffortPod: the pod requests none of the scored resources."""
    return not any(requests)


class BalancedAllocation(PreScorePlugin, SummableScorePlugin, EnqueueExtensions):
    name = names.NODE_RESOURCES_BALANCED_ALLOCATION

    def __init__(self, args: NodeResourcesBalancedAllocationArgs | None = None) -> None:
        resources = (
            args.resources
            if args is not None and args.resources
            else [ResourceSpec("cpu", 1), ResourceSpec("memory", 1)]
        )
        self.scorer = ResourceAllocationScorer(BALANCED, resources, use_requested=True)

    @classmethod
    def new(cls, args: Any, handle: Any) -> BalancedAllocation:
        return cls(args)

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        requests = self.scorer.pod_requests(pod)
        if _is_best_effort(requests):
            # Best-effort pods are not scored, so that they do not all pile onto one node.
            return SKIP
        state.write(_PRE_SCORE_KEY, _PreScoreState(requests))
        return None

    def _pod_requests(self, state: CycleState, pod: PodInfo) -> list[int] | None:
        """The PreScore requests, else computed here; None for a best-effort pod, which scores 0."""
        s = state.get(_PRE_SCORE_KEY)
        if s is not None:
            return s.pod_requests
        requests = self.scorer.pod_requests(pod)
        return None if _is_best_effort(requests) else requests

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status | None]:
        requests = self._pod_requests(state, pod)
        if requests is None:
            return 0, None
        return self.scorer.score(node_info, requests), None

    def score_all(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray:
        requests = self._pod_requests(state, pod)
        if requests is None:
            return np.zeros(len(idx), np.int64)
        return self.scorer.score_rows(snapshot, idx, requests)

    def score_terms(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> int | RowScore:
        requests = self._pod_requests(state, pod)
        return 0 if requests is None else self.scorer.row_score(snapshot, requests)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(Resource.POD, ActionType.DELETE)),
            ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE)),
        ]
