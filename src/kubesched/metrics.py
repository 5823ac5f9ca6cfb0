"""Scheduler metrics under upstream's names (pkg/scheduler/metrics), kept in process.

Counters and histograms are plain Python objects so the hot path stays cheap;
live mode exports them in Prometheus' text format with the same names.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field


@dataclass
class Counter:
    name: str
    help: str
    values: dict[tuple[str, ...], float] = field(default_factory=dict)

    def inc(self, *labels: str, by: float = 1.0) -> None:
        self.values[labels] = self.values.get(labels, 0.0) + by

    def get(self, *labels: str) -> float:
        return self.values.get(labels, 0.0)


@dataclass
class Histogram:
    name: str
    help: str
    buckets: tuple[float, ...]
    counts: dict[tuple[str, ...], list[int]] = field(default_factory=dict)
    sums: dict[tuple[str, ...], float] = field(default_factory=dict)

    def observe(self, value: float, *labels: str) -> None:
        c = self.counts.setdefault(labels, [0] * (len(self.buckets) + 1))
        c[bisect.bisect_left(self.buckets, value)] += 1
        self.sums[labels] = self.sums.get(labels, 0.0) + value

    def count(self, *labels: str) -> int:
        return sum(self.counts.get(labels, ()))


def _exponential(start: float, factor: float, n: int) -> tuple[float, ...]:
    return tuple(start * factor**i for i in range(n))


class Metrics:
    """The scheduler's metrics registry."""

    def __init__(self) -> None:
        self.schedule_attempts = Counter(
            "scheduler_schedule_attempts_total",
            "Number of attempts to schedule pods, by the result and profile.",
        )
        self.preemption_attempts = Counter("scheduler_preemption_attempts_total", "Total preemption attempts.")
        self.preemption_victims = Histogram(
            "scheduler_preemption_victims", "Number of selected preemption victims", _exponential(1, 2, 7)
        )
        self.pod_scheduling_attempts = Histogram(
            "scheduler_pod_scheduling_attempts",
            "Number of attempts to successfully schedule a pod.",
            _exponential(1, 2, 5),
        )
        self.attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            _exponential(0.001, 2, 15),
        )

    def observe_scheduled(self, profile: str, attempts: int, seconds: float = 0.0) -> None:
        self.schedule_attempts.inc("scheduled", profile)
        self.pod_scheduling_attempts.observe(attempts)
        self.attempt_duration.observe(seconds, "scheduled", profile)

    def observe_failure(self, profile: str, reason: str, seconds: float = 0.0) -> None:
        result = "unschedulable" if reason == "Unschedulable" else "error"
        self.schedule_attempts.inc(result, profile)
        self.attempt_duration.observe(seconds, result, profile)

    def all(self) -> list[Counter | Histogram]:
        return [
            self.schedule_attempts,
            self.preemption_attempts,
            self.preemption_victims,
            self.pod_scheduling_attempts,
            self.attempt_duration,
        ]
