"""kubesched: the Kubernetes scheduler (kube-scheduler v1.34) in Python."""

__version__ = "0.1.0"
