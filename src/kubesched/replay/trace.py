"""Workload traces: which pods arrive when, what they ask for, and how long they run.

A trace is CSV (a header row, then one pod a row) or JSON Lines (one JSON object
a line), with these fields:

- ``time`` (required): arrival, in seconds from the start of the replay.
- ``name`` (required): ``namespace/name`` or ``name`` (the namespace is then the
  template's, else ``default``). Names are unique within a trace.
- ``template``: the name (or ``namespace/name``) of a Pod manifest to copy: a pod
  without ``spec.nodeName`` in the cluster file, or in the ``--templates`` file;
  or ``job/name`` (``namespace/job/name``): a Job of the cluster file to start
  (see JobRun); or ``cronjob/name``: a CronJob to start (see CronRun).
- ``spec``: the pod inline, as JSON: a PodSpec (``{"containers": [...]}``) or a
  whole Pod manifest (``{"metadata": {"labels": ...}, "spec": {...}}``).
  Exactly one of ``template`` and ``spec``.
- ``priorityClass``: a PriorityClass name; overrides the template's.
- ``duration``: seconds the pod runs once bound; empty (or absent, or null)
  means it runs until the end of the replay.

Lines that start with ``#`` and blank lines are skipped. Every error names the
file, the line and the field, so that a trace of 100,000 lines can be fixed
from the message alone.

This module builds the trace; its rows are read in tracerows.py, the pods, Jobs and CronJobs it starts
are in runs.py, the manifests rows copy in templates.py.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubesched.api.scheduling import SYSTEM_PRIORITY_CLASSES
from kubesched.errors import InputError
from kubesched.replay.cron import schedule
from kubesched.replay.runs import CronRun, CronTemplate, JobRun, JobTemplate, TraceEntry, instantiate
from kubesched.replay.templates import Templates
from kubesched.replay.tracerows import (
    REQUIRED,
    csv_rows,
    detect_format,
    inline_pod,
    jsonl_rows,
    seconds,
    split_name,
    text_field,
)

__all__ = [
    "CronRun",
    "CronTemplate",
    "JobRun",
    "JobTemplate",
    "Templates",
    "Trace",
    "TraceEntry",
    "load_trace",
    "parse_trace",
]


@dataclass
class Trace:
    source: str
    entries: list[TraceEntry]
    format: str
    # CronJobs the trace starts, each with its first tick.
    crons: list[tuple[float, CronRun]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.entries)


def parse_trace(
    text: str,
    source: str,
    templates: Templates,
    priority_classes: set[str] | None = None,
    fmt: str | None = None,
) -> Trace:
    """The trace in `text`, its pods made and checked; entries in arrival order (ties: file order).

    `priority_classes` are the names the cluster defines; a pod naming another
    is rejected here, with its line, rather than failing admission mid-replay.
    """
    fmt = fmt or detect_format(source, text)
    rows: Iterator[tuple[int, Mapping[str, Any]]] = csv_rows(text, source) if fmt == "csv" else jsonl_rows(text, source)
    known_classes = None if priority_classes is None else set(priority_classes) | set(SYSTEM_PRIORITY_CLASSES)
    seen: dict[str, int] = {}
    entries: list[TraceEntry] = []
    crons: list[tuple[float, CronRun]] = []
    for line, row in rows:
        for col in REQUIRED:
            if col not in row:
                raise InputError(source, "required", f"line {line}", col)
        t = seconds(row.get("time"), source, line, "time", optional=False)
        assert t is not None
        ns, name = split_name(text_field(row.get("name"), source, line, "name"), source, line)
        template_ref = text_field(row.get("template"), source, line, "template")
        spec_value = row.get("spec")
        has_spec = spec_value not in (None, "")
        if bool(template_ref) == has_spec:
            raise InputError(
                source,
                "give exactly one of template (a Pod manifest's name) and spec (the pod inline, as JSON)",
                f"line {line}",
                "template" if template_ref else "spec",
            )
        priority_class = text_field(row.get("priorityClass"), source, line, "priorityClass")
        duration = seconds(row.get("duration"), source, line, "duration", optional=True)
        job: JobTemplate | None = None
        cron: CronTemplate | None = None
        if template_ref:
            try:
                cron = templates.find_cron(template_ref)
                job = cron.job if cron is not None else templates.find_job(template_ref)
                base = job.pod if job is not None else templates.find(template_ref)
            except ValueError as err:
                raise InputError(source, str(err), f"line {line}", "template") from None
        else:
            base = inline_pod(spec_value, source, line)
            if base.spec.node_name:
                raise InputError(
                    source, "a trace pod arrives unscheduled: remove nodeName", f"line {line}", "spec.nodeName"
                )
        namespace = ns or base.metadata.namespace or "default"
        pod = instantiate(base, namespace, name, priority_class)
        pc = pod.spec.priority_class_name
        if pc and known_classes is not None and pc not in known_classes:
            field = "priorityClass" if priority_class else "template"
            where = f"no PriorityClass {pc!r} in the cluster file"
            if known_classes - set(SYSTEM_PRIORITY_CLASSES):
                where += f" (defined: {', '.join(sorted(known_classes - set(SYSTEM_PRIORITY_CLASSES)))})"
            raise InputError(source, where, f"line {line}", field)
        if cron is not None:
            try:
                next_tick = schedule(cron.schedule, cron.time_zone)
            except (ValueError, KeyError) as err:
                raise InputError(source, f"CronJob {cron.key}: schedule: {err}", f"line {line}", "template") from None
            run = CronRun(line, namespace, name, cron, priority_class, duration, next_tick)
            crons.append((next_tick(t - 1e-3), run))
            continue
        made = [TraceEntry(line, t, f"{namespace}/{name}", pod, duration)]
        if job is not None:
            made = JobRun(line, namespace, name, job, priority_class, duration).start(t)
        for e in made:
            if e.key in seen:
                raise InputError(
                    source, f"pod {e.key} is already in the trace (line {seen[e.key]})", f"line {line}", "name"
                )
            seen[e.key] = line
        entries += made
    entries.sort(key=lambda e: e.time)  # stable: equal times keep file order
    return Trace(source, entries, fmt, crons)


def load_trace(
    path: str | Path,
    templates: Templates,
    priority_classes: set[str] | None = None,
) -> Trace:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as err:
        raise InputError(str(p), f"cannot read: {err.strerror or err}") from None
    except UnicodeDecodeError as err:
        raise InputError(str(p), f"not UTF-8 text: {err.reason} at byte {err.start}") from None
    return parse_trace(text, str(p), templates, priority_classes)
