"""GPU sharing as a Kubernetes extended resource plus a Filter/Reserve plugin (Open-GPU-Share's model).

A node offers `alibabacloud.com/gpu-count` GPUs of 1000 milli-GPU each (its
`alibabacloud.com/gpu-milli` capacity is count x 1000) and names their model
in the label `alibabacloud.com/gpu-card-model`. A pod asks, in annotations,
for `gpu-count` GPUs of `gpu-milli` milli each (a share of one GPU when the
count is 1 and milli < 1000; whole GPUs otherwise) and may accept only some
models (`gpu-card-model: V100M16|V100M32`); it also requests the total milli
as the extended resource, so NodeResourcesFit and every tool that reads
requests see the aggregate. Which GPUs a pod holds is the annotation
`alibabacloud.com/gpu-index` ("2", "0-1-2-3"), written at PreBind: the API is
the source of truth, and a node's per-GPU free milli is derived from the pods
on it (a pod leaving frees its GPUs with no bookkeeping). Between Reserve and
the bound pod's arrival in the cache, the choice rides on the assumed PodInfo.

GpuShare is the reference simulator's Open-Gpu-Share plugin
(pkg/simulator/plugin/open_gpu_share.go): Filter rejects nodes without a fit
(GpuNodeInfo.AllocateGpuId), Reserve picks concrete GPUs with `gpuSelMethod`
(best, worst, random, or a policy plugin's own `select_gpus`). `DeviceTable`
holds every node's GPUs as numpy columns, re-derived only for the rows the
snapshot changed, for the policies' whole-snapshot scores.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Protocol

import msgspec
import numpy as np

from kubesched.plugin_api import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EnqueueExtensions,
    EventResource,
    FilterVerdicts,
    NodeInfo,
    PodInfo,
    PreBindPlugin,
    QueueingHint,
    ReservePlugin,
    Snapshot,
    Status,
    VectorFilterPlugin,
)

GPU_MILLI = "alibabacloud.com/gpu-milli"
GPU_COUNT = "alibabacloud.com/gpu-count"
GPU_MODEL = "alibabacloud.com/gpu-card-model"
GPU_INDEX = "alibabacloud.com/gpu-index"
MILLI = 1000
# The reference's normalizers (open-gpu-share/utils/const.go): the largest node's CPU and GPU milli.
MAX_SPEC_CPU = 128_000
MAX_SPEC_GPU = 8_000
NO_GPU_TAG = "no-gpu"
SHARE_GPU_TAG = "share-gpu"

# PodInfo.cache keys: the parsed request, and the GPUs chosen at Reserve (until the annotation arrives).
_REQUEST_KEY = "gpushare/request"
_ALLOC_KEY = "gpushare/alloc"


class GpuRequestError(ValueError):
    """A pod's GPU annotations that cannot be read (named field and value)."""


@dataclass(frozen=True, slots=True)
class GpuRequest:
    """What a pod asks of GPUs (the reference's PodResource): CPU milli, milli per GPU, GPU count, models."""

    cpu: int
    milli: int
    num: int
    models: str = ""

    @property
    def total(self) -> int:
        return self.milli * self.num

    @property
    def is_share(self) -> bool:
        return self.num == 1 and self.milli < MILLI

    @property
    def uses_gpu(self) -> bool:
        return self.milli > 0 and self.num > 0

    @property
    def affinity(self) -> str:
        """GetGpuAffinityFromPodAnnotation: share-gpu, N-gpu or no-gpu (GpuClustering's tag)."""
        if self.num == 0:
            return NO_GPU_TAG
        return SHARE_GPU_TAG if self.is_share else f"{self.num}-gpu"


def accepts_model(models: str, node_model: str) -> bool:
    """IsNodeAccessibleToPodByType: no constraint fits any node; a constraint needs a GPU node of a listed model."""
    wanted = [m for m in models.split("|") if m]
    if not wanted:
        return True
    return bool(node_model) and node_model in wanted


def parse_request(pod: PodInfo) -> GpuRequest:
    """The pod's GPU request from its annotations, parsed once per PodInfo."""
    req = pod.cache.get(_REQUEST_KEY)
    if req is None:
        ann = pod.pod.metadata.annotations or {}
        num = _int_annotation(ann, GPU_COUNT)
        milli = _int_annotation(ann, GPU_MILLI) if num > 0 else 0
        if num > 1 and milli != MILLI:
            raise GpuRequestError(f"{GPU_MILLI}: {milli}: a pod with {num} GPUs takes whole GPUs (1000)")
        if milli > MILLI:
            raise GpuRequestError(f"{GPU_MILLI}: {milli}: more than one GPU's 1000")
        req = GpuRequest(pod.non0_cpu, milli, num if milli > 0 else 0, ann.get(GPU_MODEL, ""))
        pod.cache[_REQUEST_KEY] = req
    return req


def _int_annotation(ann: dict[str, str], key: str) -> int:
    raw = ann.get(key)
    if raw is None or raw == "":
        return 0
    try:
        value = int(raw)
    except ValueError:
        raise GpuRequestError(f"{key}: {raw!r} is not a whole number") from None
    if value < 0:
        raise GpuRequestError(f"{key}: {value} is negative")
    return value


def allocation(pod: PodInfo) -> tuple[tuple[int, ...], int] | None:
    """The GPUs a pod on a node holds and its milli on each: chosen at Reserve, or its gpu-index annotation."""
    alloc = pod.cache.get(_ALLOC_KEY)
    if alloc is not None:
        return alloc
    raw = (pod.pod.metadata.annotations or {}).get(GPU_INDEX)
    if not raw:
        return None
    try:
        idx = tuple(int(x) for x in raw.split("-"))
        req = parse_request(pod)
    except (ValueError, GpuRequestError):
        return None
    alloc = (idx, req.milli)
    pod.cache[_ALLOC_KEY] = alloc
    return alloc


@dataclass(slots=True)
class NodeGpus:
    """One node as the policies read it (the reference's NodeResource): CPU left and each GPU's free milli."""

    name: str
    cpu_left: int
    cpu_capacity: int
    model: str
    free: list[int]
    affinity: dict[str, int]

    @property
    def num(self) -> int:
        return len(self.free)

    @property
    def total_free(self) -> int:
        return sum(self.free)

    def fully_free(self) -> int:
        return sum(1 for f in self.free if f == MILLI)


def node_gpus(ni: NodeInfo) -> NodeGpus:
    """Derive the node's GPU state from its pods (the reference's GetNodeResourceViaNodeInfo)."""
    node = ni.node
    assert node is not None
    num = int(ni.allocatable.scalar.get(GPU_COUNT, 0))
    free = [MILLI] * num
    affinity: dict[str, int] = {}
    for p in ni.pods:
        req = _request_or_none(p)
        if req is None or not req.uses_gpu:
            continue
        affinity[req.affinity] = affinity.get(req.affinity, 0) + 1
        alloc = allocation(p)
        if alloc is not None:
            for i in alloc[0]:
                if 0 <= i < num:
                    free[i] -= alloc[1]
    cap = ni.allocatable.milli_cpu
    return NodeGpus(ni.name, cap - ni.requested.milli_cpu, cap, node.metadata.labels.get(GPU_MODEL, ""), free, affinity)


def _request_or_none(p: PodInfo) -> GpuRequest | None:
    try:
        return parse_request(p)
    except GpuRequestError:
        return None


def can_host(v: NodeGpus, req: GpuRequest) -> bool:
    """AllocateGpuId's verdict: enough GPUs with the milli free (each GPU takes one of a multi-GPU pod's)."""
    return sum(1 for f in v.free if f >= req.milli) >= req.num


# ---------------------------------------------------------------- GPU choice (the Reserve step)


def exclusive_gpus(v: NodeGpus, req: GpuRequest) -> tuple[int, ...] | None:
    """AllocateExclusiveGpuId: the first `num` fully free GPUs, in index order."""
    ids = tuple(i for i, f in enumerate(v.free) if f == MILLI)[: req.num]
    return ids if len(ids) == req.num else None


def best_fit_gpu(v: NodeGpus, req: GpuRequest) -> tuple[int, ...] | None:
    """allocateGpuIdBasedOnBestFit: a share goes to the fitting GPU with the least free (lowest index on ties)."""
    if not req.is_share:
        return exclusive_gpus(v, req)
    fits = [(f, i) for i, f in enumerate(v.free) if f >= req.milli]
    return (min(fits)[1],) if fits else None


def worst_fit_gpu(v: NodeGpus, req: GpuRequest) -> tuple[int, ...] | None:
    """allocateGpuIdBasedOnWorstFit: a share goes to the fitting GPU with the most free (lowest index on ties)."""
    if not req.is_share:
        return exclusive_gpus(v, req)
    fits = [(-f, i) for i, f in enumerate(v.free) if f >= req.milli]
    return (min(fits)[1],) if fits else None


def random_fit_gpu(v: NodeGpus, req: GpuRequest, rng: Any) -> tuple[int, ...] | None:
    """allocateGpuIdBasedOnRandomFit: a share goes to a fitting GPU drawn uniformly."""
    if not req.is_share:
        return exclusive_gpus(v, req)
    fits = [i for i, f in enumerate(v.free) if f >= req.milli]
    return (fits[rng.randrange(len(fits))],) if fits else None


class GpuSelector(Protocol):
    """A policy that chooses the GPUs itself (FGD): GpuShare's Reserve calls it when gpuSelMethod names it."""

    name: str

    def select_gpus(self, pod: PodInfo, req: GpuRequest, node: NodeGpus) -> tuple[int, ...] | None: ...


# ---------------------------------------------------------------- every node at once


class DeviceTable:
    """Every snapshot node's GPUs as numpy columns, re-derived for the rows whose NodeInfo changed.

    `free[i, j]` is GPU j's free milli (-1 past the node's GPUs), `gpu_left[i]` their sum,
    `aff[i, k]` the node's pods of affinity tag k (0: share-gpu, k >= 1: k-gpu), `naff[i]` how
    many tags it has (GpuClustering).
    `gen` holds the generation each row was derived at: caches of per-node values compare with it.
    """

    def __init__(self) -> None:
        self.epoch = 0
        self.n = -1
        self.node_generation = -1
        self.synced_generation = -1
        self.width = 1
        self.models: dict[str, int] = {}
        self._alloc(0)

    def _alloc(self, n: int) -> None:
        w = self.width
        self.cpu_left = np.zeros(n, np.int64)
        self.cpu_cap = np.zeros(n, np.int64)
        self.ngpu = np.zeros(n, np.int64)
        self.model = np.full(n, -1, np.int64)
        self.free = np.full((n, w), -1, np.int64)
        self.gpu_left = np.zeros(n, np.int64)
        self.aff = np.zeros((n, w + 1), np.int64)
        self.naff = np.zeros(n, np.int64)
        self.gen = np.full(n, -1, np.int64)

    def sync(self, snapshot: Snapshot) -> None:
        """Bring the columns up to the snapshot: all rows when its node list changed, else the changed ones."""
        if snapshot.generation == self.synced_generation and self.n == len(snapshot.nodes):
            return
        nodes = snapshot.nodes
        if self.n != len(nodes) or self.node_generation != snapshot.node_generation:
            self.n = len(nodes)
            self.node_generation = snapshot.node_generation
            self.width = max([1, *(int(ni.allocatable.scalar.get(GPU_COUNT, 0)) for ni in nodes)])
            self.epoch += 1
            self._alloc(self.n)
        gens = snapshot.row_gen
        for i in np.flatnonzero(gens != self.gen).tolist():
            self._write_row(i, nodes[i])
            self.gen[i] = gens[i]
        self.synced_generation = snapshot.generation

    def _write_row(self, i: int, ni: NodeInfo) -> None:
        v = node_gpus(ni)
        self.cpu_left[i] = v.cpu_left
        self.cpu_cap[i] = v.cpu_capacity
        self.ngpu[i] = v.num
        self.model[i] = self.models.setdefault(v.model, len(self.models)) if v.model else -1
        row = self.free[i]
        row[:] = -1
        row[: v.num] = v.free
        self.gpu_left[i] = v.total_free
        self.aff[i] = 0
        for tag, count in v.affinity.items():
            self.aff[i, 0 if tag == SHARE_GPU_TAG else int(tag.split("-")[0])] = count
        self.naff[i] = len(v.affinity)

    def accessible(self, models: str) -> np.ndarray:
        """Per node, whether the pod's model constraint admits it (all True without one)."""
        wanted = [m for m in models.split("|") if m]
        if not wanted:
            return np.ones(self.n, bool)
        codes = [self.models[m] for m in wanted if m in self.models]
        return np.isin(self.model, codes)

    def fits(self, req: GpuRequest) -> np.ndarray:
        """Per node, GpuShare's Filter verdict for a GPU pod."""
        return (self.free >= req.milli).sum(axis=1) >= req.num


def table_view(t: DeviceTable, ni: NodeInfo) -> NodeGpus:
    """The node as its table row shows it: this cycle's state, without the pod being placed (Reserve's view)."""
    i = ni.index
    if not 0 <= i < t.n or t.gen[i] < 0:
        return node_gpus(ni)
    model = ni.node.metadata.labels.get(GPU_MODEL, "") if ni.node is not None else ""
    num = int(t.ngpu[i])
    return NodeGpus(ni.name, int(t.cpu_left[i]), int(t.cpu_cap[i]), model, t.free[i, :num].tolist(), {})


_TABLES: weakref.WeakKeyDictionary[Snapshot, DeviceTable] = weakref.WeakKeyDictionary()


def device_table(snapshot: Snapshot) -> DeviceTable:
    """The snapshot's DeviceTable, synced: one per snapshot, shared by the plugins that read it."""
    table = _TABLES.get(snapshot)
    if table is None:
        table = _TABLES[snapshot] = DeviceTable()
    table.sync(snapshot)
    return table


class RowCache:
    """Per-node values of a pure function of (pod shape, node state), recomputed only on changed rows.

    A policy's score for a node depends on the pod only through its GpuRequest and on the node only
    through its row of the DeviceTable, so a value computed at a row's generation stays right until
    the row changes; traces repeat a few dozen pod shapes, so most rows are reused.
    """

    def __init__(self, columns: int = 1) -> None:
        self.columns = columns
        self.epoch = -1
        self.entries: dict[Hashable, tuple[np.ndarray, np.ndarray]] = {}

    def get(
        self, table: DeviceTable, key: Hashable, idx: np.ndarray, compute: Callable[[np.ndarray], np.ndarray]
    ) -> np.ndarray:
        """Values (len(idx) x columns) for rows `idx`; `compute(rows)` gives those of stale rows."""
        if self.epoch != table.epoch:
            self.entries = {}
            self.epoch = table.epoch
        entry = self.entries.get(key)
        if entry is None:
            entry = self.entries[key] = (np.zeros((table.n, self.columns), np.int64), np.full(table.n, -2, np.int64))
        values, gens = entry
        stale = idx[gens[idx] != table.gen[idx]]
        if len(stale):
            values[stale] = compute(stale).reshape(len(stale), self.columns)
            gens[stale] = table.gen[stale]
        return values[idx]


# ---------------------------------------------------------------- the plugin


class GpuShareArgs(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    """pluginConfig args: how Reserve picks GPUs: best, worst, random, or a policy plugin's name (FGD)."""

    gpu_sel_method: str = "best"


_SELECTORS: dict[str, Callable[..., tuple[int, ...] | None]] = {
    "best": best_fit_gpu,
    "worst": worst_fit_gpu,
}

_NO_GPU = 1
_WRONG_MODEL = 2
_NO_FIT = 3
_REASONS = {
    _NO_GPU: "node(s) had no GPU",
    _WRONG_MODEL: "node(s) had no GPU of the requested model",
    _NO_FIT: "node(s) had no GPUs with enough free milli",
}


class GpuShare(VectorFilterPlugin, ReservePlugin, PreBindPlugin, EnqueueExtensions):
    """Open-Gpu-Share: Filter by a fit on concrete GPUs, Reserve the GPUs, record them on the pod at PreBind."""

    name = "GpuShare"
    args_type = GpuShareArgs

    def __init__(self, args: GpuShareArgs, handle: Any) -> None:
        self.method = args.gpu_sel_method
        self.handle = handle
        self.verdicts = RowCache()
        self._all = np.arange(0)

    @classmethod
    def new(cls, args: GpuShareArgs, handle: Any) -> GpuShare:
        return cls(args, handle)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # GPUs come free when an assigned pod goes; a node added (or given GPUs) may fit.
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.POD, ActionType.DELETE), _queue),
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE), _queue
            ),
        ]

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        req = parse_request(pod)
        if not req.uses_gpu:
            return None
        v = node_gpus(node_info)
        reason = _NO_GPU if v.num == 0 else _WRONG_MODEL if not accepts_model(req.models, v.model) else None
        if reason is None and not can_host(v, req):
            reason = _NO_FIT
        return None if reason is None else Status(Code.UNSCHEDULABLE, _REASONS[reason], plugin=self.name)

    def filter_all(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> FilterVerdicts | None:
        req = parse_request(pod)
        if not req.uses_gpu:
            return None
        t = device_table(snapshot)

        def verdicts(rows: np.ndarray) -> np.ndarray:
            keys = np.where(t.ngpu[rows] == 0, _NO_GPU, np.where(~t.accessible(req.models)[rows], _WRONG_MODEL, 0))
            fits = (t.free[rows] >= req.milli).sum(axis=1) >= req.num
            return np.where((keys == 0) & ~fits, _NO_FIT, keys)

        keys = self.verdicts.get(t, req, self.all_rows(t), verdicts)[:, 0].astype(np.int8)
        return FilterVerdicts(keys != 0, keys=keys, status_of_key=self._status_of_key)

    def all_rows(self, t: DeviceTable) -> np.ndarray:
        if len(self._all) != t.n:
            self._all = np.arange(t.n)
        return self._all

    def _status_of_key(self, key: int) -> Status:
        return Status(Code.UNSCHEDULABLE, _REASONS[key], plugin=self.name)

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        req = parse_request(pod)
        if not req.uses_gpu:
            return None
        ni = self.handle.snapshot().get(node_name)
        if ni is None:
            return Status(Code.ERROR, f"node {node_name} is not in the snapshot", plugin=self.name)
        ids = self.select(pod, req, table_view(device_table(self.handle.snapshot()), ni))
        if ids is None:
            return Status(Code.UNSCHEDULABLE, _REASONS[_NO_FIT], plugin=self.name)
        pod.cache[_ALLOC_KEY] = (ids, req.milli)
        return None

    def select(self, pod: PodInfo, req: GpuRequest, v: NodeGpus) -> tuple[int, ...] | None:
        """The GPUs gpuSelMethod picks on node `v` (None: none fits)."""
        if not can_host(v, req):
            return None
        if self.method == "random":
            return random_fit_gpu(v, req, self.handle.rng)
        fn = _SELECTORS.get(self.method)
        if fn is not None:
            return fn(v, req)
        selector: GpuSelector | None = self.handle.framework.plugins_by_name.get(self.method)
        if selector is None or not hasattr(selector, "select_gpus"):
            raise ValueError(f"gpuSelMethod: {self.method!r} is neither best, worst, random nor a GPU policy plugin")
        return selector.select_gpus(pod, req, v)

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        pod.cache.pop(_ALLOC_KEY, None)

    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        alloc = pod.cache.get(_ALLOC_KEY)
        if alloc is None:
            return None
        client = self.handle.client
        current = client.get("Pod", pod.key)
        ann = dict(current.metadata.annotations or {})
        ann[GPU_INDEX] = "-".join(str(i) for i in alloc[0])
        meta = msgspec.structs.replace(current.metadata, annotations=ann)
        client.update("Pod", msgspec.structs.replace(current, metadata=meta))
        return None


def _queue(pod: Any, old: Any, new: Any) -> QueueingHint:
    return QueueingHint.QUEUE
