"""`kubesched explain` given a workload: its first pod that did not get scheduled."""

from __future__ import annotations

from tests.workloads.helpers import load, node, template

from kubesched.explain import explain, workload_pods


def _deployment(replicas: int) -> dict[str, object]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": template({"app": "web"}, cpu="3"),
        },
    }


def test_a_workload_is_explained_by_its_first_pod_that_stays_pending() -> None:
    sc = load([node("n1", cpu="4"), node("n2", cpu="4"), _deployment(3)])
    pods = workload_pods(sc, "deployment/web")
    assert (
        len(pods) == 3 and workload_pods(sc, "shop/deploy/web") == pods and workload_pods(sc, "other/deploy/web") == []
    )
    ex = explain(sc, "deploy/web")
    third = f"shop/{pods[2].obj.metadata.name}"
    # Two pods of 3 cpu fit on the two 4-cpu nodes; the third does not.
    assert (ex.pod, ex.outcome.status) == (third, "Unschedulable")
    assert ex.outcome.message.startswith("0/2 nodes are available: 2 Insufficient cpu.")


def test_a_workload_whose_pods_all_run_is_explained_by_its_first() -> None:
    sc = load([node("n1", cpu="8"), _deployment(2)])
    ex = explain(sc, "shop/deployment/web")
    assert ex.pod == f"shop/{workload_pods(sc, 'deployment/web')[0].obj.metadata.name}"
    assert ex.outcome.status == "Scheduled"
