"""Worker processes for sweeps and research runs, started so that a worker cannot hang at birth."""

from __future__ import annotations

import multiprocessing
import sys
import threading
from concurrent.futures import ProcessPoolExecutor
from typing import Any


def start_method() -> str:
    """How workers start: by fork when this process runs no other thread (fast: a worker shares what is
    already loaded), else by spawn. A fork taken while another thread holds a lock gives the worker that lock
    held forever, and it hangs at its first use. Ray, once imported, runs threads Python does not list (its
    core worker's, in C++): a process that imported it spawns too."""
    if threading.active_count() == 1 and "ray" not in sys.modules and "fork" in multiprocessing.get_all_start_methods():
        return "fork"
    return "spawn"


def process_pool(workers: int, **kwargs: Any) -> ProcessPoolExecutor:
    """A ProcessPoolExecutor of `workers` processes started by start_method() (its functions and arguments
    must be importable and picklable, as a spawned worker needs them)."""
    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context(start_method()), **kwargs)
