"""NodeAffinity (framework/plugins/nodeaffinity).

Filter: the pod's nodeSelector and required node affinity (and the profile's
addedAffinity) must match the node. PreFilter narrows the nodes when every
required term names nodes through matchFields metadata.name.
Score: the sum of the weights of the preferred terms the node matches.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kubesched.api.core import Node, NodeSelector, Pod
from kubesched.api.core import NodeAffinity as NodeAffinitySpec
from kubesched.api.labels import NODE_NAME_FIELD, CompiledTerm, NodeSelectorMatcher, Selector, parse_term
from kubesched.config.types import NodeAffinityArgs
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, Resource
from kubesched.framework.interface import (
    EnqueueExtensions,
    FilterVerdicts,
    NodeScoreList,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    VectorFilterPlugin,
    VectorScorePlugin,
)
from kubesched.framework.label_index import node_selector_mask, selector_mask, term_mask
from kubesched.framework.snapshot import Snapshot
from kubesched.framework.status import SKIP, Code, Status
from kubesched.framework.types import NodeInfo, PodInfo
from kubesched.gocompat.field import aggregate_message
from kubesched.plugins import names
from kubesched.plugins.helper import default_normalize_score

ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"

_PRE_FILTER_KEY = "PreFilter" + names.NODE_AFFINITY
_PRE_SCORE_KEY = "PreScore" + names.NODE_AFFINITY


class RequiredNodeAffinity:
    """nodeaffinity.GetRequiredNodeAffinity: nodeSelector AND required node affinity."""

    __slots__ = ("key", "label_selector", "node_selector")

    def __init__(self, pod: Pod) -> None:
        ns = pod.spec.node_selector
        self.label_selector = Selector.from_map(ns) if ns else None
        aff = pod.spec.affinity
        req = (
            aff.node_affinity.required_during_scheduling_ignored_during_execution if aff and aff.node_affinity else None
        )
        self.node_selector = NodeSelectorMatcher(req) if req is not None else None
        self.key = (
            self.label_selector.requirements if self.label_selector else None,
            self.node_selector.terms if self.node_selector else None,
        )

    def matches(self, node: Node) -> bool:
        labels = node.metadata.labels
        if self.label_selector is not None and not self.label_selector.matches(labels):
            return False
        if self.node_selector is not None:
            return self.node_selector.matches(labels, node.metadata.name)
        return True

    def mask(self, snapshot: Snapshot) -> np.ndarray:
        def build() -> np.ndarray:
            m = np.ones(snapshot.num_nodes, bool)
            if self.label_selector is not None:
                m &= selector_mask(snapshot, self.label_selector)
            if self.node_selector is not None:
                m &= node_selector_mask(snapshot, self.node_selector)
            return m

        return snapshot.node_cache(("node-affinity", self.key), build)


class PreferredTerms:
    """nodeaffinity.PreferredSchedulingTerms: weighted terms; empty or zero-weight terms are dropped."""

    __slots__ = ("terms",)

    def __init__(self, terms: list[tuple[CompiledTerm, int]]) -> None:
        self.terms = terms

    @classmethod
    def from_spec(cls, spec: NodeAffinitySpec | None) -> PreferredTerms | None:
        if spec is None or not spec.preferred_during_scheduling_ignored_during_execution:
            return None
        out = []
        errs: list[str] = []
        for i, t in enumerate(spec.preferred_during_scheduling_ignored_during_execution):
            if t.weight == 0 or (not t.preference.match_expressions and not t.preference.match_fields):
                continue
            # NewPreferredSchedulingTerms reports every term's parse errors, the fields rooted at "[i]".
            compiled, term_errs = parse_term(t.preference, f"[{i}]")
            if compiled is None:
                errs += term_errs
            else:
                out.append((compiled, t.weight))
        if errs:
            raise ValueError(aggregate_message(errs))
        return cls(out)

    def score(self, node: Node) -> int:
        labels, name = node.metadata.labels, node.metadata.name
        return sum(w for t, w in self.terms if t.matches(labels, name))

    def scores(self, snapshot: Snapshot) -> np.ndarray:
        out = np.zeros(snapshot.num_nodes, np.int64)
        for t, w in self.terms:
            out += term_mask(snapshot, t) * w
        return out


class _PreFilterState:
    __slots__ = ("required",)

    def __init__(self, required: RequiredNodeAffinity) -> None:
        self.required = required

    def clone(self) -> _PreFilterState:
        return self


class _PreScoreState:
    __slots__ = ("preferred",)

    def __init__(self, preferred: PreferredTerms | None) -> None:
        self.preferred = preferred

    def clone(self) -> _PreScoreState:
        return self


def _required(pod: PodInfo) -> RequiredNodeAffinity:
    r = pod.cache.get(names.NODE_AFFINITY)
    if r is None:
        r = RequiredNodeAffinity(pod.pod)
        pod.cache[names.NODE_AFFINITY] = r
    return r


class NodeAffinity(PreFilterPlugin, VectorFilterPlugin, PreScorePlugin, VectorScorePlugin, EnqueueExtensions):
    name = names.NODE_AFFINITY
    depends_on_node_pods = False

    def __init__(self, args: NodeAffinityArgs | None = None) -> None:
        added: NodeAffinitySpec | None = args.added_affinity if args is not None else None
        self.added_node_selector: NodeSelectorMatcher | None = None
        self.added_pref_terms: PreferredTerms | None = None
        if added is not None:
            req: NodeSelector | None = added.required_during_scheduling_ignored_during_execution
            if req is not None:
                self.added_node_selector = NodeSelectorMatcher(req)
            self.added_pref_terms = PreferredTerms.from_spec(added)

    @classmethod
    def new(cls, args: Any, handle: Any) -> NodeAffinity:
        return cls(args)

    # ------------------------------------------------------------ PreFilter

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        spec = pod.pod.spec
        aff = spec.affinity
        required = (
            aff.node_affinity.required_during_scheduling_ignored_during_execution
            if aff is not None and aff.node_affinity is not None
            else None
        )
        if required is None and self.added_node_selector is None and not spec.node_selector:
            return None, SKIP
        state.write(_PRE_FILTER_KEY, _PreFilterState(_required(pod)))
        if required is None or not required.node_selector_terms:
            return None, None
        node_names: set[str] | None = None
        for term in required.node_selector_terms:
            term_names: set[str] | None = None
            for r in term.match_fields:
                if r.key == NODE_NAME_FIELD and r.operator == "In":
                    s = set(r.values)
                    term_names = s if term_names is None else term_names & s
            if term_names is None:
                # A term without metadata.name affinity admits every node: terms are ORed.
                return None, None
            node_names = term_names if node_names is None else node_names | term_names
        if node_names is not None and not node_names:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_CONFLICT)
        if node_names:
            return PreFilterResult(node_names), None
        return None, None

    # ------------------------------------------------------------ Filter

    def _state(self, state: CycleState, pod: PodInfo) -> RequiredNodeAffinity:
        s = state.get(_PRE_FILTER_KEY)
        return s.required if s is not None else _required(pod)

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return Status.as_error("node not found")
        if self.added_node_selector is not None and not self.added_node_selector.matches(
            node.metadata.labels, node.metadata.name
        ):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_ENFORCED)
        if not self._state(state, pod).matches(node):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_POD)
        return None

    def filter_all(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> FilterVerdicts | None:
        ok = self._state(state, pod).mask(snapshot)
        enforced_fail = None
        if self.added_node_selector is not None:
            enforced_fail = ~node_selector_mask(snapshot, self.added_node_selector)
        failed = ~ok if enforced_fail is None else (~ok | enforced_fail)
        if not failed.any():
            return None
        pod_status = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_POD)
        if enforced_fail is None:
            return FilterVerdicts.uniform(failed, pod_status)
        enforced = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_ENFORCED)
        return FilterVerdicts(failed, keys=enforced_fail, status_of_key=lambda k: enforced if k else pod_status)

    # ------------------------------------------------------------ Score

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        if not nodes:
            return None
        aff = pod.pod.spec.affinity
        try:
            preferred = PreferredTerms.from_spec(aff.node_affinity if aff is not None else None)
        except ValueError as err:
            return Status.as_error(err)
        if preferred is None and self.added_pref_terms is None:
            return SKIP
        state.write(_PRE_SCORE_KEY, _PreScoreState(preferred))
        return None

    def _preferred(self, state: CycleState, pod: PodInfo) -> PreferredTerms | None:
        s = state.get(_PRE_SCORE_KEY)
        if s is not None:
            return s.preferred
        aff = pod.pod.spec.affinity
        return PreferredTerms.from_spec(aff.node_affinity if aff is not None else None)

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status | None]:
        node = node_info.node
        if node is None:
            return 0, Status.as_error("node not found")
        count = 0
        if self.added_pref_terms is not None:
            count += self.added_pref_terms.score(node)
        preferred = self._preferred(state, pod)
        if preferred is not None:
            count += preferred.score(node)
        return count, None

    def score_all(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray:
        total = np.zeros(snapshot.num_nodes, np.int64)
        if self.added_pref_terms is not None:
            total += self.added_pref_terms.scores(snapshot)
        preferred = self._preferred(state, pod)
        if preferred is not None:
            total += preferred.scores(snapshot)
        return total[idx]

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: NodeScoreList) -> Status | None:
        scores.scores = default_normalize_score(scores.scores, reverse=False)
        return None

    # ------------------------------------------------------------ queueing

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL), self._node_change
            )
        ]

    def _node_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        if self.added_node_selector is not None and not self.added_node_selector.matches(
            new.metadata.labels, new.metadata.name
        ):
            return QueueingHint.QUEUE_SKIP
        required = RequiredNodeAffinity(pod)
        if not required.matches(new):
            return QueueingHint.QUEUE_SKIP
        if old is None or not required.matches(old):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP
