"""PrioritySort (framework/plugins/queuesort): higher priority first, then earlier queue time."""

from __future__ import annotations

from typing import Any

from kubesched.framework.interface import QueueSortPlugin
from kubesched.framework.types import QueuedPodInfo
from kubesched.plugins import names


class PrioritySort(QueueSortPlugin):
    name = names.PRIORITY_SORT
    sort_key_length = 3

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        pa, pb = a.pod_info.priority, b.pod_info.priority
        return pa > pb or (pa == pb and a.timestamp < b.timestamp)

    def sort_key(self, qpi: QueuedPodInfo) -> tuple[Any, ...]:
        # The sequence number keeps equal priorities and times in arrival order.
        return (-qpi.pod_info.priority, qpi.timestamp, qpi.seq)
