"""VolumeZone: zone/region labels of bound PVs against node labels."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from vol_helpers import Cycle, claim_pod, pv, pvc, storage_class, volume_pod

from kubesched.framework.events import QueueingHint
from kubesched.framework.status import Code
from kubesched.plugins.volumezone import ERR_REASON_CONFLICT, VolumeZone
from kubesched.testing import Env, make_node

GA = "topology.kubernetes.io/zone"
BETA = "failure-domain.beta.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"


def zone_nodes() -> list[Any]:
    return [
        make_node("za-1", cpu="8", labels={GA: "za"}),
        make_node("zb-1", cpu="4", labels={GA: "zb"}),
        make_node("zb-2", cpu="6", labels={GA: "zb"}),
        make_node("zc-1", cpu="5", labels={GA: "zc"}),
    ]


def zonal(labels: dict[str, str], claim: str = "zonal") -> list[tuple[str, Any]]:
    return [
        storage_class("std", mode="Immediate", provisioner="pd.csi.example.com"),
        pv("zonal-pv", sc="std", labels=labels, claim=("default", claim), phase="Bound", csi=("pd", "vol-1")),
        pvc(claim, sc="std", volume="zonal-pv", bound=True),
    ]


def _plugin(env: Env) -> VolumeZone:
    return VolumeZone.new(None, env.handle)


def _check_vector_agrees(c: Cycle) -> None:
    v = c.plugin.filter_all(c.state, c.pod, c.env.snapshot)
    per_node = c.filters()
    failed = v.failed if v is not None else np.zeros(len(per_node), bool)
    for i, ni in enumerate(c.env.snapshot.nodes):
        s = per_node[ni.name]
        assert bool(failed[i]) == (s is not None)
        if s is not None:
            assert v.status(i) == s


def test_golden_volume_zone() -> None:
    env = Env(zone_nodes(), [], objects=zonal({GA: "zb"}))
    c = Cycle(_plugin(env), env, claim_pod("z1", "zonal"))
    assert c.pre_filter_status is None
    assert c.messages() == {"za-1": ERR_REASON_CONFLICT, "zb-1": None, "zb-2": None, "zc-1": ERR_REASON_CONFLICT}
    assert c.filter("za-1").code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    _check_vector_agrees(c)


@pytest.mark.parametrize(
    ("pv_labels", "node_labels", "fits"),
    [
        ({BETA: "zb"}, {GA: "zb"}, True),
        ({BETA: "zb"}, {GA: "za"}, False),
        ({GA: "zb"}, {BETA: "zb"}, False),
        ({GA: "za__zb"}, {GA: "zb"}, True),
        ({GA: "za__zb"}, {GA: "zc"}, False),
        ({GA: "zb", REGION: "r1"}, {GA: "zb", REGION: "r2"}, False),
        ({GA: "zb", REGION: "r1"}, {GA: "zb"}, False),
        ({GA: "zb"}, {"other": "x"}, True),
        ({GA: "za____zb"}, {GA: "zc"}, True),
    ],
    ids=[
        "beta-pv-ga-node",
        "beta-pv-ga-node-mismatch",
        "ga-pv-beta-node-only",
        "multi-zone",
        "multi-zone-mismatch",
        "region-mismatch",
        "node-lacks-region",
        "node-without-topology",
        "unparsable-label-ignored",
    ],
)
def test_zone_rules(pv_labels: dict[str, str], node_labels: dict[str, str], fits: bool) -> None:
    env = Env([make_node("n", labels=node_labels)], [], objects=zonal(pv_labels))
    c = Cycle(_plugin(env), env, claim_pod("p", "zonal"))
    if c.pre_filter_status is not None:
        assert c.pre_filter_status.code == Code.SKIP and fits
        return
    assert (c.filter("n") is None) == fits
    _check_vector_agrees(c)


def test_pv_without_topology_is_skipped() -> None:
    env = Env(zone_nodes(), [], objects=zonal({}))
    assert Cycle(_plugin(env), env, claim_pod("p", "zonal")).pre_filter_status.code == Code.SKIP


def test_pod_without_volumes_is_skipped() -> None:
    env = Env(zone_nodes(), [])
    assert Cycle(_plugin(env), env, volume_pod("p", [])).pre_filter_status.code == Code.SKIP


def test_unbound_claims() -> None:
    objs = [
        storage_class("wffc"),
        storage_class("imm", mode="Immediate", provisioner="x"),
        pvc("late", sc="wffc"),
        pvc("now", sc="imm"),
        pvc("classless"),
    ]
    env = Env(zone_nodes(), [], objects=objs)
    plugin = _plugin(env)
    assert Cycle(plugin, env, claim_pod("p", "late")).pre_filter_status.code == Code.SKIP
    s = Cycle(plugin, env, claim_pod("p", "now")).pre_filter_status
    assert (s.code, s.message()) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "PersistentVolume had no name")
    s = Cycle(plugin, env, claim_pod("p", "classless")).pre_filter_status
    assert s.message() == "PersistentVolumeClaim had no pv name and storageClass name"


def test_missing_objects() -> None:
    objs = [pvc("nopv", sc="std", volume="gone", bound=True), pvc("nosc", sc="ghost")]
    env = Env(zone_nodes(), [], objects=objs)
    plugin = _plugin(env)
    assert Cycle(plugin, env, claim_pod("p", "nope")).pre_filter_status.message() == (
        'persistentvolumeclaim "nope" not found'
    )
    assert Cycle(plugin, env, claim_pod("p", "nopv")).pre_filter_status.message() == (
        'persistentvolume "gone" not found'
    )
    s = Cycle(plugin, env, claim_pod("p", "nosc")).pre_filter_status
    assert (s.code, s.message()) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        'storageclass.storage.k8s.io "ghost" not found',
    )


def test_hints() -> None:
    env = Env(zone_nodes(), [])
    events = {e.event.resource: e for e in _plugin(env).events_to_register()}
    pod = claim_pod("p", "zonal")
    sc_hint = events["storage.k8s.io/StorageClass"].hint
    assert sc_hint(pod, None, storage_class("w")[1]) == QueueingHint.QUEUE
    assert sc_hint(pod, None, storage_class("i", mode="Immediate")[1]) == QueueingHint.QUEUE_SKIP
    pv_hint = events["PersistentVolume"].hint
    _, a = pv("x", labels={GA: "za"})
    _, b = pv("x", labels={GA: "zb"})
    _, a2 = pv("x", "20Gi", labels={GA: "za"})
    assert pv_hint(pod, None, a) == QueueingHint.QUEUE
    assert pv_hint(pod, a, b) == QueueingHint.QUEUE
    assert pv_hint(pod, a, a2) == QueueingHint.QUEUE_SKIP
    pvc_hint = events["PersistentVolumeClaim"].hint
    assert pvc_hint(pod, None, pvc("zonal")[1]) == QueueingHint.QUEUE
    assert pvc_hint(pod, None, pvc("other")[1]) == QueueingHint.QUEUE_SKIP
