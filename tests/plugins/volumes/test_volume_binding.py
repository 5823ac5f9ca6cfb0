"""VolumeBinding: golden situations and one test per rule."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from vol_helpers import Cycle, claim_pod, csi_node, pv, pvc, storage_class, volume_pod

from kubesched.api.decode import decode
from kubesched.framework.events import QueueingHint
from kubesched.framework.status import Code
from kubesched.plugins.volumebinding.binder import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
)
from kubesched.plugins.volumebinding.plugin import VolumeBinding
from kubesched.plugins.volumebinding.pv_util import find_matching_volume
from kubesched.testing import Env, make_node

NODES = [make_node("v-1", cpu="4"), make_node("v-2", cpu="8"), make_node("v-3", cpu="6")]


def _env(objects: list[tuple[str, Any]], pods: list[Any] = (), nodes: list[Any] | None = None) -> Env:  # type: ignore[assignment]
    return Env(nodes or NODES, list(pods), objects=objects)


def _plugin(env: Env) -> VolumeBinding:
    return VolumeBinding.new(None, env.handle)


def _schedule(plugin: VolumeBinding, env: Env, pod: Any, node: str) -> None:
    """Reserve and PreBind on `node` (the pod's cycle must pass Filter there)."""
    c = Cycle(plugin, env, pod)
    assert c.pre_filter_status is None
    assert c.filter(node) is None
    assert plugin.reserve(c.state, c.pod, node) is None
    assert plugin.pre_bind(c.state, c.pod, node) is None


def local_pv_objects() -> list[tuple[str, Any]]:
    return [
        storage_class("local"),
        pv("pv-1-small", "5Gi", sc="local", hostname="v-1"),
        pv("pv-2-big", "50Gi", sc="local", hostname="v-2"),
        pv("pv-3-mid", "20Gi", sc="local", hostname="v-3"),
        pvc("data-a", "15Gi", sc="local"),
        pvc("data-b", "4Gi", sc="local"),
        pvc("data-c", "30Gi", sc="local"),
        pvc("data-d", "60Gi", sc="local"),
    ]


# ---------------------------------------------------------------- golden: local-pv-wffc


def test_golden_local_pv_wffc_sequence() -> None:
    env = _env(local_pv_objects())
    plugin = _plugin(env)

    a = Cycle(plugin, env, claim_pod("a", "data-a"))
    assert a.pre_filter_status is None
    assert a.messages() == {"v-1": ERR_REASON_BIND_CONFLICT, "v-2": None, "v-3": None}
    assert a.filter("v-1").code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert plugin.reserve(a.state, a.pod, "v-2") is None
    assert plugin.pre_bind(a.state, a.pod, "v-2") is None

    # The static binding is complete at once: PV and claim Bound, claimRef and volumeName set.
    bound_pv = env.client.get("PersistentVolume", "pv-2-big")
    claim = env.client.get("PersistentVolumeClaim", "default/data-a")
    assert bound_pv.status.phase == "Bound"
    assert (bound_pv.spec.claim_ref.namespace, bound_pv.spec.claim_ref.name) == ("default", "data-a")
    assert bound_pv.spec.claim_ref.uid == claim.metadata.uid
    assert claim.spec.volume_name == "pv-2-big"
    assert claim.status.phase == "Bound"
    assert claim.metadata.annotations["pv.kubernetes.io/bind-completed"] == "yes"
    assert claim.status.capacity == {"storage": "50Gi"}

    b = Cycle(plugin, env, claim_pod("b", "data-b"))
    assert b.messages() == {"v-1": None, "v-2": ERR_REASON_BIND_CONFLICT, "v-3": None}
    for name in ("c", "d"):
        c = Cycle(plugin, env, claim_pod(name, f"data-{name}"))
        assert c.pre_filter_status is None
        statuses = c.filters()
        assert all(s is not None and s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE for s in statuses.values())
        assert set(c.messages().values()) == {ERR_REASON_BIND_CONFLICT}


def test_a_pod_whose_claim_is_bound_now_passes_everywhere_its_pv_allows() -> None:
    env = _env(local_pv_objects())
    plugin = _plugin(env)
    _schedule(plugin, env, claim_pod("a", "data-a"), "v-3")
    again = Cycle(plugin, env, claim_pod("a2", "data-a"))
    assert again.messages() == {"v-1": ERR_REASON_NODE_CONFLICT, "v-2": ERR_REASON_NODE_CONFLICT, "v-3": None}


# ---------------------------------------------------------------- golden: pvc-missing-and-bound-affinity


def bound_affinity_objects() -> list[tuple[str, Any]]:
    return [
        storage_class("local"),
        pv("pv-bound", "10Gi", sc="local", hostname="v-3", claim=("default", "claimed"), phase="Bound"),
        pvc("claimed", "5Gi", sc="local", volume="pv-bound", bound=True),
    ]


def test_golden_missing_claim_is_unresolvable_at_prefilter() -> None:
    env = _env(bound_affinity_objects())
    c = Cycle(_plugin(env), env, claim_pod("uses-missing", "nope"))
    assert c.pre_filter_status is not None
    assert c.pre_filter_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert c.pre_filter_status.message() == 'persistentvolumeclaim "nope" not found'


def test_golden_bound_pv_node_affinity() -> None:
    env = _env(bound_affinity_objects())
    c = Cycle(_plugin(env), env, claim_pod("uses-bound", "claimed"))
    assert c.pre_filter_status is None
    assert c.messages() == {"v-1": ERR_REASON_NODE_CONFLICT, "v-2": ERR_REASON_NODE_CONFLICT, "v-3": None}
    assert c.filter("v-1").code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_all_bound_pod_reserves_and_prebinds_without_api_writes() -> None:
    env = _env(bound_affinity_objects())
    plugin = _plugin(env)
    before = env.client.get("PersistentVolume", "pv-bound").metadata.resource_version
    _schedule(plugin, env, claim_pod("uses-bound", "claimed"), "v-3")
    assert env.client.get("PersistentVolume", "pv-bound").metadata.resource_version == before


# ---------------------------------------------------------------- PreFilter rules


def test_pod_without_claims_is_skipped() -> None:
    env = _env([])
    c = Cycle(_plugin(env), env, volume_pod("plain", [{"name": "e", "emptyDir": {}}]))
    assert c.pre_filter_status is not None and c.pre_filter_status.code == Code.SKIP
    plugin = c.plugin
    # Reserve and PreBind still run for skipped pods: nothing to do.
    assert plugin.reserve(c.state, c.pod, "v-1") is None
    assert plugin.pre_bind(c.state, c.pod, "v-1") is None


def test_unbound_immediate_claim() -> None:
    env = _env([storage_class("fast", mode="Immediate", provisioner="csi.example.com"), pvc("imm", sc="fast")])
    c = Cycle(_plugin(env), env, claim_pod("p", "imm"))
    assert c.pre_filter_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert c.pre_filter_status.message() == "pod has unbound immediate PersistentVolumeClaims"


def test_claim_without_class_is_immediate() -> None:
    env = _env([pvc("noclass")])
    c = Cycle(_plugin(env), env, claim_pod("p", "noclass"))
    assert c.pre_filter_status.message() == "pod has unbound immediate PersistentVolumeClaims"


def test_prebound_claim_not_yet_bound_is_immediate() -> None:
    env = _env([storage_class("local"), pv("x", sc="local"), pvc("pre", sc="local", volume="x")])
    c = Cycle(_plugin(env), env, claim_pod("p", "pre"))
    assert c.pre_filter_status.message() == "pod has unbound immediate PersistentVolumeClaims"


def test_lost_claim() -> None:
    env = _env([pvc("lost", sc="local", volume="gone", status={"phase": "Lost"})])
    c = Cycle(_plugin(env), env, claim_pod("p", "lost"))
    assert c.pre_filter_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert c.pre_filter_status.message() == 'persistentvolumeclaim "lost" bound to non-existent persistentvolume "gone"'


def test_deleting_claim() -> None:
    kind, claim = pvc("dying", sc="local")
    claim = msgspec.structs.replace(
        claim, metadata=msgspec.structs.replace(claim.metadata, deletion_timestamp="2025-01-01T00:00:00Z")
    )
    env = _env([(kind, claim)])
    c = Cycle(_plugin(env), env, claim_pod("p", "dying"))
    assert c.pre_filter_status.message() == 'persistentvolumeclaim "dying" is being deleted'


def test_missing_ephemeral_claim() -> None:
    env = _env([])
    pod = volume_pod("eph", [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}])
    c = Cycle(_plugin(env), env, pod)
    assert c.pre_filter_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert c.pre_filter_status.message() == (
        'waiting for ephemeral volume controller to create the persistentvolumeclaim "eph-scratch"'
    )


def test_ephemeral_claim_not_owned_by_pod() -> None:
    env = _env([storage_class("local"), pvc("eph-scratch", sc="local")])
    pod = volume_pod("eph", [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}])
    c = Cycle(_plugin(env), env, pod)
    assert c.pre_filter_status.message() == (
        "PVC default/eph-scratch was not created for pod default/eph (pod is not owner)"
    )


# ---------------------------------------------------------------- Filter rules


def test_bound_claim_whose_pv_is_gone() -> None:
    env = _env([pvc("orphan", sc="local", volume="missing-pv", bound=True)])
    c = Cycle(_plugin(env), env, claim_pod("p", "orphan"))
    assert c.pre_filter_status is None
    s = c.filter("v-1")
    assert s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert s.message() == ERR_REASON_PV_NOT_EXIST


def test_smallest_matching_pv_is_chosen() -> None:
    env = _env(
        [
            storage_class("local"),
            pv("big", "50Gi", sc="local", hostname="v-2"),
            pv("mid", "20Gi", sc="local", hostname="v-2"),
            pv("tiny", "1Gi", sc="local", hostname="v-2"),
            pvc("data", "15Gi", sc="local"),
        ]
    )
    plugin = _plugin(env)
    _schedule(plugin, env, claim_pod("p", "data"), "v-2")
    assert env.client.get("PersistentVolumeClaim", "default/data").spec.volume_name == "mid"


def test_two_claims_get_two_distinct_pvs_smallest_claim_first() -> None:
    env = _env(
        [
            storage_class("local"),
            pv("p10", "10Gi", sc="local", hostname="v-1"),
            pv("p20", "20Gi", sc="local", hostname="v-1"),
            pvc("big", "15Gi", sc="local"),
            pvc("small", "5Gi", sc="local"),
        ]
    )
    plugin = _plugin(env)
    _schedule(plugin, env, claim_pod("p", "big", "small"), "v-1")
    assert env.client.get("PersistentVolumeClaim", "default/small").spec.volume_name == "p10"
    assert env.client.get("PersistentVolumeClaim", "default/big").spec.volume_name == "p20"


def test_two_claims_one_pv_does_not_fit() -> None:
    env = _env(
        [
            storage_class("local"),
            pv("only", "10Gi", sc="local", hostname="v-1"),
            pvc("one", "5Gi", sc="local"),
            pvc("two", "5Gi", sc="local"),
        ]
    )
    c = Cycle(_plugin(env), env, claim_pod("p", "one", "two"))
    assert c.filter("v-1").message() == ERR_REASON_BIND_CONFLICT


@pytest.mark.parametrize(
    ("pv_kw", "pvc_kw"),
    [
        ({"modes": ("ReadWriteOnce",)}, {"modes": ("ReadWriteMany",)}),
        ({"sc": "other"}, {}),
        ({"phase": "Released"}, {}),
        ({"storage": "4Gi"}, {}),
        ({"labels": {"tier": "slow"}}, {"spec": {"selector": {"matchLabels": {"tier": "fast"}}}}),
        ({"spec": {"volumeMode": "Block"}}, {}),
        ({"spec": {"volumeAttributesClassName": "gold"}}, {}),
        ({"claim": ("default", "someone-else")}, {}),
    ],
    ids=[
        "access-modes",
        "class",
        "not-available",
        "capacity",
        "selector",
        "volume-mode",
        "attributes-class",
        "claimed",
    ],
)
def test_pv_matching_rule(pv_kw: dict[str, Any], pvc_kw: dict[str, Any]) -> None:
    _, claim = pvc("c", "5Gi", sc="local", **pvc_kw)
    kw = {"storage": "10Gi", "sc": "local", **pv_kw}
    _, vol = pv("v", **kw)
    assert find_matching_volume(claim, [vol], {"kubernetes.io/hostname": "v-1"}, {}) is None
    # The same PV without the mismatch matches.
    _, ok_claim = pvc("c", "5Gi", sc="local")
    _, ok_vol = pv("v", "10Gi", sc="local")
    assert find_matching_volume(ok_claim, [ok_vol], {"kubernetes.io/hostname": "v-1"}, {}) is ok_vol


def test_pv_prebound_to_the_claim_wins_over_smaller() -> None:
    _, claim = pvc("c", "5Gi", sc="local")
    _, small = pv("small", "5Gi", sc="local")
    _, mine = pv("mine", "50Gi", sc="local", claim=("default", "c"), phase="Bound")
    assert find_matching_volume(claim, [small, mine], {}, {}) is mine


def test_selected_node_claim_only_fits_that_node() -> None:
    env = _env(
        [
            storage_class("dyn", provisioner="csi.example.com"),
            pvc("d", sc="dyn", annotations={"volume.kubernetes.io/selected-node": "v-2"}),
        ]
    )
    c = Cycle(_plugin(env), env, claim_pod("p", "d"))
    assert c.messages() == {"v-1": ERR_REASON_BIND_CONFLICT, "v-2": None, "v-3": ERR_REASON_BIND_CONFLICT}


def test_dynamic_provisioning_allowed_topologies_and_selected_node_write() -> None:
    nodes = [make_node("n-a", labels={"zone": "a"}), make_node("n-b", labels={"zone": "b"})]
    topo = [{"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}]
    env = Env(
        nodes,
        [],
        objects=[storage_class("dyn", provisioner="csi.example.com", allowedTopologies=topo), pvc("d", sc="dyn")],
    )
    plugin = _plugin(env)
    c = Cycle(plugin, env, claim_pod("p", "d"))
    assert c.messages() == {"n-a": None, "n-b": ERR_REASON_BIND_CONFLICT}
    assert plugin.reserve(c.state, c.pod, "n-a") is None
    assert plugin.pre_bind(c.state, c.pod, "n-a") is None
    claim = env.client.get("PersistentVolumeClaim", "default/d")
    assert claim.metadata.annotations["volume.kubernetes.io/selected-node"] == "n-a"
    assert claim.spec.volume_name == ""


def _capacity(name: str, sc: str, capacity: str, hostname: str) -> tuple[str, Any]:
    """CSIStorageCapacity is not a manifest kind of the scenario format: built directly."""
    from kubesched.api.meta import LabelSelector, ObjectMeta
    from kubesched.api.storage import CSIStorageCapacity

    obj = CSIStorageCapacity(
        metadata=ObjectMeta(name=name, namespace="kube-system"),
        storage_class_name=sc,
        capacity=capacity,
        node_topology=LabelSelector(match_labels={"kubernetes.io/hostname": hostname}),
    )
    return "CSIStorageCapacity", obj


def test_storage_capacity_tracking() -> None:
    driver = (
        "CSIDriver",
        decode("CSIDriver", {"metadata": {"name": "csi.example.com"}, "spec": {"storageCapacity": True}}),
    )
    cap = _capacity("cap-1", "dyn", "8Gi", "v-1")
    env = _env([storage_class("dyn", provisioner="csi.example.com"), driver, cap, pvc("d", "5Gi", sc="dyn")])
    c = Cycle(_plugin(env), env, claim_pod("p", "d"))
    assert c.messages() == {"v-1": None, "v-2": ERR_REASON_NOT_ENOUGH_SPACE, "v-3": ERR_REASON_NOT_ENOUGH_SPACE}
    env2 = _env([storage_class("dyn", provisioner="csi.example.com"), driver, cap, pvc("d", "9Gi", sc="dyn")])
    c2 = Cycle(_plugin(env2), env2, claim_pod("p", "d"))
    assert c2.filter("v-1").message() == ERR_REASON_NOT_ENOUGH_SPACE
    # A driver that does not publish capacity is not checked.
    plain = ("CSIDriver", decode("CSIDriver", {"metadata": {"name": "csi.example.com"}, "spec": {}}))
    env3 = _env([storage_class("dyn", provisioner="csi.example.com"), plain, cap, pvc("d", "9Gi", sc="dyn")])
    assert set(Cycle(_plugin(env3), env3, claim_pod("p", "d")).messages().values()) == {None}


def test_no_provisioner_class_cannot_provision() -> None:
    env = _env([storage_class("local"), pvc("d", sc="local")])
    c = Cycle(_plugin(env), env, claim_pod("p", "d"))
    assert set(c.messages().values()) == {ERR_REASON_BIND_CONFLICT}


def test_migrated_in_tree_pv_node_affinity_uses_csi_topology() -> None:
    nodes = [make_node("g-1", labels={"topology.kubernetes.io/zone": "us-a"})]
    gce_pv = pv(
        "gce",
        sc="std",
        claim=("default", "g"),
        phase="Bound",
        labels={"topology.kubernetes.io/zone": "us-a"},
        spec={"gcePersistentDisk": {"pdName": "disk-1"}},
    )
    objects = [storage_class("std", mode="Immediate"), gce_pv, pvc("g", sc="std", volume="gce", bound=True)]
    # Without migration on the node the PV has no node affinity: it fits.
    env = Env(nodes, [], objects=[*objects, csi_node("g-1", {"pd.csi.storage.gke.io": None})])
    assert Cycle(_plugin(env), env, claim_pod("p", "g")).filter("g-1") is None
    # Migrated: the zone label becomes a topology.gke.io/zone requirement the node lacks.
    ann = {"storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/gce-pd"}
    env2 = Env(nodes, [], objects=[*objects, csi_node("g-1", {"pd.csi.storage.gke.io": None}, ann)])
    assert Cycle(_plugin(env2), env2, claim_pod("p", "g")).filter("g-1").message() == ERR_REASON_NODE_CONFLICT


# ---------------------------------------------------------------- Reserve / Unreserve


def test_reserve_assumes_and_unreserve_reverts() -> None:
    env = _env(
        [
            storage_class("local"),
            pv("only", "10Gi", sc="local", hostname="v-1"),
            pvc("x", sc="local"),
            pvc("y", sc="local"),
        ]
    )
    plugin = _plugin(env)
    first = Cycle(plugin, env, claim_pod("p1", "x"))
    assert first.filter("v-1") is None
    assert plugin.reserve(first.state, first.pod, "v-1") is None
    # The assumed binding is seen by the next pod before any API write.
    assert env.client.get("PersistentVolume", "only").spec.claim_ref is None
    second = Cycle(plugin, env, claim_pod("p2", "y"))
    assert second.filter("v-1").message() == ERR_REASON_BIND_CONFLICT
    plugin.unreserve(first.state, first.pod, "v-1")
    third = Cycle(plugin, env, claim_pod("p3", "y"))
    assert third.filter("v-1") is None


def test_prebind_conflict_when_pv_changed_since_assumed() -> None:
    env = _env([storage_class("local"), pv("only", "10Gi", sc="local", hostname="v-1"), pvc("x", sc="local")])
    plugin = _plugin(env)
    c = Cycle(plugin, env, claim_pod("p1", "x"))
    assert c.filter("v-1") is None
    assert plugin.reserve(c.state, c.pod, "v-1") is None
    current = env.client.get("PersistentVolume", "only")
    env.client.update("PersistentVolume", msgspec.structs.replace(current))
    s = plugin.pre_bind(c.state, c.pod, "v-1")
    assert s is not None and s.code == Code.ERROR
    assert s.message() == (
        'Operation cannot be fulfilled on persistentvolumes "only": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )


def test_prebind_without_decision_for_node() -> None:
    env = _env([storage_class("local"), pv("only", "10Gi", sc="local", hostname="v-1"), pvc("x", sc="local")])
    plugin = _plugin(env)
    c = Cycle(plugin, env, claim_pod("p1", "x"))
    assert c.filter("v-1") is None
    s = plugin.pre_bind(c.state, c.pod, "v-2")
    assert s is not None and s.code == Code.ERROR and s.message() == 'no pod volumes found for node "v-2"'


# ---------------------------------------------------------------- scoring and queueing


def test_prescore_skips_without_capacity_scoring_gate() -> None:
    env = _env(local_pv_objects())
    c = Cycle(_plugin(env), env, claim_pod("a", "data-a"))
    c.filters()
    s = c.plugin.pre_score(c.state, c.pod, env.snapshot.nodes)
    assert s is not None and s.code == Code.SKIP


def _hint(plugin: VolumeBinding, resource: str) -> Any:
    for e in plugin.events_to_register():
        if e.event.resource == resource:
            return e
    raise AssertionError(resource)


def test_events_and_hints() -> None:
    env = _env([])
    plugin = _plugin(env)
    resources = [e.event.resource for e in plugin.events_to_register()]
    assert resources == [
        "storage.k8s.io/StorageClass",
        "PersistentVolumeClaim",
        "PersistentVolume",
        "Node",
        "storage.k8s.io/CSINode",
        "storage.k8s.io/CSIDriver",
        "storage.k8s.io/CSIStorageCapacity",
    ]
    pod = claim_pod("p", "mine")
    pvc_hint = _hint(plugin, "PersistentVolumeClaim").hint
    assert pvc_hint(pod, None, pvc("mine")[1]) == QueueingHint.QUEUE
    assert pvc_hint(pod, None, pvc("other")[1]) == QueueingHint.QUEUE_SKIP
    assert pvc_hint(pod, None, pvc("mine", namespace="ns2")[1]) == QueueingHint.QUEUE_SKIP
    sc_hint = _hint(plugin, "storage.k8s.io/StorageClass").hint
    old_sc = storage_class("s")[1]
    assert sc_hint(pod, None, old_sc) == QueueingHint.QUEUE
    assert sc_hint(pod, old_sc, old_sc) == QueueingHint.QUEUE_SKIP
    topo = [{"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}]
    assert sc_hint(pod, old_sc, storage_class("s", allowedTopologies=topo)[1]) == QueueingHint.QUEUE
    csinode_hint = _hint(plugin, "storage.k8s.io/CSINode").hint
    plain = csi_node("n", {})[1]
    migrated = csi_node("n", {}, {"storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/gce-pd"})[1]
    assert csinode_hint(pod, None, plain) == QueueingHint.QUEUE
    assert csinode_hint(pod, plain, plain) == QueueingHint.QUEUE_SKIP
    assert csinode_hint(pod, plain, migrated) == QueueingHint.QUEUE


def test_prebound_pv_that_does_not_admit_the_node_means_no_match() -> None:
    _, claim = pvc("c", "5Gi", sc="local")
    _, other = pv("other", "5Gi", sc="local")
    _, mine = pv("mine", "5Gi", sc="local", claim=("default", "c"), phase="Bound", hostname="v-9")
    assert find_matching_volume(claim, [other, mine], {"kubernetes.io/hostname": "v-1"}, {}) is None
    assert find_matching_volume(claim, [other, mine], {"kubernetes.io/hostname": "v-9"}, {}) is mine
    # An excluded pre-bound PV is skipped, not an answer.
    assert find_matching_volume(claim, [other, mine], {"kubernetes.io/hostname": "v-1"}, {"mine": mine}) is other
