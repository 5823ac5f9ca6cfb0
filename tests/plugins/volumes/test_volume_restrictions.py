"""VolumeRestrictions: ReadWriteOncePod and in-tree disk conflicts."""

from __future__ import annotations

from typing import Any

import pytest
from vol_helpers import Cycle, claim_pod, pv, pvc, storage_class, volume_pod

from kubesched.framework.events import QueueingHint
from kubesched.framework.status import Code
from kubesched.framework.types import PodInfo
from kubesched.plugins.volumerestrictions import (
    ERR_REASON_DISK_CONFLICT,
    ERR_REASON_RWOP_CONFLICT,
    VolumeRestrictions,
)
from kubesched.testing import Env, make_node

NODES = [make_node("r-1", cpu="4"), make_node("r-2", cpu="8")]


def rwop_objects() -> list[tuple[str, Any]]:
    return [
        storage_class("std", mode="Immediate", provisioner="pd.csi.example.com"),
        pv("rwop-pv", sc="std", modes=("ReadWriteOncePod",), claim=("default", "rwop"), phase="Bound"),
        pvc("rwop", sc="std", modes=("ReadWriteOncePod",), volume="rwop-pv", bound=True),
    ]


def _plugin(env: Env) -> VolumeRestrictions:
    return VolumeRestrictions.new(None, env.handle)


def test_golden_readwriteoncepod_in_use() -> None:
    owner = claim_pod("owner", "rwop", node="r-1")
    env = Env(NODES, [owner], objects=rwop_objects())
    c = Cycle(_plugin(env), env, claim_pod("second", "rwop"))
    assert c.pre_filter_status is None
    statuses = c.filters()
    assert {n: s.code for n, s in statuses.items()} == {"r-1": Code.UNSCHEDULABLE, "r-2": Code.UNSCHEDULABLE}
    assert set(c.messages().values()) == {ERR_REASON_RWOP_CONFLICT}
    assert ERR_REASON_RWOP_CONFLICT == (
        "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
        "already in-use by another pod"
    )


def test_readwriteoncepod_unused_is_skipped() -> None:
    env = Env(NODES, [], objects=rwop_objects())
    c = Cycle(_plugin(env), env, claim_pod("first", "rwop"))
    assert c.pre_filter_status is not None and c.pre_filter_status.code == Code.SKIP


def test_readwriteonce_claim_shared_is_fine() -> None:
    objs = [storage_class("std", mode="Immediate"), pvc("rwo", sc="std", volume="x", bound=True)]
    env = Env(NODES, [claim_pod("owner", "rwo", node="r-1")], objects=objs)
    c = Cycle(_plugin(env), env, claim_pod("second", "rwo"))
    assert c.pre_filter_status.code == Code.SKIP


def test_preemption_remove_pod_frees_the_claim() -> None:
    owner = claim_pod("owner", "rwop", node="r-1", priority=0)
    env = Env(NODES, [owner], objects=rwop_objects())
    plugin = _plugin(env)
    c = Cycle(plugin, env, claim_pod("second", "rwop", priority=100))
    state = c.state.clone()
    assert plugin.remove_pod(state, c.pod, PodInfo(owner), env.node("r-1")) is None
    assert plugin.filter(state, c.pod, env.node("r-1")) is None
    # The original state is untouched; AddPod restores the conflict.
    assert c.filter("r-1").message() == ERR_REASON_RWOP_CONFLICT
    assert plugin.add_pod(state, c.pod, PodInfo(owner), env.node("r-1")) is None
    assert plugin.filter(state, c.pod, env.node("r-1")).message() == ERR_REASON_RWOP_CONFLICT


def test_missing_claim() -> None:
    env = Env(NODES, [], objects=[])
    c = Cycle(_plugin(env), env, claim_pod("p", "nope"))
    assert c.pre_filter_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert c.pre_filter_status.message() == 'persistentvolumeclaim "nope" not found'


def test_pod_without_volumes_is_skipped() -> None:
    env = Env(NODES, [])
    c = Cycle(_plugin(env), env, volume_pod("plain", []))
    assert c.pre_filter_status.code == Code.SKIP


GCE_RW = {"name": "d", "gcePersistentDisk": {"pdName": "disk-1"}}
GCE_RO = {"name": "d", "gcePersistentDisk": {"pdName": "disk-1", "readOnly": True}}
GCE_OTHER = {"name": "d", "gcePersistentDisk": {"pdName": "disk-2"}}
EBS = {"name": "d", "awsElasticBlockStore": {"volumeID": "vol-1"}}
EBS_RO = {"name": "d", "awsElasticBlockStore": {"volumeID": "vol-1", "readOnly": True}}
ISCSI_RW = {
    "name": "d",
    "iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2016-12.server:storage.target01", "lun": 0},
}
ISCSI_RO = {"name": "d", "iscsi": {**ISCSI_RW["iscsi"], "readOnly": True}}
RBD_RW = {"name": "d", "rbd": {"monitors": ["a", "b"], "pool": "p", "image": "i"}}
RBD_RO = {"name": "d", "rbd": {"monitors": ["b", "c"], "pool": "p", "image": "i", "readOnly": True}}
RBD_RO2 = {"name": "d", "rbd": {"monitors": ["a"], "pool": "p", "image": "i", "readOnly": True}}
RBD_OTHER_MON = {"name": "d", "rbd": {"monitors": ["z"], "pool": "p", "image": "i"}}


@pytest.mark.parametrize(
    ("existing", "new", "conflict"),
    [
        (GCE_RW, GCE_RW, True),
        (GCE_RO, GCE_RW, True),
        (GCE_RO, GCE_RO, False),
        (GCE_RW, GCE_OTHER, False),
        (EBS, EBS, True),
        (EBS_RO, EBS_RO, True),
        (ISCSI_RW, ISCSI_RO, True),
        (ISCSI_RO, ISCSI_RO, False),
        (RBD_RW, RBD_RO, True),
        (RBD_RO2, RBD_RO, False),
        (RBD_RW, RBD_OTHER_MON, False),
    ],
    ids=[
        "gce-rw-rw",
        "gce-ro-rw",
        "gce-ro-ro",
        "gce-other-disk",
        "ebs",
        "ebs-even-read-only",
        "iscsi-rw",
        "iscsi-ro-ro",
        "rbd-shared-monitor",
        "rbd-ro-ro",
        "rbd-disjoint-monitors",
    ],
)
def test_disk_conflicts(existing: dict[str, Any], new: dict[str, Any], conflict: bool) -> None:
    env = Env(NODES, [volume_pod("old", [existing], node="r-1")])
    c = Cycle(_plugin(env), env, volume_pod("new", [new]))
    assert c.pre_filter_status is None
    expected = ERR_REASON_DISK_CONFLICT if conflict else None
    assert c.messages() == {"r-1": expected, "r-2": None}
    if conflict:
        assert c.filter("r-1").code == Code.UNSCHEDULABLE


def test_hints() -> None:
    env = Env(NODES, [])
    plugin = _plugin(env)
    events = {e.event.resource: e for e in plugin.events_to_register()}
    assert set(events) == {"Pod", "Node", "PersistentVolumeClaim"}
    pod = claim_pod("p", "mine")
    deleted_hint = events["Pod"].hint
    assert deleted_hint(pod, claim_pod("o", "mine", node="r-1"), None) == QueueingHint.QUEUE
    assert deleted_hint(pod, claim_pod("o", "theirs", node="r-1"), None) == QueueingHint.QUEUE_SKIP
    assert deleted_hint(pod, claim_pod("o", "mine", node="r-1", namespace="x"), None) == QueueingHint.QUEUE_SKIP
    disk_pod = volume_pod("d", [GCE_RW])
    assert deleted_hint(disk_pod, volume_pod("o", [GCE_RW], node="r-1"), None) == QueueingHint.QUEUE
    pvc_hint = events["PersistentVolumeClaim"].hint
    assert pvc_hint(pod, None, pvc("mine")[1]) == QueueingHint.QUEUE
    assert pvc_hint(pod, None, pvc("other")[1]) == QueueingHint.QUEUE_SKIP
