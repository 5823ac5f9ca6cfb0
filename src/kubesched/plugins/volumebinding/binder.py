"""The scheduler's volume binder (volumebinding/binder.go).

Per pod it sorts the claims into bound, unbound-delayed (WaitForFirstConsumer)
and unbound-immediate; per node it checks bound PVs' node affinity and finds,
for each delayed claim, the smallest matching available PV or else whether the
claim's class can provision there. Reserve assumes the choice in the assume
caches; PreBind writes it through the API.

There is no PV controller in the embedded cluster: after the scheduler's own
writes, `bind_pod_volumes` completes a static binding the way the controller
would (PV and claim Bound, claim.spec.volumeName, bind-completed annotation),
so that the next pods see the claim bound. A claim sent to dynamic
provisioning keeps only the selected-node annotation (nothing provisions it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from kubesched.api.core import Node, PersistentVolume, PersistentVolumeClaim, Pod, Volume
from kubesched.api.labels import Requirement, Selector, SelectorError, label_selector
from kubesched.api.quantity import Quantity, QuantityError, parse
from kubesched.api.storage import CSINode, CSIStorageCapacity, StorageClass, TopologySelectorTerm
from kubesched.gocompat.strconv import go_quote
from kubesched.plugins.volumebinding import csi_translation as trans
from kubesched.plugins.volumebinding.assume_cache import AssumeCache, ObjectNotFoundError
from kubesched.plugins.volumebinding.pv_util import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    CLAIM_BOUND,
    NOT_SUPPORTED_PROVISIONER,
    VOLUME_BOUND,
    Candidate,
    bind_volume_to_claim,
    check_ephemeral_owner,
    check_node_affinity,
    claim_candidates,
    claim_class,
    ephemeral_claim_name,
    is_delay_binding_mode,
    is_pvc_fully_bound,
    pick_volume,
    storage_quantity,
    storage_value,
    volume_class,
)

ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"


class BinderError(RuntimeError):
    """An error the binder returns (upstream's error text), turned into an Error status by the plugin."""


@dataclass(slots=True)
class BindingInfo:
    """A claim and the PV chosen for it."""

    pvc: PersistentVolumeClaim
    pv: PersistentVolume

    def storage_class_name(self) -> str:
        return self.pv.spec.storage_class_name

    def storage_resource(self) -> tuple[int, int]:
        """(requested, capacity) in bytes, as the capacity scorer reads them."""
        return storage_value(self.pvc.spec.resources.requests), storage_value(self.pv.spec.capacity)


@dataclass(slots=True)
class DynamicProvision:
    """A claim to provision on the node, with the CSIStorageCapacity that admitted it (if checked)."""

    pvc: PersistentVolumeClaim
    node_capacity: CSIStorageCapacity | None = None


@dataclass(slots=True)
class PodVolumes:
    """The binding decision for one node: static bindings and claims to provision (None when none)."""

    static_bindings: list[BindingInfo] | None = None
    dynamic_provisions: list[DynamicProvision] | None = None


@dataclass(slots=True)
class PodVolumeClaims:
    """A pod's claims by state, and the PVs of each delayed claim's class (listed once per cycle)."""

    bound_claims: list[PersistentVolumeClaim] = field(default_factory=list)
    unbound_claims_delay_binding: list[PersistentVolumeClaim] = field(default_factory=list)
    unbound_claims_immediate: list[PersistentVolumeClaim] = field(default_factory=list)
    unbound_volumes_delay_binding: dict[str, list[PersistentVolume]] = field(default_factory=dict)
    # Per delayed claim, the PVs that pass the node-independent tests (computed on the first node).
    candidates: dict[str, list[Candidate]] = field(default_factory=dict)


def _pvc_key(pvc: PersistentVolumeClaim) -> str:
    return f"{pvc.metadata.namespace}/{pvc.metadata.name}"


def _conflict(resource: str, name: str) -> BinderError:
    return BinderError(
        f"Operation cannot be fulfilled on {resource} {go_quote(name)}: the object has been modified; "
        "please apply your changes to the latest version and try again"
    )


def match_topology_selector_terms(terms: list[TopologySelectorTerm], labels: dict[str, str]) -> bool:
    """v1helper.MatchTopologySelectorTerms: no terms match everything; an empty or invalid term matches nothing."""
    if not terms:
        return True
    for term in terms:
        if not term.match_label_expressions:
            continue
        if any(not e.values for e in term.match_label_expressions):
            continue
        reqs = tuple(Requirement(e.key, "In", frozenset(e.values)) for e in term.match_label_expressions)
        if Selector(reqs).matches(labels):
            return True
    return False


def volume_limit(capacity: CSIStorageCapacity) -> Quantity | None:
    """The largest volume a CSIStorageCapacity admits: maximumVolumeSize, else capacity."""
    raw = capacity.maximum_volume_size if capacity.maximum_volume_size is not None else capacity.capacity
    if raw is None:
        return None
    try:
        return parse(raw)
    except QuantityError:
        return None


class VolumeBinder:
    """SchedulerVolumeBinder over the cluster's listers and the API client."""

    def __init__(self, lister: Callable[[str], Any], client: Any) -> None:
        self._lister = lister
        self._client = client
        self.pvc_cache = AssumeCache(lambda: lister("PersistentVolumeClaim"), "v1.PersistentVolumeClaim", _pvc_key)
        self.pv_cache = AssumeCache(
            lambda: lister("PersistentVolume"), "v1.PersistentVolume", lambda pv: pv.metadata.name, volume_class
        )

    # ------------------------------------------------------------ claims of a pod

    def _is_pvc_bound(self, namespace: str, name: str) -> tuple[bool, PersistentVolumeClaim]:
        key = f"{namespace}/{name}"
        try:
            pvc = self.pvc_cache.get(key)
        except ObjectNotFoundError as err:
            raise BinderError(f"error getting PVC {go_quote(key)}: {err}") from err
        return is_pvc_fully_bound(pvc), pvc

    def is_volume_bound(self, pod: Pod, vol: Volume) -> tuple[bool, PersistentVolumeClaim | None]:
        """A non-claim volume counts as bound; a claim is bound when fully bound to its PV."""
        if vol.persistent_volume_claim is not None:
            return self._is_pvc_bound(pod.metadata.namespace, vol.persistent_volume_claim.claim_name)
        if vol.ephemeral is not None:
            bound, pvc = self._is_pvc_bound(pod.metadata.namespace, ephemeral_claim_name(pod, vol))
            msg = check_ephemeral_owner(pod, pvc)
            if msg is not None:
                raise BinderError(msg)
            return bound, pvc
        return True, None

    def are_pod_volumes_bound(self, pod: Pod) -> bool:
        for vol in pod.spec.volumes:
            try:
                bound, _ = self.is_volume_bound(pod, vol)
            except BinderError:
                return False
            if not bound:
                return False
        return True

    def get_pod_volume_claims(self, pod: Pod) -> PodVolumeClaims:
        """GetPodVolumeClaims: the pod's claims by binding state, and the candidate PVs of delayed ones."""
        out = PodVolumeClaims()
        classes = self._lister("StorageClass")
        for vol in pod.spec.volumes:
            bound, pvc = self.is_volume_bound(pod, vol)
            if pvc is None:
                continue
            if bound:
                out.bound_claims.append(pvc)
                continue
            try:
                delayed = is_delay_binding_mode(pvc, classes)
            except ValueError as err:
                raise BinderError(str(err)) from err
            if delayed and not pvc.spec.volume_name:
                out.unbound_claims_delay_binding.append(pvc)
            else:
                # Claims pre-bound to a PV (volumeName set) also wait for the PV controller.
                out.unbound_claims_immediate.append(pvc)
        for pvc in out.unbound_claims_delay_binding:
            cls = claim_class(pvc)
            out.unbound_volumes_delay_binding[cls] = self.pv_cache.list(cls)
        return out

    # ------------------------------------------------------------ per node

    def csi_node(self, node_name: str) -> CSINode | None:
        return self._lister("CSINode").get(node_name)

    def _translate(self, pv: PersistentVolume, csi_node: CSINode | None) -> PersistentVolume:
        """tryTranslatePVToCSI: a migratable in-tree PV, on a node that migrated its plugin, in CSI terms."""
        plugin = trans.plugin_name_of_pv(pv)
        if not plugin or not trans.is_plugin_migrated_on_node(plugin, csi_node):
            return pv
        try:
            return trans.translate_pv(pv)
        except trans.TranslationError as err:
            raise BinderError(f"could not translate pv: {err}") from err

    def check_bound_claims(self, claims: list[PersistentVolumeClaim], node: Node) -> tuple[bool, bool]:
        """(bound PVs' node affinity satisfied, every bound PV exists)."""
        csi_node = self.csi_node(node.metadata.name)
        labels = node.metadata.labels
        for pvc in claims:
            try:
                pv = self.pv_cache.get(pvc.spec.volume_name)
            except ObjectNotFoundError:
                return True, False
            pv = self._translate(pv, csi_node)
            if not check_node_affinity(pv, labels):
                return False, True
        return True, True

    def find_matching_volumes(
        self, claims: list[PersistentVolumeClaim], pod_claims: PodVolumeClaims, node: Node
    ) -> tuple[bool, list[BindingInfo], list[PersistentVolumeClaim]]:
        """Smallest claims first, each takes the smallest fitting PV not already chosen for this pod."""
        ordered = sorted(claims, key=lambda c: storage_quantity(c.spec.resources.requests))
        chosen: dict[str, PersistentVolume] = {}
        bindings: list[BindingInfo] = []
        unbound: list[PersistentVolumeClaim] = []
        found = True
        labels = node.metadata.labels
        for pvc in ordered:
            key = _pvc_key(pvc)
            candidates = pod_claims.candidates.get(key)
            if candidates is None:
                pvs = pod_claims.unbound_volumes_delay_binding.get(claim_class(pvc), [])
                try:
                    candidates = claim_candidates(pvc, pvs)
                except ValueError as err:
                    raise BinderError(str(err)) from err
                pod_claims.candidates[key] = candidates
            pv = pick_volume(candidates, labels, chosen)
            if pv is None:
                unbound.append(pvc)
                found = False
                continue
            chosen[pv.metadata.name] = pv
            bindings.append(BindingInfo(pvc=pvc, pv=pv))
        return found, bindings, unbound

    def check_volume_provisions(
        self, claims: list[PersistentVolumeClaim], node: Node
    ) -> tuple[bool, bool, list[DynamicProvision] | None]:
        """(provisioning possible on the node, enough storage capacity, the provisions)."""
        provisions: list[DynamicProvision] = []
        classes = self._lister("StorageClass")
        for claim in claims:
            name = claim_class(claim)
            if not name:
                raise BinderError(f"no class for claim {go_quote(_pvc_key(claim))}")
            sc: StorageClass | None = classes.get(name)
            if sc is None:
                raise BinderError(f"failed to find storage class {go_quote(name)}")
            if not sc.provisioner or sc.provisioner == NOT_SUPPORTED_PROVISIONER:
                return False, True, None
            if not match_topology_selector_terms(sc.allowed_topologies, node.metadata.labels):
                return False, True, None
            sufficient, capacity = self.has_enough_capacity(sc.provisioner, claim, sc, node)
            if not sufficient:
                return True, False, None
            provisions.append(DynamicProvision(pvc=claim, node_capacity=capacity))
        return True, True, provisions

    def has_enough_capacity(
        self, provisioner: str, claim: PersistentVolumeClaim, sc: StorageClass, node: Node
    ) -> tuple[bool, CSIStorageCapacity | None]:
        """Storage capacity tracking: a driver that publishes capacity must have room for the claim here."""
        raw = claim.spec.resources.requests.get("storage")
        if raw is None:
            return True, None
        driver = self._lister("CSIDriver").get(provisioner)
        if driver is None or not driver.spec.storage_capacity:
            return True, None
        size = storage_value(claim.spec.resources.requests)
        capacities = sorted(
            self._lister("CSIStorageCapacity").list(), key=lambda c: (c.metadata.namespace, c.metadata.name)
        )
        for cap in capacities:
            limit = volume_limit(cap)
            if (
                cap.storage_class_name == sc.metadata.name
                and limit is not None
                and limit.value() >= size
                and _node_has_access(node, cap)
            ):
                return True, cap
        return False, None

    def find_pod_volumes(self, pod: Pod, claims: PodVolumeClaims, node: Node) -> tuple[PodVolumes, list[str]]:
        """FindPodVolumes: the node's binding decision and, if it does not fit, the reasons."""
        unbound_ok = bound_ok = storage_ok = pvs_found = True
        static: list[BindingInfo] = []
        dynamic: list[DynamicProvision] = []
        if claims.bound_claims:
            bound_ok, pvs_found = self.check_bound_claims(claims.bound_claims, node)
        if claims.unbound_claims_delay_binding:
            to_match: list[PersistentVolumeClaim] = []
            to_provision: list[PersistentVolumeClaim] = []
            short_cut = False
            for claim in claims.unbound_claims_delay_binding:
                selected = claim.metadata.annotations.get(ANN_SELECTED_NODE)
                if selected is not None:
                    if selected != node.metadata.name:
                        unbound_ok = False
                        short_cut = True
                        break
                    to_provision.append(claim)
                else:
                    to_match.append(claim)
            if not short_cut:
                if to_match:
                    unbound_ok, static, rest = self.find_matching_volumes(to_match, claims, node)
                    to_provision.extend(rest)
                if to_provision:
                    unbound_ok, storage_ok, provisions = self.check_volume_provisions(to_provision, node)
                    dynamic = provisions or []
        reasons: list[str] = []
        if not bound_ok:
            reasons.append(ERR_REASON_NODE_CONFLICT)
        if not unbound_ok:
            reasons.append(ERR_REASON_BIND_CONFLICT)
        if not storage_ok:
            reasons.append(ERR_REASON_NOT_ENOUGH_SPACE)
        if not pvs_found:
            reasons.append(ERR_REASON_PV_NOT_EXIST)
        return PodVolumes(static or None, dynamic or None), reasons

    # ------------------------------------------------------------ Reserve / Unreserve

    def assume_pod_volumes(self, pod: Pod, node_name: str, pod_volumes: PodVolumes) -> bool:
        """AssumePodVolumes: record the decision in the caches; True when every volume is already bound."""
        if self.are_pod_volumes_bound(pod):
            return True
        new_bindings: list[BindingInfo] = []
        for b in pod_volumes.static_bindings or ():
            new_pv, dirty = bind_volume_to_claim(b.pv, b.pvc)
            if dirty:
                try:
                    self.pv_cache.assume(new_pv)
                except (ValueError, ObjectNotFoundError) as err:
                    self._revert_pvs(new_bindings)
                    raise BinderError(str(err)) from err
            new_bindings.append(BindingInfo(pvc=b.pvc, pv=new_pv))
        new_provisions: list[DynamicProvision] = []
        for p in pod_volumes.dynamic_provisions or ():
            meta = p.pvc.metadata
            clone = msgspec.structs.replace(
                p.pvc,
                metadata=msgspec.structs.replace(meta, annotations={**meta.annotations, ANN_SELECTED_NODE: node_name}),
            )
            try:
                self.pvc_cache.assume(clone)
            except (ValueError, ObjectNotFoundError) as err:
                self._revert_pvs(new_bindings)
                self._revert_pvcs([d.pvc for d in new_provisions])
                raise BinderError(str(err)) from err
            new_provisions.append(DynamicProvision(pvc=clone))
        pod_volumes.static_bindings = new_bindings
        pod_volumes.dynamic_provisions = new_provisions
        return False

    def _revert_pvs(self, bindings: list[BindingInfo]) -> None:
        for b in bindings:
            self.pv_cache.restore(b.pv.metadata.name)

    def _revert_pvcs(self, claims: list[PersistentVolumeClaim]) -> None:
        for c in claims:
            self.pvc_cache.restore(_pvc_key(c))

    def revert_assumed_pod_volumes(self, pod_volumes: PodVolumes) -> None:
        self._revert_pvs(pod_volumes.static_bindings or [])
        self._revert_pvcs([p.pvc for p in pod_volumes.dynamic_provisions or ()])

    # ------------------------------------------------------------ PreBind

    def _update(self, kind: str, resource: str, key: str, obj: Any) -> Any:
        """An Update with optimistic concurrency: the object must not have changed since it was read."""
        current = self._client.get(kind, key)
        if current.metadata.resource_version != obj.metadata.resource_version:
            raise _conflict(resource, obj.metadata.name)
        return self._client.update(kind, obj)

    def bind_pod_volumes(self, pod: Pod, pod_volumes: PodVolumes | None) -> None:
        """BindPodVolumes: write the assumed PVs and claims, then complete static bindings."""
        if pod_volumes is None:
            return
        bindings = pod_volumes.static_bindings
        provisions = pod_volumes.dynamic_provisions
        pod_key = f"{pod.metadata.namespace}/{pod.metadata.name}"
        if bindings is None:
            raise BinderError(f"failed to get cached bindings for pod {go_quote(pod_key)}")
        if provisions is None:
            raise BinderError(f"failed to get cached claims to provision for pod {go_quote(pod_key)}")
        done_bindings = done_provisions = 0
        try:
            for b in bindings:
                b.pv = self._update("PersistentVolume", "persistentvolumes", b.pv.metadata.name, b.pv)
                done_bindings += 1
            for p in provisions:
                p.pvc = self._update("PersistentVolumeClaim", "persistentvolumeclaims", _pvc_key(p.pvc), p.pvc)
                done_provisions += 1
        except Exception as err:
            self._revert_pvs(bindings[done_bindings:])
            self._revert_pvcs([p.pvc for p in provisions[done_provisions:]])
            if isinstance(err, BinderError):
                raise
            raise BinderError(str(err)) from err
        for b in bindings:
            self._complete_binding(b)

    def _complete_binding(self, b: BindingInfo) -> None:
        """What the PV controller does next: the PV Bound, the claim bound to it."""
        pv = self._client.get("PersistentVolume", b.pv.metadata.name)
        if pv.status.phase != VOLUME_BOUND:
            pv = self._client.update(
                "PersistentVolume",
                msgspec.structs.replace(pv, status=msgspec.structs.replace(pv.status, phase=VOLUME_BOUND)),
            )
        b.pv = pv
        pvc = self._client.get("PersistentVolumeClaim", _pvc_key(b.pvc))
        ann = dict(pvc.metadata.annotations)
        if not pvc.spec.volume_name:
            ann.setdefault(ANN_BOUND_BY_CONTROLLER, "yes")
        ann.setdefault(ANN_BIND_COMPLETED, "yes")
        pvc = msgspec.structs.replace(
            pvc,
            metadata=msgspec.structs.replace(pvc.metadata, annotations=ann),
            spec=msgspec.structs.replace(pvc.spec, volume_name=pv.metadata.name),
            status=msgspec.structs.replace(
                pvc.status,
                phase=CLAIM_BOUND,
                access_modes=list(pv.spec.access_modes),
                capacity=dict(pv.spec.capacity),
            ),
        )
        b.pvc = self._client.update("PersistentVolumeClaim", pvc)


def _node_has_access(node: Node, cap: CSIStorageCapacity) -> bool:
    if cap.node_topology is None:
        return False
    try:
        sel = label_selector(cap.node_topology)
    except SelectorError:
        return False
    return sel.matches(node.metadata.labels)
