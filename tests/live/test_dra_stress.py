"""No device twice: `kubesched run` allocating many template claims at once through `kubesched serve`.

The issue this guards: PreBind wrote a claim's allocation, the next cycle began
before the watch delivered it, and a second claim got the same device (live
mode only: the embedded cluster's store is never behind its own writes). The
stress run is in dra_stress.py; the same run against a real kube-apiserver is
test_dra_stress_apiserver.py.
"""

from __future__ import annotations

import yaml
from tests.live.conftest import Cluster, nodes_yaml, sched_config, wait_ready
from tests.live.dra_stress import PODS, Ops, claim_spec, device_class, gpu_pod, node_slice, stress

GPU_NODES = 3
GPUS_PER_NODE = 2
ROUNDS = 3
PODS_PER_ROUND = 10


def test_no_device_is_allocated_twice_when_many_template_claims_are_scheduled_at_once(cluster: Cluster) -> None:
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "gpu", "namespace": "default"},
        "spec": {"spec": claim_spec()},
    }
    slices = [node_slice(f"node-{i}", GPUS_PER_NODE) for i in range(GPU_NODES)]
    # One node more, without devices: every cycle also filters a node out.
    scenario = nodes_yaml(GPU_NODES + 1) + "---\n" + yaml.safe_dump_all([device_class(), *slices, template])
    api = cluster.start_serve(scenario)
    run = cluster.start_run(sched_config())
    wait_ready(run)

    def delete(name: str) -> None:
        assert api.call("DELETE", f"{PODS}/{name}")[0] == 200

    ops = Ops(create=lambda n: api.create(PODS, gpu_pod(n, {"resourceClaimTemplateName": "gpu"})), delete=delete)
    tally = stress(api, ops, GPU_NODES * GPUS_PER_NODE, ROUNDS, PODS_PER_ROUND)
    assert tally.allocations == ROUNDS * PODS_PER_ROUND, "every claim allocated once, each seen by a check"
    assert run.stop() == 0
