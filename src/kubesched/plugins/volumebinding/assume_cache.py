"""The assume cache (component-helpers/storage/volume/assumecache) for PVs and PVCs.

Reserve records the binding decision of a pod (a PV pre-bound to its claim, a
claim annotated for provisioning) before any API call is made, so that the
next pods' scheduling cycles already see those volumes as taken. An assumed
object stays visible until the API object moves past the resourceVersion it
was assumed at (the write arrived) or it is restored (Unreserve).

The informer's copy is read from the lister on every access, so there are no
event handlers to keep in sync. Without upstream's delete handler, an assumed
claim whose object goes away (a pod's ephemeral volume, deleted with it) would
stay until someone asked for its key again: `assume` sweeps the assumptions
that are over whenever their number has doubled, so a scheduler that sees
claims come and go for months keeps only the live ones.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesched.gocompat.strconv import go_quote


class ObjectNotFoundError(LookupError):
    """assumecache.ObjectNotFoundError."""

    def __init__(self, type_name: str, key: str) -> None:
        super().__init__(f"could not find {type_name} {go_quote(key)}")

    def __str__(self) -> str:
        return str(self.args[0])


# Assumptions held before the first sweep (see AssumeCache._sweep).
_SWEEP_MIN = 256


def _version(obj: Any) -> int:
    rv = obj.metadata.resource_version
    try:
        return int(rv) if rv else 0
    except ValueError:
        return 0


class AssumeCache:
    """Objects of one kind as the API has them, overlaid with assumed newer copies."""

    def __init__(
        self,
        lister: Callable[[], Any],
        type_name: str,
        key_of: Callable[[Any], str],
        index_of: Callable[[Any], str] | None = None,
    ) -> None:
        self._lister = lister
        self._type_name = type_name
        self._key_of = key_of
        self._index_of = index_of
        self._assumed: dict[str, Any] = {}
        self._sweep_at = _SWEEP_MIN

    def _latest(self, key: str, api: Any) -> Any:
        assumed = self._assumed.get(key)
        if assumed is None:
            return api
        if api is None or _version(api) > _version(assumed):
            # The API object moved on (or went away): the assumption is over.
            del self._assumed[key]
            return api
        return assumed

    def get(self, key: str) -> Any:
        """The latest object: assumed if still newer than the API's, else the API's."""
        obj = self._latest(key, self._lister().get(key))
        if obj is None:
            raise ObjectNotFoundError(self._type_name, key)
        return obj

    def get_api_obj(self, key: str) -> Any:
        api = self._lister().get(key)
        if api is None:
            raise ObjectNotFoundError(self._type_name, key)
        return api

    def list(self, index_value: str | None = None) -> list[Any]:
        """Latest objects (by key order), optionally those whose index value is `index_value`."""
        lister = self._lister()
        out = []
        for api in lister.list():
            obj = self._latest(self._key_of(api), api)
            if index_value is not None and self._index_of is not None and self._index_of(obj) != index_value:
                continue
            out.append(obj)
        out.sort(key=self._key_of)
        return out

    def assume(self, obj: Any) -> None:
        """Make `obj` the latest version; refused if it is older than what the cache holds."""
        key = self._key_of(obj)
        stored = self.get(key)
        new_v, stored_v = _version(obj), _version(stored)
        if new_v < stored_v:
            raise ValueError(f"{self._type_name} {go_quote(key)} is out of sync (stored: {stored_v}, assume: {new_v})")
        self._assumed[key] = obj
        if len(self._assumed) >= self._sweep_at:
            self._sweep()

    def _sweep(self) -> None:
        """Forget every assumption that is over (the API object moved past it, or is gone)."""
        lister = self._lister()
        for key in list(self._assumed):
            self._latest(key, lister.get(key))
        self._sweep_at = max(_SWEEP_MIN, 2 * len(self._assumed))

    def restore(self, key: str) -> None:
        """Drop the assumed version: the API object is the latest again."""
        self._assumed.pop(key, None)

    def is_assumed(self, key: str) -> bool:
        return key in self._assumed
