"""Helpers shared by plugins (framework/plugins/helper)."""

from __future__ import annotations

import numpy as np

from kubesched.framework.interface import MAX_NODE_SCORE


def default_normalize_score(scores: np.ndarray, reverse: bool, max_priority: int = MAX_NODE_SCORE) -> np.ndarray:
    """helper.DefaultNormalizeScore: scale to [0, max] by the highest score; `reverse` flips it.

    Scores are non-negative, so integer floor division is Go's truncation here.
    """
    if len(scores) == 0:
        return scores
    top = int(scores[scores.argmax()])
    if top <= 0:
        if reverse:
            out = np.empty(len(scores), np.int64)
            out.fill(max_priority)  # (np.full is a Python wrapper: several times this on small arrays)
            return out
        return scores
    out = max_priority * scores // top
    if reverse:
        out = max_priority - out
    return out
