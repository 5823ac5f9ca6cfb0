"""A CronJob's schedule on the replay's virtual clock: the times its Jobs start.

Five-field schedules and the @hourly-style descriptors are croniter's; `@every <duration>` (which the
CronJob controller's cron library also takes) ticks at that interval from the row's time. A `TZ=zone`
prefix or `spec.timeZone` sets the zone the fields are read in; the clock itself is UTC from
2025-01-01T00:00:00Z (kubesched.cluster.clock.EPOCH).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from croniter import croniter

from kubesched.cluster.clock import EPOCH
from kubesched.gocompat.duration import parse_duration

_NANOS = 1_000_000_000


def schedule(spec: str, time_zone: str | None) -> Callable[[float], float]:
    """next(t): the first tick strictly after virtual time t, as virtual seconds."""
    spec = spec.strip()
    for prefix in ("CRON_TZ=", "TZ="):
        if spec.startswith(prefix):
            zone, _, spec = spec[len(prefix) :].partition(" ")
            time_zone = zone
            spec = spec.strip()
    if spec.startswith("@every"):
        every = parse_duration(spec[len("@every") :].strip()) / _NANOS
        return lambda t: t + every
    tz = ZoneInfo(time_zone) if time_zone else None

    def after(t: float) -> float:
        start = EPOCH + timedelta(seconds=t)
        if tz is not None:
            start = start.astimezone(tz)
        nxt: datetime = croniter(spec, start).get_next(datetime)
        return (nxt - EPOCH).total_seconds()

    return after
