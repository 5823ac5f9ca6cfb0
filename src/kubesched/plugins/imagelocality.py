"""ImageLocality (framework/plugins/imagelocality): prefer nodes that already have the pod's images.

An image's contribution is its size scaled by the share of nodes that have it,
so that an image present everywhere does not pull every pod to one node.
"""

from __future__ import annotations

from itertools import chain
from typing import Any

import numpy as np

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import MAX_NODE_SCORE, SummableScorePlugin
from kubesched.framework.snapshot import Snapshot
from kubesched.framework.status import Status
from kubesched.framework.types import ImageStateSummary, NodeInfo, PodInfo
from kubesched.plugins import names

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def normalized_image_name(name: str) -> str:
    """Add ":latest" when the image has no tag (the last ':' is not after the last '/')."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def scaled_image_score(state: ImageStateSummary, total_nodes: int) -> int:
    spread = float(state.num_nodes) / float(total_nodes)
    return int(float(state.size) * spread)


def calculate_priority(sum_scores: int, num_containers: int) -> int:
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    if sum_scores < MIN_THRESHOLD:
        sum_scores = MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    return MAX_NODE_SCORE * (sum_scores - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)


def _images(pod: PodInfo) -> list[str]:
    cached = pod.cache.get(names.IMAGE_LOCALITY)
    if cached is None:
        spec = pod.pod.spec
        cached = [normalized_image_name(c.image) for c in chain(spec.init_containers, spec.containers)]
        pod.cache[names.IMAGE_LOCALITY] = cached
    return cached


class ImageLocality(SummableScorePlugin):
    name = names.IMAGE_LOCALITY

    def __init__(self, handle: Any = None) -> None:
        self.handle = handle

    @classmethod
    def new(cls, args: Any, handle: Any) -> ImageLocality:
        return cls(handle)

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status | None]:
        total = self.handle.snapshot().num_nodes
        images = _images(pod)
        s = 0
        for name in images:
            st = node_info.image_states.get(name)
            if st is not None:
                s += scaled_image_score(st, total)
        return calculate_priority(s, len(images)), None

    def _all_zero(self, pod: PodInfo, snapshot: Snapshot) -> bool:
        """Whether every node scores 0 for this pod, seen without scoring any."""
        index = snapshot.node_cache("image-index", lambda: _image_index(snapshot))
        if not index:
            # No node reports any image: every sum is 0, below MIN_THRESHOLD, so every score is 0.
            return True
        # No node has any of the pod's images: every score is the floor.
        images = _images(pod)
        return not any(name in index for name in images) and MAX_CONTAINER_THRESHOLD * len(images) > MIN_THRESHOLD

    def score_terms(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> int | None:
        return 0 if self._all_zero(pod, snapshot) else None

    def score_all(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray:
        if self._all_zero(pod, snapshot):
            return np.zeros(len(idx), np.int64)
        index = snapshot.node_cache("image-index", lambda: _image_index(snapshot))
        images = _images(pod)
        sums = np.zeros(snapshot.num_nodes, np.int64)
        total = snapshot.num_nodes
        for name in images:
            entry = index.get(name)
            if entry is not None:
                st, ix = entry
                sums[ix] += scaled_image_score(st, total)
        sub = sums[idx]
        max_threshold = MAX_CONTAINER_THRESHOLD * len(images)
        if max_threshold <= MIN_THRESHOLD:
            return np.array([calculate_priority(int(v), len(images)) for v in sub], np.int64)
        clipped = np.clip(sub, MIN_THRESHOLD, max_threshold)
        return MAX_NODE_SCORE * (clipped - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)


def _image_index(snapshot: Snapshot) -> dict[str, tuple[ImageStateSummary, np.ndarray]]:
    groups: dict[str, tuple[ImageStateSummary, list[int]]] = {}
    for i, ni in enumerate(snapshot.nodes):
        for name, st in ni.image_states.items():
            groups.setdefault(name, (st, []))[1].append(i)
    return {name: (st, np.array(ix, np.int64)) for name, (st, ix) in groups.items()}
