"""The PodTopologySpread plugin (podtopologyspread/plugin.go, filtering.go, scoring.go, v1.34).

Filter enforces DoNotSchedule constraints (maxSkew, minDomains, inclusion
policies); Score prefers nodes whose domains hold fewer matching pods under
ScheduleAnyway constraints. Pods without constraints of their own get the
cluster's default constraints when a Service or controller selects them.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import msgspec
import numpy as np

from kubesched.api.core import Pod
from kubesched.config.types import PodTopologySpreadArgs
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, Resource
from kubesched.framework.interface import (
    EnqueueExtensions,
    FilterVerdicts,
    NodeScoreList,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    VectorFilterPlugin,
    VectorScorePlugin,
)
from kubesched.framework.snapshot import Snapshot
from kubesched.framework.status import SKIP, Status
from kubesched.framework.types import NodeInfo, PodInfo
from kubesched.plugins import names
from kubesched.plugins.podtopologyspread import filtering, queueing, scoring
from kubesched.plugins.podtopologyspread.constraints import (
    DO_NOT_SCHEDULE,
    SCHEDULE_ANYWAY,
    SYSTEM_DEFAULT_CONSTRAINTS,
    TopologySpreadConstraint,
    default_selector,
    filter_constraints,
)

PRE_FILTER_STATE_KEY = "PreFilter" + names.POD_TOPOLOGY_SPREAD
# Distinct constraint lists (by JSON) whose compiled form is kept.
_COMPILED_OWN_SIZE = 1024
PRE_SCORE_STATE_KEY = "PreScore" + names.POD_TOPOLOGY_SPREAD
SYSTEM_DEFAULTING = "System"
# PodInfo.cache keys of the pod's own compiled constraints, by kind.
_OWN_CACHE_KEYS = {a: f"{names.POD_TOPOLOGY_SPREAD}/{a}" for a in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)}


class PodTopologySpread(
    PreFilterPlugin,
    PreFilterExtensions,
    VectorFilterPlugin,
    PreScorePlugin,
    VectorScorePlugin,
    EnqueueExtensions,
):
    name = names.POD_TOPOLOGY_SPREAD

    def __init__(self, args: PodTopologySpreadArgs | None = None, handle: Any = None) -> None:
        args = args if args is not None else PodTopologySpreadArgs()
        self.handle = handle
        self.system_defaulted = args.defaulting_type == SYSTEM_DEFAULTING
        self.default_constraints: Sequence[Any] = (
            SYSTEM_DEFAULT_CONSTRAINTS if self.system_defaulted else list(args.default_constraints)
        )
        self._compiled_own: dict[tuple[str, bytes], list[TopologySpreadConstraint]] = {}
        # The defaults of one kind, compiled once: without matchLabelKeys they do not depend on the pod.
        self._compiled_defaults: dict[str, list[TopologySpreadConstraint]] | None = (
            None if any(c.match_label_keys for c in self.default_constraints) else {}
        )

    @classmethod
    def new(cls, args: Any, handle: Any) -> PodTopologySpread:
        return cls(args, handle)

    # ------------------------------------------------------------ constraints

    def get_constraints(self, pod: Pod, action: str) -> list[TopologySpreadConstraint]:
        """The pod's own constraints of kind `action`, else the defaults; raises ValueError on a bad selector."""
        own = pod.spec.topology_spread_constraints
        if own:
            if any(c.match_label_keys for c in own):
                return filter_constraints(own, pod.metadata.labels, action)
            # Without matchLabelKeys they do not depend on the pod's labels: compiled once per content.
            key = (action, msgspec.json.encode(own))
            compiled = self._compiled_own.get(key)
            if compiled is None:
                compiled = filter_constraints(own, pod.metadata.labels, action)
                if len(self._compiled_own) >= _COMPILED_OWN_SIZE:
                    self._compiled_own.clear()
                self._compiled_own[key] = compiled
            return list(compiled)
        return self.build_default_constraints(pod, action)

    def _pod_constraints(self, pod: PodInfo, action: str) -> list[TopologySpreadConstraint]:
        """get_constraints; the pod's own ones kept on its PodInfo (PreFilter and PreScore, every attempt).

        They depend on the pod object only; the defaults depend on the listers too, so they are not kept.
        """
        if not pod.pod.spec.topology_spread_constraints:
            return self.build_default_constraints(pod.pod, action)
        key = _OWN_CACHE_KEYS[action]
        compiled: list[TopologySpreadConstraint] | None = pod.cache.get(key)
        if compiled is None:
            compiled = pod.cache[key] = self.get_constraints(pod.pod, action)
        return compiled

    def build_default_constraints(self, pod: Pod, action: str) -> list[TopologySpreadConstraint]:
        compiled = self._compiled_defaults
        if compiled is None:
            constraints = filter_constraints(self.default_constraints, pod.metadata.labels, action)
        elif action in compiled:
            constraints = compiled[action]
        else:
            constraints = compiled[action] = filter_constraints(self.default_constraints, {}, action)
        if not constraints or self.handle is None:
            return []
        selector = default_selector(pod, self.handle.lister)
        if selector.is_empty():
            return []
        return [c.with_selector(selector) for c in constraints]

    def _hard_constraints(self, pod: Pod) -> list[TopologySpreadConstraint]:
        return self.get_constraints(pod, DO_NOT_SCHEDULE)

    # ------------------------------------------------------------ PreFilter

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        try:
            constraints = self._pod_constraints(pod, DO_NOT_SCHEDULE)
        except ValueError as err:
            what = "obtaining pod's hard" if pod.pod.spec.topology_spread_constraints else "setting default hard"
            return None, Status.as_error(f"get constraints from pod: {what} topology spread constraints: {err}")
        if not constraints:
            return None, SKIP
        snapshot = self.handle.whole_snapshot(nodes) if self.handle is not None else None
        if snapshot is not None:
            s = filtering.compute_pre_filter_state_all(pod, constraints, snapshot)
        else:
            s = filtering.compute_pre_filter_state(pod, constraints, nodes)
        state.write(PRE_FILTER_STATE_KEY, s)
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions:
        return self

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node_info: NodeInfo) -> Status | None:
        s = self._pre_filter_state(state)
        if isinstance(s, Status):
            return s
        s.update_with_pod(pod_to_add.pod, pod.pod, node_info.node, 1)
        return None

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node_info: NodeInfo) -> Status | None:
        s = self._pre_filter_state(state)
        if isinstance(s, Status):
            return s
        s.update_with_pod(pod_to_remove.pod, pod.pod, node_info.node, -1)
        return None

    @staticmethod
    def _pre_filter_state(state: CycleState) -> filtering.PreFilterState | Status:
        s = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return Status.as_error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        return s

    # ------------------------------------------------------------ Filter

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        s = self._pre_filter_state(state)
        if isinstance(s, Status):
            return s
        if not s.constraints:
            return None
        node = node_info.node
        labels = node.metadata.labels if node is not None else {}
        return filtering.verdict_status(filtering.verdict(s, pod.labels, labels))

    def filter_all(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> FilterVerdicts | None:
        s = self._pre_filter_state(state)
        if isinstance(s, Status):
            raise RuntimeError(s.message())
        if not s.constraints:
            return None
        v = filtering.verdicts(s, pod.labels, snapshot)
        if v is None:
            return None
        failed = v != filtering.OK
        if not np.count_nonzero(failed):
            return None
        # A code's Status made when first read (the nodes with that code share it), not one per code present.
        statuses: dict[int, Status | None] = {}

        def status_of(code: int) -> Status | None:
            st = statuses.get(code)
            if st is None:
                st = statuses[code] = filtering.verdict_status(code)
            return st

        return FilterVerdicts(failed, keys=v, status_of_key=status_of)  # type: ignore[arg-type]

    # ------------------------------------------------------------ Score

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        all_nodes = self.handle.snapshot().nodes
        if not all_nodes:
            return SKIP
        p = pod.pod
        # Nodes must carry every topology key, except under the system defaults (hostname
        # spreading still applies to nodes without a zone label).
        require_all_topologies = bool(p.spec.topology_spread_constraints) or not self.system_defaulted
        try:
            constraints = self._pod_constraints(pod, SCHEDULE_ANYWAY)
        except ValueError as err:
            what = "obtaining pod's soft" if p.spec.topology_spread_constraints else "setting default soft"
            return Status.as_error(f"calculating preScoreState: {what} topology spread constraints: {err}")
        if not constraints:
            return SKIP
        snapshot = self.handle.snapshot()
        indices = getattr(nodes, "indices", None)
        if indices is not None and self.handle.whole_snapshot(snapshot.nodes) is not None:
            s = scoring.compute_pre_score_state_all(pod, constraints, indices, snapshot, require_all_topologies)
        else:
            s = scoring.compute_pre_score_state(pod, constraints, nodes, all_nodes, require_all_topologies)
        state.write(PRE_SCORE_STATE_KEY, s)
        return None

    @staticmethod
    def _pre_score_state(state: CycleState) -> scoring.PreScoreState | Status:
        s = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            return Status.as_error(f'error reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        return s

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status | None]:
        s = self._pre_score_state(state)
        if isinstance(s, Status):
            return 0, s
        return scoring.score_node(s, node_info), None

    def score_all(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray:
        s = self._pre_score_state(state)
        if isinstance(s, Status):
            raise RuntimeError(s.message())
        return scoring.score_all(s, snapshot, idx)

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: NodeScoreList) -> Status | None:
        s = self._pre_score_state(state)
        if isinstance(s, Status):
            return s
        scores.scores = scoring.normalize(s, scores.names, scores.scores)
        return None

    # ------------------------------------------------------------ queueing

    def events_to_register(self) -> list[ClusterEventWithHint]:
        pod_actions = (
            ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.UPDATE_POD_TOLERATION | ActionType.DELETE
        )
        node_actions = ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, pod_actions), partial(queueing.after_pod_change, self._hard_constraints)
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, node_actions), partial(queueing.after_node_change, self._hard_constraints)
            ),
        ]
