"""Where each kind lives in the REST API: group, version, plural, scope.

One table serves both sides: the live client builds URLs from it and
`kubesched serve` builds its discovery documents and routes from it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Resource:
    kind: str
    group: str
    version: str
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    def base(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def collection_path(self, namespace: str = "") -> str:
        """The list/watch/create URL; all namespaces when namespace is empty."""
        if self.namespaced and namespace:
            return f"{self.base()}/namespaces/{namespace}/{self.plural}"
        return f"{self.base()}/{self.plural}"

    def object_path(self, name: str, namespace: str = "", subresource: str = "") -> str:
        path = f"{self.collection_path(namespace)}/{name}"
        return f"{path}/{subresource}" if subresource else path


RESOURCES: tuple[Resource, ...] = (
    Resource("Pod", "", "v1", "pods", True, ("po",), ("status", "binding")),
    Resource("Node", "", "v1", "nodes", False, ("no",), ("status",)),
    Resource("Namespace", "", "v1", "namespaces", False, ("ns",), ("status",)),
    Resource("Service", "", "v1", "services", True, ("svc",), ("status",)),
    Resource("ReplicationController", "", "v1", "replicationcontrollers", True, ("rc",), ("status", "scale")),
    Resource("PersistentVolume", "", "v1", "persistentvolumes", False, ("pv",), ("status",)),
    Resource("PersistentVolumeClaim", "", "v1", "persistentvolumeclaims", True, ("pvc",), ("status",)),
    Resource("CoreEvent", "", "v1", "events", True, ("ev",)),
    Resource("ReplicaSet", "apps", "v1", "replicasets", True, ("rs",), ("status", "scale")),
    Resource("StatefulSet", "apps", "v1", "statefulsets", True, ("sts",), ("status", "scale")),
    Resource("Deployment", "apps", "v1", "deployments", True, ("deploy",), ("status", "scale")),
    Resource("DaemonSet", "apps", "v1", "daemonsets", True, ("ds",), ("status",)),
    Resource("Job", "batch", "v1", "jobs", True, (), ("status",)),
    Resource("CronJob", "batch", "v1", "cronjobs", True, ("cj",), ("status",)),
    Resource("PodDisruptionBudget", "policy", "v1", "poddisruptionbudgets", True, ("pdb",), ("status",)),
    Resource("PriorityClass", "scheduling.k8s.io", "v1", "priorityclasses", False, ("pc",)),
    Resource("StorageClass", "storage.k8s.io", "v1", "storageclasses", False, ("sc",)),
    Resource("CSINode", "storage.k8s.io", "v1", "csinodes", False),
    Resource("CSIDriver", "storage.k8s.io", "v1", "csidrivers", False),
    Resource("CSIStorageCapacity", "storage.k8s.io", "v1", "csistoragecapacities", True),
    Resource("VolumeAttachment", "storage.k8s.io", "v1", "volumeattachments", False, (), ("status",)),
    Resource("Lease", "coordination.k8s.io", "v1", "leases", True),
    Resource("Event", "events.k8s.io", "v1", "events", True, ("ev",)),
    Resource("DeviceClass", "resource.k8s.io", "v1", "deviceclasses", False),
    Resource("ResourceClaim", "resource.k8s.io", "v1", "resourceclaims", True, (), ("status",)),
    Resource("ResourceClaimTemplate", "resource.k8s.io", "v1", "resourceclaimtemplates", True),
    Resource("ResourceSlice", "resource.k8s.io", "v1", "resourceslices", False),
)

BY_KIND: dict[str, Resource] = {r.kind: r for r in RESOURCES}

# The kinds the scheduler's informers watch (pkg/scheduler/eventhandlers.go and the plugins' listers).
# Only kinds the decoder knows are watched (e.g. resource.k8s.io/v1 when DRA's structs are registered).
SCHEDULER_KINDS: tuple[str, ...] = (
    "Node",
    "Namespace",
    "StorageClass",
    "CSINode",
    "CSIDriver",
    "CSIStorageCapacity",
    "VolumeAttachment",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "Service",
    "ReplicationController",
    "ReplicaSet",
    "StatefulSet",
    "PodDisruptionBudget",
    "DeviceClass",
    "ResourceSlice",
    "ResourceClaim",
    "Pod",
)

# Kinds out-of-tree plugins read through their listers (CRDs such as PodGroup), watched besides those above.
PLUGIN_KINDS: list[str] = []


def register_watched(resource: Resource) -> None:
    """Let `kubesched run` list and watch a plugin's own kind, as upstream plugins start their own informers.

    The kind must also be known to the decoder (api.decode.register_kind). A cluster that does
    not serve it (the CRD is not installed) is treated as holding none.
    """
    BY_KIND.setdefault(resource.kind, resource)
    if resource.kind not in PLUGIN_KINDS:
        PLUGIN_KINDS.append(resource.kind)


# The scheduler's pod informer leaves out terminal pods (scheduler.go: newPodInformer).
POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"


def resource_for(kind: str) -> Resource:
    try:
        return BY_KIND[kind]
    except KeyError:
        raise KeyError(f"no REST resource known for kind {kind!r}") from None


def api_version(kind: str) -> str:
    r = BY_KIND[kind]
    return r.group_version
