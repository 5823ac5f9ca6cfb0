"""The replay loop: a trace's pods arrive, are scheduled, run for their duration and finish, on the virtual clock.

The cluster file is loaded as `simulate` loads it (nodes, running pods,
PriorityClasses, PDBs, ...), except that its pending pods are not created: they
are templates for the trace. Then time moves from one event to the next:

1. the clock jumps to the earliest of: the next arrival, the next pod's end,
   a graceful termination's end, a Permit timeout;
2. pods whose run is over are marked Succeeded (the scheduler's cache lets go
   of them, as it does of terminal pods), then the pods arriving now are created;
3. the scheduler runs until it has nothing left to try at this time (as
   `simulate` settles), preempting where it must: victims are deleted by the
   scheduler's preemption, as in a real cluster, and counted;
4. the cluster is sampled.

Scheduling itself takes no virtual time (binding claims takes upstream's one-second check), so a pod
that fits on arrival has a latency of 0; latency measures queueing: waiting for room, for victims to go.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from kubesched.api.core import Pod
from kubesched.cluster import admission
from kubesched.cluster.store import ADDED, DELETED, MODIFIED
from kubesched.collector import collector_paused
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.errors import InputError
from kubesched.framework.types import PodInfo
from kubesched.replay.metrics import (
    FINISHED,
    PENDING,
    PREEMPTED,
    RUNNING,
    HeatMap,
    Ledger,
    Overcommit,
    PodRecord,
    ReplayRun,
    Samples,
    resource_axes,
)
from kubesched.replay.trace import CronRun, JobRun, Trace, TraceEntry
from kubesched.scenario import Scenario
from kubesched.simulate.runner import Simulation

Progress = Callable[[int, int], None]

# Steps at one virtual time before the loop is declared stuck (a scheduler that never settles).
_MAX_STEPS_PER_TIME = 1_000_000


def _terminal(pod: Pod) -> bool:
    return pod.status.phase in ("Succeeded", "Failed")


class Replay:
    """One trace on one cluster under one configuration; `run()` once."""

    def __init__(
        self,
        scenario: Scenario,
        trace: Trace,
        config: KubeSchedulerConfiguration | None = None,
        *,
        seed: int = 0,
        label: str = "default",
        config_source: str | None = None,
        until: float | None = None,
        heat_columns: int = 200,
        progress: Progress | None = None,
    ) -> None:
        self.trace = trace
        self.label = label
        self.until = until
        self.progress = progress
        self.sim = Simulation(scenario, config, seed=seed, keep_scores=False, config_source=config_source)
        self.cluster = self.sim.cluster
        self.scheduler = self.sim.scheduler
        store = self.cluster.store
        nodes = sorted(store.list("Node"), key=lambda n: n.metadata.name)
        # Trace pods as admission will default them (requests copied from limits).
        arriving = (admission.default_pod(e.pod) for e in trace.entries)
        self.resources = resource_axes(nodes, [*store.iter("Pod"), *arriving])
        self.ledger = Ledger(nodes, self.resources)
        self.records: dict[str, PodRecord] = {}
        for e in trace.entries:
            if store.find("Pod", e.key) is not None:
                raise InputError(
                    trace.source, f"pod {e.key} already exists in the cluster file", f"line {e.line}", "name"
                )
            self.records[e.key] = PodRecord(e.key, e.line, e.time, e.duration)
        # The pods of Jobs the trace starts, by pod key; pods their Jobs start later, due now.
        self._jobs: dict[str, JobRun] = {e.key: e.job for e in trace.entries if e.job is not None}
        self._due: list[TraceEntry] = []
        self._spawned: list[TraceEntry] = []
        # CronJobs' next ticks: (time, order, run); they tick up to the last arrival (or `until`).
        self._ticks: list[tuple[float, int, CronRun]] = [(t, i, run) for i, (t, run) in enumerate(trace.crons)]
        heapq.heapify(self._ticks)
        last = max((e.time for e in trace.entries), default=0.0)
        self._tick_horizon = until if until is not None else max(last, *(t for t, _ in trace.crons), 0.0)
        for ns in sorted({e.namespace for e in trace.entries}):
            self.cluster.client.ensure_namespace(ns)
        self.samples = Samples()
        self.heat = HeatMap(heat_columns)
        self.overcommits: list[Overcommit] = []
        self.counts: Counter[str] = Counter()
        self.pending_shapes: Counter[tuple[int, ...]] = Counter()
        self.finishes: list[tuple[float, int, str]] = []
        self._finish_seq = 0
        self.initial_pods = 0
        self.initial_preempted = 0
        self._initial_victims: set[str] = set()
        self.attempts = 0
        self._arrived = 0
        # Bound, non-terminal pods as the ledger counted them: key -> (node, request vector).
        self._bound: dict[str, tuple[str, Any]] = {}
        store.subscribe("Pod", self._on_pod)
        for fw in self.scheduler.profiles.values():
            pre = fw.plugins_by_name.get("DefaultPreemption")
            if pre is not None:
                evaluator = pre.evaluator  # type: ignore[attr-defined]
                chained = evaluator.on_victim
                evaluator.on_victim = self._chain_victim(chained)
        self._ran = False

    # ------------------------------------------------------------ watching the cluster

    def _chain_victim(self, chained: Callable[..., None] | None) -> Callable[[PodInfo, PodInfo, str], None]:
        def on_victim(victim: PodInfo, preemptor: PodInfo, node: str) -> None:
            if chained is not None:
                chained(victim, preemptor, node)
            self._preempted(victim.key)

        return on_victim

    def _preempted(self, key: str) -> None:
        rec = self.records.get(key)
        if rec is None:
            if key not in self._initial_victims:
                self._initial_victims.add(key)
                self.initial_preempted += 1
            return
        if rec.state != RUNNING:
            return  # a pod rejected while waiting at Permit: back in the queue, still pending
        self._move(rec, PREEMPTED)
        rec.end = self.cluster.clock.now()
        self._lost(key)

    def _on_pod(self, etype: str, old: Pod | None, new: Pod | None) -> None:
        """The ledger follows bindings and departures; trace pods' records follow their bindings."""
        now = self.cluster.clock.now()
        if etype == ADDED:
            assert new is not None
            if new.metadata.namespace + "/" + new.metadata.name not in self.records:
                self.initial_pods += 1
            if new.spec.node_name and not _terminal(new):
                self._count_in(new, now)
        elif etype == MODIFIED:
            assert old is not None and new is not None
            key = f"{new.metadata.namespace}/{new.metadata.name}"
            was = self._bound.get(key)
            if was is None and new.spec.node_name and not _terminal(new):
                self._count_in(new, now)
                rec = self.records.get(key)
                if rec is not None and rec.state == PENDING:
                    self._bind(rec, new.spec.node_name, now)
            elif was is not None and _terminal(new):
                self._count_out(key)
        elif etype == DELETED:
            assert old is not None
            key = f"{old.metadata.namespace}/{old.metadata.name}"
            if key in self._bound:
                self._count_out(key)
            rec = self.records.get(key)
            if rec is not None and rec.state == RUNNING:
                # Nothing but preemption deletes a running trace pod; count it even if the hook was not called.
                self._move(rec, PREEMPTED)
                rec.end = now
                self._lost(key)
            elif rec is not None and rec.state == PENDING:
                self._drop_shape(rec)

    def _count_in(self, pod: Pod, now: float) -> None:
        key = f"{pod.metadata.namespace}/{pod.metadata.name}"
        rec = self.records.get(key)
        vec = rec.vector if rec is not None and rec.vector is not None else self.ledger.vector(pod)[0]
        self._bound[key] = (pod.spec.node_name, vec)
        self.overcommits.extend(self.ledger.add(pod.spec.node_name, vec, key, now))

    def _count_out(self, key: str) -> None:
        node, vec = self._bound.pop(key)
        self.ledger.remove(node, vec)

    def _move(self, rec: PodRecord, state: str) -> None:
        self.counts[rec.state] -= 1
        self.counts[state] += 1
        rec.state = state

    def _drop_shape(self, rec: PodRecord) -> None:
        if rec.shape is not None:
            self.pending_shapes[rec.shape] -= 1
            if self.pending_shapes[rec.shape] <= 0:
                del self.pending_shapes[rec.shape]
            rec.shape = None

    def _bind(self, rec: PodRecord, node: str, now: float) -> None:
        self._drop_shape(rec)
        self._move(rec, RUNNING)
        rec.bound = now
        rec.node = node
        if rec.duration is not None:
            heapq.heappush(self.finishes, (now + rec.duration, self._finish_seq, rec.key))
            self._finish_seq += 1

    # ------------------------------------------------------------ events

    def _arrive(self, e: TraceEntry) -> None:
        rec = self.records[e.key]
        try:
            pod = self.cluster.client.create("Pod", e.pod)
        except Exception as err:  # noqa: BLE001 - admission refusals: one line naming the trace line
            raise InputError(self.trace.source, str(err), f"line {e.line}") from None
        self.counts[PENDING] += 1
        self._arrived += 1
        # Requests as admitted (copied from limits where only limits are set), as the scheduler sees them.
        vec, outside = self.ledger.vector(pod)
        rec.vector = vec
        if not outside and self.ledger.fits_somewhere(vec):
            rec.shape = tuple(int(v) for v in vec)
            self.pending_shapes[rec.shape] += 1

    def _finish(self, key: str, now: float) -> None:
        rec = self.records[key]
        if rec.state != RUNNING:
            return
        pod: Pod | None = self.cluster.store.find("Pod", key)
        if pod is None or pod.metadata.deletion_timestamp is not None:
            return  # a preemption victim in its grace period: it goes when that ends
        status = msgspec.structs.replace(pod.status, phase="Succeeded")
        self.cluster.client.update("Pod", msgspec.structs.replace(pod, status=status))
        self._move(rec, FINISHED)
        rec.end = now
        job = self._jobs.get(key)
        if job is not None:
            self._start(job.finished(now))

    def _start(self, entries: list[TraceEntry]) -> None:
        """Pods a Job starts now (the next after one finished, or a preempted one's replacement)."""
        for e in entries:
            if e.key in self.records or self.cluster.store.find("Pod", e.key) is not None:
                raise InputError(self.trace.source, f"Job pod {e.key} already exists", f"line {e.line}", "name")
            self.records[e.key] = PodRecord(e.key, e.line, e.time, e.duration)
            if e.job is not None:
                self._jobs[e.key] = e.job
            self._due.append(e)
            self._spawned.append(e)

    def _lost(self, key: str) -> None:
        job = self._jobs.get(key)
        if job is not None:
            self._start(job.lost(self.cluster.clock.now()))

    def _next_time(self, next_arrival: int) -> float | None:
        times = [self.cluster.clock.now()] if self._due else []
        if self._ticks and self._ticks[0][0] <= self._tick_horizon:
            times.append(self._ticks[0][0])
        if next_arrival < len(self.trace.entries):
            times.append(self.trace.entries[next_arrival].time)
        if self.finishes:
            times.append(self.finishes[0][0])
        for t in (self.scheduler.next_parked_deadline(), self.cluster.client.next_termination()):
            if t is not None:
                times.append(t)
        return min(times) if times else None

    def _settle(self) -> None:
        sched = self.scheduler
        for _ in range(_MAX_STEPS_PER_TIME):
            if sched.schedule_one():
                self.attempts += 1
                continue
            if sched.has_parked() and sched.resume_parked():
                continue
            return
        raise RuntimeError(f"replay did not settle at t={self.cluster.clock.now()}")

    def _sample(self) -> None:
        s = self.samples
        c = self.counts
        s.time.append(self.cluster.clock.now())
        s.arrived.append(self._arrived)
        s.pending.append(c[PENDING])
        s.running.append(c[RUNNING])
        s.finished.append(c[FINISHED])
        s.preempted.append(c[PREEMPTED])
        n = len(self.resources)
        s.requested.append([int(v) for v in self.ledger.total_requested[:n]])
        s.fragmented.append([int(v) for v in self.ledger.fragmented(self.pending_shapes)])
        self.heat.offer(s.time[-1], self.ledger.shares)

    # ------------------------------------------------------------ the loop

    def run(self) -> ReplayRun:
        if self._ran:
            raise RuntimeError("a Replay runs once")
        self._ran = True
        clock = self.cluster.clock
        client = self.cluster.client
        sched = self.scheduler
        queue = sched.queue
        assert queue is not None
        entries = self.trace.entries
        total = len(entries)
        nxt = 0
        last_t: float | None = None
        steps_at_t = 0
        with collector_paused():
            self._sample()
            while True:
                t = self._next_time(nxt)
                if t is None or (self.until is not None and t > self.until):
                    break
                steps_at_t = steps_at_t + 1 if t == last_t else 1
                last_t = t
                if steps_at_t > _MAX_STEPS_PER_TIME:
                    raise RuntimeError(f"replay made no progress at t={t}")
                clock.advance_to(t)
                now = clock.now()
                client.finish_terminations(now)
                while self.finishes and self.finishes[0][0] <= now:
                    _, _, key = heapq.heappop(self.finishes)
                    self._finish(key, now)
                while self._ticks and self._ticks[0][0] <= now and self._ticks[0][0] <= self._tick_horizon:
                    at, order, cron = heapq.heappop(self._ticks)
                    self._start(cron.tick(at))
                    heapq.heappush(self._ticks, (cron.next_tick(at), order, cron))
                while self._due:
                    self._arrive(self._due.pop(0))
                while nxt < total and entries[nxt].time <= now:
                    self._arrive(entries[nxt])
                    nxt += 1
                sched.sync()
                queue.flush_backoff_completed()
                queue.flush_unschedulable_leftover()
                sched.resume_parked()
                self._settle()
                self._sample()
                if self.progress is not None:
                    self.progress(nxt, total)
            if self.until is not None and clock.now() < self.until:
                clock.advance_to(self.until)
                self._sample()
        end = clock.now()
        self.heat.close(end, self.ledger.shares())
        n = len(self.resources)
        return ReplayRun(
            label=self.label,
            resources=list(self.resources),
            nodes=list(self.ledger.nodes),
            allocatable=[int(v) for v in self.ledger.total_allocatable[:n]],
            pods=[self.records[e.key] for e in sorted([*entries, *self._spawned], key=lambda e: e.line)],
            samples=self.samples,
            heat_times=list(self.heat.times),
            heat=list(self.heat.frames),
            overcommits=list(self.overcommits),
            initial_pods=self.initial_pods,
            initial_preempted=self.initial_preempted,
            attempts=self.attempts,
            end_time=end,
        )


@dataclass(frozen=True)
class RunConfig:
    """A configuration to replay under: its label in reports, and the file it came from (for errors)."""

    label: str
    config: KubeSchedulerConfiguration | None = None
    source: str | None = None


def replay_all(
    scenario: Scenario,
    trace: Trace,
    configs: Sequence[RunConfig],
    *,
    seed: int = 0,
    until: float | None = None,
    progress: Callable[[str], Progress | None] | None = None,
) -> list[ReplayRun]:
    """The same trace under each configuration, in order; `progress(label)` gives a run's progress callback."""
    runs = []
    for rc in configs:
        cb = progress(rc.label) if progress is not None else None
        replay = Replay(
            scenario, trace, rc.config, seed=seed, label=rc.label, config_source=rc.source, until=until, progress=cb
        )
        runs.append(replay.run())
    return runs
