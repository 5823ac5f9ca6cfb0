"""Leader election on a coordination.k8s.io/v1 Lease (client-go tools/leaderelection).

Candidates race to hold the Lease named by leaderElection.resourceName in
resourceNamespace. The holder renews it every retryPeriod; if it cannot renew
for renewDeadline it has lost and must stop at once (kube-scheduler exits).
Others take over once the lease has not changed for leaseDuration — measured
on their own clock from when they last saw it change, never from the
timestamps written in it, so clock skew between replicas does not matter.
On a clean shutdown the holder releases the lease (holder cleared, duration
1 s) so that a standby takes over without waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import socket
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson

from kubesched.cluster.store import Conflict
from kubesched.live.errors import ApiError
from kubesched.live.events import micro_time
from kubesched.live.resources import BY_KIND
from kubesched.live.rest import RestClient

log = logging.getLogger("kubesched.live.leader")

JITTER_FACTOR = 1.2
# The healthz watchdog tolerates this much past an overdue renewal (kube-scheduler: 20 s).
MAX_TOLERABLE_EXPIRED_LEASE = 20.0


def default_identity() -> str:
    """kube-scheduler's identity: hostname_uuid."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


class LeaderElector:
    def __init__(
        self,
        rest: RestClient,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        on_started: Callable[[], None] = lambda: None,
        on_stopped: Callable[[], None] = lambda: None,
    ) -> None:
        self.rest = rest
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.on_started = on_started
        self.on_stopped = on_stopped
        self.path = BY_KIND["Lease"].object_path(name, namespace)
        self.lease: dict[str, Any] | None = None
        self.observed: dict[str, Any] = {}
        self.observed_raw = b""
        self.observed_time = 0.0
        self.leading = False
        self.reported_leader = ""
        self._task: asyncio.Task[None] | None = None

    # ------------------------------------------------------------ state

    def is_leader(self) -> bool:
        return self.observed.get("holderIdentity") == self.identity

    def _lease_valid(self, now: float) -> bool:
        return self.observed_time + float(self.observed.get("leaseDurationSeconds") or 0) > now

    def _set_observed(self, record: dict[str, Any]) -> None:
        self.observed = record
        self.observed_time = time.monotonic()

    def check(self, max_tolerable: float = MAX_TOLERABLE_EXPIRED_LEASE) -> str | None:
        """The healthz watchdog: an error when we lead but have not renewed for far too long."""
        if not self.is_leader():
            return None
        if time.monotonic() - self.observed_time > self.lease_duration + max_tolerable:
            return f"failed election to renew leadership on lease {self.name}"
        return None

    # ------------------------------------------------------------ the lock (LeaseLock)

    def _record(self, holder: str, now: datetime, duration: int) -> dict[str, Any]:
        return {
            "holderIdentity": holder,
            "leaseDurationSeconds": duration,
            "acquireTime": micro_time(now),
            "renewTime": micro_time(now),
            "leaseTransitions": 0,
        }

    async def _get(self) -> tuple[dict[str, Any], bytes]:
        lease = await self.rest.call("GET", self.path, kind="Lease", key=f"{self.namespace}/{self.name}")
        self.lease = lease
        spec = lease.get("spec") or {}
        record = {
            "holderIdentity": spec.get("holderIdentity") or "",
            "leaseDurationSeconds": int(spec.get("leaseDurationSeconds") or 0),
            "acquireTime": spec.get("acquireTime"),
            "renewTime": spec.get("renewTime"),
            "leaseTransitions": int(spec.get("leaseTransitions") or 0),
        }
        return record, orjson.dumps(record, option=orjson.OPT_SORT_KEYS)

    async def _create(self, record: dict[str, Any]) -> None:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": record,
        }
        self.lease = await self.rest.call(
            "POST", BY_KIND["Lease"].collection_path(self.namespace), body=body, kind="Lease"
        )

    async def _update(self, record: dict[str, Any]) -> None:
        if self.lease is None:
            raise ApiError(0, "", "lease not initialized, call get or create first")
        body = {**self.lease, "spec": {**(self.lease.get("spec") or {}), **record}}
        self.lease = await self.rest.call("PUT", self.path, body=body, kind="Lease")

    # ------------------------------------------------------------ election

    async def try_acquire_or_renew(self) -> bool:
        now = datetime.now(UTC)
        record = self._record(self.identity, now, int(self.lease_duration))
        if self.is_leader() and self._lease_valid(time.monotonic()):
            record["acquireTime"] = self.observed.get("acquireTime")
            record["leaseTransitions"] = self.observed.get("leaseTransitions", 0)
            try:
                await self._update(record)
                self._set_observed(record)
                return True
            except (ApiError, Conflict, KeyError) as err:
                log.error("Failed to update lock optimistically, falling back to slow path", extra={"err": str(err)})
        try:
            old, raw = await self._get()
        except KeyError:
            try:
                await self._create(record)
            except (ApiError, Conflict) as err:
                log.error("Error initially creating leader election record", extra={"err": str(err)})
                return False
            self._set_observed(record)
            return True
        except (ApiError, Conflict) as err:
            log.error(
                "Error retrieving resource lock", extra={"lease": f"{self.namespace}/{self.name}", "err": str(err)}
            )
            return False
        if raw != self.observed_raw:
            self._set_observed(old)
            self.observed_raw = raw
        if old["holderIdentity"] and self._lease_valid(time.monotonic()) and not self.is_leader():
            return False
        if self.is_leader():
            record["acquireTime"] = old["acquireTime"]
            record["leaseTransitions"] = old["leaseTransitions"]
        else:
            record["leaseTransitions"] = old["leaseTransitions"] + 1
        try:
            await self._update(record)
        except (ApiError, Conflict, KeyError) as err:
            log.error("Failed to update lock", extra={"err": str(err)})
            return False
        self._set_observed(record)
        return True

    def _report_transition(self) -> None:
        holder = self.observed.get("holderIdentity") or ""
        if holder != self.reported_leader:
            self.reported_leader = holder
            log.info("New leader elected", extra={"identity": holder, "lease": f"{self.namespace}/{self.name}"})

    async def acquire(self) -> None:
        desc = f"{self.namespace}/{self.name}"
        log.info("Attempting to acquire leader lease", extra={"lease": desc})
        while True:
            ok = await self.try_acquire_or_renew()
            self._report_transition()
            if ok:
                log.info("Successfully acquired lease", extra={"lease": desc})
                return
            await asyncio.sleep(self.retry_period * (1 + random.random() * JITTER_FACTOR))

    async def renew(self) -> None:
        """Renew until a renewal fails for renewDeadline; then we have lost."""
        while True:
            deadline = time.monotonic() + self.renew_deadline
            renewed = False
            while True:
                try:
                    renewed = await asyncio.wait_for(
                        self.try_acquire_or_renew(), timeout=max(deadline - time.monotonic(), 0.001)
                    )
                except TimeoutError:
                    renewed = False
                if renewed or time.monotonic() + self.retry_period >= deadline:
                    break
                await asyncio.sleep(self.retry_period)
            self._report_transition()
            if not renewed:
                return
            await asyncio.sleep(self.retry_period)

    async def run(self) -> None:
        """Acquire, lead, and report a lost lease (on_stopped); cancelled by `stop`."""
        self._task = asyncio.current_task()
        await self.acquire()
        self.leading = True
        self.on_started()
        try:
            await self.renew()
        finally:
            self.leading = False
        log.error("Leaderelection lost", extra={"lease": f"{self.namespace}/{self.name}"})
        self.on_stopped()

    async def stop(self) -> bool:
        """Stop electing, then release the lease if we hold it (ReleaseOnCancel): no renewal can race it."""
        t = self._task
        if t is not None and not t.done():
            t.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await t
        return await self.release()

    async def release(self) -> bool:
        """Give the lease up (ReleaseOnCancel): empty holder, 1 s duration."""
        if not self.is_leader():
            return True
        now = datetime.now(UTC)
        record = self._record("", now, 1)
        record["leaseTransitions"] = self.observed.get("leaseTransitions", 0)
        try:
            await self._update(record)
        except (ApiError, Conflict, KeyError) as err:
            log.error("Failed to release lock", extra={"err": str(err)})
            return False
        self._set_observed(record)
        self.leading = False
        return True
