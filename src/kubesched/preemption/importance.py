"""Which pod matters more (util.MoreImportantPod), and the order Go's sort.Slice leaves pods in by it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC

from kubesched.api.gosort import sort_slice
from kubesched.framework.types import PodInfo

_START_KEY = "kubesched/start-key"
# Up to this many elements, Go's sort.Slice is an insertion sort.
GO_INSERTION_MAX = 12


def pod_start_key(pi: PodInfo) -> float:
    """GetPodStartTime as seconds since the epoch; a pod not started yet counts as starting now,
    i.e. after every started pod (infinity here, so that the result does not depend on the wall clock)."""
    key = pi.cache.get(_START_KEY)
    if key is None:
        st = pi.start_time
        if st is None:
            key = math.inf
        else:
            key = (st if st.tzinfo is not None else st.replace(tzinfo=UTC)).timestamp()
        # The start time is the pod object's: a newer object gets a new PodInfo, with an empty cache.
        pi.cache[_START_KEY] = key
    return key


def more_important(a: PodInfo, b: PodInfo) -> bool:
    """util.MoreImportantPod: higher priority, then earlier start.

    A pod without a start time counts as started at the moment it is asked
    about, so of two such pods the first one asked about is the more important
    (each call reads the clock anew): the relation is true both ways.
    """
    if a.priority != b.priority:
        return a.priority > b.priority
    ta, tb = pod_start_key(a), pod_start_key(b)
    if ta == math.inf and tb == math.inf:
        return True
    return ta < tb


def sort_by_importance(pods: list[PodInfo]) -> None:
    """sort.Slice(pods, MoreImportantPod), in place, in the order Go's sort leaves them."""
    if len(pods) > GO_INSERTION_MAX:
        sort_slice(pods, more_important)
    else:
        pods[:] = insertion_order(pods)


def insertion_order(pods: Sequence[PodInfo]) -> list[PodInfo]:
    """The order Go's insertion sort (sort.Slice up to 12 elements) gives pods by MoreImportantPod.

    Pods of equal priority and start time keep their order; each run of
    unstarted pods of one priority comes out reversed (a pod inserted is "more
    important" than every unstarted pod of its priority already placed). The
    key is total, so the order of any sublist is this order restricted to it.
    """
    keyed = [(-p.priority, pod_start_key(p), -i if pod_start_key(p) == math.inf else i) for i, p in enumerate(pods)]
    return [pods[k] for k in sorted(range(len(pods)), key=keyed.__getitem__)]
