"""The deployment manifests agree with what the scheduler does."""

from __future__ import annotations

from pathlib import Path

import yaml

from kubesched.config import load_config_mapping
from kubesched.live.resources import BY_KIND, SCHEDULER_KINDS

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def _docs() -> dict[str, dict]:
    docs = [d for d in yaml.safe_load_all((DEPLOY / "kubesched.yaml").read_text()) if d]
    return {d["kind"]: d for d in docs}


def _allowed(rules: list[dict], group: str, resource: str, verb: str, name: str = "") -> bool:
    return any(
        group in r["apiGroups"]
        and resource in r["resources"]
        and verb in r["verbs"]
        and (not r.get("resourceNames") or name in r["resourceNames"])
        for r in rules
    )


def test_config_map_is_a_valid_secondary_scheduler_config() -> None:
    docs = _docs()
    cfg = load_config_mapping(yaml.safe_load(docs["ConfigMap"]["data"]["config.yaml"]), "configmap")
    assert cfg.leader_election.leader_elect
    assert (cfg.leader_election.lease_duration, cfg.leader_election.renew_deadline) == (15.0, 10.0)
    assert cfg.leader_election.retry_period == 2.0
    assert [p.scheduler_name for p in cfg.profiles] == ["kubesched"]
    dep = docs["Deployment"]
    assert dep["spec"]["replicas"] == 2
    ns = cfg.leader_election.resource_namespace
    assert dep["metadata"]["namespace"] == ns == docs["Role"]["metadata"]["namespace"]
    lease = docs["Role"]["rules"]
    assert _allowed(lease, "coordination.k8s.io", "leases", "create")
    for verb in ("get", "update"):
        assert _allowed(lease, "coordination.k8s.io", "leases", verb, cfg.leader_election.resource_name)


def test_cluster_role_grants_what_the_scheduler_uses() -> None:
    rules = _docs()["ClusterRole"]["rules"]
    for kind in SCHEDULER_KINDS:
        r = BY_KIND[kind]
        for verb in ("list", "watch"):
            assert _allowed(rules, r.group, r.plural, verb), (kind, verb)
    assert _allowed(rules, "", "pods/binding", "create")
    assert _allowed(rules, "", "pods/status", "patch")
    assert _allowed(rules, "", "pods", "delete")
    assert _allowed(rules, "events.k8s.io", "events", "create")
    assert _allowed(rules, "events.k8s.io", "events", "patch")
    for res in ("persistentvolumes", "persistentvolumeclaims"):
        assert _allowed(rules, "", res, "patch")
    assert _allowed(rules, "resource.k8s.io", "resourceclaims/status", "patch")
