"""The shared DRA state of a scheduler (SharedDRAManager / DefaultDRAManager, dra_manager.go).

A claim's allocation goes through two stages before the claim informer shows it:

- in flight: decided in Reserve, not yet written. Its devices count as taken
  for every other pod, and a pod that needs the same claim waits until the
  write lands (inFlightAllocations upstream).
- assumed: written by PreBind. The claim as the API server returned it is kept
  in an assume cache over the claim lister until the informer delivers that
  version or a newer one. Without this, the next cycle could start between the
  write and the watch event, find the claim neither in flight nor allocated,
  and hand its devices to another claim (the live mirror lags the API server;
  the embedded store never does).

Claims are read through the assume cache (get, allocated devices) so every
cycle sees what this scheduler already wrote. The manager lives in
`handle.extra`, so every profile and every cycle sees the same one. Only the
scheduling thread touches it: live mode runs PreBind there too, and only the
Bind calls on the bind pool.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kubesched.plugins.dynamicresources.allocator import DeviceID, MatchCache
from kubesched.plugins.dynamicresources.claims import claim_key
from kubesched.plugins.dynamicresources.pools import SliceIndex

if TYPE_CHECKING:
    from kubesched.api.resource import ResourceClaim, ResourceSlice

EXTRA_KEY = "DynamicResources.manager"
RESOURCE_CLAIM = "ResourceClaim"


class _NoClaims:
    """The lister of a manager without a cluster (plugins built without a handle)."""

    def get(self, key: str) -> None:
        return None

    def list(self) -> list[Any]:
        return []


def _version(claim: ResourceClaim) -> int:
    rv = claim.metadata.resource_version
    try:
        return int(rv) if rv else 0
    except ValueError:
        return 0


class ClaimCache:
    """The claim informer's objects, overlaid with the claims PreBind wrote (assumecache.AssumeCache for claims).

    Only objects an API write returned are assumed, so an informer copy of the
    same resourceVersion is the same claim: from then on (or once the claim is
    deleted) the informer's copy is the latest again. The overlay is read
    lazily; nothing needs to be told about watch events.
    """

    def __init__(self, lister: Callable[[], Any]) -> None:
        self._lister = lister
        self._assumed: dict[str, ResourceClaim] = {}

    def _latest(self, key: str, api: ResourceClaim | None) -> ResourceClaim | None:
        assumed = self._assumed.get(key)
        if assumed is None:
            return api
        if api is None or _version(api) >= _version(assumed):
            del self._assumed[key]  # deleted, or the informer caught up
            return api
        return assumed

    def get(self, key: str) -> ResourceClaim | None:
        return self._latest(key, self._lister().get(key))

    def list(self) -> list[ResourceClaim]:
        """The latest version of every claim, in the lister's order."""
        lister = self._lister()
        claims: list[ResourceClaim] = lister.list()
        for key in list(self._assumed):
            self._latest(key, lister.get(key))
        if not self._assumed:
            return claims
        # Each assumed claim replaces the older informer copy of the same claim (same uid).
        replaced = {c.metadata.uid for c in self._assumed.values()}
        return [c for c in claims if c.metadata.uid not in replaced] + list(self._assumed.values())

    def assume(self, claim: ResourceClaim) -> str:
        """Keep `claim` (an API write's result) over the informer's copy; "" or upstream's reason it is not kept."""
        key = claim_key(claim)
        api = self._lister().get(key)
        stored = self._latest(key, api)
        if api is None or stored is None:
            return f'could not find {RESOURCE_CLAIM} "{key}"'
        if _version(claim) < _version(stored):
            return f'{RESOURCE_CLAIM} "{key}" is out of sync (stored: {_version(stored)}, assume: {_version(claim)})'
        if _version(claim) > _version(api):
            self._assumed[key] = claim
        return ""

    def restore(self, key: str) -> None:
        """Back to the informer's copy."""
        self._assumed.pop(key, None)


class DRAManager:
    """In-flight allocations by claim UID, assumed claims, and what all cycles share: device matches, slice index."""

    def __init__(self, claim_lister: Callable[[], Any] | None = None) -> None:
        self.in_flight: dict[str, ResourceClaim] = {}
        # The resourceClaimCache upstream: the informer's claims overlaid with what PreBind wrote.
        self.claims = ClaimCache(claim_lister or _NoClaims)
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
        """The manager kept in the handle's shared state (created on first use, over the handle's claim lister)."""
        extra = getattr(handle, "extra", None) if handle is not None else None
        if extra is None:
            return cls()
        m = extra.get(EXTRA_KEY)
        if m is None:
            m = cls(lambda: handle.lister(RESOURCE_CLAIM))
            extra[EXTRA_KEY] = m
        return m

    # ------------------------------------------------------------ claims (ResourceClaimTracker)

    def get_claim(self, key: str) -> ResourceClaim | None:
        """The claim "namespace/name": the assumed version while the informer has not caught up, else the informer's."""
        return self.claims.get(key)

    def claim_has_pending_allocation(self, uid: str) -> bool:
        return uid in self.in_flight

    def signal_claim_pending_allocation(self, uid: str, claim: ResourceClaim) -> None:
        self.in_flight[uid] = claim

    def remove_claim_pending_allocation(self, uid: str) -> bool:
        return self.in_flight.pop(uid, None) is not None

    def assume_claim_after_api_call(self, claim: ResourceClaim) -> str:
        """Keep the claim an API write returned until the informer catches up; "" or why it was not kept."""
        return self.claims.assume(claim)

    def assumed_claim_restore(self, key: str) -> None:
        """Back to the informer's version of the claim."""
        self.claims.restore(key)

    def list_all_allocated_devices(self) -> set[DeviceID]:
        """ListAllAllocatedDevices: devices of allocated (or assumed) and in-flight claims; admin access takes none."""
        out: set[DeviceID] = set()
        for c in self.claims.list():
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
