"""Extra pods' requests per node, as arrays: what nominated pods add and preemption victims take away.

Filters that only sum the node's pods (ResourceSumsFilterPlugin) can then be
asked about many nodes at once, each with a different set of pods added or
removed, without cloning a single NodeInfo. Sums wrap as Go's int64 sums do.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from kubesched.api.int64 import wrap
from kubesched.framework.types import NodeInfo, PodInfo, Resource

if TYPE_CHECKING:
    from kubesched.framework.handle import PodNominator

# CycleState key under which the runtime leaves this cycle's whole-snapshot Filter verdicts
# ({plugin name: failed mask}), for preemption's dry runs to reuse.
FILTER_VERDICTS_KEY = "kubesched/filter-verdicts"


class ExtraSums:
    """Per-position extra requests and pod counts (positions are those of some index array).

    Filled with `add` (plain Python ints, cheap), read as numpy arrays once `freeze` has run.
    """

    __slots__ = ("_cpu", "_eph", "_mem", "_pods", "_scalar", "cpu", "eph", "mem", "n", "pods", "scalar")

    def __init__(self, n: int) -> None:
        self.n = n
        self._cpu = [0] * n
        self._mem = [0] * n
        self._eph = [0] * n
        self._pods = [0] * n
        self._scalar: dict[str, list[int]] = {}
        self.cpu = self.mem = self.eph = self.pods = np.zeros(0, np.int64)
        self.scalar: dict[str, np.ndarray] = {}

    def add(self, k: int, pi: PodInfo, sign: int = 1) -> None:
        r = pi.requests
        self._cpu[k] += sign * r.milli_cpu
        self._mem[k] += sign * r.memory
        self._eph[k] += sign * r.ephemeral_storage
        self._pods[k] += sign
        for name, v in r.scalar.items():
            lst = self._scalar.get(name)
            if lst is None:
                lst = self._scalar[name] = [0] * self.n
            lst[k] += sign * v

    def add_sums(self, k: int, r: Resource, count: int, sign: int = 1) -> None:
        self._cpu[k] += sign * r.milli_cpu
        self._mem[k] += sign * r.memory
        self._eph[k] += sign * r.ephemeral_storage
        self._pods[k] += sign * count
        for name, v in r.scalar.items():
            lst = self._scalar.get(name)
            if lst is None:
                lst = self._scalar[name] = [0] * self.n
            lst[k] += sign * v

    @classmethod
    def of_arrays(
        cls, cpu: np.ndarray, mem: np.ndarray, eph: np.ndarray, pods: np.ndarray, scalar: dict[str, np.ndarray]
    ) -> ExtraSums:
        """Already frozen sums (the list form, for `resource`, is derived from the arrays)."""
        e = cls.__new__(cls)
        e.n = len(cpu)
        e.cpu, e.mem, e.eph, e.pods, e.scalar = cpu, mem, eph, pods, scalar
        e._cpu = e._mem = e._eph = e._pods = None  # type: ignore[assignment]
        e._scalar = {}
        return e

    def take(self, idx: np.ndarray) -> ExtraSums:
        """The sums at positions `idx` (frozen sums only)."""
        return ExtraSums.of_arrays(
            self.cpu[idx], self.mem[idx], self.eph[idx], self.pods[idx], {k: v[idx] for k, v in self.scalar.items()}
        )

    def freeze(self) -> ExtraSums:
        self.cpu = int64_array(self._cpu)
        self.mem = int64_array(self._mem)
        self.eph = int64_array(self._eph)
        self.pods = int64_array(self._pods)
        self.scalar = {name: int64_array(v) for name, v in self._scalar.items()}
        return self

    def resource(self, k: int) -> tuple[Resource, int]:
        """Position k's extra as a Resource and a pod count (for the per-node reference code)."""
        if self._cpu is None:
            return (
                Resource(
                    int(self.cpu[k]),
                    int(self.mem[k]),
                    int(self.eph[k]),
                    0,
                    {name: int(v[k]) for name, v in self.scalar.items() if v[k]},
                ),
                int(self.pods[k]),
            )
        return (
            Resource(
                self._cpu[k],
                self._mem[k],
                self._eph[k],
                0,
                {name: v[k] for name, v in self._scalar.items() if v[k]},
            ),
            self._pods[k],
        )


class NominationColumns:
    """Per priority, the summed requests and number of pods nominated to each node of one snapshot node list.

    The nominator keeps it up to date as pods are nominated and cleared, so a
    cycle reads the nominated pods it must yield to as a few array sums instead
    of walking every nomination.
    """

    __slots__ = ("_by_priority", "_index", "nodes")

    def __init__(self, nodes: list[NodeInfo]) -> None:
        self.nodes = nodes
        self._index = {ni.name: i for i, ni in enumerate(nodes)}
        # priority -> [cpu, mem, eph, pods] arrays and scalar name -> array
        self._by_priority: dict[int, tuple[list[np.ndarray], dict[str, np.ndarray]]] = {}

    def add(self, node: str, pi: PodInfo, sign: int) -> None:
        i = self._index.get(node)
        if i is None:
            return
        cols = self._by_priority.get(pi.priority)
        if cols is None:
            n = len(self.nodes)
            cols = self._by_priority[pi.priority] = ([np.zeros(n, np.int64) for _ in range(4)], {})
        base, scalar = cols
        r = pi.requests
        _add_at(base[0], i, sign * r.milli_cpu)
        _add_at(base[1], i, sign * r.memory)
        _add_at(base[2], i, sign * r.ephemeral_storage)
        base[3][i] += sign
        for name, v in r.scalar.items():
            arr = scalar.get(name)
            if arr is None:
                arr = scalar[name] = np.zeros(len(self.nodes), np.int64)
            _add_at(arr, i, sign * v)

    def at_least(self, priority: int, own: tuple[str, PodInfo] | None) -> ExtraSums | None:
        """Per node, the nominated pods of `priority` or more, less `own` (the pod's own nomination); None if none."""
        levels = [cols for p, cols in self._by_priority.items() if p >= priority]
        if not levels:
            return None
        n = len(self.nodes)
        base = [np.zeros(n, np.int64) for _ in range(4)]
        scalar: dict[str, np.ndarray] = {}
        for cols, sc in levels:
            for acc, arr in zip(base, cols, strict=True):
                acc += arr
            for name, arr in sc.items():
                if name in scalar:
                    scalar[name] = scalar[name] + arr
                else:
                    scalar[name] = arr.copy()
        if own is not None and own[1].priority >= priority:
            i = self._index.get(own[0])
            if i is not None:
                r = own[1].requests
                _add_at(base[0], i, -r.milli_cpu)
                _add_at(base[1], i, -r.memory)
                _add_at(base[2], i, -r.ephemeral_storage)
                base[3][i] -= 1
                for name, v in r.scalar.items():
                    _add_at(scalar[name], i, -v)
        return ExtraSums.of_arrays(base[0], base[1], base[2], base[3], scalar)


def int64_array(values: list[int]) -> np.ndarray:
    """An int64 array of Python ints that may have left int64's range (wrapped as Go's sums wrap)."""
    try:
        return np.array(values, np.int64)
    except OverflowError:
        return np.array([wrap(v) for v in values], np.int64)


def _add_at(arr: np.ndarray, i: int, delta: int) -> None:
    """arr[i] += delta with Go's wrapping (numpy's scalar += would warn, or raise past int64)."""
    arr[i] = wrap(int(arr[i]) + delta)


def with_extra(base: Resource, pod_count: int, extra: ExtraSums, k: int) -> tuple[Resource, int]:
    """A NodeInfo's requested sums and pod count, plus position k of `extra`."""
    add, n = extra.resource(k)
    used = base.clone()
    used.add(add)
    return used, pod_count + n


def ge_priority_nominated(nominated: Iterable[PodInfo], pod: PodInfo) -> list[PodInfo]:
    """Nominated pods the incoming pod must yield to: equal or higher priority, itself excluded."""
    return [p for p in nominated if p.priority >= pod.priority and p.uid != pod.uid]


def ge_priority_nominations(nominator: PodNominator | None, pod: PodInfo) -> dict[str, list[PodInfo]]:
    """Node name -> the nominated pods `pod` must yield to there, for every node that has some."""
    out: dict[str, list[PodInfo]] = {}
    if nominator is None:
        return out
    for node, uids in nominator.nominated_pods.items():
        pods = ge_priority_nominated((nominator.pods[u] for u in uids), pod)
        if pods:
            out[node] = pods
    return out
