"""The manifests trace rows copy: Pods by name or namespace/name, Jobs and CronJobs by job/name or
cronjob/name; every lookup that fails says what the cluster file does hold."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubesched.api.core import Pod
from kubesched.replay.runs import CronTemplate, JobTemplate
from kubesched.scenario import Manifest


class Templates:
    """Pod manifests that trace lines copy, found by `name` or `namespace/name`; Jobs and CronJobs, found
    by `job/name` or `cronjob/name` (or `namespace/job/name` ...)."""

    def __init__(
        self,
        manifests: Sequence[Manifest],
        sources: Sequence[str],
        jobs: Sequence[JobTemplate] = (),
        crons: Sequence[CronTemplate] = (),
    ) -> None:
        self.jobs = {j.key: j for j in jobs}
        self.crons = {c.key: c for c in crons}
        self.by_key: dict[str, Pod] = {}
        self.by_name: dict[str, list[Pod]] = {}
        self.sources = list(sources)
        for m in manifests:
            pod: Pod = m.obj
            ns = pod.metadata.namespace or "default"
            key = f"{ns}/{pod.metadata.name}"
            self.by_key[key] = pod
            self.by_name.setdefault(pod.metadata.name, []).append(pod)

    def find_job(self, ref: str) -> JobTemplate | None:
        """The Job `ref` names ("job/name" or "namespace/job/name"); None when it names no Job."""
        return self._find_owner(ref, "job", self.jobs)

    def find_cron(self, ref: str) -> CronTemplate | None:
        """The CronJob `ref` names ("cronjob/name" or "namespace/cronjob/name"); None when it names none."""
        return self._find_owner(ref, "cronjob", self.crons)

    @staticmethod
    def _find_owner(ref: str, kind: str, known: Mapping[str, Any]) -> Any:
        parts = ref.split("/")
        if len(parts) not in (2, 3) or parts[-2] != kind:
            return None
        name = parts[-1]
        found = [
            v
            for k, v in known.items()
            if k.split("/", 1)[1] == name and (len(parts) == 2 or k.startswith(f"{parts[0]}/"))
        ]
        what = "Job" if kind == "job" else "CronJob"
        if not found:
            names = sorted(f"{kind}/{k.split('/', 1)[1]}" for k in known)
            hint = f" ({what}s: {', '.join(names[:8])})" if names else " (it has none)"
            raise ValueError(f"no {what} {name!r} in the cluster file that makes pods{hint}")
        if len(found) > 1:
            raise ValueError(f"{what} {name!r} is in several namespaces: write namespace/{kind}/{name}")
        return found[0]

    def find(self, ref: str) -> Pod:
        """The template named `ref`; raises ValueError with a message fit for the user."""
        if "/" in ref:
            pod = self.by_key.get(ref)
            if pod is not None:
                return pod
        else:
            pods = self.by_name.get(ref, [])
            if len(pods) == 1:
                return pods[0]
            if len(pods) > 1:
                keys = ", ".join(sorted(f"{p.metadata.namespace or 'default'}/{p.metadata.name}" for p in pods))
                raise ValueError(f"template {ref!r} is ambiguous ({keys}): write namespace/name")
        where = " and ".join(self.sources) if self.sources else "the cluster file"
        known = sorted(self.by_key)
        hint = f" (templates: {', '.join(known[:8])}{', ...' if len(known) > 8 else ''})" if known else ""
        raise ValueError(f"no template {ref!r}: a Pod without spec.nodeName in {where}{hint}")
