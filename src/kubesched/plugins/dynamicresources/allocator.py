"""The structured allocator (k8s.io/dynamic-resource-allocation/structured, stable/incubating variants).

For one node, it picks devices for every request of every claim that still
needs an allocation, by exhaustive depth-first search in a fixed order: claims
in pod order, requests in claim order, devices in pool/slice/device order. The
first complete solution wins, so the devices picked are the first ones that
fit. Subrequests of a prioritized list (`firstAvailable`) are tried in order
and the first that works is taken. Constraints (`matchAttribute`) are checked
as devices are added and undone when the search backtracks.

1.34's default feature gates enable admin access, prioritized lists and device
status and leave partitionable devices, device taints, binding conditions and
consumable capacity off; the allocator behaves accordingly (devices with
counters or binding conditions are never picked, taints are ignored).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubesched.api.core import NodeSelector, NodeSelectorRequirement, NodeSelectorTerm
from kubesched.api.resource import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_MODE_EXACT_COUNT,
    ALLOCATION_RESULTS_MAX_SIZE,
    AllocationResult,
    DeviceAllocationConfiguration,
    DeviceAllocationResult,
    DeviceRequestAllocationResult,
)
from kubesched.plugins.dynamicresources import cel
from kubesched.plugins.dynamicresources.pools import Pool, SliceIndex, node_matches

if TYPE_CHECKING:
    from kubesched.api.core import Node
    from kubesched.api.resource import (
        Device,
        DeviceClass,
        DeviceRequest,
        DeviceSelector,
        DeviceSubRequest,
        DeviceToleration,
        ResourceClaim,
        ResourceSlice,
    )

DeviceID = tuple[str, str, str]  # driver, pool, device
RequestKey = tuple[int, int, int]  # claim index, request index, subrequest index

_MAX_INT = (1 << 63) - 1


def device_id_str(d: DeviceID) -> str:
    return f"{d[0]}/{d[1]}/{d[2]}"


def kobj(claim: ResourceClaim) -> str:
    """klog.KObj: namespace/name."""
    return f"{claim.metadata.namespace}/{claim.metadata.name}" if claim.metadata.namespace else claim.metadata.name


class AllocationError(Exception):
    """Invalid input (a broken CEL expression, a missing class...): scheduling of the pod must stop."""


class AllocationTimeout(Exception):
    """The search ran longer than the Filter timeout."""


class _MaxSizeExceeded(Exception):
    """A claim would get more than ALLOCATION_RESULTS_MAX_SIZE devices on this branch."""


@dataclass(frozen=True, slots=True)
class Features:
    """structured.Features: what the allocator may use; defaults are 1.34's feature gates."""

    admin_access: bool = True
    prioritized_list: bool = True
    partitionable_devices: bool = False
    device_taints: bool = False
    device_binding: bool = False
    device_status: bool = True
    consumable_capacity: bool = False


class DeviceClassLister:
    """What the allocator needs of DeviceClasses: a get that raises LookupError with upstream's text.

    Lookups are remembered: an allocator lives for one cycle, in which the informer view is fixed.
    """

    def __init__(self, get: Callable[[str], DeviceClass | None]) -> None:
        self._get = get
        self._seen: dict[str, DeviceClass | None] = {}

    def get(self, name: str) -> DeviceClass:
        try:
            c = self._seen[name]
        except KeyError:
            c = self._seen[name] = self._get(name)
        if c is None:
            raise LookupError(f'deviceclass.resource.k8s.io "{name}" not found')
        return c


class _Request:
    """requestAccessor: a request with `exactly` or one subrequest of a `firstAvailable` list."""

    __slots__ = ("admin_access", "class_name", "count", "has_admin_access", "mode", "name", "selectors", "tolerations")

    def __init__(self, name: str, spec: Any, is_sub: bool) -> None:
        self.name: str = name
        self.class_name: str = spec.device_class_name
        self.mode: str = spec.mode
        self.count: int = spec.amount
        self.selectors: list[DeviceSelector] = spec.selectors
        self.tolerations: list[DeviceToleration] = spec.tolerations
        admin = None if is_sub else spec.admin_access
        self.has_admin_access = admin is not None
        self.admin_access = bool(admin)

    @classmethod
    def exact(cls, request: DeviceRequest) -> _Request:
        return cls(request.name, request.exactly, False)

    @classmethod
    def sub(cls, sub: DeviceSubRequest) -> _Request:
        return cls(sub.name, sub, True)


@dataclass(slots=True)
class _Candidate:
    id: DeviceID
    device: Device
    slice: ResourceSlice
    pool: Pool


@dataclass(slots=True)
class _RequestData:
    request: _Request
    parent: _Request | None
    klass: DeviceClass | None = None
    num_devices: int = 0
    selected_sub: int = 0
    all_devices: list[_Candidate] = field(default_factory=list)

    def request_name(self) -> str:
        return f"{self.parent.name}/{self.request.name}" if self.parent is not None else self.request.name


@dataclass(slots=True)
class _Result:
    request: str
    parent: str
    id: DeviceID
    device: Device
    slice: ResourceSlice
    admin_access: bool | None

    def request_name(self) -> str:
        return f"{self.parent}/{self.request}" if self.parent else self.request


class _MatchAttribute:
    """All devices of the constrained requests must have the same value of one attribute."""

    __slots__ = ("attribute", "name", "num_devices", "requests")

    def __init__(self, requests: Iterable[str], name: str) -> None:
        self.requests = frozenset(requests)
        self.name = name
        self.attribute: Any = None
        self.num_devices = 0

    def _applies(self, request: str, sub: str) -> bool:
        if not self.requests:
            return True
        if not sub:
            return request in self.requests
        return request in self.requests or f"{request}/{sub}" in self.requests

    def add(self, request: str, sub: str, device: Device, device_id: DeviceID) -> bool:
        if not self._applies(request, sub):
            return True
        attr = lookup_attribute(device, device_id, self.name)
        if attr is None:
            return False
        if self.num_devices == 0:
            self.attribute = attr
            self.num_devices = 1
            return True
        mine = self.attribute
        if attr.string_value is not None:
            same = mine.string_value is not None and attr.string_value == mine.string_value
        elif attr.int_value is not None:
            same = mine.int_value is not None and attr.int_value == mine.int_value
        elif attr.bool_value is not None:
            same = mine.bool_value is not None and attr.bool_value == mine.bool_value
        elif attr.version_value is not None:
            same = mine.version_value is not None and attr.version_value == mine.version_value
        else:
            same = False
        if not same:
            return False
        self.num_devices += 1
        return True

    def remove(self, request: str, sub: str, device: Device, device_id: DeviceID) -> None:
        if not self._applies(request, sub):
            return
        self.num_devices -= 1


def lookup_attribute(device: Device, device_id: DeviceID, name: str) -> Any:
    """An attribute by fully qualified name; the driver's own domain may be left out on the device."""
    attr = device.attributes.get(name)
    if attr is not None:
        return attr
    domain, sep, ident = name.partition("/")
    if not sep or domain != device_id[0]:
        return None
    return device.attributes.get(ident)


class MatchCache:
    """Selector results per (expression, device), kept across cycles while the slice is unchanged."""

    def __init__(self, limit: int = 1 << 18) -> None:
        self.limit = limit
        self.inputs: dict[tuple[Any, ...], cel.DeviceInput] = {}
        self.results: dict[tuple[Any, ...], bool] = {}

    def device_key(self, s: ResourceSlice, index: int) -> tuple[Any, ...] | None:
        meta = s.metadata
        if not meta.resource_version:
            return None
        return (meta.uid, meta.name, meta.resource_version, index)

    def device_input(self, key: tuple[Any, ...] | None, driver: str, device: Device) -> cel.DeviceInput:
        if key is None:
            return cel.DeviceInput(driver, device)
        di = self.inputs.get(key)
        if di is None:
            if len(self.inputs) >= self.limit:
                self.inputs.clear()
            di = cel.DeviceInput(driver, device)
            self.inputs[key] = di
        return di


class Allocator:
    """structured.Allocator for one scheduling cycle: the slices, classes and devices in use are fixed."""

    def __init__(
        self,
        features: Features,
        allocated_devices: set[DeviceID],
        class_lister: DeviceClassLister,
        slices: SliceIndex,
        match_cache: MatchCache | None = None,
    ) -> None:
        self.features = features
        self.allocated_devices = allocated_devices
        self.class_lister = class_lister
        self.slices = slices
        self.match_cache = match_cache if match_cache is not None else MatchCache()
        self.num_allocate_one = 0

    def allocate(
        self, node: Node, claims: list[ResourceClaim], deadline: float | None = None
    ) -> list[AllocationResult] | None:
        """One result per claim, or None when the claims cannot all be allocated on this node.

        Raises AllocationError for invalid input and AllocationTimeout past `deadline` (time.monotonic()).
        """
        pending = self.allocate_lazy(node, claims, deadline)
        return pending() if pending is not None else None

    def allocate_lazy(
        self, node: Node, claims: list[ResourceClaim], deadline: float | None = None
    ) -> Callable[[], list[AllocationResult]] | None:
        """Like `allocate`, but the results are built only when asked for (Filter finds, Reserve uses one node)."""
        run = _Run(self, node, claims, deadline)
        if not run.search():
            return None
        return run.results


@dataclass(frozen=True, slots=True)
class RequestSupply:
    """One request (or subrequest) of a claim on one node: what it wants against what the node offers."""

    request: str  # "gpu", or "gpu/small" for a subrequest of a prioritized list
    device_class: str
    wanted: int | None  # None: allocationMode All (every matching device)
    matching: int  # devices reachable from the node that pass the class's and the request's selectors
    free: int  # of those, the ones no other claim holds (admin access may use held ones)
    admin_access: bool = False


@dataclass(slots=True)
class ClaimDiagnosis:
    """Why one claim cannot get its devices on a node (see `diagnose`)."""

    fits_alone: bool
    requests: list[RequestSupply] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)  # matchAttribute names
    error: str = ""


def diagnose(
    allocator: Allocator, node: Node, claims: list[ResourceClaim], deadline: float | None = None
) -> list[ClaimDiagnosis]:
    """Each claim alone on the node, and the supply of every request: for `kubesched explain`.

    The allocator itself only answers "all claims, yes or no". This searches once more per claim,
    with the same devices in use, and counts the matching and free devices per request, so that a
    person can see which claim and which request is short. It only reads the allocator's state.
    """
    out: list[ClaimDiagnosis] = []
    for claim in claims:
        run = _Run(allocator, node, [claim], deadline)
        d = ClaimDiagnosis(False)
        try:
            d.fits_alone = run.search()
        except AllocationError as err:
            d.error = str(err)
        except AllocationTimeout:
            d.error = "timed out trying to allocate devices"
        d.constraints = [c.match_attribute for c in claim.spec.devices.constraints if c.match_attribute]
        try:
            d.requests = [_supply(run, key, data) for key, data in run.request_data.items()]
        except AllocationError as err:
            d.error = d.error or str(err)
        out.append(d)
    return out


def _supply(run: _Run, key: RequestKey, data: _RequestData) -> RequestSupply:
    request = data.request
    matching = free = 0
    for pool in run.pools:
        if pool.incomplete or pool.invalid:
            continue  # the search never takes devices from these
        for s in pool.slices:
            for index, device in enumerate(s.spec.devices):
                if not run._selectable(key, data, s, index):
                    continue
                matching += 1
                dev_id = (pool.driver, pool.name, device.name)
                taken = dev_id in run.a.allocated_devices and not request.admin_access
                if not taken and not device.consumes_counters:
                    free += 1
    wanted = None if request.mode == ALLOCATION_MODE_ALL else request.count
    return RequestSupply(data.request_name(), request.class_name, wanted, matching, free, request.admin_access)


class _Run:
    """One Allocate call: the search state for one node."""

    def __init__(self, a: Allocator, node: Node, claims: list[ResourceClaim], deadline: float | None) -> None:
        self.a = a
        self.features = a.features
        self.node = node
        self.claims = claims
        self.deadline = deadline
        self.pools: list[Pool] = []
        self.request_data: dict[RequestKey, _RequestData] = {}
        self.constraints: list[list[_MatchAttribute]] = [[] for _ in claims]
        self.matches: dict[tuple[DeviceID, RequestKey], bool] = {}
        self.allocating: dict[DeviceID, set[int]] = {}
        self.result: list[list[_Result]] = [[] for _ in claims]

    # ------------------------------------------------------------ setup

    def search(self) -> bool:
        """True when every claim found its devices; the picks stay in `self.result`."""
        self.pools = self.a.slices.pools(self.node, self.features.partitionable_devices)
        for ci, claim in enumerate(self.claims):
            min_devices = 0
            for ri, request in enumerate(claim.spec.devices.requests):
                has_subs = len(request.first_available) > 0
                if not self.features.prioritized_list and has_subs:
                    raise AllocationError(
                        f"claim {kobj(claim)}, request {request.name}: has subrequests, "
                        "but the DRAPrioritizedList feature is disabled"
                    )
                if not self.features.consumable_capacity:
                    if request.exactly is not None and request.exactly.capacity is not None:
                        raise AllocationError(
                            f"claim {kobj(claim)}, request {request.name}: has capacity requests, "
                            "but the DRAConsumableCapacity feature is disabled"
                        )
                    for sub in request.first_available:
                        if sub.capacity is not None:
                            raise AllocationError(
                                f"claim {kobj(claim)}, subrequest {sub.name}: has capacity requests, "
                                "but the DRAConsumableCapacity feature is disabled"
                            )
                if has_subs:
                    parent = _Request(request.name, _NoSpec, True)
                    least = _MAX_INT
                    for si, sub in enumerate(request.first_available):
                        data = self._validate(_Request.sub(sub), parent, (ci, ri, si))
                        self.request_data[(ci, ri, si)] = data
                        least = min(least, data.num_devices)
                    min_devices += least
                else:
                    if request.exactly is None:
                        raise AllocationError(
                            f"claim {kobj(claim)}, request {request.name}: "
                            "missing device class name (unsupported request type?)"
                        )
                    data = self._validate(_Request.exact(request), None, (ci, ri, 0))
                    self.request_data[(ci, ri, 0)] = data
                    min_devices += data.num_devices
            if min_devices > ALLOCATION_RESULTS_MAX_SIZE:
                raise AllocationError(
                    f"claim {kobj(claim)}: number of requested devices {min_devices} exceeds the claim limit "
                    f"of {ALLOCATION_RESULTS_MAX_SIZE}"
                )
            constraints: list[_MatchAttribute] = []
            for i, c in enumerate(claim.spec.devices.constraints):
                if c.match_attribute is not None:
                    constraints.append(_MatchAttribute(c.requests, c.match_attribute))
                else:
                    raise AllocationError(
                        f"claim {kobj(claim)}, constraint #{i}: empty constraint (unsupported constraint type?)"
                    )
            self.constraints[ci] = constraints

        try:
            done = self._allocate_one(0, 0, 0, 0, False)
        except _MaxSizeExceeded:
            raise AllocationError("allocation max size exceeded") from None
        if not done and any(p.invalid for p in self.pools):
            raise AllocationError("invalid resource pools were encountered")
        return done

    def results(self) -> list[AllocationResult]:
        return [self._allocation_result(ci, claim) for ci, claim in enumerate(self.claims)]

    def _validate(self, request: _Request, parent: _Request | None, key: RequestKey) -> _RequestData:
        claim = self.claims[key[0]]
        data = _RequestData(request, parent)
        for i, sel in enumerate(request.selectors):
            if sel.cel is None:
                raise AllocationError(
                    f"claim {kobj(claim)}, request {request.name}, selector #{i}: "
                    "CEL expression empty (unsupported selector type?)"
                )
        if not self.features.admin_access and request.has_admin_access:
            raise AllocationError(
                f"claim {kobj(claim)}, request {request.name}: admin access is requested, but the feature is disabled"
            )
        if not request.class_name:
            raise AllocationError(
                f"claim {kobj(claim)}, request {request.name}: missing device class name (unsupported request type?)"
            )
        try:
            data.klass = self.a.class_lister.get(request.class_name)
        except LookupError as err:
            raise AllocationError(
                f"claim {kobj(claim)}, request {request.name}: could not retrieve device class "
                f"{request.class_name}: {err}"
            ) from None
        if request.mode == ALLOCATION_MODE_EXACT_COUNT:
            data.num_devices = request.count
        elif request.mode == ALLOCATION_MODE_ALL:
            for pool in self.pools:
                if pool.incomplete:
                    raise AllocationError(
                        f"claim {kobj(claim)}, request {request.name}: asks for all devices, but resource pool "
                        f"{pool.pool_id} is currently being updated"
                    )
                if pool.invalid:
                    raise AllocationError(
                        f"claim {kobj(claim)}, request {request.name}: asks for all devices, but resource pool "
                        f"{pool.pool_id} is currently invalid"
                    )
                for s in pool.slices:
                    for di, device in enumerate(s.spec.devices):
                        if self._selectable(key, data, s, di):
                            dev_id = (s.spec.driver, s.spec.pool.name, device.name)
                            data.all_devices.append(_Candidate(dev_id, device, s, pool))
            data.num_devices = len(data.all_devices)
        else:
            raise AllocationError(f"claim {kobj(claim)}, request {request.name}: unsupported count mode {request.mode}")
        return data

    # ------------------------------------------------------------ search

    def _allocate_one(self, ci: int, ri: int, si: int, di: int, in_sub: bool) -> bool:
        """The search's step: device `di` of claim `ci`'s request `ri` (sub-request `si`), then the rest; True
        when every claim is allocated, with the choices kept; False with them undone."""
        self.a.num_allocate_one += 1
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise AllocationTimeout
        if ci >= len(self.claims):
            return True
        claim = self.claims[ci]
        if ri >= len(claim.spec.devices.requests):
            try:
                return self._allocate_one(ci + 1, 0, 0, 0, False)
            except _MaxSizeExceeded:
                return False

        key = (ci, ri, si)
        data = self.request_data[key]
        if not in_sub and data.parent is not None:
            return self._allocate_first_subrequest(ci, ri, di)

        request = data.request
        do_all = request.mode == ALLOCATION_MODE_ALL
        if do_all and not data.all_devices:
            return False
        if di >= data.num_devices:
            return self._allocate_one(ci, ri + 1, 0, 0, False)
        if len(self.result[ci]) + data.num_devices - di > ALLOCATION_RESULTS_MAX_SIZE:
            raise _MaxSizeExceeded
        if do_all:
            return self._allocate_next_of_all(ci, ri, si, di, in_sub, data)

        for pool in self.pools:
            if pool.incomplete or pool.invalid:
                continue
            for s in pool.slices:
                for index, device in enumerate(s.spec.devices):
                    dev_id = (pool.driver, pool.name, device.name)
                    if request.admin_access:
                        if ci in self.allocating.get(dev_id, ()):
                            continue
                    elif self._in_use(dev_id):
                        continue
                    if not self._selectable(key, data, s, index):
                        continue
                    undo = self._allocate_device(ci, ri, si, _Candidate(dev_id, device, s, pool), must=False)
                    if undo is None:
                        continue
                    try:
                        done = self._allocate_one(ci, ri, si, di + 1, in_sub)
                    except BaseException:
                        undo()
                        raise
                    if done:
                        return True
                    undo()
        return False

    def _allocate_first_subrequest(self, ci: int, ri: int, di: int) -> bool:
        """A request with sub-requests (firstAvailable): the first sub-request that can be allocated, in order.

        Raises _MaxSizeExceeded only when every sub-request exceeded the allocation's maximum size.
        """
        all_exceeded = True
        sub = 0
        while (ci, ri, sub) in self.request_data:
            try:
                ok = self._allocate_one(ci, ri, sub, di, True)
            except _MaxSizeExceeded:
                sub += 1
                continue
            all_exceeded = False
            if ok:
                self.request_data[(ci, ri, 0)].selected_sub = sub
                return True
            sub += 1
        if all_exceeded:
            raise _MaxSizeExceeded
        return False

    def _allocate_next_of_all(self, ci: int, ri: int, si: int, di: int, in_sub: bool, data: _RequestData) -> bool:
        """allocationMode All: device `di` of the request's devices must be allocated, then the rest of the search."""
        undo = self._allocate_device(ci, ri, si, data.all_devices[di], must=True)
        if undo is None:
            return False
        try:
            done = self._allocate_one(ci, ri, si, di + 1, in_sub)
        except BaseException:
            undo()
            raise
        if not done:
            undo()
        return done

    def _in_use(self, dev_id: DeviceID) -> bool:
        return dev_id in self.a.allocated_devices or bool(self.allocating.get(dev_id))

    def _selectable(self, key: RequestKey, data: _RequestData, s: ResourceSlice, index: int) -> bool:
        device = s.spec.devices[index]
        if not self.features.device_binding and device.binding_conditions:
            return False
        dev_id = (s.spec.driver, s.spec.pool.name, device.name)
        mkey = (dev_id, key)
        cached = self.matches.get(mkey)
        if cached is not None:
            return cached
        ok = True
        if data.klass is not None:
            ok = self._selectors_match(key, s, index, dev_id, data.klass, data.klass.spec.selectors)
        if ok:
            ok = self._selectors_match(key, s, index, dev_id, None, data.request.selectors)
        if ok and s.spec.per_device_node_selection:
            ok = node_matches(self.node, device.node_name or "", bool(device.all_nodes), device.node_selector)
        self.matches[mkey] = ok
        return ok

    def _selectors_match(
        self,
        key: RequestKey,
        s: ResourceSlice,
        index: int,
        dev_id: DeviceID,
        klass: DeviceClass | None,
        selectors: list[DeviceSelector],
    ) -> bool:
        if not selectors:
            return True
        cache = self.a.match_cache
        dkey = cache.device_key(s, index)
        for i, sel in enumerate(selectors):
            assert sel.cel is not None
            expr = sel.cel.expression
            compiled = cel.compile_expression(expr)
            owner = f"class {klass.metadata.name}" if klass is not None else f"claim {kobj(self.claims[key[0]])}"
            if compiled.error:
                raise AllocationError(f"{owner}: selector #{i}: CEL compile error: {compiled.error}")
            rkey = (expr, dkey) if dkey is not None else None
            matched = cache.results.get(rkey) if rkey is not None else None
            if matched is None:
                device_input = cache.device_input(dkey, dev_id[0], s.spec.devices[index])
                try:
                    matched = cel.device_matches(compiled, device_input)
                except cel.CELError as err:
                    raise AllocationError(
                        f"{owner}: selector #{i} on device {device_id_str(dev_id)}: CEL runtime error: {err}"
                    ) from None
                if rkey is not None:
                    if len(cache.results) >= cache.limit:
                        cache.results.clear()
                    cache.results[rkey] = matched
            if not matched:
                return False
        return True

    def _allocate_device(self, ci: int, ri: int, si: int, cand: _Candidate, must: bool) -> Callable[[], None] | None:
        """Take the candidate if it is free and fits the constraints; returns the undo, or None."""
        claim = self.claims[ci]
        data = self.request_data[(ci, ri, si)]
        request = data.request
        if request.admin_access:
            if ci in self.allocating.get(cand.id, ()):
                return None
        elif self._in_use(cand.id):
            return None
        if cand.device.consumes_counters:
            # Partitionable devices are off by default in 1.34: such devices are never allocated.
            return None
        if data.parent is None:
            base, sub = request.name, ""
        else:
            base, sub = data.parent.name, request.name
        constraints = self.constraints[ci]
        for i, c in enumerate(constraints):
            if not c.add(base, sub, cand.device, cand.id):
                if must:
                    raise AllocationError(
                        f"claim {kobj(claim)}, request {request.name}: cannot add device "
                        f"{device_id_str(cand.id)} because a claim constraint would not be satisfied"
                    )
                for e in range(i):
                    constraints[e].remove(base, sub, cand.device, cand.id)
                return None

        self.allocating.setdefault(cand.id, set()).add(ci)
        results = self.result[ci]
        before = len(results)
        results.append(
            _Result(
                request.name,
                data.parent.name if data.parent is not None else "",
                cand.id,
                cand.device,
                cand.slice,
                True if request.admin_access else None,
            )
        )

        def undo() -> None:
            for c in constraints:
                c.remove(base, sub, cand.device, cand.id)
            self.allocating[cand.id].discard(ci)
            del results[before:]

        return undo

    # ------------------------------------------------------------ results

    def _allocation_result(self, ci: int, claim: ResourceClaim) -> AllocationResult:
        results = [
            DeviceRequestAllocationResult(
                request=r.request_name(),
                driver=r.id[0],
                pool=r.id[1],
                device=r.id[2],
                admin_access=r.admin_access,
                tolerations=list(self._lookup_request(claim, r).tolerations),
            )
            for r in self.result[ci]
        ]
        config: list[DeviceAllocationConfiguration] = []
        class_ranges: dict[str, tuple[int, int]] = {}
        requests = claim.spec.devices.requests
        for ri in range(len(requests)):
            data = self.request_data[(ci, ri, 0)]
            if data.parent is not None:
                data = self.request_data[(ci, ri, data.selected_sub)]
            klass = data.klass
            if klass is None:
                continue
            name = data.request_name()
            rng = class_ranges.get(klass.metadata.name)
            if rng is not None:
                for i in range(*rng):
                    config[i].requests.append(name)
                continue
            start = len(config)
            for class_config in klass.spec.config:
                config.append(
                    DeviceAllocationConfiguration(source="FromClass", requests=[name], opaque=class_config.opaque)
                )
            class_ranges[klass.metadata.name] = (start, len(config))
        for claim_config in claim.spec.devices.config:
            named = list(claim_config.requests)
            if not named:
                config.append(
                    DeviceAllocationConfiguration(source="FromClaim", requests=[], opaque=claim_config.opaque)
                )
                continue
            for ri, request in enumerate(requests):
                if request.name in named:
                    config.append(
                        DeviceAllocationConfiguration(
                            source="FromClaim", requests=list(named), opaque=claim_config.opaque
                        )
                    )
                    continue
                data = self.request_data[(ci, ri, 0)]
                if data.parent is None:
                    continue
                sub = request.first_available[data.selected_sub]
                if f"{request.name}/{sub.name}" in named:
                    config.append(
                        DeviceAllocationConfiguration(
                            source="FromClaim", requests=list(named), opaque=claim_config.opaque
                        )
                    )
        for allocated in config:
            if len(allocated.requests) == len(requests):
                allocated.requests = []
        return AllocationResult(
            devices=DeviceAllocationResult(results=results, config=config),
            node_selector=self._node_selector(self.result[ci]),
        )

    def _lookup_request(self, claim: ResourceClaim, r: _Result) -> Any:
        name = r.parent or r.request
        for request in claim.spec.devices.requests:
            if request.name != name:
                continue
            if not r.parent:
                return request.exactly
            for sub in request.first_available:
                if sub.name == r.request:
                    return sub
        return _NoSpec

    def _node_selector(self, results: list[_Result]) -> NodeSelector | None:
        fields: list[NodeSelectorRequirement] = []
        exprs: list[NodeSelectorRequirement] = []
        for r in results:
            spec = r.slice.spec
            if spec.per_device_node_selection:
                node_name, selector = r.device.node_name, r.device.node_selector
            else:
                node_name, selector = spec.node_name, spec.node_selector
            if node_name:
                req = NodeSelectorRequirement(key="metadata.name", operator="In", values=[node_name])
                return NodeSelector(node_selector_terms=[NodeSelectorTerm(match_fields=[req])])
            if selector is not None:
                terms = selector.node_selector_terms
                if len(terms) == 1:
                    _add_requirements(terms[0].match_fields, fields)
                    _add_requirements(terms[0].match_expressions, exprs)
                elif len(terms) > 1:
                    raise AllocationError(f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms")
        if fields or exprs:
            return NodeSelector(node_selector_terms=[NodeSelectorTerm(match_expressions=exprs, match_fields=fields)])
        return None


class _NoSpecType:
    """Stands in for a request spec where only the name matters."""

    device_class_name = ""
    mode = ALLOCATION_MODE_EXACT_COUNT
    amount = 0
    selectors: list[Any] = []
    tolerations: list[Any] = []


_NoSpec: Any = _NoSpecType()


def _add_requirements(src: list[NodeSelectorRequirement], dst: list[NodeSelectorRequirement]) -> None:
    for req in src:
        values = set(req.values)
        if not any(r.key == req.key and r.operator == req.operator and set(r.values) == values for r in dst):
            dst.append(req)
