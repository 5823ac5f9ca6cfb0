"""PV/PVC helpers the volume plugins share (component-helpers/storage/volume and storage/ephemeral).

They decide which PersistentVolume a claim may bind to (FindMatchingVolume:
the smallest available PV that satisfies the claim), whether a PV's node
affinity admits a node, and how the API server words a missing object.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any, NamedTuple

import msgspec

from kubesched.api.core import (
    NodeSelector,
    ObjectReference,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    Volume,
)
from kubesched.api.labels import NodeSelectorMatcher, Selector, SelectorError, label_selector
from kubesched.api.quantity import QuantityError, parse, parse_quantity
from kubesched.gocompat.strconv import go_quote

ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
MIGRATED_PLUGINS_ANNOTATION = "storage.alpha.kubernetes.io/migrated-plugins"

WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"
CLAIM_LOST = "Lost"
VOLUME_AVAILABLE = "Available"
VOLUME_BOUND = "Bound"
CLAIM_BOUND = "Bound"
FILESYSTEM = "Filesystem"

# GroupResources as the API server names them in NotFound errors.
GR_PVC = "persistentvolumeclaim"
GR_PV = "persistentvolume"
GR_STORAGE_CLASS = "storageclass.storage.k8s.io"
GR_CSI_NODE = "csinode.storage.k8s.io"
GR_CSI_DRIVER = "csidriver.storage.k8s.io"


class NotFoundError(LookupError):
    """apierrors.NewNotFound: its text is `<resource> "<name>" not found`."""

    def __init__(self, resource: str, name: str) -> None:
        super().__init__(f"{resource} {go_quote(name)} not found")
        self.resource = resource
        self.name = name

    def __str__(self) -> str:
        return str(self.args[0])


def get_or_raise(lister: Any, resource: str, key: str, name: str) -> Any:
    """A lister Get that fails as the informer lister does (NotFound with the object's name)."""
    obj = lister.get(key)
    if obj is None:
        raise NotFoundError(resource, name)
    return obj


def storage_quantity(resources: Mapping[str, Any]) -> Fraction:
    """The `storage` quantity of a ResourceList; zero when absent (Go's zero Quantity)."""
    raw = resources.get("storage")
    if raw is None:
        return Fraction(0)
    try:
        return parse_quantity(raw)
    except QuantityError:
        return Fraction(0)


def storage_value(resources: Mapping[str, Any]) -> int:
    """Quantity.Value() of the `storage` entry (Go's int64, overflow included); 0 when absent."""
    raw = resources.get("storage")
    if raw is None:
        return 0
    try:
        return parse(raw).value()
    except QuantityError:
        return 0


# ---------------------------------------------------------------- classes, modes, binding state


def claim_class(pvc: PersistentVolumeClaim) -> str:
    """GetPersistentVolumeClaimClass: the beta annotation first, then spec.storageClassName."""
    ann = pvc.metadata.annotations
    if ANN_BETA_STORAGE_CLASS in ann:
        return ann[ANN_BETA_STORAGE_CLASS]
    return pvc.spec.storage_class_name or ""


def volume_class(pv: PersistentVolume) -> str:
    """GetPersistentVolumeClass: the beta annotation first, then spec.storageClassName."""
    ann = pv.metadata.annotations
    if ANN_BETA_STORAGE_CLASS in ann:
        return ann[ANN_BETA_STORAGE_CLASS]
    return pv.spec.storage_class_name


def is_delay_binding_mode(pvc: PersistentVolumeClaim, classes: Any) -> bool:
    """IsDelayBindingMode: the claim's class waits for the first consumer. A missing class is not delayed."""
    name = claim_class(pvc)
    if not name:
        return False
    sc = classes.get(name)
    if sc is None:
        return False
    if sc.volume_binding_mode is None:
        raise ValueError(f"VolumeBindingMode not set for StorageClass {go_quote(name)}")
    return bool(sc.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER)


def is_pvc_fully_bound(pvc: PersistentVolumeClaim) -> bool:
    """Bound as the binder counts it: a volume name and the bind-completed annotation."""
    return bool(pvc.spec.volume_name) and ANN_BIND_COMPLETED in pvc.metadata.annotations


def is_volume_bound_to_claim(pv: PersistentVolume, pvc: PersistentVolumeClaim) -> bool:
    """IsVolumeBoundToClaim: claimRef names the claim (and its uid, when the ref has one)."""
    ref = pv.spec.claim_ref
    if ref is None:
        return False
    meta = pvc.metadata
    if meta.name != ref.name or meta.namespace != ref.namespace:
        return False
    return not (ref.uid and meta.uid != ref.uid)


def volume_mode_mismatch(pvc: PersistentVolumeClaim, pv: PersistentVolume) -> bool:
    """CheckVolumeModeMismatches: an unset mode means Filesystem on both sides."""
    return (pvc.spec.volume_mode or FILESYSTEM) != (pv.spec.volume_mode or FILESYSTEM)


def access_modes_satisfied(pvc: PersistentVolumeClaim, pv: PersistentVolume) -> bool:
    """CheckAccessModes: the PV offers every access mode the claim asks for."""
    offered = set(pv.spec.access_modes)
    return all(m in offered for m in pvc.spec.access_modes)


def claim_reference(pvc: PersistentVolumeClaim) -> ObjectReference:
    """reference.GetReference for a claim, as a PV's claimRef records it."""
    meta = pvc.metadata
    return ObjectReference(
        kind="PersistentVolumeClaim",
        namespace=meta.namespace,
        name=meta.name,
        uid=meta.uid,
        api_version="v1",
        resource_version=meta.resource_version,
    )


def bind_volume_to_claim(pv: PersistentVolume, pvc: PersistentVolumeClaim) -> tuple[PersistentVolume, bool]:
    """GetBindVolumeToClaim: the PV with claimRef set (and bound-by-controller), and whether it changed."""
    set_bound_by_controller = not is_volume_bound_to_claim(pv, pvc)
    dirty = False
    spec = pv.spec
    meta = pv.metadata
    ref = spec.claim_ref
    if (
        ref is None
        or ref.name != pvc.metadata.name
        or ref.namespace != pvc.metadata.namespace
        or ref.uid != pvc.metadata.uid
    ):
        spec = msgspec.structs.replace(spec, claim_ref=claim_reference(pvc))
        dirty = True
    if set_bound_by_controller and ANN_BOUND_BY_CONTROLLER not in meta.annotations:
        meta = msgspec.structs.replace(meta, annotations={**meta.annotations, ANN_BOUND_BY_CONTROLLER: "yes"})
        dirty = True
    return msgspec.structs.replace(pv, metadata=meta, spec=spec), dirty


# ---------------------------------------------------------------- node affinity


_MATCHERS: dict[int, tuple[Any, NodeSelectorMatcher]] = {}


def _matcher(required: NodeSelector) -> NodeSelectorMatcher:
    """Compiled node selectors, reused while the same object is in use (PVs are immutable structs)."""
    key = id(required)
    hit = _MATCHERS.get(key)
    if hit is not None and hit[0] is required:
        return hit[1]
    if len(_MATCHERS) > 4096:
        _MATCHERS.clear()
    m = NodeSelectorMatcher(required)
    _MATCHERS[key] = (required, m)
    return m


def check_node_affinity(pv: PersistentVolume, node_labels: Mapping[str, str]) -> bool:
    """CheckNodeAffinity: the PV's required node affinity matches a node with these labels (and no name)."""
    aff = pv.spec.node_affinity
    if aff is None or aff.required is None:
        return True
    return _matcher(aff.required).matches(node_labels, "")


# ---------------------------------------------------------------- FindMatchingVolume


class Candidate(NamedTuple):
    """A PV that passes every node-independent test of FindMatchingVolume for one claim."""

    pv: PersistentVolume
    qty: Fraction
    bound_to_claim: bool


def claim_candidates(
    pvc: PersistentVolumeClaim, volumes: Iterable[PersistentVolume], scheduler_path: bool = True
) -> list[Candidate]:
    """The PVs (in order) that FindMatchingVolume could return for the claim on some node.

    A PV pre-bound to the claim stops the scan (it is the answer, or nothing is).
    Raises ValueError for a claim selector that cannot be parsed (upstream's error text).
    """
    requested = storage_quantity(pvc.spec.resources.requests)
    requested_class = claim_class(pvc)
    claim_vac = pvc.spec.volume_attributes_class_name or ""
    selector: Selector | None = None
    if pvc.spec.selector is not None:
        try:
            selector = label_selector(pvc.spec.selector)
        except SelectorError as err:
            key = f"{pvc.metadata.namespace}/{pvc.metadata.name}"
            raise ValueError(f"error creating internal label selector for claim: {key}: {err}") from err
    out: list[Candidate] = []
    for pv in volumes:
        bound_to_claim = is_volume_bound_to_claim(pv, pvc)
        if pv.spec.claim_ref is not None and not bound_to_claim:
            continue
        qty = storage_quantity(pv.spec.capacity)
        if qty < requested:
            continue
        if volume_mode_mismatch(pvc, pv):
            continue
        # VolumeAttributesClass is GA (on) in 1.34: the classes must be equal.
        if claim_vac != (pv.spec.volume_attributes_class_name or ""):
            continue
        if pv.metadata.deletion_timestamp is not None:
            continue
        if bound_to_claim:
            out.append(Candidate(pv, qty, True))
            continue
        if pv.status.phase != VOLUME_AVAILABLE:
            continue
        if selector is not None and not selector.matches(pv.metadata.labels):
            continue
        if volume_class(pv) != requested_class:
            continue
        if scheduler_path and not access_modes_satisfied(pvc, pv):
            continue
        out.append(Candidate(pv, qty, False))
    return out


def pick_volume(
    candidates: Iterable[Candidate], node_labels: Mapping[str, str], excluded: Mapping[str, PersistentVolume]
) -> PersistentVolume | None:
    """FindMatchingVolume on one node: the pre-bound PV if it admits the node, else the smallest fitting one."""
    smallest: Candidate | None = None
    for c in candidates:
        if c.pv.metadata.name in excluded:
            continue
        ok = check_node_affinity(c.pv, node_labels)
        if c.bound_to_claim:
            return c.pv if ok else None
        if ok and (smallest is None or smallest.qty > c.qty):
            smallest = c
    return smallest.pv if smallest is not None else None


def find_matching_volume(
    pvc: PersistentVolumeClaim,
    volumes: Iterable[PersistentVolume],
    node_labels: Mapping[str, str],
    excluded: Mapping[str, PersistentVolume],
) -> PersistentVolume | None:
    """FindMatchingVolume, scheduler path: the PV pre-bound to the claim, else the smallest available match."""
    return pick_volume(claim_candidates(pvc, volumes), node_labels, excluded)


# ---------------------------------------------------------------- generic ephemeral volumes


def ephemeral_claim_name(pod: Pod, vol: Volume) -> str:
    """ephemeral.VolumeClaimName: <pod name>-<volume name>."""
    return f"{pod.metadata.name}-{vol.name}"


def check_ephemeral_owner(pod: Pod, pvc: PersistentVolumeClaim) -> str | None:
    """ephemeral.VolumeIsForPod: None when the pod controls the claim, else upstream's error text."""
    owned = pvc.metadata.namespace == pod.metadata.namespace and any(
        ref.controller and ref.uid == pod.metadata.uid for ref in pvc.metadata.owner_references
    )
    if owned:
        return None
    return (
        f"PVC {pvc.metadata.namespace}/{pvc.metadata.name} was not created for pod "
        f"{pod.metadata.namespace}/{pod.metadata.name} (pod is not owner)"
    )


def pod_claim_names(pod: Pod) -> list[tuple[str, bool]]:
    """The claims a pod's volumes use, in volume order: (claim name, is generic ephemeral)."""
    out: list[tuple[str, bool]] = []
    for vol in pod.spec.volumes:
        if vol.persistent_volume_claim is not None:
            out.append((vol.persistent_volume_claim.claim_name, False))
        elif vol.ephemeral is not None:
            out.append((ephemeral_claim_name(pod, vol), True))
    return out
