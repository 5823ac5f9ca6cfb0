"""GPU fragmentation over the "typical pods" distribution (the reference's pkg/utils/frag.go).

Typical pods (GetTypicalPods): the workload's pod shapes (CPU milli, milli per
GPU, GPU count, model) by decreasing count (ties: the larger shape first),
taken one at a time until they cover `threshold` percent of the pods, their
frequencies renormalized to sum to 1.

A node's fragmentation (NodeGpuShareFragAmountScore) is the expected amount
of its free GPU milli that a typical pod could not use: for each typical pod,
with its frequency as weight, all of the node's free milli counts (the pod
needs no GPU, wants another model, or finds too few GPUs or too little CPU),
except when the pod fits, where only the free milli of GPUs too small for it
counts (GetNodePodFrag's Q3 case, through GetGpuFragMilliByNodeResAndPodRes).

`node_frag` is that definition, one node at a time; `FragModel` computes the
same over many node states at once as column arithmetic (the pods grouped by
GPU shape, each group's CPU thresholds summed into a step function).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from .gpushare import MILLI, GpuRequest, NodeGpus, accepts_model

DEFAULT_THRESHOLD = 95  # the experiments' podPopularityThreshold (percent)
DEFAULT_STEP = 1  # the experiments' podIncreaseStep


@dataclass(frozen=True, slots=True)
class TypicalPod:
    """A pod shape and its frequency among the typical pods."""

    cpu: int
    milli: int
    num: int
    models: str
    freq: float


def typical_pods(
    requests: Iterable[GpuRequest], threshold: int = DEFAULT_THRESHOLD, step: int = DEFAULT_STEP
) -> list[TypicalPod]:
    """GetTypicalPods with isInvolvedCpuPods and no GPU weighting (the experiments' settings)."""
    counts = Counter((r.cpu, r.milli, r.num, r.models) for r in requests)
    total = float(sum(counts.values()))
    if not counts:
        return []
    # Decreasing count; among equal counts the shape that Go's PodResource.Less puts last comes first.
    shapes = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
    expected = threshold * total / 100.0
    taken, cum = 0, 0.0
    while cum < expected and taken < len(shapes):
        upto = min(taken + step, len(shapes))
        for _, n in shapes[taken:upto]:
            cum += n
        taken = upto
    if taken >= len(shapes):
        return [TypicalPod(*shape, n / total) for shape, n in shapes]
    share = cum / total
    return [TypicalPod(*shape, (n / total) / share) for shape, n in shapes[:taken]]


def node_frag(v: NodeGpus, typical: Iterable[TypicalPod]) -> float:
    """The node's fragmented GPU milli (NodeGpuShareFragAmountScore), one typical pod after another."""
    total = sum(v.free)
    frag = 0.0
    for t in typical:
        fits = (
            t.milli > 0
            and accepts_model(t.models, v.model)
            and sum(1 for f in v.free if f >= t.milli) >= t.num
            and v.cpu_left >= t.cpu
        )
        frag += t.freq * (sum(f for f in v.free if f < t.milli) if fits else total)
    return frag


class FragModel:
    """node_frag for many node states at once.

    frag = F * G - sum over GPU shapes g of [accessible] [cnt_g >= n_g] S_g W_g(cpu_left), where F is the
    frequencies' sum, G the free milli, cnt_g and S_g the number and free milli of GPUs with at least
    m_g free, and W_g(c) the frequency of shape g's typical pods needing at most c CPU.
    """

    def __init__(self, typical: list[TypicalPod], models: dict[str, int]) -> None:
        self.total_freq = float(sum(t.freq for t in typical))
        gpu = [t for t in typical if t.milli > 0]
        shapes = sorted({(t.milli, t.num, t.models) for t in gpu})
        col = {s: k for k, s in enumerate(shapes)}
        self.milli = np.array([s[0] for s in shapes], np.int64)
        self.num = np.array([s[1] for s in shapes], np.int64)
        # cpu[k] and weight[k, g]: typical pod k's CPU, and its frequency in its shape's column.
        self.cpu = np.array([t.cpu for t in gpu], np.int64)
        self.weight = np.zeros((len(gpu), len(shapes)))
        for k, t in enumerate(gpu):
            self.weight[k, col[(t.milli, t.num, t.models)]] = t.freq
        self.shape_models = [s[2] for s in shapes]
        self.models = models
        self._access: np.ndarray | None = None
        self._access_models = -1

    def access(self, model: np.ndarray) -> np.ndarray:
        """Rows x shapes: whether each row's GPU model admits each shape (model codes of the DeviceTable)."""
        if self._access is None or self._access_models != len(self.models):
            names = sorted(self.models, key=self.models.__getitem__)
            table = np.ones((len(names) + 1, len(self.shape_models)), bool)
            for g, wanted in enumerate(self.shape_models):
                table[0, g] = accepts_model(wanted, "")
                for code, name in enumerate(names):
                    table[code + 1, g] = accepts_model(wanted, name)
            self._access, self._access_models = table, len(self.models)
        return self._access[model + 1]

    def cpu_weight(self, cpu_left: np.ndarray) -> np.ndarray:
        """Rows x shapes: W_g(cpu_left)."""
        return (cpu_left[:, None] >= self.cpu[None, :]).astype(float) @ self.weight

    def frag(self, free: np.ndarray, cpu_left: np.ndarray, model: np.ndarray) -> np.ndarray:
        """Fragmented milli of each row (free: rows x GPUs, -1 past a node's GPUs)."""
        f = free[:, :, None]
        ge = f >= self.milli
        cnt, s = ge.sum(axis=1), np.where(ge, f, 0).sum(axis=1)
        g = np.maximum(free, 0).sum(axis=1)
        fits = self.access(model) & (cnt >= self.num)
        return self.total_freq * g - (fits * s * self.cpu_weight(cpu_left)).sum(axis=1)

    def frag_after(self, free: np.ndarray, cpu_left: np.ndarray, model: np.ndarray, req: GpuRequest) -> np.ndarray:
        """Fragmentation after placing `req`: rows x GPUs for a share (the share on GPU j), rows x 1 otherwise.

        A share takes `milli` from one GPU; whole GPUs come from fully free ones (nodeRes.Sub), which
        every GPU shape counts, so they take `num` from cnt_g and `num` x 1000 from S_g and G.
        """
        cpu = cpu_left - req.cpu
        w = self.access(model) * self.cpu_weight(cpu)
        g = np.maximum(free, 0).sum(axis=1)
        f = free[:, :, None]
        ge = f >= self.milli
        cnt, s = ge.sum(axis=1), np.where(ge, f, 0).sum(axis=1)
        if not req.is_share:
            taken = req.num * MILLI if req.uses_gpu else 0
            n = req.num if req.uses_gpu else 0
            q3 = ((cnt - n) >= self.num) * (s - taken) * w
            return (self.total_freq * (g - taken) - q3.sum(axis=1))[:, None]
        after = f - req.milli
        ge_after = after >= self.milli
        cnt_j = cnt[:, None, :] - ge + ge_after
        s_j = s[:, None, :] - np.where(ge, f, 0) + np.where(ge_after, after, 0)
        q3 = ((cnt_j >= self.num) * s_j * w[:, None, :]).sum(axis=2)
        return self.total_freq * (g - req.milli)[:, None] - q3
