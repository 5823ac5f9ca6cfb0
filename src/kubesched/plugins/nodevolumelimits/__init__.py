"""NodeVolumeLimits: per-node CSI volume limits (framework/plugins/nodevolumelimits, csi.go)."""

from kubesched.plugins.nodevolumelimits.csi import ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED, NodeVolumeLimits

__all__ = ["ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED", "NodeVolumeLimits"]
