"""Which devices each of a pod's ResourceClaims gets, node by node (`kubesched explain`).

The DynamicResources plugin keeps its PreFilter state in the CycleState under
its own name: the pod's claims (1:1 with its resolvable `spec.resourceClaims`),
those still to allocate, the allocator set up for the cycle and, for every node
whose Filter passed, the allocation found there (built on demand, as Reserve
builds the chosen node's). The analysis runs PreFilter and every Filter in a
CycleState of its own, so reading that state changes nothing the scheduling
cycle sees. Where no allocation was found, the allocator is asked once more per
claim (`allocator.diagnose`): which claim is short, and of which devices.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubesched.plugins import names
from kubesched.plugins.dynamicresources.allocator import (
    AllocationError,
    AllocationTimeout,
    ClaimDiagnosis,
    RequestSupply,
    diagnose,
)
from kubesched.plugins.dynamicresources.claims import ClaimLookupError, claim_name
from kubesched.plugins.dynamicresources.pools import node_selector_matches

if TYPE_CHECKING:
    from kubesched.api.core import Node
    from kubesched.api.resource import AllocationResult, ResourceClaim
    from kubesched.framework.cycle_state import CycleState
    from kubesched.framework.runtime import Framework
    from kubesched.framework.types import NodeInfo, PodInfo

STATE_KEY = names.DYNAMIC_RESOURCES
NOT_REACHABLE = "allocated earlier to devices this node cannot reach (the allocation's nodeSelector does not match)"


@dataclass
class DeviceResult:
    """One entry of `status.allocation.devices.results`: the device a request gets."""

    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool = False

    @property
    def id(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "request": self.request,
            "driver": self.driver,
            "pool": self.pool,
            "device": self.device,
            "adminAccess": self.admin_access,
        }


def supply_dict(r: RequestSupply) -> dict[str, Any]:
    return {
        "request": r.request,
        "deviceClass": r.device_class,
        "wanted": "All" if r.wanted is None else r.wanted,
        "matching": r.matching,
        "free": r.free,
    }


@dataclass
class ClaimOnNode:
    """One claim of the pod on one node: its devices there, or why it gets none."""

    claim: str  # namespace/name
    pod_claim: str  # the pod's spec.resourceClaims[].name
    template: str | None  # resourceClaimTemplateName when the claim was made from a template
    allocated_before: bool  # allocated before this attempt (a shared claim, or a preallocated one)
    devices: list[DeviceResult] = field(default_factory=list)
    reason: str = ""  # why the claim gets no devices on the node ("" when it gets them)
    requests: list[RequestSupply] = field(default_factory=list)  # per request, when it is short

    def to_dict(self) -> dict[str, Any]:
        return {
            "claim": self.claim,
            "podClaim": self.pod_claim,
            "template": self.template,
            "allocatedBefore": self.allocated_before,
            "devices": [d.to_dict() for d in self.devices],
            "reason": self.reason,
            "requests": [supply_dict(r) for r in self.requests],
        }


def devices_of(allocation: AllocationResult) -> list[DeviceResult]:
    return [
        DeviceResult(r.request, r.driver, r.pool, r.device, bool(r.admin_access)) for r in allocation.devices.results
    ]


def _supply_text(r: RequestSupply) -> str:
    if r.wanted is None:
        if not r.matching:
            return f"request {r.request}: wants all matching devices, none here"
        return f"request {r.request}: wants all {r.matching} matching devices, {r.matching - r.free} in use"
    if not r.matching:
        return f"request {r.request}: wants {r.wanted}, no matching device here"
    return f"request {r.request}: wants {r.wanted}, {r.free} of {r.matching} matching devices free"


def _short(r: RequestSupply) -> bool:
    if r.wanted is None:
        return r.matching == 0 or r.free < r.matching
    return r.free < r.wanted


def why_text(d: ClaimDiagnosis) -> str:
    """One line on why a claim gets no devices on a node, from the allocator's diagnosis."""
    if d.error:
        return d.error
    if d.fits_alone:
        return "fits on its own, but not together with the pod's other claims"
    short = [r for r in d.requests if _short(r)]
    if short:
        return "; ".join(_supply_text(r) for r in short)
    if d.constraints:
        return f"enough matching devices are free, but none that satisfy matchAttribute {', '.join(d.constraints)}"
    return "enough matching devices are free, but not for all of its requests at once"


class ClaimsView:
    """The DynamicResources state of one analysed attempt, read node by node."""

    def __init__(self, state: Any, refs: list[tuple[str, str, str | None]], timeout: float) -> None:
        self.s = state
        self.refs = refs  # per claim of the state: (namespace/name, pod claim name, template)
        self.timeout = timeout

    @classmethod
    def of(cls, fw: Framework, state: CycleState, pod: PodInfo) -> ClaimsView | None:
        """None when the pod has no claims or PreFilter got no further than reading them."""
        s = state.get(STATE_KEY)
        if s is None or not getattr(s, "claims", None):
            return None
        refs: list[tuple[str, str, str | None]] = []
        for pc in pod.pod.spec.resource_claims:
            try:
                name, _ = claim_name(pod.pod, pc)
            except ClaimLookupError:
                continue
            if name is not None:
                refs.append((f"{pod.namespace}/{name}", pc.name, pc.resource_claim_template_name))
        pl = fw.plugins_by_name.get(names.DYNAMIC_RESOURCES)
        timeout = float(getattr(pl, "filter_timeout", 0) or 0)
        return cls(s, refs, timeout)

    def _ref(self, i: int, claim: ResourceClaim) -> tuple[str, str, str | None]:
        if i < len(self.refs):
            return self.refs[i]
        return (f"{claim.metadata.namespace}/{claim.metadata.name}", "", None)

    def _deadline(self) -> float | None:
        return time.monotonic() + self.timeout if self.timeout > 0 else None

    def on_node(self, ni: NodeInfo) -> list[ClaimOnNode]:
        s = self.s
        node = ni.node
        assert node is not None
        out: list[ClaimOnNode] = []
        unreachable = False
        for i, claim in enumerate(s.claims):
            key, pod_claim, template = self._ref(i, claim)
            entry = ClaimOnNode(key, pod_claim, template, claim.status.allocation is not None)
            if claim.status.allocation is not None:
                sel = s.informations[i].available_on_nodes if i < len(s.informations) else None
                if sel is not None and not node_selector_matches(sel, node):
                    entry.reason = NOT_REACHABLE
                    unreachable = True
                else:
                    entry.devices = devices_of(claim.status.allocation)
            out.append(entry)
        pending = [e for e in out if not e.allocated_before]
        if pending and s.allocator is not None:
            self._fill_pending(ni, node, pending, unreachable)
        return out

    def _fill_pending(self, ni: NodeInfo, node: Node, pending: list[ClaimOnNode], unreachable: bool) -> None:
        """The allocation Filter found on the node; else, per claim, why there is none."""
        s = self.s
        lazy = s.node_allocations.get(ni.name)
        try:
            if lazy is None and unreachable:
                # Filter found the allocation but, another claim being out of reach, did not keep it.
                lazy = s.allocator.allocate_lazy(node, s.to_allocate, self._deadline())
            results = lazy() if lazy is not None else None
        except AllocationTimeout:
            results, error = None, "timed out trying to allocate devices"
        except AllocationError as err:
            results, error = None, str(err)
        else:
            error = ""
        if results is not None:
            for entry, allocation in zip(pending, results, strict=False):
                entry.devices = devices_of(allocation)
            return
        if error:
            for entry in pending:
                entry.reason = error
            return
        for entry, d in zip(pending, diagnose(s.allocator, node, s.to_allocate, self._deadline()), strict=False):
            entry.reason = why_text(d)
            entry.requests = list(d.requests)
