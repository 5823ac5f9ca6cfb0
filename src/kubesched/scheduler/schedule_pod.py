"""schedulePod (pkg/scheduler/schedule_one.go): the nodes that fit a pod, their scores, and the host.

find_nodes_that_fit_pod runs PreFilter and Filter (the nominated node first, then
the nodes from a rotating start, up to num_feasible_nodes_to_find) and the
extenders' filters; prioritize_nodes runs PreScore and Score; select_host breaks
ties with the seeded generator, as upstream's reservoir sampling does.

A mixin of the Scheduler (scheduler.py), which sets the attributes it reads.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kubesched.cache.cache import Cache
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.diagnosis import EXTENDER_NAME, Diagnosis, FitError
from kubesched.framework.runtime import Framework
from kubesched.framework.snapshot import NodeSubset, Snapshot
from kubesched.framework.status import Code, Status
from kubesched.framework.types import NodeInfo, PodInfo
from kubesched.queue.nominator import NominatingInfo
from kubesched.scheduler.observer import AttemptObserver, NodeScores

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
ERR_NO_NODES_AVAILABLE = "no nodes available to schedule pods"


@dataclass
class ScheduleResult:
    """What schedulePod chose: the host, how many nodes it looked at and found feasible, and a nomination."""

    suggested_host: str = ""
    evaluated_nodes: int = 0
    feasible_nodes: int = 0
    nominating_info: NominatingInfo | None = None


class FeasibleNames:
    """The names of the scored nodes, by position (an int or an index array), read where picked: the
    host needs one name, not a copy of them all."""

    __slots__ = ("_idx", "_names")

    def __init__(self, names: np.ndarray, idx: np.ndarray) -> None:
        self._names = names
        self._idx = idx

    def __len__(self) -> int:
        return len(self._idx)

    def __getitem__(self, i: Any) -> Any:
        return self._names[self._idx[i]]


class ScheduleError(Exception):
    """An Error status raised out of the algorithm."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message())
        self.status = status


def num_feasible_nodes_to_find(percentage: int | None, num_all: int) -> int:
    """How many feasible nodes to look for: all below 100 nodes, else the adaptive percentage."""
    if num_all < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all
    pct = percentage or 0
    if pct == 0:
        pct = 50 - num_all // 125
        pct = max(pct, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    n = num_all * pct // 100
    return max(n, MIN_FEASIBLE_NODES_TO_FIND)


class SchedulingAlgorithm:
    """schedulePod and its steps; the Scheduler sets the attributes below (scheduler.py)."""

    now: Callable[[], float]
    rng: random.Random
    cache: Cache
    snapshot: Snapshot
    extenders: list[Any]
    next_start_node_index: int
    observer: AttemptObserver | None
    _extender_nodes: list[NodeInfo] | None

    def schedule_pod(self, fw: Framework, state: CycleState, pod: PodInfo) -> ScheduleResult:
        self.cache.update_snapshot(self.snapshot)
        snap = self.snapshot
        if snap.num_nodes == 0:
            raise ScheduleError(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_NO_NODES_AVAILABLE))
        feasible, diagnosis = self.find_nodes_that_fit_pod(fw, state, pod)
        if len(feasible) == 0:
            raise FitError(pod.key, snap.num_nodes, diagnosis)
        if len(feasible) == 1:
            host = snap.nodes[int(feasible[0])].name
            if self.observer is not None:
                self.observer.node_chosen(pod, host, None, self.now())
            return ScheduleResult(host, 1 + len(diagnosis.node_to_status), 1)
        totals, per_plugin = self.prioritize_nodes(fw, state, pod, feasible)
        names = snap.node_names()
        host, tied = self.select_host(FeasibleNames(names, feasible), totals)
        if self.observer is not None:
            scores = NodeScores(names, totals, per_plugin, tied, pick=feasible)
            self.observer.node_chosen(pod, host, scores, self.now())
        return ScheduleResult(host, len(feasible) + len(diagnosis.node_to_status), len(feasible))

    def find_nodes_that_fit_pod(self, fw: Framework, state: CycleState, pod: PodInfo) -> tuple[np.ndarray, Diagnosis]:
        snap = self.snapshot
        diagnosis = Diagnosis()
        pre_res, s, unscheduled = fw.run_pre_filter_plugins(state, pod, snap.nodes)
        diagnosis.unschedulable_plugins = set(unscheduled)
        if s is not None and s.code != Code.SUCCESS:
            if not s.is_rejected():
                raise ScheduleError(s)
            diagnosis.node_to_status.absent = s
            diagnosis.pre_filter_msg = s.message()
            diagnosis.add_plugin_status(s)
            return np.zeros(0, np.int64), diagnosis

        nnn = pod.pod.status.nominated_node_name
        if nnn:
            ni = snap.get(nnn)
            if ni is not None:
                feasible = self._find_nodes_that_pass_filters(
                    fw, state, pod, diagnosis, np.array([ni.index], np.int64), rotate=False
                )
                feasible = self._find_nodes_that_pass_extenders(pod, feasible, diagnosis)
                if len(feasible):
                    return feasible, diagnosis

        candidates: np.ndarray | None = None  # every node
        if pre_res is not None and not pre_res.all_nodes():
            idx = [snap.node_map[n].index for n in (pre_res.node_names or ()) if n in snap.node_map]
            candidates = np.array(sorted(idx), np.int64)
            diagnosis.node_to_status.absent = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(unscheduled))}]",
            )
        feasible = self._find_nodes_that_pass_filters(fw, state, pod, diagnosis, candidates, rotate=True)
        before = len(feasible)
        feasible = self._find_nodes_that_pass_extenders(pod, feasible, diagnosis)
        if len(feasible) != before:
            diagnosis.unschedulable_plugins.add(EXTENDER_NAME)
        return feasible, diagnosis

    def _find_nodes_that_pass_filters(
        self,
        fw: Framework,
        state: CycleState,
        pod: PodInfo,
        diagnosis: Diagnosis,
        nodes: np.ndarray | None,
        rotate: bool,
    ) -> np.ndarray:
        """The feasible nodes among `nodes` (snapshot indices; None: every node), from the rotating start."""
        n = self.snapshot.num_nodes if nodes is None else len(nodes)
        if n == 0:
            return np.zeros(0, np.int64)
        to_find = num_feasible_nodes_to_find(fw.percentage_of_nodes_to_score, n)
        start = self.next_start_node_index % n
        if nodes is None:
            order = self.snapshot.rotated_indices(start)
        else:
            order = np.concatenate([nodes[start:], nodes[:start]]) if start else nodes
        if not fw.has_filter_plugins():
            feasible = order[:to_find]
            if rotate:
                self._advance_start(len(feasible))
            return feasible
        outcome = fw.find_feasible(state, pod, self.snapshot, order, to_find)
        if outcome.error is not None:
            raise ScheduleError(outcome.error)
        # The failed nodes' statuses only serve when nothing fits (message, preemption), or when
        # extenders may still reject the feasible ones: build them only then.
        if len(outcome.feasible) == 0 or self.extenders:
            groups = outcome.groups()
            diagnosis.node_to_status.add_groups(self.snapshot, groups)
            for _, st in groups:
                diagnosis.add_plugin_status(st)
        if rotate:
            self._advance_start(len(outcome.feasible) + outcome.num_failed)
        return outcome.feasible

    def _advance_start(self, processed: int) -> None:
        total = self.snapshot.num_nodes
        if total:
            self.next_start_node_index = (self.next_start_node_index + processed) % total

    def _find_nodes_that_pass_extenders(self, pod: PodInfo, feasible: np.ndarray, diagnosis: Diagnosis) -> np.ndarray:
        self._extender_nodes = None
        if not self.extenders or len(feasible) == 0:
            return feasible
        from kubesched.extender.runner import ExtenderError, filter_with_extenders

        try:
            res = filter_with_extenders(self.extenders, pod, feasible, self.snapshot, diagnosis.node_to_status)
        except ExtenderError as err:
            raise ScheduleError(Status.as_error(err)) from None
        if res.replaced:
            self._extender_nodes = res.nodes
        return res.feasible

    def prioritize_nodes(
        self, fw: Framework, state: CycleState, pod: PodInfo, feasible: np.ndarray
    ) -> tuple[np.ndarray, Mapping[str, np.ndarray]]:
        snap = self.snapshot
        if not self.extenders and not fw.has_score_plugins():
            return np.ones(len(feasible), np.int64), {}
        idx = feasible
        nodes: Sequence[NodeInfo] = NodeSubset(snap.nodes, feasible)
        if self._extender_nodes is not None:
            # An extender answered with Node objects: score its fresh, pod-less NodeInfos, in a snapshot of their own.
            nodes = self._extender_nodes
            snap = Snapshot()
            snap.rebuild(list(nodes))
            idx = np.arange(len(nodes), dtype=np.int64)
        s = fw.run_pre_score_plugins(state, pod, nodes)
        if s is not None:
            raise ScheduleError(s)
        if not self.extenders and (self.observer is None or not self.observer.wants_plugin_scores(pod)):
            # Nobody reads each plugin's scores: the totals alone, when the plugins can give them so.
            totals = fw.run_score_totals(state, pod, snap, idx)
            if totals is not None:
                return totals, {}
        totals, per_plugin, s = fw.run_score_plugins(state, pod, snap, idx)
        if s is not None or totals is None:
            raise ScheduleError(s or Status.as_error("score failed"))
        if self.extenders:
            from kubesched.extender.runner import prioritize_with_extenders

            totals = totals + prioritize_with_extenders(self.extenders, pod, nodes)
        return totals, per_plugin

    def select_host(self, names: FeasibleNames, totals: np.ndarray) -> tuple[str, np.ndarray]:
        """The highest total; ties are broken uniformly at random (seeded), as upstream's reservoir sampling.

        Returns the host and the positions (in `names`) of all nodes sharing the top score.
        """
        tied_idx = (totals == totals[totals.argmax()]).nonzero()[0]  # (argmax: C all the way, unlike max())
        n = len(tied_idx)
        return str(names[int(tied_idx[0] if n == 1 else tied_idx[self.rng.randrange(n)])]), tied_idx
