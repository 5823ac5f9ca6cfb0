"""No device twice: the DRA stress run of test_dra_stress.py against a real kube-apiserver v1.34.1.

The server is the shared `kube` fixture (tests/live/apiserver.py). It runs no
controllers, so the test plays the resourceclaim controller's part: it creates
each pod's claim (the pod names it in `resourceClaimName`) and, when it deletes a
pod, releases the claim as the controller would (reservation and allocation
cleared, the delete-protection finalizer removed) and deletes it. Nodes are made
Ready by the fixture; the DeviceClass and ResourceSlices are created by hand, as a
driver would publish them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from tests.live.apiserver import KubeApiServer
from tests.live.client import MERGE_PATCH, Api
from tests.live.conftest import Cluster, sched_config, wait_ready
from tests.live.dra_stress import CLAIMS, PODS, Ops, claim_spec, device_class, gpu_pod, node_slice, stress

GPU_NODES = 3
GPUS_PER_NODE = 2
ROUNDS = 3
PODS_PER_ROUND = 10


def _ops(api: Api) -> Ops:
    def create(name: str) -> None:
        claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": f"{name}-gpu"}}
        api.create(CLAIMS, {**claim, "spec": claim_spec()})
        api.create(PODS, gpu_pod(name, {"resourceClaimName": f"{name}-gpu"}))

    def delete(name: str) -> None:
        code, out = api.call("DELETE", f"{PODS}/{name}", {"gracePeriodSeconds": 0})
        assert code == 200, out
        # The resourceclaim controller's part: the claim has no consumer left, so it is deallocated (the write
        # that requeues pods waiting for devices), its finalizer goes, and the claim with it.
        claim = f"{CLAIMS}/{name}-gpu"
        api.patch(f"{claim}/status", {"status": {"reservedFor": None, "allocation": None}}, MERGE_PATCH)
        api.patch(claim, {"metadata": {"finalizers": None}}, MERGE_PATCH)
        code, out = api.call("DELETE", claim)
        assert code == 200, out

    return Ops(create, delete)


@pytest.mark.apiserver
def test_no_device_is_allocated_twice_when_many_claims_are_scheduled_at_once(
    kube: KubeApiServer, tmp_path: Path
) -> None:
    api = kube.api
    for i in range(GPU_NODES + 1):  # the last one has no devices
        kube.add_node(f"node-{i}", labels={"kubernetes.io/hostname": f"node-{i}"})
    slices = [node_slice(f"node-{i}", GPUS_PER_NODE) for i in range(GPU_NODES)]
    kube.create_objects(yaml.safe_dump_all([device_class(), *slices]))
    cluster = Cluster(tmp_path, kubeconfig=kube.kubeconfig)
    try:
        run = cluster.start_run(sched_config())
        wait_ready(run, timeout=60)
        tally = stress(api, _ops(api), GPU_NODES * GPUS_PER_NODE, ROUNDS, PODS_PER_ROUND)
        assert tally.allocations == ROUNDS * PODS_PER_ROUND, "every claim allocated once, each seen by a check"
        assert run.stop() == 0
    finally:
        cluster.close()
