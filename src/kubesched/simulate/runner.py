"""Running a scenario on the embedded cluster with the virtual clock.

Objects that exist before scheduling are created first (PriorityClasses before
pods, so that the Priority admission can resolve them; namespaces that pods use
but the scenario does not declare are created). Then the pending pods arrive:
in `sequential` mode one by one, each after the previous has settled; in
`batch` mode all at once. "Settled" means the scheduler has nothing left to
try: no pod to pop, no binding waiting at Permit, no victim still terminating.
Time only moves when nothing else can happen (Permit timeouts, graceful
terminations, the second volume binding takes), so the run is exact and instant.
"""

from __future__ import annotations

from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from kubesched.cluster.admission import AdmissionError
from kubesched.cluster.embedded import EmbeddedCluster
from kubesched.collector import collector_paused
from kubesched.config import ConfigError, default_configuration, load_config_mapping
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.errors import InputError
from kubesched.framework.profile import FrameworkError
from kubesched.framework.types import PodInfo
from kubesched.plugins.registry import Registry
from kubesched.progress import SILENT, Progress, Stage
from kubesched.scenario import Manifest, Scenario
from kubesched.scheduler import Scheduler
from kubesched.simulate.attempts import Attempt, AttemptRecorder, ScoreSpool

# A run that keeps scheduling at one instant beyond this many attempts (and per pod) is a livelock.
STALL_ATTEMPTS_MIN = 2_000
STALL_ATTEMPTS_PER_POD = 50

# Sequential mode: how long after a pod settles the next one is created, as the reference's harness does it
# (the golden cases' logs: 0.01 s after a bind, 0.11 s after an unschedulable verdict). Time passing decides
# which backoff windows the pods' retries fall in, and so the order they are retried in after an event.
SETTLED_BOUND_GAP = 0.011
SETTLED_PENDING_GAP = 0.11

# Creation order of kinds that others depend on.
_KIND_ORDER = {"Namespace": 0, "PriorityClass": 0, "StorageClass": 1, "DeviceClass": 1, "Node": 2}


@dataclass
class PodOutcome:
    key: str
    node: str | None
    status: str
    nominated_node: str | None
    message: str | None
    scores: dict[str, int] | None = None
    tied_nodes: list[str] | None = None
    attempt: Attempt | None = None
    # The workload (e.g. deployment/web) whose controller made or owns the pod.
    workload: str | None = None
    # Pods this pod evicted by preemption.
    victims: int = 0
    # Scheduling attempts the pod had, and the total score of the node its last one chose (None: not scored).
    attempts: int = 0
    score: int | None = None


@dataclass
class SimulationResult:
    results: list[PodOutcome]
    deleted: list[str]
    extra: dict[str, Any] = field(default_factory=dict)


def resolve_config(scenario: Scenario, override: KubeSchedulerConfiguration | None) -> KubeSchedulerConfiguration:
    if override is not None:
        return override
    if scenario.config is not None:
        try:
            return load_config_mapping(scenario.config, f"{scenario.source} (Scenario.config)")
        except ConfigError as err:
            raise InputError(scenario.source, err.message, "Scenario", "config") from None
    return default_configuration()


def _key(m: Manifest) -> str:
    return f"{m.obj.metadata.namespace or 'default'}/{m.obj.metadata.name}"


class Simulation:
    def __init__(
        self,
        scenario: Scenario,
        config: KubeSchedulerConfiguration | None = None,
        seed: int = 0,
        registry: Registry | None = None,
        extenders: list[Any] | None = None,
        keep_scores: bool | AbstractSet[str] = True,
        config_source: str | None = None,
        spool_scores: bool = False,
    ) -> None:
        """`keep_scores`: whose per-node scores the results carry (all, none, or these pod keys), kept on disk
        with `spool_scores` (totals and ties only, for a writer that prints them at the end);
        `config_source`: the file `config` came from, named in errors when its profiles cannot be built."""
        self.scenario = scenario
        self.config = resolve_config(scenario, config)
        self.cluster = EmbeddedCluster(graceful_deletion=scenario.graceful_termination)
        self.deleted: list[str] = []
        # How many pods each preemptor evicted, by its key.
        self.victims: dict[str, int] = {}
        # Pending pods created so far (a StatefulSet's OrderedReady may hold some back).
        self._created: set[str] = set()
        # The last object of each deleted pod: what it reported (e.g. status.nominatedNodeName) when it went.
        self.last_seen: dict[str, Any] = {}
        # Where run_until_settled reports the pods tried so far (the scheduling stage of settle()).
        self._stage: Stage = SILENT
        self._load_objects()
        self.cluster.store.subscribe("Pod", self._remember_deleted)
        try:
            self.scheduler = Scheduler(
                self.cluster,
                self.config,
                clock=self.cluster.clock.now,
                seed=seed,
                registry=registry,
                extenders=extenders,
            )
        except FrameworkError as err:
            if config is not None and config_source is not None:
                raise InputError(config_source, str(err)) from None
            raise InputError(scenario.source, str(err), "Scenario", "config") from None
        # What the results report (each pod's last attempt, its scores): recorded here, not by the Scheduler.
        self.recorder = AttemptRecorder(keep_scores, ScoreSpool() if spool_scores and keep_scores else None)
        self.scheduler.observer = self.recorder
        for fw in self.scheduler.profiles.values():
            pre = fw.plugins_by_name.get("DefaultPreemption")
            if pre is not None:
                pre.evaluator.on_victim = self._on_victim  # type: ignore[attr-defined]
        self.scheduler.sync()

    @property
    def attempts(self) -> dict[str, Attempt]:
        """Each pod's last scheduling attempt, by pod key."""
        return self.recorder.attempts

    def _on_victim(self, victim: PodInfo, preemptor: PodInfo, node: str) -> None:
        self.deleted.append(victim.key)
        self.victims[preemptor.key] = self.victims.get(preemptor.key, 0) + 1

    def _remember_deleted(self, etype: str, old: Any, new: Any) -> None:
        if new is None and old is not None:
            self.last_seen[f"{old.metadata.namespace or 'default'}/{old.metadata.name}"] = old

    # ------------------------------------------------------------ loading

    def _create(self, m: Manifest) -> None:
        obj = m.obj
        if (
            m.kind == "Pod"
            and obj.spec.resource_claims
            and any(pc.resource_claim_template_name for pc in obj.spec.resource_claims)
        ):
            obj = self._claims_from_templates(obj)
        try:
            self.cluster.client.create(m.kind, obj)
        except AdmissionError as err:
            raise InputError(self.scenario.source, str(err), m.ref) from None
        except Exception as err:  # noqa: BLE001 - e.g. duplicates: one clear line, never a traceback
            raise InputError(self.scenario.source, str(err), m.ref) from None

    def _claims_from_templates(self, pod: Any) -> Any:
        """The resourceclaim controller's part: a claim per template entry, made before the pod arrives."""
        import msgspec

        from kubesched.workloads.resourceclaim import claims_for_pod

        ns = pod.metadata.namespace or "default"
        if not pod.metadata.uid:
            pod = msgspec.structs.replace(
                pod, metadata=msgspec.structs.replace(pod.metadata, uid=f"uid-{ns}-{pod.metadata.name}")
            )
        store = self.cluster.store
        pod, claims = claims_for_pod(
            pod,
            lambda n, name: store.find("ResourceClaimTemplate", f"{n}/{name}"),
            exists=lambda n, name: store.find("ResourceClaim", f"{n}/{name}") is not None,
        )
        for c in claims:
            self.cluster.client.create("ResourceClaim", c)
        return pod

    def _ensure_namespaces(self, manifests: list[Manifest]) -> None:
        declared = {m.obj.metadata.name for m in self.scenario.manifests if m.kind == "Namespace"}
        for m in manifests:
            ns = m.obj.metadata.namespace
            if m.kind in ("Pod",) and not ns:
                ns = "default"
            if ns and ns not in declared:
                self.cluster.client.ensure_namespace(ns)
                declared.add(ns)

    def _load_objects(self) -> None:
        objs = sorted(self.scenario.objects(), key=lambda m: (_KIND_ORDER.get(m.kind, 3), m.index))
        for m in objs:
            if m.kind == "Namespace":
                self._create(m)
        self._ensure_namespaces(self.scenario.manifests)
        for m in objs:
            if m.kind != "Namespace":
                self._create(m)

    # ------------------------------------------------------------ running

    def run(self, progress: Progress = SILENT) -> SimulationResult:
        """Schedule every pending pod until the cluster settles; `progress` sees pods created and tried."""
        self.settle(progress)
        return self.result()

    def settle(self, progress: Progress = SILENT) -> None:
        """The run without its result: what a writer that streams the outcomes calls (see outcomes())."""
        pending = self.scenario.pending_pods()
        with collector_paused():
            if self.scenario.mode == "batch":
                stage = progress.stage("creating pods", len(pending), "pods")
                waiting = self._create_ready(pending, stage)
                stage.finish()
                self._stage = progress.stage("scheduling", len(pending), "pods")
                self.run_until_settled()
                while waiting:
                    still = self._create_ready(waiting)
                    if len(still) == len(waiting):
                        break
                    waiting = still
                    self.run_until_settled()
            else:
                self._stage = progress.stage("scheduling", len(pending), "pods")
                previous: str | None = None
                for m in pending:
                    if self._ready(m):
                        if previous is not None:
                            self._pass_time(self._settle_gap(previous))
                        self._create(m)
                        previous = _key(m)
                        self._created.add(previous)
                        self.run_until_settled()
            self._stage.finish()
            self._stage = SILENT

    def _settle_gap(self, key: str) -> float:
        pod = self.cluster.store.find("Pod", key)
        return SETTLED_BOUND_GAP if pod is not None and pod.spec.node_name else SETTLED_PENDING_GAP

    def _pass_time(self, dt: float) -> None:
        """Let `dt` seconds pass with nothing to schedule: terminations end, backoffs expire (flushed)."""
        clock = self.cluster.clock
        clock.advance_to(clock.now() + dt)
        self._after_time_passed()

    def _after_time_passed(self) -> None:
        sched = self.scheduler
        self.cluster.client.finish_terminations(self.cluster.clock.now())
        sched.sync()
        # Time passed: what upstream's periodic flushes would have done meanwhile (backoff expired,
        # pods unschedulable for longer than podMaxInUnschedulablePodsDuration retried).
        if sched.queue is not None:
            sched.queue.flush_backoff_completed()
            sched.queue.flush_unschedulable_leftover()
        sched.resume_parked()

    def _ready(self, m: Manifest) -> bool:
        """Whether the pod's controller creates it now: a pod it waits for (OrderedReady) must be running."""
        if m.after is None:
            return True
        before = self.cluster.store.find("Pod", m.after)
        return before is not None and bool(before.spec.node_name)

    def _create_ready(self, pods: list[Manifest], stage: Stage = SILENT) -> list[Manifest]:
        """Create the pods that are ready; the others, in order, come back."""
        waiting = []
        created = self._created
        for i, m in enumerate(pods, 1):
            if m.after is None or self._ready(m):
                self._create(m)
                created.add(_key(m))
            else:
                waiting.append(m)
            stage.update(i)
        return waiting

    def run_until_settled(self, max_steps: int = 10_000_000) -> None:
        sched = self.scheduler
        client = self.cluster.client
        clock = self.cluster.clock
        # Attempts allowed at one instant: far more than any settling run makes (a pod only comes back
        # after an event), few enough that a livelock (pods retried at once, forever) is reported soon.
        stall_limit = max(STALL_ATTEMPTS_MIN, STALL_ATTEMPTS_PER_POD * self.cluster.store.count("Pod"))
        attempts_now = 0
        tried = self.recorder.attempts
        stage = self._stage
        for _ in range(max_steps):
            if sched.schedule_one():
                stage.update(len(tried))
                attempts_now += 1
                if attempts_now > stall_limit:
                    raise self._livelock(attempts_now)
                continue
            if sched.has_parked() and sched.resume_parked():
                continue
            times = [t for t in (sched.next_parked_deadline(), client.next_termination()) if t is not None]
            if not times:
                return
            clock.advance_to(min(times))
            attempts_now = 0
            self._after_time_passed()
        raise RuntimeError("simulation did not settle")

    def _livelock(self, attempts: int) -> InputError:
        """The error for a run that cannot settle: the pods retried most, each with its last failure."""
        q = self.scheduler.queue
        store = self.cluster.store
        queued = []
        for m in self.scenario.pending_pods():
            pod = store.find("Pod", f"{m.obj.metadata.namespace or 'default'}/{m.obj.metadata.name}")
            qp = q.find(pod.metadata.uid) if q is not None and pod is not None else None
            if qp is not None:
                queued.append(qp)
        queued.sort(key=lambda qp: (-qp.attempts, qp.pod_info.key))
        shown = []
        for qp in queued[:3]:
            last = self.recorder.attempts.get(qp.pod_info.key)
            why = f": {last.message}" if last is not None and last.message else ""
            shown.append(f"{qp.pod_info.key} ({qp.attempts} attempts{why})")
        return InputError(
            self.scenario.source,
            f"the scheduler cannot settle: {attempts} scheduling attempts at t={self.cluster.clock.now():g}s "
            f"without time passing, pods retried over and over: {'; '.join(shown) or 'none queued'}",
        )

    # ------------------------------------------------------------ results

    def result(self) -> SimulationResult:
        result = SimulationResult(list(self.outcomes()), list(self.deleted))
        result.extra.update(self.extra())
        return result

    def extra(self) -> dict[str, Any]:
        """What the results report besides the pods (the claims' allocations)."""
        store = self.cluster.store
        if store.count("ResourceClaim"):
            from kubesched.simulate.claims import claims_report

            claims = claims_report(store.list("ResourceClaim"))
            if claims:
                return {"claims": claims}
        return {}

    def outcomes(self) -> Iterator[PodOutcome]:
        """Each pending pod's outcome, in the scenario's order, one at a time (a writer streams them)."""
        pods: dict[str, Any] = self.cluster.store.objects.get("Pod", {})
        # A recorder that keeps no pod's scores has none to attach (the table's run): not asked pod by pod.
        scored = self.recorder.keep_scores is not False
        for m in self.scenario.pending_pods():
            o = self._outcome(m, pods, scored)
            o.workload = m.workload
            attempt = o.attempt
            if attempt is not None:
                o.attempts = attempt.number
                if o.node is not None and attempt.node == o.node:
                    o.score = attempt.score
            yield o

    def _outcome(self, m: Manifest, pods: dict[str, Any], scored: bool) -> PodOutcome:
        """`pods`: the store's pods by key; `scored`: whether attempts may carry scores to attach."""
        key = _key(m)
        if key not in self._created:
            why = f"not created: its StatefulSet creates it once {m.after} is running (OrderedReady)"
            return PodOutcome(key, None, "Pending", None, why)
        pod = pods.get(key)
        attempt = self.recorder.attempts.get(key)
        if pod is None:
            # Only preemption deletes pods in a simulation: the pod ran, then was evicted. Upstream
            # reports what the pod carried then (a preemptor keeps status.nominatedNodeName after
            # binding) and the scores of the attempt that placed it.
            last = self.last_seen.get(key)
            nominated = (last.status.nominated_node_name or None) if last is not None else None
            node = attempt.node if attempt is not None and attempt.node else None
            o = PodOutcome(key, node, "Deleted", nominated, None, attempt=attempt)
            if scored:
                self._attach_scores(o, attempt)
            return o
        status = pod.status
        nominated = status.nominated_node_name or None
        if pod.spec.node_name:
            o = PodOutcome(key, pod.spec.node_name, "Scheduled", nominated, None, attempt=attempt)
            if scored:
                self._attach_scores(o, attempt)
        else:
            for cond in status.conditions:
                if cond.type == "PodScheduled":
                    if cond.reason == "SchedulingGated":
                        o = PodOutcome(key, None, "SchedulingGated", nominated, cond.message, attempt=attempt)
                    else:
                        o = PodOutcome(key, None, "Unschedulable", nominated, cond.message, attempt=attempt)
                    break
            else:
                o = PodOutcome(key, None, "Pending", nominated, None, attempt=attempt)
        o.victims = self.victims.get(key, 0)
        return o

    @staticmethod
    def _attach_scores(o: PodOutcome, attempt: Attempt | None) -> None:
        """The scores (and tie) of the attempt that put the pod on its node."""
        if attempt is None or o.node is None or attempt.node != o.node:
            return
        scores, tied = attempt.scores_and_tie()
        if scores:
            o.scores = scores
            o.tied_nodes = tied or None
