"""PersistentVolume and PersistentVolumeClaim as kube-apiserver validates them on create
(pkg/apis/core/validation: ValidatePersistentVolume, ValidatePersistentVolumeClaim).

Only the volume sources the scheduler reads (hostPath, local, csi, gcePersistentDisk,
awsElasticBlockStore) and nfs have their contents checked; every other source is only
counted, so that "exactly one volume source" is judged as upstream judges it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from fractions import Fraction
from functools import lru_cache
from typing import Any

from kubesched.api.core import (
    CSIPersistentVolumeSource,
    PersistentVolume,
    PersistentVolumeClaim,
    PersistentVolumeClaimSpec,
    PersistentVolumeSpec,
)
from kubesched.api.quantity import QuantityError, parse_quantity, parse_resource_quantity, shown
from kubesched.api.validation.meta import (
    name_is_dns_subdomain,
    validate_label_selector,
    validate_object_meta,
)
from kubesched.api.validation.node_selector import validate_node_selector
from kubesched.api.validation.registry import validator
from kubesched.gocompat.field import (
    FieldError,
    GoJSON,
    child,
    forbidden,
    invalid,
    key,
    not_supported,
    required,
    too_long,
)
from kubesched.gocompat.names import is_dns1123_subdomain

ACCESS_MODES = ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"]
_ACCESS_MODES = frozenset(ACCESS_MODES)
RECLAIM_POLICIES = ["Delete", "Recycle", "Retain"]
VOLUME_MODES = ["Block", "Filesystem"]
HOST_PATH_TYPES = ["", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"]

NOT_POSITIVE = "must be greater than zero"
PD_PARTITION = "must be between 1 and 255, inclusive"
CSI_DRIVER_NAME_MAX = 63

# The volume sources of a PersistentVolumeSpec in the order upstream tries them: (attribute, JSON
# name used in "may not specify more than 1 volume type"). flexVolume is never refused as a second
# source (upstream counts it without checking), cephfs is "cephFS" in that message.
_SOURCES = (
    ("host_path", "hostPath"),
    ("gce_persistent_disk", "gcePersistentDisk"),
    ("aws_elastic_block_store", "awsElasticBlockStore"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("nfs", "nfs"),
    ("rbd", "rbd"),
    ("quobyte", "quobyte"),
    ("cephfs", "cephFS"),
    ("iscsi", "iscsi"),
    ("cinder", "cinder"),
    ("fc", "fc"),
    ("flex_volume", ""),
    ("azure_file", "azureFile"),
    ("vsphere_volume", "vsphereVolume"),
    ("photon_persistent_disk", "photonPersistentDisk"),
    ("portworx_volume", "portworxVolume"),
    ("azure_disk", "azureDisk"),
    ("scale_io", "scaleIO"),
    ("local", "local"),
    ("storageos", "storageos"),
    ("csi", "csi"),
)

INLINE = "may not be specified in the context of inline volumes"


def _quantity(raw: Any) -> Fraction | None:
    """The value of a quantity as written (None if it does not parse: decoding reports that)."""
    try:
        return parse_quantity(raw)
    except QuantityError:
        return None


@lru_cache(maxsize=1 << 12)
def _positive(raw: Any) -> bool:
    """Whether a quantity is above zero (or unparsable: decoding reports that). Memoized: the same
    few sizes fill the volumes of a large scenario."""
    q = _quantity(raw)
    return q is None or q > 0


@lru_cache(maxsize=1 << 12)
def _csi_driver_name(name: str) -> tuple[str, ...]:
    """ValidateCSIDriverName's format messages (a DNS subdomain once lower-cased)."""
    return tuple(is_dns1123_subdomain(name.lower()))


def validate_csi_driver_name(name: str, path: str) -> list[FieldError]:
    """ValidateCSIDriverName: required, at most 63 bytes, a DNS subdomain (case-insensitively)."""
    errs: list[FieldError] = []
    if not name:
        errs.append(required(path))
    if len(name) > CSI_DRIVER_NAME_MAX:
        errs.append(too_long(path, CSI_DRIVER_NAME_MAX))
    errs += [invalid(path, name, m) for m in _csi_driver_name(name)]
    return errs


def validate_class_name(name: str, path: str) -> list[FieldError]:
    """ValidateClassName (a StorageClass or VolumeAttributesClass name): a DNS subdomain."""
    return [invalid(path, name, m) for m in name_is_dns_subdomain(name, False)]


def validate_access_modes(modes: list[str], path: str) -> list[FieldError]:
    """Each mode known; ReadWriteOncePod only alone."""
    errs: list[FieldError] = []
    rwop = other = False
    for mode in modes:
        if mode not in _ACCESS_MODES:
            errs.append(not_supported(path, mode, ACCESS_MODES))
        elif mode == "ReadWriteOncePod":
            rwop = True
        else:
            other = True
    if rwop and other:
        errs.append(forbidden(path, "may not use ReadWriteOncePod with other access modes"))
    return errs


def _no_backsteps(p: str, path: str) -> list[FieldError]:
    if ".." in p.replace("\\", "/").split("/"):
        return [invalid(path, p, "must not contain '..'")]
    return []


def _clean_path(p: str) -> str:
    """Go's path.Clean (POSIX normpath keeps a leading "//", Go does not)."""
    cleaned = posixpath.normpath(p) if p else "."
    return "/" + cleaned.lstrip("/") if cleaned.startswith("//") else cleaned


def _capacity_errors(capacity: Mapping[str, Any], path: str) -> list[FieldError]:
    """Only storage, and a positive amount of it."""
    errs: list[FieldError] = []
    if not capacity:
        errs.append(required(path))
    if "storage" not in capacity or len(capacity) > 1:
        printed = {k: shown(capacity[k]) for k in sorted(capacity)} if capacity else None
        errs.append(not_supported(path, GoJSON(printed), ["storage"]))
    for name in sorted(capacity) if len(capacity) > 1 else capacity:
        if _positive(capacity[name]):
            continue
        q = _quantity(capacity[name])
        assert q is not None
        if q < 0:
            errs.append(
                invalid(
                    key(path, name),
                    parse_resource_quantity(capacity[name]).value(),
                    "must be a valid resource quantity",
                )
            )
        if q <= 0:
            errs.append(invalid(key(path, name), shown(capacity[name]), NOT_POSITIVE))
    return errs


def _source_errors(spec: PersistentVolumeSpec, attr: str, path: str, node_affinity: bool) -> list[FieldError]:
    """The checks of one volume source (for the sources whose contents are checked)."""
    errs: list[FieldError] = []
    src = getattr(spec, attr)
    if attr == "host_path":
        if not src.path:
            return [required(child(path, "hostPath", "path"))]
        errs += _no_backsteps(src.path, child(path, "hostPath", "path"))
        if src.type is not None and src.type not in HOST_PATH_TYPES:
            errs.append(not_supported(child(path, "hostPath", "type"), src.type, HOST_PATH_TYPES))
    elif attr == "gce_persistent_disk":
        # Upstream names this source "persistentDisk" in its errors.
        if not src.pd_name:
            errs.append(required(child(path, "persistentDisk", "pdName")))
        if not 0 <= src.partition <= 255:
            errs.append(invalid(child(path, "persistentDisk", "partition"), src.partition, PD_PARTITION))
    elif attr == "aws_elastic_block_store":
        if not src.volume_id:
            errs.append(required(child(path, "awsElasticBlockStore", "volumeID")))
        if not 0 <= src.partition <= 255:
            errs.append(invalid(child(path, "awsElasticBlockStore", "partition"), src.partition, PD_PARTITION))
    elif attr == "nfs":
        if not src.server:
            errs.append(required(child(path, "nfs", "server")))
        if not src.path:
            errs.append(required(child(path, "nfs", "path")))
        if not src.path.startswith("/"):
            errs.append(invalid(child(path, "nfs", "path"), src.path, "must be an absolute path"))
    elif attr == "local":
        if not src.path:
            errs.append(required(child(path, "local", "path")))
        else:
            errs += _no_backsteps(src.path, child(path, "local", "path"))
        if not node_affinity:
            errs.append(required(child(path, "nodeAffinity"), "Local volume requires node affinity"))
    elif attr == "csi":
        errs += _csi_source_errors(src, child(path, "csi"))
    return errs


def _csi_source_errors(csi: CSIPersistentVolumeSource, path: str) -> list[FieldError]:
    errs = validate_csi_driver_name(csi.driver, child(path, "driver"))
    if not csi.volume_handle:
        errs.append(required(child(path, "volumeHandle")))
    return errs


def validate_persistent_volume_spec(spec: PersistentVolumeSpec, path: str, inline: bool = False) -> list[FieldError]:
    """ValidatePersistentVolumeSpec; `inline` for a VolumeAttachment's inlineVolumeSpec."""
    errs: list[FieldError] = []
    if inline:
        if spec.claim_ref is not None:
            errs.append(forbidden(child(path, "claimRef"), INLINE))
        if spec.capacity:
            errs.append(forbidden(child(path, "capacity"), INLINE))
        if spec.csi is None:
            errs.append(required(child(path, "csi"), "has to be specified in the context of inline volumes"))
    if not spec.access_modes:
        errs.append(required(child(path, "accessModes")))
    errs += validate_access_modes(spec.access_modes, child(path, "accessModes"))
    if not inline:
        errs += _capacity_errors(spec.capacity, child(path, "capacity"))
    policy = spec.persistent_volume_reclaim_policy
    if policy:
        if inline:
            if policy != "Retain":
                errs.append(
                    forbidden(
                        child(path, "persistentVolumeReclaimPolicy"),
                        "may only be Retain in the context of inline volumes",
                    )
                )
        elif policy not in RECLAIM_POLICIES:
            errs.append(not_supported(child(path, "persistentVolumeReclaimPolicy"), policy, RECLAIM_POLICIES))
    node_affinity = False
    if spec.node_affinity is not None:
        if inline:
            errs.append(forbidden(child(path, "nodeAffinity"), INLINE))
        else:
            node_affinity = True
            required_terms = spec.node_affinity.required
            if required_terms is None:
                errs.append(required(child(path, "nodeAffinity", "required"), "must specify required node constraints"))
            else:
                errs += validate_node_selector(required_terms, child(path, "nodeAffinity", "required"))
    count = 0
    for attr, name in _SOURCES:
        if getattr(spec, attr) is None:
            continue
        if count and name:
            errs.append(forbidden(child(path, name), "may not specify more than 1 volume type"))
            continue
        count += 1
        errs += _source_errors(spec, attr, path, node_affinity)
    if count == 0:
        errs.append(required(path, "must specify a volume type"))
    if spec.host_path is not None and policy == "Recycle" and _clean_path(spec.host_path.path) == "/":
        errs.append(
            forbidden(child(path, "persistentVolumeReclaimPolicy"), "may not be 'recycle' for a hostPath mount of '/'")
        )
    if spec.storage_class_name:
        if inline:
            errs.append(forbidden(child(path, "storageClassName"), INLINE))
        else:
            errs += validate_class_name(spec.storage_class_name, child(path, "storageClassName"))
    if spec.volume_mode is not None:
        if inline:
            if spec.volume_mode != "Filesystem":
                errs.append(
                    forbidden(
                        child(path, "volumeMode"),
                        "may not specify volumeMode other than Filesystem in the context of inline volumes",
                    )
                )
        elif spec.volume_mode not in VOLUME_MODES:
            errs.append(not_supported(child(path, "volumeMode"), spec.volume_mode, VOLUME_MODES))
    vac = spec.volume_attributes_class_name
    if vac is not None and not inline:  # the feature is off for inline specs (no options there)
        if not vac:
            errs.append(required(child(path, "volumeAttributesClassName"), "an empty string is disallowed"))
        else:
            errs += validate_class_name(vac, child(path, "volumeAttributesClassName"))
        if spec.csi is None:
            errs.append(required(child(path, "csi"), "has to be specified when using volumeAttributesClassName"))
    return errs


@validator("PersistentVolume")
def validate_persistent_volume(pv: PersistentVolume) -> list[FieldError]:
    errs = validate_object_meta(pv.metadata, False, name_is_dns_subdomain)
    return errs + validate_persistent_volume_spec(pv.spec, "spec")


@validator("PersistentVolumeClaim")
def validate_persistent_volume_claim(pvc: PersistentVolumeClaim) -> list[FieldError]:
    """ValidatePersistentVolumeClaim on create (dataSource and dataSourceRef are not checked)."""
    errs = validate_object_meta(pvc.metadata, True, name_is_dns_subdomain)
    return errs + validate_persistent_volume_claim_spec(pvc.spec, "spec")


def validate_persistent_volume_claim_spec(spec: PersistentVolumeClaimSpec, path: str) -> list[FieldError]:
    """ValidatePersistentVolumeClaimSpec: a claim's, or a claim template's (ephemeral volumes, StatefulSets)."""
    errs: list[FieldError] = []
    if not spec.access_modes:
        errs.append(required(f"{path}.accessModes", "at least 1 access mode is required"))
    if spec.selector is not None:
        errs += validate_label_selector(spec.selector, f"{path}.selector")
    errs += validate_access_modes(spec.access_modes, f"{path}.accessModes")
    # Upstream keys the storage request on spec.resources, not spec.resources.requests.
    storage = spec.resources.requests.get("storage")
    if storage is None:
        errs.append(required(f"{path}.resources[storage]"))
    elif not _positive(storage):
        errs.append(invalid(f"{path}.resources[storage]", shown(storage), NOT_POSITIVE))
    if spec.storage_class_name:
        errs += validate_class_name(spec.storage_class_name, f"{path}.storageClassName")
    if spec.volume_mode is not None and spec.volume_mode not in VOLUME_MODES:
        errs.append(not_supported(f"{path}.volumeMode", spec.volume_mode, VOLUME_MODES))
    if spec.volume_attributes_class_name:
        errs += validate_class_name(spec.volume_attributes_class_name, f"{path}.volumeAttributesClassName")
    return errs
