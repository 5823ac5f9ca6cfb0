"""apps/v1 Deployment and DaemonSet: decoded as kube-apiserver v1.34.1 decodes them (strictly, with the
manifests of the Kubernetes documentation) and refused in the words of pkg/apis/apps/validation."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml
from tests.api.validation.raw_edits import drop_field, set_field

from kubesched.api import apps
from kubesched.api.decode import KINDS, NAMESPACED, DecodeError, decode
from kubesched.api.intake import IntakeError, admit
from kubesched.api.validation import validate, validated_kinds
from kubesched.gocompat.field import to_aggregate

OPENAPI = Path(__file__).parents[3] / "src" / "kubesched" / "api" / "openapi-v1.34.1.json"

# https://kubernetes.io/docs/concepts/workloads/controllers/deployment/ (controllers/nginx-deployment.yaml)
NGINX_DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx-deployment
  labels:
    app: nginx
spec:
  replicas: 3
  selector:
    matchLabels:
      app: nginx
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: nginx:1.14.2
        ports:
        - containerPort: 80
"""

# https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/ (controllers/daemonset.yaml)
FLUENTD_DAEMONSET = """
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: fluentd-elasticsearch
  namespace: kube-system
  labels:
    k8s-app: fluentd-logging
spec:
  selector:
    matchLabels:
      name: fluentd-elasticsearch
  template:
    metadata:
      labels:
        name: fluentd-elasticsearch
    spec:
      tolerations:
      # these tolerations are to have the daemonset runnable on control plane nodes
      # remove them if your control plane nodes should not run pods
      - key: node-role.kubernetes.io/control-plane
        operator: Exists
        effect: NoSchedule
      - key: node-role.kubernetes.io/master
        operator: Exists
        effect: NoSchedule
      containers:
      - name: fluentd-elasticsearch
        image: quay.io/fluentd_elasticsearch/fluentd:v2.5.2
        resources:
          limits:
            memory: 200Mi
          requests:
            cpu: 100m
            memory: 200Mi
        volumeMounts:
        - name: varlog
          mountPath: /var/log
      # it may be desirable to set a high priority class to ensure that a DaemonSet Pod
      # preempts running Pods
      # priorityClassName: important
      terminationGracePeriodSeconds: 30
      volumes:
      - name: varlog
        hostPath:
          path: /var/log
"""

MANIFESTS = {"Deployment": NGINX_DEPLOYMENT, "DaemonSet": FLUENTD_DAEMONSET}


def _raw(kind: str, change: Callable[[dict[str, Any]], object] | None = None) -> dict[str, Any]:
    raw: dict[str, Any] = copy.deepcopy(yaml.safe_load(MANIFESTS[kind]))
    if change is not None:
        change(raw)
    return raw


def _errors(kind: str, change: Callable[[dict[str, Any]], object]) -> list[str]:
    return to_aggregate(validate(kind, decode(kind, _raw(kind, change))))


def test_kinds_are_registered_namespaced_and_validated() -> None:
    assert KINDS["Deployment"] is apps.Deployment and KINDS["DaemonSet"] is apps.DaemonSet
    assert {"Deployment", "DaemonSet"} <= NAMESPACED
    assert {"Deployment", "DaemonSet"} <= validated_kinds()


def test_nginx_deployment_is_admitted() -> None:
    deploy = admit("Deployment", _raw("Deployment"))
    assert isinstance(deploy, apps.Deployment)
    assert deploy.spec.replicas == 3
    assert deploy.spec.selector is not None and deploy.spec.selector.match_labels == {"app": "nginx"}
    assert deploy.spec.template.spec.containers[0].image == "nginx:1.14.2"
    assert deploy.spec.template.spec.containers[0].ports[0].container_port == 80


def test_fluentd_daemonset_is_admitted_with_its_tolerations() -> None:
    ds = admit("DaemonSet", _raw("DaemonSet"))
    assert isinstance(ds, apps.DaemonSet)
    assert ds.metadata.namespace == "kube-system"
    tolerations = ds.spec.template.spec.tolerations
    assert [(t.key, t.operator, t.effect) for t in tolerations] == [
        ("node-role.kubernetes.io/control-plane", "Exists", "NoSchedule"),
        ("node-role.kubernetes.io/master", "Exists", "NoSchedule"),
    ]
    assert ds.spec.template.spec.containers[0].resources.requests == {"cpu": "100m", "memory": "200Mi"}


def test_every_spec_field_of_the_openapi_document_decodes() -> None:
    """A field the struct lacks would be read as absent: the structs hold every field upstream declares."""
    types = json.loads(OPENAPI.read_text())["types"]
    for struct, definition in (
        (apps.DeploymentSpec, "DeploymentSpec"),
        (apps.DeploymentStrategy, "DeploymentStrategy"),
        (apps.RollingUpdateDeployment, "RollingUpdateDeployment"),
        (apps.DaemonSetSpec, "DaemonSetSpec"),
        (apps.DaemonSetUpdateStrategy, "DaemonSetUpdateStrategy"),
        (apps.RollingUpdateDaemonSet, "RollingUpdateDaemonSet"),
    ):
        declared = {f.encode_name for f in msgspec.structs.fields(struct)}
        assert declared == set(types[f"io.k8s.api.apps.v1.{definition}"]), definition


def test_every_field_a_full_manifest_may_carry_is_admitted() -> None:
    raw = _raw("Deployment")
    raw["spec"].update(
        strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": "10%"}},
        minReadySeconds=5,
        revisionHistoryLimit=2,
        progressDeadlineSeconds=60,
        paused=True,
    )
    raw["status"] = {"replicas": 3, "readyReplicas": 3}
    deploy = admit("Deployment", raw)
    assert deploy.spec.strategy.rolling_update.max_surge == 1
    assert deploy.spec.strategy.rolling_update.max_unavailable == "10%"
    assert deploy.spec.paused and deploy.spec.progress_deadline_seconds == 60
    raw = _raw("DaemonSet")
    raw["spec"].update(
        updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "10%", "maxUnavailable": 0}},
        minReadySeconds=5,
        revisionHistoryLimit=2,
    )
    ds = admit("DaemonSet", raw)
    assert ds.spec.update_strategy.rolling_update.max_surge == "10%"


def test_unknown_fields_are_refused_strictly() -> None:
    raw = _raw("Deployment")
    raw["spec"]["strategy"] = {"type": "Recreate", "maxSurge": 1}
    with pytest.raises(IntakeError) as err:
        admit("Deployment", raw)
    assert err.value.message == 'strict decoding error: unknown field "spec.strategy.maxSurge"'


def test_template_quantities_are_checked_at_decode() -> None:
    for kind in ("Deployment", "DaemonSet"):
        raw = _raw(kind)
        raw["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "lots"}}
        with pytest.raises(DecodeError) as err:
            decode(kind, raw)
        assert err.value.field == "spec.template.spec.containers[0].resources.limits[cpu]"


MISMATCH = "`selector` does not match template `labels`"
PERCENT = (
    "a valid percent string must be a numeric string followed by an ending '%' "
    "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
)

# (kind, change, the API server's errors in its order)
REFUSALS: list[tuple[str, Callable[[dict[str, Any]], None], list[str]]] = [
    (
        "Deployment",
        set_field("spec.replicas", -1),
        ["spec.replicas: Invalid value: -1: must be greater than or equal to 0"],
    ),
    (
        "Deployment",
        set_field("spec.selector.matchLabels", {"app": "web"}),
        [f'spec.template.metadata.labels: Invalid value: {{"app":"nginx"}}: {MISMATCH}'],
    ),
    (
        "Deployment",
        drop_field("spec.selector"),
        [
            "spec.selector: Required value",
            f'spec.template.metadata.labels: Invalid value: {{"app":"nginx"}}: {MISMATCH}',
        ],
    ),
    (
        "Deployment",
        set_field("spec.selector", {}),
        ["spec.selector: Invalid value: {}: empty selector is invalid for deployment"],
    ),
    (
        "Deployment",
        set_field("spec.template.spec.restartPolicy", "Never"),
        ['spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"'],
    ),
    (
        "Deployment",
        set_field("spec.template.spec.activeDeadlineSeconds", 30),
        ["spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported"],
    ),
    (
        "Deployment",
        set_field("spec.strategy", {"type": "Canary"}),
        [
            'spec.strategy: Unsupported value: {"Type":"Canary","RollingUpdate":null}: '
            'supported values: "Recreate", "RollingUpdate"'
        ],
    ),
    (
        "Deployment",
        set_field("spec.strategy", {"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}),
        ["spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"],
    ),
    (
        "Deployment",
        set_field("spec.strategy.rollingUpdate", {"maxSurge": 0, "maxUnavailable": "0%"}),
        ['spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "0%": may not be 0 when `maxSurge` is 0'],
    ),
    (
        "Deployment",
        set_field("spec.strategy.rollingUpdate", {"maxSurge": "abc", "maxUnavailable": "120%"}),
        [
            f'spec.strategy.rollingUpdate.maxSurge: Invalid value: "abc": {PERCENT}',
            'spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "120%": must not be greater than 100%',
        ],
    ),
    (
        "Deployment",
        set_field("spec.strategy.rollingUpdate", {"maxUnavailable": -1}),
        ["spec.strategy.rollingUpdate.maxUnavailable: Invalid value: -1: must be greater than or equal to 0"],
    ),
    (
        "Deployment",
        set_field("spec.minReadySeconds", 600),
        ["spec.progressDeadlineSeconds: Invalid value: 600: must be greater than minReadySeconds"],
    ),
    (
        "Deployment",
        set_field("spec.revisionHistoryLimit", -1),
        ["spec.revisionHistoryLimit: Invalid value: -1: must be greater than or equal to 0"],
    ),
    (
        "DaemonSet",
        drop_field("spec.selector"),
        [f'spec.template.metadata.labels: Invalid value: {{"name":"fluentd-elasticsearch"}}: {MISMATCH}'],
    ),
    (
        "DaemonSet",
        set_field("spec.selector.matchLabels", {"name": "other"}),
        [f'spec.template.metadata.labels: Invalid value: {{"name":"fluentd-elasticsearch"}}: {MISMATCH}'],
    ),
    (
        "DaemonSet",
        set_field("spec.selector", {}),
        ["spec.selector: Invalid value: {}: empty selector is invalid for daemonset"],
    ),
    (
        "DaemonSet",
        set_field("spec.template.spec.restartPolicy", "OnFailure"),
        ['spec.template.spec.restartPolicy: Unsupported value: "OnFailure": supported values: "Always"'],
    ),
    (
        "DaemonSet",
        set_field("spec.template.spec.activeDeadlineSeconds", 30),
        ["spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in DaemonSet is not Supported"],
    ),
    (
        "DaemonSet",
        set_field("spec.updateStrategy", {"rollingUpdate": {"maxSurge": 1}}),
        [
            "spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: 1: "
            "may not be set when maxUnavailable is non-zero"
        ],
    ),
    (
        "DaemonSet",
        set_field("spec.updateStrategy", {"rollingUpdate": {"maxUnavailable": "0%"}}),
        ["spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0"],
    ),
    (
        "DaemonSet",
        set_field("spec.updateStrategy", {"type": "Blue", "rollingUpdate": {"maxUnavailable": 2}}),
        [
            'spec.updateStrategy: Unsupported value: {"Type":"Blue","RollingUpdate":'
            '{"MaxUnavailable":2,"MaxSurge":0}}: '
            'supported values: "RollingUpdate", "OnDelete"'
        ],
    ),
    (
        "DaemonSet",
        set_field("spec.minReadySeconds", -5),
        ["spec.minReadySeconds: Invalid value: -5: must be greater than or equal to 0"],
    ),
    (
        "DaemonSet",
        set_field("metadata.name", "Fluentd"),
        [
            'metadata.name: Invalid value: "Fluentd": a lowercase RFC 1123 subdomain must consist of lower case '
            "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character "
            "(e.g. 'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        ],
    ),
]


@pytest.mark.parametrize(("kind", "change", "want"), REFUSALS, ids=[f"{k}-{w[0][:60]}" for k, _, w in REFUSALS])
def test_refusals_in_the_api_servers_words(
    kind: str, change: Callable[[dict[str, Any]], None], want: list[str]
) -> None:
    assert _errors(kind, change) == want


def test_admit_reports_the_first_refusal_as_invalid() -> None:
    with pytest.raises(IntakeError) as err:
        admit("Deployment", _raw("Deployment", set_field("spec.replicas", -3)))
    assert err.value.invalid and err.value.field == "spec.replicas"
    assert err.value.message == "Invalid value: -3: must be greater than or equal to 0"


def test_on_delete_and_recreate_need_no_rolling_update() -> None:
    assert _errors("DaemonSet", set_field("spec.updateStrategy", {"type": "OnDelete"})) == []
    assert _errors("Deployment", set_field("spec.strategy", {"type": "Recreate"})) == []
    # A rolling update with only a surge: unavailability stays at its default of 25%.
    assert _errors("Deployment", set_field("spec.strategy", {"rollingUpdate": {"maxSurge": 0}})) == []


def test_validation_does_not_change_the_object() -> None:
    deploy = decode("Deployment", _raw("Deployment", drop_field("spec.replicas")))
    before = msgspec.json.encode(deploy)
    assert validate("Deployment", deploy) == []
    assert msgspec.json.encode(deploy) == before and deploy.spec.replicas is None
