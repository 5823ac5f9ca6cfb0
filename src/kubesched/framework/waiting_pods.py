"""Pods held at Permit (framework/runtime/waiting_pods_map.go).

A waiting pod has one pending timer per plugin that asked it to wait. It is
allowed when every such plugin allows it, rejected as soon as one rejects it or
one timer runs out. Times are on the scheduler's clock (virtual in simulations).
"""

from __future__ import annotations

from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo
from kubesched.gocompat.duration import format_seconds


class WaitingPod:
    __slots__ = ("deadlines", "node", "pending", "pod", "result", "timeouts")

    def __init__(self, pod: PodInfo, node: str, waits: dict[str, float], now: float) -> None:
        self.pod = pod
        self.node = node
        self.pending = set(waits)
        self.timeouts = dict(waits)
        self.deadlines = {name: now + t for name, t in waits.items()}
        self.result: Status | None = None

    def get_pending_plugins(self) -> list[str]:
        return sorted(self.pending)

    def allow(self, plugin: str) -> None:
        self.pending.discard(plugin)
        if not self.pending and self.result is None:
            self.result = Status(Code.SUCCESS)

    def reject(self, plugin: str, message: str) -> None:
        if self.result is None:
            self.result = Status(Code.UNSCHEDULABLE, message, plugin=plugin)

    def is_resolved(self) -> bool:
        return self.result is not None

    def expire(self, now: float) -> None:
        """Reject for the first plugin whose timer ran out, as upstream's timers do."""
        if self.result is not None:
            return
        for name in sorted(self.pending, key=lambda n: (self.deadlines[n], n)):
            if now >= self.deadlines[name]:
                waited = format_seconds(self.timeouts[name])
                self.result = Status(
                    Code.UNSCHEDULABLE, f"rejected due to timeout after waiting {waited} at plugin {name}", plugin=name
                )
                return

    def next_deadline(self) -> float | None:
        if self.result is not None or not self.pending:
            return None
        return min(self.deadlines[n] for n in self.pending)


class WaitingPods:
    def __init__(self) -> None:
        self.pods: dict[str, WaitingPod] = {}

    def add(self, wp: WaitingPod) -> None:
        self.pods[wp.pod.uid] = wp

    def get(self, uid: str) -> WaitingPod | None:
        return self.pods.get(uid)

    def remove(self, uid: str) -> None:
        self.pods.pop(uid, None)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(list(self.pods.values()))

    def __len__(self) -> int:
        return len(self.pods)
