"""NodeVolumeLimits: CSINode allocatable counts against unique volumes on the node."""

from __future__ import annotations

from typing import Any

from vol_helpers import Cycle, claim_pod, csi_node, pv, pvc, storage_class, volume_pod

from kubesched.api.meta import ObjectMeta
from kubesched.api.storage import VolumeAttachment, VolumeAttachmentSource, VolumeAttachmentSpec
from kubesched.framework.events import QueueingHint
from kubesched.framework.status import Code
from kubesched.plugins.nodevolumelimits import ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED, NodeVolumeLimits
from kubesched.testing import Env, make_node

EBS = "ebs.csi.example.com"


def ebs_objects(n: int = 5) -> list[tuple[str, Any]]:
    objs: list[tuple[str, Any]] = [storage_class("ebs", mode="Immediate", provisioner=EBS)]
    for i in range(n):
        objs.append(pv(f"ebs-pv-{i}", sc="ebs", claim=("default", f"ebs-{i}"), phase="Bound", csi=(EBS, f"vol-{i}")))
        objs.append(pvc(f"ebs-{i}", sc="ebs", volume=f"ebs-pv-{i}", bound=True))
    return objs


def golden_env(pods: list[Any] = ()) -> Env:  # type: ignore[assignment]
    nodes = [make_node("c-1", cpu="8"), make_node("c-2", cpu="4")]
    objs = [*ebs_objects(), csi_node("c-1", {EBS: 2}), csi_node("c-2", {EBS: 1})]
    return Env(nodes, [claim_pod("existing", "ebs-0", node="c-2"), *pods], objects=objs)


def _plugin(env: Env) -> NodeVolumeLimits:
    return NodeVolumeLimits.new(None, env.handle)


def test_golden_csi_volume_limits() -> None:
    env = golden_env()
    two = Cycle(_plugin(env), env, claim_pod("two", "ebs-1", "ebs-2"))
    assert two.pre_filter_status is None
    assert two.messages() == {"c-1": None, "c-2": ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED}
    assert two.filter("c-2").code == Code.UNSCHEDULABLE
    # "two" lands on c-1: now both nodes are full for any new volume.
    env = golden_env([claim_pod("two", "ebs-1", "ebs-2", node="c-1")])
    for name, claim in (("one", "ebs-3"), ("another", "ebs-4")):
        c = Cycle(_plugin(env), env, claim_pod(name, claim))
        assert c.messages() == {
            "c-1": ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,
            "c-2": ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,
        }


def test_volume_already_on_node_is_not_counted_twice() -> None:
    env = golden_env()
    c = Cycle(_plugin(env), env, claim_pod("shares", "ebs-0"))
    assert c.messages() == {"c-1": None, "c-2": None}


def test_unbound_claim_counts_against_its_provisioner() -> None:
    nodes = [make_node("n")]
    objs = [storage_class("late", provisioner=EBS), pvc("new", sc="late"), csi_node("n", {EBS: 0})]
    env = Env(nodes, [], objects=objs)
    assert Cycle(_plugin(env), env, claim_pod("p", "new")).filter("n").message() == (
        ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED
    )


def test_no_csinode_or_no_count_means_no_limit() -> None:
    env = Env([make_node("n"), make_node("m")], [], objects=[*ebs_objects(2), csi_node("m", {EBS: None})])
    c = Cycle(_plugin(env), env, claim_pod("p", "ebs-0", "ebs-1"))
    assert c.messages() == {"n": None, "m": None}


def test_other_driver_limit_does_not_apply() -> None:
    env = Env([make_node("n")], [], objects=[*ebs_objects(2), csi_node("n", {"other.csi": 0})])
    assert Cycle(_plugin(env), env, claim_pod("p", "ebs-0")).filter("n") is None


def test_in_tree_inline_volume_counts_against_migrated_driver() -> None:
    ebs = {"name": "d", "awsElasticBlockStore": {"volumeID": "aws://us-east-1a/vol-9"}}
    running = volume_pod("old", [{"name": "d", "awsElasticBlockStore": {"volumeID": "vol-8"}}], node="n")
    env = Env([make_node("n")], [running], objects=[csi_node("n", {"ebs.csi.aws.com": 1})])
    c = Cycle(_plugin(env), env, volume_pod("new", [ebs]))
    assert c.pre_filter_status is None
    assert c.filter("n").message() == ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED
    # The same EBS volume (its aws:// form) is one volume, not two.
    same = volume_pod("same", [{"name": "d", "awsElasticBlockStore": {"volumeID": "aws://us-east-1a/vol-8"}}])
    assert Cycle(_plugin(env), env, same).filter("n") is None
    # Without a CSINode, in-tree volumes are not counted by this plugin.
    env2 = Env([make_node("n")], [running], objects=[])
    assert Cycle(_plugin(env2), env2, volume_pod("new", [ebs])).filter("n") is None


def test_volume_attachments_count() -> None:
    va = VolumeAttachment(
        metadata=ObjectMeta(name="va-1"),
        spec=VolumeAttachmentSpec(
            attacher=EBS, node_name="c-1", source=VolumeAttachmentSource(persistent_volume_name="ebs-pv-3")
        ),
    )
    nodes = [make_node("c-1")]
    objs = [*ebs_objects(), csi_node("c-1", {EBS: 1}), ("VolumeAttachment", va)]
    env = Env(nodes, [], objects=objs)
    assert Cycle(_plugin(env), env, claim_pod("p", "ebs-1")).filter("c-1").message() == (
        ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED
    )
    # As upstream, only pods' volumes are subtracted from the new ones, not attachments: still over.
    assert Cycle(_plugin(env), env, claim_pod("p", "ebs-3")).filter("c-1").message() == (
        ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED
    )
    # An attachment on another node does not count here.
    env2 = Env([make_node("c-2")], [], objects=[*ebs_objects(), csi_node("c-2", {EBS: 1}), ("VolumeAttachment", va)])
    assert Cycle(_plugin(env2), env2, claim_pod("p", "ebs-1")).filter("c-2") is None


def test_missing_claim_is_unresolvable() -> None:
    env = golden_env()
    s = Cycle(_plugin(env), env, claim_pod("p", "nope")).filter("c-1")
    assert s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert s.message() == 'looking up PVC default/nope: persistentvolumeclaim "nope" not found'


def test_pod_without_counted_volumes_is_skipped() -> None:
    env = golden_env()
    c = Cycle(_plugin(env), env, volume_pod("p", [{"name": "e", "emptyDir": {}}]))
    assert c.pre_filter_status.code == Code.SKIP


def test_hints() -> None:
    env = golden_env()
    events = _plugin(env).events_to_register()
    kinds = [(e.event.resource, int(e.event.action)) for e in events]
    assert [k for k, _ in kinds] == [
        "storage.k8s.io/CSINode",
        "storage.k8s.io/CSINode",
        "Pod",
        "PersistentVolumeClaim",
        "storage.k8s.io/VolumeAttachment",
    ]
    pod = claim_pod("p", "ebs-1")
    update_hint = events[1].hint
    assert update_hint(pod, csi_node("n", {EBS: 1})[1], csi_node("n", {EBS: 2})[1]) == QueueingHint.QUEUE
    assert update_hint(pod, csi_node("n", {EBS: 2})[1], csi_node("n", {EBS: 1})[1]) == QueueingHint.QUEUE_SKIP
    deleted_hint = events[2].hint
    assert deleted_hint(pod, claim_pod("o", "ebs-0", node="c-1"), None) == QueueingHint.QUEUE
    assert deleted_hint(pod, claim_pod("o", "ebs-0"), None) == QueueingHint.QUEUE_SKIP
    assert deleted_hint(pod, volume_pod("o", [], node="c-1"), None) == QueueingHint.QUEUE_SKIP
    pvc_hint = events[3].hint
    assert pvc_hint(pod, None, pvc("ebs-1")[1]) == QueueingHint.QUEUE
    assert pvc_hint(pod, None, pvc("ebs-9")[1]) == QueueingHint.QUEUE_SKIP
