"""The shared DRA state of a scheduler (SharedDRAManager / DefaultDRAManager, dra_manager.go).

Claims whose allocation was decided in Reserve but not yet written by PreBind
are "in flight": their devices count as taken for every other pod, and a pod
that needs the same claim waits until the write lands. The manager lives in
`handle.extra` so that every profile and every cycle sees the same one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from kubesched.plugins.dynamicresources.allocator import DeviceID, MatchCache
from kubesched.plugins.dynamicresources.pools import SliceIndex

if TYPE_CHECKING:
    from kubesched.api.resource import ResourceClaim, ResourceSlice

EXTRA_KEY = "DynamicResources.manager"


class DRAManager:
    """In-flight allocations by claim UID, and what all cycles can share: device matches, the slice index."""

    def __init__(self) -> None:
        self.in_flight: dict[str, ResourceClaim] = {}
        self.match_cache = MatchCache()
        self._slices: tuple[tuple[int, ...], list[ResourceSlice], SliceIndex] | None = None

    def slice_index(self, slices: list[ResourceSlice]) -> SliceIndex:
        """The index of these slices; the previous one while the very same slice objects are listed."""
        ids = tuple(map(id, slices))
        cached = self._slices
        if cached is not None and cached[0] == ids:
            return cached[2]
        index = SliceIndex(slices)
        self._slices = (ids, slices, index)  # keeping the list keeps the ids valid
        return index

    @classmethod
    def of(cls, handle: Any) -> DRAManager:
        """The manager kept in the handle's shared state (created on first use)."""
        extra = getattr(handle, "extra", None) if handle is not None else None
        if extra is None:
            return cls()
        m = extra.get(EXTRA_KEY)
        if m is None:
            m = cls()
            extra[EXTRA_KEY] = m
        return m  # type: ignore[no-any-return]

    def claim_has_pending_allocation(self, uid: str) -> bool:
        return uid in self.in_flight

    def signal_claim_pending_allocation(self, uid: str, claim: ResourceClaim) -> None:
        self.in_flight[uid] = claim

    def remove_claim_pending_allocation(self, uid: str) -> bool:
        return self.in_flight.pop(uid, None) is not None

    def allocated_devices(self, claims: Iterable[ResourceClaim]) -> set[DeviceID]:
        """ListAllAllocatedDevices: devices of allocated claims plus in-flight ones; admin access takes none."""
        out: set[DeviceID] = set()
        for c in claims:
            _add_devices(c, out)
        for c in self.in_flight.values():
            _add_devices(c, out)
        return out


def _add_devices(claim: ResourceClaim, out: set[DeviceID]) -> None:
    alloc = claim.status.allocation
    if alloc is None:
        return
    for r in alloc.devices.results:
        if r.admin_access:
            continue
        out.add((r.driver, r.pool, r.device))
