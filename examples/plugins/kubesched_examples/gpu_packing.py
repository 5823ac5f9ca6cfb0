"""GPUPacking: a Score plugin that packs GPU pods onto the nodes whose GPUs are already the most used.

Spreading (NodeResourcesFit's LeastAllocated, the default) leaves every GPU
node partly used, so an 8-GPU job finds no node with 8 free. This plugin
scores a node by how much of its GPU resource (`resourceName`, default
nvidia.com/gpu) would be in use with the pod placed, the MostAllocated
formula on that one resource:

    score = (requested on node + requested by pod) * 100 // allocatable

then NormalizeScore scales the best node to 100 (helper.DefaultNormalizeScore),
so the preference keeps its full weight when every node is lightly used.
Pods that request none of the resource are left alone (PreScore returns Skip),
as are nodes without it (score 0). Give the plugin a weight above the
spreading plugins' (e.g. 5) for packing to win over spreading.

The per-node `score` is the reference; `score_all` computes the same scores
for every feasible node at once from the snapshot's columns (the runtime's
fast path), and the tests check that both agree.
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from kubesched.plugin_api import (
    MAX_NODE_SCORE,
    Code,
    CycleState,
    NodeInfo,
    NodeScoreList,
    PodInfo,
    PreScorePlugin,
    Snapshot,
    Status,
    VectorScorePlugin,
    default_normalize_score,
    is_extended_resource_name,
)

NAME = "GPUPacking"


class GPUPackingArgs(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    """pluginConfig args: the extended resource to pack."""

    resource_name: str = "nvidia.com/gpu"

    def __post_init__(self) -> None:
        if not is_extended_resource_name(self.resource_name):
            raise ValueError(f"resourceName: {self.resource_name!r} is not an extended resource name")


class GPUPacking(PreScorePlugin, VectorScorePlugin):
    name = NAME
    args_type = GPUPackingArgs

    def __init__(self, args: GPUPackingArgs) -> None:
        self.resource = args.resource_name

    @classmethod
    def new(cls, args: Any, handle: Any) -> GPUPacking:
        return cls(args)

    def _request(self, pod: PodInfo) -> int:
        return pod.requests.scalar.get(self.resource, 0)

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Any) -> Status | None:
        # Nothing to pack for a pod that uses no GPU: its Score is not run at all.
        return Status(Code.SKIP) if self._request(pod) == 0 else None

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status | None]:
        allocatable = node_info.allocatable.scalar.get(self.resource, 0)
        if allocatable <= 0:
            return 0, None
        used = node_info.requested.scalar.get(self.resource, 0) + self._request(pod)
        return min(used, allocatable) * MAX_NODE_SCORE // allocatable, None

    def score_all(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray:
        allocatable, requested, _ = snapshot.scalar_columns(self.resource)
        alloc = allocatable[idx]
        used = np.minimum(requested[idx] + self._request(pod), alloc)
        return np.where(alloc > 0, used * MAX_NODE_SCORE // np.maximum(alloc, 1), 0).astype(np.int64)

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: NodeScoreList) -> Status | None:
        scores.scores = default_normalize_score(scores.scores, reverse=False)
        return None
