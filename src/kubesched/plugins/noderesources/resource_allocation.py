"""Resource-allocation scoring shared by NodeResourcesFit and BalancedAllocation.

(noderesources/resource_allocation.go, least_allocated.go, most_allocated.go,
requested_to_capacity_ratio.go, balanced_allocation.go.) Each strategy has a
per-node reference and a vector form over snapshot columns; both use Go's
int64 arithmetic: sums and products wrap (a node with 10**17 millicores makes
LeastAllocated's (capacity - requested) * 100 wrap negative), / truncates
toward zero, and a float score out of int64's range converts to MinInt64 as
on amd64. An out-of-range score is then the runtime's "invalid score" error.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from kubesched.api.int64 import MIN_INT64, div, wrap
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
from kubesched.framework.interface import MAX_NODE_SCORE, RowScore
from kubesched.framework.snapshot import NARROW, Snapshot
from kubesched.framework.types import NodeInfo, PodInfo, Resource
from kubesched.gocompat.gomath import go_round, go_round_array

MAX_UTILIZATION = 100
MAX_CUSTOM_PRIORITY_SCORE = 10

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
BALANCED = "BalancedAllocation"


def go_div(a: int, b: int) -> int:
    """Go's int64 division: truncates toward zero."""
    return div(a, b)


def go_div_vec(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """Go's int64 division per element (b non-zero): numpy floors, Go truncates toward zero."""
    with np.errstate(over="ignore"):  # MinInt64 / -1 wraps in Go too
        q = np.floor_divide(a, b)
        differ = np.bitwise_xor(a, b) < 0
        if differ.any():
            q = q + (differ & (q * b != a))
    return q


_TWO_63 = float(1 << 63)


def float_to_int64(x: float) -> int:
    """int64(x) for a float64 as amd64 converts it: truncation, MinInt64 when out of range."""
    if -_TWO_63 <= x < _TWO_63:
        return int(x)
    return MIN_INT64


def float_to_int64_vec(x: np.ndarray) -> np.ndarray:
    inside = (x >= -_TWO_63) & (x < _TWO_63)
    if inside.all():
        return x.astype(np.int64)
    return np.where(inside, np.where(inside, x, 0.0).astype(np.int64), MIN_INT64)


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


def _non_missing_requests(pod: PodInfo) -> dict[str, int] | None:
    """The pod's requests as calculatePodResourceRequest counts them when not useRequested.

    Every container missing a cpu or memory request counts 100m / 200Mi, and
    pod-level requests are skipped (NodeResourcesFit's v1.34 scorer is built
    without the PodLevelResources feature). None when the pod has no pod-level
    requests: then they are NodeInfo's NonZeroRequested cpu and memory and the
    pod's requests for everything else.
    """
    if not pod_level_requests(pod.pod):
        return None
    hit = pod.cache.get(_NON_MISSING_KEY)
    if hit is None:
        hit = pod.cache[_NON_MISSING_KEY] = to_amounts(pod_requests_non_missing(pod.pod))
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
        # The last pod shape's request list and RowScore: replicas share their requests object (pod_resources),
        # so consecutive pods alike reuse both (read-only) instead of rebuilding them.
        self._last_requests: tuple[Resource, int, int, list[int]] | None = None
        self._last_row_score: tuple[Snapshot, Sequence[int], RowScore] | None = None

    # ------------------------------------------------------------ inputs

    def pod_requests(self, pod: PodInfo) -> list[int]:
        """calculatePodResourceRequestList: non-zero defaults for cpu/memory unless use_requested (a list shared
        by pods alike: read it, do not change it)."""
        req = pod.requests
        last = self._last_requests
        # The requests object stands for the pod's whole resource spec (pod_resources keys it so), pod-level
        # requests included; the non-zero amounts come with it.
        if last is not None and last[0] is req and last[1] == pod.non0_cpu and last[2] == pod.non0_mem:
            return last[3]
        out = self._pod_requests(pod)
        self._last_requests = (req, pod.non0_cpu, pod.non0_mem, out)
        return out

    def _pod_requests(self, pod: PodInfo) -> list[int]:
        req = pod.requests
        if self.use_requested:
            non0_cpu, non0_mem = req.milli_cpu, req.memory
        else:
            amounts = _non_missing_requests(pod)
            if amounts is not None:
                return [amounts.get(name, 0) for name in self.names]
            non0_cpu, non0_mem = pod.non0_cpu, pod.non0_mem
        out = []
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
            return ni.allocatable.milli_cpu, wrap(requested.milli_cpu + pod_req)
        if name == MEMORY:
            return ni.allocatable.memory, wrap(requested.memory + pod_req)
        if name == EPHEMERAL_STORAGE:
            return ni.allocatable.ephemeral_storage, wrap(ni.requested.ephemeral_storage + pod_req)
        if name in ni.allocatable.scalar:
            return ni.allocatable.scalar[name], wrap(ni.requested.scalar.get(name, 0) + pod_req)
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
                s = 0 if r > a else div(wrap(wrap(a - r) * MAX_NODE_SCORE), a)
            elif self.strategy == MOST_ALLOCATED:
                s = div(wrap(min(r, a) * MAX_NODE_SCORE), a)
            else:
                assert self.shape is not None
                s = self.shape(MAX_UTILIZATION) if r > a else self.shape(div(wrap(r * MAX_UTILIZATION), a))
                if s <= 0:
                    continue
            node_score = wrap(node_score + s * w)
            weight_sum += w
        if weight_sum == 0:
            return 0
        if self.strategy == REQUESTED_TO_CAPACITY_RATIO:
            return int(go_round(node_score / weight_sum))
        return div(node_score, weight_sum)

    # ------------------------------------------------------------ vector

    def score_rows(self, snap: Snapshot, idx: np.ndarray, pod_requests: Sequence[int]) -> np.ndarray:
        """score_vec over `idx`, kept per pod shape on the snapshot: a node's score depends on its row
        and the pod's requests only, so pods with the same requests recompute just the rows that changed."""
        spec = self.row_score(snap, pod_requests)
        return snap.row_scores(spec.key, spec.build, idx)

    def row_score(self, snap: Snapshot, pod_requests: Sequence[int]) -> RowScore:
        """These requests' scores as a function of a node's row: kept per pod shape (score_rows, the totals).
        Pods alike pass the same list (pod_requests): the last one's RowScore is reused."""
        last = self._last_row_score
        if last is not None and last[1] is pod_requests and last[0] is snap:
            return last[2]
        requests = tuple(pod_requests)
        rs = RowScore(
            (self, requests), lambda: (self._one_row(requests), lambda rows: self.score_vec(snap, rows, requests))
        )
        self._last_row_score = (snap, pod_requests, rs)
        return rs

    def _one_row(self, requests: tuple[int, ...]) -> Callable[[NodeInfo], int]:
        """`score` of one node for these requests: for cpu and memory with positive weights, the arithmetic
        written out (while every amount is in [0, NARROW), Go's int64 and float64 steps are Python's);
        `score` itself otherwise, and for a node with amounts out of that range."""

        def general(ni: NodeInfo) -> int:
            return self.score(ni, requests)

        if self.names != [CPU, MEMORY] or min(self.weights) <= 0 or not all(0 <= r < NARROW for r in requests):
            return general
        cpu_req, mem_req = requests
        w_cpu, w_mem = self.weights
        w_sum = w_cpu + w_mem
        use_requested = self.use_requested
        strategy = self.strategy

        def one(ni: NodeInfo) -> int:
            alloc = ni.allocatable
            used = ni.requested if use_requested else ni.non_zero_requested
            ac, am = alloc.milli_cpu, alloc.memory
            rc, rm = used.milli_cpu + cpu_req, used.memory + mem_req
            if not (0 < ac < NARROW and 0 < am < NARROW and 0 <= rc < NARROW and 0 <= rm < NARROW):
                return general(ni)
            if strategy == BALANCED:
                std = abs((min(float(rc) / float(ac), 1.0) - min(float(rm) / float(am), 1.0)) / 2)
                return int((1 - std) * float(MAX_NODE_SCORE))
            if strategy == LEAST_ALLOCATED:
                sc = (ac - rc) * MAX_NODE_SCORE // ac if rc <= ac else 0
                sm = (am - rm) * MAX_NODE_SCORE // am if rm <= am else 0
            elif strategy == MOST_ALLOCATED:
                sc = min(rc, ac) * MAX_NODE_SCORE // ac
                sm = min(rm, am) * MAX_NODE_SCORE // am
            else:
                return general(ni)
            return (sc * w_cpu + sm * w_mem) // w_sum

        return one

    def score_vec(self, snap: Snapshot, idx: np.ndarray, pod_requests: Sequence[int]) -> np.ndarray:
        allocs, reqs = [], []
        for name, pr in zip(self.names, pod_requests, strict=True):
            a, r = self._alloc_req_vec(snap, idx, name, pr)
            allocs.append(a)
            reqs.append(r)
        if self.strategy != REQUESTED_TO_CAPACITY_RATIO and allocs and all(a.min() > 0 for a in allocs if len(a)):
            narrow = not snap.columns.wide and all(0 <= pr < NARROW for pr in pod_requests)
            return self._score_vec_all_allocatable(reqs, allocs, narrow)
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
                s = np.where(r > a, 0, go_div_vec((a - r) * MAX_NODE_SCORE, safe))
            elif self.strategy == MOST_ALLOCATED:
                s = go_div_vec(np.minimum(r, a) * MAX_NODE_SCORE, safe)
            else:
                assert self.shape is not None
                util = np.where(r > a, MAX_UTILIZATION, go_div_vec(r * MAX_UTILIZATION, safe))
                s = self.shape.vec(util)
                has = has & (s > 0)
            node_score += np.where(has, s * w, 0)
            weight_sum += np.where(has, w, 0)
        safe_ws = np.where(weight_sum > 0, weight_sum, 1)
        if self.strategy == REQUESTED_TO_CAPACITY_RATIO:
            out = go_round_array(node_score / safe_ws).astype(np.int64)
        else:
            out = go_div_vec(node_score, safe_ws)
        return np.where(weight_sum > 0, out, 0)

    def _score_vec_all_allocatable(
        self, reqs: list[np.ndarray], allocs: list[np.ndarray], narrow: bool = False
    ) -> np.ndarray:
        """score_vec when every node has every resource: no per-node skipping, fewer array passes.

        `narrow` (every amount in [0, NARROW)): nothing wraps and no score is negative,
        so numpy's floor division is Go's and LeastAllocated's r > a case is a clamp.
        """
        if self.strategy == BALANCED:
            fr = [np.minimum(r / a, 1.0) for r, a in zip(reqs, allocs, strict=True)]
            if len(fr) == 2:
                std = np.abs((fr[0] - fr[1]) / 2)
                score = (1 - std) * float(MAX_NODE_SCORE)
                return score.astype(np.int64) if narrow else float_to_int64_vec(score)
            return _balanced_vec(reqs, allocs)
        total = None
        for r, a, w in zip(reqs, allocs, self.weights, strict=True):
            if narrow:
                if self.strategy == LEAST_ALLOCATED:
                    s = np.maximum(a - r, 0) * MAX_NODE_SCORE // a
                else:
                    s = np.minimum(r, a) * MAX_NODE_SCORE // a
            elif self.strategy == LEAST_ALLOCATED:
                s = np.where(r > a, 0, go_div_vec((a - r) * MAX_NODE_SCORE, a))
            else:
                s = go_div_vec(np.minimum(r, a) * MAX_NODE_SCORE, a)
            s *= w
            total = s if total is None else total + s
        assert total is not None
        return total // sum(self.weights) if narrow else go_div_vec(total, sum(self.weights))


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
    return float_to_int64((1 - std) * float(MAX_NODE_SCORE))


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
    return float_to_int64_vec((1 - std) * float(MAX_NODE_SCORE))
