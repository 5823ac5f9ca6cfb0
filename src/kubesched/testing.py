"""Builders for tests and for plugin authors: pods, nodes, snapshots and a handle, in a line each.

p = make_pod("web", cpu="500m", labels={"app": "web"})
n = make_node("n1", cpu="4", mem="8Gi", labels={"zone": "a"})
env = Env([n], [make_pod("used", cpu="1", node="n1")])
env.snapshot, env.handle, env.pod_info(p)
fw = env.build_profile()  # the default profile's framework over env.handle (PostFilter plugins need it)
env.run_deferred()  # the work plugins left for after the cycle (handle.run_after_cycles)

End to end, with a configuration (e.g. enabling a plugin being written):
result = simulate([n, p], config={"profiles": [...]})
placements(result)  # {"default/web": "n1"}
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kubesched.api.core import Node, Pod
from kubesched.api.decode import decode
from kubesched.cache.cache import Cache
from kubesched.cluster import admission
from kubesched.cluster.client import EmbeddedClient
from kubesched.cluster.store import ClusterStore
from kubesched.errors import InputError
from kubesched.framework.handle import Lister
from kubesched.framework.profile_handle import ProfileHandle, new_handle
from kubesched.framework.snapshot import Snapshot
from kubesched.framework.types import PodInfo

if TYPE_CHECKING:
    from kubesched.framework.runtime import Framework
    from kubesched.simulate.runner import SimulationResult


def make_pod(
    name: str,
    cpu: str | None = None,
    mem: str | None = None,
    *,
    namespace: str = "default",
    node: str = "",
    labels: dict[str, str] | None = None,
    priority: int | None = None,
    extra: dict[str, Any] | None = None,
    spec: dict[str, Any] | None = None,
    uid: str | None = None,
    image: str = "registry.k8s.io/pause:3.10",
    ports: list[dict[str, Any]] | None = None,
) -> Pod:
    """A pod with one container requesting `cpu`/`mem` (and `extra` resources); `spec` overrides spec fields."""
    requests: dict[str, Any] = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if mem is not None:
        requests["memory"] = mem
    requests.update(extra or {})
    container: dict[str, Any] = {"name": "c", "image": image}
    if requests:
        container["resources"] = {"requests": requests}
    if ports:
        container["ports"] = ports
    raw_spec: dict[str, Any] = {"containers": [container]}
    if node:
        raw_spec["nodeName"] = node
    if priority is not None:
        raw_spec["priority"] = priority
    raw_spec.update(spec or {})
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid or f"uid-{namespace}-{name}"}
    if labels:
        meta["labels"] = labels
    pod = decode("Pod", {"metadata": meta, "spec": raw_spec})
    return admission.default_pod(pod)


def make_node(
    name: str,
    cpu: str = "4",
    mem: str = "8Gi",
    pods: str = "110",
    *,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, Any]] | None = None,
    unschedulable: bool = False,
    extra: dict[str, Any] | None = None,
    images: list[tuple[list[str], int]] | None = None,
) -> Node:
    capacity: dict[str, Any] = {"cpu": cpu, "memory": mem, "pods": pods, **(extra or {})}
    raw: dict[str, Any] = {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {"taints": taints or [], "unschedulable": unschedulable},
        "status": {"capacity": capacity},
    }
    if images:
        raw["status"]["images"] = [{"names": names, "sizeBytes": size} for names, size in images]
    return admission.default_node(decode("Node", raw))


class Env:
    """A cache, its snapshot and a handle over an embedded cluster holding the given objects.

    Nodes go to the cluster (the API store) and the cache; `pods` (bound ones) to the
    cache only: list a pod in `objects` too for the client and the listers to see it.
    """

    def __init__(
        self, nodes: Iterable[Node], pods: Iterable[Pod] = (), objects: Iterable[tuple[str, Any]] = ()
    ) -> None:
        self.store = ClusterStore()
        self.client = EmbeddedClient(self.store)
        self.cache = Cache()
        self.snapshot = Snapshot()
        # What plugins asked to run after the scheduling cycle (handle.run_after_cycles): see run_deferred.
        self.deferred: list[tuple[int, Callable[[], None]]] = []
        for kind, obj in objects:
            self.client.create(kind, obj)
        for n in nodes:
            self.store.create("Node", n)
            self.cache.add_node(n)
        for p in pods:
            self.add_pod(p)
        self.cache.update_snapshot(self.snapshot)
        self.handle: ProfileHandle = new_handle(
            "default-scheduler",
            self.client,
            snapshot=lambda: self.snapshot,
            lister=self._lister,
            run_after_cycles=self._defer,
        )

    def _lister(self, kind: str) -> Lister:
        return Lister(lambda key: self.store.find(kind, key), lambda: self.store.iter(kind))

    def _defer(self, cycles: int, fn: Callable[[], None]) -> None:
        self.deferred.append((cycles, fn))

    def run_deferred(self) -> int:
        """Run the work plugins deferred (handle.run_after_cycles) and what it defers in turn, in order.

        The scheduler runs it once its cycles have passed, or as soon as no pod is left to
        attempt; here the test says when. E.g. DefaultPreemption's post_filter returns the
        nominated node, and its victims are deleted through the client here. Returns how many ran.
        """
        ran = 0
        while self.deferred:
            _, fn = self.deferred.pop(0)
            fn()
            ran += 1
        return ran

    def build_profile(
        self, config: Mapping[str, Any] | str | None = None, name: str = "default-scheduler"
    ) -> Framework:
        """Profile `name` of `config` (as `simulate` takes it; None: kube-scheduler's defaults), over env.handle.

        The handle's framework becomes this one: preemption dry-runs the profile's filters through it.
        A bad configuration raises kubesched.errors.InputError.
        """
        from kubesched.config import ConfigError, default_configuration, load_config_mapping
        from kubesched.framework.profile import FrameworkError, build_frameworks
        from kubesched.plugins.registry import Registry

        cfg = _config_mapping(config)
        try:
            loaded = default_configuration() if cfg is None else load_config_mapping(cfg, "<test>")
            profiles = build_frameworks(loaded, Registry(), self._handle_for)
        except ConfigError as err:
            raise InputError("<test>", err.message) from None
        except FrameworkError as err:
            raise InputError("<test>", str(err)) from None
        if name not in profiles:
            raise KeyError(f"no profile with scheduler name {name!r}: {sorted(profiles)}")
        self.handle.framework = profiles[name]
        return profiles[name]

    def _handle_for(self, _profile: str, fw: Framework | None) -> ProfileHandle:
        """Every profile's plugins get env.handle (its framework: the last one built, then build_profile's)."""
        if fw is not None:
            self.handle.framework = fw
        return self.handle

    def add_pod(self, pod: Pod) -> PodInfo:
        """Add a bound pod to the cache (and so to the snapshot)."""
        pi = PodInfo(pod)
        self.cache.add_pod(pi)
        self.cache.update_snapshot(self.snapshot)
        return pi

    def pod_info(self, pod: Pod) -> PodInfo:
        return PodInfo(pod)

    def node(self, name: str) -> Any:
        return self.snapshot.get(name)


def _config_mapping(config: Mapping[str, Any] | str | None) -> Mapping[str, Any] | None:
    """A KubeSchedulerConfiguration as a mapping, from YAML text or a mapping (apiVersion/kind may be left out)."""
    import yaml

    cfg: Mapping[str, Any] | None = yaml.safe_load(config) if isinstance(config, str) else config
    if cfg is not None:
        cfg = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", **cfg}
    return cfg


def simulate(
    objects: Iterable[Any] | str,
    config: Mapping[str, Any] | str | None = None,
    *,
    mode: str | None = None,
    seed: int = 0,
) -> SimulationResult:
    """Schedule on an embedded cluster, as `kubesched simulate` does, and return its result.

    `objects`: typed objects (make_node, make_pod, api.decode.decode) or a scenario's YAML
    text; pods without a node are the pending ones, created in order. `config`: a
    KubeSchedulerConfiguration as a mapping or YAML text (apiVersion/kind may be left out);
    it and `mode` ("sequential", "batch") override a scenario header's.
    A bad configuration raises kubesched.errors.InputError, as the CLI reports it.
    """
    from kubesched.api.decode import KINDS
    from kubesched.scenario import Manifest, Scenario, parse_scenario
    from kubesched.simulate.runner import Simulation

    cfg = _config_mapping(config)
    if isinstance(objects, str):
        scenario = parse_scenario(objects, "<test>")
    else:
        scenario = Scenario(source="<test>")
        kinds = {t: k for k, t in KINDS.items()}
        for i, obj in enumerate(objects):
            kind = kinds.get(type(obj))
            if kind is None:
                raise TypeError(f"simulate: {type(obj).__name__} is not a kind the scenario loader knows")
            scenario.manifests.append(Manifest(kind, obj, {}, i))
    if mode is not None:
        scenario.mode = mode
    if cfg is not None:
        scenario.config = cfg
    return Simulation(scenario, seed=seed).run()


def placements(result: SimulationResult) -> dict[str, str | None]:
    """Each pending pod ("namespace/name") and the node it landed on (None: not scheduled)."""
    return {o.key: o.node if o.status == "Scheduled" else None for o in result.results}


def write_entry_points(
    directory: str | os.PathLike[str], plugins: Mapping[str, str], dist: str = "test-plugins"
) -> Path:
    """Make `plugins` (name -> "module:Class") installed `kubesched.plugins` entry points, without pip.

    Writes the metadata pip would write into `directory`; put `directory` on sys.path
    (pytest's monkeypatch.syspath_prepend) or PYTHONPATH for the registry to find them.
    """
    from kubesched.framework.registry import ENTRY_POINT_GROUP

    info = Path(directory) / f"{dist.replace('-', '_')}-0.0.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.0.0\n")
    lines = [f"[{ENTRY_POINT_GROUP}]", *(f"{name} = {ref}" for name, ref in plugins.items())]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    return info
