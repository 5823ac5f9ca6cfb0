"""The reference simulator's run mechanics that decide placements: node names and the tie-break.

The reference (syncClusterResourceList) prefixes each node, in name order, with its index in a
seeded permutation; its Kubernetes fork gives equal top scores to the smallest name. Together:
tied nodes are taken in a per-seed random order, the same order for every pod of the run.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from kubesched.research.openb import NodeRow, PodRow, make_node, node_names, workload
from kubesched.research.run import ReferenceScheduler, run

NODES = [NodeRow(f"n{i}", 64000, 262144, 2, "T4") for i in (3, 0, 2, 1)]


def test_node_names_are_a_seeded_permutation_prefix():
    names = node_names(NODES, random.Random(5))
    assert sorted(names) == ["n0", "n1", "n2", "n3"]
    assert sorted(v.split("-")[0] for v in names.values()) == ["0000", "0001", "0002", "0003"]
    assert all(v.endswith("-" + k) for k, v in names.items())
    assert node_names(NODES, random.Random(5)) == names
    # The permutation follows the name-sorted list: n0 gets perm[0], whatever the input order.
    perm = random.Random(5).sample(range(4), 4)
    assert [names[f"n{i}"] for i in range(4)] == [f"{perm[i]:04d}-n{i}" for i in range(4)]
    assert len({tuple(node_names(NODES, random.Random(s)).values()) for s in range(10)}) > 1


def test_renamed_node_keeps_its_hostname_label():
    node = make_node(NODES[0], "0002-n3")
    assert node.metadata.name == "0002-n3"
    assert node.metadata.labels["kubernetes.io/hostname"] == "n3"


def test_equal_top_scores_go_to_the_smallest_name():
    names = np.array(["0002-a", "0000-d", "0003-b", "0001-c"], dtype=object)
    totals = np.array([70, 70, 90, 90])
    # Top score 90: 0003-b and 0001-c tie; the smaller name wins though it comes later.
    host, tied = ReferenceScheduler.select_host(None, names, totals)  # type: ignore[arg-type]
    assert host == "0001-c" and tied.tolist() == [2, 3]
    host, tied = ReferenceScheduler.select_host(None, names, np.array([5, 5, 5, 5]))  # type: ignore[arg-type]
    assert host == "0000-d" and tied.tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_gpu_packing_fills_tied_nodes_in_the_seeded_order(seed):
    # Four empty 2-GPU nodes, four 1-GPU pods. GpuPacking: an idle node scores max(33-2, 2) = 31 on
    # every node (a tie), a used one with a free GPU max(50-1, 33) = 49. So pods 1-2 fill the node
    # first in the seeded order, pods 3-4 the second; a uniform draw would pick pod 3's node at random.
    pods = [PodRow(f"p{i}", 4000, 1024, 1, 1000, "") for i in range(4)]
    r = run(NODES, pods, "packing", seed=seed, ratio=0, shuffle=False)
    rng = random.Random(seed)
    workload(pods, NODES, 0, rng, shuffle=False)
    by_prefix = sorted(node_names(NODES, rng).values())
    assert r.hosts == [by_prefix[0], by_prefix[0], by_prefix[1], by_prefix[1]]
    assert r.allocated[-1] == 4000 and r.failed == 0


def test_cpu_pods_tie_everywhere_under_gpu_clustering():
    # GpuClustering scores pods without GPU 0 on every node: each goes to the node first in the order.
    pods = [PodRow(f"c{i}", 30000, 1024, 0, 0, "") for i in range(3)]
    r = run(NODES, pods, "clustering", seed=9, ratio=0, shuffle=False)
    rng = random.Random(9)
    workload(pods, NODES, 0, rng, shuffle=False)
    first, second = sorted(node_names(NODES, rng).values())[:2]
    # 64 CPUs a node: two 30-CPU pods fit on the first, the third goes to the second.
    assert r.hosts == [first, first, second]
