"""VolumeBinding: PV/PVC binding decided with the pod's placement (framework/plugins/volumebinding).

plugin.py is the plugin; binder.py decides and writes bindings; pv_util.py
holds the PV/PVC matching helpers; assume_cache.py the assumed PV/PVC
versions; csi_translation.py the in-tree to CSI translation shared with
NodeVolumeLimits; scorer.py the (gated) capacity scoring.
"""
