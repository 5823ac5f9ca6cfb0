"""kubesched: the Kubernetes scheduler (kube-scheduler v1.34) in Python."""

import logging

__version__ = "0.1.0"

# A library's logs go where the application sends them: `run` and `serve` install klog-style handlers;
# `simulate` and the other offline commands print their own report, not upstream's log lines.
logging.getLogger("kubesched").addHandler(logging.NullHandler())
