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
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from kubesched.api.core import Pod
from kubesched.api.decode import DecodeError, decode
from kubesched.api.meta import ObjectMeta
from kubesched.api.scheduling import SYSTEM_PRIORITY_CLASSES
from kubesched.cluster.clock import EPOCH, MAX_SECONDS
from kubesched.errors import InputError
from kubesched.replay.cron import schedule
from kubesched.scenario import Manifest

FIELDS = ("time", "name", "template", "spec", "priorityClass", "duration")
REQUIRED = ("time", "name")

_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@dataclass(frozen=True)
class TraceEntry:
    """One pod of a trace: the pod to create at `time` and how long it runs once bound."""

    line: int
    time: float
    key: str
    pod: Pod
    duration: float | None
    # The Job run this pod belongs to (a row whose template names a Job), else None.
    job: JobRun | None = None

    @property
    def namespace(self) -> str:
        return self.key.split("/", 1)[0]

    @property
    def name(self) -> str:
        return self.key.split("/", 1)[1]


@dataclass(frozen=True)
class JobTemplate:
    """A Job of the cluster file that trace rows start: the pod its controller makes, and its counts."""

    key: str
    pod: Pod
    parallelism: int
    completions: int | None
    backoff_limit: int


@dataclass
class JobRun:
    """One trace row's Job: `parallelism` pods at a time, each running the row's duration; as one finishes
    the next starts, until `completions` have succeeded (without completions, the first ones only); a pod
    lost to preemption is replaced while failures stay within backoffLimit."""

    line: int
    namespace: str
    name: str
    job: JobTemplate
    priority_class: str
    duration: float | None
    active: int = 0
    succeeded: int = 0
    failed: int = 0
    made: int = 0

    def start(self, now: float) -> list[TraceEntry]:
        """The pods to create now: up to parallelism running, no more than completions need."""
        out = []
        while self.active < self.job.parallelism and self._wants_more():
            out.append(self._next_pod(now))
        return out

    def _next_pod(self, now: float) -> TraceEntry:
        name = f"{self.name}-{self.made}"
        pod = _instantiate(self.job.pod, self.namespace, name, self.priority_class)
        self.active += 1
        self.made += 1
        return TraceEntry(self.line, now, f"{self.namespace}/{name}", pod, self.duration, self)

    def _wants_more(self) -> bool:
        """Completions not yet covered by succeeded and running pods (a work queue: its first pods only)."""
        if self.job.completions is None:
            return self.made < self.job.parallelism
        return self.succeeded + self.active < self.job.completions

    def finished(self, now: float) -> list[TraceEntry]:
        self.active -= 1
        self.succeeded += 1
        return self.start(now) if self.job.completions is not None else []

    def lost(self, now: float) -> list[TraceEntry]:
        """A pod preempted: a failure; replaced while failures are within backoffLimit."""
        self.active -= 1
        self.failed += 1
        if self.failed > self.job.backoff_limit:
            return []
        if self.job.completions is None:
            return [self._next_pod(now)]  # a work queue: the lost pod's work is still to do
        return self.start(now)


@dataclass(frozen=True)
class CronTemplate:
    """A CronJob of the cluster file: its Job (as a JobTemplate), schedule and concurrency policy."""

    key: str
    job: JobTemplate
    schedule: str
    time_zone: str | None
    concurrency_policy: str


@dataclass
class CronRun:
    """One trace row's CronJob: from the row's time, a Job at each tick of its schedule, named after the
    tick's minute as the CronJob controller names them; Forbid (and Replace, run as Forbid) skips a tick
    while the previous Job still has pods to finish."""

    line: int
    namespace: str
    name: str
    cron: CronTemplate
    priority_class: str
    duration: float | None
    next_tick: Callable[[float], float]
    runs: list[JobRun] = field(default_factory=list)

    def tick(self, t: float) -> list[TraceEntry]:
        if self.cron.concurrency_policy in ("Forbid", "Replace") and any(r.active for r in self.runs):
            return []
        minute = int((EPOCH.timestamp() + t) // 60)
        run = JobRun(
            self.line, self.namespace, f"{self.name}-{minute}", self.cron.job, self.priority_class, self.duration
        )
        self.runs.append(run)
        return run.start(t)


@dataclass
class Trace:
    source: str
    entries: list[TraceEntry]
    format: str
    # CronJobs the trace starts, each with its first tick.
    crons: list[tuple[float, CronRun]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.entries)


class Templates:
    """Pod manifests that trace lines copy, found by `name` or `namespace/name`; Jobs and CronJobs, found
    by `job/name` or `cronjob/name` (or `namespace/job/name` ...)."""

    def __init__(
        self,
        manifests: Sequence[Manifest],
        sources: Sequence[str],
        jobs: Sequence[JobTemplate] = (),
        crons: Sequence[CronTemplate] = (),
    ) -> None:
        self.jobs = {j.key: j for j in jobs}
        self.crons = {c.key: c for c in crons}
        self.by_key: dict[str, Pod] = {}
        self.by_name: dict[str, list[Pod]] = {}
        self.sources = list(sources)
        for m in manifests:
            pod: Pod = m.obj
            ns = pod.metadata.namespace or "default"
            key = f"{ns}/{pod.metadata.name}"
            self.by_key[key] = pod
            self.by_name.setdefault(pod.metadata.name, []).append(pod)

    def find_job(self, ref: str) -> JobTemplate | None:
        """The Job `ref` names ("job/name" or "namespace/job/name"); None when it names no Job."""
        return self._find_owner(ref, "job", self.jobs)

    def find_cron(self, ref: str) -> CronTemplate | None:
        """The CronJob `ref` names ("cronjob/name" or "namespace/cronjob/name"); None when it names none."""
        return self._find_owner(ref, "cronjob", self.crons)

    @staticmethod
    def _find_owner(ref: str, kind: str, known: Mapping[str, Any]) -> Any:
        parts = ref.split("/")
        if len(parts) not in (2, 3) or parts[-2] != kind:
            return None
        name = parts[-1]
        found = [
            v
            for k, v in known.items()
            if k.split("/", 1)[1] == name and (len(parts) == 2 or k.startswith(f"{parts[0]}/"))
        ]
        what = "Job" if kind == "job" else "CronJob"
        if not found:
            names = sorted(f"{kind}/{k.split('/', 1)[1]}" for k in known)
            hint = f" ({what}s: {', '.join(names[:8])})" if names else " (it has none)"
            raise ValueError(f"no {what} {name!r} in the cluster file that makes pods{hint}")
        if len(found) > 1:
            raise ValueError(f"{what} {name!r} is in several namespaces: write namespace/{kind}/{name}")
        return found[0]

    def find(self, ref: str) -> Pod:
        """The template named `ref`; raises ValueError with a message fit for the user."""
        if "/" in ref:
            pod = self.by_key.get(ref)
            if pod is not None:
                return pod
        else:
            pods = self.by_name.get(ref, [])
            if len(pods) == 1:
                return pods[0]
            if len(pods) > 1:
                keys = ", ".join(sorted(f"{p.metadata.namespace or 'default'}/{p.metadata.name}" for p in pods))
                raise ValueError(f"template {ref!r} is ambiguous ({keys}): write namespace/name")
        where = " and ".join(self.sources) if self.sources else "the cluster file"
        known = sorted(self.by_key)
        hint = f" (templates: {', '.join(known[:8])}{', ...' if len(known) > 8 else ''})" if known else ""
        raise ValueError(f"no template {ref!r}: a Pod without spec.nodeName in {where}{hint}")


# ------------------------------------------------------------------ reading rows


def _csv_rows(text: str, source: str) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, row) for each data row; comment and blank lines skipped."""
    lines = text.splitlines()
    kept: list[int] = []  # original line number of each line handed to the reader

    def feed() -> Iterator[str]:
        for i, raw in enumerate(lines, start=1):
            if not raw.strip() or raw.lstrip().startswith("#"):
                continue
            kept.append(i)
            yield raw

    reader = csv.reader(feed())
    header: list[str] | None = None
    consumed = 0
    for row in reader:
        start = kept[consumed]
        consumed = reader.line_num
        cells = [c.strip() for c in row]
        if header is None:
            header = cells
            for col in header:
                if col not in FIELDS:
                    raise InputError(
                        source, f"unknown column {col!r} (columns: {', '.join(FIELDS)})", f"line {start}", col or "?"
                    )
            for col in REQUIRED:
                if col not in header:
                    raise InputError(source, f"missing column {col!r} in the header row", f"line {start}", col)
            dup = sorted({c for c in header if header.count(c) > 1})
            if dup:
                raise InputError(source, "column given twice in the header row", f"line {start}", dup[0])
            continue
        if len(cells) != len(header):
            raise InputError(
                source, f"{len(cells)} values for {len(header)} columns ({','.join(header)})", f"line {start}"
            )
        yield start, dict(zip(header, cells, strict=True))
    if header is None:
        raise InputError(source, "empty trace: no header row (columns: " + ", ".join(FIELDS) + ")")


def _jsonl_rows(text: str, source: str) -> Iterator[tuple[int, dict[str, Any]]]:
    for i, raw in enumerate(text.splitlines(), start=1):
        s = raw.strip()
        if not s or s.startswith("#"):
            continue
        try:
            obj = json.loads(s)
        except json.JSONDecodeError as err:
            raise InputError(source, f"malformed JSON: column {err.colno}: {err.msg}", f"line {i}") from None
        if not isinstance(obj, dict):
            raise InputError(source, f"must be a JSON object, got {type(obj).__name__}", f"line {i}")
        for key in obj:
            if key not in FIELDS:
                raise InputError(source, f"unknown field (fields: {', '.join(FIELDS)})", f"line {i}", str(key))
        yield i, obj


def detect_format(path: str, text: str) -> str:
    """'csv' or 'jsonl': by extension, else by the first meaningful character."""
    suffix = Path(path).suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix in (".jsonl", ".ndjson", ".json"):
        return "jsonl"
    for raw in text.splitlines():
        s = raw.strip()
        if s and not s.startswith("#"):
            return "jsonl" if s.startswith("{") else "csv"
    return "csv"


# ------------------------------------------------------------------ fields


def _shown(value: Any) -> str:
    """The value as the user wrote it, cut short: a 400-digit number need not fill the terminal."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:30]}... ({len(text)} characters)"


def _seconds(value: Any, source: str, line: int, field: str, optional: bool) -> float | None:
    if value is None or (isinstance(value, str) and value == ""):
        if optional:
            return None
        raise InputError(source, "required", f"line {line}", field)
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise InputError(source, f"must be a number of seconds, got {_shown(value)}", f"line {line}", field)
    try:
        number = float(value)
    except ValueError:
        raise InputError(source, f"must be a number of seconds, got {_shown(value)}", f"line {line}", field) from None
    except OverflowError:  # a JSON integer with hundreds of digits
        number = math.inf
    if not math.isfinite(number) or number < 0:
        raise InputError(source, f"must be a finite number >= 0, got {_shown(value)}", f"line {line}", field)
    if number > MAX_SECONDS:
        # The virtual clock could not date what happens then (a datetime ends at year 9999).
        raise InputError(
            source,
            f"must be at most {MAX_SECONDS:,.0f} seconds (about 317 years), got {_shown(value)}",
            f"line {line}",
            field,
        )
    return number + 0.0  # -0.0 is 0


def _text(value: Any, source: str, line: int, field: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InputError(source, f"must be a string, got {value!r}", f"line {line}", field)
    return value.strip()


def _split_name(value: str, source: str, line: int) -> tuple[str, str]:
    if not value:
        raise InputError(source, "required", f"line {line}", "name")
    ns, _, name = value.rpartition("/")
    if ns and not _DNS1123_LABEL.match(ns):
        raise InputError(source, f"namespace {ns!r} is not a valid DNS-1123 label", f"line {line}", "name")
    if not _DNS1123_SUBDOMAIN.match(name) or len(name) > 253:
        raise InputError(
            source,
            f"{name!r} is not a valid pod name (lowercase letters, digits, '-' and '.')",
            f"line {line}",
            "name",
        )
    return ns, name


def _inline_pod(value: Any, source: str, line: int) -> Pod:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as err:
            raise InputError(source, f"malformed JSON: column {err.colno}: {err.msg}", f"line {line}", "spec") from None
    if not isinstance(value, Mapping):
        raise InputError(source, "must be a JSON object (a PodSpec or a Pod manifest)", f"line {line}", "spec")
    whole = "spec" in value
    raw: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": dict(value.get("metadata") or {}) if whole else {},
        "spec": value["spec"] if whole else value,
    }
    raw["metadata"]["name"] = "trace-pod"
    try:
        pod: Pod = decode("Pod", raw)
    except DecodeError as err:
        # The decoder names the field as in a Pod manifest (spec.containers[0]...): the column is `spec`.
        raise InputError(source, err.message, f"line {line}", err.field or "spec") from None
    if not pod.spec.containers:
        raise InputError(source, "a pod needs at least one container", f"line {line}", "spec.containers")
    return pod


def _instantiate(template: Pod, namespace: str, name: str, priority_class: str) -> Pod:
    """The template's labels, annotations, owners and spec under a new name; no status, not bound."""
    meta = template.metadata
    new_meta = ObjectMeta(
        name=name,
        namespace=namespace,
        labels=dict(meta.labels),
        annotations=dict(meta.annotations),
        owner_references=list(meta.owner_references),
    )
    spec = template.spec
    if priority_class:
        spec = msgspec.structs.replace(spec, priority_class_name=priority_class, priority=None)
    return Pod(metadata=new_meta, spec=spec)


# ------------------------------------------------------------------ loading


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
    rows: Iterator[tuple[int, Mapping[str, Any]]] = (
        _csv_rows(text, source) if fmt == "csv" else _jsonl_rows(text, source)
    )
    known_classes = None if priority_classes is None else set(priority_classes) | set(SYSTEM_PRIORITY_CLASSES)
    seen: dict[str, int] = {}
    entries: list[TraceEntry] = []
    crons: list[tuple[float, CronRun]] = []
    for line, row in rows:
        for col in REQUIRED:
            if col not in row:
                raise InputError(source, "required", f"line {line}", col)
        t = _seconds(row.get("time"), source, line, "time", optional=False)
        assert t is not None
        ns, name = _split_name(_text(row.get("name"), source, line, "name"), source, line)
        template_ref = _text(row.get("template"), source, line, "template")
        spec_value = row.get("spec")
        has_spec = spec_value not in (None, "")
        if bool(template_ref) == has_spec:
            raise InputError(
                source,
                "give exactly one of template (a Pod manifest's name) and spec (the pod inline, as JSON)",
                f"line {line}",
                "template" if template_ref else "spec",
            )
        priority_class = _text(row.get("priorityClass"), source, line, "priorityClass")
        duration = _seconds(row.get("duration"), source, line, "duration", optional=True)
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
            base = _inline_pod(spec_value, source, line)
            if base.spec.node_name:
                raise InputError(
                    source, "a trace pod arrives unscheduled: remove nodeName", f"line {line}", "spec.nodeName"
                )
        namespace = ns or base.metadata.namespace or "default"
        pod = _instantiate(base, namespace, name, priority_class)
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
