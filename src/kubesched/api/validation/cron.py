"""A CronJob's schedule as the API server parses it: github.com/robfig/cron/v3 ParseStandard, whose
error texts the API server passes on. Kept apart: a parser of its own grammar, not a field rule."""

from __future__ import annotations

import re
import zoneinfo

from kubesched.gocompat.duration import DurationError, parse_duration
from kubesched.gocompat.strconv import go_quote, parse_int64

# strings.Fields and strings.TrimSpace split on unicode.IsSpace.
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
_GO_SPACES = re.compile(f"[{_GO_SPACE}]+")

_MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTHS = {m: i + 1 for i, m in enumerate(_MONTH_NAMES)}
_DAYS = {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
# second, minute, hour, day of month, month, day of week: (min, max, names).
_BOUNDS: tuple[tuple[int, int, dict[str, int] | None], ...] = (
    (0, 59, None),
    (0, 59, None),
    (0, 23, None),
    (1, 31, None),
    (1, 12, _MONTHS),
    (0, 6, _DAYS),
)
_DESCRIPTORS = frozenset({"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"})


class CronError(ValueError):
    """A schedule ParseStandard refuses; str() is its error text."""


def _must_parse_int(expr: str) -> int:
    try:
        value = parse_int64(expr)
    except ValueError as err:  # strconv.Atoi's error
        raise CronError(f"failed to parse int from {expr}: strconv.Atoi: parsing {go_quote(expr)}: {err}") from None
    if value < 0:
        raise CronError(f"negative number ({value}) not allowed: {expr}")
    return value


def _int_or_name(expr: str, names: dict[str, int] | None) -> int:
    if names is not None and expr.lower() in names:
        return names[expr.lower()]
    return _must_parse_int(expr)


def _check_range(expr: str, low: int, high: int, names: dict[str, int] | None) -> None:
    """getRange: number | number "-" number [ "/" number ], or * and ? for the whole range."""
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    if low_and_high[0] in ("*", "?"):
        start, end = low, high
    else:
        start = _int_or_name(low_and_high[0], names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _int_or_name(low_and_high[1], names)
        else:
            raise CronError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _must_parse_int(range_and_step[1])
        if len(low_and_high) == 1:
            end = high  # "N/step" means "N-max/step"
    else:
        raise CronError(f"too many slashes: {expr}")
    if start < low:
        raise CronError(f"beginning of range ({start}) below minimum ({low}): {expr}")
    if end > high:
        raise CronError(f"end of range ({end}) above maximum ({high}): {expr}")
    if start > end:
        raise CronError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise CronError(f"step of range should be a positive number: {expr}")


def load_location(name: str) -> str:
    """time.LoadLocation's error text for a zone name ("" when Go would load it)."""
    if name in ("", "UTC", "Local"):
        return ""
    if ".." in name or name[0] in "/\\":
        return "time: invalid location name"
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return "unknown time zone " + name
    return ""


def parse_cron_standard(spec: str) -> None:
    """cron.ParseStandard: five fields (minute, hour, day of month, month, day of week), or a
    descriptor (@yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly, @every <duration>),
    optionally after TZ=<zone> or CRON_TZ=<zone>. Raises CronError with the library's text."""
    if not spec:
        raise CronError("empty spec string")
    if spec.startswith(("TZ=", "CRON_TZ=")):
        space = spec.find(" ")
        if space < 0:
            # Upstream slices spec[eq+1:-1] here and panics (the request fails with an internal error).
            raise CronError("runtime error: slice bounds out of range [:-1]")
        zone = spec[spec.index("=") + 1 : space]
        err = load_location(zone)
        if err:
            raise CronError(f"provided bad location {zone}: {err}")
        spec = spec[space:].strip(_GO_SPACE)
    if spec.startswith("@"):
        if spec in _DESCRIPTORS:
            return
        if spec.startswith("@every "):
            try:
                parse_duration(spec[len("@every ") :])
            except DurationError as err:
                raise CronError(f"failed to parse duration {spec}: {err}") from None
            return
        raise CronError(f"unrecognized descriptor: {spec}")
    fields = [f for f in _GO_SPACES.split(spec) if f]
    if len(fields) != 5:
        raise CronError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    for text, (low, high, names) in zip(["0", *fields], _BOUNDS, strict=True):
        for expr in (r for r in text.split(",") if r):
            _check_range(expr, low, high, names)
