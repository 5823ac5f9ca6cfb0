"""The openb trace (Alibaba's GPU cluster, as the FGD paper's simulator reads it) as nodes, pods and a workload.

Nodes come from a node list (`sn,cpu_milli,memory_mib,gpu,model`), pods from a
pod list (`name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,...`), both as
the reference's YAML converters make them (data/prepare_input.sh,
pod_csv_to_yaml.py): requests = limits = CPU and memory; GPU pods carry the
gpushare annotations (gpu_milli clamped into 0..1000) and request their total
milli as the extended resource; nodes offer `gpu` GPUs of the `model` label.

`workload` is the reference's run order (pkg/simulator/core.go, simulator.go):
the pods sorted by name and shuffled with the seed (shufflePod), then the
workload tuned to `ratio` x the cluster's GPU milli (TunePodsByNodeTotalResource:
pods drawn with replacement from the name-sorted list and appended as
`<name>-tuned-<i>` until the next draw's milli per GPU would overshoot; above
the target, random pods are removed instead). Pods never leave.

`node_names` is the names the reference gives the nodes (syncClusterResourceList):
a seeded permutation index as a `%04d-` prefix. Its scheduler breaks score ties
by the smallest name, so the prefix is what orders tied nodes, differently per seed.
"""

from __future__ import annotations

import csv
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubesched.api.core import Node, Pod
from kubesched.api.decode import decode
from kubesched.errors import InputError

from .policies.gpushare import GPU_COUNT, GPU_MILLI, GPU_MODEL, MILLI, GpuRequest

# The checkout's sibling shared/traces/openb (where the project keeps the trace); --trace-dir names another.
TRACE_DIR = Path(__file__).resolve().parents[3].parent / "shared" / "traces" / "openb"
NODE_FIELDS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_FIELDS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
MAX_PODS_PER_NODE = "1001"
NAMESPACE = "default"


@dataclass(frozen=True, slots=True)
class NodeRow:
    name: str
    cpu: int
    memory_mib: int
    gpus: int
    model: str


@dataclass(frozen=True, slots=True)
class PodRow:
    """One task of the pod list; `line` is its line in the file (for messages)."""

    name: str
    cpu: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int
    gpu_spec: str
    line: int = 0

    @property
    def request(self) -> GpuRequest:
        """The reference's PodResource of the pod the converter makes of this row."""
        milli = self.gpu_milli if self.num_gpu > 0 else 0
        return GpuRequest(self.cpu, milli, self.num_gpu if milli > 0 else 0, self.gpu_spec if milli > 0 else "")


def _rows(path: Path, required: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str]]]:
    try:
        f = path.open(newline="")
    except OSError as err:
        raise InputError(str(path), err.strerror or str(err)) from None
    with f:
        reader = csv.DictReader(f)
        missing = [c for c in required if c not in (reader.fieldnames or [])]
        if missing:
            raise InputError(str(path), f"line 1: missing column(s) {', '.join(missing)}")
        for row in reader:
            yield reader.line_num, row


def _int(path: Path, line: int, row: dict[str, str], field: str, low: int = 0, high: int | None = None) -> int:
    raw = (row.get(field) or "").strip()
    try:
        value = int(float(raw)) if raw and float(raw).is_integer() else int(raw)
    except ValueError:
        raise InputError(str(path), f"line {line}: {field}: {raw!r} is not a whole number") from None
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise InputError(str(path), f"line {line}: {field}: {value} must be {bound}")
    return value


def read_nodes(path: str | Path) -> list[NodeRow]:
    """The node list, checked: a bad row is an InputError naming the file, line and field."""
    p = Path(path)
    out = []
    for line, row in _rows(p, NODE_FIELDS):
        name = (row["sn"] or "").strip()
        if not name:
            raise InputError(str(p), f"line {line}: sn: empty node name")
        gpus = _int(p, line, row, "gpu", 0, 64)
        model = (row["model"] or "").strip()
        if model.lower() == "nan":
            model = ""
        out.append(NodeRow(name, _int(p, line, row, "cpu_milli", 1), _int(p, line, row, "memory_mib", 1), gpus, model))
    if not out:
        raise InputError(str(p), "no nodes")
    return out


def read_pods(path: str | Path) -> list[PodRow]:
    """The pod list, checked; gpu_milli clamped into 0..1000 as the reference's converter does."""
    p = Path(path)
    out = []
    seen: dict[str, int] = {}
    for line, row in _rows(p, POD_FIELDS):
        name = (row["name"] or "").strip()
        if not name:
            raise InputError(str(p), f"line {line}: name: empty pod name")
        if name in seen:
            raise InputError(str(p), f"line {line}: name: {name} is already on line {seen[name]}")
        seen[name] = line
        num = _int(p, line, row, "num_gpu", 0, 64)
        milli = min(_int(p, line, row, "gpu_milli", 0), MILLI) if num > 0 else 0
        if num > 1 and 0 < milli < MILLI:
            raise InputError(str(p), f"line {line}: gpu_milli: {milli}: a task of {num} GPUs takes whole GPUs (1000)")
        spec = (row.get("gpu_spec") or "").strip()
        spec = "|".join(x for x in spec.split("|") if x and x.lower() != "nan")
        out.append(
            PodRow(
                name, _int(p, line, row, "cpu_milli", 0), _int(p, line, row, "memory_mib", 0), num, milli, spec, line
            )
        )
    if not out:
        raise InputError(str(p), "no pods")
    return out


def make_node(row: NodeRow, name: str | None = None) -> Node:
    """The Node the reference's node YAML describes, named `name` (node_names) if given.

    The hostname label keeps the row's name, as the reference renames only metadata.name.
    """
    capacity: dict[str, Any] = {
        "cpu": f"{row.cpu}m",
        "memory": f"{row.memory_mib}Mi",
        "pods": MAX_PODS_PER_NODE,
        GPU_COUNT: str(row.gpus),
        GPU_MILLI: str(row.gpus * MILLI),
    }
    labels = {"kubernetes.io/hostname": row.name, **({GPU_MODEL: row.model} if row.model else {})}
    meta = {"name": name or row.name, "labels": labels}
    return decode("Node", {"metadata": meta, "status": {"capacity": capacity, "allocatable": capacity}})


def make_pod(row: PodRow, name: str | None = None) -> Pod:
    """The Pod pod_csv_to_yaml.py makes of the row (plus the total milli as an extended resource request)."""
    req = row.request
    requests: dict[str, Any] = {"cpu": f"{row.cpu}m", "memory": f"{row.memory_mib}Mi"}
    annotations: dict[str, str] = {}
    if req.uses_gpu:
        requests[GPU_MILLI] = str(req.total)
        annotations = {GPU_COUNT: str(req.num), GPU_MILLI: str(req.milli)}
        if req.models:
            annotations[GPU_MODEL] = req.models
    container = {"name": "main", "image": "tensorflow:latest", "resources": {"requests": requests, "limits": requests}}
    raw = {
        "metadata": {"name": name or row.name, "namespace": NAMESPACE, "annotations": annotations},
        "spec": {"containers": [container], "restartPolicy": "OnFailure"},
    }
    return decode("Pod", raw)


@dataclass(frozen=True, slots=True)
class Arrival:
    """A pod of the run, in arrival order: its name and the row it copies."""

    name: str
    row: PodRow


def workload(
    pods: list[PodRow], nodes: list[NodeRow], ratio: float, seed: int | random.Random, shuffle: bool = True
) -> list[Arrival]:
    """The reference's arrival order: name-sorted, shuffled with `seed`, tuned to `ratio` x the GPU capacity.

    `seed` may be a generator, so that the run draws everything from one stream as the reference
    draws from Go's one global source (shuffle, tuning, node names, then the scheduler's draws).
    """
    rng = seed if isinstance(seed, random.Random) else random.Random(seed)
    by_name = sorted(pods, key=lambda p: p.name)
    order = [Arrival(p.name, p) for p in by_name]
    if shuffle:
        rng.shuffle(order)
    if ratio <= 0:
        return order
    target = ratio * sum(n.gpus * MILLI for n in nodes)
    total = sum(a.row.request.total for a in order)
    if total < target:
        i = 0
        while True:
            row = by_name[rng.randrange(len(by_name))]
            # As TunePodsByNodeTotalResource: the check adds the milli of one GPU, the total adds them all.
            if total + row.request.milli > target:
                break
            total += row.request.total
            order.append(Arrival(f"{row.name}-tuned-{i}", row))
            i += 1
    while total > target and order:
        gone = order.pop(rng.randrange(len(order)))
        total -= gone.row.request.total
    return order


def node_names(nodes: list[NodeRow], rng: random.Random) -> dict[str, str]:
    """The reference's node renaming: in name order, node i becomes `<perm[i]:04d>-<name>` (perm: seeded).

    syncClusterResourceList sorts the nodes by name and prefixes each with its index in
    rand.Perm(n); with the fork's selectHost (ties go to the smallest name), this prefix is the
    seeded order in which tied nodes are preferred.
    """
    ordered = sorted(n.name for n in nodes)
    perm = rng.sample(range(len(ordered)), len(ordered))
    width = max(4, len(str(len(ordered) - 1)))  # past 9999 nodes, wider, so that names still sort by index
    return {name: f"{perm[i]:0{width}d}-{name}" for i, name in enumerate(ordered)}


def default_paths(trace_dir: str | Path | None = None, pods: str = "default") -> tuple[Path, Path]:
    """The node list the experiments use (GPU nodes only) and `openb_pod_list_<pods>.csv`."""
    d = Path(trace_dir) if trace_dir is not None else TRACE_DIR
    return d / "openb_node_list_gpu_node.csv", d / f"openb_pod_list_{pods}.csv"
