"""`kubesched run`: the Scheduler against a real cluster, as a secondary scheduler.

Threads:
- the scheduler thread (the caller's): applies what the reflectors received to
  the mirror, lets the Scheduler deliver it to its cache and queue, and runs
  scheduling cycles while this replica leads;
- the I/O loop: reflectors, leader election, status patches, events, the
  health and metrics server;
- the bind pool: the HTTP part of binding cycles.

Only pods whose spec.schedulerName names one of the configuration's profiles
are scheduled; all other pods (assigned ones included) only fill the cache.
SIGTERM stops scheduling, lets in-flight binds finish, flushes status patches
and events, and releases the lease. Losing the lease stops scheduling at once
and exits with status 1, as kube-scheduler does.
"""

from __future__ import annotations

import logging
import queue
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from kubesched.api.decode import KINDS
from kubesched.cluster.clock import RealClock
from kubesched.cluster.store import DELETED, MODIFIED
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.live import gc_policy
from kubesched.live.binder import BINDING_CYCLES_MAX, BindPool
from kubesched.live.client import LiveClient
from kubesched.live.events import EventBroadcaster
from kubesched.live.health import HealthServer
from kubesched.live.iothread import IoLoop
from kubesched.live.kubeconfig import Connection
from kubesched.live.leader import LeaderElector, default_identity
from kubesched.live.mirror import MirrorCluster, MirrorStore
from kubesched.live.reflector import Reflector
from kubesched.live.resources import BY_KIND, PLUGIN_KINDS, POD_FIELD_SELECTOR, SCHEDULER_KINDS
from kubesched.live.rest import USER_AGENT, RestClient

log = logging.getLogger("kubesched.live")

BACKOFF_FLUSH_PERIOD = 1.0
UNSCHEDULABLE_FLUSH_PERIOD = 30.0
SHUTDOWN_BIND_TIMEOUT = 30.0
SHUTDOWN_FLUSH_TIMEOUT = 5.0


class LiveScheduler:
    def __init__(
        self,
        config: KubeSchedulerConfiguration,
        conn: Connection,
        *,
        bind_address: str = "127.0.0.1",
        port: int = 10259,
        identity: str | None = None,
        seed: int = 0,
        registry: Any = None,
        bind_workers: int | None = None,
        gc_after_sync: tuple[int, int, int] | None = None,
    ) -> None:
        self.config = config
        # The collector's thresholds to restore once synced (gc_policy.synced): for the process's own scheduler.
        self.gc_after_sync = gc_after_sync
        self.conn = conn
        self.bind_address = bind_address
        self.port = port
        self.identity = identity or default_identity()
        self.seed = seed
        self.registry = registry
        cc = config.client_connection
        self.io = IoLoop()
        # Three clients, each with its own rate limiter, as kube-scheduler's createClients: the scheduler's
        # (binds, status patches, reflectors), the event recorder's, and leader election's (timeout renewDeadline/2).
        self.rest = RestClient(conn, qps=cc.qps, burst=cc.burst)
        self.event_rest = RestClient(conn, qps=cc.qps, burst=cc.burst)
        le = config.leader_election
        self.le_rest = RestClient(
            conn, qps=cc.qps, burst=cc.burst, user_agent=f"{USER_AGENT}/leader-election", timeout=le.renew_deadline / 2
        )
        self.clock = RealClock()
        self.mirror = MirrorStore(self.clock)
        self.events = EventBroadcaster(self.event_rest)
        # Binds and status patches share the API dispatcher's `parallelism` calls at a time, as upstream's.
        workers = bind_workers or config.parallelism
        self.client = LiveClient(self.rest, self.io, self.mirror, self.events, parallelism=workers)
        self.cluster = MirrorCluster(self.mirror, self.client)
        self.inbox: queue.SimpleQueue[tuple[Any, ...]] = queue.SimpleQueue()
        self.pool = BindPool(BINDING_CYCLES_MAX, self.inbox.put)
        self.leading = threading.Event()
        self.stopping = False
        self.lost = False
        self.synced = False
        self.sched: Any = None
        self.reflectors: list[Reflector] = []
        self.elector: LeaderElector | None = None
        self.health = HealthServer(self._healthy, lambda: self.synced, self.metrics_text)
        self._pending_counts: dict[str, int] = {}
        # Metrics read at scrape time (queue lengths, lease, REST calls); before the scheduler exists, alone.
        self._collector = _RunnerCollector(self)
        self._bare_registry = CollectorRegistry()
        self._bare_registry.register(self._collector)
        self._synced_kinds: set[str] = set()

    # ------------------------------------------------------------ inbox (scheduler thread)

    def _handle(self, item: tuple[Any, ...]) -> None:
        what = item[0]
        if what == "event":
            self.mirror.apply(item[1], item[2], item[3])
            if item[1] == "Pod":
                self.client.observe_pod(item[2], item[3])
        elif what == "replace":
            self.mirror.replace(item[1], item[2], item[3])
            if item[1] == "Pod":
                self.client.observe_pods(item[2])
            self._synced_kinds.add(item[1])
        elif what == "bound":
            _, pod, node, s, seconds, done = item
            self.pool.complete(pod, node, s, seconds, done)

    def _drain(self, block: bool, timeout: float | None = None) -> int:
        try:
            item = self.inbox.get(timeout=timeout) if block else self.inbox.get_nowait()
        except queue.Empty:
            return 0
        n = 0
        while True:
            self._handle(item)
            n += 1
            try:
                item = self.inbox.get_nowait()
            except queue.Empty:
                return n

    def _wake(self) -> None:
        self.inbox.put(("wake",))

    # ------------------------------------------------------------ hooks

    def _on_pod(self, etype: str, old: Any, new: Any) -> None:
        """A pod changed or left: its events about what it was can no longer repeat (EventBroadcaster.forget)."""
        if etype == MODIFIED:
            self.io.call_batched(self.events.forget, new.metadata.uid, new.metadata.resource_version)
        elif etype == DELETED:
            self.io.call_batched(self.events.forget, old.metadata.uid, "")

    def _bind_runner(self, pod: Any, node: str, work: Any, done: Any) -> None:
        self.pool.submit(pod, node, work, done)

    def _bind_caller(self, pod: Any, node: str, status_of: Any, done: Any) -> None:
        def start(finished: Any) -> None:
            self.client.bind_nowait(pod.namespace, pod.name, pod.uid, node, lambda err: finished(status_of(err)))

        self.pool.submit_call(pod, node, start, done)

    def _on_started_leading(self) -> None:
        log.info("Started leading", extra={"identity": self.identity})
        self.leading.set()
        self._wake()

    def _on_stopped_leading(self) -> None:
        self.leading.clear()
        if not self.stopping:
            self.lost = True
        self._wake()

    def _clients(self) -> tuple[RestClient, ...]:
        return (self.rest, self.event_rest, self.le_rest)

    def _healthy(self) -> str | None:
        return self.elector.check() if self.elector is not None else None

    def metrics_text(self) -> str:
        """/metrics: the scheduler's registry, with this runner's own collector in it."""
        registry = self.sched.metrics.registry if self.sched is not None else self._bare_registry
        return generate_latest(registry).decode()

    # ------------------------------------------------------------ lifecycle

    def _build_scheduler(self) -> None:
        from kubesched.scheduler import Scheduler

        # No AttemptObserver: a long-running scheduler keeps no record of attempts (scheduler.AttemptObserver).
        self.sched = Scheduler(self.cluster, self.config, clock=self.clock.now, seed=self.seed, registry=self.registry)
        self.sched.log_errors = True
        self.sched.metrics.registry.register(self._collector)
        self.mirror.subscribe("Pod", self._on_pod)
        if hasattr(self.sched, "bind_runner"):
            self.sched.bind_runner = self._bind_runner
            self.sched.bind_caller = self._bind_caller
        else:
            log.warning("This Scheduler binds synchronously (no bind_runner): binds are not concurrent")

    def start(self, check: Callable[[], None] | None = None) -> None:
        """Send the initial lists, then (while the API server encodes them on its own CPU) run `check`,
        serve health and metrics and build the scheduler: start-up work overlaps the lists' round trip."""
        self.io.start()
        for rest in self._clients():
            self.io.call(rest.open())
        kinds = [k for k in (*SCHEDULER_KINDS, *PLUGIN_KINDS) if k in KINDS]
        for kind in kinds:
            r = Reflector(
                self.rest, BY_KIND[kind], self.inbox.put, field_selector=POD_FIELD_SELECTOR if kind == "Pod" else ""
            )
            self.reflectors.append(r)
            self.io.spawn(r.run(), f"reflector {kind}")
        if check is not None:
            check()
        self.port = self.health.start(self.bind_address, self.port)
        log.info("Serving health and metrics", extra={"address": f"http://{self.bind_address}:{self.port}"})
        self.io.spawn(self.events.run(), "event series")
        self._build_scheduler()

    def wait_for_sync(self) -> bool:
        """Apply the initial lists (WaitForCacheSync); False if asked to stop first."""
        want = {r.kind for r in self.reflectors}
        while not want <= self._synced_kinds:
            if self.stopping:
                return False
            self._drain(True, 0.2)
        self.sched.sync()
        if self.gc_after_sync is not None:
            gc_policy.synced(self.gc_after_sync)
        self.synced = True
        log.info("Caches synced", extra={"kinds": len(want), "pods": self.mirror.count("Pod")})
        return True

    def start_leading(self) -> None:
        le = self.config.leader_election
        names = [fw.profile_name for fw in self.sched.profiles.values()]
        if "default-scheduler" in names:
            log.warning("A profile is named default-scheduler: this replica competes with kube-scheduler for its pods")
        if not le.leader_elect:
            self._on_started_leading()
            return
        if (le.resource_namespace, le.resource_name) == ("kube-system", "kube-scheduler"):
            log.warning("Leader election uses kube-scheduler's own Lease: set leaderElection.resourceName")
        self.elector = LeaderElector(
            self.le_rest,
            le.resource_namespace,
            le.resource_name,
            self.identity,
            lease_duration=le.lease_duration,
            renew_deadline=le.renew_deadline,
            retry_period=le.retry_period,
            on_started=self._on_started_leading,
            on_stopped=self._on_stopped_leading,
        )
        self.io.spawn(self.elector.run(), "leader election")

    def loop(self) -> None:
        """Schedule while leading, until stopped or the lease is lost."""
        sched = self.sched
        q = sched.queue
        next_flush = next_leftover = 0.0
        while not self.stopping and not self.lost:
            self._drain(False)
            now = time.monotonic()
            leading = self.leading.is_set()
            if now >= next_flush:
                next_flush = now + BACKOFF_FLUSH_PERIOD
                self._pending_counts = q.pending_counts()
                if leading:
                    q.flush_backoff_completed()
            if not leading:
                sched.sync()
                self._drain(True, 0.25)
                continue
            if now >= next_leftover:
                next_leftover = now + UNSCHEDULABLE_FLUSH_PERIOD
                q.flush_unschedulable_leftover()
            progressed = bool(sched.has_parked() and sched.resume_parked())
            if self.pool.full:
                self._drain(True, 0.05)
                continue
            if self.leading.is_set() and not self.stopping:
                progressed = sched.schedule_one() or progressed
            if not progressed:
                wait = next_flush - time.monotonic()
                deadline = sched.next_parked_deadline()
                if deadline is not None:
                    wait = min(wait, deadline - self.clock.now())
                self._drain(True, max(wait, 0.005))

    def shutdown(self) -> None:
        if not self.lost:
            deadline = time.monotonic() + SHUTDOWN_BIND_TIMEOUT
            while self.pool.in_flight and time.monotonic() < deadline:
                self._drain(True, 0.1)
            self.client.dispatcher.wait_idle(SHUTDOWN_FLUSH_TIMEOUT)
            try:
                self.io.call(self.events.flush(SHUTDOWN_FLUSH_TIMEOUT), timeout=SHUTDOWN_FLUSH_TIMEOUT * 2)
            except Exception as err:  # noqa: BLE001 - best effort at shutdown
                log.warning("Could not flush events", extra={"err": repr(err)})
            if self.elector is not None:
                try:
                    if self.io.call(self.elector.stop(), timeout=SHUTDOWN_FLUSH_TIMEOUT):
                        log.info("Released the lease", extra={"identity": self.identity})
                except Exception as err:  # noqa: BLE001
                    log.warning("Could not release the lease", extra={"err": repr(err)})
        self.client.dispatcher.close()
        self.io.cancel_tasks()
        try:
            self.health.stop()
            for rest in self._clients():
                self.io.call(rest.close(), timeout=5)
        except Exception:  # noqa: BLE001, S110 - the process is ending anyway
            pass
        self.io.stop()
        self.pool.shutdown()

    def request_stop(self, *_args: Any) -> None:
        if not self.stopping:
            log.info("Requested to terminate, finishing in-flight binds")
        self.stopping = True
        self._wake()

    def run(self, check: Callable[[], None] | None = None) -> int:
        """The whole life of the process: 0 after a requested stop, 1 when the lease was lost.

        `check` runs once the initial lists are sent (see start); what it raises ends the run."""
        signal.signal(signal.SIGTERM, self.request_stop)
        signal.signal(signal.SIGINT, self.request_stop)
        try:
            self.start(check)
            if self.wait_for_sync():
                self.start_leading()
                self.loop()
        finally:
            self.shutdown()
        if self.lost:
            log.error("Leaderelection lost")
            return 1
        log.info("Stopped")
        return 0


_PENDING_HELP = (
    "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means "
    "number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that the "
    "scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods that the "
    "scheduler never attempted to schedule because they are gated."
)
_LEADER_HELP = (
    "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates "
    "master. 'name' is the string used to identify the lease. Please make sure to group by name."
)


class _RunnerCollector:
    """The runner's metrics, read when scraped: pending pods, leader election, REST calls, relists, binds."""

    def __init__(self, runner: LiveScheduler) -> None:
        self.runner = runner

    def collect(self) -> Iterator[Metric]:
        r = self.runner
        pending = GaugeMetricFamily("scheduler_pending_pods", _PENDING_HELP, labels=["queue"])
        for queue_name, n in sorted(r._pending_counts.items()):
            pending.add_metric([queue_name], n)
        yield pending
        le = r.config.leader_election
        if le.leader_elect:
            leader = GaugeMetricFamily("leader_election_master_status", _LEADER_HELP, labels=["name"])
            leader.add_metric([le.resource_name], 1.0 if r.leading.is_set() else 0.0)
            yield leader
        requests = CounterMetricFamily(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            labels=["code", "method", "host"],
        )
        for labels, v in sorted(_request_counts(r._clients(), r.conn.host).items()):
            requests.add_metric(list(labels), v)
        yield requests
        relists = CounterMetricFamily(
            "kubesched_reflector_relists",
            "Number of times a reflector listed again after its watch expired (410 Gone).",
            labels=["resource"],
        )
        for ref in r.reflectors:
            relists.add_metric([ref.resource.plural], float(ref.relists))
        yield relists
        calls = CounterMetricFamily(
            "scheduler_async_api_call_execution",
            "Total number of API calls executed by the async dispatcher.",
            labels=["call_type", "result"],
        )
        for (call_type, result), n in sorted(r.client.dispatcher.stats.executed.items()):
            calls.add_metric([call_type, result], float(n))
        yield calls
        waiting = GaugeMetricFamily(
            "scheduler_pending_async_api_calls",
            "Number of API calls currently pending in the async queue.",
            labels=["call_type"],
        )
        for call_type, n in sorted(r.client.dispatcher.pending_by_type().items()):
            waiting.add_metric([call_type], float(n))
        yield waiting
        sched = r.sched
        if sched is not None:
            # Read at scrape time; upstream's cache sets it every second (cleanupAssumedPods).
            cache = GaugeMetricFamily(
                "scheduler_scheduler_cache_size",
                "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
                labels=["type"],
            )
            cache.add_metric(["assumed_pods"], len(sched.cache.assumed))
            cache.add_metric(["pods"], len(sched.cache.pod_states))
            cache.add_metric(["nodes"], len(sched.cache.nodes))
            yield cache
        binds = CounterMetricFamily("kubesched_binds", "Number of binding API calls by result.", labels=["result"])
        binds.add_metric(["success"], float(r.pool.bound))
        binds.add_metric(["error"], float(r.pool.failed))
        yield binds


def _request_counts(clients: tuple[RestClient, ...], host: str) -> dict[tuple[str, str, str], float]:
    out: dict[tuple[str, str, str], float] = {}
    for rest in clients:
        for (code, method), n in dict(rest.requests).items():
            out[(code, method, host)] = out.get((code, method, host), 0.0) + n
    return out
