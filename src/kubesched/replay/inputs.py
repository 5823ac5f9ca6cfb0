"""Reading a replay's inputs: the cluster file, the optional templates file, the trace."""

from __future__ import annotations

from pathlib import Path

from kubesched.api.intake import FieldValidation
from kubesched.errors import InputError
from kubesched.replay.trace import Templates, Trace, load_trace
from kubesched.simulate.scenario import Manifest, Scenario, load_scenario


def load_templates_file(
    path: str | Path, validation: FieldValidation = FieldValidation.STRICT, cluster: Scenario | None = None
) -> list[Manifest]:
    """Pod manifests (multi-document YAML) for the trace to copy; nothing else is allowed there. They are
    admitted into `cluster` (its PriorityClasses), whose notes get the loader's."""
    sc = load_scenario(path, validation=validation, existing=cluster)
    if cluster is not None:
        cluster.notes += sc.notes
    pods = []
    for m in sc.manifests:
        if m.kind != "Pod":
            raise InputError(sc.source, "a templates file holds only Pods", m.ref, "kind")
        if m.obj.spec.node_name:
            raise InputError(sc.source, "a template must not be bound: remove nodeName", m.ref, "spec.nodeName")
        pods.append(m)
    return pods


def load_inputs(
    cluster: str | Path,
    trace: str | Path,
    templates: str | Path | None = None,
    validation: FieldValidation = FieldValidation.STRICT,
    seed: int = 0,
) -> tuple[Scenario, Trace]:
    """The cluster (its pending pods become templates, not pods) and the trace, checked against each other.
    The scenario's notes include the templates file's."""
    scenario = load_scenario(cluster, validation=validation, seed=seed)
    manifests = list(scenario.pending_pods())
    sources = [scenario.source]
    if templates is not None:
        manifests += load_templates_file(templates, validation, scenario)
        sources.append(str(templates))
    classes = {m.obj.metadata.name for m in scenario.manifests if m.kind == "PriorityClass"}
    tr = load_trace(trace, Templates(manifests, sources), classes)
    if not tr.entries:
        raise InputError(tr.source, "the trace has no pods")
    return scenario, tr
