"""KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) handling as in kube-scheduler v1.34.

load_config* run upstream's first two startup steps: strict decoding with
v1 defaulting, then ValidateKubeSchedulerConfiguration. Either step raises a
ConfigError (stage "decode" or "validate"). The third step, building each
profile's framework (unknown plugins, score weight overflow, plugin
constructors such as NodeResourcesFit's, see validate_node_resources_fit_args),
belongs to the engine.
"""

from __future__ import annotations

import os
from typing import Any

from kubesched.config.args import ARGS_PLUGINS, validate_node_resources_fit_args
from kubesched.config.convert import to_internal
from kubesched.config.decode import decode_mapping, decode_text
from kubesched.config.defaults import DEFAULT_MULTI_POINT, default_configuration, set_defaults
from kubesched.config.encode import encode_defaulted
from kubesched.config.errors import ConfigError
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.config.validation import validate_kube_scheduler_configuration
from kubesched.gocompat.field import aggregate_message

# The in-tree plugins of v1.34's registry (pkg/scheduler/framework/plugins/registry.go).
KNOWN_PLUGINS: tuple[str, ...] = (
    "PrioritySort",
    "SchedulingGates",
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "NodeResourcesBalancedAllocation",
    "ImageLocality",
    "InterPodAffinity",
    "PodTopologySpread",
    "VolumeRestrictions",
    "NodeVolumeLimits",
    "VolumeBinding",
    "VolumeZone",
    "DynamicResources",
    "DefaultPreemption",
    "DefaultBinder",
)

__all__ = [
    "ARGS_PLUGINS",
    "DEFAULT_MULTI_POINT",
    "KNOWN_PLUGINS",
    "ConfigError",
    "default_configuration",
    "encode_defaulted",
    "load_config",
    "load_config_file",
    "load_config_mapping",
    "validate_kube_scheduler_configuration",
    "validate_node_resources_fit_args",
]


def _finish(v1: dict[str, Any], source: str) -> KubeSchedulerConfiguration:
    cfg = to_internal(set_defaults(v1))
    errors = validate_kube_scheduler_configuration(cfg)
    if errors:
        raise ConfigError("validate", errors, aggregate_message(errors), source)
    return cfg


def load_config(text: str, source: str = "<config>") -> KubeSchedulerConfiguration:
    """Decode (strictly), default and validate a configuration file's text."""
    return _finish(decode_text(text, source), source)


def load_config_mapping(obj: Any, source: str = "<config>") -> KubeSchedulerConfiguration:
    """Same as load_config for a mapping already parsed from YAML (duplicate keys cannot be seen)."""
    return _finish(decode_mapping(obj, source), source)


def load_config_file(path: str | os.PathLike[str]) -> KubeSchedulerConfiguration:
    """load_config on a file; an unreadable file is a decode-stage ConfigError like os.ReadFile's."""
    source = os.fspath(path)
    try:
        with open(source, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise ConfigError("decode", [f"open {source}: no such file or directory"], source=source) from None
    except IsADirectoryError:
        raise ConfigError("decode", [f"read {source}: is a directory"], source=source) from None
    except OSError as e:
        raise ConfigError("decode", [f"open {source}: {e.strerror or e}"], source=source) from None
    text = data.decode("utf-8", errors="replace")
    return load_config(text, source)
