"""HTTP scheduler extenders (k8s.io/kube-scheduler/extender/v1, pkg/scheduler/extender.go).

client.HTTPExtender speaks to one extender; build.build_extenders makes them from the
configuration; runner holds the scheduling-cycle steps (filter, prioritize).
"""
