"""Valid inputs in the shapes users actually have: Lists, JSON, standard input, generated names, kinds the
scheduler does not read, kubectl's --validate levels. Each runs and prints what it should."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.cli import main

NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n1", "creationTimestamp": None},
    "spec": None,
    "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
}


def pod(name: str, cpu: str = "1", **spec: Any) -> dict[str, Any]:
    meta = {"generateName": name} if name.endswith("-") else {"name": name}
    container = {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": [container], **spec}}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any] | str, list[str]]:
    code = main([*argv])
    out, err = capsys.readouterr()
    try:
        parsed: dict[str, Any] | str = json.loads(out)
    except json.JSONDecodeError:
        parsed = out
    return code, parsed, err.splitlines()


def placements(result: Any) -> dict[str, str | None]:
    return {r["pod"]: r["node"] for r in result["results"]}


def write(tmp_path: Path, docs: list[Any], name: str = "s.yaml") -> Path:
    f = tmp_path / name
    f.write_text(json.dumps(docs[0], indent=2) if name.endswith(".json") else yaml.safe_dump_all(docs))
    return f


def test_kubectl_get_list_yaml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`kubectl get nodes,pods -A -o yaml` writes one `kind: List`."""
    f = write(tmp_path, [{"apiVersion": "v1", "kind": "List", "metadata": {}, "items": [NODE, pod("a"), pod("b")]}])
    code, result, err = run(capsys, "simulate", str(f), "-o", "json")
    assert (code, err) == (0, [])
    assert placements(result) == {"default/a": "n1", "default/b": "n1"}


def test_typed_lists_whose_items_leave_out_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """API list responses (NodeList, PodList) give items without kind and apiVersion."""
    node = {k: v for k, v in NODE.items() if k not in ("kind", "apiVersion")}
    pods = [{k: v for k, v in pod(n).items() if k not in ("kind", "apiVersion")} for n in ("a", "b")]
    f = write(
        tmp_path,
        [
            {"apiVersion": "v1", "kind": "NodeList", "items": [node]},
            {"apiVersion": "v1", "kind": "PodList", "items": pods},
        ],
    )
    code, result, _ = run(capsys, "simulate", str(f), "-o", "json")
    assert code == 0 and placements(result) == {"default/a": "n1", "default/b": "n1"}


def test_json_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = write(tmp_path, [{"apiVersion": "v1", "kind": "List", "items": [NODE, pod("a", cpu="5")]}], "c.json")
    code, result, _ = run(capsys, "simulate", str(f), "-o", "json")
    assert code == 0
    assert result["results"][0]["message"].startswith("0/1 nodes are available: 1 Insufficient cpu.")


def test_concatenated_json_objects(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "c.json"
    f.write_text(json.dumps(NODE) + "\n" + json.dumps(pod("a")) + "\n")
    code, result, _ = run(capsys, "simulate", str(f), "-o", "json")
    assert code == 0 and placements(result) == {"default/a": "n1"}


def test_standard_input(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`helm template ... | kubesched simulate -`; errors call it STDIN, as kubectl does."""
    text = yaml.safe_dump_all([NODE, pod("a"), {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}])
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    code, result, err = run(capsys, "simulate", "-", "-o", "json")
    assert code == 0 and placements(result) == {"default/a": "n1"}
    assert err == ["note: STDIN: skipped 1 ConfigMap (v1): not read by the scheduler"]
    bad = yaml.safe_dump_all([NODE, pod("a", nodeSelectr={"a": "b"})])
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(bad.encode())))
    assert run(capsys, "simulate", "-")[2] == [
        'error: STDIN: Pod default/a: strict decoding error: unknown field "spec.nodeSelectr"'
    ]


def test_generate_name_is_deterministic_for_a_seed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """scheduler_perf's templates use generateName: the API server's five random characters, from --seed."""
    f = write(tmp_path, [NODE, pod("web-"), pod("web-"), pod("web-")])

    def names(seed: int) -> list[str]:
        code, result, _ = run(capsys, "simulate", str(f), "-o", "json", "--seed", str(seed))
        assert code == 0
        return [r["pod"] for r in result["results"]]

    first = names(1)
    assert len(set(first)) == 3
    for name in first:
        assert name.startswith("default/web-") and len(name) == len("default/web-") + 5
        assert set(name[len("default/web-") :]) <= set("bcdfghjklmnpqrstvwxz2456789")
    assert names(1) == first
    assert names(2) != first


def test_kinds_the_scheduler_does_not_read_are_skipped_once_per_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    meta = {"name": "x", "namespace": "web"}
    docs = [
        NODE,
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"a": "b"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "y"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": meta},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta},
        {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": meta},
        {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "a.b"}},
        {"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "metadata": meta},
        {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": meta},
        pod("a"),
    ]
    code, result, err = run(capsys, "simulate", str(write(tmp_path, docs)), "-o", "json")
    assert code == 0 and placements(result) == {"default/a": "n1"}
    f = tmp_path / "s.yaml"
    assert err == [
        f"note: {f}: skipped 1 ServiceAccount (v1): not read by the scheduler",
        f"note: {f}: skipped 2 ConfigMap (v1): not read by the scheduler",
        f"note: {f}: skipped 1 Secret (v1): not read by the scheduler",
        f"note: {f}: skipped 1 Role (rbac.authorization.k8s.io/v1): not read by the scheduler",
        f"note: {f}: skipped 1 Ingress (networking.k8s.io/v1): not read by the scheduler",
        f"note: {f}: skipped 1 CustomResourceDefinition (apiextensions.k8s.io/v1): not read by the scheduler",
        f"note: {f}: skipped 1 Certificate (cert-manager.io/v1): a custom resource the scheduler does not read",
        f"note: {f}: skipped 1 HorizontalPodAutoscaler (autoscaling/v2): not read by the scheduler",
    ]


def test_a_replica_set_creates_the_pods_it_lacks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rs = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
        },
    }
    # Pod "a" has no labels: not the ReplicaSet's, which creates its three, named after it.
    code, result, err = run(capsys, "simulate", str(write(tmp_path, [NODE, rs, pod("a")])), "-o", "json")
    assert code == 0 and err == []
    made = [r for r in result["results"] if r.get("workload") == "replicaset/web"]
    assert len(made) == 3 and all(r["pod"].startswith("default/web-") and r["node"] == "n1" for r in made)


def test_pod_bound_to_a_missing_node_is_a_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The API server accepts it; kube-scheduler never sees the node, so the pod uses no node's resources."""
    docs = [NODE, pod("running", cpu="3", nodeName="ghost"), pod("a", cpu="3")]
    code, result, err = run(capsys, "simulate", str(write(tmp_path, docs)), "-o", "json")
    assert code == 0 and placements(result) == {"default/a": "n1"}
    assert err == [
        f'warning: {tmp_path / "s.yaml"}: Pod default/running: spec.nodeName: node "ghost" does not exist: '
        "the scheduler never sees the node, so this pod counts nowhere"
    ]


@pytest.mark.parametrize(
    ("level", "code", "stderr"),
    [
        ("strict", 2, ['error: {f}: Pod default/a: strict decoding error: unknown field "spec.nodeSelectr"']),
        ("true", 2, ['error: {f}: Pod default/a: strict decoding error: unknown field "spec.nodeSelectr"']),
        ("warn", 0, ['warning: {f}: Pod default/a: unknown field "spec.nodeSelectr"']),
        ("ignore", 0, []),
        ("false", 0, []),
    ],
)
def test_validate_levels_for_unknown_fields(
    level: str, code: int, stderr: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = write(tmp_path, [NODE, pod("a", nodeSelectr={"disk": "ssd"})])
    got, result, err = run(capsys, "simulate", str(f), "-o", "json", "--validate", level)
    assert (got, err) == (code, [line.format(f=f) for line in stderr])
    if code == 0:  # dropped, as the API server drops it: the typo'd selector selects nothing
        assert placements(result) == {"default/a": "n1"}


@pytest.mark.parametrize("level", ["warn", "ignore"])
def test_validate_levels_for_duplicate_keys(level: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "s.yaml"
    f.write_text(
        yaml.safe_dump(NODE)
        + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  containers:\n  - name: c\n    image: x\n"
        "    resources: {requests: {cpu: 1, cpu: 8}}\n"
    )
    code, result, err = run(capsys, "simulate", str(f), "-o", "json", "--validate", level)
    assert code == 0
    # The last value wins, as in a lenient decoder: 8 cpus do not fit a 4-cpu node.
    assert result["results"][0]["message"].startswith("0/1 nodes are available: 1 Insufficient cpu.")
    line = f.read_text().splitlines().index("    resources: {requests: {cpu: 1, cpu: 8}}") + 1
    where = f"warning: {f}: Pod default/a: spec.containers[0].resources.requests.cpu"
    warning = f'{where}: line {line}: key "cpu" already set in map'
    assert err == ([warning] if level == "warn" else [])


def test_bad_validate_value_is_refused_in_kubectls_words(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["simulate", "x.yaml", "--validate", "maybe"])
    assert exit_.value.code == 2
    assert 'invalid - validate option "maybe"; must be one of: strict (or true), warn, ignore (or false)' in (
        capsys.readouterr().err
    )


def test_extended_resources_without_limits_are_a_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The API server refuses a GPU request without a limit, but kube-scheduler's own golden cases hold such
    pods (created through a client that does not validate): they are scheduled, with the server's words."""
    gpu_node = {**NODE, "status": {"capacity": {**NODE["status"]["capacity"], "nvidia.com/gpu": "2"}}}
    p = pod("train")
    p["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "1"
    code, result, err = run(capsys, "simulate", str(write(tmp_path, [gpu_node, p])), "-o", "json")
    assert code == 0 and placements(result) == {"default/train": "n1"}
    assert err == [
        f"warning: {tmp_path / 's.yaml'}: Pod default/train: spec.containers[0].resources.limits: Required value: "
        "Limit must be set for non overcommitable resources (kube-apiserver refuses this; read as kube-scheduler "
        "reads it)"
    ]
