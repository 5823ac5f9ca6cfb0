"""Test harness: run a topology plugin on an Env the way the framework does, both paths at once.

Every helper runs the per-node reference (`filter`, `score`) and the
whole-snapshot fast path (`filter_all`, `score_all`) and asserts they agree, so
each test also proves the two paths equivalent. `load_case` rebuilds a golden
conformance case (tests/conformance/cases, copied from ../shared/conformance) as Env-ready objects.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import yaml

from kubesched.api.core import Node, Pod
from kubesched.api.decode import decode
from kubesched.cluster import admission
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import NodeScoreList
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo
from kubesched.testing import Env

CONFORMANCE = Path(__file__).resolve().parents[2] / "conformance" / "cases"


def prefilter(pl: Any, env: Env, pod: PodInfo, state: CycleState | None = None) -> tuple[CycleState, Status | None]:
    state = state if state is not None else CycleState()
    _, s = pl.pre_filter(state, pod, env.snapshot.nodes)
    if s is not None and s.code == Code.SKIP:
        state.skip_filter_plugins = frozenset({pl.name})
    return state, s


def filter_statuses(pl: Any, env: Env, pod: PodInfo, state: CycleState) -> dict[str, Status | None]:
    """Per node name: the Filter status (None = passes); asserts filter_all agrees with filter."""
    snap = env.snapshot
    if pl.name in state.skip_filter_plugins:
        return dict.fromkeys(ni.name for ni in snap.nodes)
    ref = {ni.name: pl.filter(state, pod, ni) for ni in snap.nodes}
    verdicts = pl.filter_all(state, pod, snap)
    for i, ni in enumerate(snap.nodes):
        fast = None if verdicts is None or not verdicts.failed[i] else verdicts.status(i)
        assert fast == ref[ni.name], f"{ni.name}: filter_all {fast} != filter {ref[ni.name]}"
    return ref


def run_filter(pl: Any, env: Env, pod: PodInfo) -> dict[str, Status | None]:
    state, s = prefilter(pl, env, pod)
    assert s is None or s.code == Code.SKIP, s
    return filter_statuses(pl, env, pod, state)


def scores(
    pl: Any, env: Env, pod: PodInfo, nodes: list[str] | None = None, state: CycleState | None = None
) -> dict[str, int] | None:
    """Normalized scores of `nodes` (default: all), or None when PreScore skips; asserts score_all == score."""
    snap = env.snapshot
    names = nodes if nodes is not None else [ni.name for ni in snap.nodes]
    infos = [snap.get(n) for n in names]
    state = state if state is not None else CycleState()
    s = pl.pre_score(state, pod, infos)
    if s is not None:
        assert s.code == Code.SKIP, s
        return None
    idx = np.array([ni.index for ni in infos], np.int64)
    fast = np.asarray(pl.score_all(state, pod, snap, idx), np.int64)
    ref = []
    for ni in infos:
        v, st = pl.score(state, pod, ni)
        assert st is None, st
        ref.append(v)
    assert fast.tolist() == ref, f"score_all {fast.tolist()} != score {ref}"
    lst = NodeScoreList(names, fast)
    assert pl.normalize_score(state, pod, lst) is None
    return dict(zip(names, lst.scores.tolist(), strict=True))


def raw_scores(pl: Any, env: Env, pod: PodInfo, nodes: list[str] | None = None) -> dict[str, int] | None:
    """Scores before normalization (None when PreScore skips)."""
    snap = env.snapshot
    names = nodes if nodes is not None else [ni.name for ni in snap.nodes]
    infos = [snap.get(n) for n in names]
    state = CycleState()
    if pl.pre_score(state, pod, infos) is not None:
        return None
    return {ni.name: pl.score(state, pod, ni)[0] for ni in infos}


# ---------------------------------------------------------------- golden cases


@dataclass
class Case:
    name: str
    nodes: list[Node]
    bound: list[Pod]
    pending: list[Pod]
    objects: list[tuple[str, Any]]
    expected: dict[str, dict[str, Any]]
    plugin_scores: dict[str, dict[str, Any]]
    placed: dict[str, str] = field(default_factory=dict)

    def env(self, upto: int) -> Env:
        """The cluster as the `upto`-th pending pod found it: earlier pending pods on their expected nodes."""
        pods = list(self.bound)
        for p in self.pending[:upto]:
            key = f"{p.metadata.namespace}/{p.metadata.name}"
            node = self.expected[key]["node"]
            if self.expected[key]["status"] in ("Scheduled", "Deleted") and node:
                pods.append(msgspec.structs.replace(p, spec=msgspec.structs.replace(p.spec, node_name=node)))
        return Env(self.nodes, pods, self.objects)


def _with_uid(obj: Any) -> Any:
    meta = obj.metadata
    if not meta.namespace:
        meta = msgspec.structs.replace(meta, namespace="default")
    if not meta.uid:
        meta = msgspec.structs.replace(meta, uid=f"uid-{meta.namespace}-{meta.name}")
    return msgspec.structs.replace(obj, metadata=meta)


def load_case(family: str, name: str) -> Case:
    base = CONFORMANCE / family / name
    docs = [d for d in yaml.safe_load_all((base.with_suffix(".yaml")).read_text()) if d]
    nodes: list[Node] = []
    bound: list[Pod] = []
    pending: list[Pod] = []
    objects: list[tuple[str, Any]] = []
    namespaces: set[str] = set()
    declared: set[str] = set()
    for d in docs:
        kind = d.get("kind")
        if kind == "Scenario":
            continue
        if kind == "Node":
            nodes.append(admission.default_node(decode("Node", d)))
        elif kind == "Pod":
            pod = admission.default_pod(_with_uid(decode("Pod", d)))
            namespaces.add(pod.metadata.namespace)
            (bound if pod.spec.node_name else pending).append(pod)
        else:
            obj = decode(kind, d)
            if kind == "Namespace":
                declared.add(obj.metadata.name)
            objects.append((kind, obj))
    for ns in sorted(namespaces - declared):
        objects.append(("Namespace", decode("Namespace", {"metadata": {"name": ns}})))
    expected = {r["pod"]: r for r in json.loads(base.with_suffix(".expected.json").read_text())["results"]}
    plugins_file = base.parent / (name + ".plugins.json")
    plugin_scores = json.loads(plugins_file.read_text()) if plugins_file.exists() else {}
    return Case(name, nodes, bound, pending, objects, expected, plugin_scores)


def pod_key(p: Pod) -> str:
    return f"{p.metadata.namespace}/{p.metadata.name}"


# ---------------------------------------------------------------- golden case replay


def earlier_filters(env: Env) -> list[Any]:
    """The default profile's Filter plugins that run before PodTopologySpread (those these cases exercise)."""
    from kubesched.plugins.nodeaffinity import NodeAffinity
    from kubesched.plugins.noderesources.fit import Fit
    from kubesched.plugins.nodeunschedulable import NodeUnschedulable
    from kubesched.plugins.tainttoleration import TaintToleration

    return [NodeUnschedulable(), TaintToleration(), NodeAffinity(), Fit.new(None, env.handle)]


def first_failures(chain: list[Any], env: Env, pod: PodInfo) -> dict[str, Status | None]:
    """Per node: the status of the first Filter plugin of `chain` that rejects it."""
    state = CycleState()
    skip: set[str] = set()
    for pl in chain:
        if hasattr(pl, "pre_filter"):
            _, s = pl.pre_filter(state, pod, env.snapshot.nodes)
            if s is not None and s.code == Code.SKIP:
                skip.add(pl.name)
    state.skip_filter_plugins = frozenset(skip)
    out: dict[str, Status | None] = {}
    for ni in env.snapshot.nodes:
        out[ni.name] = None
        for pl in chain:
            if pl.name in skip:
                continue
            s = pl.filter(state, pod, ni)
            if s is not None:
                s.plugin = pl.name
                out[ni.name] = s
                break
    return out


def message_histogram(message: str) -> dict[str, int]:
    """'0/5 nodes are available: 2 a, 3 b. ...' -> {'a': 2, 'b': 3}."""
    head = message.split(": ", 1)[1].split(". ", 1)[0]
    out: dict[str, int] = {}
    for part in head.split(", "):
        n, _, reason = part.partition(" ")
        out[reason] = int(n)
    return out


def replay(case: Case, plugin: Any, chain_before: list[Any], weight: int = 2) -> int:
    """Check `plugin` against every pending pod of a sequential golden case; returns the number of checks.

    - a scheduled pod passes the plugin's Filter on its node;
    - an unschedulable pod's message counts exactly the nodes the plugin rejects first;
    - where the reference scored the pod, the plugin's weighted scores equal the recorded ones
      (and PreScore skips exactly when the plugin is absent from the record).
    """
    checks = 0
    for i, raw in enumerate(case.pending):
        env = case.env(i)
        pl = plugin(env)
        pod = env.pod_info(raw)
        key = pod_key(raw)
        want = case.expected[key]
        mine = run_filter(pl, env, pod)
        if want["status"] == "Scheduled":
            assert mine[want["node"]] is None, f"{key}: {pl.name} rejects chosen node {want['node']}: {mine}"
            checks += 1
        elif want["status"] == "Unschedulable":
            first = first_failures([*chain_before(env), pl], env, pod)
            got: dict[str, int] = {}
            for s in first.values():
                if s is not None and s.plugin == pl.name:
                    got[s.message()] = got.get(s.message(), 0) + 1
            hist = message_histogram(want["message"])
            ours = {r: n for r, n in hist.items() if r in _reasons(pl)}
            assert got == ours, f"{key}: {got} != {ours} ({want['message']})"
            checks += 1
        rec = case.plugin_scores.get(key)
        if rec is not None:
            names = list(rec["plugins"])
            expect = {n: p.get(pl.name) for n, p in rec["plugins"].items()}
            got_scores = scores(pl, env, pod, names)
            if all(v is None for v in expect.values()):
                assert got_scores is None, f"{key}: expected PreScore Skip, got {got_scores}"
            else:
                assert got_scores is not None, f"{key}: PreScore skipped, expected {expect}"
                assert {n: v * weight for n, v in got_scores.items()} == expect, f"{key}: {got_scores} vs {expect}"
            checks += 1
    return checks


def _reasons(pl: Any) -> set[str]:
    mod = __import__(type(pl).__module__.rsplit(".", 1)[0] + ".filtering", fromlist=["x"])
    return {v for k, v in vars(mod).items() if k.startswith("ERR_REASON_")}
