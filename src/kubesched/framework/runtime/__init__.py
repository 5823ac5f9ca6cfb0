"""The framework runtime (framework/runtime/): the Framework that runs a profile's plugins.

framework.py        the Framework: its plugins per extension point, the queue's points, PreFilter
filter_passes.py    Filter, node by node and over all nodes at once; PostFilter
filter_outcome.py   what filtering found, and why the other nodes failed
score_passes.py     PreScore, Score, NormalizeScore and the weights
binding_points.py   Reserve, Permit, PreBind, Bind, PostBind
plugin_failures.py  how a plugin's failure is worded
"""

from kubesched.framework.runtime.binding_points import MAX_PERMIT_TIMEOUT
from kubesched.framework.runtime.filter_outcome import FilterOutcome
from kubesched.framework.runtime.framework import Framework

__all__ = ["MAX_PERMIT_TIMEOUT", "FilterOutcome", "Framework"]
