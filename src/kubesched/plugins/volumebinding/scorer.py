"""Storage capacity scoring (volumebinding/scorer.go).

Off by default in v1.34: the scorer exists only with the StorageCapacityScoring
feature gate (alpha, disabled), so VolumeBinding's PreScore skips itself.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from kubesched.config.types import UtilizationShapePoint
from kubesched.framework.interface import MAX_NODE_SCORE
from kubesched.plugins.noderesources.resource_allocation import BrokenLinear

STORAGE_CAPACITY_SCORING = False
"""The StorageCapacityScoring feature gate, at its v1.34 default."""

MAX_UTILIZATION = 100
MAX_CUSTOM_PRIORITY_SCORE = 10

# storage class -> [requested bytes, capacity bytes]
ClassResources = dict[str, list[int]]
Scorer = Callable[[ClassResources], int]


def build_scorer(shape: Sequence[UtilizationShapePoint]) -> Scorer:
    """The utilization of each class through the shape, averaged over classes (all weigh the same)."""
    raw = BrokenLinear([(p.utilization, p.score * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE)) for p in shape])

    def class_score(requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return raw(MAX_UTILIZATION)
        return raw(requested * MAX_UTILIZATION // capacity)

    def score(resources: ClassResources) -> int:
        if not resources:
            return 0
        total = sum(class_score(r, c) for r, c in resources.values())
        return math.floor(total / len(resources) + 0.5)

    return score
