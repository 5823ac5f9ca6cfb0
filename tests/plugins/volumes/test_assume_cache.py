"""The PV/PVC assume cache forgets assumptions of claims that went away (a scheduler sees millions)."""

from __future__ import annotations

import msgspec
from tests.plugins.volumes.vol_helpers import pvc

from kubesched.framework.handle import Lister
from kubesched.plugins.volumebinding.assume_cache import AssumeCache


def _at(obj: object, rv: str) -> object:
    meta = msgspec.structs.replace(obj.metadata, resource_version=rv)  # type: ignore[attr-defined]
    return msgspec.structs.replace(obj, metadata=meta)  # type: ignore[type-var]


def test_assumptions_of_deleted_claims_do_not_pile_up_and_live_ones_stay() -> None:
    api: dict[str, object] = {}
    cache = AssumeCache(
        lambda: Lister(api.get, api.values), "v1.PersistentVolumeClaim", lambda c: f"default/{c.metadata.name}"
    )
    _, keep = pvc("keep")
    api["default/keep"] = _at(keep, "1")
    cache.assume(_at(keep, "2"))  # our write, not seen by the informer yet
    n = 5000
    for i in range(n):
        _, claim = pvc(f"eph-{i}")
        api[f"default/eph-{i}"] = _at(claim, "1")
        cache.assume(_at(claim, "2"))
        del api[f"default/eph-{i}"]  # the pod and its ephemeral claim are deleted
    still = sum(cache.is_assumed(f"default/eph-{i}") for i in range(n))
    assert still < 600, still
    assert cache.is_assumed("default/keep")
    assert cache.get("default/keep").metadata.resource_version == "2"
