"""storage.k8s.io/v1 kinds as kube-apiserver validates them on create (pkg/apis/storage/validation):
StorageClass, CSINode, CSIDriver, CSIStorageCapacity, VolumeAttachment.

Fields the API server defaults before validating (a StorageClass's reclaimPolicy and
volumeBindingMode, a CSIDriver's attachRequired, podInfoOnMount, storageCapacity...) can never
be missing by then, so only their values are checked.
"""

from __future__ import annotations

from functools import lru_cache

from kubesched.api.quantity import QuantityError, canonical_text, parse_quantity
from kubesched.api.storage import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    StorageClass,
    TopologySelectorTerm,
    VolumeAttachment,
)
from kubesched.api.validation.meta import name_is_dns_subdomain, validate_label_selector, validate_object_meta
from kubesched.api.validation.registry import validator
from kubesched.api.validation.volumes import (
    validate_class_name,
    validate_csi_driver_name,
    validate_persistent_volume_spec,
)
from kubesched.gocompat.field import (
    FieldError,
    child,
    duplicate,
    forbidden,
    index,
    invalid,
    not_supported,
    required,
    too_long,
)
from kubesched.gocompat.names import is_qualified_name

STORAGE_CLASS_RECLAIM_POLICIES = ["Delete", "Retain"]
VOLUME_BINDING_MODES = ["Immediate", "WaitForFirstConsumer"]
FS_GROUP_POLICIES = ["File", "None", "ReadWriteOnceWithFSType"]
VOLUME_LIFECYCLE_MODES = ["Persistent", "Ephemeral"]  # upstream's order, not sorted

MAX_PROVISIONER_PARAMETERS = 512
MAX_PROVISIONER_PARAMETER_SIZE = 256 * 1024
CSI_NODE_ID_MAX = 256  # with the longer limit kube-apiserver v1.34 allows on create
TOKEN_MIN_SECONDS = 10 * 60
TOKEN_MAX_SECONDS = 1 << 32

# A topology term as upstream compares terms: each key with its set of values.
_Topology = dict[str, frozenset[str]]


@lru_cache(maxsize=1 << 12)
def _qualified_name(name: str) -> tuple[str, ...]:
    return tuple(is_qualified_name(name))


# ---------------------------------------------------------------- StorageClass


def _validate_provisioner(provisioner: str, path: str) -> list[FieldError]:
    if not provisioner:
        return [required(path)]
    return [invalid(path, provisioner, m) for m in _qualified_name(provisioner.lower())]


def _validate_parameters(params: dict[str, str], path: str) -> list[FieldError]:
    if len(params) > MAX_PROVISIONER_PARAMETERS:
        return [too_long(path, MAX_PROVISIONER_PARAMETERS)]
    errs: list[FieldError] = []
    size = 0
    for k in sorted(params) if len(params) > 1 else params:
        if not k:
            errs.append(invalid(path, k, "field can not be empty."))
        size += len(k.encode()) + len(params[k].encode())
    if size > MAX_PROVISIONER_PARAMETER_SIZE:
        errs.append(too_long(path, MAX_PROVISIONER_PARAMETER_SIZE))
    return errs


def _validate_topology_term(term: TopologySelectorTerm, path: str) -> tuple[_Topology, list[FieldError]]:
    """ValidateTopologySelectorTerm: each key once, with at least one value, each value once."""
    errs: list[FieldError] = []
    exprs: _Topology = {}
    for i, req in enumerate(term.match_label_expressions):
        rp = index(child(path, "matchLabelExpressions"), i)
        values = child(rp, "values")
        if not req.values:
            errs.append(required(values))
        seen: set[str] = set()
        for j, v in enumerate(req.values):
            if v in seen:
                errs.append(duplicate(index(values, j), v))
            seen.add(v)
        errs += [invalid(child(rp, "key"), req.key, m) for m in _qualified_name(req.key)]
        if req.key in exprs:
            errs.append(duplicate(child(rp, "key"), req.key))
        exprs[req.key] = frozenset(seen)
    return exprs, errs


def _validate_allowed_topologies(terms: list[TopologySelectorTerm], path: str) -> list[FieldError]:
    """Terms must differ. Upstream also compares each term with len(terms) empty placeholders,
    so an empty term is a duplicate of each of them."""
    errs: list[FieldError] = []
    seen: list[_Topology] = [{} for _ in terms]
    for i, term in enumerate(terms):
        exprs, term_errs = _validate_topology_term(term, index(path, i))
        errs += term_errs
        errs += [duplicate(child(index(path, i), "matchLabelExpressions"), "") for t in seen if t == exprs]
        seen.append(exprs)
    return errs


@validator("StorageClass")
def validate_storage_class(sc: StorageClass) -> list[FieldError]:
    errs = validate_object_meta(sc.metadata, False, name_is_dns_subdomain)
    errs += _validate_provisioner(sc.provisioner, "provisioner")
    if sc.parameters:
        errs += _validate_parameters(sc.parameters, "parameters")
    if sc.reclaim_policy and sc.reclaim_policy not in STORAGE_CLASS_RECLAIM_POLICIES:
        errs.append(not_supported("reclaimPolicy", sc.reclaim_policy, STORAGE_CLASS_RECLAIM_POLICIES))
    if sc.volume_binding_mode is not None and sc.volume_binding_mode not in VOLUME_BINDING_MODES:
        errs.append(not_supported("volumeBindingMode", sc.volume_binding_mode, VOLUME_BINDING_MODES))
    if sc.allowed_topologies:
        errs += _validate_allowed_topologies(sc.allowed_topologies, "allowedTopologies")
    return errs


# ---------------------------------------------------------------- CSINode


@validator("CSINode")
def validate_csi_node(node: CSINode) -> list[FieldError]:
    errs = validate_object_meta(node.metadata, False, name_is_dns_subdomain)
    names: set[str] = set()
    for i, driver in enumerate(node.spec.drivers):
        path = index("spec.drivers", i)
        errs += validate_csi_driver_name(driver.name, child(path, "name"))
        if not driver.node_id:
            errs.append(required(child(path, "nodeID")))
        if len(driver.node_id) > CSI_NODE_ID_MAX:
            errs.append(invalid(child(path, "nodeID"), driver.node_id, f"must be {CSI_NODE_ID_MAX} characters or less"))
        count = driver.allocatable.count if driver.allocatable is not None else None
        if count is not None and count < 0:
            errs.append(invalid(child(path, "allocatable", "count"), count, "must be greater than or equal to 0"))
        if driver.name in names:
            errs.append(duplicate(child(path, "name"), driver.name))
        names.add(driver.name)
        keys: set[str] = set()
        for topology_key in driver.topology_keys:
            if not topology_key:
                errs.append(required(path))
            if topology_key in keys:
                errs.append(duplicate(path, topology_key))
            keys.add(topology_key)
            errs += [invalid(path, topology_key, m) for m in _qualified_name(topology_key)]
    return errs


# ---------------------------------------------------------------- CSIDriver


@validator("CSIDriver")
def validate_csi_driver(driver: CSIDriver) -> list[FieldError]:
    errs = validate_object_meta(driver.metadata, False, name_is_dns_subdomain)
    spec = driver.spec
    if spec.fs_group_policy is not None and spec.fs_group_policy not in FS_GROUP_POLICIES:
        errs.append(not_supported("spec.fsGroupPolicy", spec.fs_group_policy, FS_GROUP_POLICIES))
    audiences: set[str] = set()
    for i, tr in enumerate(spec.token_requests):
        path = index("spec.tokenRequests", i)
        if tr.audience in audiences:
            errs.append(duplicate(child(path, "audience"), tr.audience))
            continue
        audiences.add(tr.audience)
        seconds = tr.expiration_seconds
        if seconds is None:
            continue
        if seconds < TOKEN_MIN_SECONDS:
            errs.append(
                invalid(child(path, "expirationSeconds"), seconds, "may not specify a duration less than 10 minutes")
            )
        if seconds > TOKEN_MAX_SECONDS:
            errs.append(
                invalid(
                    child(path, "expirationSeconds"), seconds, "may not specify a duration larger than 2^32 seconds"
                )
            )
    for mode in spec.volume_lifecycle_modes:
        if mode not in VOLUME_LIFECYCLE_MODES:
            errs.append(not_supported("spec.volumeLifecycleModes", mode, VOLUME_LIFECYCLE_MODES))
    return errs


# ---------------------------------------------------------------- CSIStorageCapacity


@validator("CSIStorageCapacity")
def validate_csi_storage_capacity(cap: CSIStorageCapacity) -> list[FieldError]:
    errs = validate_object_meta(cap.metadata, True, name_is_dns_subdomain)
    errs += validate_label_selector(cap.node_topology, "nodeTopology")
    errs += validate_class_name(cap.storage_class_name, "storageClassName")
    if cap.capacity is not None:
        try:
            negative = parse_quantity(cap.capacity) < 0
        except QuantityError:
            negative = False  # decoding reports it
        if negative:
            errs.append(invalid("capacity", canonical_text(cap.capacity), "must be greater than or equal to 0"))
    return errs


# ---------------------------------------------------------------- VolumeAttachment


@validator("VolumeAttachment")
def validate_volume_attachment(va: VolumeAttachment) -> list[FieldError]:
    """ValidateVolumeAttachment, then the extra checks of v1 (ValidateVolumeAttachmentV1)."""
    errs = validate_object_meta(va.metadata, False, name_is_dns_subdomain)
    spec = va.spec
    if not spec.attacher:
        errs.append(required("spec.attacher"))
    source = spec.source
    pv_name = source.persistent_volume_name
    if source.inline_volume_spec is None and pv_name is None:
        errs.append(required("spec.source", "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
    elif source.inline_volume_spec is not None and pv_name is not None:
        errs.append(forbidden("spec.source", "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
    elif pv_name is not None:
        if not pv_name:
            errs.append(required("spec.source.persistentVolumeName", "must specify non empty persistentVolumeName"))
    elif source.inline_volume_spec is not None:
        errs += validate_persistent_volume_spec(source.inline_volume_spec, "spec.source.inlineVolumeSpec", inline=True)
    errs += [invalid("spec.nodeName", spec.node_name, m) for m in name_is_dns_subdomain(spec.node_name, False)]
    errs += validate_csi_driver_name(spec.attacher, "spec.attacher")
    if pv_name is not None:
        errs += [invalid("spec.source.persistentVolumeName", pv_name, m) for m in name_is_dns_subdomain(pv_name, False)]
    return errs
