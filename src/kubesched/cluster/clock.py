"""Clocks: every time the scheduler reads goes through one of these.

The virtual clock only moves when the simulation moves it, so a simulation
never sleeps and gives the same result on every run; the real clock is the same
interface over the wall clock for live mode.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

EPOCH = datetime(2025, 1, 1, tzinfo=UTC)
# The latest virtual time input may ask for (trace arrivals, durations), about 317 years: the clock's
# datetimes (creation timestamps, conditions, events) must stay valid datetimes (year 9999 is ~2.5e11 s
# away) with room for the durations, backoffs and grace periods that come after the last arrival.
MAX_SECONDS = 1e10
# Where within a wall-clock second a simulation starts. Upstream aligns its 1 s backoff windows to the wall
# clock (time.Truncate), and a run starts at whatever point of a second it starts: pods failed within the
# first second of a run can fall in two windows, which decides who is retried first. Starting exactly on a
# second (every such pod in one window) is the one start upstream almost never has; half-way is typical.
VIRTUAL_SECOND_PHASE = 0.5


class Clock:
    def now(self) -> float:
        raise NotImplementedError

    def second_phase(self) -> float:
        """Where the wall clock stands within its second when now() reads 0 (backoff windows align to it)."""
        return 0.0

    def datetime(self) -> datetime:
        return EPOCH + timedelta(seconds=self.now())


class VirtualClock(Clock):
    """Seconds since the start of the simulation; advanced explicitly."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        # The datetime of the last time asked for (datetimes are immutable: one object serves every read).
        self._datetime = (start, EPOCH + timedelta(seconds=start))

    def now(self) -> float:
        return self._now

    def second_phase(self) -> float:
        return VIRTUAL_SECOND_PHASE

    def datetime(self) -> datetime:
        at, dt = self._datetime
        if at != self._now:
            at = self._now
            dt = EPOCH + timedelta(seconds=at)
            self._datetime = (at, dt)
        return dt

    def advance_to(self, t: float) -> None:
        if t > self._now:
            self._now = t

    def advance(self, dt: float) -> None:
        self._now += max(dt, 0.0)


class RealClock(Clock):
    """Monotonic seconds since this clock was made; wall-clock datetimes."""

    def __init__(self) -> None:
        self._start = time.monotonic()
        self._wall_start = datetime.now(UTC)

    def now(self) -> float:
        return time.monotonic() - self._start

    def second_phase(self) -> float:
        return self._wall_start.microsecond / 1e6

    def datetime(self) -> datetime:
        return self._wall_start + timedelta(seconds=self.now())
