"""What a replay measures: pod states, requests per node, utilization, fragmentation, latency.

Utilization here is what the scheduler allocates (the sum of the requests of
the pods bound to a node over its allocatable), not what containers use: the
replay has no kubelet. The ledger keeps those sums itself, from the pods'
watch events, apart from the scheduler's cache, so that it can check the
scheduler: a binding that takes a node past its allocatable is recorded as an
over-commit.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.api.core import Node, Pod
from kubesched.api.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    is_scalar_resource_name,
    parse_resource_list,
    pod_requests,
    to_amounts,
)

PENDING = "pending"
RUNNING = "running"
FINISHED = "finished"
PREEMPTED = "preempted"
STATES = (PENDING, RUNNING, FINISHED, PREEMPTED)

UNITS = {CPU: "millicores", MEMORY: "bytes", EPHEMERAL_STORAGE: "bytes"}


def unit(resource: str) -> str:
    """How the ledger counts a resource: millicores, bytes, or a plain count (extended resources)."""
    if resource.startswith("hugepages-"):
        return "bytes"
    return UNITS.get(resource, "count")


def resource_axes(nodes: Iterable[Node], pods: Iterable[Pod]) -> list[str]:
    """The resources a replay reports: cpu, memory, then ephemeral-storage and extended resources in use.

    Ephemeral storage only when some pod asks for it; extended resources (and
    hugepages) when some node offers them.
    """
    scalars: set[str] = set()
    for n in nodes:
        for name in n.status.allocatable or n.status.capacity:
            if is_scalar_resource_name(name):
                scalars.add(name)
    axes = [CPU, MEMORY]
    if any(EPHEMERAL_STORAGE in pod_requests(p) for p in pods):
        axes.append(EPHEMERAL_STORAGE)
    return axes + sorted(scalars)


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile of sorted `values`: the smallest value with at least p% of values at or below it."""
    if not values:
        raise ValueError("percentile of no values")
    if p <= 0:
        return float(values[0])
    rank = math.ceil(p / 100.0 * len(values))
    return float(values[min(rank, len(values)) - 1])


def distribution(values: Iterable[float]) -> dict[str, float | int | None]:
    """Count, mean, p50/p90/p99 (nearest rank) and max; None for each statistic when there are no values."""
    xs = sorted(values)
    if not xs:
        return {"count": 0, "mean": None, "p50": None, "p90": None, "p99": None, "max": None}
    return {
        "count": len(xs),
        "mean": sum(xs) / len(xs),
        "p50": percentile(xs, 50),
        "p90": percentile(xs, 90),
        "p99": percentile(xs, 99),
        "max": float(xs[-1]),
    }


def time_weighted_mean(times: Sequence[float], values: Sequence[float]) -> float:
    """Mean of a step function (each value holds until the next time); the last value when no time passes."""
    if not values:
        return 0.0
    span = times[-1] - times[0]
    if span <= 0:
        return float(values[-1])
    total = 0.0
    for i in range(len(times) - 1):
        total += values[i] * (times[i + 1] - times[i])
    return total / span


@dataclass(frozen=True)
class Overcommit:
    """A binding that took a node past its allocatable for a resource the pod asks for."""

    time: float
    node: str
    pod: str
    resource: str
    requested: int
    allocatable: int


class Ledger:
    """Requests bound to each node, one int64 row per node, one column per resource (and a last for pods)."""

    def __init__(self, nodes: Sequence[Node], resources: Sequence[str]) -> None:
        self.resources = list(resources)
        self.columns = [*self.resources, PODS]
        self.nodes = [n.metadata.name for n in nodes]
        self.index = {name: i for i, name in enumerate(self.nodes)}
        self.allocatable = np.zeros((len(self.nodes), len(self.columns)), dtype=np.int64)
        for i, n in enumerate(nodes):
            amounts = to_amounts(parse_resource_list(n.status.allocatable or n.status.capacity))
            for j, r in enumerate(self.columns):
                self.allocatable[i, j] = amounts.get(r, 0)
        self.requested = np.zeros_like(self.allocatable)
        self.total_allocatable = self.allocatable.sum(axis=0)
        self.total_requested = np.zeros(len(self.columns), dtype=np.int64)

    def vector(self, pod: Pod) -> tuple[np.ndarray, bool]:
        """The pod's requests over the columns, and whether it asks for a resource outside them."""
        amounts = to_amounts(pod_requests(pod))
        vec = np.zeros(len(self.columns), dtype=np.int64)
        for j, r in enumerate(self.resources):
            vec[j] = amounts.get(r, 0)
        vec[-1] = 1
        known = set(self.resources)
        outside = any(v > 0 and r not in known and r != PODS for r, v in amounts.items())
        return vec, outside

    def add(self, node: str, vec: np.ndarray, pod: str, now: float) -> list[Overcommit]:
        i = self.index.get(node)
        if i is None:
            return []
        self.requested[i] += vec
        self.total_requested += vec
        over = (self.requested[i] > self.allocatable[i]) & (vec > 0)
        return [
            Overcommit(now, node, pod, self.columns[j], int(self.requested[i, j]), int(self.allocatable[i, j]))
            for j in np.flatnonzero(over)
        ]

    def remove(self, node: str, vec: np.ndarray) -> None:
        i = self.index.get(node)
        if i is None:
            return
        self.requested[i] -= vec
        self.total_requested -= vec

    def fits_somewhere(self, vec: np.ndarray) -> bool:
        """Whether requests `vec` fit some node's allocatable when that node is empty."""
        return bool((self.allocatable >= vec).all(axis=1).any())

    def fragmented(self, shapes: Iterable[tuple[int, ...]]) -> np.ndarray:
        """Free amount per resource on the nodes where none of the pending pods' requests fit (resources only).

        `shapes` are the request vectors of the pending pods that would fit some
        node if it were empty: a pod larger than every node is not held back by
        fragmentation, and would make every free core look stranded.
        """
        free = self.allocatable - self.requested
        usable = np.zeros(len(self.nodes), dtype=bool)
        any_shape = False
        for shape in shapes:
            any_shape = True
            usable |= (free >= np.asarray(shape, dtype=np.int64)).all(axis=1)
        if not any_shape:
            return np.zeros(len(self.resources), dtype=np.int64)
        stranded = np.where(usable[:, None], 0, np.maximum(free, 0))
        return stranded.sum(axis=0)[: len(self.resources)]

    def shares(self) -> np.ndarray:
        """Per node and resource, requested / allocatable (NaN where the node has none of it)."""
        alloc = self.allocatable[:, : len(self.resources)].astype(np.float64)
        req = self.requested[:, : len(self.resources)].astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(alloc > 0, req / np.where(alloc > 0, alloc, 1.0), np.nan)


@dataclass
class PodRecord:
    """One trace pod's life: arrival, binding, end (finished or preempted) and where it ran."""

    key: str
    line: int
    arrival: float
    duration: float | None
    state: str = PENDING
    bound: float | None = None
    node: str | None = None
    end: float | None = None
    vector: np.ndarray | None = field(default=None, repr=False)
    shape: tuple[int, ...] | None = field(default=None, repr=False)

    def pending_time(self, end_of_replay: float) -> float:
        """Seconds spent unbound: until bound, or until the end of the replay for a pod still pending."""
        until = self.bound if self.bound is not None else end_of_replay
        return max(until - self.arrival, 0.0)


@dataclass
class Samples:
    """The cluster after each step of the replay (every distinct event time), as parallel lists."""

    time: list[float] = field(default_factory=list)
    arrived: list[int] = field(default_factory=list)
    pending: list[int] = field(default_factory=list)
    running: list[int] = field(default_factory=list)
    finished: list[int] = field(default_factory=list)
    preempted: list[int] = field(default_factory=list)
    requested: list[list[int]] = field(default_factory=list)  # per sample, per resource
    fragmented: list[list[int]] = field(default_factory=list)  # per sample, per resource

    def __len__(self) -> int:
        return len(self.time)


class HeatMap:
    """Per-node shares at most ~`columns` sampled times: every `stride`-th sample, the stride doubling as needed."""

    def __init__(self, columns: int) -> None:
        self.cap = max(columns, 2)
        self.stride = 1
        self.seen = 0
        self.times: list[float] = []
        self.frames: list[np.ndarray] = []  # each: nodes x resources

    def offer(self, t: float, shares_fn: Any) -> None:
        if self.seen % self.stride == 0:
            self.times.append(t)
            self.frames.append(shares_fn())
            if len(self.frames) > self.cap:
                self.times = self.times[::2]
                self.frames = self.frames[::2]
                self.stride *= 2
        self.seen += 1

    def close(self, t: float, shares: np.ndarray) -> None:
        """Make the last column the end state."""
        if self.times and self.times[-1] == t:
            self.frames[-1] = shares
        else:
            self.times.append(t)
            self.frames.append(shares)


@dataclass
class ReplayRun:
    """The outcome of replaying one trace under one configuration."""

    label: str
    resources: list[str]
    nodes: list[str]
    allocatable: list[int]  # cluster total per resource
    pods: list[PodRecord]
    samples: Samples
    heat_times: list[float]
    heat: list[np.ndarray]  # per column: nodes x resources
    overcommits: list[Overcommit]
    initial_pods: int
    initial_preempted: int
    attempts: int
    end_time: float

    def counts(self) -> dict[str, int]:
        c = Counter(p.state for p in self.pods)
        return {s: c.get(s, 0) for s in STATES}

    def latencies(self) -> list[float]:
        """Arrival to binding, for every pod that was bound."""
        return [p.bound - p.arrival for p in self.pods if p.bound is not None]

    def pending_times(self) -> list[float]:
        return [p.pending_time(self.end_time) for p in self.pods]

    def utilization(self) -> dict[str, list[float]]:
        """Cluster-wide requested / allocatable per resource, at each sample."""
        out: dict[str, list[float]] = {}
        for j, r in enumerate(self.resources):
            alloc = self.allocatable[j]
            out[r] = [(row[j] / alloc if alloc else 0.0) for row in self.samples.requested]
        return out

    def fragmentation(self) -> dict[str, list[float]]:
        """Free capacity no pending pod can use, as a share of the cluster's allocatable, at each sample."""
        out: dict[str, list[float]] = {}
        for j, r in enumerate(self.resources):
            alloc = self.allocatable[j]
            out[r] = [(row[j] / alloc if alloc else 0.0) for row in self.samples.fragmented]
        return out

    def summary(self) -> dict[str, Any]:
        c = self.counts()
        times = self.samples.time
        util = self.utilization()
        frag = self.fragmentation()
        return {
            "arrived": len(self.pods),
            "scheduled": sum(1 for p in self.pods if p.bound is not None),
            "running": c[RUNNING],
            "pending": c[PENDING],
            "finished": c[FINISHED],
            "preempted": c[PREEMPTED],
            "initialPods": self.initial_pods,
            "initialPreempted": self.initial_preempted,
            "schedulingAttempts": self.attempts,
            "endTime": self.end_time,
            "latencySeconds": distribution(self.latencies()),
            "pendingSeconds": distribution(self.pending_times()),
            "utilization": {
                r: {"mean": time_weighted_mean(times, util[r]), "peak": max(util[r], default=0.0)}
                for r in self.resources
            },
            "fragmentation": {
                r: {
                    "mean": time_weighted_mean(times, frag[r]),
                    "peak": max(frag[r], default=0.0),
                    "end": frag[r][-1] if frag[r] else 0.0,
                }
                for r in self.resources
            },
            "overcommits": len(self.overcommits),
        }
