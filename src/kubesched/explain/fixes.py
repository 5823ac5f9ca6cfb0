"""The smallest change that would let a pod pass one Filter plugin on one node.

kube-scheduler only says "Insufficient cpu" or "node(s) didn't match pod
topology spread constraints"; the numbers behind those words are in the
plugins' PreFilter state and the NodeInfo. Each function here reads them the
way the plugin's `filter` does and says what is missing: how much of which
resource, which taint to tolerate, which label or affinity term is unmatched,
how far the spread skew is over its limit. Plugins without an analysis here
(volumes, DRA, out-of-tree plugins) are reported with their own reason.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.core import Taint
from kubesched.api.labels import NODE_NAME_FIELD, Requirement, Selector, compile_term, field_matches
from kubesched.api.quantity import format_quantity
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import FilterPlugin
from kubesched.framework.snapshot import Snapshot
from kubesched.framework.status import Status
from kubesched.framework.types import NodeInfo, PodInfo
from kubesched.plugins import names


@dataclass
class Fix:
    """One change: `kind` says what sort (see docs/explain.md), `text` says it to a person."""

    plugin: str
    kind: str
    text: str
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"plugin": self.plugin, "kind": self.kind, "text": self.text, **self.details}


Analyzer = Callable[[FilterPlugin, CycleState, PodInfo, NodeInfo, Status, Snapshot], list[Fix]]


def describe_requirement(r: Requirement) -> str:
    """A requirement as kubectl prints selectors: `k=v`, `k in (a,b)`, `!k`, `k>3`."""
    values = sorted(r.values)
    if r.op == "In":
        return f"{r.key}={values[0]}" if len(values) == 1 else f"{r.key} in ({','.join(values)})"
    if r.op == "NotIn":
        return f"{r.key}!={values[0]}" if len(values) == 1 else f"{r.key} notin ({','.join(values)})"
    if r.op == "Exists":
        return r.key
    if r.op == "DoesNotExist":
        return f"!{r.key}"
    return f"{r.key}{'>' if r.op == 'Gt' else '<'}{r.number}"


def describe_selector(sel: Selector) -> str:
    if sel.is_nothing():
        return "<nothing>"
    if sel.is_empty():
        return "<everything>"
    return ",".join(describe_requirement(r) for r in sel.requirements)


def _label(labels: Mapping[str, str], key: str) -> str:
    v = labels.get(key)
    return f"{key}={v}" if v is not None else f"no {key} label"


# ---------------------------------------------------------------- NodeResourcesFit


def _fit(pl: FilterPlugin, state: CycleState, pod: PodInfo, ni: NodeInfo, st: Status, snap: Snapshot) -> list[Fix]:
    from kubesched.plugins.noderesources.fit import fits_request

    ignored: frozenset[str] = getattr(pl, "ignored", frozenset())
    groups: frozenset[str] = getattr(pl, "ignored_groups", frozenset())
    out = []
    for r in fits_request(pod.requests, ni, ignored, groups):
        if r.reason == "Too many pods":
            out.append(
                Fix(
                    pl.name,
                    "pods",
                    f"the node already runs {r.used} pods, its limit is {r.capacity}: one pod must leave",
                    {"resource": "pods", "used": r.used, "allocatable": r.capacity, "missing": 1},
                )
            )
            continue
        free = r.capacity - r.used
        missing = r.requested - free
        f = lambda v, res=r.resource: format_quantity(v, res)  # noqa: E731 - one formatter per resource
        text = f"{r.resource}: {f(missing)} short (requests {f(r.requested)}, "
        text += f"{f(max(free, 0))} free of {f(r.capacity)} allocatable"
        if r.unresolvable:
            text += f"; exceeds the whole node by {f(r.requested - r.capacity)}"
        text += ")"
        out.append(
            Fix(
                pl.name,
                "resource",
                text,
                {
                    "resource": r.resource,
                    "requested": f(r.requested),
                    "used": f(r.used),
                    "allocatable": f(r.capacity),
                    "missing": f(missing),
                    "exceedsNode": r.unresolvable,
                },
            )
        )
    return out


# ---------------------------------------------------------------- node-only filters


def _taint_text(t: Taint) -> str:
    return f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}"


def _taints(pl: FilterPlugin, state: CycleState, pod: PodInfo, ni: NodeInfo, st: Status, snap: Snapshot) -> list[Fix]:
    from kubesched.plugins.tainttoleration import tolerations_tolerate_taint

    node = ni.node
    if node is None:
        return []
    out = []
    for t in node.spec.taints:
        if t.effect not in ("NoSchedule", "NoExecute") or tolerations_tolerate_taint(pod.pod.spec.tolerations, t):
            continue
        op = "Equal" if t.value else "Exists"
        value = f", value: {t.value}" if t.value else ""
        out.append(
            Fix(
                pl.name,
                "taint",
                f"untolerated taint {_taint_text(t)}: add the toleration "
                f"{{key: {t.key}, operator: {op}{value}, effect: {t.effect}}}",
                {"taint": {"key": t.key, "value": t.value, "effect": t.effect}},
            )
        )
    return out


def _unschedulable(
    pl: FilterPlugin, state: CycleState, pod: PodInfo, ni: NodeInfo, st: Status, snap: Snapshot
) -> list[Fix]:
    return [
        Fix(
            pl.name,
            "unschedulable",
            "the node is cordoned (spec.unschedulable: true): uncordon it",
            {},
        )
    ]


def _node_name(
    pl: FilterPlugin, state: CycleState, pod: PodInfo, ni: NodeInfo, st: Status, snap: Snapshot
) -> list[Fix]:
    want = pod.pod.spec.node_name
    return [Fix(pl.name, "nodeName", f"the pod asks for node {want!r} (spec.nodeName)", {"nodeName": want})]


def _ports(pl: FilterPlugin, state: CycleState, pod: PodInfo, ni: NodeInfo, st: Status, snap: Snapshot) -> list[Fix]:
    out = []
    for ip, proto, port in pod.host_ports:
        if ni.used_ports.check_conflict(ip, proto, port):
            where = f" on {ip}" if ip and ip != "0.0.0.0" else ""
            out.append(
                Fix(
                    pl.name,
                    "hostPort",
                    f"hostPort {port}/{proto or 'TCP'}{where} is taken by a pod on the node",
                    {"hostPort": port, "protocol": proto or "TCP", "hostIP": ip},
                )
            )
    return out


def _node_affinity(
    pl: FilterPlugin, state: CycleState, pod: PodInfo, ni: NodeInfo, st: Status, snap: Snapshot
) -> list[Fix]:
    node = ni.node
    if node is None:
        return []
    labels, name = node.metadata.labels, node.metadata.name
    out = []
    added = getattr(pl, "added_node_selector", None)
    if added is not None and not added.matches(labels, name):
        out.append(
            Fix(pl.name, "addedAffinity", "the profile's addedAffinity (scheduler-enforced) does not match the node")
        )
    for k, v in sorted(pod.pod.spec.node_selector.items()):
        if labels.get(k) != v:
            out.append(
                Fix(
                    pl.name,
                    "nodeSelector",
                    f"nodeSelector {k}={v}: the node has {_label(labels, k)}",
                    {"key": k, "want": v, "node": labels.get(k)},
                )
            )
    aff = pod.pod.spec.affinity
    required = (
        aff.node_affinity.required_during_scheduling_ignored_during_execution if aff and aff.node_affinity else None
    )
    if required is None:
        return out
    best: tuple[int, int, list[str]] | None = None
    for i, term in enumerate(required.node_selector_terms):
        compiled = compile_term(term)
        if compiled is None:
            continue
        if compiled.matches(labels, name):
            return out
        unmet = [
            f"{describe_requirement(r)} (node: {labels.get(r.key, '<unset>')})"
            for r in compiled.labels
            if not r.matches(labels)
        ]
        unmet += [
            f"{r.key} {r.op} {sorted(r.values)} (node: {name})"
            for r in compiled.fields
            if not field_matches(r, name if r.key == NODE_NAME_FIELD else "")
        ]
        if best is None or len(unmet) < best[0]:
            best = (len(unmet), i, unmet)
    if best is None:
        out.append(Fix(pl.name, "nodeAffinity", "required node affinity has no valid term: no node can match", {}))
    else:
        _, i, unmet = best
        out.append(
            Fix(
                pl.name,
                "nodeAffinity",
                f"required node affinity: closest is term {i}, unmatched: {'; '.join(unmet)}",
                {"term": i, "unmatched": unmet},
            )
        )
    return out


# ---------------------------------------------------------------- InterPodAffinity


def _inter_pod_affinity(
    pl: FilterPlugin, state: CycleState, pod: PodInfo, ni: NodeInfo, st: Status, snap: Snapshot
) -> list[Fix]:
    from kubesched.plugins.interpodaffinity.plugin import PRE_FILTER_STATE_KEY
    from kubesched.plugins.interpodaffinity.terms import pod_affinity_terms

    s = state.get(PRE_FILTER_STATE_KEY)
    node = ni.node
    if s is None or node is None:
        return []
    labels = node.metadata.labels
    out = []
    affinity_counts = s.affinity_counts
    for i, t in enumerate(s.required_affinity):
        tv = labels.get(t.topology_key)
        sel = describe_selector(t.selector)
        if tv is None:
            out.append(
                Fix(
                    pl.name,
                    "podAffinity",
                    f"pod affinity term {i}: the node has no {t.topology_key} label (the term's topologyKey)",
                    {"term": i, "topologyKey": t.topology_key, "selector": sel, "matching": 0},
                )
            )
        elif affinity_counts.get((t.topology_key, tv), 0) <= 0:
            out.append(
                Fix(
                    pl.name,
                    "podAffinity",
                    f"pod affinity term {i}: no pod matching {sel} runs in {t.topology_key}={tv}: "
                    "one must run there first",
                    {"term": i, "topologyKey": t.topology_key, "domain": tv, "selector": sel, "matching": 0},
                )
            )
    anti_counts = s.anti_affinity_counts
    for i, t in enumerate(s.required_anti_affinity):
        tv = labels.get(t.topology_key)
        n = anti_counts.get((t.topology_key, tv), 0) if tv is not None else 0
        if n > 0:
            sel = describe_selector(t.selector)
            out.append(
                Fix(
                    pl.name,
                    "podAntiAffinity",
                    f"pod anti-affinity term {i}: {n} pod(s) matching {sel} run in {t.topology_key}={tv}: "
                    "they must leave it",
                    {"term": i, "topologyKey": t.topology_key, "domain": tv, "selector": sel, "matching": n},
                )
            )
    existing = s.existing_anti_affinity_counts
    if any(existing.get((k, v), 0) > 0 for k, v in labels.items()):
        # Name the running pods whose anti-affinity repels this pod from the node's domains.
        repellers: list[str] = []
        for other_ni in snap.nodes:
            other_node = other_ni.node
            if other_node is None:
                continue
            for other in other_ni.pods_with_required_anti_affinity:
                for t in pod_affinity_terms(other).required_anti_affinity:
                    tv = other_node.metadata.labels.get(t.topology_key)
                    if tv is not None and labels.get(t.topology_key) == tv and t.matches(pod.pod, s.namespace_labels):
                        repellers.append(f"{other.key} ({t.topology_key}={tv})")
                        break
        text = "running pods' anti-affinity repels this pod from the node's domain"
        if repellers:
            text += ": " + ", ".join(repellers) + " must leave it"
        out.append(Fix(pl.name, "existingAntiAffinity", text, {"pods": repellers}))
    return out


# ---------------------------------------------------------------- PodTopologySpread


def _spread(pl: FilterPlugin, state: CycleState, pod: PodInfo, ni: NodeInfo, st: Status, snap: Snapshot) -> list[Fix]:
    from kubesched.plugins.podtopologyspread.plugin import PRE_FILTER_STATE_KEY

    s = state.get(PRE_FILTER_STATE_KEY)
    node = ni.node
    if s is None or node is None:
        return []
    labels = node.metadata.labels
    out = []
    for i, c in enumerate(s.constraints):
        tv = labels.get(c.topology_key)
        if tv is None:
            out.append(
                Fix(
                    pl.name,
                    "topologySpread",
                    f"spread constraint {i}: the node has no {c.topology_key} label",
                    {"constraint": i, "topologyKey": c.topology_key},
                )
            )
            continue
        self_match = 1 if c.selector.matches(pod.labels) else 0
        count = s.tp_value_to_match_num[i].get(tv, 0)
        minimum = s.min_match_num(i)
        skew = count + self_match - minimum
        if skew <= c.max_skew:
            continue
        smallest = s.critical_paths[i].value0
        if len(s.tp_value_to_match_num[i]) < c.min_domains:
            where = f"fewer than minDomains={c.min_domains} domains, so the global minimum is 0"
        else:
            where = f"the emptiest domain {c.topology_key}={smallest} has {minimum}"
        out.append(
            Fix(
                pl.name,
                "topologySpread",
                f"spread constraint {i} ({c.topology_key}, {describe_selector(c.selector)}): "
                f"{c.topology_key}={tv} has {count} matching pod(s), {where}; placing here makes skew {skew} > "
                f"maxSkew {c.max_skew}: {skew - c.max_skew} fewer matching pod(s) in {tv} "
                "or more in the emptiest domains",
                {
                    "constraint": i,
                    "topologyKey": c.topology_key,
                    "domain": tv,
                    "matching": count,
                    "globalMinimum": minimum,
                    "skew": skew,
                    "maxSkew": c.max_skew,
                    "excess": skew - c.max_skew,
                },
            )
        )
    return out


ANALYZERS: dict[str, Analyzer] = {
    names.NODE_RESOURCES_FIT: _fit,
    names.TAINT_TOLERATION: _taints,
    names.NODE_UNSCHEDULABLE: _unschedulable,
    names.NODE_NAME: _node_name,
    names.NODE_PORTS: _ports,
    names.NODE_AFFINITY: _node_affinity,
    names.INTER_POD_AFFINITY: _inter_pod_affinity,
    names.POD_TOPOLOGY_SPREAD: _spread,
}


def fixes_for(pl: FilterPlugin, state: CycleState, pod: PodInfo, ni: NodeInfo, st: Status, snap: Snapshot) -> list[Fix]:
    """What would make `pl` pass on `ni`; the plugin's own reason when there is no closer analysis."""
    analyzer = ANALYZERS.get(pl.name)
    out: list[Fix] = []
    if analyzer is not None:
        try:
            out = analyzer(pl, state, pod, ni, st, snap)
        except Exception:  # noqa: BLE001 - an analysis that cannot read the state falls back to the reason
            out = []
    if not out:
        out = [Fix(pl.name, "other", st.message() or "rejected", {})]
    return out
