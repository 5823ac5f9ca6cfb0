"""The scheduler's metrics in Prometheus' text exposition format, under upstream's names and labels."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kubesched.metrics import Counter, Histogram, Metrics

# Label names of each metric (pkg/scheduler/metrics/metrics.go).
LABELS: dict[str, tuple[str, ...]] = {
    "scheduler_schedule_attempts_total": ("result", "profile"),
    "scheduler_scheduling_attempt_duration_seconds": ("result", "profile"),
    "scheduler_preemption_attempts_total": (),
    "scheduler_preemption_victims": (),
    "scheduler_pod_scheduling_attempts": (),
}


def _escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(names: Iterable[str], values: Iterable[str], extra: str = "") -> str:
    parts = [f'{n}="{_escape(v)}"' for n, v in zip(names, values, strict=False)]
    if extra:
        parts.append(extra)
    return "{" + ",".join(parts) + "}" if parts else ""


def _num(v: float) -> str:
    if v == float("inf"):
        return "+Inf"
    return repr(float(v)) if v != int(v) else str(int(v))


def render_counter(c: Counter, names: tuple[str, ...]) -> list[str]:
    out = [f"# HELP {c.name} {c.help}", f"# TYPE {c.name} counter"]
    for labels, v in sorted(dict(c.values).items()):
        out.append(f"{c.name}{_labels(names, labels)} {_num(v)}")
    return out


def render_histogram(h: Histogram, names: tuple[str, ...]) -> list[str]:
    out = [f"# HELP {h.name} {h.help}", f"# TYPE {h.name} histogram"]
    sums = dict(h.sums)
    for labels, counts in sorted(dict(h.counts).items()):
        counts = list(counts)
        cum = 0
        for bound, n in zip(h.buckets, counts, strict=False):
            cum += n
            le = 'le="' + _num(bound) + '"'
            out.append(f"{h.name}_bucket{_labels(names, labels, le)} {cum}")
        cum += counts[-1]
        inf = 'le="+Inf"'
        out.append(f"{h.name}_bucket{_labels(names, labels, inf)} {cum}")
        out.append(f"{h.name}_sum{_labels(names, labels)} {_num(sums.get(labels, 0.0))}")
        out.append(f"{h.name}_count{_labels(names, labels)} {cum}")
    return out


def render_gauge(name: str, help_: str, label: str, values: Mapping[str, float]) -> list[str]:
    out = [f"# HELP {name} {help_}", f"# TYPE {name} gauge"]
    for k, v in sorted(values.items()):
        out.append(f"{name}{_labels((label,), (k,)) if label else ''} {_num(v)}")
    return out


def render_counter_map(
    name: str, help_: str, label_names: tuple[str, ...], values: Mapping[tuple[str, ...], float]
) -> list[str]:
    out = [f"# HELP {name} {help_}", f"# TYPE {name} counter"]
    for labels, v in sorted(values.items()):
        out.append(f"{name}{_labels(label_names, labels)} {_num(v)}")
    return out


def render_metrics(m: Metrics) -> list[str]:
    lines: list[str] = []
    for metric in m.all():
        names = LABELS.get(metric.name, ())
        if isinstance(metric, Counter):
            lines += render_counter(metric, names)
        else:
            lines += render_histogram(metric, names)
    return lines
