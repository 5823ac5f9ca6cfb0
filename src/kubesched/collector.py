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
def collector_paused() -> Iterator[None]:
    """Disable the cyclic collector inside the block (re-enabled after, if it was on)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
