"""Building the extenders from the configuration (scheduler.go: buildExtenders).

Two effects beyond constructing the clients, both upstream's:
- ignorable extenders are moved after the others (their order otherwise kept), so a filter
  that must not be skipped always runs first;
- managed resources marked ignoredByScheduler become NodeResourcesFit's ignoredResources in
  every profile (replacing what the profile had), so the Fit filter does not reject pods for
  resources only the extender knows. This must run before the frameworks are built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubesched.config.types import KubeSchedulerConfiguration, NodeResourcesFitArgs
from kubesched.framework.profile import FrameworkError

if TYPE_CHECKING:
    from kubesched.extender.client import HTTPExtender

NODE_RESOURCES_FIT = "NodeResourcesFit"


def build_extenders(config: KubeSchedulerConfiguration) -> list[HTTPExtender]:
    """The configured extenders in calling order; updates the profiles' NodeResourcesFit args."""
    if not config.extenders:
        return []
    from kubesched.extender.client import HTTPExtender  # its HTTP and Go JSON machinery, only when configured

    regular: list[HTTPExtender] = []
    ignorable: list[HTTPExtender] = []
    ignored_resources: list[str] = []
    for cfg in config.extenders:
        try:
            ext = HTTPExtender(cfg)
        except (OSError, ValueError) as err:
            raise FrameworkError(f"couldn't create extender {cfg.url_prefix}: {err}") from None
        (ignorable if ext.is_ignorable() else regular).append(ext)
        ignored_resources += [r.name for r in cfg.managed_resources if r.ignored_by_scheduler]
    if ignored_resources:
        for prof in config.profiles:
            pc = next((pc for pc in prof.plugin_config if pc.name == NODE_RESOURCES_FIT), None)
            if pc is None:
                raise FrameworkError("can't find NodeResourcesFitArgs in plugin config")
            if not isinstance(pc.args, NodeResourcesFitArgs):
                raise FrameworkError(f"want args to be of type NodeResourcesFitArgs, got {type(pc.args).__name__}")
            pc.args.ignored_resources = list(ignored_resources)
    return regular + ignorable
