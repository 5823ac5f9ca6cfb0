"""`kubesched config check`: what kube-scheduler would say about a configuration file at start-up.

- check.py: the three start-up stages (decode, validate, build every profile's
  framework without a cluster), as ../shared/conformance/config records them.
- hint.py: after upstream's message for an unknown plugin, the closest known name.
"""

from kubesched.configcheck.check import check_config, check_profiles
from kubesched.configcheck.hint import plugin_hint

__all__ = ["check_config", "check_profiles", "plugin_hint"]
