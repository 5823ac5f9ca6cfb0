"""Scheduler metrics under upstream's names and labels (pkg/scheduler/metrics), exposed through prometheus_client.

Each Scheduler has its own registry, so that simulations and tests running
side by side do not add up; live mode serves it on /metrics with the
collectors of its own (pending pods, leader election, REST client) added.

The values are kept as plain numbers and handed to prometheus_client only when
the registry is collected (a scrape, `value`, `exposition`): its Counter.inc and
Histogram.observe take a lock and walk the buckets in Python on every call, and
they are called per pod. The samples are the ones its Counter and Histogram
would expose: same names, labels, buckets, values and order.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, disable_created_metrics, generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.utils import INF, floatToGoString

# component-base metrics expose no `_created` series.
disable_created_metrics()


def _exponential(start: float, factor: float, n: int) -> tuple[float, ...]:
    return tuple(start * factor**i for i in range(n))


class CounterValue:
    """One counter series."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def inc(self, amount: float = 1.0) -> None:
        self.value += amount


class HistogramValue:
    """One histogram series: per-bucket counts (not cumulative; +Inf last) and the sum of observations."""

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds  # ends with +Inf
        self.counts = [0] * len(bounds)
        self.sum = 0.0

    def observe(self, amount: float) -> None:
        # The first bucket whose upper bound is >= amount, as prometheus_client's Histogram picks it.
        self.counts[bisect_left(self.bounds, amount)] += 1
        self.sum += amount

    def buckets(self) -> list[tuple[str, float]]:
        out: list[tuple[str, float]] = []
        acc = 0.0
        for bound, n in zip(self.bounds, self.counts, strict=True):
            acc += n
            out.append((floatToGoString(bound), acc))
        return out


_ATTEMPTS_HELP = (
    "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, "
    "while 'error' means an internal scheduler problem."
)
_LABELS = ("result", "profile")


class Metrics:
    """The scheduler's metrics and their registry."""

    def __init__(self) -> None:
        self.preemption_attempts = CounterValue()
        self.preemption_victims = HistogramValue((*_exponential(1, 2, 7), INF))
        self.pod_scheduling_attempts = HistogramValue((*_exponential(1, 2, 5), INF))
        self._duration_bounds = (*_exponential(0.001, 2, 15), INF)
        # (result, profile) -> the attempts counter and the attempt-duration histogram, in first-use order.
        self._attempts: dict[tuple[str, str], tuple[CounterValue, HistogramValue]] = {}
        self.registry = CollectorRegistry()
        self.registry.register(self)

    def _attempt(self, result: str, profile: str) -> tuple[CounterValue, HistogramValue]:
        series = self._attempts.get((result, profile))
        if series is None:
            series = self._attempts[(result, profile)] = (CounterValue(), HistogramValue(self._duration_bounds))
        return series

    def observe_scheduled(self, profile: str, attempts: int, seconds: float = 0.0) -> None:
        attempts_total, duration = self._attempt("scheduled", profile)
        attempts_total.value += 1.0
        self.pod_scheduling_attempts.observe(attempts)
        duration.observe(seconds)

    def observe_failure(self, profile: str, reason: str, seconds: float = 0.0) -> None:
        attempts_total, duration = self._attempt("unschedulable" if reason == "Unschedulable" else "error", profile)
        attempts_total.value += 1.0
        duration.observe(seconds)

    def collect(self) -> Iterator[Metric]:
        """The registry's collector: the families in the order they were registered before (one per metric)."""
        # A copy: live mode scrapes from another thread while the scheduler may add a series.
        series = list(self._attempts.items())
        attempts = CounterMetricFamily("scheduler_schedule_attempts", _ATTEMPTS_HELP, labels=_LABELS)
        for labels, (counter, _) in series:
            attempts.add_metric(labels, counter.value)
        yield attempts
        yield CounterMetricFamily(
            "scheduler_preemption_attempts",
            "Total preemption attempts in the cluster till now",
            value=self.preemption_attempts.value,
        )
        yield _histogram(
            "scheduler_preemption_victims", "Number of selected preemption victims", self.preemption_victims
        )
        yield _histogram(
            "scheduler_pod_scheduling_attempts",
            "Number of attempts to successfully schedule a pod.",
            self.pod_scheduling_attempts,
        )
        duration = HistogramMetricFamily(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            labels=_LABELS,
        )
        for labels, (_, hist) in series:
            duration.add_metric(labels, hist.buckets(), hist.sum)
        yield duration

    def value(self, sample: str, **labels: str) -> float:
        """A sample's current value (e.g. "scheduler_preemption_victims_sum"), 0 when never recorded."""
        v = self.registry.get_sample_value(sample, labels)
        return v if v is not None else 0.0

    def exposition(self) -> str:
        """Prometheus' text format, for /metrics."""
        return generate_latest(self.registry).decode()


def _histogram(name: str, documentation: str, hist: HistogramValue) -> HistogramMetricFamily:
    return HistogramMetricFamily(name, documentation, buckets=hist.buckets(), sum_value=hist.sum)
