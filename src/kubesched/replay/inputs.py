"""Reading a replay's inputs: the cluster file, the optional templates file, the trace."""

from __future__ import annotations

from pathlib import Path

from kubesched.errors import InputError
from kubesched.replay.trace import Templates, Trace, load_trace
from kubesched.simulate.scenario import Manifest, Scenario, load_scenario


def load_templates_file(path: str | Path) -> list[Manifest]:
    """Pod manifests (multi-document YAML) for the trace to copy; nothing else is allowed there."""
    sc = load_scenario(path)
    pods = []
    for m in sc.manifests:
        if m.kind != "Pod":
            raise InputError(sc.source, "a templates file holds only Pods", m.ref, "kind")
        if m.obj.spec.node_name:
            raise InputError(sc.source, "a template must not be bound: remove nodeName", m.ref, "spec.nodeName")
        pods.append(m)
    return pods


def load_inputs(cluster: str | Path, trace: str | Path, templates: str | Path | None = None) -> tuple[Scenario, Trace]:
    """The cluster (its pending pods become templates, not pods) and the trace, checked against each other."""
    scenario = load_scenario(cluster)
    manifests = list(scenario.pending_pods())
    sources = [scenario.source]
    if templates is not None:
        manifests += load_templates_file(templates)
        sources.append(str(templates))
    classes = {m.obj.metadata.name for m in scenario.manifests if m.kind == "PriorityClass"}
    tr = load_trace(trace, Templates(manifests, sources), classes)
    if not tr.entries:
        raise InputError(tr.source, "the trace has no pods")
    return scenario, tr
