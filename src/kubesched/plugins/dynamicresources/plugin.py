"""DynamicResources (dynamicresources.go): pods get the devices their ResourceClaims ask for.

- PreEnqueue holds a pod back (it stays Pending, no condition) while one of its
  claims does not exist yet.
- PreFilter reads the pod's claims (through the manager's assume cache): an
  allocated claim pins the pod to the nodes of its allocation, an unallocated
  one needs its device classes to exist and is handed to the structured
  allocator, set up once for the cycle with the devices already taken
  (allocated claims and in-flight allocations).
- Filter runs the allocator for the node; "cannot allocate all claims" when
  the devices reachable from the node do not suffice.
- Reserve marks the node's allocation as in flight, so no other pod gets the
  same devices; Unreserve takes that back. PreBind writes the allocation and
  the pod's `reservedFor` entry to the claim, and assumes the written claim
  until the claim informer shows it (manager.py).
- PostFilter deallocates an allocated claim that was unavailable on some node
  and that no other pod uses, so that a later attempt can allocate it anew.

A pod without claims is skipped at PreFilter; its (empty) state still makes its
PostFilter answer "no new claims to deallocate", the text every
FailedScheduling message of 1.34 carries. When PreFilter never ran (an earlier
PreFilter plugin rejected the pod), PostFilter cannot read its state and fails
with the framework's "not found". In 1.34 the plugin has no Score.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from kubesched.api.labels import NodeSelectorMatcher
from kubesched.api.resource import FINALIZER, ResourceClaim, ResourceClaimConsumerReference
from kubesched.framework.cycle_state import CycleState, NotFoundError
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, Resource
from kubesched.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    ReservePlugin,
)
from kubesched.framework.status import SKIP, Code, Status
from kubesched.plugins import names
from kubesched.plugins.dynamicresources.allocator import (
    AllocationError,
    AllocationTimeout,
    Allocator,
    DeviceClassLister,
    Features,
    kobj,
)
from kubesched.plugins.dynamicresources.claims import (
    ClaimLookupError,
    can_be_reserved,
    claim_key,
    claim_name,
    is_for_pod,
    is_reserved_for_pod,
)
from kubesched.plugins.dynamicresources.manager import DRAManager
from kubesched.plugins.dynamicresources.pools import node_selector_matches

if TYPE_CHECKING:
    from kubesched.api.core import NodeSelector, Pod
    from kubesched.api.resource import AllocationResult
    from kubesched.framework.types import NodeInfo, PodInfo

log = logging.getLogger("kubesched.plugins.dynamicresources")

STATE_KEY = names.DYNAMIC_RESOURCES
RESOURCE_CLAIM = "ResourceClaim"
DEVICE_CLASS = "DeviceClass"
RESOURCE_SLICE = "ResourceSlice"

DEFAULT_FILTER_TIMEOUT = 10.0


def _unschedulable(reason: str) -> Status:
    """statusUnschedulable upstream: always UnschedulableAndUnresolvable (preemption cannot free devices)."""
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reason)


class _ClaimInfo:
    __slots__ = ("allocation", "available_on_nodes")

    def __init__(self) -> None:
        self.available_on_nodes: NodeSelector | None = None
        self.allocation: AllocationResult | None = None


class _StateData:
    """The pod's claims (1:1 with its resolvable spec.resourceClaims) and what the cycle learnt about them."""

    __slots__ = ("allocator", "claims", "informations", "node_allocations", "to_allocate", "unavailable_claims")

    def __init__(self) -> None:
        self.claims: list[ResourceClaim] = []
        self.to_allocate: list[ResourceClaim] = []
        self.allocator: Allocator | None = None
        self.unavailable_claims: set[int] = set()
        self.informations: list[_ClaimInfo] = []
        # Per feasible node: the allocation Filter found, built on demand by Reserve.
        self.node_allocations: dict[str, Callable[[], list[AllocationResult]]] = {}

    def clone(self) -> _StateData:
        return self


class _BindError(Exception):
    pass


class DynamicResources(
    PreEnqueuePlugin,
    PreFilterPlugin,
    FilterPlugin,
    PostFilterPlugin,
    ReservePlugin,
    PreBindPlugin,
    EnqueueExtensions,
):
    name = names.DYNAMIC_RESOURCES
    # Devices come from claims and slices, not from the node's pods: removing victims changes nothing here.
    depends_on_node_pods = False

    def __init__(self, handle: Any = None, filter_timeout: float = DEFAULT_FILTER_TIMEOUT) -> None:
        self.handle = handle
        self.filter_timeout = filter_timeout
        self.features = Features()

    @classmethod
    def new(cls, args: Any, handle: Any) -> DynamicResources:
        timeout = getattr(args, "filter_timeout", None)
        return cls(handle, DEFAULT_FILTER_TIMEOUT if timeout is None else float(timeout))

    # ------------------------------------------------------------ cluster access

    @property
    def manager(self) -> DRAManager:
        return DRAManager.of(self.handle)

    def _get(self, kind: str, key: str) -> Any:
        return self.handle.lister(kind).get(key)

    def _foreach_pod_claim(self, pod: Pod, cb: Callable[[str, ResourceClaim], None] | None) -> str:
        """foreachPodResourceClaim: "" when every claim of the pod exists (and is the pod's), else the reason."""
        for pc in pod.spec.resource_claims:
            try:
                name, must_check_owner = claim_name(pod, pc)
            except ClaimLookupError as err:
                return str(err)
            if name is None:
                continue
            claim = self.manager.get_claim(f"{pod.metadata.namespace}/{name}")
            if claim is None:
                return f'resourceclaim.resource.k8s.io "{name}" not found'
            if claim.metadata.deletion_timestamp is not None:
                return f'resourceclaim "{claim.metadata.name}" is being deleted'
            if must_check_owner:
                not_owned = is_for_pod(pod, claim)
                if not_owned:
                    return not_owned
            if cb is not None:
                cb(pc.name, claim)
        return ""

    # ------------------------------------------------------------ queueing

    def events_to_register(self) -> list[ClusterEventWithHint]:
        node_actions = ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE
        return [
            ClusterEventWithHint(ClusterEvent(Resource.NODE, node_actions)),
            ClusterEventWithHint(
                ClusterEvent(Resource.RESOURCE_CLAIM, ActionType.ADD | ActionType.UPDATE),
                self.is_schedulable_after_claim_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
                self.is_schedulable_after_pod_change,
            ),
            ClusterEventWithHint(ClusterEvent(Resource.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE)),
            ClusterEventWithHint(ClusterEvent(Resource.RESOURCE_SLICE, ActionType.ADD | ActionType.UPDATE)),
        ]

    def is_schedulable_after_claim_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """A new or changed claim helps a pod that uses it when its status changed, or anyone when it got freed."""
        uses = False

        def note(_name: str, claim: ResourceClaim) -> None:
            nonlocal uses
            if claim.metadata.uid == new.metadata.uid:
                uses = True

        if self._foreach_pod_claim(pod, note):
            return QueueingHint.QUEUE_SKIP
        if old is not None and old.status.allocation is not None and new.status.allocation is None:
            return QueueingHint.QUEUE
        if not uses:
            return QueueingHint.QUEUE_SKIP
        if old is None:
            return QueueingHint.QUEUE
        if old.status == new.status:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def is_schedulable_after_pod_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """The pod's own status now names its generated claims."""
        if new is None or pod.metadata.uid != new.metadata.uid:
            return QueueingHint.QUEUE_SKIP
        if self._foreach_pod_claim(new, None):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        err = self._foreach_pod_claim(pod.pod, None)
        return _unschedulable(err) if err else None

    # ------------------------------------------------------------ PreFilter

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        s = _StateData()
        state.write(STATE_KEY, s)
        p = pod.pod
        if not p.spec.resource_claims:
            return None, SKIP
        claims: list[ResourceClaim] = []
        err = self._foreach_pod_claim(p, lambda _n, c: claims.append(c))
        if err:
            return None, _unschedulable(err)
        if not claims:
            return None, SKIP

        manager = self.manager
        informations = [_ClaimInfo() for _ in claims]
        to_allocate = 0
        for i, claim in enumerate(claims):
            alloc = claim.status.allocation
            if alloc is not None and not can_be_reserved(claim) and not is_reserved_for_pod(p, claim):
                return None, _unschedulable("resourceclaim in use")
            if alloc is not None:
                if alloc.node_selector is not None:
                    try:
                        NodeSelectorMatcher(alloc.node_selector)
                    except ValueError as e:
                        return None, Status.as_error(str(e))
                    informations[i].available_on_nodes = alloc.node_selector
                continue
            to_allocate += 1
            if manager.claim_has_pending_allocation(claim.metadata.uid):
                return None, _unschedulable(f"resource claim {kobj(claim)} is in the process of being allocated")
            for request in claim.spec.devices.requests:
                if request.exactly is not None:
                    st = self._validate_device_class(request.exactly.device_class_name, request.name)
                    if st is not None:
                        return None, st
                elif request.first_available:
                    for sub in request.first_available:
                        st = self._validate_device_class(sub.device_class_name, f"{request.name}/{sub.name}")
                        if st is not None:
                            return None, st
                else:
                    return None, _unschedulable(
                        f"resource claim {kobj(claim)}, request {request.name}: unknown request type"
                    )

        if to_allocate > 0:
            allocated = manager.list_all_allocated_devices()
            slices = manager.slice_index(self.handle.lister(RESOURCE_SLICE).list())
            classes = DeviceClassLister(lambda name: self._get(DEVICE_CLASS, name))
            s.allocator = Allocator(self.features, allocated, classes, slices, manager.match_cache)
        s.claims = claims
        s.to_allocate = [c for c in claims if c.status.allocation is None]
        s.informations = informations
        return None, None

    def _validate_device_class(self, class_name: str, request_name: str) -> Status | None:
        if not class_name:
            return Status.as_error(f"request {request_name}: unsupported request type")
        if self._get(DEVICE_CLASS, class_name) is None:
            return _unschedulable(f"request {request_name}: device class {class_name} does not exist")
        return None

    # ------------------------------------------------------------ Filter

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        try:
            s: _StateData = state.read(STATE_KEY)
        except NotFoundError as err:
            return Status.as_error(err)
        if not s.claims:
            return None
        node = node_info.node
        assert node is not None
        unavailable: list[int] = []
        for i, info in enumerate(s.informations):
            sel = info.available_on_nodes
            if sel is not None and not node_selector_matches(sel, node):
                unavailable.append(i)

        pending: Callable[[], list[AllocationResult]] | None = None
        if s.allocator is not None:
            deadline = time.monotonic() + self.filter_timeout if self.filter_timeout > 0 else None
            try:
                pending = s.allocator.allocate_lazy(node, s.to_allocate, deadline)
            except AllocationTimeout:
                return _unschedulable("timed out trying to allocate devices")
            except AllocationError as err:
                return Status.as_error(str(err))
            if pending is None:
                return _unschedulable("cannot allocate all claims")

        if unavailable:
            s.unavailable_claims.update(unavailable)
            return _unschedulable("resourceclaim not available on the node")
        if pending is not None:
            s.node_allocations[node_info.name] = pending
        return None

    # ------------------------------------------------------------ PostFilter

    def post_filter(
        self, state: CycleState, pod: PodInfo, node_to_status: Any
    ) -> tuple[PostFilterResult | None, Status | None]:
        try:
            s: _StateData = state.read(STATE_KEY)
        except NotFoundError as err:
            return None, Status.as_error(err)
        if not s.claims:
            return None, Status(Code.UNSCHEDULABLE, "no new claims to deallocate")
        for index in sorted(s.unavailable_claims):
            claim = s.claims[index]
            reserved = claim.status.reserved_for
            if not reserved or (len(reserved) == 1 and reserved[0].uid == pod.uid):
                status = msgspec.structs.replace(claim.status, allocation=None, reserved_for=[], devices=[])
                try:
                    self._update_status(msgspec.structs.replace(claim, status=status))
                except _BindError as err:
                    return None, Status.as_error(str(err))
                return None, Status(Code.UNSCHEDULABLE, "deallocation of ResourceClaim completed")
        return None, Status(Code.UNSCHEDULABLE, "still not schedulable")

    # ------------------------------------------------------------ Reserve / Unreserve

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        try:
            s: _StateData = state.read(STATE_KEY)
        except NotFoundError as err:
            return Status.as_error(err)
        if not s.claims:
            return None
        pending = [i for i, c in enumerate(s.claims) if c.status.allocation is None]
        if not pending:
            return None
        if s.allocator is not None:
            pending_results = s.node_allocations.get(node_name)
            allocations = pending_results() if pending_results is not None else []
            if not allocations:
                return Status.as_error("claim allocation not found for node")
            if len(allocations) != len(pending):
                return Status.as_error(
                    f"internal error, have {len(allocations)} allocations, {len(pending)} claims to allocate, "
                    f"want {len(pending)} claims"
                )
            manager = self.manager
            for allocation, index in zip(allocations, pending, strict=True):
                s.informations[index].allocation = allocation
                claim = s.claims[index]
                meta = claim.metadata
                if FINALIZER not in meta.finalizers:
                    meta = msgspec.structs.replace(meta, finalizers=[*meta.finalizers, FINALIZER])
                assumed = msgspec.structs.replace(
                    claim, metadata=meta, status=msgspec.structs.replace(claim.status, allocation=allocation)
                )
                manager.signal_claim_pending_allocation(claim.metadata.uid, assumed)
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        s: _StateData | None = state.get(STATE_KEY)
        if s is None or not s.claims:
            return
        manager = self.manager
        for claim in s.claims:
            if manager.remove_claim_pending_allocation(claim.metadata.uid):
                # The allocation never got written: the claim is what the informer has.
                manager.assumed_claim_restore(claim_key(claim))
            if claim.status.allocation is not None and is_reserved_for_pod(pod.pod, claim):
                try:
                    current = self._fetch(claim)
                except _BindError:
                    continue  # gone: nothing to unreserve
                if current.metadata.uid != claim.metadata.uid:
                    continue
                kept = [r for r in current.status.reserved_for if r.uid != pod.uid]
                if len(kept) != len(current.status.reserved_for):
                    status = msgspec.structs.replace(current.status, reserved_for=kept)
                    self.handle.client.update(RESOURCE_CLAIM, msgspec.structs.replace(current, status=status))

    # ------------------------------------------------------------ PreBind

    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        try:
            s: _StateData = state.read(STATE_KEY)
        except NotFoundError as err:
            return Status.as_error(err)
        if not s.claims:
            return None
        for index, claim in enumerate(s.claims):
            if not is_reserved_for_pod(pod.pod, claim):
                try:
                    s.claims[index] = self._bind_claim(s, index, pod.pod)
                except _BindError as err:
                    return Status.as_error(str(err))
        return None

    def _bind_claim(self, s: _StateData, index: int, pod: Pod) -> ResourceClaim:
        """Write the allocation (from Reserve) and the pod's reservation to the claim, retrying on a stale copy.

        A written allocation leaves the in-flight map only once the claim the API server returned is assumed:
        the claim informer may not have it yet, and until it does, the next cycles read the assumed one.
        """
        claim = s.claims[index]
        allocation = s.informations[index].allocation
        written: ResourceClaim | None = None
        try:
            current = self._fetch(claim)
            if current.metadata.resource_version != claim.metadata.resource_version:
                claim = current  # RetryOnConflict: start again from the latest object
            if claim.metadata.deletion_timestamp is not None:
                raise _BindError(f"claim {kobj(claim)} got deleted in the meantime")
            if allocation is not None:
                if claim.status.allocation is not None:
                    raise _BindError(f"claim {kobj(claim)} got allocated elsewhere in the meantime")
                if FINALIZER not in claim.metadata.finalizers:
                    meta = msgspec.structs.replace(claim.metadata, finalizers=[*claim.metadata.finalizers, FINALIZER])
                    claim = self._update(msgspec.structs.replace(claim, metadata=meta), "add finalizer to claim")
            ref = ResourceClaimConsumerReference(resource="pods", name=pod.metadata.name, uid=pod.metadata.uid)
            status = msgspec.structs.replace(
                claim.status,
                allocation=allocation if allocation is not None else claim.status.allocation,
                reserved_for=[*claim.status.reserved_for, ref],
            )
            what = "add allocation and reservation to claim" if allocation is not None else "add reservation to claim"
            written = self._update(msgspec.structs.replace(claim, status=status), what)
            return written
        finally:
            if allocation is not None:
                if written is not None:
                    err = self.manager.assume_claim_after_api_call(written)
                    if err:
                        log.debug("Claim not stored in assume cache", extra={"claim": kobj(written), "err": err})
                self.manager.remove_claim_pending_allocation(claim.metadata.uid)

    def _fetch(self, claim: ResourceClaim) -> ResourceClaim:
        try:
            current = self.handle.client.get(RESOURCE_CLAIM, claim_key(claim))
        except KeyError as err:
            raise _BindError(f"get updated claim {kobj(claim)} after conflict: {_not_found(claim)}") from err
        if current is None:
            raise _BindError(f"get updated claim {kobj(claim)} after conflict: {_not_found(claim)}")
        return current

    def _update(self, claim: ResourceClaim, what: str) -> ResourceClaim:
        try:
            return self.handle.client.update(RESOURCE_CLAIM, claim)
        except KeyError as err:
            raise _BindError(f"{what} {kobj(claim)}: {_not_found(claim)}") from err

    def _update_status(self, claim: ResourceClaim) -> None:
        """UpdateStatus with the claim as read in PreFilter: a changed object is a conflict, as upstream."""
        current = self._fetch(claim)
        if current.metadata.resource_version != claim.metadata.resource_version:
            raise _BindError(
                f'Operation cannot be fulfilled on resourceclaims.resource.k8s.io "{claim.metadata.name}": '
                "the object has been modified; please apply your changes to the latest version and try again"
            )
        self._update(claim, "update claim")


def _not_found(claim: ResourceClaim) -> str:
    return f'resourceclaims.resource.k8s.io "{claim.metadata.name}" not found'
