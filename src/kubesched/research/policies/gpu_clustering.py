"""GpuClustering (the reference's pkg/simulator/plugin/gpu_clustering_score.go).

Pods with the same GPU shape ("share-gpu", "1-gpu", "2-gpu", ...) go together;
within a band, fuller nodes first:

    score = 25 * (8000 - gpu_left) // 8000 + band, band =
      75  the node holds only pods of the pod's shape,
      50  it holds that shape among others,
      25  it holds no GPU pod,
       0  it holds only other shapes.

Pods without GPU score 0 everywhere. Reserve takes the fitting GPU with the
least free milli (gpuSelMethod=best).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kubesched.plugin_api import MAX_NODE_SCORE, CycleState, NodeInfo, PodInfo, Snapshot, Status, VectorScorePlugin

from .gpushare import MAX_SPEC_GPU, SHARE_GPU_TAG, device_table, node_gpus, parse_request

QUARTER = MAX_NODE_SCORE // 4


class GpuClustering(VectorScorePlugin):
    name = "GpuClusteringScore"

    @classmethod
    def new(cls, args: Any, handle: Any) -> GpuClustering:
        return cls()

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status | None]:
        req, v = parse_request(pod), node_gpus(node_info)
        if not req.uses_gpu:
            return 0, None
        fill = QUARTER * (MAX_SPEC_GPU - v.total_free) // MAX_SPEC_GPU
        if v.affinity.get(req.affinity, 0) > 0:
            return fill + (3 * QUARTER if len(v.affinity) == 1 else 2 * QUARTER), None
        return fill + (QUARTER if not v.affinity else 0), None

    def score_all(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray:
        req, t = parse_request(pod), device_table(snapshot)
        if not req.uses_gpu:
            return np.zeros(len(idx), np.int64)
        fill = QUARTER * (MAX_SPEC_GPU - t.gpu_left[idx]) // MAX_SPEC_GPU
        same = t.aff[idx, 0 if req.affinity == SHARE_GPU_TAG else req.num] > 0
        kinds = t.naff[idx]
        band = np.where(same, np.where(kinds == 1, 3 * QUARTER, 2 * QUARTER), np.where(kinds == 0, QUARTER, 0))
        return fill + band
