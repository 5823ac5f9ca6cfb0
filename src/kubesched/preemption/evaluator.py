"""The preemption evaluator (framework/preemption/preemption.go).

Preempt, step by step, as upstream:
0. take the latest version of the preemptor;
1. check that it may preempt (preemptionPolicy, a victim already terminating on its nominated node);
2. find candidates: nodes that failed with plain Unschedulable, tried from a seeded random offset,
   each by a dry run on a cloned NodeInfo and cloned CycleState (SelectVictimsOnNode);
3. let preempt-capable extenders trim the candidates;
4. pick one node (fewest PDB violations, lowest highest-priority victim, lowest priority sum,
   fewest victims, latest start time, then the first);
5. prepare it: victims waiting at Permit are rejected, the others get a DisruptionTarget
   condition and are deleted; lower-priority pods nominated to that node lose their nomination.
   This runs off the scheduling loop (asynchronous preemption, on in 1.34): the next pods are
   scheduled while the victims are still in the cache (with the preemptor nominated), for as
   many cycles as upstream's API calls typically take; meanwhile the preemptor is held back by
   the plugin's PreEnqueue, and released just before the last victim is deleted so that the
   deletion event requeues it; it is activated when an API call failed, or when every
   victim was already gone.

Victims and candidates, and how one node is picked among them, are in candidates.py; which pod
matters more (the order victims are considered in) in importance.py.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol

from kubesched.api.core import PodCondition
from kubesched.api.scheduling import PodDisruptionBudget
from kubesched.cluster.client import update_pod_condition
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.diagnosis import Diagnosis, FitError, NodeToStatus
from kubesched.framework.handle import Handle
from kubesched.framework.interface import PostFilterResult
from kubesched.framework.status import Code, Status
from kubesched.framework.types import NodeInfo, PodInfo
from kubesched.klog import info, kobj
from kubesched.preemption.candidates import NOW_READ, Candidate, Victims, pick_one_node_for_preemption
from kubesched.preemption.importance import (
    GO_INSERTION_MAX,
    insertion_order,
    more_important,
    pod_start_key,
    sort_by_importance,
)

__all__ = [
    "CYCLES_PER_API_ROUND",
    "DISRUPTION_TARGET",
    "GO_INSERTION_MAX",
    "LAST_ROUND_CYCLES",
    "NOW_READ",
    "PREEMPTION_BY_SCHEDULER",
    "PREEMPTION_NOT_HELPFUL",
    "Candidate",
    "Evaluator",
    "PreemptionInterface",
    "Victims",
    "insertion_order",
    "lower_priority_nominated_pods",
    "more_important",
    "pick_one_node_for_preemption",
    "pod_start_key",
    "sort_by_importance",
]

PREEMPTION_NOT_HELPFUL = "Preemption is not helpful for scheduling"
# Scheduling cycles upstream's scheduling loop typically gets through (batch mode, small clusters) while
# its preemption goroutine makes one round of API calls for victims (status patch, delete) and the
# informer delivers the deletions: victims stay in the cache that long (measured against the oracle).
CYCLES_PER_API_ROUND = 2
# With two victims or more, the last one is deleted after the others: the scheduling loop, woken by the
# first deletions, pops a pod before the last deletion arrives (upstream's logs show it in its cycle).
LAST_ROUND_CYCLES = 1
DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
# What preempting one victim came to: removed now, already gone, or an API call failed.
Outcome = Literal["done", "gone", "failed"]
DONE: Outcome = "done"
GONE: Outcome = "gone"
FAILED: Outcome = "failed"

log = logging.getLogger("kubesched.preemption")


class PreemptionInterface(Protocol):
    """What a preemption plugin decides; DefaultPreemption implements it."""

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]: ...

    def pod_eligible_to_preempt_others(
        self, pod: PodInfo, nominated_node_status: Status | None
    ) -> tuple[bool, str]: ...

    def select_victims_on_node(
        self, state: CycleState, pod: PodInfo, node_info: NodeInfo, pdbs: Sequence[PodDisruptionBudget]
    ) -> tuple[list[PodInfo], int, Status | None]:
        """The pods to evict on this node. `state` and `node_info` are the cycle's own: copy before changing them."""
        ...

    def ordered_score_funcs(self, victims: dict[str, Victims]) -> list[Callable[[str], float]] | None: ...


class Evaluator:
    """Preempt for a plugin (DefaultPreemption): candidates, the node picked, and the victims' eviction."""

    def __init__(self, plugin_name: str, handle: Handle, iface: PreemptionInterface) -> None:
        self.plugin_name = plugin_name
        self.handle = handle
        self.iface = iface
        # Pods whose preemption is still being carried out (asynchronous preemption).
        self.preempting: set[str] = set()
        self.on_victim: Callable[[PodInfo, PodInfo, str], None] | None = None

    def is_pod_running_preemption(self, uid: str) -> bool:
        return uid in self.preempting

    # ------------------------------------------------------------ Preempt

    def preempt(self, state: CycleState, pod: PodInfo, m: NodeToStatus) -> tuple[PostFilterResult | None, Status]:
        latest = self.handle.client.get_pod(pod.namespace, pod.name)
        if latest is None:
            return None, Status.as_error(f'pods "{pod.name}" not found')
        if latest is not pod.pod:
            pod = PodInfo(latest)
        nominated_status = m.get(pod.pod.status.nominated_node_name) if pod.pod.status.nominated_node_name else None
        ok, msg = self.iface.pod_eligible_to_preempt_others(pod, nominated_status)
        if not ok:
            return None, Status(Code.UNSCHEDULABLE, msg)

        snapshot = self.handle.snapshot()
        if snapshot.num_nodes == 0:
            return None, Status.as_error("no nodes available")
        candidates, node_statuses, errors = self.find_candidates(state, pod, m)
        if errors and not candidates:
            return None, Status.as_error(errors[0])
        if not candidates:
            info(
                log, 2, "No preemption candidate is found; preemption is not helpful for scheduling", pod=kobj(pod.key)
            )
            d = Diagnosis()
            d.node_to_status = node_statuses
            node_statuses.absent = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, PREEMPTION_NOT_HELPFUL)
            fit = FitError(pod.key, snapshot.num_nodes, d)
            return PostFilterResult("", PostFilterResult.MODE_OVERRIDE), Status(Code.UNSCHEDULABLE, fit.message())

        candidates, st = self.call_extenders(pod, candidates)
        if st is not None:
            return None, st
        best = self.select_candidate(candidates)
        if best is None or not best.name:
            return None, Status(Code.UNSCHEDULABLE, "no candidate node for preemption")
        info(log, 2, "the target node for the preemption is determined", node=best.name, pod=kobj(pod.key))
        self.prepare_candidate_async(best, pod)
        return PostFilterResult(best.name, PostFilterResult.MODE_OVERRIDE), Status(Code.SUCCESS)

    def find_candidates(
        self, state: CycleState, pod: PodInfo, m: NodeToStatus
    ) -> tuple[list[Candidate], NodeToStatus, list[str]]:
        snapshot = self.handle.snapshot()
        potential = m.nodes_for_status_code(snapshot, Code.UNSCHEDULABLE)
        if not potential:
            info(log, 3, "Preemption will not help schedule pod on any node", pod=kobj(pod.key))
            return [], NodeToStatus(), []
        pdbs = self.handle.lister("PodDisruptionBudget").list()
        offset, num = self.iface.get_offset_and_num_candidates(len(potential))
        return self.dry_run_preemption(state, pod, potential, pdbs, offset, num)

    def dry_run_preemption(
        self,
        state: CycleState,
        pod: PodInfo,
        potential: Sequence[NodeInfo],
        pdbs: Sequence[PodDisruptionBudget],
        offset: int,
        num_candidates: int,
    ) -> tuple[list[Candidate], NodeToStatus, list[str]]:
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        failures: list[tuple[str, Status | Callable[[], Status]]] = []
        errors: list[str] = []
        n = len(potential)
        # The nodes from the offset on, wrapping around.
        start = offset % n
        ordered = [*potential[start:], *potential[:start]]
        select_batch = getattr(self.iface, "select_victims_batch", None)
        batch = select_batch(state, pod, ordered, pdbs, want=num_candidates) if select_batch is not None else None
        if batch is not None:
            return self._dry_run_batch(batch, ordered, num_candidates)
        results = (self.iface.select_victims_on_node(state, pod, ni, pdbs) for ni in ordered)
        for ni, (pods, violations, status) in zip(ordered, results, strict=False):
            if status is None or (isinstance(status, Status) and status.code == Code.SUCCESS):
                if pods:
                    c = Candidate(ni.name, Victims(pods, violations))
                    (non_violating if violations == 0 else violating).append(c)
                    if non_violating and len(non_violating) + len(violating) >= num_candidates:
                        break
                    continue
                status = Status.as_error(f'expected at least one victim pod on node "{ni.name}"')
            if isinstance(status, Status) and status.code == Code.ERROR:
                errors.append(status.message())
            failures.append((ni.name, status))
        statuses = NodeToStatus()
        if not non_violating and not violating:
            # Only read when nothing can be preempted: build the failures' statuses now.
            for name, st in failures:
                st = st if isinstance(st, Status) else st()
                if st.code == Code.ERROR:
                    errors.append(st.message())
                statuses.set(name, st)
        return non_violating[:num_candidates] + violating[:num_candidates], statuses, errors

    def _dry_run_batch(
        self, batch: Any, ordered: list[NodeInfo], num_candidates: int
    ) -> tuple[list[Candidate], NodeToStatus, list[str]]:
        """dry_run_preemption over a VictimBatch: only the fitting nodes are visited, a list of them at a time."""
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        errors: list[str] = []
        visited: dict[int, Status | None] = {}  # position -> its error status, None for a candidate
        for found in batch.candidates():
            if all(c.victims.pods for _, c in found):
                # No node without victims: where the loop below would stop is worked out at once.
                cands = [c for _, c in found]
                done, cands = _take_until_enough(cands, non_violating, len(violating), num_candidates)
                for c in cands:
                    (non_violating if c.victims.num_pdb_violations == 0 else violating).append(c)
                # (`visited` is read only when no node is a candidate: these are)
                if done:
                    break
                continue
            stop = False
            for k, c in found:
                if not c.victims.pods:
                    st = Status.as_error(f'expected at least one victim pod on node "{c.name}"')
                    errors.append(st.message())
                    visited[k] = st
                    continue
                visited[k] = None
                (non_violating if c.victims.num_pdb_violations == 0 else violating).append(c)
                if non_violating and len(non_violating) + len(violating) >= num_candidates:
                    stop = True
                    break
            if stop:
                break
        statuses = NodeToStatus()
        if not non_violating and not violating:
            # Only read when nothing can be preempted: every node failed, build their statuses now.
            for k, ni in enumerate(ordered):
                got: Status | None = visited.get(k)
                st = got if got is not None else batch.status(k)
                if got is None and st.code == Code.ERROR:
                    errors.append(st.message())
                statuses.set(ni.name, st)
        return non_violating[:num_candidates] + violating[:num_candidates], statuses, errors

    def call_extenders(self, pod: PodInfo, candidates: list[Candidate]) -> tuple[list[Candidate], Status | None]:
        extenders = [e for e in self.handle.extenders() if e.supports_preemption() and e.is_interested(pod)]
        if not extenders:
            return candidates, None
        # Without the dry run's pick keys, and on copies of the pod lists (the dry run may keep and hand out its
        # Victims again): an extender may change the victims.
        victims = {c.name: Victims(list(c.victims.pods), c.victims.num_pdb_violations) for c in candidates}
        for ext in extenders:
            try:
                victims = ext.process_preemption(pod, victims, self.handle.snapshot())
            except Exception as err:  # noqa: BLE001 - an extender's failure is reported, or ignored if ignorable
                if ext.is_ignorable():
                    continue
                return [], Status.as_error(err)
            for node, v in list(victims.items()):
                if v is None or not v.pods:
                    if ext.is_ignorable():
                        del victims[node]
                        continue
                    return [], Status.as_error(f'expected at least one victim pod on node "{node}"')
            if not victims:
                break
        return [Candidate(name, v) for name, v in victims.items()], None

    def select_candidate(self, candidates: list[Candidate]) -> Candidate | None:
        if not candidates:
            return None
        if len(candidates) == 1:
            return candidates[0]
        victims = {c.name: c.victims for c in candidates}
        funcs = self.iface.ordered_score_funcs(victims)
        names = [c.name for c in candidates]
        node = pick_one_node_for_preemption(names, victims, funcs)
        # The first candidate of that name (names.index is that loop, in C).
        return candidates[names.index(node)] if node in victims else candidates[0]

    # ------------------------------------------------------------ preparation

    def prepare_candidate_async(self, c: Candidate, pod: PodInfo) -> None:
        """Mark the preemptor as preempting and carry the preemption out while later pods are scheduled."""
        self.handle.metrics_observe_victims(len(c.victims.pods))
        self.preempting.add(pod.uid)
        to_delete = sum(1 for v in c.victims.pods if v.pod.metadata.deletion_timestamp is None)
        # Upstream's goroutine deletes all victims but the last in parallel, then the last one: one or two
        # rounds of API calls (see CYCLES_PER_API_ROUND and LAST_ROUND_CYCLES). It looks up the lower-priority
        # pods nominated to the node as soon as it starts, before the scheduling loop nominates another there.
        nominated = lower_priority_nominated_pods(self.handle, pod, c.name)
        two_rounds = to_delete >= 2
        self.handle.run_after_cycles(CYCLES_PER_API_ROUND, lambda: self._carry_out(c, pod, nominated, two_rounds))

    def _carry_out(self, c: Candidate, pod: PodInfo, nominated: list[PodInfo], two_rounds: bool) -> None:
        """All victims but the last; the last one now, or a round later."""
        self._start(c, pod)
        failed = self._clear_nominations(nominated)
        if not c.victims.pods:
            self.preempting.discard(pod.uid)
            return
        outcomes = [self.preempt_pod(c, pod, v) for v in c.victims.pods[:-1]]
        # The preemptor leaves the preempting set just before its last victim goes (or that deletion could be
        # ignored while PreEnqueue still holds the preemptor back): the earlier victims' deletions, seen by the
        # scheduling loop meanwhile, requeue it, and it may land elsewhere while the last victim is still there.
        self.preempting.discard(pod.uid)
        if two_rounds:
            self.handle.run_after_cycles(LAST_ROUND_CYCLES, lambda: self._last_round(c, pod, outcomes, failed))
        else:
            self._last_round(c, pod, outcomes, failed)

    def _start(self, c: Candidate, pod: PodInfo) -> None:
        victims = c.victims.pods
        if victims:
            info(
                log,
                2,
                "Start the preemption asynchronously",
                preemptor=kobj(pod.key),
                node=c.name,
                numVictims=len(victims),
                numVictimsToDelete=sum(1 for v in victims if v.pod.metadata.deletion_timestamp is None),
            )

    def _clear_nominations(self, nominated: list[PodInfo]) -> bool:
        """Clear the nominations of lower-priority pods nominated to the node; True if an API call failed."""
        failed = False
        for np_ in nominated:
            try:
                self.handle.client.update_pod_status(np_.namespace, np_.name, nominated_node_name="")
            except Exception:  # noqa: BLE001 - clearing nominations is not critical
                failed = True
        return failed

    def _last_round(self, c: Candidate, pod: PodInfo, outcomes: list[Outcome], failed: bool) -> None:
        """The last victim, then whether the preemptor needs activating."""
        outcomes = [*outcomes, self.preempt_pod(c, pod, c.victims.pods[-1])]
        failed |= FAILED in outcomes
        # Upstream 1.34.1 re-activates the preemptor only on an API error. When every victim was already
        # gone (an earlier preemption of the same pod deleted them), no deletion event will requeue a
        # preemptor that PreEnqueue held back meanwhile, and 1.34.1 leaves it in the unschedulable pool
        # until the five-minute flush; later releases fix that (IsPodRunningPreemption looks at the last
        # victim in the informer cache), and so do we, by activating it.
        if failed or all(o == GONE for o in outcomes):
            self.handle.activate([pod])
        result = "error" if failed else "success"
        info(log, 2, "Async Preemption finished completely", preemptor=kobj(pod.key), node=c.name, result=result)

    def preempt_pod(self, c: Candidate, preemptor: PodInfo, victim: PodInfo) -> Outcome:
        """Reject a victim waiting at Permit, or mark it DisruptionTarget and delete it."""
        wp = self.handle.get_waiting_pod(victim.uid)
        refs = {"preemptor": kobj(preemptor.key), "victim": kobj(victim.key)}
        if wp is not None:
            wp.reject(self.plugin_name, "preempted")
            info(
                log,
                2,
                "Preemptor pod rejected a waiting pod",
                preemptor=refs["preemptor"],
                waitingPod=refs["victim"],
                node=c.name,
            )
        else:
            client = self.handle.client
            cond = PodCondition(
                type=DISRUPTION_TARGET,
                status="True",
                observed_generation=victim.pod.metadata.generation,
                reason=PREEMPTION_BY_SCHEDULER,
                message=f"{preemptor.pod.spec.scheduler_name}: preempting to accommodate a higher priority pod",
            )
            # util.PatchPodStatus (only when the condition changes the victim as the scheduler last saw it),
            # then util.DeletePod: written now, not through live mode's API dispatcher. A victim already gone
            # fails the patch: 1.34.1 logs that as an error but goes on as for a deleted victim (its goroutine
            # ends in "success" and does not activate the preemptor; the oracle's logs show it every time).
            if update_pod_condition(victim.pod.status.conditions, cond) is not victim.pod.status.conditions:
                try:
                    client.patch_pod_status(victim.namespace, victim.name, cond)
                except Exception as err:  # noqa: BLE001 - an API failure re-activates the preemptor
                    log.error(
                        "Could not add DisruptionTarget condition due to preemption",
                        extra={"err": str(err), "pod": refs["victim"], "preemptor": refs["preemptor"]},
                    )
                    return GONE if isinstance(err, KeyError) else FAILED
            try:
                client.delete_pod(victim.namespace, victim.name)
            except KeyError:
                info(log, 2, "Victim Pod is already deleted", **refs, node=c.name)
                return GONE
            except Exception as err:  # noqa: BLE001 - an API failure re-activates the preemptor
                log.error(
                    "Tried to preempted pod",
                    extra={"err": str(err), "pod": refs["victim"], "preemptor": refs["preemptor"]},
                )
                return FAILED
            info(log, 2, "Preemptor Pod preempted victim Pod", **refs, node=c.name)
        if self.on_victim is not None:
            self.on_victim(victim, preemptor, c.name)
        self.handle.client.record_event(
            "Normal",
            "Preempted",
            "Preempting",
            f"Preempted by pod {preemptor.uid} on node {c.name}",
            victim.key,
            preemptor.key,
        )
        return DONE


def _take_until_enough(
    cands: list[Candidate], non_violating: list[Candidate], num_violating: int, num_candidates: int
) -> tuple[bool, list[Candidate]]:
    """Of candidates that all have victims, those the one-by-one loop takes before it stops (once there is a
    candidate without PDB violations and `num_candidates` in all), and whether it stops within them."""
    before = len(non_violating) + num_violating
    # The first place where a PDB-respecting candidate has been seen.
    first = 0
    if not non_violating:
        first = next((i for i, c in enumerate(cands) if c.victims.num_pdb_violations == 0), len(cands))
    stop = max(num_candidates - before - 1, first)
    if stop < len(cands):
        return True, cands[: stop + 1]
    return False, cands


def lower_priority_nominated_pods(handle: Handle, pod: PodInfo, node: str) -> list[PodInfo]:
    return [p for p in handle.nominated_pods_for_node(node) if p.priority < pod.priority]
