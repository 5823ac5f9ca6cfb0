"""The resource.k8s.io/v1 objects of Dynamic Resource Allocation.

DeviceClass, ResourceClaim, ResourceClaimTemplate and ResourceSlice, with the
fields the scheduler and the resourceclaim controller read or write. Defaults
the API server would apply (allocationMode ExactCount, count 1) are applied by
the accessors (`ExactDeviceRequest.mode`, `.amount`), so manifests that omit
them decode as the API server would store them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from kubesched.api.core import NodeSelector
from kubesched.api.meta import K8sStruct, ObjectMeta

ALLOCATION_MODE_EXACT_COUNT = "ExactCount"
ALLOCATION_MODE_ALL = "All"

# Limits of the v1 API (types.go) that the allocator enforces.
ALLOCATION_RESULTS_MAX_SIZE = 32
RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE = 256

FINALIZER = "resource.kubernetes.io/delete-protection"
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"

# A quantity as written in YAML.
QuantityValue = str | int | float


# ---------------------------------------------------------------- selectors and classes


class CELDeviceSelector(K8sStruct):
    expression: str = ""


class DeviceSelector(K8sStruct):
    cel: CELDeviceSelector | None = None


class OpaqueDeviceConfiguration(K8sStruct):
    driver: str = ""
    parameters: Any = None


class DeviceConfiguration(K8sStruct):
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClassConfiguration(K8sStruct):
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClassSpec(K8sStruct):
    selectors: list[DeviceSelector] = []
    config: list[DeviceClassConfiguration] = []
    extended_resource_name: str | None = None


class DeviceClass(K8sStruct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: DeviceClassSpec = msgspec.field(default_factory=DeviceClassSpec)


# ---------------------------------------------------------------- claims


class DeviceToleration(K8sStruct):
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


class _CountedDeviceRequest(K8sStruct):
    """What ExactDeviceRequest and DeviceSubRequest share: a class, selectors and how many devices."""

    device_class_name: str = ""
    selectors: list[DeviceSelector] = []
    allocation_mode: str = ""
    count: int | None = None
    tolerations: list[DeviceToleration] = []
    capacity: Any = None

    @property
    def mode(self) -> str:
        """allocationMode as stored: ExactCount when omitted."""
        return self.allocation_mode or ALLOCATION_MODE_EXACT_COUNT

    @property
    def amount(self) -> int:
        """count as stored: 1 when omitted in ExactCount mode."""
        if self.count is None:
            return 1 if self.mode == ALLOCATION_MODE_EXACT_COUNT else 0
        return self.count


class ExactDeviceRequest(_CountedDeviceRequest):
    admin_access: bool | None = None


class DeviceSubRequest(_CountedDeviceRequest, kw_only=True):
    name: str = ""


class DeviceRequest(K8sStruct):
    name: str = ""
    exactly: ExactDeviceRequest | None = None
    first_available: list[DeviceSubRequest] = []


class DeviceConstraint(K8sStruct):
    requests: list[str] = []
    match_attribute: str | None = None
    distinct_attribute: str | None = None


class DeviceClaimConfiguration(K8sStruct):
    requests: list[str] = []
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClaim(K8sStruct):
    requests: list[DeviceRequest] = []
    constraints: list[DeviceConstraint] = []
    config: list[DeviceClaimConfiguration] = []


class ResourceClaimSpec(K8sStruct):
    devices: DeviceClaim = msgspec.field(default_factory=DeviceClaim)


class DeviceRequestAllocationResult(K8sStruct):
    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool | None = None
    tolerations: list[DeviceToleration] = []
    binding_conditions: list[str] = []
    binding_failure_conditions: list[str] = []
    share_id: str | None = msgspec.field(default=None, name="shareID")
    consumed_capacity: dict[str, QuantityValue] = {}


class DeviceAllocationConfiguration(K8sStruct):
    source: str
    requests: list[str] = []
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceAllocationResult(K8sStruct):
    results: list[DeviceRequestAllocationResult] = []
    config: list[DeviceAllocationConfiguration] = []


class AllocationResult(K8sStruct):
    devices: DeviceAllocationResult = msgspec.field(default_factory=DeviceAllocationResult)
    node_selector: NodeSelector | None = None
    allocation_timestamp: datetime | None = None


class ResourceClaimConsumerReference(K8sStruct):
    api_group: str = ""
    resource: str = ""
    name: str = ""
    uid: str = ""


class AllocatedDeviceStatus(K8sStruct):
    driver: str
    pool: str
    device: str
    share_id: str | None = msgspec.field(default=None, name="shareID")
    conditions: list[Any] = []
    data: Any = None


class ResourceClaimStatus(K8sStruct):
    allocation: AllocationResult | None = None
    reserved_for: list[ResourceClaimConsumerReference] = []
    devices: list[AllocatedDeviceStatus] = []


class ResourceClaim(K8sStruct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceClaimSpec = msgspec.field(default_factory=ResourceClaimSpec)
    status: ResourceClaimStatus = msgspec.field(default_factory=ResourceClaimStatus)


class ResourceClaimTemplateSpec(K8sStruct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceClaimSpec = msgspec.field(default_factory=ResourceClaimSpec)


class ResourceClaimTemplate(K8sStruct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceClaimTemplateSpec = msgspec.field(default_factory=ResourceClaimTemplateSpec)


# ---------------------------------------------------------------- slices


class DeviceAttribute(K8sStruct):
    """Exactly one of the values is set (int, bool, string or a semver version)."""

    int_value: int | None = msgspec.field(default=None, name="int")
    bool_value: bool | None = msgspec.field(default=None, name="bool")
    string_value: str | None = msgspec.field(default=None, name="string")
    version_value: str | None = msgspec.field(default=None, name="version")


class DeviceCapacity(K8sStruct):
    value: QuantityValue
    request_policy: Any = None


class DeviceTaint(K8sStruct):
    key: str
    value: str = ""
    effect: str = ""
    time_added: datetime | None = None


class DeviceCounterConsumption(K8sStruct):
    counter_set: str
    counters: dict[str, Any] = {}


class Device(K8sStruct):
    name: str = ""
    attributes: dict[str, DeviceAttribute] = {}
    capacity: dict[str, DeviceCapacity] = {}
    consumes_counters: list[DeviceCounterConsumption] = []
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    taints: list[DeviceTaint] = []
    binds_to_node: bool | None = None
    binding_conditions: list[str] = []
    binding_failure_conditions: list[str] = []
    allow_multiple_allocations: bool | None = None


class ResourcePool(K8sStruct):
    name: str = ""
    generation: int = 0
    resource_slice_count: int = 0  # required: the API server refuses a pool without it


class CounterSet(K8sStruct):
    name: str
    counters: dict[str, Any] = {}


class ResourceSliceSpec(K8sStruct):
    driver: str = ""
    pool: ResourcePool = msgspec.field(default_factory=lambda: ResourcePool(name=""))
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    per_device_node_selection: bool | None = None
    devices: list[Device] = []
    shared_counters: list[CounterSet] = []


class ResourceSlice(K8sStruct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceSliceSpec = msgspec.field(default_factory=ResourceSliceSpec)
