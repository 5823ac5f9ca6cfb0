"""Extra pods' requests per node, as arrays: what nominated pods add and preemption victims take away.

Filters that only sum the node's pods (ResourceSumsFilterPlugin) can then be
asked about many nodes at once, each with a different set of pods added or
removed, without cloning a single NodeInfo.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from kubesched.framework.types import PodInfo, Resource

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

    def freeze(self) -> ExtraSums:
        self.cpu = np.array(self._cpu, np.int64)
        self.mem = np.array(self._mem, np.int64)
        self.eph = np.array(self._eph, np.int64)
        self.pods = np.array(self._pods, np.int64)
        self.scalar = {name: np.array(v, np.int64) for name, v in self._scalar.items()}
        return self

    def resource(self, k: int) -> tuple[Resource, int]:
        """Position k's extra as a Resource and a pod count (for the per-node reference code)."""
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


def with_extra(base: Resource, pod_count: int, extra: ExtraSums, k: int) -> tuple[Resource, int]:
    """A NodeInfo's requested sums and pod count, plus position k of `extra`."""
    add, n = extra.resource(k)
    used = base.clone()
    used.add(add)
    return used, pod_count + n


def ge_priority_nominated(nominated: Iterable[PodInfo], pod: PodInfo) -> list[PodInfo]:
    """Nominated pods the incoming pod must yield to: equal or higher priority, itself excluded."""
    return [p for p in nominated if p.priority >= pod.priority and p.uid != pod.uid]


def ge_priority_nominations(nominator: Any, pod: PodInfo) -> dict[str, list[PodInfo]]:
    """Node name -> the nominated pods `pod` must yield to there, for every node that has some."""
    out: dict[str, list[PodInfo]] = {}
    if nominator is None:
        return out
    for node, uids in nominator.nominated_pods.items():
        pods = ge_priority_nominated((nominator.pods[u] for u in uids), pod)
        if pods:
            out[node] = pods
    return out
