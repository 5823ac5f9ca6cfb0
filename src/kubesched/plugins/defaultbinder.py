"""DefaultBinder (framework/plugins/defaultbinder): binds through the API (pods/binding)."""

from __future__ import annotations

from typing import Any

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import BindPlugin
from kubesched.framework.status import Status
from kubesched.framework.types import PodInfo
from kubesched.plugins import names


class DefaultBinder(BindPlugin):
    name = names.DEFAULT_BINDER
    binds_through_client = True

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    @classmethod
    def new(cls, args: Any, handle: Any) -> DefaultBinder:
        return cls(handle)

    def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        try:
            self.handle.client.bind(pod.namespace, pod.name, pod.uid, node_name)
        except Exception as err:  # noqa: BLE001 - the API's error becomes the status
            return Status.as_error(err)
        return None
