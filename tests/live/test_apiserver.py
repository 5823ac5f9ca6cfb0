"""`kubesched run` against a real kube-apiserver v1.34.1, beside kube-scheduler v1.34.1 itself.

What only a real API server can show: kube-scheduler's own words on the same
pod in the same cluster; the real answers to a binding that lost a race (409,
404); a restart of the API server; RBAC (the roles in deploy/ are enough, and
no more than kube-scheduler's); the in-cluster service account. The tests that
run on both servers are in test_run.py and test_leader.py (BOTH).
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.live.apiserver import REFERENCE, KubeApiServer
from tests.live.client import Api
from tests.live.conftest import (
    APISERVER,
    SCHEDULER,
    Cluster,
    Proc,
    bound_nodes,
    make_pod,
    nodes_yaml,
    priority_classes,
    sched_config,
    wait_ready,
    wait_until,
)
from tests.live.proxy import HoldingProxy

PODS = "/api/v1/namespaces/default/pods"
DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "kubesched.yaml"


def _condition(pod: dict[str, Any] | None) -> dict[str, Any] | None:
    conds = (pod or {}).get("status", {}).get("conditions", [])
    return next((c for c in conds if c["type"] == "PodScheduled"), None)


def _comparable(cond: dict[str, Any]) -> dict[str, Any]:
    """A condition as two schedulers can agree on it: not when it was written (observedGeneration included)."""
    return {k: v for k, v in cond.items() if k != "lastTransitionTime"}


def _failed_scheduling(api: Api, pod: str) -> list[dict[str, Any]]:
    return [e for e in api.events() if e["reason"] == "FailedScheduling" and e["regarding"]["name"] == pod]


# ---------------------------------------------------------------- the same words as kube-scheduler

# Each node fails the pod for another reason; the pod's message counts them, and preemption's part says why it
# cannot help on three of them.
MIXED_NODES = """
apiVersion: v1
kind: Node
metadata: {name: small, labels: {zone: z0}}
status: {capacity: {cpu: '2', memory: 16Gi, pods: '110'}}
---
apiVersion: v1
kind: Node
metadata: {name: tainted, labels: {zone: z0}}
spec: {taints: [{key: dedicated, value: gpu, effect: NoSchedule}]}
status: {capacity: {cpu: '8', memory: 16Gi, pods: '110'}}
---
apiVersion: v1
kind: Node
metadata: {name: cordoned, labels: {zone: z0}}
spec: {unschedulable: true}
status: {capacity: {cpu: '8', memory: 16Gi, pods: '110'}}
---
apiVersion: v1
kind: Node
metadata: {name: elsewhere, labels: {zone: z1}}
status: {capacity: {cpu: '8', memory: 16Gi, pods: '110'}}
"""


@APISERVER
def test_unschedulable_pod_reads_as_kube_scheduler_says(cluster: Cluster) -> None:
    kube = cluster.server
    assert kube is not None
    api = cluster.start(MIXED_NODES)
    run = cluster.start_run(sched_config())
    kube.kube_scheduler(cluster.tmp, REFERENCE)
    wait_ready(run)
    for scheduler in (SCHEDULER, REFERENCE):
        api.create(PODS, make_pod(f"big-{scheduler}", cpu="3", scheduler=scheduler, node_selector={"zone": "z0"}))
    both = (SCHEDULER, REFERENCE)
    conds = {s: wait_until(lambda s=s: _condition(api.pod(f"big-{s}")), what=f"{s}'s condition") for s in both}
    events = {s: wait_until(lambda s=s: _failed_scheduling(api, f"big-{s}"), what=f"{s}'s event") for s in both}
    ours, theirs = conds[SCHEDULER], conds[REFERENCE]
    assert _comparable(ours) == _comparable(theirs)
    assert (ours["status"], ours["reason"]) == ("False", "Unschedulable")
    assert ours["message"] == (
        "0/4 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match Pod's node affinity/selector, "
        "1 node(s) had untolerated taint {dedicated: gpu}, 1 node(s) were unschedulable. no new claims to "
        "deallocate, preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling."
    )
    for s in both:
        assert len(events[s]) == 1, events[s]
        ev = events[s][0]
        assert (ev["type"], ev["action"], ev["note"]) == ("Warning", "Scheduling", theirs["message"])
        assert ev["reportingController"] == s
        assert "nominatedNodeName" not in api.pod(f"big-{s}")["status"]
    # A node that fits arrives: both schedulers take it, on the Node add event.
    kube.add_node("large", cpu="8", labels={"zone": "z0"})
    wait_until(lambda: set(bound_nodes(api).values()) == {"large"}, what="both pods bound to the new node")
    for s in both:
        ev = wait_until(lambda s=s: [e for e in api.events() if e["reason"] == "Scheduled" and f"big-{s}" in e["note"]])
        assert ev[0]["note"] == f"Successfully assigned default/big-{s} to large"
        assert _condition(api.pod(f"big-{s}"))["status"] == "True"
    assert run.stop() == 0


# ---------------------------------------------------------------- a binding that lost its race


def _scheduler_bindings(kube: KubeApiServer, pod: str) -> list[Any]:
    """The pod's bindings but the test's own (urllib)."""
    return [b for b in kube.bindings().get(f"default/{pod}", []) if not b.user_agent.startswith("Python-urllib")]


def _lost_race(cluster: Cluster, scheduler: str, outcome: str) -> dict[str, Any]:
    """`scheduler` decides on a pod; before its binding reaches the API server, the pod is bound elsewhere (409)
    or deleted (404). What the scheduler then leaves in the cluster, with names made neutral."""
    kube = cluster.server
    assert kube is not None
    kube.reset()
    cluster.start(nodes_yaml(2, cpu="2"))
    proxy = HoldingProxy(kube.url, kube.admin_tls)
    proxy.start()
    try:
        pod = f"{scheduler}-{outcome}"
        hold = proxy.hold("POST", f"/pods/{pod}/binding")
        kubeconfig = kube.write_kubeconfig(cluster.tmp / f"{scheduler}.proxy.kubeconfig", {}, server=proxy.url)
        proc: Proc
        if scheduler == SCHEDULER:
            proc = cluster.start_run(sched_config(leader_elect=False), scheduler, kubeconfig=kubeconfig)
            wait_ready(proc)
        else:
            proc = kube.kube_scheduler(cluster.tmp, scheduler, kubeconfig=kubeconfig)
        api = kube.api
        api.create(PODS, make_pod(pod, cpu="2", scheduler=scheduler))
        body = hold.wait()  # JSON from kubesched, protobuf from kube-scheduler: either names the target node
        chosen = next(n for n in ("node-0", "node-1") if n.encode() in body)
        other = "node-1" if chosen == "node-0" else "node-0"
        if outcome == "409":
            binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": pod}}
            api.create(f"{PODS}/{pod}/binding", {**binding, "target": {"kind": "Node", "name": other}})
        else:
            kube.delete_pod(pod)
        hold.release()
        events = wait_until(lambda: _failed_scheduling(api, pod), what=f"{scheduler}'s FailedScheduling event")
        answers = wait_until(lambda: _scheduler_bindings(kube, pod), what="the held binding answered")
        # The node the pod was assumed on is free again: pods that need whole nodes fill the cluster.
        fill = [f"{scheduler}-fill-{i}" for i in range(1 if outcome == "409" else 2)]
        for name in fill:
            api.create(PODS, make_pod(name, cpu="2", scheduler=scheduler))
        wait_until(lambda: all(bound_nodes(api).get(n) for n in fill), what="the freed capacity used")
        if outcome == "409":
            assert bound_nodes(api)[pod] == other, "the pod stays where it was bound"
            assert bound_nodes(api)[fill[0]] == chosen
        # The failure's status patch is written in the background: give it time to land (a pod bound elsewhere
        # shows PodScheduled=True from its binding until then).
        with contextlib.suppress(AssertionError):
            wait_until(lambda: (_condition(api.pod(pod)) or {}).get("status") != "True", timeout=5)
        events = _failed_scheduling(api, pod)
        cond = _condition(api.pod(pod))
        assert proc.alive(), proc.text()[-3000:]

        def neutral(text: str) -> str:
            return text.replace(pod, "POD").replace(chosen, "CHOSEN").replace(other, "OTHER")

        return {
            "events": [(e["type"], e["action"], neutral(e["note"])) for e in events],
            "condition": cond and {k: neutral(str(v)) for k, v in _comparable(cond).items()},
            "nominated": (api.pod(pod) or {}).get("status", {}).get("nominatedNodeName"),
            "answers": [b.code for b in answers],
        }
    finally:
        proxy.stop()
        for p in cluster.procs:
            if p.alive():
                p.stop()


@APISERVER
@pytest.mark.parametrize("outcome", ["409", "404"])
def test_binding_lost_race_handled_as_kube_scheduler(cluster: Cluster, outcome: str) -> None:
    theirs = _lost_race(cluster, REFERENCE, outcome)
    ours = _lost_race(cluster, SCHEDULER, outcome)
    assert ours == theirs, (ours, theirs)
    if outcome == "409":
        note = (
            'running Bind plugin "DefaultBinder": Operation cannot be fulfilled on '
            'pods/binding "POD": pod POD is already assigned to node "OTHER"'
        )
    else:
        note = 'running Bind plugin "DefaultBinder": pods "POD" not found'
    assert theirs["events"] == [("Warning", "Scheduling", note)]
    assert theirs["answers"] == [int(outcome)]


# ---------------------------------------------------------------- the API server restarts


@APISERVER
def test_apiserver_restart_mid_run(cluster: Cluster) -> None:
    kube = cluster.server
    assert kube is not None
    api = cluster.start(nodes_yaml(4))
    # The pods first (creating them is slow under load), then slow binds (10 at once, then 5 a second) so that
    # the restart lands mid-run; a renew deadline longer than the restart takes, so that this replica keeps its
    # lease through it (past it, it would exit as kube-scheduler does).
    names = [f"p{i:02d}" for i in range(60)]
    for name in names:
        api.create(PODS, make_pod(name, cpu="50m"))
    run = cluster.start_run(sched_config(qps=5, burst=10, lease="60s", renew="40s", retry="1s"))
    wait_ready(run, timeout=60)
    wait_until(lambda: sum(1 for n in bound_nodes(api).values() if n) >= 10, timeout=30, what="some pods bound")
    kube.stop_apiserver()
    kube.start_apiserver()
    assert sum(1 for n in bound_nodes(api).values() if n) < len(names), "the restart should land mid-run"
    renewed = api.lease()["spec"]["renewTime"]
    api.create(PODS, make_pod("after", cpu="50m"))
    wait_until(lambda: all(bound_nodes(api).values()), timeout=60, what="every pod bound after the restart")
    # Never two bindings of a pod. (A binding the restart cut off may have been done without an answer: the
    # retry is then refused with 409, and the pod stays where it was bound.)
    assert max(kube.bound_counts().values()) == 1, kube.bindings()
    wait_until(lambda: api.lease()["spec"]["renewTime"] != renewed, timeout=10, what="the lease renewed")
    assert api.lease()["spec"]["holderIdentity"] == "run"
    assert run.alive()
    assert run.stop() == 0


# ---------------------------------------------------------------- RBAC and the in-cluster configuration


def _deploy() -> dict[str, dict[str, Any]]:
    return {d["kind"]: d for d in yaml.safe_load_all(DEPLOY.read_text()) if d}


def _apply_deploy_rbac(kube: KubeApiServer) -> str:
    """deploy/kubesched.yaml's namespace, service account, roles and bindings; its scheduler configuration."""
    docs = _deploy()
    kube.apply([docs[k] for k in ("Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding")])
    kube.apply([docs[k] for k in ("Role", "RoleBinding")])
    return str(docs["ConfigMap"]["data"]["config.yaml"])


def _no_403(run: Proc) -> None:
    assert not re.search(r'rest_client_requests_total\{code="403"', run.metrics()), "a request was forbidden"
    assert "forbidden" not in run.text().lower(), run.text()[-3000:]


@APISERVER
def test_deploy_roles_are_enough(cluster: Cluster) -> None:
    """A user bound to nothing but deploy/'s ClusterRole and lease Role schedules, preempts, writes events and
    holds the lease, with the configuration deploy/ ships."""
    kube = cluster.server
    assert kube is not None
    config = _apply_deploy_rbac(kube)
    user = "kubesched-user"
    kubeconfig = kube.mint_user(user)
    subject = [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": user}]
    rbac = "rbac.authorization.k8s.io/v1"
    role_ref = {"apiGroup": "rbac.authorization.k8s.io"}
    kube.apply(
        [
            {"apiVersion": rbac, "kind": "ClusterRoleBinding", "metadata": {"name": user},
             "roleRef": {**role_ref, "kind": "ClusterRole", "name": "kubesched"}, "subjects": subject},
            {"apiVersion": rbac, "kind": "RoleBinding", "metadata": {"name": user, "namespace": "kubesched"},
             "roleRef": {**role_ref, "kind": "Role", "name": "kubesched-leader-election"}, "subjects": subject},
        ]
    )  # fmt: skip
    as_user = kube.user_api(kubeconfig)
    wait_until(lambda: as_user.call("GET", "/api/v1/nodes")[0] == 200, what="the bindings in force")
    # Nothing else: RBAC is on and this user is no admin.
    assert as_user.call("GET", "/api/v1/namespaces/kubesched/secrets")[0] == 403
    assert as_user.call("POST", PODS, make_pod("mine"))[0] == 403
    assert as_user.call("GET", "/apis/coordination.k8s.io/v1/namespaces/kubesched/leases/other")[0] == 403

    api = cluster.start(nodes_yaml(1, cpu="2") + priority_classes(low=0, high=1000))
    run = cluster.start_run(config, "least-privilege", kubeconfig=kubeconfig)
    wait_ready(run)
    wait_until(lambda: (api.lease("kubesched", "kubesched") or {}).get("spec", {}).get("holderIdentity"), what="lease")
    assert api.lease("kubesched", "kubesched")["spec"]["holderIdentity"] == "least-privilege"
    for i in range(2):
        api.create(PODS, make_pod(f"low{i}", cpu="1", scheduler="kubesched", priority_class="low"))
    wait_until(lambda: all(bound_nodes(api).values()), what="low-priority pods bound")
    api.create(PODS, make_pod("high", cpu="2", scheduler="kubesched", priority_class="high"))
    victims: set[str] = set()

    def victims_gone() -> bool:
        victims.update(cluster.finish_terminating())  # no kubelet: the test finishes their termination
        return victims == {"low0", "low1"}

    wait_until(victims_gone, timeout=20, what="victims deleted")
    wait_until(lambda: bound_nodes(api).get("high") == "node-0", timeout=20, what="preemptor bound")
    reasons = {"Scheduled", "Preempted", "FailedScheduling"}
    wait_until(lambda: reasons <= {e["reason"] for e in api.events()}, what="events written")
    assert {b.user for v in kube.bindings().values() for b in v} == {user}
    _no_403(run)
    assert run.stop() == 0
    assert not api.lease("kubesched", "kubesched")["spec"].get("holderIdentity"), "released on SIGTERM"


@APISERVER
def test_in_cluster_service_account(cluster: Cluster) -> None:
    """No kubeconfig: the service account's token (TokenRequest) and CA where a pod has them, the host from env."""
    kube = cluster.server
    assert kube is not None
    config = _apply_deploy_rbac(kube)
    mount = cluster.tmp / "serviceaccount"
    mount.mkdir()
    (mount / "token").write_text(kube.service_account_token("kubesched", "kubesched"))
    (mount / "ca.crt").write_bytes(kube.ca.read_bytes())
    (mount / "namespace").write_text("kubesched")
    env = {
        "KUBERNETES_SERVICE_HOST": "127.0.0.1",
        "KUBERNETES_SERVICE_PORT": str(kube.port),
        "KUBESCHED_SERVICE_ACCOUNT_DIR": str(mount),
    }
    api = cluster.start(nodes_yaml(2))
    run = cluster.start_run(config, "kubesched-0", in_cluster=True, env=env)
    wait_ready(run)
    for i in range(3):
        api.create(PODS, make_pod(f"p{i}"))
    wait_until(lambda: all(bound_nodes(api).values()), what="pods bound")
    assert api.lease("kubesched", "kubesched")["spec"]["holderIdentity"] == "kubesched-0"
    users = {b.user for v in kube.bindings().values() for b in v}
    assert users == {"system:serviceaccount:kubesched:kubesched"}, users
    _no_403(run)
    assert run.stop() == 0


def _grants(rules: list[dict[str, Any]]) -> set[tuple[str, str, str, str]]:
    """(group, resource, verb, name) for every combination the rules list ("" name: any)."""
    return {
        (g, r, v, n)
        for rule in rules
        for g in rule.get("apiGroups", [])
        for r in rule.get("resources", [])
        for v in rule.get("verbs", [])
        for n in rule.get("resourceNames") or [""]
    }


@pytest.mark.apiserver
def test_deploy_roles_grant_no_more_than_kube_scheduler(kube: KubeApiServer) -> None:
    """deploy/ asks for nothing kube-scheduler's own roles (system:kube-scheduler, system:volume-scheduler) do not
    give it, as the API server in front of us defines them; its lease Role is theirs for our lease's name."""
    upstream: set[tuple[str, str, str, str]] = set()
    for name in ("system:kube-scheduler", "system:volume-scheduler"):
        upstream |= _grants(kube.api.get(f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}")["rules"])
    docs = _deploy()
    ours = _grants(docs["ClusterRole"]["rules"])
    lease = docs["ConfigMap"]["data"]["config.yaml"]
    lease_name = yaml.safe_load(lease)["leaderElection"]["resourceName"]
    ours |= {(g, r, v, "kube-scheduler" if n == lease_name else n) for g, r, v, n in _grants(docs["Role"]["rules"])}

    def allowed(g: str, r: str, v: str, n: str) -> bool:
        return (g, r, v, "") in upstream or (g, r, v, n) in upstream

    assert not {x for x in ours if not allowed(*x)}, "deploy/ grants more than kube-scheduler has"
