"""A pod's volumes (core validation's ValidateVolumes), for the sources the scheduler reads.

Every volume needs a unique DNS-label name. Of the volume sources, those the scheduler's volume
plugins read are checked: persistentVolumeClaim, ephemeral, csi, gcePersistentDisk,
awsElasticBlockStore, rbd and iscsi. "More than 1 volume type" is reported among these sources
only, since the others are not decoded. (A volume with no source at all is valid: the API server
defaults it to an emptyDir.)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from kubesched.api.core import (
    AWSElasticBlockStoreVolumeSource,
    CSIVolumeSource,
    EphemeralVolumeSource,
    GCEPersistentDiskVolumeSource,
    ISCSIVolumeSource,
    PersistentVolumeClaimSpec,
    PersistentVolumeClaimVolumeSource,
    RBDVolumeSource,
    Volume,
)
from kubesched.api.meta import ObjectMeta
from kubesched.api.validation.meta import (
    name_is_dns_label,
    name_is_dns_subdomain,
    validate_template_object_meta,
)
from kubesched.api.validation.volumes import validate_persistent_volume_claim_spec
from kubesched.gocompat.field import FieldError, duplicate, forbidden, index, invalid, required, too_long
from kubesched.gocompat.names import is_dns1123_subdomain
from kubesched.gocompat.strconv import go_quote

_PARTITION_RANGE = "must be between 1 and 255, inclusive"
_IQN = re.compile(r"iqn\.[0-9]{4}-[0-9]{2}\.([A-Za-z0-9.-]+)(:[^,;*&$|\t\n\f\r ]+)\Z")
_EUI = re.compile(r"eui.[A-Za-z0-9]{16}\Z")
_NAA = re.compile(r"naa.[A-Za-z0-9]{32}\Z")


def _gce_pd(src: GCEPersistentDiskVolumeSource, path: str) -> list[FieldError]:
    errs = [required(path + ".pdName")] if not src.pd_name else []
    if not 0 <= src.partition <= 255:
        errs.append(invalid(path + ".partition", src.partition, _PARTITION_RANGE))
    return errs


def _aws_ebs(src: AWSElasticBlockStoreVolumeSource, path: str) -> list[FieldError]:
    errs = [required(path + ".volumeID")] if not src.volume_id else []
    if not 0 <= src.partition <= 255:
        errs.append(invalid(path + ".partition", src.partition, _PARTITION_RANGE))
    return errs


def _iscsi(src: ISCSIVolumeSource, path: str) -> list[FieldError]:
    errs = [required(path + ".targetPortal")] if not src.target_portal else []
    iqn = src.iqn
    if not iqn:
        errs.append(required(path + ".iqn"))
    elif not iqn.startswith(("iqn", "eui", "naa")):
        errs.append(invalid(path + ".iqn", iqn, "must be valid format starting with iqn, eui, or naa"))
    elif not (_IQN if iqn.startswith("iqn") else _EUI if iqn.startswith("eui") else _NAA).search(iqn):
        errs.append(invalid(path + ".iqn", iqn, "must be valid format"))
    if not 0 <= src.lun <= 255:
        errs.append(invalid(path + ".lun", src.lun, "must be between 0 and 255, inclusive"))
    return errs


def _pvc(src: PersistentVolumeClaimVolumeSource, path: str) -> list[FieldError]:
    return [required(path + ".claimName")] if not src.claim_name else []


def _rbd(src: RBDVolumeSource, path: str) -> list[FieldError]:
    errs = [required(path + ".monitors")] if not src.monitors else []
    if not src.image:
        errs.append(required(path + ".image"))
    return errs


def validate_csi_driver_name(driver: str, path: str) -> list[FieldError]:
    """ValidateCSIDriverName: a DNS subdomain (compared in lower case) of at most 63 characters."""
    errs = [required(path)] if not driver else []
    if len(driver) > 63:
        errs.append(too_long(path, 63))
    errs += [invalid(path, driver, m) for m in is_dns1123_subdomain(driver.lower())]
    return errs


def _csi(src: CSIVolumeSource, path: str) -> list[FieldError]:
    return validate_csi_driver_name(src.driver, path + ".driver")


def _claim_spec(spec: PersistentVolumeClaimSpec | None, path: str) -> list[FieldError]:
    """ValidatePersistentVolumeClaimSpec on a claim template (a missing spec is an empty one)."""
    return validate_persistent_volume_claim_spec(spec or PersistentVolumeClaimSpec(), path)


def _ephemeral(src: EphemeralVolumeSource, path: str, vol_name: str, meta: ObjectMeta | None) -> list[FieldError]:
    tpl = src.volume_claim_template
    if tpl is None:
        errs = [required(path + ".ephemeral.volumeClaimTemplate")]
    else:
        tpath = path + ".ephemeral.volumeClaimTemplate"
        errs = validate_template_object_meta(tpl.metadata, tpath + ".metadata") + _claim_spec(tpl.spec, tpath + ".spec")
    if meta is not None and meta.name and vol_name:
        # The claim the ephemeral volume controller will create: <pod name>-<volume name>.
        pvc = f"{meta.name}-{vol_name}"
        errs += [
            invalid(path + ".name", vol_name, f"PVC name {go_quote(pvc)}: {m}")
            for m in name_is_dns_subdomain(pvc, False)
        ]
    return errs


# The decoded sources in upstream's order: attribute, field name, the name its contents are reported
# under (upstream says "persistentDisk" for gcePersistentDisk) and the check of those contents.
_SOURCES: tuple[tuple[str, str, str, Callable[[Any, str], list[FieldError]] | None], ...] = (
    ("gce_persistent_disk", "gcePersistentDisk", "persistentDisk", _gce_pd),
    ("aws_elastic_block_store", "awsElasticBlockStore", "awsElasticBlockStore", _aws_ebs),
    ("iscsi", "iscsi", "iscsi", _iscsi),
    ("persistent_volume_claim", "persistentVolumeClaim", "persistentVolumeClaim", _pvc),
    ("rbd", "rbd", "rbd", _rbd),
    ("csi", "csi", "csi", _csi),
    ("ephemeral", "ephemeral", "ephemeral", None),
)


def _source_errors(vol: Volume, path: str, meta: ObjectMeta | None) -> list[FieldError]:
    """validateVolumeSource: the first source is checked, each further one is refused."""
    errs: list[FieldError] = []
    found = False
    for attr, name, contents, check in _SOURCES:
        src = getattr(vol, attr)
        if src is None:
            continue
        if found:
            errs.append(forbidden(f"{path}.{name}", "may not specify more than 1 volume type"))
            continue
        found = True
        errs += check(src, f"{path}.{contents}") if check is not None else _ephemeral(src, path, vol.name, meta)
    return errs


def validate_volumes(volumes: list[Volume], meta: ObjectMeta | None, path: str) -> list[FieldError]:
    """ValidateVolumes: valid sources, unique DNS-label names, no claim named like an ephemeral volume's."""
    errs: list[FieldError] = []
    names: set[str] = set()
    created: set[str] = set()
    if meta is not None and meta.name:
        created = {f"{meta.name}-{v.name}" for v in volumes if v.ephemeral is not None}
    for i, vol in enumerate(volumes):
        p = index(path, i)
        vol_errs = _source_errors(vol, p, meta)
        if not vol.name:
            vol_errs.append(required(p + ".name"))
        else:
            vol_errs += [invalid(p + ".name", vol.name, m) for m in name_is_dns_label(vol.name, False)]
        if vol.name in names:
            vol_errs.append(duplicate(p + ".name", vol.name))
        if vol_errs:
            errs += vol_errs
        else:
            names.add(vol.name)
        pvc = vol.persistent_volume_claim
        if pvc is not None and pvc.claim_name in created:
            errs.append(
                invalid(
                    p + ".persistentVolumeClaim.claimName",
                    pvc.claim_name,
                    "must not reference a PVC that gets created for an ephemeral volume",
                )
            )
    return errs
