"""`kubesched explain` on examples/cluster.yaml: a pending pod, a scored pod, a preemptor; CLI output and errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubesched.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cluster.yaml"


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _explain(capsys: pytest.CaptureFixture[str], pod: str) -> dict[str, Any]:
    code, out, err = _run(capsys, "explain", str(EXAMPLE), pod, "-o", "json")
    assert code == 0, err
    return json.loads(out)


def _simulated(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code, out, err = _run(capsys, "simulate", str(EXAMPLE), "-o", "json")
    assert code == 0, err
    return {r["pod"]: r for r in json.loads(out)["results"]}


def _node(ex: dict[str, Any], name: str) -> dict[str, Any]:
    return next(n for n in ex["nodes"] if n["name"] == name)


def _histogram(ex: dict[str, Any]) -> str:
    """The FailedScheduling reasons rebuilt from the statuses explain says upstream reports per node."""
    counts: dict[str, int] = {}
    for n in ex["nodes"]:
        for reason in n["status"]["reason"].split(", "):
            counts[reason] = counts.get(reason, 0) + 1
    return ", ".join(sorted(f"{v} {k}" for k, v in counts.items()))


def test_pending_pod_every_filter_the_missing_amounts_and_why_preemption_cannot_help(
    capsys: pytest.CaptureFixture[str],
) -> None:
    ex = _explain(capsys, "huge")
    sim = _simulated(capsys)["default/huge"]
    assert ex["outcome"] == {
        "status": "Unschedulable",
        "node": None,
        "nominatedNode": None,
        "message": sim["message"],
    }
    # The statuses marked as upstream's give back the real message's reasons.
    assert sim["message"].startswith(f"0/5 nodes are available: {_histogram(ex)}.")
    assert [n["name"] for n in ex["nodes"]] == ["zone-a-1", "zone-b-1", "zone-c-1", "zone-a-2", "zone-b-gpu"]
    assert all(n["examined"] and not n["feasible"] for n in ex["nodes"])

    gpu = _node(ex, "zone-b-gpu")
    failed = [(f["plugin"], f["code"], f["first"]) for f in gpu["filters"] if f["code"] not in ("Success", "Skip")]
    # Both failures are listed, not only the first one upstream stops at.
    assert failed == [
        ("TaintToleration", "UnschedulableAndUnresolvable", True),
        ("NodeResourcesFit", "UnschedulableAndUnresolvable", False),
    ]
    assert gpu["status"] == {
        "code": "UnschedulableAndUnresolvable",
        "plugin": "TaintToleration",
        "reason": "node(s) had untolerated taint {nvidia.com/gpu: present}",
    }
    taint, cpu = gpu["fixes"]
    assert taint["kind"] == "taint" and taint["taint"] == {
        "key": "nvidia.com/gpu",
        "value": "present",
        "effect": "NoSchedule",
    }
    assert (
        "add the toleration {key: nvidia.com/gpu, operator: Equal, value: present, effect: NoSchedule}" in taint["text"]
    )
    # 16 cpu allocatable, 4 used by the GPU job: 12 free, 20 short of 32.
    assert {k: cpu[k] for k in ("resource", "requested", "used", "allocatable", "missing", "exceedsNode")} == {
        "resource": "cpu",
        "requested": "32",
        "used": "4",
        "allocatable": "16",
        "missing": "20",
        "exceedsNode": True,
    }
    a1 = _node(ex, "zone-a-1")["fixes"]
    # web-2 (500m) and a shop replica (250m) came before it: 3750m used.
    assert [(f["resource"], f["missing"], f["used"]) for f in a1] == [("cpu", "27750m", "3750m")]
    assert a1[0]["text"] == (
        "cpu: 27750m short (requests 32, 4250m free of 8 allocatable; exceeds the whole node by 24)"
    )
    c1 = _node(ex, "zone-c-1")
    assert [f["kind"] for f in c1["fixes"]] == ["unschedulable", "resource"]

    assert ex["preemption"] == {
        "eligible": True,
        "message": "0/5 nodes are available: 5 Preemption is not helpful for scheduling.",
        "node": None,
        "victims": [],
        "pdbViolations": 0,
        "candidates": [],
    }
    assert sim["message"].endswith("preemption: " + ex["preemption"]["message"])
    assert _node(ex, "zone-a-2")["preemption"] == {
        "possible": False,
        "victims": [],
        "pdbViolations": 0,
        "reason": "preemption cannot help: Insufficient cpu",
    }
    assert ex["scoring"]["nodes"] == [] and ex["winner"] is None


def test_scored_pod_raw_normalized_weighted_and_the_winner(capsys: pytest.CaptureFixture[str]) -> None:
    ex = _explain(capsys, "web-1")
    sim = _simulated(capsys)["default/web-1"]
    scores = {s["name"]: s for s in ex["scoring"]["nodes"]}
    # The totals are the ones the scheduling cycle itself computed.
    assert (
        {n: s["total"] for n, s in scores.items()}
        == sim["scores"]
        == {"zone-a-1": 455, "zone-b-1": 430, "zone-a-2": 486}
    )
    assert ex["scoring"]["plugins"] == [
        {"name": "TaintToleration", "weight": 3},
        {"name": "NodeResourcesFit", "weight": 1},
        {"name": "NodeResourcesBalancedAllocation", "weight": 1},
        {"name": "ImageLocality", "weight": 1},
    ]
    assert ex["scoring"]["skippedPlugins"] == ["NodeAffinity", "VolumeBinding", "PodTopologySpread", "InterPodAffinity"]
    a2 = scores["zone-a-2"]["plugins"]
    assert a2["TaintToleration"] == {"raw": 0, "normalized": 100, "weighted": 300}
    assert a2["NodeResourcesFit"] == {"raw": 91, "normalized": 91, "weighted": 91}
    for s in scores.values():
        assert s["total"] == sum(p["weighted"] for p in s["plugins"].values())
    assert ex["winner"] == {
        "node": "zone-a-2",
        "total": 486,
        "tied": [],
        "reason": "highest total 486, 31 ahead of zone-a-1 (455); by plugin: NodeResourcesFit +27, "
        "NodeResourcesBalancedAllocation +4",
    }
    assert ex["outcome"]["node"] == "zone-a-2"
    assert ex["sampling"]["examined"] == ["zone-a-1", "zone-b-1", "zone-c-1", "zone-a-2", "zone-b-gpu"]
    assert ex["sampling"]["numFeasibleToFind"] == 5
    assert ex["preemption"] is None


def test_preemptor_last_attempt_and_the_one_before(capsys: pytest.CaptureFixture[str]) -> None:
    ex = _explain(capsys, "api")
    assert ex["attempt"] == 2
    assert ex["outcome"]["node"] == "zone-b-1" and ex["outcome"]["nominatedNode"] == "zone-b-1"
    assert ex["sampling"]["nominatedNodeOnly"] is True
    assert ex["sampling"]["examined"] == ["zone-b-1"]
    assert ex["winner"]["node"] == "zone-b-1"
    assert ex["winner"]["reason"].startswith("the pod's nominated node")
    (first,) = ex["earlierAttempts"]
    assert first["attempt"] == 1 and first["node"] is None
    assert first["preemption"]["node"] == "zone-b-1"
    assert first["preemption"]["victims"] == [{"pod": "default/batch-2", "priority": 100}]
    assert _simulated(capsys)["default/api"]["nominatedNode"] == "zone-b-1"


def test_table_output(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "220")  # rich's width: wide enough that no reason wraps
    code, out, err = _run(capsys, "explain", str(EXAMPLE), "default/huge")
    assert code == 0, err
    assert "Pod default/huge: Unschedulable" in out
    assert "▶ TaintToleration: node(s) had untolerated taint {nvidia.com/gpu: present}" in out
    assert "What would make it fit, node by node" in out
    assert "Preemption: cannot help: 0/5 nodes are available: 5 Preemption is not helpful for scheduling." in out
    code, out, err = _run(capsys, "explain", str(EXAMPLE), "web-2")
    assert code == 0, err
    assert "Winner: zone-a-1 — highest total 455, 25 ahead of zone-b-1 (430)" in out
    assert "0→100→300" in out  # TaintToleration: raw, normalized, weighted (x3)
    assert "What would make it fit" not in out


@pytest.mark.parametrize(
    ("pod", "message"),
    [
        ("nope", "no pod 'nope' in the scenario (pods: default/batch-1, default/batch-2, default/web-1"),
        ("kube-system/web-1", "no pod 'kube-system/web-1' in the scenario"),
        (
            "batch-1",
            "Pod default/batch-1: spec.nodeName: already bound to node 'zone-a-1' in the scenario: "
            "the scheduler never sees it",
        ),
    ],
)
def test_bad_pod_reference(capsys: pytest.CaptureFixture[str], pod: str, message: str) -> None:
    code, out, err = _run(capsys, "explain", str(EXAMPLE), pod)
    assert code == 2 and out == ""
    assert err.startswith(f"error: {EXAMPLE}: ") and message in err
    assert "Traceback" not in err


def test_config_file_changes_the_profile(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cfg = tmp_path / "sched.yaml"
    cfg.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
        "- schedulerName: default-scheduler\n  plugins:\n    score:\n      disabled: [{name: ImageLocality}]\n"
        "  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy: {type: MostAllocated}\n"
    )
    code, out, err = _run(capsys, "explain", str(EXAMPLE), "web-1", "--config", str(cfg), "-o", "json")
    assert code == 0, err
    ex = json.loads(out)
    assert [p["name"] for p in ex["scoring"]["plugins"]] == [
        "TaintToleration",
        "NodeResourcesFit",
        "NodeResourcesBalancedAllocation",
    ]
    code, sim_out, err = _run(capsys, "simulate", str(EXAMPLE), "--config", str(cfg), "-o", "json")
    sim = next(r for r in json.loads(sim_out)["results"] if r["pod"] == "default/web-1")
    assert {s["name"]: s["total"] for s in ex["scoring"]["nodes"]} == sim["scores"]
    # Packing: the fullest node scores best on NodeResourcesFit now.
    assert ex["winner"]["node"] == sim["node"] == "zone-b-1"

    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles: 3\n")
    code, out, err = _run(capsys, "explain", str(EXAMPLE), "web-1", "--config", str(bad))
    assert code == 2 and out == "" and err.startswith(f"error: {bad}") and "Traceback" not in err
