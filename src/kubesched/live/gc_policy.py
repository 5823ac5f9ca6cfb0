"""Garbage-collector settings for a long-running scheduler.

CPython's cyclic collector runs after every 700 net allocations and, every few
runs, walks every tracked object. A scheduler holds a large, long-lived heap (every
node and pod of the cluster, decoded) and allocates briskly (a cycle, an event,
a request per pod): with the default thresholds, start-up on a 5,000-node,
10,000-pod cluster spent a quarter of its time walking the freshly listed
objects. Reference counting frees almost everything we drop; the collector only
has to find the rare cycles, so it can run much less often, and the objects of
the initial sync can be moved out of its sight once.
"""

from __future__ import annotations

import gc

# Allocations between young-generation collections (CPython's default: 700). Cycles that become
# garbage wait at most this long; the older generations keep their default ratios.
YOUNG_THRESHOLD = 50_000


def tune() -> None:
    """Collect less often: called when the process starts."""
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)


def freeze_synced() -> None:
    """The caches are synced: leave their objects out of future collections (gc.freeze).

    Those that die later are still freed by reference counting; only a cycle among them would
    outlive its use, once, bounded by the size of the initial lists.
    """
    gc.freeze()
