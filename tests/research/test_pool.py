"""Worker pools (research/pool.py): forked when nothing else runs, spawned beside other threads."""

from __future__ import annotations

import os
import sys
import threading
import types

import pytest

from kubesched.research import pool as pool_mod
from kubesched.research.pool import process_pool, start_method


@pytest.mark.parametrize(("threads", "ray", "method"), [(1, False, "fork"), (2, False, "spawn"), (1, True, "spawn")])
def test_workers_fork_only_without_other_threads(
    monkeypatch: pytest.MonkeyPatch, threads: int, ray: bool, method: str
) -> None:
    monkeypatch.setattr(pool_mod.threading, "active_count", lambda: threads)
    if ray:
        monkeypatch.setitem(sys.modules, "ray", types.ModuleType("ray"))
    else:
        monkeypatch.delitem(sys.modules, "ray", raising=False)
    assert start_method() == method


def test_beside_another_thread_the_workers_are_spawned_and_work() -> None:
    """A fork taken while another thread holds a lock hangs the worker; a spawned one starts clean."""
    release = threading.Event()
    holder = threading.Thread(target=release.wait, daemon=True)
    holder.start()
    try:
        with process_pool(2) as pool:
            assert pool._mp_context.get_start_method() == "spawn"
            pids = {pool.submit(os.getpid).result(timeout=120) for _ in range(4)}
        assert pids and os.getpid() not in pids
    finally:
        release.set()
        holder.join()
