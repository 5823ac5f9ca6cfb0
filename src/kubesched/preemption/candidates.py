"""Preemption candidates (a node and its victims) and the one preempted on (pickOneNodeForPreemption)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from kubesched.framework.types import PodInfo
from kubesched.preemption.importance import pod_start_key

# A clock read while picking a node (seconds; after any real start time, exact for +1 steps).
NOW_READ = 1e12

# What the pick compares: (-PDB violations, -top victim priority, -sum of (priority + 2^31), -victims),
# then the earliest start of the top-priority victims (inf: none started).
PickKey = tuple[tuple[int, int, int, int], float]


@dataclass
class Victims:
    """The pods to evict on a node (most important first) and how many PDBs their eviction violates."""

    pods: list[PodInfo]
    num_pdb_violations: int = 0
    # The pick's key when the dry run worked it out for all its nodes at once (None: read from `pods`).
    pick: PickKey | None = field(default=None, compare=False, repr=False)


def _criteria(v: Victims) -> tuple[int, int, int, int]:
    """The pick's first four criteria, as one tuple (larger is better)."""
    if v.pick is not None:
        return v.pick[0]
    pods = v.pods
    return -v.num_pdb_violations, -pods[0].priority, -sum(p.priority + (1 << 31) for p in pods), -len(pods)


def _top_start(v: Victims) -> float:
    """The fifth criterion's start time: precomputed, or read from the pods."""
    return v.pick[1] if v.pick is not None else _earliest_top_start(v.pods)


@dataclass
class Candidate:
    """A node preemption could make room on, and its victims."""

    name: str
    victims: Victims


def pick_one_node_for_preemption(
    nodes: list[str], victims: dict[str, Victims], funcs: list[Callable[[str], float]] | None
) -> str:
    """The node whose victims score best by each function in turn (the first function that singles one out)."""
    if not nodes:
        return ""
    if not funcs:
        return _pick_by_default_criteria(nodes, victims)
    return _pick_by(list(nodes), funcs)


def _pick_by(candidates: list[str], funcs: list[Callable[[str], float]]) -> str:
    """The first function that singles out one node decides; ties go to the next one (first node at the end)."""
    for f in funcs:
        best = -math.inf
        selected: list[str] = []
        for node in candidates:
            s = f(node)
            if s > best:
                best = s
                selected = []
            if s == best:
                selected.append(node)
        if len(selected) == 1:
            return selected[0]
        candidates = selected
    return candidates[0]


def _pick_by_default_criteria(nodes: list[str], victims: dict[str, Victims]) -> str:
    """_pick_by with upstream's five criteria: the first four compared at once, as a tuple (the nodes
    left after each in turn are those with the largest tuple), the start times read only for those."""
    keys = [_criteria(v) for v in map(victims.__getitem__, nodes)]
    best = max(keys)
    left = [node for node, key in zip(nodes, keys, strict=True) if key == best]
    if len(left) == 1:
        return left[0]
    # The fifth, latest start of the highest-priority victims (as _default_score_funcs' latest_start).
    chosen, best_start, reads = left[0], -math.inf, 0
    for node in left:
        earliest = _top_start(victims[node])
        if earliest == math.inf:
            reads += 1
            earliest = NOW_READ + reads
        if earliest > best_start:
            chosen, best_start = node, earliest
    return chosen


def _earliest_top_start(pods: list[PodInfo]) -> float:
    """util.GetEarliestPodStartTime: the earliest start among the highest-priority pods (inf: none started)."""
    top, earliest = -math.inf, math.inf
    for p in pods:
        if p.priority > top:
            top, earliest = p.priority, pod_start_key(p)
        elif p.priority == top:
            earliest = min(earliest, pod_start_key(p))
    return earliest


def _default_score_funcs(victims: dict[str, Victims]) -> list[Callable[[str], float]]:
    """Upstream's criteria: fewest PDB violations, lowest top victim priority, lowest priority sum, fewest
    victims, latest start of the top-priority victims."""

    def pdb(node: str) -> int:
        return -victims[node].num_pdb_violations

    def highest(node: str) -> int:
        return -victims[node].pods[0].priority

    def priority_sum(node: str) -> int:
        return -sum(p.priority + (1 << 31) for p in victims[node].pods)

    def count(node: str) -> int:
        return -len(victims[node].pods)

    reads = 0

    def latest_start(node: str) -> float:
        # util.GetEarliestPodStartTime: the earliest start among the highest-priority victims; later is better.
        nonlocal reads
        earliest = _earliest_top_start(victims[node].pods)
        if earliest == math.inf:
            # None of them has started: upstream reads the clock for this node, later than every start
            # time and than its reads for the nodes before, so of such nodes the last one looked at wins.
            reads += 1
            return NOW_READ + reads
        return earliest

    return [pdb, highest, priority_sum, count, latest_start]
