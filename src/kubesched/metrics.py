"""Scheduler metrics under upstream's names and labels (pkg/scheduler/metrics), on prometheus_client.

Each Scheduler has its own registry, so that simulations and tests running
side by side do not add up; live mode serves it on /metrics with the
collectors of its own (pending pods, leader election, REST client) added.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics, generate_latest

# component-base metrics expose no `_created` series.
disable_created_metrics()


def _exponential(start: float, factor: float, n: int) -> tuple[float, ...]:
    return tuple(start * factor**i for i in range(n))


class Metrics:
    """The scheduler's metrics registry."""

    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.schedule_attempts = Counter(
            "scheduler_schedule_attempts",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, "
            "while 'error' means an internal scheduler problem.",
            ("result", "profile"),
            registry=r,
        )
        self.preemption_attempts = Counter(
            "scheduler_preemption_attempts", "Total preemption attempts in the cluster till now", registry=r
        )
        self.preemption_victims = Histogram(
            "scheduler_preemption_victims",
            "Number of selected preemption victims",
            buckets=_exponential(1, 2, 7),
            registry=r,
        )
        self.pod_scheduling_attempts = Histogram(
            "scheduler_pod_scheduling_attempts",
            "Number of attempts to successfully schedule a pod.",
            buckets=_exponential(1, 2, 5),
            registry=r,
        )
        self.attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ("result", "profile"),
            buckets=_exponential(0.001, 2, 15),
            registry=r,
        )
        # The labelled children of an attempt's result and profile, looked up once (labels() locks and hashes).
        self._attempt_children: dict[tuple[str, str], tuple[Counter, Histogram]] = {}

    def _attempt(self, result: str, profile: str) -> tuple[Counter, Histogram]:
        children = self._attempt_children.get((result, profile))
        if children is None:
            children = (
                self.schedule_attempts.labels(result, profile),
                self.attempt_duration.labels(result, profile),
            )
            self._attempt_children[(result, profile)] = children
        return children

    def observe_scheduled(self, profile: str, attempts: int, seconds: float = 0.0) -> None:
        attempts_total, duration = self._attempt("scheduled", profile)
        attempts_total.inc()
        self.pod_scheduling_attempts.observe(attempts)
        duration.observe(seconds)

    def observe_failure(self, profile: str, reason: str, seconds: float = 0.0) -> None:
        attempts_total, duration = self._attempt("unschedulable" if reason == "Unschedulable" else "error", profile)
        attempts_total.inc()
        duration.observe(seconds)

    def value(self, sample: str, **labels: str) -> float:
        """A sample's current value (e.g. "scheduler_preemption_victims_sum"), 0 when never recorded."""
        v = self.registry.get_sample_value(sample, labels)
        return v if v is not None else 0.0

    def exposition(self) -> str:
        """Prometheus' text format, for /metrics."""
        return generate_latest(self.registry).decode()
