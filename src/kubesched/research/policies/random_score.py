"""Random (the reference's pkg/simulator/plugin/random_score.go).

PreScore draws one feasible node uniformly (the scheduler's seeded random
source); it scores 100 and every other node 0. Reserve places a share on a
fitting GPU drawn uniformly (gpuSelMethod=random).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kubesched.plugin_api import (
    MAX_NODE_SCORE,
    CycleState,
    NodeInfo,
    PodInfo,
    PreScorePlugin,
    Snapshot,
    Status,
    VectorScorePlugin,
)

STATE_KEY = "PreScore-RandomScore"


class _Chosen:
    """The node PreScore drew, for Score (CycleState data)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def clone(self) -> _Chosen:
        return self


class RandomScore(PreScorePlugin, VectorScorePlugin):
    name = "RandomScore"

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    @classmethod
    def new(cls, args: Any, handle: Any) -> RandomScore:
        return cls(handle)

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        state.write(STATE_KEY, _Chosen(nodes[self.handle.rng.randrange(len(nodes))].name))
        return None

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status | None]:
        return (MAX_NODE_SCORE if node_info.name == state.read(STATE_KEY).name else 0), None

    def score_all(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray:
        chosen = state.read(STATE_KEY).name
        return np.where(snapshot.node_names()[idx] == chosen, MAX_NODE_SCORE, 0).astype(np.int64)
