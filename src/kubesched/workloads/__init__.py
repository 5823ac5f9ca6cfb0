"""Workload controllers: Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs and CronJobs made into pods,
and the resourceclaim controller's claims for pods that name a ResourceClaimTemplate (resourceclaim.py).

What kube-controller-manager's controllers would create for a manifest, computed once from the objects a
scenario declares (see expand.py): names, labels, owner references, claims and node affinity as those
controllers write them. Rolling updates, scaling down and pod replacement are out of scope.
"""
