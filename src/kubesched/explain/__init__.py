"""`kubesched explain`: why one pod of a scenario landed where it did, or why it stays pending.

The scenario runs as `simulate` runs it; the analysis (kubesched.explain.analyze)
is taken just before each of the pod's scheduling cycles and the last one is
kept, then matched with what that cycle decided.
"""

from __future__ import annotations

from typing import Any

from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.errors import InputError
from kubesched.explain.analyze import Analyzer
from kubesched.explain.claims import ClaimOnNode, devices_of
from kubesched.explain.model import Capture, Explanation, NodeScore, Outcome, Winner
from kubesched.progress import SILENT, Progress
from kubesched.scenario import Manifest, Scenario
from kubesched.simulate.attempts import Attempt

__all__ = ["Explanation", "explain", "resolve_pod", "workload_pods"]


# kubectl's names for the workload kinds (kind, plural-less short names).
_WORKLOAD_ALIASES = {
    "deployment": "deployment",
    "deploy": "deployment",
    "replicaset": "replicaset",
    "rs": "replicaset",
    "replicationcontroller": "replicationcontroller",
    "rc": "replicationcontroller",
    "statefulset": "statefulset",
    "sts": "statefulset",
    "daemonset": "daemonset",
    "ds": "daemonset",
    "job": "job",
    "cronjob": "cronjob",
    "cj": "cronjob",
}


def workload_pods(scenario: Scenario, ref: str) -> list[Manifest]:
    """The pods of the workload `ref` names ("kind/name" or "namespace/kind/name"); [] if it names none."""
    parts = ref.split("/")
    if len(parts) not in (2, 3) or parts[-2].lower() not in _WORKLOAD_ALIASES:
        return []
    ns = parts[0] if len(parts) == 3 else None
    workload = f"{_WORKLOAD_ALIASES[parts[-2].lower()]}/{parts[-1]}"
    return [
        m
        for m in scenario.pending_pods()
        if m.workload == workload and (ns is None or (m.obj.metadata.namespace or "default") == ns)
    ]


def resolve_pod(scenario: Scenario, ref: str) -> Manifest:
    """The scenario's pod named `ref` ("name" or "namespace/name")."""
    pods = [m for m in scenario.manifests if m.kind == "Pod"]
    if "/" in ref:
        ns, name = ref.split("/", 1)
        found = [m for m in pods if (m.obj.metadata.namespace or "default") == ns and m.obj.metadata.name == name]
    else:
        found = [m for m in pods if m.obj.metadata.name == ref]
    if not found:
        known = ", ".join(f"{m.obj.metadata.namespace or 'default'}/{m.obj.metadata.name}" for m in pods[:10])
        more = f" (pods: {known}{', ...' if len(pods) > 10 else ''})" if pods else " (it has no pods)"
        raise InputError(scenario.source, f"no pod {ref!r} in the scenario{more}")
    if len(found) > 1:
        spaces = ", ".join(sorted({m.obj.metadata.namespace or "default" for m in found}))
        raise InputError(scenario.source, f"pod name {ref!r} is in several namespaces ({spaces}): give namespace/name")
    m = found[0]
    if m.obj.spec.node_name:
        raise InputError(
            scenario.source,
            f"already bound to node {m.obj.spec.node_name!r} in the scenario: the scheduler never sees it",
            m.ref,
            "spec.nodeName",
        )
    return m


def explain(
    scenario: Scenario,
    ref: str,
    config: KubeSchedulerConfiguration | None = None,
    seed: int = 0,
    config_source: str | None = None,
    progress: Progress = SILENT,
) -> Explanation:
    """Run the scenario and explain the last scheduling attempt of its pod `ref`.

    Only that pod's scores are kept: the other pods' would cost memory (one array per Score plugin per pod)
    and nothing reads them. `progress` sees the run and each analysis."""
    from kubesched.simulate.runner import Simulation

    pods = workload_pods(scenario, ref)
    if pods:
        # The workload's first pod that did not get scheduled (or its first): found by a run of its own.
        first = Simulation(scenario, config, seed=seed, keep_scores=False, config_source=config_source)
        first.settle(progress)
        outcomes = {o.key: o.status for o in first.outcomes()}
        del first
        keys = [f"{p.obj.metadata.namespace or 'default'}/{p.obj.metadata.name}" for p in pods]
        key = next((k for k in keys if outcomes.get(k) != "Scheduled"), keys[0])
    else:
        m = resolve_pod(scenario, ref)
        key = f"{m.obj.metadata.namespace or 'default'}/{m.obj.metadata.name}"
    sim = Simulation(scenario, config, seed=seed, keep_scores={key}, config_source=config_source)
    analyzer = Analyzer(sim.scheduler, key, sim.attempts, progress)
    sim.scheduler.before_cycle = analyzer
    sim.settle(progress)
    o = next(r for r in sim.outcomes() if r.key == key)
    outcome = Outcome(o.status, o.node, o.nominated_node, o.message)
    ex = Explanation(key, outcome, analyzer.capture, earlier=analyzer.earlier)
    if analyzer.capture is None:
        why = "it is gated (spec.schedulingGates)" if o.status == "SchedulingGated" else "no profile schedules it"
        ex.notes.append(f"the scheduler never tried this pod: {why}")
        return ex
    attempt = sim.attempts.get(key)
    ex.winner = winner(analyzer.capture, attempt)
    ex.claims = landed_claims(analyzer.capture, o.node)
    if o.status == "Scheduled" and ex.claims:
        ex.notes.extend(_claims_mismatch(ex.claims, sim.cluster.store))
    if o.status == "Deleted":
        ex.notes.append(f"the pod ran on {o.node} and was later preempted by a higher-priority pod")
    return ex


def landed_claims(cap: Capture, node: str | None) -> list[ClaimOnNode] | None:
    """The pod's claims with their devices on `node`; without devices when the pod did not land."""
    reports = [r for r in cap.nodes if r.claims is not None]
    if not reports:
        return None
    for r in reports:
        if node and r.name == node:
            return r.claims
    return [ClaimOnNode(c.claim, c.pod_claim, c.template, c.allocated_before) for c in reports[0].claims or []]


def _claims_mismatch(claims: list[ClaimOnNode], store: Any) -> list[str]:
    """What PreBind wrote differs from what the analysis found: never expected, said rather than hidden."""
    out = []
    for c in claims:
        obj = store.find("ResourceClaim", c.claim)
        alloc = obj.status.allocation if obj is not None else None
        written = [d.id for d in devices_of(alloc)] if alloc is not None else []
        found = [d.id for d in c.devices]
        if written != found:
            out.append(f"claim {c.claim}: the analysis found {found or 'none'}, PreBind wrote {written or 'none'}")
    return out


def winner(cap: Capture, attempt: Attempt | None) -> Winner | None:
    """The node the analysed attempt chose, and why it beat the others."""
    if attempt is None or not attempt.node:
        return None
    node = attempt.node
    if cap.sampling.nominated_only:
        return Winner(
            node,
            None,
            [],
            "the pod's nominated node (from its earlier preemption) passes every filter: upstream evaluates it "
            "alone and does not score",
        )
    if not cap.scores:
        return Winner(node, None, [], "the only feasible node examined: upstream does not score a single node")
    totals = {s.name: s.total for s in cap.scores}
    recorded = attempt.scores
    if recorded and recorded != totals:
        cap.notes.append(f"the cycle's totals {recorded} differ from the per-node reference totals {totals}")
    top = max(totals.values())
    tied = sorted(n for n, t in totals.items() if t == top)
    if len(tied) > 1:
        named = ", ".join(tied[:5]) + (f" and {len(tied) - 5} more" if len(tied) > 5 else "")
        reason = (
            f"{len(tied)} nodes tie at {top} ({named}): upstream picks one uniformly at random "
            "(seeded here; --seed changes the pick)"
        )
        return Winner(node, totals.get(node), tied, reason)
    ranked = sorted(cap.scores, key=lambda s: (-s.total, s.name))
    best = ranked[0]
    runner = ranked[1]
    return Winner(node, best.total, [], f"highest total {best.total}, {_lead(best, runner)}")


def _lead(best: NodeScore, runner: NodeScore) -> str:
    """How far ahead the winner is of the runner-up, and the plugins that put it there."""
    diffs = sorted(
        ((p, s.weighted - runner.plugins[p].weighted) for p, s in best.plugins.items() if p in runner.plugins),
        key=lambda x: (-abs(x[1]), x[0]),
    )
    parts = [f"{p} {d:+d}" for p, d in diffs if d][:3]
    text = f"{best.total - runner.total} ahead of {runner.name} ({runner.total})"
    return text + (f"; by plugin: {', '.join(parts)}" if parts else "")
