"""Progress of long commands on stderr: a rich display on a terminal, plain lines when forced elsewhere.

`simulate`, `explain`, `capacity` and `replay` can run for minutes on a large
cluster; without a sign of life a user cannot tell a slow run from a hung one.
The display goes to stderr only, never into the output a user pipes on. By
default it shows only when stderr is a terminal; `--progress` forces it (in a
CI log it prints a plain line every few seconds instead of redrawing), and
`--quiet` silences it.

Commands report through a `Progress`: `stage(description, total, unit)` opens a
stage and returns a `Stage`, whose `update(done)` is cheap enough to call on
every object or pod (the display is touched at most a few times a second).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol, TextIO

# Seconds between two redraws on a terminal, and between two lines in a log.
TERMINAL_INTERVAL = 0.1
LOG_INTERVAL = 5.0


class Stage(Protocol):
    """One step of a command (reading the scenario, scheduling its pods): how far it is."""

    def update(self, done: int, total: int | None = None) -> None:
        """`done` of `total` units so far (`total` changes when it was an estimate)."""

    def finish(self) -> None:
        """The stage is over: its display is removed (terminal) or its last line printed (log)."""


class Progress(Protocol):
    def stage(self, description: str, total: int | None, unit: str) -> Stage:
        """A new stage, e.g. ("scheduling", 30000, "pods")."""


class _Silent:
    """No display: what every stage does when progress is not shown."""

    def stage(self, description: str, total: int | None, unit: str) -> _Silent:
        return self

    def update(self, done: int, total: int | None = None) -> None:
        pass

    def finish(self) -> None:
        pass


SILENT = _Silent()


def format_rate(rate: float, unit: str = "") -> str:
    """A rate people can read: pods a second, tenths below ten, per minute below one (a sweep's runs)."""
    unit = f" {unit}" if unit else ""
    if rate >= 10:
        return f"{rate:,.0f}{unit}/s"
    if rate >= 1:
        return f"{rate:.1f}{unit}/s"
    return f"{rate * 60:.1f}{unit}/min"


def _rate_and_eta(done: int, total: int | None, elapsed: float) -> str:
    if elapsed <= 0 or done <= 0:
        return ""
    rate = done / elapsed
    text = f", {format_rate(rate)}"
    if total and done < total:
        text += f", ETA {_duration((total - done) / rate)}"
    return text


def _duration(seconds: float) -> str:
    s = int(seconds + 0.5)
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


class _LogStage:
    """A stage in a log: a line now and then, and one at the end with the time it took."""

    def __init__(self, out: TextIO, description: str, total: int | None, unit: str) -> None:
        self.out = out
        self.description = description
        self.total = total
        self.unit = unit
        self.done = 0
        self.start = time.monotonic()
        self.next_line = self.start + LOG_INTERVAL

    def _line(self, now: float) -> None:
        of = f"/{self.total:,}" if self.total else ""
        extra = _rate_and_eta(self.done, self.total, now - self.start)
        print(f"{self.description}: {self.done:,}{of} {self.unit}{extra}", file=self.out, flush=True)

    def update(self, done: int, total: int | None = None) -> None:
        self.done = done
        if total is not None:
            self.total = total
        now = time.monotonic()
        if now >= self.next_line:
            self.next_line = now + LOG_INTERVAL
            self._line(now)

    def finish(self) -> None:
        now = time.monotonic()
        of = f"/{self.total:,}" if self.total and self.total != self.done else ""
        print(
            f"{self.description}: {self.done:,}{of} {self.unit} in {now - self.start:.1f}s", file=self.out, flush=True
        )


class _LogProgress:
    def __init__(self, out: TextIO) -> None:
        self.out = out

    def stage(self, description: str, total: int | None, unit: str) -> _LogStage:
        return _LogStage(self.out, description, total, unit)


class _TerminalStage:
    """A task of a rich Progress, updated at most every TERMINAL_INTERVAL."""

    def __init__(self, bar: Any, description: str, total: int | None, unit: str) -> None:
        self.bar = bar
        self.task = bar.add_task(description, total=total, unit=unit)
        self.total = total
        self.next_draw = 0.0

    def update(self, done: int, total: int | None = None) -> None:
        now = time.monotonic()
        if total is not None and total != self.total:
            self.total = total
            self.bar.update(self.task, total=total)
        if now >= self.next_draw:
            self.next_draw = now + TERMINAL_INTERVAL
            self.bar.update(self.task, completed=done)

    def finish(self) -> None:
        self.bar.remove_task(self.task)


class _TerminalProgress:
    def __init__(self, bar: Any) -> None:
        self.bar = bar

    def stage(self, description: str, total: int | None, unit: str) -> _TerminalStage:
        return _TerminalStage(self.bar, description, total, unit)


def _rich_progress(out: TextIO) -> Any:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text

    class Rate(ProgressColumn):
        """Units per second: pods/s while scheduling, objects/s while reading."""

        def render(self, task: Any) -> Text:
            speed = task.finished_speed or task.speed
            return Text(format_rate(speed, task.fields.get("unit", "")) if speed else "")

    return Progress(
        TextColumn("[bold]{task.description}[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[unit]}"),
        Rate(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=Console(file=out),
        transient=True,
    )


def wanted(args: Any, stream: TextIO) -> bool:
    """Whether a command with --progress/--quiet shows progress on `stream`."""
    if getattr(args, "quiet", False):
        return False
    return bool(getattr(args, "progress", False)) or stream.isatty()


@contextmanager
def progress_display(args: Any, stream: TextIO | None = None) -> Iterator[Progress]:
    """The Progress a command reports to: on `stream` (stderr), as --progress/--quiet and the terminal say."""
    out = stream if stream is not None else sys.stderr
    if not wanted(args, out):
        yield SILENT
        return
    if not out.isatty():
        yield _LogProgress(out)
        return
    with _rich_progress(out) as bar:
        yield _TerminalProgress(bar)
