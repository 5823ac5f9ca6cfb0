"""`kubesched serve` keeps events for their TTL, as kube-apiserver does, not for as long as it runs."""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path

import pytest
from tests.live.conftest import Cluster, nodes_yaml

from kubesched.serve import cluster as served_cluster
from kubesched.serve.cluster import ServedCluster

EVENTS = "/apis/events.k8s.io/v1/namespaces/default/events"


def event(name: str) -> dict[str, object]:
    return {
        "metadata": {"name": name, "namespace": "default"},
        "eventTime": "2025-01-01T00:00:00.000001Z",
        "reason": "Scheduled",
        "note": name,
        "type": "Normal",
        "action": "Binding",
        "reportingController": "kubesched",
        "reportingInstance": "kubesched-h",
        "regarding": {"kind": "Pod", "name": name, "namespace": "default"},
    }


def test_events_expire_after_their_ttl(tmp_path: Path) -> None:
    c = Cluster(tmp_path)
    try:
        api = c.start_serve(nodes_yaml(1), "--event-ttl", "0.5")
        api.create(EVENTS, event("a.1"))
        rv = api.get(EVENTS)["metadata"]["resourceVersion"]
        time.sleep(0.7)
        api.create(EVENTS, event("b.1"))  # a write sweeps the expired ones
        names = [e["metadata"]["name"] for e in api.get(EVENTS)["items"]]
        assert names == ["b.1"]
        code, _ = api.call("GET", f"{EVENTS}/a.1")
        assert code == 404
        url = f"{api.url}{EVENTS}?watch=1&timeoutSeconds=1&resourceVersion={rv}"
        with urllib.request.urlopen(url, timeout=10) as r:
            seen = [json.loads(line) for line in r.read().splitlines() if line.strip()]
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in seen] == [("DELETED", "a.1"), ("ADDED", "b.1")]
    finally:
        c.close()


def _events(cl: ServedCluster) -> list[dict]:
    return cl.store.iter_raw("Event")


def test_built_in_scheduler_events_expire_and_start_afresh() -> None:
    cl = ServedCluster(event_ttl=0.3)
    cl.client.record_event("Warning", "FailedScheduling", "Scheduling", "no nodes", "default/p")
    cl.client.record_event("Warning", "FailedScheduling", "Scheduling", "no nodes", "default/p")
    [ev] = _events(cl)
    assert ev["series"]["count"] == 2
    time.sleep(0.4)
    cl.client.record_event("Warning", "FailedScheduling", "Scheduling", "no nodes", "default/p")
    [again] = _events(cl)
    assert again["metadata"]["uid"] != ev["metadata"]["uid"] and "series" not in again
    assert not cl.client.events.events, "served events live in the store only"


def test_series_are_forgotten_after_the_aggregation_window(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(served_cluster, "SERIES_WINDOW", 0.2)
    cl = ServedCluster()
    for i in range(500):
        cl.client.record_event("Normal", "Scheduled", "Binding", f"bound p{i}", f"default/p{i}")
    time.sleep(0.3)
    cl.client.record_event("Normal", "Scheduled", "Binding", "bound q", "default/q")
    assert len(cl.client._series) == 1  # one entry per event repeated within the window, none per pod ever seen
    cl.client.record_event("Normal", "Scheduled", "Binding", "bound q", "default/q")
    [q] = [e for e in _events(cl) if e["note"] == "bound q"]
    assert q["series"]["count"] == 2
