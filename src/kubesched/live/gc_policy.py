"""Garbage-collector settings for a long-running scheduler.

CPython's cyclic collector runs after every 700 net allocations and, every few
runs, walks every tracked object. Start-up decodes the whole cluster (every node
and pod) at once: with the default thresholds, start-up on a 5,000-node,
10,000-pod cluster spent a quarter of its time walking the freshly listed
objects again and again. So the collector runs rarely until the caches are
synced; then its thresholds go back to the defaults (a higher young threshold
kept more garbage alive between collections and raised the process's peak RSS
in benchmarks/live_memory.py) and the synced objects are moved out of its sight.
"""

from __future__ import annotations

import gc

# Allocations between young-generation collections while the initial lists are decoded (CPython: 700).
START_UP_THRESHOLD = 50_000


def start_up() -> tuple[int, int, int]:
    """Collect rarely until synced (called when the process starts); the thresholds to restore."""
    before = gc.get_threshold()
    gc.set_threshold(START_UP_THRESHOLD, before[1], before[2])
    return before


def synced(thresholds: tuple[int, int, int]) -> None:
    """The caches are synced: the usual thresholds again, and their objects out of future collections.

    Those that die later are still freed by reference counting; only a cycle among them would
    outlive its use, once, bounded by the size of the initial lists.
    """
    gc.set_threshold(*thresholds)
    gc.freeze()
