"""DotProd, Tetris's alignment heuristic (the reference's pkg/simulator/plugin/dot_product_score.go).

The experiments' form (dimExtMethod=merge, normMethod=max): the node's free
CPU and free GPU milli (all its GPUs merged) and the pod's request, each
divided by the largest node's (128 CPUs, 8 GPUs); the smaller their dot
product, the better:

    score = int(100 * (1 - (cpu_left * cpu / 128000^2 + gpu_left * gpu / 8000^2) / 2))

A node with less free CPU than the pod asks scores 0. Reserve takes the
fitting GPU with the least free milli (gpuSelMethod=best: with merge, the
reference keeps the best-fit choice rather than its own).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kubesched.plugin_api import MAX_NODE_SCORE, CycleState, NodeInfo, PodInfo, Snapshot, Status, VectorScorePlugin

from .gpushare import MAX_SPEC_CPU, MAX_SPEC_GPU, device_table, node_gpus, parse_request


class DotProduct(VectorScorePlugin):
    name = "DotProductScore"

    @classmethod
    def new(cls, args: Any, handle: Any) -> DotProduct:
        return cls()

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status | None]:
        req, v = parse_request(pod), node_gpus(node_info)
        if v.cpu_left < req.cpu:
            return 0, None
        dot = (v.cpu_left / MAX_SPEC_CPU) * (req.cpu / MAX_SPEC_CPU) + (v.total_free / MAX_SPEC_GPU) * (
            req.total / MAX_SPEC_GPU
        )
        return int(MAX_NODE_SCORE * (1 - dot / 2)), None

    def score_all(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray:
        req, t = parse_request(pod), device_table(snapshot)
        cpu_left = t.cpu_left[idx]
        gpu_left = t.gpu_left[idx]
        dot = (cpu_left / MAX_SPEC_CPU) * (req.cpu / MAX_SPEC_CPU) + (gpu_left / MAX_SPEC_GPU) * (
            req.total / MAX_SPEC_GPU
        )
        scores = (MAX_NODE_SCORE * (1 - dot / 2)).astype(np.int64)
        return np.where(cpu_left < req.cpu, 0, scores)
