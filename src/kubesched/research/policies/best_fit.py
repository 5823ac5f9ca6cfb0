"""BestFit (the reference's pkg/simulator/plugin/best_fit_score.go).

The node whose leftover CPU and GPU after the placement is smallest, each
normalized by the largest node's (128 CPUs, 8 GPUs) and weighted by a half:

    score = int((1 - (0.5 * (cpu_left - cpu) / 128000 + 0.5 * (gpu_left - gpu) / 8000)) * 100)

then min-max normalized over the feasible nodes (the reference's NormalizeScore:
(s - lowest) * 100 // (highest - lowest), all 0 when they are equal). Reserve
takes the fitting GPU with the least free milli (gpuSelMethod=best).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kubesched.plugin_api import (
    MAX_NODE_SCORE,
    Code,
    CycleState,
    NodeInfo,
    NodeScoreList,
    PodInfo,
    Snapshot,
    Status,
    VectorScorePlugin,
)

from .gpushare import MAX_SPEC_CPU, MAX_SPEC_GPU, device_table, node_gpus, parse_request


def min_max_normalize(scores: np.ndarray) -> np.ndarray:
    """plugin_utils.go's NormalizeScore: the lowest score to 0, the highest to 100 (integer arithmetic)."""
    lowest, highest = int(scores.min()), int(scores.max())
    if highest == lowest:
        return np.zeros_like(scores)
    return (scores - lowest) * MAX_NODE_SCORE // (highest - lowest)


class BestFit(VectorScorePlugin):
    name = "BestFitScore"

    @classmethod
    def new(cls, args: Any, handle: Any) -> BestFit:
        return cls()

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status | None]:
        req, v = parse_request(pod), node_gpus(node_info)
        if v.cpu_left < req.cpu or v.total_free < req.total:
            return 0, Status(Code.ERROR, f"node {v.name} has less free than pod {pod.key} asks", plugin=self.name)
        left = (v.cpu_left - req.cpu) / MAX_SPEC_CPU * 0.5 + (v.total_free - req.total) / MAX_SPEC_GPU * 0.5
        return int((1.0 - left) * MAX_NODE_SCORE), None

    def score_all(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray:
        req, t = parse_request(pod), device_table(snapshot)
        gpu_left = t.gpu_left[idx]
        left = (t.cpu_left[idx] - req.cpu) / MAX_SPEC_CPU * 0.5 + (gpu_left - req.total) / MAX_SPEC_GPU * 0.5
        return ((1.0 - left) * MAX_NODE_SCORE).astype(np.int64)

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: NodeScoreList) -> Status | None:
        scores.scores = min_max_normalize(scores.scores)
        return None
