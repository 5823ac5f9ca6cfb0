"""What kube-apiserver refuses in a Node, Namespace, Service or ReplicationController on create
(pkg/apis/core/validation, ValidateNode, ValidateNamespace, ValidateService, ValidateReplicationController),
and the pod template metadata every controller validates (ValidatePodTemplateSpec).

The API server validates an object after its defaulting, so the checks here look at the defaulted
values where they differ (an RC's selector and labels taken from its template, a Node's allocatable
taken from its capacity, a Service's protocol and targetPort), without changing the object.

Only the fields the scheduler reads are checked in depth; of a Service, whose selector alone matters
to scheduling, the rules users commonly hit (ports, type, session affinity) are kept and the
cluster-IP, traffic-policy and load-balancer rules are left out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC
from fractions import Fraction
from functools import lru_cache

import msgspec

from kubesched.api.core import (
    Namespace,
    Node,
    PodTemplateSpec,
    ReplicationController,
    Service,
    ServicePort,
    Taint,
)
from kubesched.api.meta import ObjectMeta
from kubesched.api.quantity import milli_value, parse_quantity, parse_resource_quantity, shown
from kubesched.api.validation.meta import (
    KUBE_FINALIZER_ERROR,
    is_kube_finalizer_name,
    name_is_dns1035_label,
    name_is_dns_label,
    name_is_dns_subdomain,
    validate_annotations,
    validate_label_name,
    validate_labels,
    validate_object_meta,
)
from kubesched.api.validation.pod import validate_template_pod
from kubesched.api.validation.pod_resources import is_integer_resource
from kubesched.api.validation.registry import validator
from kubesched.gocompat.field import (
    DUPLICATE,
    FieldError,
    GoJSON,
    child,
    forbidden,
    index,
    invalid,
    not_supported,
    required,
)
from kubesched.gocompat.names import is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_label_value

NEGATIVE_ERROR = "must be greater than or equal to 0"

# ---------------------------------------------------------------- small shared rules


def validate_nonnegative(value: int, path: str) -> list[FieldError]:
    """ValidateNonnegativeField."""
    return [invalid(path, value, NEGATIVE_ERROR)] if value < 0 else []


def labels_value(labels: Mapping[str, str]) -> GoJSON:
    """A label map as a bad value: encoding/json sorts the keys; an absent map is null."""
    return GoJSON({k: labels[k] for k in sorted(labels)} if labels else None)


@lru_cache(maxsize=1 << 12, typed=True)
def _quantity_value_messages(name: str, raw: str | int | float) -> tuple[str, ...]:
    q: Fraction = parse_quantity(raw)
    msgs = []
    if q < 0:
        msgs.append(NEGATIVE_ERROR)
    if is_integer_resource(name) and milli_value(parse_resource_quantity(raw)) % 1000 != 0:
        msgs.append("must be an integer")
    return tuple(msgs)


def validate_resource_quantity_value(name: str, raw: str | int | float, path: str) -> list[FieldError]:
    """ValidateResourceQuantityValue: not negative, and whole for the resources counted in units."""
    return [invalid(path, shown(raw), m) for m in _quantity_value_messages(name, raw)]


# ---------------------------------------------------------------- pod templates


def validate_template(template: PodTemplateSpec, path: str) -> list[FieldError]:
    """ValidatePodTemplateSpec's metadata part: labels and annotations (at `<path>.labels`, without
    `metadata`, as upstream reports them). The pod-specific annotations and the pod spec come next."""
    meta = template.metadata
    errs = validate_labels(meta.labels, child(path, "labels")) if meta.labels else []
    if meta.annotations:
        errs += validate_annotations(meta.annotations, child(path, "annotations"))
    return errs


def selector_mismatch(template: PodTemplateSpec, path: str) -> FieldError:
    return invalid(
        child(path, "metadata", "labels"),
        labels_value(template.metadata.labels),
        "`selector` does not match template `labels`",
    )


def validate_template_restart(template: PodTemplateSpec, path: str, kind: str) -> list[FieldError]:
    """Controllers' pods always restart and never time out."""
    errs: list[FieldError] = []
    policy = template.spec.restart_policy or "Always"  # the default
    if policy != "Always":
        errs.append(not_supported(child(path, "spec", "restartPolicy"), policy, ["Always"]))
    if template.spec.active_deadline_seconds is not None:
        errs.append(
            forbidden(child(path, "spec", "activeDeadlineSeconds"), f"activeDeadlineSeconds in {kind} is not Supported")
        )
    return errs


# ---------------------------------------------------------------- Node

_TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]


@lru_cache(maxsize=1 << 10)
def _joined_label_value_messages(value: str) -> str:
    return ";".join(is_valid_label_value(value))


def _taint_value(t: Taint) -> GoJSON:
    """A core.Taint as encoding/json writes it (the internal type: no JSON tags)."""
    added = None
    if t.time_added is not None:
        ta = t.time_added if t.time_added.tzinfo else t.time_added.replace(tzinfo=UTC)
        added = ta.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return GoJSON({"Key": t.key, "Value": t.value, "Effect": t.effect, "TimeAdded": added})


def validate_node_taints(taints: list[Taint], path: str) -> list[FieldError]:
    """validateNodeTaints: key, value, effect, and unique by key and effect."""
    errs: list[FieldError] = []
    seen: set[tuple[str, str]] = set()
    for i, t in enumerate(taints):
        p = index(path, i)
        errs += validate_label_name(t.key, child(p, "key"))
        msg = _joined_label_value_messages(t.value)
        if msg:
            errs.append(invalid(child(p, "value"), t.value, msg))
        if not t.effect:
            errs.append(required(child(p, "effect")))
        elif t.effect not in _TAINT_EFFECTS:
            errs.append(not_supported(child(p, "effect"), t.effect, _TAINT_EFFECTS))
        if (t.effect, t.key) in seen:
            errs.append(FieldError(DUPLICATE, p, _taint_value(t), "taints must be unique by key and effect pair"))
            continue
        seen.add((t.effect, t.key))
    return errs


def validate_node_resources(node: Node) -> list[FieldError]:
    """ValidateNodeResources: capacity, then allocatable (which defaults to the capacity)."""
    errs: list[FieldError] = []
    capacity = node.status.capacity
    allocatable = node.status.allocatable or capacity
    for what, rl in (("capacity", capacity), ("allocatable", allocatable)):
        if not any(_quantity_value_messages(name, q) for name, q in rl.items()):
            continue  # the common case: no path strings built
        for name in sorted(rl):  # Go walks the map in random order
            errs += validate_resource_quantity_value(name, rl[name], f"status.{what}.{name}")
    return errs


@validator("Node")
def validate_node(node: Node) -> list[FieldError]:
    """ValidateNode. Upstream reports the taints under `metadata`, and so do we."""
    errs = validate_object_meta(node.metadata, False, name_is_dns_subdomain)
    if node.spec.taints:
        errs += validate_node_taints(node.spec.taints, "metadata.taints")
    if node.status.capacity or node.status.allocatable:
        errs += validate_node_resources(node)
    return errs


# ---------------------------------------------------------------- Namespace

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


@validator("Namespace")
def validate_namespace(ns: Namespace) -> list[FieldError]:
    """ValidateNamespace, after the API server labels the namespace with its own name."""
    meta = ns.metadata
    labels = {**meta.labels, NAMESPACE_NAME_LABEL: meta.name}
    errs = validate_object_meta(_with_labels(meta, labels), False, name_is_dns_label)
    path = "spec.finalizers"
    for f in ns.spec.finalizers:
        errs += [invalid(path, f, m) for m in is_qualified_name(f)]
        if not is_kube_finalizer_name(f):
            errs.append(invalid(path, f, KUBE_FINALIZER_ERROR))
    return errs


def _with_labels(meta: ObjectMeta, labels: dict[str, str]) -> ObjectMeta:
    return msgspec.structs.replace(meta, labels=labels)


# ---------------------------------------------------------------- Service

_SERVICE_TYPES = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]
_PROTOCOLS = ["SCTP", "TCP", "UDP"]
_SESSION_AFFINITIES = ["ClientIP", "None"]
PORT_RANGE_ERROR = "must be between 1 and 65535, inclusive"

_PORT_NAME_CHARSET = re.compile(r"[-a-z0-9]+")
_PORT_NAME_LETTER = re.compile(r"[a-z]")


def is_valid_port_name(port: str) -> list[str]:
    """IsValidPortName: an IANA_SVC_NAME."""
    errs = []
    if len(port) > 15:
        errs.append("must be no more than 15 characters")
    if not _PORT_NAME_CHARSET.fullmatch(port):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _PORT_NAME_LETTER.search(port):
        errs.append("must contain at least one letter (a-z)")
    if "--" in port:
        errs.append("must not contain consecutive hyphens")
    if port and (port[0] == "-" or port[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def validate_port_num_or_name(port: int | str, path: str) -> list[FieldError]:
    """ValidatePortNumOrName."""
    if isinstance(port, int):
        return [] if 1 <= port <= 65535 else [invalid(path, port, PORT_RANGE_ERROR)]
    return [invalid(path, port, m) for m in is_valid_port_name(port)]


def _service_port(sp: ServicePort, require_name: bool, names: set[str], path: str) -> list[FieldError]:
    """validateServicePort, on the defaulted port (protocol TCP, targetPort the port)."""
    errs: list[FieldError] = []
    if require_name and not sp.name:
        errs.append(required(child(path, "name")))
    elif sp.name:
        errs += [invalid(child(path, "name"), sp.name, m) for m in is_dns1123_label(sp.name)]
        if sp.name in names:
            errs.append(FieldError(DUPLICATE, child(path, "name"), sp.name))
        else:
            names.add(sp.name)
    if not 1 <= sp.port <= 65535:
        errs.append(invalid(child(path, "port"), sp.port, PORT_RANGE_ERROR))
    protocol = sp.protocol or "TCP"
    if protocol not in _PROTOCOLS:
        errs.append(not_supported(child(path, "protocol"), protocol, _PROTOCOLS))
    target = sp.target_port if sp.target_port is not None and sp.target_port not in (0, "") else sp.port
    errs += validate_port_num_or_name(target, child(path, "targetPort"))
    if sp.app_protocol is not None:
        errs += [invalid(child(path, "appProtocol"), sp.app_protocol, m) for m in is_qualified_name(sp.app_protocol)]
    return errs


def _port_key(sp: ServicePort) -> GoJSON:
    """The (protocol, port) key upstream reports a duplicate port with: a core.ServicePort."""
    return GoJSON(
        {
            "Name": "",
            "Protocol": sp.protocol or "TCP",
            "AppProtocol": None,
            "Port": sp.port,
            "TargetPort": 0,
            "NodePort": 0,
        }
    )


@validator("Service")
def validate_service(svc: Service) -> list[FieldError]:
    """ValidateService, for the ports, selector, session affinity and type."""
    errs = validate_object_meta(svc.metadata, True, name_is_dns1035_label)
    spec = svc.spec
    stype = spec.type or "ClusterIP"
    cluster_ips = spec.cluster_ips or ([spec.cluster_ip] if spec.cluster_ip else [])
    headless = len(cluster_ips) == 1 and cluster_ips[0] == "None"
    if not spec.ports and not headless and stype != "ExternalName":
        errs.append(required("spec.ports"))
    if stype in ("LoadBalancer", "NodePort"):
        if headless:
            errs.append(invalid("spec.clusterIPs[0]", "None", f"may not be set to 'None' for {stype} services"))
    elif stype == "ExternalName":
        if cluster_ips:
            errs.append(forbidden("spec.clusterIPs", "may not be set for ExternalName services"))
        cname = spec.external_name.removesuffix(".")
        if cname:
            errs += [invalid("spec.externalName", cname, m) for m in is_dns1123_subdomain(cname)]
        else:
            errs.append(required("spec.externalName"))
    names: set[str] = set()
    for i, sp in enumerate(spec.ports):
        errs += _service_port(sp, len(spec.ports) > 1, names, index("spec.ports", i))
    if spec.selector:
        errs += validate_labels(spec.selector, "spec.selector")
    affinity = spec.session_affinity or "None"
    if affinity not in _SESSION_AFFINITIES:
        errs.append(not_supported("spec.sessionAffinity", affinity, _SESSION_AFFINITIES))
    if stype not in _SERVICE_TYPES:
        errs.append(not_supported("spec.type", stype, _SERVICE_TYPES))
    if stype == "ClusterIP":
        for i, sp in enumerate(spec.ports):
            if sp.node_port:
                where = child(index("spec.ports", i), "nodePort")
                errs.append(forbidden(where, "may not be used when `type` is 'ClusterIP'"))
    seen: set[tuple[str, int]] = set()
    for i, sp in enumerate(spec.ports):
        k = (sp.protocol or "TCP", sp.port)
        if k in seen:
            errs.append(FieldError(DUPLICATE, index("spec.ports", i), _port_key(sp)))
        seen.add(k)
    return errs


# ---------------------------------------------------------------- ReplicationController


def validate_template_for_rc(
    template: PodTemplateSpec | None, selector: Mapping[str, str], path: str
) -> list[FieldError]:
    """ValidatePodTemplateSpecForRC: a template whose labels the selector matches."""
    if template is None:
        return [required(path)]
    errs: list[FieldError] = []
    labels = template.metadata.labels
    if selector and any(labels.get(k) != v for k, v in selector.items()):
        errs.append(selector_mismatch(template, path))
    errs += validate_template(template, path)
    errs += validate_template_pod(template, path)
    errs += validate_template_restart(template, path, "ReplicationController")
    return errs


@validator("ReplicationController")
def validate_replication_controller(rc: ReplicationController) -> list[FieldError]:
    """ValidateReplicationController, after the defaulting that copies the template's labels to an
    empty selector and empty object labels (and sets one replica)."""
    spec = rc.spec
    tlabels = spec.template.metadata.labels if spec.template is not None else {}
    selector = spec.selector or tlabels
    meta = rc.metadata if rc.metadata.labels or not tlabels else _with_labels(rc.metadata, tlabels)
    errs = validate_object_meta(meta, True, name_is_dns_subdomain)
    errs += validate_nonnegative(spec.min_ready_seconds, "spec.minReadySeconds")
    if not selector:
        errs.append(required("spec.selector"))
    errs += validate_nonnegative(1 if spec.replicas is None else spec.replicas, "spec.replicas")
    errs += validate_template_for_rc(spec.template, selector, "spec.template")
    return errs
