"""FGD, Fragmentation Gradient Descent (the reference's pkg/simulator/plugin/fgd_score.go).

A node's score is how much the placement lowers its fragmentation (frag.py's
measure over the typical pods), squashed into 0..100:

    score = int(sigmoid((frag(node) - frag(node with the pod)) / 1000) * 100)

A GPU share is tried on every GPU with room and the node keeps its best
score; that GPU is also the one Reserve takes (GpuShare with
gpuSelMethod=<this plugin>, the reference's allocateGpuIdBasedOnFGDScore: the
lowest index among equal scores). Whole GPUs come from the fully free ones.
No NormalizeScore, as upstream: the plugin's scores go to the framework as they are.

Args: `typicalPods`, the distribution the measure is taken over (the runner
computes it from the trace with frag.typical_pods).
"""

from __future__ import annotations

import math
from typing import Any

import msgspec
import numpy as np

from kubesched.plugin_api import MAX_NODE_SCORE, CycleState, NodeInfo, PodInfo, Snapshot, Status, VectorScorePlugin

from .frag import FragModel, TypicalPod, node_frag
from .gpushare import GpuRequest, NodeGpus, RowCache, device_table, node_gpus, parse_request


class TypicalPodArg(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    cpu: int
    milli: int
    num: int
    freq: float
    models: str = ""


class FGDArgs(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    typical_pods: list[TypicalPodArg] = msgspec.field(default_factory=list)


def score_of(before: float, after: float) -> int:
    """sigmoid((before - after) / 1000) * MaxNodeScore, truncated as Go's int64() does."""
    return int(1.0 / (1.0 + math.exp(-(before - after) / 1000)) * MAX_NODE_SCORE)


class FGD(VectorScorePlugin):
    name = "FGDScore"
    args_type = FGDArgs

    def __init__(self, args: FGDArgs) -> None:
        self.typical = [TypicalPod(t.cpu, t.milli, t.num, t.models, t.freq) for t in args.typical_pods]
        self.model: FragModel | None = None
        self.scores = RowCache()

    @classmethod
    def new(cls, args: FGDArgs, handle: Any) -> FGD:
        return cls(args)

    def options(self, req: GpuRequest, v: NodeGpus) -> list[tuple[int, tuple[int, ...]]]:
        """(score, GPUs) of each way to place the pod on the node, in GPU index order."""
        before = node_frag(v, self.typical)
        after = NodeGpus(v.name, v.cpu_left - req.cpu, v.cpu_capacity, v.model, list(v.free), v.affinity)
        if req.is_share:
            out: list[tuple[int, tuple[int, ...]]] = []
            for i, f in enumerate(v.free):
                if f >= req.milli:
                    after.free = [x - req.milli if j == i else x for j, x in enumerate(v.free)]
                    out.append((score_of(before, node_frag(after, self.typical)), (i,)))
            return out
        ids = tuple(i for i, f in enumerate(v.free) if f == 1000)[: req.num] if req.uses_gpu else ()
        after.free = [x - 1000 if i in ids else x for i, x in enumerate(v.free)]
        return [(score_of(before, node_frag(after, self.typical)), ids)]

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status | None]:
        best = max(self.options(parse_request(pod), node_gpus(node_info)), default=(0, ()))
        return best[0], None

    def select_gpus(self, pod: PodInfo, req: GpuRequest, node: NodeGpus) -> tuple[int, ...] | None:
        """The GPUs of the node's best option (lowest index among equal scores), as `options` ranks them."""
        if self.model is None:
            self.model = FragModel(self.typical, {})
        codes = self.model.models
        code = np.array([codes.setdefault(node.model, len(codes)) if node.model else -1])
        free = np.array([node.free], np.int64).reshape(1, -1)
        scores = self._scores(free, np.array([node.cpu_left]), code, req)[0]
        if req.is_share:
            return (int(scores.argmax()),) if scores.max() >= 0 else None
        ids = tuple(i for i, f in enumerate(node.free) if f == 1000)[: req.num] if req.uses_gpu else ()
        return ids if len(ids) == (req.num if req.uses_gpu else 0) else None

    def _scores(self, free: np.ndarray, cpu_left: np.ndarray, model: np.ndarray, req: GpuRequest) -> np.ndarray:
        """Rows x options: the score of each way to place the pod (-1 where a share does not fit the GPU)."""
        assert self.model is not None
        before = self.model.frag(free, cpu_left, model)[:, None]
        after = self.model.frag_after(free, cpu_left, model, req)
        s = (1.0 / (1.0 + np.exp(-(before - after) / 1000)) * MAX_NODE_SCORE).astype(np.int64)
        return np.where(free >= req.milli, s, -1) if req.is_share else s

    def score_all(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray:
        req = parse_request(pod)
        t = device_table(snapshot)
        if self.model is None or self.model.models is not t.models:
            self.model = FragModel(self.typical, t.models)

        def compute(rows: np.ndarray) -> np.ndarray:
            return self._scores(t.free[rows], t.cpu_left[rows], t.model[rows], req).max(axis=1)

        return self.scores.get(t, req, idx, compute)[:, 0].clip(0)
