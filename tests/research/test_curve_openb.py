"""The trace's CSV files, the reference's workload order and inflation, and the curve's discretization."""

from __future__ import annotations

import pytest

from kubesched.errors import InputError
from kubesched.research.curve import allocation_curve
from kubesched.research.openb import NodeRow, PodRow, read_nodes, read_pods, workload

NODES = "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,T4\nn1,32000,131072,0,\n"
PODS = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\np0,4000,1024,1,500,\np1,8000,2048,2,1000,V100M16|V100M32\n"
)


def test_reads_the_csv_files(tmp_path):
    (tmp_path / "n.csv").write_text(NODES)
    (tmp_path / "p.csv").write_text(PODS)
    want = [NodeRow("n0", 64000, 262144, 2, "T4"), NodeRow("n1", 32000, 131072, 0, "")]
    assert read_nodes(tmp_path / "n.csv") == want
    pods = read_pods(tmp_path / "p.csv")
    assert pods[1].request.models == "V100M16|V100M32" and pods[1].request.total == 2000 and pods[1].line == 3


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (PODS + "p2,lots,1,0,0,\n", "line 4: cpu_milli: 'lots' is not a whole number"),
        (PODS + "p0,1,1,0,0,\n", "line 4: name: p0 is already on line 2"),
        (PODS + "p3,1000,1,2,500,\n", "line 4: gpu_milli: 500: a task of 2 GPUs takes whole GPUs (1000)"),
        ("name,cpu_milli\np,1\n", "line 1: missing column(s) memory_mib, num_gpu, gpu_milli"),
    ],
)
def test_bad_rows_are_named(tmp_path, text, message):
    (tmp_path / "p.csv").write_text(text)
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")) as err:
        read_pods(tmp_path / "p.csv")
    assert str(err.value).startswith(str(tmp_path / "p.csv"))


def test_workload_is_shuffled_and_tuned_to_the_ratio():
    nodes = [NodeRow("n", 64000, 1, 4, "T4")]  # 4000 milli
    pods = [PodRow(f"p{i}", 1000, 1, 1, 500, "") for i in range(4)] + [PodRow("cpu", 1000, 1, 0, 0, "")]
    order = workload(pods, nodes, 1.3, seed=7)
    # 2000 milli in the trace; 500-milli copies are added while the next fits under 5200: 6 more (5000).
    assert sum(a.row.request.total for a in order) == 5000
    assert sorted(a.name for a in order[:5]) == ["cpu", "p0", "p1", "p2", "p3"]
    assert all("-tuned-" in a.name for a in order[5:]) and [a.name.split("-tuned-")[1] for a in order[5:]] == list(
        map(str, range(len(order) - 5))
    )
    assert [a.name for a in order] == [a.name for a in workload(pods, nodes, 1.3, seed=7)]
    assert [a.name for a in order] != [a.name for a in workload(pods, nodes, 1.3, seed=8)]
    # Above the target, random pods go instead.
    assert sum(a.row.request.total for a in workload(pods, nodes, 0.3, seed=7)) <= 1200


def test_curve_discretization():
    # 10 GPUs: 10000 milli. Events at 4.6% (rounds to 5), 5.5% (to 6, half to even), 7.0%, 9.9% (to 10).
    arrived = [460, 550, 700, 990]
    allocated = [460, 550, 650, 900]
    c = allocation_curve(arrived, allocated, 10)
    assert c.at(5) == 4.6 and c.at(6) == 5.5 and c.at(7) == 6.5 and c.at(10) == 9.0
    # 8%: no event rounds to it; the events within one percent (7.0 and 9.9 -> 7 and 10: only 7) stand in.
    assert c.at(8) == 6.5
    assert c.at(0) is None  # nothing within one percent of 0
