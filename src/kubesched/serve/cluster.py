"""The served cluster: store, API client and controllers, on the real clock.

Like EmbeddedCluster, plus: events recorded by the built-in scheduler are
stored as events.k8s.io/v1 Events (aggregated into series as client-go does),
so `kubectl get events` shows them, and only there (not in the embedded
client's report list, which would keep every event of a server that runs for
weeks); and kube-controller-manager's resourceclaim
controller runs (serve/claims.py), so pods using ResourceClaimTemplates get
their claims as in a cluster; and so do the workload controllers
(serve/workloads.py): Deployments, StatefulSets, DaemonSets, Jobs ... get their pods.
"""

from __future__ import annotations

import contextlib
import time
from collections import OrderedDict
from datetime import UTC, datetime
from typing import Any

from kubesched.cluster.client import EmbeddedClient
from kubesched.cluster.embedded import EmbeddedCluster
from kubesched.cluster.store import Conflict, NotFound
from kubesched.live.events import event_key, make_event, micro_time, object_reference
from kubesched.serve.claims import ResourceClaimController
from kubesched.serve.storage import DEFAULT_EVENT_TTL, DEFAULT_HISTORY, SecondsClock, ServedStore
from kubesched.serve.workloads import WorkloadController

SERIES_WRITE_PERIOD = 5.0
# An event not repeated for this long starts afresh (client-go's event cache keeps one this long, too).
SERIES_WINDOW = 6 * 60.0


class ServedClient(EmbeddedClient):
    def __init__(self, store: ServedStore) -> None:
        super().__init__(store)
        self.served = store
        # Event key -> (stored event's key, its last series write, its last occurrence), least recent first.
        self._series: OrderedDict[tuple[Any, ...], tuple[str, float, float]] = OrderedDict()

    def record_event(self, type_: str, reason: str, action: str, note: str, regarding: str, related: str = "") -> None:
        pod = self.served.get_raw("Pod", regarding)
        reg = object_reference("Pod", pod) if pod else {"kind": "Pod", "apiVersion": "v1", "name": regarding}
        rel_raw = self.served.get_raw("Pod", related) if related else None
        rel = object_reference("Pod", rel_raw) if rel_raw else None
        source = rel_raw or pod or {}
        controller = (source.get("spec") or {}).get("schedulerName") or "default-scheduler"
        ev = make_event(reg, rel, type_, reason, action, note, controller, datetime.now(UTC))
        key = event_key(ev)
        now = time.monotonic()
        self.served.expire_events()
        while self._series and next(iter(self._series.values()))[2] < now - SERIES_WINDOW:
            self._series.popitem(last=False)
        seen = self._series.pop(key, None)
        cur = self.served.get_raw("Event", seen[0]) if seen is not None else None
        if seen is None or cur is None:  # new, quiet for the window, or expired (event TTL)
            with contextlib.suppress(Conflict):  # two events in the same nanosecond: keep the first
                self.served.create_raw("Event", ev)
            self._series[key] = (f"{ev['metadata']['namespace']}/{ev['metadata']['name']}", 0.0, now)
            return
        ev_key, last_write, _ = seen
        series = dict(cur.get("series") or {"count": 1})
        series["count"] = int(series.get("count", 1)) + 1
        series["lastObservedTime"] = micro_time(datetime.now(UTC))
        if series["count"] == 2 or now - last_write >= SERIES_WRITE_PERIOD:
            with contextlib.suppress(NotFound):  # expired just now (a TTL shorter than the window)
                self.served.update_raw("Event", {**cur, "series": series, "metadata": dict(cur["metadata"])})
            last_write = now
        else:
            cur["series"] = series
        self._series[key] = (ev_key, last_write, now)


class ServedCluster(EmbeddedCluster):
    """The embedded cluster on a wall clock, with a store that keeps history for watches."""

    store: ServedStore
    client: ServedClient

    def __init__(self, history: int = DEFAULT_HISTORY, event_ttl: float = DEFAULT_EVENT_TTL) -> None:
        clock = SecondsClock()
        # The one cluster whose clock is not virtual: nothing advances it, simulations never run on it.
        self.clock = clock  # type: ignore[assignment]
        self.store = ServedStore(clock, history, event_ttl)
        self.client = ServedClient(self.store)
        self._start_controllers()

    def _start_controllers(self) -> None:
        """The embedded cluster's controllers, plus kube-controller-manager's resourceclaim controller.

        simulate makes template claims as it loads each pod (runner._claims_from_templates); served pods come
        from clients, so claims are made as in a cluster: after the pod exists, seen by watchers as changes.
        """
        super()._start_controllers()
        assert isinstance(self.store, ServedStore)
        self.claims = ResourceClaimController(self.store, self.client)
        self.workloads = WorkloadController(self.store, self.client)
