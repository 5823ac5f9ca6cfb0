"""In-tree to CSI volume translation (k8s.io/csi-translation-lib), for the in-tree sources the API models.

Since CSI migration is complete, in-tree GCE PD and AWS EBS volumes are
handled by their CSI drivers: NodeVolumeLimits counts them against the CSI
driver's limit, and VolumeBinding checks a migrated PV's node affinity in
CSI topology terms. Only what those two plugins read is translated: the
driver name, the volume handle and the PV's zone topology.
"""

from __future__ import annotations

from urllib.parse import urlparse

import msgspec

from kubesched.api.core import (
    CSIPersistentVolumeSource,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PersistentVolume,
    Volume,
    VolumeNodeAffinity,
)
from kubesched.api.storage import CSINode
from kubesched.plugins.volumebinding.pv_util import MIGRATED_PLUGINS_ANNOTATION

GCE_PD_PLUGIN = "kubernetes.io/gce-pd"
GCE_PD_DRIVER = "pd.csi.storage.gke.io"
GCE_PD_TOPOLOGY_KEY = "topology.gke.io/zone"
AWS_EBS_PLUGIN = "kubernetes.io/aws-ebs"
AWS_EBS_DRIVER = "ebs.csi.aws.com"
AWS_EBS_TOPOLOGY_KEY = "topology.ebs.csi.aws.com/zone"
AZURE_DISK_PLUGIN = "kubernetes.io/azure-disk"
AZURE_DISK_DRIVER = "disk.csi.azure.com"
AZURE_FILE_PLUGIN = "kubernetes.io/azure-file"
AZURE_FILE_DRIVER = "file.csi.azure.com"
CINDER_PLUGIN = "kubernetes.io/cinder"
CINDER_DRIVER = "cinder.csi.openstack.org"
VSPHERE_PLUGIN = "kubernetes.io/vsphere-volume"
VSPHERE_DRIVER = "csi.vsphere.vmware.com"
PORTWORX_PLUGIN = "kubernetes.io/portworx-volume"
PORTWORX_DRIVER = "pxd.portworx.com"

# In-tree plugin -> CSI driver, for every plugin the library knows.
CSI_DRIVER_OF: dict[str, str] = {
    GCE_PD_PLUGIN: GCE_PD_DRIVER,
    AWS_EBS_PLUGIN: AWS_EBS_DRIVER,
    AZURE_DISK_PLUGIN: AZURE_DISK_DRIVER,
    AZURE_FILE_PLUGIN: AZURE_FILE_DRIVER,
    CINDER_PLUGIN: CINDER_DRIVER,
    VSPHERE_PLUGIN: VSPHERE_DRIVER,
    PORTWORX_PLUGIN: PORTWORX_DRIVER,
}

# Plugins whose migration NodeVolumeLimits honours (isCSIMigrationOn; Portworx migration is on in 1.34).
_LIMITS_MIGRATED = frozenset((AWS_EBS_PLUGIN, GCE_PD_PLUGIN, AZURE_DISK_PLUGIN, CINDER_PLUGIN, PORTWORX_PLUGIN))
# Plugins whose migration VolumeBinding honours (isCSIMigrationOnForPlugin).
_BINDING_MIGRATED = _LIMITS_MIGRATED

_UNSPECIFIED = "UNSPECIFIED"
_ZONE_GA = "topology.kubernetes.io/zone"
_ZONE_BETA = "failure-domain.beta.kubernetes.io/zone"
_REGION_GA = "topology.kubernetes.io/region"
_REGION_BETA = "failure-domain.beta.kubernetes.io/region"


class TranslationError(ValueError):
    """A volume the library cannot translate (e.g. a regional GCE PD with zones in several regions)."""


# ---------------------------------------------------------------- plugin names


def plugin_name_of_pv(pv: PersistentVolume) -> str:
    """GetInTreePluginNameFromSpec for a PV; "" when it is not a migratable in-tree volume."""
    if pv.spec.gce_persistent_disk is not None:
        return GCE_PD_PLUGIN
    if pv.spec.aws_elastic_block_store is not None:
        return AWS_EBS_PLUGIN
    return ""


def plugin_name_of_volume(vol: Volume) -> str:
    """GetInTreePluginNameFromSpec for an inline volume; "" when it is not migratable."""
    if vol.gce_persistent_disk is not None:
        return GCE_PD_PLUGIN
    if vol.aws_elastic_block_store is not None:
        return AWS_EBS_PLUGIN
    return ""


def is_pv_migratable(pv: PersistentVolume) -> bool:
    return bool(plugin_name_of_pv(pv))


def is_inline_migratable(vol: Volume) -> bool:
    return bool(plugin_name_of_volume(vol))


def is_migratable_plugin(name: str) -> bool:
    """IsMigratableIntreePluginByName."""
    return name in CSI_DRIVER_OF


def csi_name_of(plugin: str) -> str:
    """GetCSINameFromInTreeName."""
    try:
        return CSI_DRIVER_OF[plugin]
    except KeyError:
        raise TranslationError(f"could not find CSI Driver name for plugin {plugin}") from None


def is_migration_on_for_limits(csi_node: CSINode | None, plugin: str) -> bool:
    """nodevolumelimits.isCSIMigrationOn: migration is complete for these plugins; a CSINode must exist."""
    return csi_node is not None and bool(plugin) and plugin in _LIMITS_MIGRATED


def is_plugin_migrated_on_node(plugin: str, csi_node: CSINode | None) -> bool:
    """volumebinding.isPluginMigratedToCSIOnNode: the CSINode's migrated-plugins annotation lists it."""
    if plugin not in _BINDING_MIGRATED or csi_node is None:
        return False
    mpa = csi_node.metadata.annotations.get(MIGRATED_PLUGINS_ANNOTATION, "")
    return plugin in (mpa.split(",") if mpa else [])


# ---------------------------------------------------------------- volume handles


def _ebs_volume_id(volume_id: str) -> str:
    """KubernetesVolumeIDToEBSVolumeID: aws://<zone>/<id> -> <id>."""
    if not volume_id.startswith("aws://"):
        return volume_id
    url = urlparse(volume_id)
    aws_id = url.path
    if len(aws_id) > 1 and aws_id[0] == "/":
        aws_id = aws_id[1:]
    if len(aws_id) < 1 or "/" in aws_id:
        raise TranslationError(f"Invalid format for AWS volume ({volume_id})")
    return aws_id


def _zones_label(pv: PersistentVolume) -> str:
    labels = pv.metadata.labels
    return labels.get(_ZONE_BETA) or labels.get(_ZONE_GA, "")


def _region_from_zones(zones: list[str]) -> str:
    regions = set()
    for zone in zones:
        parts = zone.split("-")
        if len(parts) != 3:
            raise TranslationError(f"zone in unexpected format, expected: {{locale}}-{{region}}-{{zone}}, got: {zone}")
        regions.add("-".join(parts[:2]))
    if len(regions) != 1:
        raise TranslationError(f"multiple or no regions gotten from zones, got: {sorted(regions)}")
    return regions.pop()


def inline_volume_handle(vol: Volume) -> tuple[str, str]:
    """(driver, volume handle) of a migratable inline volume (TranslateInTreeInlineVolumeToCSI)."""
    if vol.gce_persistent_disk is not None:
        return GCE_PD_DRIVER, f"projects/{_UNSPECIFIED}/zones/{_UNSPECIFIED}/disks/{vol.gce_persistent_disk.pd_name}"
    if vol.aws_elastic_block_store is not None:
        return AWS_EBS_DRIVER, _ebs_volume_id(vol.aws_elastic_block_store.volume_id)
    raise TranslationError(f"volume {vol.name} is not a migratable in-tree volume")


def pv_csi_source(pv: PersistentVolume) -> CSIPersistentVolumeSource:
    """The CSI source TranslateInTreePVToCSI gives a migratable PV."""
    gce = pv.spec.gce_persistent_disk
    if gce is not None:
        zones = _zones_label(pv).split("__")
        if len(zones) == 1 and zones[0]:
            handle = f"projects/{_UNSPECIFIED}/zones/{zones[0]}/disks/{gce.pd_name}"
        elif len(zones) > 1:
            handle = f"projects/{_UNSPECIFIED}/regions/{_region_from_zones(zones)}/disks/{gce.pd_name}"
        else:
            handle = f"projects/{_UNSPECIFIED}/zones/{_UNSPECIFIED}/disks/{gce.pd_name}"
        return CSIPersistentVolumeSource(driver=GCE_PD_DRIVER, volume_handle=handle, read_only=gce.read_only)
    ebs = pv.spec.aws_elastic_block_store
    if ebs is not None:
        return CSIPersistentVolumeSource(
            driver=AWS_EBS_DRIVER, volume_handle=_ebs_volume_id(ebs.volume_id), read_only=ebs.read_only
        )
    raise TranslationError(f"pv {pv.metadata.name} is not a migratable in-tree volume")


# ---------------------------------------------------------------- topology


def _topology_values(pv: PersistentVolume, key: str) -> list[str]:
    aff = pv.spec.node_affinity
    if aff is None or aff.required is None:
        return []
    out: list[str] = []
    for term in aff.required.node_selector_terms:
        for r in term.match_expressions:
            if r.key == key:
                out.extend(r.values)
    return out


def _topology_labels(pv: PersistentVolume) -> tuple[str, str]:
    """getTopologyLabel: the beta zone/region keys when the PV uses them, else the GA ones."""
    if _topology_values(pv, _ZONE_BETA) or _topology_values(pv, _REGION_BETA):
        return _ZONE_BETA, _REGION_BETA
    labels = pv.metadata.labels
    if _ZONE_BETA in labels or _REGION_BETA in labels:
        return _ZONE_BETA, _REGION_BETA
    return _ZONE_GA, _REGION_GA


def _replace_key(pv: PersistentVolume, old: str, new: str) -> PersistentVolume:
    aff = pv.spec.node_affinity
    assert aff is not None and aff.required is not None
    terms = []
    for term in aff.required.node_selector_terms:
        exprs = [msgspec.structs.replace(r, key=new) if r.key == old else r for r in term.match_expressions]
        terms.append(msgspec.structs.replace(term, match_expressions=exprs))
    required = msgspec.structs.replace(aff.required, node_selector_terms=terms)
    return msgspec.structs.replace(
        pv, spec=msgspec.structs.replace(pv.spec, node_affinity=VolumeNodeAffinity(required=required))
    )


def _add_topology(pv: PersistentVolume, key: str, zones: list[str]) -> PersistentVolume:
    zones = sorted({z.strip() for z in zones if z.strip()})
    if not zones:
        return pv
    req = NodeSelectorRequirement(key=key, operator="In", values=zones)
    aff = pv.spec.node_affinity
    terms = list(aff.required.node_selector_terms) if aff is not None and aff.required is not None else []
    if not terms:
        terms = [NodeSelectorTerm()]
    terms = [msgspec.structs.replace(t, match_expressions=[*t.match_expressions, req]) for t in terms]
    selector = NodeSelector(node_selector_terms=terms)
    return msgspec.structs.replace(
        pv, spec=msgspec.structs.replace(pv.spec, node_affinity=VolumeNodeAffinity(required=selector))
    )


def _translate_topology(pv: PersistentVolume, csi_key: str) -> PersistentVolume:
    """translateTopologyFromInTreeToCSI: zone affinity (or zone labels) become the driver's topology key."""
    zone_label, region_label = _topology_labels(pv)
    if _topology_values(pv, zone_label):
        pv = _replace_key(pv, zone_label, csi_key)
    elif zone_label in pv.metadata.labels:
        pv = _add_topology(pv, csi_key, pv.metadata.labels[zone_label].split("__"))
    if region_label == _REGION_BETA and _topology_values(pv, region_label):
        pv = _replace_key(pv, region_label, _REGION_GA)
    return pv


def translate_pv(pv: PersistentVolume) -> PersistentVolume:
    """TranslateInTreePVToCSI, as far as the scheduler reads the result (source and node affinity)."""
    source = pv_csi_source(pv)
    key = GCE_PD_TOPOLOGY_KEY if pv.spec.gce_persistent_disk is not None else AWS_EBS_TOPOLOGY_KEY
    pv = _translate_topology(pv, key)
    spec = msgspec.structs.replace(pv.spec, gce_persistent_disk=None, aws_elastic_block_store=None, csi=source)
    return msgspec.structs.replace(pv, spec=spec)
