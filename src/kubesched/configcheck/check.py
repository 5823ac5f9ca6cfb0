"""The start-up stages a configuration goes through: decode, validate, build profiles.

The third stage builds every profile's framework (plugin constructors, unknown
plugins, score weights) exactly as the scheduler does, over an empty cluster.
"""

from __future__ import annotations

from typing import Any

from kubesched.cluster.client import EmbeddedClient
from kubesched.cluster.store import ClusterStore
from kubesched.config import ConfigError, encode_defaulted, load_config
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.errors import InputError
from kubesched.framework.profile import FrameworkError, build_frameworks
from kubesched.framework.profile_handle import ProfileHandle, new_handle
from kubesched.framework.runtime import Framework
from kubesched.gocompat.field import aggregate_message
from kubesched.plugins.registry import Registry


def _offline_handle(profile: str, _fw: Framework | None) -> ProfileHandle:
    """A handle over an empty cluster: the plugins' constructors run as the scheduler will run them."""
    return new_handle(profile, EmbeddedClient(ClusterStore()))


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
