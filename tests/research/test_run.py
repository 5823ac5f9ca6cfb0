"""End to end on a slice of the openb trace: every policy places pods, GPUs are never over-committed,
the annotations match the allocation, and the command writes the curve."""

from __future__ import annotations

import csv
from collections import defaultdict

import numpy as np
import pytest

from kubesched.cli import main
from kubesched.plugin_api import CycleState, PodInfo
from kubesched.research import run as runmod
from kubesched.research.openb import default_paths, make_pod, read_nodes, read_pods
from kubesched.research.policies import POLICIES
from kubesched.research.policies.gpushare import GPU_INDEX, GPU_MILLI, can_host, node_gpus, parse_request

NODE_CSV, POD_CSV = default_paths()
pytestmark = pytest.mark.skipif(not POD_CSV.exists(), reason=f"the openb trace is not at {POD_CSV.parent}")


@pytest.fixture(scope="module")
def trace():
    return read_nodes(NODE_CSV)[::40], read_pods(POD_CSV)[:300]


@pytest.mark.parametrize("name", list(POLICIES))
def test_policy_on_a_slice(trace, name, monkeypatch):
    nodes, pods = trace
    seen = {}
    drain = runmod._drain

    def keep(sched):
        drain(sched)
        seen["cluster"] = sched.cluster
        seen["sched"] = sched

    monkeypatch.setattr(runmod, "_drain", keep)
    r = runmod.run(nodes, pods, name, seed=42, ratio=1.3)
    total = r.total_gpus * 1000
    assert r.arrived[-1] <= 1.3 * total and r.arrived[-1] > 1.2 * total
    assert all(a >= u for a, u in zip(r.arrived, r.allocated, strict=True))
    assert r.scheduled + r.failed == len(r.arrived)
    # Every GPU pod on a node holds GPUs by annotation, and no GPU gives more than its 1000 milli.
    used: dict[tuple[str, int], int] = defaultdict(int)
    allocated = 0
    for p in seen["cluster"].store.list("Pod"):
        ann = p.metadata.annotations or {}
        if GPU_MILLI in ann and p.spec.node_name:
            for i in ann[GPU_INDEX].split("-"):
                used[(p.spec.node_name, int(i))] += int(ann[GPU_MILLI])
                allocated += int(ann[GPU_MILLI])
    assert max(used.values()) <= 1000
    assert allocated == r.allocated[-1]
    # The whole-snapshot scores are the per-node definition's, on the final (fragmented) state.
    sched = seen["sched"]
    sched.cache.update_snapshot(sched.snapshot)
    fw = next(iter(sched.profiles.values()))
    plugin = fw.plugins_by_name[POLICIES[name].plugin]
    idx = np.arange(len(sched.snapshot.nodes))
    for row in pods[:40]:
        pi = PodInfo(make_pod(row))
        state = CycleState()
        if hasattr(plugin, "pre_score"):
            plugin.pre_score(state, pi, sched.snapshot.nodes)
        req = parse_request(pi)
        fits = [n for n, ni in enumerate(sched.snapshot.nodes) if _feasible(node_gpus(ni), req)]
        fast = plugin.score_all(state, pi, sched.snapshot, idx)[fits].tolist()
        assert fast == [plugin.score(state, pi, sched.snapshot.nodes[n])[0] for n in fits]
    c = r.curve()
    assert c.at(10) == pytest.approx(10, abs=1.5)  # nothing fails at 10% load
    assert 60 < c.at(130) <= 100


def _feasible(v, req):
    """Where the scheduler would score the pod (GpuShare's and the CPU filter passed)."""
    return v.cpu_left >= req.cpu and (not req.uses_gpu or (v.num > 0 and can_host(v, req)))


def test_slice_curves_are_reproducible(trace):
    nodes, pods = trace
    a = runmod.run(nodes, pods, "fgd", seed=43).curve()
    b = runmod.run(nodes, pods, "FGD", seed=43).curve()
    assert a == b


def test_command_writes_the_curve(tmp_path, trace, capsys):
    nodes, pods = trace
    node_file, pod_file = tmp_path / "nodes.csv", tmp_path / "pods.csv"
    with node_file.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["sn", "cpu_milli", "memory_mib", "gpu", "model"])
        w.writerows((n.name, n.cpu, n.memory_mib, n.gpus, n.model) for n in nodes)
    with pod_file.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec"])
        w.writerows((p.name, p.cpu, p.memory_mib, p.num_gpu, p.gpu_milli, p.gpu_spec) for p in pods)
    out = tmp_path / "curve.csv"
    argv = ["research", "run", "--node-file", str(node_file), "--pod-file", str(pod_file)]
    assert main([*argv, "--policy", "bestfit,fgd", "--seed", "42", "--jobs", "1", "--out", str(out), "-q"]) == 0
    rows = list(csv.reader(out.open()))
    assert rows[0] == ["arrived_percent", "BestFit/seed42", "FGD/seed42"]
    assert rows[1][0] == "0" and rows[-1][0] == "130"
    assert "FGD" in capsys.readouterr().out
    assert main([*argv, "--policy", "tetris", "--out", str(out)]) == 2
    assert "--policy: unknown policy 'tetris' (known: random, dotprod" in capsys.readouterr().err
    pod_file.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1000,1,1,-5\n")
    assert main([*argv, "--out", str(out)]) == 2
    assert f"{pod_file}: line 2: gpu_milli: -5 must be at least 0" in capsys.readouterr().err
