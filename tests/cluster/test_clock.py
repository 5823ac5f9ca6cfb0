"""Clocks: where within a wall-clock second they start (upstream's backoff windows align to the wall clock)."""

from __future__ import annotations

from datetime import timedelta

from kubesched.cluster.clock import VIRTUAL_SECOND_PHASE, RealClock, VirtualClock
from kubesched.cluster.embedded import EmbeddedCluster
from kubesched.config.defaults import default_configuration
from kubesched.scheduler import Scheduler


def test_a_simulation_starts_half_way_through_a_second() -> None:
    assert VirtualClock().second_phase() == VIRTUAL_SECOND_PHASE == 0.5
    # Its datetimes stay on whole seconds from the epoch: the phase only places the backoff windows.
    clock = VirtualClock()
    clock.advance(2.0)
    assert clock.datetime().microsecond == 0


def test_the_real_clock_starts_where_the_wall_clock_stood() -> None:
    clock = RealClock()
    start = clock.datetime() - timedelta(seconds=clock.now())
    apart = abs(clock.second_phase() - start.microsecond / 1e6)
    assert min(apart, 1 - apart) < 2e-3  # two reads of the clock, microseconds apart


def test_the_scheduler_queue_takes_the_cluster_clock_phase() -> None:
    cluster = EmbeddedCluster()
    sched = Scheduler(cluster, default_configuration(), clock=cluster.clock.now)
    assert sched.queue is not None
    assert sched.queue.window_phase == VIRTUAL_SECOND_PHASE
