"""A pod's effective requests, as resourcehelper.PodRequests computes them (component-helpers/resource)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api.resources import (
    is_extended_resource_name,
    is_scalar_resource_name,
    pod_requests,
    to_amounts,
)
from kubesched.framework.types import PodInfo
from kubesched.testing import make_pod

Mi, Gi = 2**20, 2**30
_NAMES = {"ephemeral_storage": "ephemeral-storage", "gpu": "nvidia.com/gpu"}


def _c(name: str, restart: str | None = None, **requests: str) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": "img"}
    if requests:
        c["resources"] = {"requests": {_NAMES.get(k, k): v for k, v in requests.items()}}
    if restart:
        c["restartPolicy"] = restart
    return c


def _pod(containers: list[dict[str, Any]], init: list[dict[str, Any]] | None = None, **spec: Any):
    s: dict[str, Any] = {"containers": containers}
    if init:
        s["initContainers"] = init
    s.update(spec)
    return make_pod("p", spec=s)


def _amounts(pod, non_missing: bool = False) -> dict[str, int]:
    return to_amounts(pod_requests(pod, non_missing=non_missing))


@pytest.mark.parametrize(
    ("pod", "want"),
    [
        # containers are summed
        (_pod([_c("a", cpu="100m", memory="1Gi"), _c("b", cpu="200m")]), {"cpu": 300, "memory": Gi}),
        # fit.go's computePodResourceRequest example: init containers take the max
        (
            _pod(
                [_c("c1", cpu="2", memory="1G"), _c("c2", cpu="1", memory="1G")],
                [_c("i1", cpu="2", memory="1G"), _c("i2", cpu="2", memory="3G")],
            ),
            {"cpu": 3000, "memory": 3 * 10**9},
        ),
        # a restartable init container runs beside the app containers
        (_pod([_c("c", cpu="1")], [_c("s", "Always", cpu="1")]), {"cpu": 2000}),
        # ... and beside every init container after it: max(1+1, 1+2) = 3
        (_pod([_c("c", cpu="1")], [_c("s", "Always", cpu="1"), _c("i", cpu="2")]), {"cpu": 3000}),
        # a regular init container before the sidecar does not see it: max(5, 1+1) = 5
        (_pod([_c("c", cpu="1")], [_c("i", cpu="5"), _c("s", "Always", cpu="1")]), {"cpu": 5000}),
        # several sidecars: containers 1 + 3 + 2 = 6; init after them 1+3+2+... -> max(6, 3+2+4=9) = 9
        (
            _pod(
                [_c("c", cpu="1")],
                [_c("s1", "Always", cpu="3"), _c("s2", "Always", cpu="2"), _c("i", cpu="4")],
            ),
            {"cpu": 9000},
        ),
        # upstream helpers_test: init 10, sidecars 1 and 2 after it, regular init 5 after them, app 1
        # regular containers + sidecars = 1+1+2 = 4; inits: 10, 1, 1+2, 5+1+2=8 -> 10
        (
            _pod(
                [_c("c", cpu="1")],
                [_c("i1", cpu="10"), _c("s1", "Always", cpu="1"), _c("s2", "Always", cpu="2"), _c("i2", cpu="5")],
            ),
            {"cpu": 10000},
        ),
        # restartPolicy other than Always is a regular init container
        (_pod([_c("c", cpu="1")], [_c("i", "OnFailure", cpu="3")]), {"cpu": 3000}),
        # extended resources follow the same rules
        (
            _pod([_c("a", gpu="1"), _c("b", gpu="2")], [_c("i", gpu="4")]),
            {"nvidia.com/gpu": 4},
        ),
        # overhead is added on top
        (
            _pod([_c("c", cpu="1", memory="1Gi")], overhead={"cpu": "250m", "memory": "64Mi"}),
            {"cpu": 1250, "memory": Gi + 64 * Mi},
        ),
        # pod-level requests replace the containers' cpu/memory, then overhead is added
        (
            _pod(
                [_c("c", cpu="100m", memory="100Mi", ephemeral_storage="1Gi")],
                resources={"requests": {"cpu": "2", "memory": "1Gi"}},
                overhead={"cpu": "100m"},
            ),
            {"cpu": 2100, "memory": Gi, "ephemeral-storage": Gi},
        ),
        # pod-level requests set from pod-level limits by defaulting, when no container requests them
        (_pod([_c("c", memory="1Gi")], resources={"limits": {"cpu": "3"}}), {"cpu": 3000, "memory": 2**30}),
        # no containers requests at all
        (_pod([_c("c")]), {}),
        (_pod([]), {}),
    ],
)
def test_pod_requests(pod, want: dict[str, int]) -> None:
    assert _amounts(pod) == want


@pytest.mark.parametrize(
    ("pod", "want"),
    [
        # missing cpu/memory count as 100m / 200Mi, per container
        (_pod([_c("a"), _c("b")]), {"cpu": 200, "memory": 400 * Mi}),
        (_pod([_c("a", cpu="1"), _c("b", memory="1Gi")]), {"cpu": 1100, "memory": Gi + 200 * Mi}),
        # an explicit zero is a request: not defaulted
        (_pod([_c("a", cpu="0", memory="0")]), {"cpu": 0, "memory": 0}),
        # init containers are defaulted too
        (_pod([_c("a", cpu="50m", memory="10Mi")], [_c("i")]), {"cpu": 100, "memory": 200 * Mi}),
        # other resources are never defaulted
        (_pod([_c("a", gpu="1")]), {"cpu": 100, "memory": 200 * Mi, "nvidia.com/gpu": 1}),
        # pod-level cpu set: only memory (missing at both levels) is defaulted
        (
            _pod([_c("a")], resources={"requests": {"cpu": "1"}}),
            {"cpu": 1000, "memory": 200 * Mi},
        ),
        # pod-level cpu set, a container has memory: nothing is defaulted
        (
            _pod([_c("a", memory="100Mi"), _c("b")], resources={"requests": {"cpu": "1"}}),
            {"cpu": 1000, "memory": 100 * Mi},
        ),
    ],
)
def test_non_missing_requests(pod, want: dict[str, int]) -> None:
    assert _amounts(pod, non_missing=True) == want


def test_pod_info_non_zero_requests() -> None:
    pi = PodInfo(_pod([_c("a"), _c("b", cpu="1", memory="1Gi")]))
    assert (pi.non0_cpu, pi.non0_mem) == (1100, Gi + 200 * Mi)
    assert (pi.requests.milli_cpu, pi.requests.memory) == (1000, Gi)
    empty = PodInfo(_pod([]))
    assert (empty.non0_cpu, empty.non0_mem) == (0, 0)


def test_non_missing_with_pod_level_requests_counts_overhead() -> None:
    pod = _pod([_c("a")], resources={"requests": {"memory": "1Gi"}}, overhead={"cpu": "100m"})
    pi = PodInfo(pod)
    assert (pi.non0_cpu, pi.non0_mem) == (100, Gi)


def test_pod_level_request_defaults_to_aggregated_container_requests() -> None:
    pod = _pod([_c("a", cpu="100m"), _c("b", cpu="50m")], resources={"limits": {"cpu": "3", "memory": "1Gi"}})
    assert _amounts(pod) == {"cpu": 150, "memory": 2**30}


def _limits(name: str, **limits: str) -> dict[str, Any]:
    return {"name": name, "image": "img", "resources": {"limits": {_NAMES.get(k, k): v for k, v in limits.items()}}}


@pytest.mark.parametrize(
    ("pod", "want"),
    [
        # defaultPodRequests copies only pod-level resources from the limits (not ephemeral-storage)
        (
            _pod([_c("a")], resources={"limits": {"cpu": "2", "ephemeral-storage": "1Gi"}}),
            {"cpu": 2000},
        ),
        # a sidecar adds to the regular containers; a regular init container is a floor
        (
            _pod(
                [_c("a", cpu="100m")],
                [_c("s", "Always", cpu="50m"), _c("i", cpu="1")],
                resources={"limits": {"cpu": "3"}},
            ),
            {"cpu": 1050},
        ),
        # hugepages are not overcommittable: the pod-level limit, itself defaulted from the containers' limits
        (
            _pod([_limits("a", memory="1Gi", **{"hugepages-2Mi": "4Mi"})], resources={"limits": {"memory": "2Gi"}}),
            {"memory": Gi, "hugepages-2Mi": 4 * Mi},
        ),
    ],
)
def test_pod_level_defaulting(pod, want: dict[str, int]) -> None:
    assert _amounts(pod) == want


def test_pod_level_hugepages_requests_win() -> None:
    # IsSupportedPodLevelResource takes hugepages-* since v1.33: pod-level requests replace the containers' sum.
    pod = _pod(
        [_c("a", cpu="1", **{"hugepages-2Mi": "2Mi"}), _c("b", **{"hugepages-2Mi": "2Mi"})],
        resources={"requests": {"hugepages-2Mi": "8Mi"}},
    )
    assert _amounts(pod) == {"cpu": 1000, "hugepages-2Mi": 8 * Mi}


@pytest.mark.parametrize(
    ("name", "extended", "scalar"),
    [
        ("nvidia.com/gpu", True, True),
        ("example.com/foo", True, True),
        ("cpu", False, False),
        ("memory", False, False),
        ("pods", False, False),
        ("ephemeral-storage", False, False),
        ("hugepages-2Mi", False, True),
        ("kubernetes.io/something", False, True),
        ("attachable-volumes-aws-ebs", False, True),
        ("requests.example.com/foo", False, False),
    ],
)
def test_resource_name_classes(name: str, extended: bool, scalar: bool) -> None:
    assert is_extended_resource_name(name) is extended
    assert is_scalar_resource_name(name) is scalar
