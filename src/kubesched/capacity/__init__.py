"""`kubesched capacity`: how many replicas of a pod fit in a cluster, and where (cluster-capacity's question).

- estimate.py: the replicas placed one by one on a simulated cluster until one does not fit.
- report.py: the report as JSON, a rich view on a terminal, plain lines in a pipe.
"""

from kubesched.capacity.estimate import (
    FAILED_SCHEDULING,
    LIMIT_REACHED,
    CapacityResult,
    WorkloadPod,
    capacity,
    load_pod,
)
from kubesched.capacity.report import print_text, render, to_json

__all__ = [
    "FAILED_SCHEDULING",
    "LIMIT_REACHED",
    "CapacityResult",
    "WorkloadPod",
    "capacity",
    "load_pod",
    "print_text",
    "render",
    "to_json",
]
