"""collector_paused: the collector off inside, back on after; with `keep`, what the block made goes
straight to the oldest generation, unless objects are frozen (then nothing is moved)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from kubesched.collector import collector_paused


@pytest.fixture
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    gc.collect()
    yield
    if not was:
        gc.disable()


def _in_generation(obj: object, generation: int) -> bool:
    return any(o is obj for o in gc.get_objects(generation=generation))


def test_the_collector_is_off_inside_and_on_after(collector_on: None) -> None:
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off(collector_on: None) -> None:
    gc.disable()
    with collector_paused(keep=True):
        made = [[] for _ in range(10)]
    assert not gc.isenabled()
    assert _in_generation(made, 0)


def test_kept_objects_skip_the_young_generations(collector_on: None) -> None:
    with collector_paused(keep=True):
        made = [[] for _ in range(5000)]
    assert gc.get_count()[0] < 5000
    assert _in_generation(made, 2) and _in_generation(made[0], 2)
    assert not _in_generation(made, 0)


def test_objects_not_kept_are_young(collector_on: None) -> None:
    with collector_paused():
        made = [[] for _ in range(10)]
    assert _in_generation(made, 0)


def test_frozen_objects_stay_frozen(collector_on: None) -> None:
    frozen = [[]]
    gc.freeze()
    try:
        count = gc.get_freeze_count()
        with collector_paused(keep=True):
            made = [[] for _ in range(10)]
        assert gc.get_freeze_count() == count
        assert _in_generation(made, 0)
        assert not _in_generation(frozen, 2)
    finally:
        gc.unfreeze()
