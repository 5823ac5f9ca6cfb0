"""One scheduling attempt, taken apart: the analysis behind `kubesched explain`.

It runs just before the scheduler's own cycle for the pod (Scheduler.before_cycle),
on the same snapshot, nominator and profile, and changes nothing the cycle will
see: the scheduler's random source is restored afterwards, the rotating start
index is only read, and preemption is a dry run (no victim is touched).

Where the cycle stops early, this runs to the end: every Filter plugin on every
node (the per-node reference `filter`, with the real PreFilter state, nominated
pods of equal or higher priority counted as upstream's first pass counts them),
each Score plugin's raw, normalized and weighted score on the nodes the cycle
scores, DefaultPreemption's victim search on every node it could consider, and
for a pod with ResourceClaims the devices each claim gets on each node
(kubesched.explain.claims).
What upstream itself reports for a node is `run_filter_plugins_with_nominated_pods`,
so the plugin named first is the one in the FailedScheduling message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from kubesched.explain.claims import ClaimsView
from kubesched.explain.fixes import Fix, fixes_for
from kubesched.explain.model import (
    SKIPPED,
    Capture,
    EarlierAttempt,
    FilterVerdict,
    NodePreemption,
    NodeReport,
    NodeScore,
    PluginScore,
    Preemption,
    Sampling,
    Victim,
)
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.diagnosis import Diagnosis, FitError, NodeToStatus
from kubesched.framework.interface import NodeScoreList
from kubesched.framework.runtime import Framework
from kubesched.framework.snapshot import Snapshot
from kubesched.framework.status import Code, Status, code_name
from kubesched.framework.types import NodeInfo, PodInfo, QueuedPodInfo
from kubesched.plugins import names
from kubesched.progress import SILENT, Progress, Stage
from kubesched.scheduler import ERR_NO_NODES_AVAILABLE, Scheduler, num_feasible_nodes_to_find

if TYPE_CHECKING:
    from kubesched.simulate.attempts import Attempt


class Analyzer:
    """Installed as `before_cycle` on a scheduler; keeps the analysis of the target pod's latest attempt."""

    def __init__(
        self, sched: Scheduler, pod_key: str, attempts: Mapping[str, Attempt], progress: Progress = SILENT
    ) -> None:
        """`attempts`: the recorded attempts (Simulation.attempts), where the earlier attempts' outcomes are read;
        `progress` sees each analysis go through the nodes."""
        self.sched = sched
        self.progress = progress
        self.pod_key = pod_key
        self.recorded = attempts
        self.attempts = 0
        self.capture: Capture | None = None
        self.earlier: list[EarlierAttempt] = []

    def __call__(self, fw: Framework, qpi: QueuedPodInfo) -> None:
        if qpi.pod_info.key != self.pod_key:
            return
        self.attempts += 1
        prev = self.capture
        if prev is not None:
            a = self.recorded.get(self.pod_key)
            self.earlier.append(
                EarlierAttempt(prev.attempt, a.node if a else "", a.message if a else "", prev.preemption)
            )
        rng = self.sched.rng.getstate()
        stage = self.progress.stage(f"analysing {self.pod_key}, attempt {self.attempts}", None, "nodes")
        try:
            self.capture = analyze(self.sched, fw, qpi.pod_info, self.attempts, stage)
        finally:
            stage.finish()
            self.sched.rng.setstate(rng)


def _ge_nominated(
    fw: Framework, state: CycleState, pod: PodInfo, ni: NodeInfo
) -> tuple[CycleState, NodeInfo, list[str]]:
    """The state and node upstream's first filter pass sees: nominated pods of equal or higher priority added."""
    added: list[str] = []
    info, st = ni, state
    for other in fw.handle.nominated_pods_for_node(ni.name):
        if other.priority >= pod.priority and other.uid != pod.uid:
            if not added:
                info, st = ni.clone(), state.clone()
            info.add_pod(other)
            fw.run_pre_filter_extension_add_pod(st, pod, other, info)
            added.append(other.key)
    return st, info, added


def _filter_node(fw: Framework, state: CycleState, pod: PodInfo, ni: NodeInfo, snap: Snapshot) -> NodeReport:
    """Every Filter plugin on one node, and what upstream reports for it."""
    reported = fw.run_filter_plugins_with_nominated_pods(state, pod, ni)
    st, info, nominated = _ge_nominated(fw, state, pod, ni)
    report = NodeReport(ni.name, examined=False, status=reported, nominated_pods=nominated)
    skip = state.skip_filter_plugins
    for pl in fw.filter_plugins:
        if pl.name in skip:
            report.filters.append(FilterVerdict(pl.name, SKIPPED))
            continue
        try:
            s = pl.filter(st, pod, info)
        except Exception as err:  # noqa: BLE001 - reported as the runtime reports a raising plugin
            s = Status.as_error(f"plugin {pl.name!r} raised at Filter: {type(err).__name__}: {err}", pl.name)
        if s is None or s.code == Code.SUCCESS:
            report.filters.append(FilterVerdict(pl.name, code_name(Code.SUCCESS)))
            continue
        first = reported is not None and reported.plugin == pl.name
        report.filters.append(FilterVerdict(pl.name, code_name(s.code), s.message(), first))
        if s.is_rejected():
            report.fixes.extend(fixes_for(pl, st, pod, info, s, snap))
    return report


def _unfiltered(ni: NodeInfo, status: Status) -> NodeReport:
    """A node no Filter ran on (PreFilter rejected the pod, or left the node out)."""
    r = NodeReport(ni.name, examined=False, status=status)
    r.fixes.append(Fix(status.plugin or "PreFilter", "preFilter", status.message(), {}))
    return r


def analyze(sched: Scheduler, fw: Framework, pod: PodInfo, attempt: int, stage: Stage = SILENT) -> Capture:
    """The analysis of `pod`'s coming attempt under profile `fw` (see the module docstring); `stage` is told
    how many nodes have been through the filters."""
    sched.cache.update_snapshot(sched.snapshot)
    snap = sched.snapshot
    nodes = snap.nodes
    stage.update(0, len(nodes))
    start = sched.next_start_node_index
    cap = Capture(fw.profile_name, attempt, None, [], Sampling(len(nodes), 0, 0, None, start, []), [])
    if sched.extenders:
        cap.notes.append("scheduler extenders are configured: their filter and prioritize results are not broken down")
    if not nodes:
        cap.pre_filter = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_NO_NODES_AVAILABLE)
        return cap
    state = CycleState()
    pre_res, s, unscheduled = fw.run_pre_filter_plugins(state, pod, nodes)
    cap.skipped_filters = sorted(state.skip_filter_plugins)
    if s is not None and s.code != Code.SUCCESS:
        cap.pre_filter = s
        cap.nodes = [_unfiltered(ni, s) for ni in nodes]
        if s.is_rejected():
            cap.preemption = _preemption(sched, fw, state, pod, cap.nodes, s)
        return cap

    reports: dict[int, NodeReport] = {}
    for done, ni in enumerate(nodes, 1):
        reports[ni.index] = _filter_node(fw, state, pod, ni, snap)
        stage.update(done)
    if pre_res is None or pre_res.all_nodes():
        candidates = np.arange(len(nodes), dtype=np.int64)
        absent: Status | None = None
    else:
        kept = {snap.node_map[n].index for n in (pre_res.node_names or ()) if n in snap.node_map}
        candidates = np.array(sorted(kept), np.int64)
        absent = Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(unscheduled))}]"
        )
        for ni in nodes:
            if ni.index not in kept:
                verdicts = reports[ni.index].filters
                reports[ni.index] = _unfiltered(ni, absent)
                reports[ni.index].filters = verdicts
    claims = ClaimsView.of(fw, state, pod)
    if claims is not None:
        for ni in nodes:
            reports[ni.index].claims = claims.on_node(ni)
    feasible = _sample(sched, fw, pod, snap, reports, candidates, cap.sampling)
    cap.nodes = [reports[ni.index] for ni in nodes]
    if len(feasible) > 1 and fw.has_score_plugins():
        _score(fw, state, pod, [nodes[i] for i in feasible], cap)
    if not feasible:
        statuses = NodeToStatus(absent=absent)
        for r in cap.nodes:
            if r.examined and r.status is not None:
                statuses.set(r.name, r.status)
        cap.preemption = _preemption(sched, fw, state, pod, cap.nodes, None, statuses)
    return cap


def _sample(
    sched: Scheduler,
    fw: Framework,
    pod: PodInfo,
    snap: Snapshot,
    reports: dict[int, NodeReport],
    candidates: np.ndarray,
    sampling: Sampling,
) -> list[int]:
    """The nodes the cycle examines and the feasible ones among them, as findNodesThatFitPod walks them."""
    nnn = pod.pod.status.nominated_node_name
    sampling.nominated_node = nnn
    if nnn and (ni := snap.get(nnn)) is not None:
        r = reports[ni.index]
        r.examined = True
        sampling.examined = [nnn]
        if r.feasible and not sched.extenders:
            sampling.nominated_only = True
            return [ni.index]
    n = len(candidates)
    sampling.candidates = n
    if n == 0:
        return []
    to_find = num_feasible_nodes_to_find(fw.percentage_of_nodes_to_score, n)
    sampling.num_to_find = to_find
    sampling.percentage = fw.percentage_of_nodes_to_score
    first = sampling.start_index % n
    order = [int(i) for i in np.concatenate([candidates[first:], candidates[:first]])]
    feasible: list[int] = []
    examined: list[int] = []
    for i in order:
        r = reports[i]
        if fw.has_filter_plugins() and not r.feasible:
            examined.append(i)
            continue
        if len(feasible) >= to_find:
            break  # upstream stops at one feasible node more than it needs, without counting it
        feasible.append(i)
        examined.append(i)
    for i in examined:
        reports[i].examined = True
    names_ = [reports[i].name for i in examined]
    sampling.examined = [*sampling.examined, *(x for x in names_ if x not in sampling.examined)]
    return feasible


def _score(fw: Framework, state: CycleState, pod: PodInfo, feasible: Sequence[NodeInfo], cap: Capture) -> None:
    """Each Score plugin's raw, normalized and weighted score on the nodes the cycle scores."""
    s = fw.run_pre_score_plugins(state, pod, list(feasible))
    if s is not None:
        cap.notes.append(f"PreScore failed: {s.message()}")
        return
    names_ = [ni.name for ni in feasible]
    per_node: list[dict[str, PluginScore]] = [{} for _ in feasible]
    for pl in fw.score_plugins:
        if pl.name in state.skip_score_plugins:
            cap.skipped_scores.append(pl.name)
            continue
        weight = fw.score_weights.get(pl.name, 1)
        raw = np.zeros(len(feasible), np.int64)
        for k, ni in enumerate(feasible):
            v, st = pl.score(state, pod, ni)
            if st is not None and st.code != Code.SUCCESS:
                cap.notes.append(f"Score plugin {pl.name} failed on {ni.name}: {st.message()}")
                return
            raw[k] = v
        lst = NodeScoreList(names_, raw.copy())
        if pl.has_normalize():
            st = pl.normalize_score(state, pod, lst)
            if st is not None and st.code != Code.SUCCESS:
                cap.notes.append(f"NormalizeScore of {pl.name} failed: {st.message()}")
                return
        cap.score_plugins.append((pl.name, weight))
        for k in range(len(feasible)):
            norm = int(lst.scores[k])
            per_node[k][pl.name] = PluginScore(int(raw[k]), norm, norm * weight)
    cap.scores = [
        NodeScore(name, plugins, sum(p.weighted for p in plugins.values()))
        for name, plugins in zip(names_, per_node, strict=True)
    ]


def _preemption(
    sched: Scheduler,
    fw: Framework,
    state: CycleState,
    pod: PodInfo,
    reports: list[NodeReport],
    pre_filter: Status | None,
    statuses: NodeToStatus | None = None,
) -> Preemption | None:
    """DefaultPreemption's decision without its side effects: eligibility, candidates, the chosen node."""
    pl = next((p for p in fw.post_filter_plugins if p.name == names.DEFAULT_PREEMPTION), None)
    if pl is None:
        return Preemption(False, "the profile has no DefaultPreemption PostFilter plugin")
    ev = pl.evaluator  # type: ignore[attr-defined]
    snap = sched.snapshot
    if statuses is None:
        statuses = NodeToStatus(absent=pre_filter)
    latest = sched.client.get_pod(pod.namespace, pod.name)
    if latest is not None and latest is not pod.pod:
        pod = PodInfo(latest)
    nnn = pod.pod.status.nominated_node_name
    ok, msg = ev.iface.pod_eligible_to_preempt_others(pod, statuses.get(nnn) if nnn else None)
    if not ok:
        for r in reports:
            r.preemption = NodePreemption(False, reason=msg)
        return Preemption(False, msg)
    pdbs = fw.handle.lister("PodDisruptionBudget").list()
    # Per node: the victims the dry run picks where preemption may help (plain Unschedulable).
    for r in reports:
        st = statuses.get(r.name)
        if st.code != Code.UNSCHEDULABLE:
            why = "preemption cannot help: " + (st.message() or "the node was not examined")
            r.preemption = NodePreemption(False, reason=why)
            continue
        ni = snap.get(r.name)
        victims, violations, vst = ev.iface.select_victims_on_node(state, pod, ni, pdbs)
        if vst is not None and vst.code != Code.SUCCESS:
            r.preemption = NodePreemption(False, reason=vst.message())
        elif not victims:
            r.preemption = NodePreemption(False, reason=f'expected at least one victim pod on node "{r.name}"')
        else:
            r.preemption = NodePreemption(True, [Victim(v.key, v.priority) for v in victims], violations)
    candidates, node_statuses, errors = ev.find_candidates(state, pod, statuses)
    if errors and not candidates:
        return Preemption(True, errors[0])
    if not candidates:
        d = Diagnosis()
        d.node_to_status = node_statuses
        node_statuses.absent = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "Preemption is not helpful for scheduling")
        return Preemption(True, FitError(pod.key, snap.num_nodes, d).message())
    candidates, st = ev.call_extenders(pod, candidates)
    if st is not None:
        return Preemption(True, st.message())
    best = ev.select_candidate(candidates)
    if best is None or not best.name:
        return Preemption(True, "no candidate node for preemption")
    victims = [Victim(v.key, v.priority) for v in best.victims.pods]
    return Preemption(
        True,
        f"would evict {len(victims)} pod(s) on {best.name}",
        best.name,
        victims,
        best.victims.num_pdb_violations,
        [c.name for c in candidates],
    )
