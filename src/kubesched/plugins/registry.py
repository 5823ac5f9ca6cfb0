"""The registry (framework/plugins/registry.go, merged with out-of-tree ones): plugin name -> factory.

Factories are named by import path and loaded on first use, so that a profile
that does not enable a plugin never imports it. The default registry is the
in-tree plugins plus the installed `kubesched.plugins` entry points (upstream
merges out-of-tree registries the same way, and refuses a name that exists
twice); plugins named by import path in a configuration are resolved when the
profile is built (framework/profile.py).
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Iterator, Mapping
from typing import Any

from kubesched.framework.registry import ENTRY_POINT_GROUP, PluginLoadError, load_entry_point
from kubesched.framework.registry import entry_points as installed_entry_points
from kubesched.plugins import names

IN_TREE: dict[str, str] = {
    names.SCHEDULING_GATES: "kubesched.plugins.schedulinggates:SchedulingGates",
    names.PRIORITY_SORT: "kubesched.plugins.prioritysort:PrioritySort",
    names.NODE_UNSCHEDULABLE: "kubesched.plugins.nodeunschedulable:NodeUnschedulable",
    names.NODE_NAME: "kubesched.plugins.nodename:NodeName",
    names.TAINT_TOLERATION: "kubesched.plugins.tainttoleration:TaintToleration",
    names.NODE_AFFINITY: "kubesched.plugins.nodeaffinity:NodeAffinity",
    names.NODE_PORTS: "kubesched.plugins.nodeports:NodePorts",
    names.NODE_RESOURCES_FIT: "kubesched.plugins.noderesources.fit:Fit",
    names.VOLUME_RESTRICTIONS: "kubesched.plugins.volumerestrictions:VolumeRestrictions",
    names.NODE_VOLUME_LIMITS: "kubesched.plugins.nodevolumelimits:NodeVolumeLimits",
    names.VOLUME_BINDING: "kubesched.plugins.volumebinding.plugin:VolumeBinding",
    names.VOLUME_ZONE: "kubesched.plugins.volumezone:VolumeZone",
    names.POD_TOPOLOGY_SPREAD: "kubesched.plugins.podtopologyspread.plugin:PodTopologySpread",
    names.INTER_POD_AFFINITY: "kubesched.plugins.interpodaffinity.plugin:InterPodAffinity",
    names.DYNAMIC_RESOURCES: "kubesched.plugins.dynamicresources.plugin:DynamicResources",
    names.DEFAULT_PREEMPTION: "kubesched.plugins.defaultpreemption:DefaultPreemption",
    names.NODE_RESOURCES_BALANCED_ALLOCATION: "kubesched.plugins.noderesources.balanced_allocation:BalancedAllocation",
    names.IMAGE_LOCALITY: "kubesched.plugins.imagelocality:ImageLocality",
    names.DEFAULT_BINDER: "kubesched.plugins.defaultbinder:DefaultBinder",
}


class RegistryError(ValueError):
    """A plugin reference that cannot be loaded."""


def load_factory(ref: str) -> Any:
    """ "package.module:Class" -> the class (or any callable factory)."""
    module_name, _, attr = ref.partition(":")
    if not module_name or not attr:
        raise RegistryError(f"{ref!r} is not of the form 'package.module:Factory'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise RegistryError(f"cannot import {module_name!r} for plugin {ref!r}: {err}") from err
    try:
        return getattr(module, attr)
    except AttributeError:
        raise RegistryError(f"module {module_name!r} has no {attr!r} (plugin {ref!r})") from None


class Registry(Mapping[str, Any]):
    """Plugin name -> factory, resolving import paths and entry points lazily; more can be registered.

    `Registry()` is the in-tree plugins and the installed entry points; `Registry(refs)`
    exactly the given ones (no entry points unless `entry_points=True`).
    """

    def __init__(self, refs: Mapping[str, Any] | None = None, *, entry_points: bool | None = None) -> None:
        self._refs: dict[str, Any] = dict(IN_TREE if refs is None else refs)
        self._loaded: dict[str, Any] = {}
        # Names claimed twice: the error to give if the profile needs that name.
        self._clashes: dict[str, str] = {}
        if entry_points if entry_points is not None else refs is None:
            self._merge_entry_points()

    def _merge_entry_points(self) -> None:
        for name, ep in installed_entry_points().items():
            if name in self._refs:
                self._clashes[name] = (
                    f'a plugin named "{name}" already exists '
                    f'(entry point "{ep.name} = {ep.value}" in group {ENTRY_POINT_GROUP})'
                )
                continue
            self._refs[name] = ep

    def __getitem__(self, name: str) -> Any:
        if name not in self._loaded:
            clash = self._clashes.get(name)
            if clash is not None:
                raise RegistryError(clash)
            ref = self._refs[name]
            if isinstance(ref, str):
                self._loaded[name] = load_factory(ref)
            elif isinstance(ref, importlib.metadata.EntryPoint):
                try:
                    self._loaded[name] = load_entry_point(ref)
                except PluginLoadError as err:
                    raise RegistryError(str(err)) from None
            else:
                self._loaded[name] = ref
        return self._loaded[name]

    def __contains__(self, name: object) -> bool:
        # Without loading anything (Mapping's default would import the factory).
        return name in self._refs

    def __iter__(self) -> Iterator[str]:
        return iter(self._refs)

    def __len__(self) -> int:
        return len(self._refs)

    def register(self, name: str, factory: Any) -> None:
        if name in self._refs:
            raise RegistryError(f'a plugin named "{name}" already exists')
        self._refs[name] = factory
