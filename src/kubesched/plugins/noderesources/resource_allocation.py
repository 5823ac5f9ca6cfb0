"""Resource-allocation scoring shared by NodeResourcesFit and BalancedAllocation.

(noderesources/resource_allocation.go, least_allocated.go, most_allocated.go,
requested_to_capacity_ratio.go, balanced_allocation.go.) Each strategy has a
per-node reference and a vector form over snapshot columns; both use Go's
integer arithmetic (operands are non-negative, so // is Go's /, except in the
broken-linear shape where a decreasing shape needs truncation toward zero).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from kubesched.api.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    is_scalar_resource_name,
    pod_level_requests,
    pod_requests_non_missing,
    to_amounts,
)
from kubesched.config.types import ResourceSpec, UtilizationShapePoint
from kubesched.framework.interface import MAX_NODE_SCORE
from kubesched.framework.snapshot import Snapshot
from kubesched.framework.types import NodeInfo, PodInfo

MAX_UTILIZATION = 100
MAX_CUSTOM_PRIORITY_SCORE = 10

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
BALANCED = "BalancedAllocation"


def go_div(a: int, b: int) -> int:
    """Go's integer division: truncates toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def go_div_vec(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    return np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))


def go_round(x: float) -> int:
    """math.Round: half away from zero."""
    t = math.trunc(x)
    frac = x - t
    if frac >= 0.5:
        return t + 1
    if frac <= -0.5:
        return t - 1
    return t


class BrokenLinear:
    """helper.BuildBrokenLinearFunction over (utilization, score) points."""

    def __init__(self, points: Sequence[tuple[int, int]]) -> None:
        self.points = list(points)

    def __call__(self, p: int) -> int:
        pts = self.points
        for i, (u, s) in enumerate(pts):
            if p <= u:
                if i == 0:
                    return pts[0][1]
                pu, ps = pts[i - 1]
                return ps + go_div((s - ps) * (p - pu), u - pu)
        return pts[-1][1]

    def vec(self, p: np.ndarray) -> np.ndarray:
        pts = self.points
        out = np.full(len(p), pts[-1][1], np.int64)
        done = np.zeros(len(p), bool)
        for i, (u, s) in enumerate(pts):
            hit = (p <= u) & ~done
            if hit.any():
                if i == 0:
                    out[hit] = pts[0][1]
                else:
                    pu, ps = pts[i - 1]
                    out[hit] = ps + go_div_vec((s - ps) * (p[hit] - pu), u - pu)
                done |= hit
        return out


_NON_MISSING_KEY = "resource-allocation/non-missing"


def _non_missing_requests(pod: PodInfo) -> tuple[int, int]:
    """cpu (millicores) and memory as calculatePodResourceRequest counts them when not useRequested.

    The scorer always defaults every container missing a cpu or memory request
    (100m / 200Mi) and then lets pod-level requests win; only for a pod with
    pod-level requests does that differ from NodeInfo's NonZeroRequested.
    """
    if not pod_level_requests(pod.pod):
        return pod.non0_cpu, pod.non0_mem
    hit = pod.cache.get(_NON_MISSING_KEY)
    if hit is None:
        amounts = to_amounts(pod_requests_non_missing(pod.pod))
        hit = pod.cache[_NON_MISSING_KEY] = (amounts.get(CPU, 0), amounts.get(MEMORY, 0))
    return hit


class ResourceAllocationScorer:
    """Scores a node by the resources in `resources` with one of the four strategies."""

    def __init__(
        self,
        strategy: str,
        resources: Sequence[ResourceSpec],
        use_requested: bool,
        shape: Sequence[UtilizationShapePoint] | None = None,
    ) -> None:
        self.strategy = strategy
        self.resources = list(resources)
        self.names = [r.name for r in self.resources]
        self.weights = [r.weight for r in self.resources]
        self.use_requested = use_requested
        self.shape: BrokenLinear | None = None
        if strategy == REQUESTED_TO_CAPACITY_RATIO:
            scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
            self.shape = BrokenLinear([(p.utilization, p.score * scale) for p in (shape or [])])

    # ------------------------------------------------------------ inputs

    def pod_requests(self, pod: PodInfo) -> list[int]:
        """calculatePodResourceRequestList: non-zero defaults for cpu/memory unless use_requested."""
        out = []
        req = pod.requests
        non0_cpu, non0_mem = (req.milli_cpu, req.memory) if self.use_requested else _non_missing_requests(pod)
        for name in self.names:
            if name == CPU:
                out.append(non0_cpu)
            elif name == MEMORY:
                out.append(non0_mem)
            else:
                out.append(req.get(name))
        return out

    def _alloc_req(self, ni: NodeInfo, name: str, pod_req: int) -> tuple[int, int]:
        requested = ni.requested if self.use_requested else ni.non_zero_requested
        if pod_req == 0 and is_scalar_resource_name(name):
            return 0, 0
        if name == CPU:
            return ni.allocatable.milli_cpu, requested.milli_cpu + pod_req
        if name == MEMORY:
            return ni.allocatable.memory, requested.memory + pod_req
        if name == EPHEMERAL_STORAGE:
            return ni.allocatable.ephemeral_storage, ni.requested.ephemeral_storage + pod_req
        if name in ni.allocatable.scalar:
            return ni.allocatable.scalar[name], ni.requested.scalar.get(name, 0) + pod_req
        return 0, 0

    def _alloc_req_vec(self, snap: Snapshot, idx: np.ndarray, name: str, pod_req: int) -> tuple[np.ndarray, np.ndarray]:
        c = snap.columns
        zero = np.zeros(len(idx), np.int64)
        if pod_req == 0 and is_scalar_resource_name(name):
            return zero, zero
        if name == CPU:
            return c.alloc_cpu[idx], (c.req_cpu if self.use_requested else c.nz_cpu)[idx] + pod_req
        if name == MEMORY:
            return c.alloc_mem[idx], (c.req_mem if self.use_requested else c.nz_mem)[idx] + pod_req
        if name == EPHEMERAL_STORAGE:
            return c.alloc_eph[idx], c.req_eph[idx] + pod_req
        if not is_scalar_resource_name(name):
            return zero, zero
        alloc, req, present = snap.scalar_columns(name)
        a = np.where(present[idx], alloc[idx], 0)
        return a, np.where(present[idx], req[idx] + pod_req, 0)

    # ------------------------------------------------------------ per node (reference)

    def score(self, ni: NodeInfo, pod_requests: Sequence[int]) -> int:
        requested, allocatable = [], []
        for name, pr in zip(self.names, pod_requests, strict=True):
            a, r = self._alloc_req(ni, name, pr)
            allocatable.append(a)
            requested.append(r if a else 0)
        return self._combine(requested, allocatable)

    def _combine(self, requested: list[int], allocatable: list[int]) -> int:
        if self.strategy == BALANCED:
            return _balanced(requested, allocatable)
        node_score = weight_sum = 0
        for r, a, w in zip(requested, allocatable, self.weights, strict=True):
            if a == 0:
                continue
            if self.strategy == LEAST_ALLOCATED:
                s = 0 if r > a else (a - r) * MAX_NODE_SCORE // a
            elif self.strategy == MOST_ALLOCATED:
                s = min(r, a) * MAX_NODE_SCORE // a
            else:
                assert self.shape is not None
                s = self.shape(MAX_UTILIZATION) if r > a else self.shape(r * MAX_UTILIZATION // a)
                if s <= 0:
                    continue
            node_score += s * w
            weight_sum += w
        if weight_sum == 0:
            return 0
        if self.strategy == REQUESTED_TO_CAPACITY_RATIO:
            return go_round(node_score / weight_sum)
        return node_score // weight_sum

    # ------------------------------------------------------------ vector

    def score_vec(self, snap: Snapshot, idx: np.ndarray, pod_requests: Sequence[int]) -> np.ndarray:
        allocs, reqs = [], []
        for name, pr in zip(self.names, pod_requests, strict=True):
            a, r = self._alloc_req_vec(snap, idx, name, pr)
            allocs.append(a)
            reqs.append(r)
        if self.strategy != REQUESTED_TO_CAPACITY_RATIO and allocs and all(a.min() > 0 for a in allocs if len(a)):
            return self._score_vec_all_allocatable(reqs, allocs)
        reqs = [np.where(a != 0, r, 0) for r, a in zip(reqs, allocs, strict=True)]
        if self.strategy == BALANCED:
            return _balanced_vec(reqs, allocs)
        n = len(idx)
        node_score = np.zeros(n, np.int64)
        weight_sum = np.zeros(n, np.int64)
        for r, a, w in zip(reqs, allocs, self.weights, strict=True):
            has = a != 0
            safe = np.where(has, a, 1)
            if self.strategy == LEAST_ALLOCATED:
                s = np.where(r > a, 0, (a - r) * MAX_NODE_SCORE // safe)
            elif self.strategy == MOST_ALLOCATED:
                s = np.minimum(r, a) * MAX_NODE_SCORE // safe
            else:
                assert self.shape is not None
                util = np.where(r > a, MAX_UTILIZATION, r * MAX_UTILIZATION // safe)
                s = self.shape.vec(util)
                has = has & (s > 0)
            node_score += np.where(has, s * w, 0)
            weight_sum += np.where(has, w, 0)
        safe_ws = np.where(weight_sum > 0, weight_sum, 1)
        if self.strategy == REQUESTED_TO_CAPACITY_RATIO:
            x = node_score / safe_ws
            t = np.trunc(x)
            out = (t + ((x - t) >= 0.5)).astype(np.int64)
        else:
            out = node_score // safe_ws
        return np.where(weight_sum > 0, out, 0)

    def _score_vec_all_allocatable(self, reqs: list[np.ndarray], allocs: list[np.ndarray]) -> np.ndarray:
        """score_vec when every node has every resource: no per-node skipping, fewer array passes."""
        if self.strategy == BALANCED:
            fr = [np.minimum(r / a, 1.0) for r, a in zip(reqs, allocs, strict=True)]
            if len(fr) == 2:
                std = np.abs((fr[0] - fr[1]) / 2)
                return ((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)
            return _balanced_vec(reqs, allocs)
        total = None
        for r, a, w in zip(reqs, allocs, self.weights, strict=True):
            if self.strategy == LEAST_ALLOCATED:
                s = np.maximum(a - r, 0) * MAX_NODE_SCORE // a
            else:
                s = np.minimum(r, a) * MAX_NODE_SCORE // a
            s *= w
            total = s if total is None else total + s
        assert total is not None
        return total // sum(self.weights)


def _balanced(requested: list[int], allocatable: list[int]) -> int:
    fractions = []
    total = 0.0
    for r, a in zip(requested, allocatable, strict=True):
        if a == 0:
            continue
        f = min(float(r) / float(a), 1.0)
        total += f
        fractions.append(f)
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = total / len(fractions)
        acc = 0.0
        for f in fractions:
            acc = acc + (f - mean) * (f - mean)
        std = math.sqrt(acc / len(fractions))
    return int((1 - std) * float(MAX_NODE_SCORE))


def _balanced_vec(reqs: list[np.ndarray], allocs: list[np.ndarray]) -> np.ndarray:
    present = [a != 0 for a in allocs]
    counts = np.sum(present, axis=0) if present else np.zeros(0, np.int64)
    k = len(allocs)
    n = len(allocs[0]) if allocs else 0
    uniform = bool(np.all(counts == k))
    if not uniform:
        # Nodes missing some resource fall back to the reference arithmetic.
        out = np.empty(n, np.int64)
        for j in range(n):
            out[j] = _balanced([int(r[j]) for r in reqs], [int(a[j]) for a in allocs])
        return out
    fr = [np.minimum(r.astype(np.float64) / a.astype(np.float64), 1.0) for r, a in zip(reqs, allocs, strict=True)]
    if k == 2:
        std = np.abs((fr[0] - fr[1]) / 2)
    elif k > 2:
        total = np.zeros(n)
        for f in fr:
            total = total + f
        mean = total / k
        acc = np.zeros(n)
        for f in fr:
            acc = acc + (f - mean) * (f - mean)
        std = np.sqrt(acc / k)
    else:
        std = np.zeros(n)
    return ((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)
