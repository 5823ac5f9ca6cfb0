"""DefaultPreemption (framework/plugins/defaultpreemption): the PostFilter that evicts lower-priority pods.

The flow lives in kubesched.preemption.evaluator; this plugin decides who may
preempt, how many candidate nodes to try, and which pods on a node must go
(SelectVictimsOnNode: remove every lower-priority pod, check the preemptor fits,
then reprieve pods back — PDB-violating ones first, most important first —
while it still fits).
"""

from __future__ import annotations

from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Sequence
from itertools import chain, compress
from operator import attrgetter, is_
from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.api.labels import Selector, SelectorError, label_selector
from kubesched.api.scheduling import PodDisruptionBudget
from kubesched.config.types import DefaultPreemptionArgs
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.diagnosis import NodeToStatus
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, Resource
from kubesched.framework.handle import Handle
from kubesched.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreEnqueuePlugin,
    ResourceSumsFilterPlugin,
    pods_matter_only_by_sums,
)
from kubesched.framework.pod_sums import FILTER_VERDICTS_KEY, ExtraSums
from kubesched.framework.status import Code, Status
from kubesched.framework.types import NodeInfo, PodInfo
from kubesched.plugins import names
from kubesched.preemption.candidates import Candidate, PickKey, Victims
from kubesched.preemption.evaluator import DISRUPTION_TARGET, PREEMPTION_BY_SCHEDULER, Evaluator
from kubesched.preemption.importance import GO_INSERTION_MAX, insertion_order, pod_start_key, sort_by_importance

if TYPE_CHECKING:
    from kubesched.framework.runtime import Framework

NO_VICTIMS = "No preemption victims found for incoming pod"
# Below every pod priority (int32).
_NO_PRIORITY = -(1 << 40)
_INDEX = attrgetter("index")
# Kinds of preemptor (priority, fit keys) whose dry-run answers are kept at a time.
_KEPT_SCOPES = 8


def pod_terminating_by_preemption(pi: PodInfo) -> bool:
    pod = pi.pod
    if pod.metadata.deletion_timestamp is None:
        return False
    for c in pod.status.conditions:
        if c.type == DISRUPTION_TARGET:
            return c.status == "True" and c.reason == PREEMPTION_BY_SCHEDULER
    return False


def _pods_by_importance(ni: NodeInfo) -> tuple[list[PodInfo], list[int], list[float]]:
    """A node's pods in Go's insertion-sort order by importance, their negated priorities (ascending)
    and their start keys.

    The lower-priority tail of this order is how sort.Slice orders those pods when there are at most 12.
    """
    ordered = insertion_order(ni.pods)
    return ordered, [-pi.priority for pi in ordered], [pod_start_key(pi) for pi in ordered]


def _columns_of(e: ExtraSums) -> list[np.ndarray]:
    return [e.cpu, e.mem, e.eph, e.pods]


def filter_pods_with_pdb_violation(
    pods: Sequence[PodInfo], pdbs: Sequence[PodDisruptionBudget]
) -> tuple[list[PodInfo], list[PodInfo]]:
    """Split victims into those whose eviction would break a PDB and the others, budgets decremented in order."""
    allowed = [pdb.status.disruptions_allowed if pdb.status is not None else 0 for pdb in pdbs]
    selectors: list[Selector | None] = []
    for pdb in pdbs:
        try:
            selectors.append(label_selector(pdb.spec.selector))
        except SelectorError:
            selectors.append(None)
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for pi in pods:
        violated = False
        if pi.labels:
            for i, pdb in enumerate(pdbs):
                if pdb.metadata.namespace != pi.namespace:
                    continue
                sel = selectors[i]
                if sel is None or sel.is_empty() or sel.is_nothing() or not sel.matches(pi.labels):
                    continue
                if pdb.status is not None and pi.name in pdb.status.disrupted_pods:
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else non_violating).append(pi)
    return violating, non_violating


class VictimBatch:
    """SelectVictimsOnNode's answers for a list of nodes (by position), computed as they are read.

    `candidates()` yields, in order and a list at a time, the positions where the
    pod fits once victims are gone, each with the node's Candidate (whose victims
    may be none, else come with the pick's key worked out); every other position
    failed, and `status(k)` says why. Candidates may be handed out again to later
    preemptors: nobody changes them.
    """

    __slots__ = ("candidates", "status")

    def __init__(
        self, candidates: Callable[[], Iterator[list[tuple[int, Candidate]]]], status: Callable[[int], Status]
    ) -> None:
        self.candidates = candidates
        self.status = status


class DefaultPreemption(PostFilterPlugin, PreEnqueuePlugin, EnqueueExtensions):
    name = names.DEFAULT_PREEMPTION

    def __init__(self, args: DefaultPreemptionArgs | None, handle: Handle) -> None:
        self.args = args or DefaultPreemptionArgs()
        self.handle = handle
        self.evaluator = Evaluator(self.name, handle, self)
        self._plan_cache: tuple[CycleState, list[FilterPlugin] | None] | None = None
        # Dry-run answers kept per node row, for the snapshot's node list and the PDBs they were worked out with.
        self._kept: tuple[list[NodeInfo], tuple[PodDisruptionBudget, ...], OrderedDict[Hashable, _Kept]] | None = None

    @classmethod
    def new(cls, args: Any, handle: Handle) -> DefaultPreemption:
        return cls(args, handle)

    # ------------------------------------------------------------ extension points

    def post_filter(
        self, state: CycleState, pod: PodInfo, node_to_status: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        self.handle.metrics_inc_preemption_attempts()
        result, status = self.evaluator.preempt(state, pod, node_to_status)
        msg = status.message()
        if msg:
            return result, Status(status.code, "preemption: " + msg)
        return result, status

    def _framework(self) -> Framework:
        """The profile's framework, whose filters the dry run re-runs; the handle has it once the profile is built."""
        fw = self.handle.framework
        if fw is None:
            raise RuntimeError(f"{self.name}: the handle has no framework yet (its profile is still being built)")
        return fw

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        if self.evaluator.is_pod_running_preemption(pod.uid):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "waiting for the preemption for this pod to be finished")
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Pod deletions, with a hint that always skips (as upstream, async preemption on).

        A preemptor that PreEnqueue gated while its victims were being deleted
        (an update of the pod itself can requeue it then) is looked at again on
        each pod deletion; the other plugins that rejected it decide. The
        evaluator re-activates it when an API call failed or every victim was
        already gone (no deletion event will come).
        """
        return [ClusterEventWithHint(ClusterEvent(Resource.POD, ActionType.DELETE), _skip)]

    # ------------------------------------------------------------ PreemptionInterface

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        return self.handle.rng.randrange(num_nodes), self.calculate_num_candidates(num_nodes)

    def calculate_num_candidates(self, num_nodes: int) -> int:
        n = num_nodes * self.args.min_candidate_nodes_percentage // 100
        n = max(n, self.args.min_candidate_nodes_absolute)
        return min(n, num_nodes)

    def pod_eligible_to_preempt_others(self, pod: PodInfo, nominated_node_status: Status | None) -> tuple[bool, str]:
        if pod.pod.spec.preemption_policy == "Never":
            return False, "not eligible due to preemptionPolicy=Never."
        nominated = pod.pod.status.nominated_node_name
        if nominated:
            if nominated_node_status is not None and nominated_node_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, ""
            ni = self.handle.snapshot().get(nominated)
            if ni is not None:
                for p in ni.pods:
                    if p.priority < pod.priority and pod_terminating_by_preemption(p):
                        return False, "not eligible due to a terminating pod on the nominated node."
        return True, ""

    def ordered_score_funcs(self, victims: dict[str, Victims]) -> list[Callable[[str], float]] | None:
        return None

    def select_victims_on_node(
        self, state: CycleState, pod: PodInfo, node_info: NodeInfo, pdbs: Sequence[PodDisruptionBudget]
    ) -> tuple[list[PodInfo], int, Status | None]:
        plan = self._plan(state)
        if plan is not None:
            return self._select_by_arithmetic(plan, state, pod, node_info, pdbs)
        return self._select_by_filters(state, pod, node_info, pdbs)

    def _arithmetic_plan(self, state: CycleState) -> list[FilterPlugin] | None:
        """The active filters, when the node's pods only matter to them through summed requests.

        Then removing and reprieving victims changes nothing but those sums, and the dry run can be
        done in arithmetic instead of re-running every filter for every victim; the verdicts and
        messages are the same.
        """
        fw = self._framework()
        if not fw.use_vector_paths:
            return None
        skip = state.skip_filter_plugins
        if not pods_matter_only_by_sums(fw.filter_plugins, skip):
            return None
        plan = [pl for pl in fw.filter_plugins if pl.name not in skip]
        return plan if any(isinstance(pl, ResourceSumsFilterPlugin) for pl in plan) else None

    def select_victims_batch(
        self,
        state: CycleState,
        pod: PodInfo,
        nodes: Sequence[NodeInfo],
        pdbs: Sequence[PodDisruptionBudget],
        want: int = 0,
    ) -> VictimBatch | None:
        """SelectVictimsOnNode for many nodes, in order, lazily; None when the filters forbid arithmetic.

        Whether the pod fits once every lower-priority pod is gone is asked of all
        nodes at once. The nodes where it does are then worked out `want` at a
        time (the candidates the caller still needs): victims are reprieved one
        rank at a time across all those nodes together. A failing node's status
        is returned as a function, built only if somebody reads it.
        """
        plan = self._plan(state)
        if plan is None:
            return None
        sums = [pl for pl in plan if isinstance(pl, ResourceSumsFilterPlugin)]
        others = [pl for pl in plan if not isinstance(pl, ResourceSumsFilterPlugin)]
        # This cycle's whole-snapshot verdicts (None: passes everywhere); filters without one run per node.
        stash: dict[str, np.ndarray | None] = state.get(FILTER_VERDICTS_KEY) or {}
        unjudged = [pl for pl in others if pl.name not in stash]
        snapshot = self.handle.snapshot()
        idx = np.fromiter(map(_INDEX, nodes), np.int64, len(nodes))
        extra, has_victims = self._left_on_nodes(snapshot, pod, idx)
        ok = has_victims.copy()
        for pl in sums:
            ok &= pl.amounts_fit_all(state, pod, snapshot, idx, extra)
        for other in others:
            failed = stash.get(other.name)
            if failed is not None:
                ok &= ~failed[idx]
        fitting = np.flatnonzero(ok).tolist()
        # A filter run per node could read anything: answers are kept only when every filter was judged.
        kept = None if unjudged else self._kept_for(state, pod, sums, snapshot, pdbs, extra)

        def reprieve(batch: list[int]) -> list[tuple[int, Candidate]]:
            if kept is None:
                return self._reprieve_batch(sums, state, pod, snapshot, nodes, idx, extra, batch, pdbs)
            return kept.answers(
                snapshot.row_gen,
                idx,
                batch,
                lambda missing: self._reprieve_batch(sums, state, pod, snapshot, nodes, idx, extra, missing, pdbs),
            )

        def candidates() -> Iterator[list[tuple[int, Candidate]]]:
            found = 0
            c = 0  # next entry of `fitting`
            while c < len(fitting):
                need = max(want - found, 16) if want else 16
                batch = fitting[c : c + need]
                c += len(batch)
                if unjudged:
                    batch = [k for k in batch if all(pl.filter(state, pod, nodes[k]) is None for pl in unjudged)]
                answers = reprieve(batch)
                found += len(answers)
                yield answers

        def status(k: int) -> Status:
            if not has_victims[k]:
                return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_VICTIMS)
            st = self._select_by_arithmetic(plan, state, pod, nodes[k], pdbs)[2]
            assert st is not None
            return st

        return VictimBatch(candidates, status)

    def _left_on_nodes(self, snapshot: Any, pod: PodInfo, idx: np.ndarray) -> tuple[ExtraSums, np.ndarray]:
        """What changes on each node at `idx` once every lower-priority pod is gone and the nominated pods
        the preemptor yields to are added; and where there are lower-priority pods at all."""
        priority = pod.priority
        lower = snapshot.pod_sums(("lower-priority", priority), lambda ni: ni.lower_priority_sums(priority))
        nominator = self.handle.nominator()
        nominated = nominator.sums_at_least(snapshot.nodes, pod) if nominator is not None else None
        columns = [-lower.cpu[idx], -lower.mem[idx], -lower.eph[idx], -lower.pods[idx]]
        scalar = {name: -arr[idx] for name, arr in lower.scalar.items()}
        if nominated is not None:
            columns = [c + more[idx] for c, more in zip(columns, _columns_of(nominated), strict=True)]
            for name, arr in nominated.scalar.items():
                scalar[name] = scalar[name] + arr[idx] if name in scalar else arr[idx]
        cpu, mem, eph, count = columns
        has_victims: np.ndarray = lower.pods[idx] > 0
        return ExtraSums.of_arrays(cpu, mem, eph, count, scalar), has_victims

    def _reprieve_batch(
        self,
        sums: list[ResourceSumsFilterPlugin],
        state: CycleState,
        pod: PodInfo,
        snapshot: Any,
        nodes: Sequence[NodeInfo],
        idx: np.ndarray,
        extra: ExtraSums,
        positions: list[int],
        pdbs: Sequence[PodDisruptionBudget],
    ) -> list[tuple[int, Candidate]]:
        """The victims on each node at `positions`, where the pod fits with all lower-priority pods gone.

        Rank r of every node's reprieve order (PDB-violating pods first, each group
        most important first) is tried on all the nodes at once: a pod goes back
        where the pod still fits with it, and is a victim elsewhere.
        """
        if not positions:
            return []
        ro = _reprieve_orders(snapshot, nodes, positions, pod, pdbs)
        names, req = _request_columns(ro)
        pos = np.array(positions, np.int64)
        victim = _reprieve_ranks(sums, state, pod, snapshot, idx[pos], extra.take(pos), names, req)
        return _victims_by_node(nodes, positions, ro, victim)

    def _kept_for(
        self,
        state: CycleState,
        pod: PodInfo,
        sums: list[ResourceSumsFilterPlugin],
        snapshot: Any,
        pdbs: Sequence[PodDisruptionBudget],
        extra: ExtraSums,
    ) -> _KeptView | None:
        """The answers kept for preemptors alike: same priority, same fit keys, same PDB objects, same
        snapshot node list (and scalar sums by the same names); None when a filter cannot say what it reads.

        A node's answer depends on its row (pods, allocatable: the row's generation), the preemptor's
        priority (which pods are victims, which nominated pods stay), what the fit checks read of the
        preemptor (`amounts_key`), the PDBs, and the sums left on the node (`extra`, compared per row).
        """
        keys = []
        for pl in sums:
            key = pl.amounts_key(state, pod)
            if key is None:
                return None
            keys.append((pl, key))
        names = tuple(sorted(extra.scalar))
        held = self._kept
        if (
            held is None
            or held[0] is not snapshot.nodes
            or len(held[1]) != len(pdbs)
            or not all(map(is_, held[1], pdbs))
        ):
            held = self._kept = (snapshot.nodes, tuple(pdbs), OrderedDict())
        scopes = held[2]
        scope_key = (tuple(keys), pod.priority, names)
        kept = scopes.get(scope_key)
        if kept is None:
            kept = scopes[scope_key] = _Kept(len(snapshot.nodes), 4 + len(names))
            if len(scopes) > _KEPT_SCOPES:
                scopes.popitem(last=False)
        else:
            scopes.move_to_end(scope_key)
        left = np.array([extra.cpu, extra.mem, extra.eph, extra.pods, *(extra.scalar[name] for name in names)])
        return _KeptView(kept, left)

    def _plan(self, state: CycleState) -> list[FilterPlugin] | None:
        cached = self._plan_cache
        if cached is not None and cached[0] is state:
            return cached[1]
        plan = self._arithmetic_plan(state)
        self._plan_cache = (state, plan)
        return plan

    def _select_by_arithmetic(
        self,
        plan: list[FilterPlugin],
        state: CycleState,
        pod: PodInfo,
        node_info: NodeInfo,
        pdbs: Sequence[PodDisruptionBudget],
    ) -> tuple[list[PodInfo], int, Status | None]:
        potential = [pi for pi in node_info.pods if pi.priority < pod.priority]
        if not potential:
            return [], 0, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_VICTIMS)
        used = node_info.requested.clone()
        for pi in potential:
            used.add(pi.requests, -1)
        count = len(node_info.pods) - len(potential)
        # Nominated pods of equal or higher priority count as running here (the first of the two
        # filter passes); with filters that only sum pods, the second pass cannot fail if the first passed.
        for other in self.handle.nominated_pods_for_node(node_info.name):
            if other.priority >= pod.priority and other.uid != pod.uid:
                used.add(other.requests)
                count += 1
        alloc = node_info.allocatable
        sums = [pl for pl in plan if isinstance(pl, ResourceSumsFilterPlugin)]
        for pl in plan:
            if isinstance(pl, ResourceSumsFilterPlugin):
                s = pl.filter_amounts(state, pod, alloc, used, count)
            else:
                s = pl.filter(state, pod, node_info)
            if s is not None and s.code != Code.SUCCESS:
                if not s.is_rejected():
                    s = Status.as_error(f"running {pl.name!r} filter plugin: {s.message()}")
                s.plugin = pl.name
                return [], 0, s

        def fits() -> bool:
            return all(pl.amounts_fit(state, pod, alloc, used, count) for pl in sums)

        sort_by_importance(potential)
        violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
        victims: list[PodInfo] = []
        num_violating = 0
        for group, counts in ((violating, True), (non_violating, False)):
            for pi in group:
                used.add(pi.requests)
                count += 1
                if not fits():
                    used.add(pi.requests, -1)
                    count -= 1
                    victims.append(pi)
                    if counts:
                        num_violating += 1
        if violating and non_violating:
            sort_by_importance(victims)
        return victims, num_violating, Status(Code.SUCCESS)

    def _select_by_filters(
        self, state: CycleState, pod: PodInfo, node_info: NodeInfo, pdbs: Sequence[PodDisruptionBudget]
    ) -> tuple[list[PodInfo], int, Status | None]:
        """SelectVictimsOnNode by re-running the filters, on a cloned NodeInfo and CycleState."""
        fw = self._framework()
        state = state.clone()
        node_info = node_info.clone()

        def remove(pi: PodInfo) -> Status | None:
            node_info.remove_pod(pi)
            return fw.run_pre_filter_extension_remove_pod(state, pod, pi, node_info)

        def add(pi: PodInfo) -> Status | None:
            node_info.add_pod(pi)
            return fw.run_pre_filter_extension_add_pod(state, pod, pi, node_info)

        potential = [pi for pi in list(node_info.pods) if pi.priority < pod.priority]
        for pi in potential:
            s = remove(pi)
            if s is not None:
                return [], 0, s
        if not potential:
            return [], 0, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_VICTIMS)
        s = fw.run_filter_plugins_with_nominated_pods(state, pod, node_info)
        if s is not None and s.code != Code.SUCCESS:
            return [], 0, s
        sort_by_importance(potential)
        violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
        victims: list[PodInfo] = []
        num_violating = 0

        def reprieve(pi: PodInfo) -> tuple[bool, Status | None]:
            st = add(pi)
            if st is not None:
                return False, st
            fits = fw.run_filter_plugins_with_nominated_pods(state, pod, node_info) is None
            if not fits:
                st = remove(pi)
                if st is not None:
                    return False, st
                victims.append(pi)
            return fits, None

        for pi in violating:
            fits, err = reprieve(pi)
            if err is not None:
                return [], 0, err
            if not fits:
                num_violating += 1
        for pi in non_violating:
            _, err = reprieve(pi)
            if err is not None:
                return [], 0, err
        if violating and non_violating:
            sort_by_importance(victims)
        return victims, num_violating, Status(Code.SUCCESS)


class _Kept:
    """Per node row, the dry run's last answer (victims with the pick key) for one kind of preemptor, the
    row generation and the sums left on the node (`extra`'s columns) it was worked out for."""

    __slots__ = ("candidates", "gens", "left")

    def __init__(self, n: int, width: int) -> None:
        self.gens = np.full(n, -1, np.int64)
        self.left = np.zeros((width, n), np.int64)
        self.candidates: list[Candidate | None] = [None] * n


class _KeptView:
    """_Kept as seen by one preemptor: `left` holds its sums left on each node, by position."""

    __slots__ = ("kept", "left")

    def __init__(self, kept: _Kept, left: np.ndarray) -> None:
        self.kept = kept
        self.left = left

    def answers(
        self,
        row_gen: np.ndarray,
        idx: np.ndarray,
        positions: list[int],
        compute: Callable[[list[int]], list[tuple[int, Candidate]]],
    ) -> list[tuple[int, Candidate]]:
        """(position, victims) for `positions`: kept answers whose row and sums are unchanged, `compute`
        for the others (which are then kept)."""
        kept = self.kept
        pos = np.array(positions, np.int64)
        rows = idx[pos]
        left = self.left[:, pos]
        same = (kept.gens[rows] == row_gen[rows]) & (kept.left[:, rows] == left).all(axis=0)
        missing = (~same).nonzero()[0]
        answers = kept.candidates
        if len(missing):
            computed = compute([positions[m] for m in missing.tolist()])
            stale = rows[missing]
            for (_, candidate), r in zip(computed, stale.tolist(), strict=True):
                answers[r] = candidate
            kept.gens[stale] = row_gen[stale]
            kept.left[:, stale] = left[:, missing]
        return list(zip(positions, map(answers.__getitem__, rows.tolist()), strict=True))  # type: ignore[arg-type]


class _Orders:
    """Per node, its lower-priority pods in reprieve order, with their negated priorities and start keys,
    how many lead as PDB-violating, and where the pods go in the [node, rank] grid (`width` ranks a row)."""

    __slots__ = ("at", "neg_priorities", "pods", "starts", "violating", "width")

    def __init__(
        self,
        pods: list[list[PodInfo]],
        neg_priorities: list[list[int]],
        starts: list[list[float]],
        violating: list[int],
    ) -> None:
        self.pods = pods
        self.neg_priorities = neg_priorities
        self.starts = starts
        self.violating = violating
        width = self.width = max(len(o) for o in pods)
        total = sum(len(o) for o in pods)
        # Where each pod goes in the flattened grid (every row full: in order).
        self.at: slice | list[int] = (
            slice(None)
            if total == len(pods) * width
            else [r * width + c for r, o in enumerate(pods) for c in range(len(o))]
        )

    def grid(self, rows: list[list[Any]], fill: float, dtype: type) -> np.ndarray:
        """Per-pod values (`rows`, as `pods`) as a [node, rank] array, `fill` past a row's end."""
        out: np.ndarray = np.full(len(self.pods) * self.width, fill, dtype)
        out[self.at] = list(chain.from_iterable(rows))
        return out.reshape(len(self.pods), self.width)


def _reprieve_orders(
    snapshot: Any, nodes: Sequence[NodeInfo], positions: list[int], pod: PodInfo, pdbs: Sequence[PodDisruptionBudget]
) -> _Orders:
    """Each node's lower-priority pods in reprieve order (PDB-violating ones first, each group most important first)."""
    by_importance = snapshot.row_values("pods-by-importance", _pods_by_importance)
    orders: list[list[PodInfo]] = []
    neg_priorities: list[list[int]] = []
    starts: list[list[float]] = []
    violating_counts: list[int] = []
    for k in positions:
        ordered, ranks, start_keys = by_importance[nodes[k].index]
        b = bisect_right(ranks, -pod.priority)
        potential = ordered[b:]
        if len(potential) > GO_INSERTION_MAX or pdbs:
            if len(potential) > GO_INSERTION_MAX:
                # Go's pdqsort on the node's lower-priority pods, taken in the node's order.
                potential = [pi for pi in nodes[k].pods if pi.priority < pod.priority]
                sort_by_importance(potential)
            violating: list[PodInfo] = []
            if pdbs:
                violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
                potential = violating + non_violating
            orders.append(potential)
            neg_priorities.append([-pi.priority for pi in potential])
            starts.append([pod_start_key(pi) for pi in potential])
            violating_counts.append(len(violating))
        else:
            orders.append(potential)
            neg_priorities.append(ranks[b:])
            starts.append(start_keys[b:])
            violating_counts.append(0)
    return _Orders(orders, neg_priorities, starts, violating_counts)


def _request_columns(ro: _Orders) -> tuple[list[str], np.ndarray]:
    """The scalar resources the pods request, and what each pod adds to its node's sums as [sum, node, rank]
    (zero past a row's end).

    Sums 0-3 are cpu, memory, ephemeral storage and the pod count (1 a pod); the scalar resources
    follow, in `names` order.
    """
    rows, width, at = len(ro.pods), ro.width, ro.at
    reqs = [pi.requests for o in ro.pods for pi in o]
    names = sorted({name for q in reqs if q.scalar for name in q.scalar})
    out = np.zeros((4 + len(names), rows * width), np.int64)
    out[0, at] = [q.milli_cpu for q in reqs]
    out[1, at] = [q.memory for q in reqs]
    out[2, at] = [q.ephemeral_storage for q in reqs]
    out[3, at] = 1
    for j, name in enumerate(names, 4):
        out[j, at] = [q.scalar.get(name, 0) for q in reqs]
    return names, out.reshape(4 + len(names), rows, width)


def _reprieve_ranks(
    sums: list[ResourceSumsFilterPlugin],
    state: CycleState,
    pod: PodInfo,
    snapshot: Any,
    sub_idx: np.ndarray,
    base: ExtraSums,
    names: list[str],
    req: np.ndarray,
) -> np.ndarray:
    """Rank by rank over all nodes: [node, rank] is a victim when the pod no longer fits with that pod back.

    `base` holds what stays on each node (the pods of other priorities, the nominated ones). The sums
    are kept as one array (one row per sum, as `req`) so that a rank costs a few array operations.
    """
    rows = req.shape[1]
    zero = np.zeros(rows, np.int64)
    cur = np.array([base.cpu, base.mem, base.eph, base.pods, *(base.scalar.get(name, zero) for name in names)])
    # Scalar sums no victim here requests stay as they are.
    fixed = {name: arr for name, arr in base.scalar.items() if name not in names}
    valid = req[3] != 0
    fits: list[np.ndarray] = []
    for c in range(req.shape[2]):
        step = req[:, :, c]
        trial = cur + step
        scalar = dict(fixed)
        scalar.update(zip(names, trial[4:], strict=True))
        extra = ExtraSums.of_arrays(trial[0], trial[1], trial[2], trial[3], scalar)
        fit = sums[0].amounts_fit_all(state, pod, snapshot, sub_idx, extra)
        for pl in sums[1:]:
            fit = fit & pl.amounts_fit_all(state, pod, snapshot, sub_idx, extra)
        cur += step * (valid[:, c] & fit)
        fits.append(fit)
    victim: np.ndarray = valid & ~np.array(fits).T
    return victim


def _victims_by_node(
    nodes: Sequence[NodeInfo], positions: list[int], ro: _Orders, victim: np.ndarray
) -> list[tuple[int, Candidate]]:
    """(position, its candidate: victims most important first) per node, each with the pick's key (PickKey),
    worked out for all the nodes at once from the victim grid."""
    count = victim.sum(axis=1)
    if any(ro.violating):
        lead = np.arange(ro.width) < np.array(ro.violating, np.int64)[:, None]
        violations = (victim & lead).sum(axis=1)
    else:
        violations = np.zeros_like(count)
    neg = ro.grid(ro.neg_priorities, 0, np.int64)
    # Priorities are int32: a row without victims gets a top below all of them (it is no candidate).
    top = np.where(victim, -neg, _NO_PRIORITY).max(axis=1)
    total = np.where(victim, (1 << 31) - neg, 0).sum(axis=1)
    at_top = victim & (neg == -top[:, None])
    earliest = np.where(at_top, ro.grid(ro.starts, np.inf, np.float64), np.inf).min(axis=1)
    firsts = zip((-violations).tolist(), (-top).tolist(), (-total).tolist(), (-count).tolist(), strict=True)
    out: list[tuple[int, Candidate]] = []
    for k, order, mask, first, start, lead_count in zip(
        positions, ro.pods, victim.tolist(), firsts, earliest.tolist(), ro.violating, strict=True
    ):
        pods = list(compress(order, mask))
        if 0 < lead_count < len(order):
            sort_by_importance(pods)
        key: PickKey = (first, start)
        out.append((k, Candidate(nodes[k].name, Victims(pods, -first[0], key))))
    return out


def _skip(pod: Any, old: Any, new: Any) -> QueueingHint:
    """isPodSchedulableAfterPodDeletion: never by itself; registered so a gated preemptor is looked at again."""
    return QueueingHint.QUEUE_SKIP
