"""What kube-scheduler would say about a configuration file at start-up: decode, validate, build profiles.

The third step builds every profile's framework (plugin constructors, unknown
plugins, score weights) exactly as the scheduler does, without a cluster.
"""

from __future__ import annotations

import random
from typing import Any

from kubesched.config import ConfigError, encode_defaulted, load_config
from kubesched.config.errors import aggregate_message
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.errors import InputError
from kubesched.framework.handle import Handle, Lister
from kubesched.framework.profile import FrameworkError, build_frameworks
from kubesched.framework.snapshot import Snapshot
from kubesched.plugins.registry import Registry


def _offline_handle(profile: str, _fw: Any) -> Handle:
    empty = Lister(lambda _key: None, lambda: ())
    return Handle(
        profile, Snapshot, None, lambda _kind: empty, lambda: None, lambda: 0.0, random.Random(0), lambda _pods: None
    )


def check_config(text: str, source: str = "<config>", registry: Registry | None = None) -> dict[str, Any]:
    """{"valid", "stage", "errors", "message", "defaulted"?} as ../shared/conformance/config records them."""
    try:
        cfg = load_config(text, source)
    except ConfigError as err:
        return {"valid": False, "stage": err.stage, "errors": err.errors, "message": err.message}
    try:
        build_frameworks(cfg, registry or Registry(), _offline_handle)
    except FrameworkError as err:
        msg = str(err)
        return {"valid": False, "stage": "framework", "errors": [msg], "message": aggregate_message([msg])}
    return {"valid": True, "stage": "ok", "errors": [], "message": None, "defaulted": encode_defaulted(cfg)}


def check_profiles(cfg: KubeSchedulerConfiguration, source: str, registry: Registry | None = None) -> None:
    """Build every profile without a cluster, as the scheduler will: a bad plugin fails before anything starts."""
    try:
        build_frameworks(cfg, registry or Registry(), _offline_handle)
    except FrameworkError as err:
        raise InputError(source, str(err)) from None
