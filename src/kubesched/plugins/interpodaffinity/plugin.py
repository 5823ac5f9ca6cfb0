"""The InterPodAffinity plugin (interpodaffinity/plugin.go, filtering.go, scoring.go, v1.34).

PreFilter/Filter enforce required pod affinity and anti-affinity, both the
incoming pod's and, by symmetry, existing pods' required anti-affinity.
PreScore/Score/NormalizeScore rank nodes by preferred terms (and existing
pods' required affinity, weighted by hardPodAffinityWeight).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from kubesched.api.labels import Selector
from kubesched.config.types import InterPodAffinityArgs
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
from kubesched.framework.status import SKIP, Code, Status
from kubesched.framework.types import NodeInfo, PodInfo
from kubesched.plugins import names
from kubesched.plugins.interpodaffinity import filtering, queueing, scoring
from kubesched.plugins.interpodaffinity.terms import (
    AffinityTerm,
    WeightedAffinityTerm,
    pod_affinity_terms,
    scoring_terms_index,
)

PRE_FILTER_STATE_KEY = "PreFilter" + names.INTER_POD_AFFINITY
PRE_SCORE_STATE_KEY = "PreScore" + names.INTER_POD_AFFINITY


class InterPodAffinity(
    PreFilterPlugin,
    PreFilterExtensions,
    VectorFilterPlugin,
    PreScorePlugin,
    VectorScorePlugin,
    EnqueueExtensions,
):
    name = names.INTER_POD_AFFINITY

    def __init__(self, args: InterPodAffinityArgs | None = None, handle: Any = None) -> None:
        self.args = args if args is not None else InterPodAffinityArgs()
        self.handle = handle

    @classmethod
    def new(cls, args: Any, handle: Any) -> InterPodAffinity:
        return cls(args, handle)

    # ------------------------------------------------------------ cluster access

    def _snapshot(self) -> Snapshot:
        return self.handle.snapshot()

    def _namespace_labels(self, namespace: str) -> Mapping[str, str]:
        """GetNamespaceLabelsSnapshot: a missing namespace has no labels."""
        if self.handle is None:
            return {}
        return self.handle.namespace_labels(namespace)

    def _merge_namespaces(self, term: AffinityTerm) -> AffinityTerm:
        """mergeAffinityTermNamespacesIfNotEmpty: unroll a non-empty namespaceSelector into namespaces.

        The incoming pod's terms are then matched against existing pods without
        looking up those pods' namespace labels.
        """
        sel = term.namespace_selector
        if sel.is_empty() or sel.is_nothing():
            # Nothing selects no namespace: the term stays as it is (its selector already Nothing).
            return term
        selected: set[str] = set()
        if self.handle is not None:
            for ns in self.handle.lister("Namespace").list():
                if sel.matches(ns.metadata.labels):
                    selected.add(ns.metadata.name)
        return AffinityTerm(term.namespaces | selected, term.selector, term.topology_key, Selector.nothing())

    def _merge_weighted(self, terms: Sequence[WeightedAffinityTerm]) -> tuple[WeightedAffinityTerm, ...]:
        return tuple(WeightedAffinityTerm(self._merge_namespaces(t.term), t.weight) for t in terms)

    # ------------------------------------------------------------ PreFilter

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        terms = pod_affinity_terms(pod)
        if terms.error is not None:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"parsing pod: {terms.error}")
        # (Most pods have no terms: no generator then.)
        required_affinity = (
            tuple(map(self._merge_namespaces, terms.required_affinity)) if terms.required_affinity else ()
        )
        required_anti_affinity = (
            tuple(map(self._merge_namespaces, terms.required_anti_affinity)) if terms.required_anti_affinity else ()
        )
        snapshot = self.handle.whole_snapshot(nodes) if self.handle is not None else None
        if (
            snapshot is not None
            and not required_affinity
            and not required_anti_affinity
            and not snapshot.any_pods_with_required_anti_affinity()
        ):
            # No term on either side: nothing to count.
            return None, SKIP
        ns_labels = self._namespace_labels(pod.namespace)
        existing: filtering.TopologyCounts | filtering.DomainCounts
        affinity: filtering.TopologyCounts | filtering.DomainCounts
        anti: filtering.TopologyCounts | filtering.DomainCounts
        if snapshot is not None:
            existing = filtering.existing_anti_affinity_counts_all(pod.pod, ns_labels, snapshot)
            affinity, anti = filtering.incoming_affinity_counts_all(required_affinity, required_anti_affinity, snapshot)
        else:
            existing = filtering.existing_anti_affinity_counts(
                pod.pod, ns_labels, self._snapshot().have_pods_with_required_anti_affinity()
            )
            affinity, anti = filtering.incoming_affinity_counts(required_affinity, required_anti_affinity, nodes)
        s = filtering.PreFilterState(
            pod.pod, required_affinity, required_anti_affinity, ns_labels, existing, affinity, anti
        )
        if s.is_empty(0) and not required_affinity and not required_anti_affinity:
            return None, SKIP
        state.write(PRE_FILTER_STATE_KEY, s)
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions:
        return self

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node_info: NodeInfo) -> Status | None:
        s = self._pre_filter_state(state)
        if isinstance(s, Status):
            return s
        s.update_with_pod(pod_to_add, node_info.node, 1)
        return None

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node_info: NodeInfo) -> Status | None:
        s = self._pre_filter_state(state)
        if isinstance(s, Status):
            return s
        s.update_with_pod(pod_to_remove, node_info.node, -1)
        return None

    @staticmethod
    def _pre_filter_state(state: CycleState) -> filtering.PreFilterState | Status:
        s = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return Status.as_error(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        return s

    # ------------------------------------------------------------ Filter

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        s = self._pre_filter_state(state)
        if isinstance(s, Status):
            return s
        node = node_info.node
        labels = node.metadata.labels if node is not None else {}
        return filtering.verdict_status(filtering.verdict(s, labels))

    def filter_all(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> FilterVerdicts | None:
        s = self._pre_filter_state(state)
        if isinstance(s, Status):
            raise RuntimeError(s.message())
        v = filtering.verdicts(s, snapshot)
        failed = v != filtering.OK
        if not np.count_nonzero(failed):
            return None
        # The verdict codes present (small non-negative ints): bincount, cheaper than np.unique's sort.
        statuses = {code: filtering.verdict_status(code) for code in np.bincount(v[failed]).nonzero()[0].tolist()}
        return FilterVerdicts(failed, keys=v, status_of_key=statuses.__getitem__)  # type: ignore[arg-type]

    # ------------------------------------------------------------ Score

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        if not nodes:
            return SKIP
        aff = pod.pod.spec.affinity
        has_preferred = aff is not None and (
            (
                aff.pod_affinity is not None
                and bool(aff.pod_affinity.preferred_during_scheduling_ignored_during_execution)
            )
            or (
                aff.pod_anti_affinity is not None
                and bool(aff.pod_anti_affinity.preferred_during_scheduling_ignored_during_execution)
            )
        )
        if self.args.ignore_preferred_terms_of_existing_pods and not has_preferred:
            return SKIP
        snapshot = self._snapshot()
        if not has_preferred and not snapshot.any_pods_with_affinity():
            # Only existing pods' terms could score, and no pod has any.
            return SKIP
        terms = pod_affinity_terms(pod)
        if terms.error is not None:
            return Status.as_error(f"failed to parse pod: {terms.error}")
        whole = self.handle.whole_snapshot(snapshot.nodes) is not None
        if whole and not has_preferred and not scoring_terms_index(snapshot):
            # Only existing pods' scoring terms (required affinity, preferred ones) could score, and no
            # pod carries any (pods with required anti-affinity only): no pair contributes.
            return SKIP
        preferred = self._merge_weighted(terms.preferred_affinity)
        preferred_anti = self._merge_weighted(terms.preferred_anti_affinity)
        ns_labels = self._namespace_labels(pod.namespace)
        hard_weight = self.args.hard_pod_affinity_weight
        if whole:
            topology_score = scoring.build_topology_score_all(
                pod.pod, preferred, preferred_anti, ns_labels, snapshot, hard_weight
            )
        else:
            all_nodes = snapshot.nodes if has_preferred else snapshot.have_pods_with_affinity()
            topology_score = scoring.build_topology_score(
                pod.pod, preferred, preferred_anti, ns_labels, all_nodes, has_preferred, hard_weight
            )
        if topology_score is None:
            return SKIP
        state.write(PRE_SCORE_STATE_KEY, scoring.PreScoreState(topology_score))
        return None

    @staticmethod
    def _pre_score_state(state: CycleState) -> scoring.PreScoreState | Status:
        s = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            return Status.as_error(f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        return s

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status | None]:
        s = self._pre_score_state(state)
        if isinstance(s, Status):
            return 0, s
        node = node_info.node
        return scoring.score_node(s, node.metadata.labels if node is not None else {}), None

    def score_all(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray:
        s = self._pre_score_state(state)
        if isinstance(s, Status):
            raise RuntimeError(s.message())
        return scoring.score_all(s, snapshot, idx)

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: NodeScoreList) -> Status | None:
        s = self._pre_score_state(state)
        if isinstance(s, Status):
            return s
        if not s.topology_score:
            return None
        scores.scores = scoring.normalize(scores.scores)
        return None

    # ------------------------------------------------------------ queueing

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE),
                queueing.after_pod_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                queueing.after_node_change,
            ),
        ]
