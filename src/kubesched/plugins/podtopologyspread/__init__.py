"""PodTopologySpread: spread matching pods evenly across topology domains."""
