"""GpuPacking (the reference's pkg/simulator/plugin/gpu_packing_score.go).

Use partly used GPUs first, then free GPUs of used nodes, then free nodes:

    all the node's GPUs free      max(33 - free_gpus, free_gpus)
    the pod needs k free GPUs     max(50 - k, 33)
    a share fits a used GPU       max(100 - (free_milli * 100 // 1000) // 10, 50)

where the GPUs the pod would take are the ones with the least free milli
that fit (the share's GPU is then the one Reserve takes: gpuSelMethod=best).
Pods without GPU score 0 everywhere.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kubesched.plugin_api import (
    MAX_NODE_SCORE,
    Code,
    CycleState,
    NodeInfo,
    PodInfo,
    Snapshot,
    Status,
    VectorScorePlugin,
)

from .gpushare import MILLI, device_table, node_gpus, parse_request

HALF, THIRD = MAX_NODE_SCORE // 2, MAX_NODE_SCORE // 3


class GpuPacking(VectorScorePlugin):
    name = "GpuPackingScore"

    @classmethod
    def new(cls, args: Any, handle: Any) -> GpuPacking:
        return cls()

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status | None]:
        req, v = parse_request(pod), node_gpus(node_info)
        if not req.uses_gpu:
            return 0, None
        free_gpus = v.fully_free()
        if free_gpus == v.num:
            return max(THIRD - free_gpus, free_gpus), None
        use = [i for i in sorted(range(v.num), key=lambda i: v.free[i]) if v.free[i] >= req.milli][: req.num]
        if len(use) < req.num:
            return 0, Status(Code.ERROR, f"node {v.name} cannot hold pod {pod.key}", plugin=self.name)
        whole = sum(1 for i in use if v.free[i] == MILLI)
        if whole > 0:
            return max(HALF - whole, THIRD), None
        left = sum(v.free[i] * 100 // MILLI for i in use)
        return max(MAX_NODE_SCORE - left // 10, HALF), None

    def score_all(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray:
        req, t = parse_request(pod), device_table(snapshot)
        if not req.uses_gpu:
            return np.zeros(len(idx), np.int64)
        free = t.free[idx]
        free_gpus = (free == MILLI).sum(axis=1)
        idle_node = np.maximum(THIRD - free_gpus, free_gpus)
        if not req.is_share:
            used = np.full(len(idx), max(HALF - req.num, THIRD))
        else:
            tightest = np.where(free >= req.milli, free, MILLI + 1).min(axis=1)
            used = np.where(
                tightest == MILLI, max(HALF - 1, THIRD), np.maximum(100 - (tightest * 100 // MILLI) // 10, HALF)
            )
        return np.where(free_gpus == t.ngpu[idx], idle_node, used).astype(np.int64)
