"""Trace replay: a workload trace's pods arrive, run and finish on the embedded cluster's virtual clock."""

from kubesched.replay.engine import Replay, RunConfig, replay_all
from kubesched.replay.inputs import load_inputs, load_templates_file
from kubesched.replay.metrics import PodRecord, ReplayRun, distribution, percentile
from kubesched.replay.trace import Templates, Trace, TraceEntry, load_trace, parse_trace

__all__ = [
    "PodRecord",
    "Replay",
    "ReplayRun",
    "RunConfig",
    "Templates",
    "Trace",
    "TraceEntry",
    "distribution",
    "load_inputs",
    "load_templates_file",
    "load_trace",
    "parse_trace",
    "percentile",
    "replay_all",
]
