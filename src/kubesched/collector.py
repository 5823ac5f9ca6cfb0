"""Pausing Python's cyclic garbage collector around bulk work.

Loading a scenario and scheduling it allocate millions of long-lived objects
and (by construction) no reference cycles; the collector's passes would rescan
them again and again as they pile up, for nothing.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused(keep: bool = False) -> Iterator[None]:
    """Disable the cyclic collector inside the block (re-enabled after, if it was on).

    `keep`: what the block allocated is there to stay (a loaded scenario), so it joins the oldest
    generation unscanned instead of being walked by the first young collection after the block (0.25 s
    after 150,000 pods: three million container objects). Not when objects are frozen: gc.freeze is
    someone's choice (the live scheduler's), which the unfreeze this takes would undo.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            if keep and gc.get_freeze_count() == 0:
                gc.freeze()  # every tracked object out of the generations, the young count reset...
                gc.unfreeze()  # ...and back, into the oldest one
            gc.enable()
