"""Leader election on a coordination.k8s.io/v1 Lease, with client-go's rules and Volcano's defaults.

Only the leader runs sessions; standbys keep their informers running so a takeover schedules at
once with a warm cache. Expiry is judged from *our* clock (when we last saw the record change),
never from the timestamps in the Lease, so clock skew between replicas cannot make two leaders.
Updates carry the Lease's resourceVersion: of two replicas racing for an expired lease, one gets
409 and stays a standby.

Unlike Volcano (which exits when it loses the lease, volcano-sh/volcano#3835), a replica that
loses the lease goes back to campaigning: its caches are warm, and a restart would only add a
relist of the whole cluster to the outage. On shutdown the leader releases the lease (empty
holder, 1 s duration) so a standby takes over within one retry period instead of a full lease.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog

from scheduler.kube.client import ApiError, KubeClient, resource_path

log = structlog.get_logger("vc-scheduler.leader")

LEASE_PREFIX = "/apis/coordination.k8s.io/v1"


@dataclass(slots=True)
class LeaderConfig:
    namespace: str = "volcano-system"
    name: str = "volcano"
    identity: str = ""
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


def default_identity() -> str:
    # client-go's convention: hostname plus a unique suffix, so two processes on one host differ
    return f"{os.environ.get('POD_NAME') or socket.gethostname()}_{uuid.uuid4()}"


def micro_time(t: dt.datetime | None = None) -> str:
    t = t or dt.datetime.now(dt.UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(
        self,
        client: KubeClient,
        config: LeaderConfig,
        on_started: Callable[[], None] | None = None,
        on_stopped: Callable[[], None] | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.client = client
        self.config = config
        if not config.identity:
            config.identity = default_identity()
        self.identity = config.identity
        self.on_started = on_started
        self.on_stopped = on_stopped
        self._clock = clock or (lambda: asyncio.get_running_loop().time())
        self.leading = asyncio.Event()
        self.observed_record: dict[str, Any] | None = None
        self.observed_time = 0.0
        self.last_renew = 0.0
        # one value per stretch of continuous tenure (the fence's terms follow it): a new one on
        # acquiring, and on a renew that came a renew deadline or more after the one before
        self.tenure = 0
        self.holder = ""
        self.transitions = 0
        self._path = resource_path(LEASE_PREFIX, "leases", config.namespace, config.name)
        self._collection = resource_path(LEASE_PREFIX, "leases", config.namespace)
        self._resource_version = ""

    @property
    def is_leader(self) -> bool:
        return self.leading.is_set()

    @property
    def renew_deadline(self) -> float:
        return self.config.renew_deadline

    def now(self) -> float:
        """The monotonic clock the lease is judged by (the fence reads the same one)."""
        return self._clock()

    def _record(self, lease: dict[str, Any]) -> dict[str, Any]:
        spec = lease.get("spec") or {}
        return {
            "holderIdentity": spec.get("holderIdentity") or "",
            "leaseDurationSeconds": spec.get("leaseDurationSeconds"),
            "acquireTime": spec.get("acquireTime"),
            "renewTime": spec.get("renewTime"),
            "leaseTransitions": spec.get("leaseTransitions") or 0,
        }

    async def try_acquire_or_renew(self) -> bool:
        now_s = self._clock()
        now = micro_time()
        duration = max(round(self.config.lease_duration), 1)
        try:
            lease = await self.client.request("GET", self._path, timeout=self.config.renew_deadline)
        except ApiError as exc:
            if exc.status != 404:
                raise
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.config.name, "namespace": self.config.namespace},
                "spec": {
                    "holderIdentity": self.identity,
                    "leaseDurationSeconds": duration,
                    "acquireTime": now,
                    "renewTime": now,
                    "leaseTransitions": 0,
                },
            }
            try:
                created = await self.client.request(
                    "POST", self._collection, body=body, timeout=self.config.renew_deadline, fenced=False
                )
            except ApiError as cexc:
                if cexc.status == 409:  # another replica created it first
                    return False
                raise
            self._observe(created, now_s)
            return True
        record = self._record(lease)
        if record != self.observed_record:
            self._observe(lease, now_s)
        holder = record["holderIdentity"]
        if holder and holder != self.identity:
            held_for = float(record.get("leaseDurationSeconds") or self.config.lease_duration)
            if self.observed_time + held_for > now_s:
                return False
        spec = dict(lease.get("spec") or {})
        if holder == self.identity:
            spec["renewTime"] = now
        else:
            spec.update(acquireTime=now, renewTime=now, leaseTransitions=int(record["leaseTransitions"]) + 1)
        spec.update(holderIdentity=self.identity, leaseDurationSeconds=duration)
        body = {**lease, "spec": spec}
        try:
            updated = await self.client.request(
                "PUT", self._path, body=body, timeout=self.config.renew_deadline, fenced=False
            )
        except ApiError as exc:
            if exc.status == 409:  # someone else updated it since our GET
                return False
            raise
        self._observe(updated, now_s)
        return True

    def _observe(self, lease: dict[str, Any], now_s: float) -> None:
        self.observed_record = self._record(lease)
        self.observed_time = now_s
        self.holder = self.observed_record["holderIdentity"]
        self.transitions = int(self.observed_record["leaseTransitions"] or 0)
        self._resource_version = str((lease.get("metadata") or {}).get("resourceVersion") or "")

    async def _attempt(self) -> bool:
        """One acquire-or-renew; on success `last_renew` is when it was *sent*: the other replicas
        saw the record change no earlier, so our tenure never outlasts what they grant."""
        sent = self._clock()
        try:
            ok = await self.try_acquire_or_renew()
        except (ApiError, TimeoutError) as exc:
            log.warning(
                "lease update failed", lease=f"{self.config.namespace}/{self.config.name}", error=str(exc)
            )
            return False
        if ok:
            if not self.leading.is_set() or sent - self.last_renew >= self.config.renew_deadline:
                self.tenure += 1
            self.last_renew = sent
        return ok

    async def run(self) -> None:
        """Campaign, lead, and on loss campaign again — until cancelled."""
        while True:
            await self._campaign()
            await self._lead()

    async def _campaign(self) -> None:
        last_holder = None
        while True:
            if await self._attempt():
                self.leading.set()
                log.info(
                    "became leader",
                    lease=f"{self.config.namespace}/{self.config.name}",
                    identity=self.identity,
                )
                if self.on_started:
                    self.on_started()
                return
            if self.holder != last_holder:
                last_holder = self.holder
                log.info("standing by", leader=self.holder or "<none>", identity=self.identity)
            await asyncio.sleep(self.config.retry_period)

    async def _lead(self) -> None:
        while True:
            await asyncio.sleep(self.config.retry_period)
            if await self._attempt():
                continue
            if (
                self.holder and self.holder != self.identity
            ) or self._clock() - self.last_renew >= self.config.renew_deadline:
                break
        self.leading.clear()
        log.warning(
            "lost leadership, campaigning again", identity=self.identity, leader=self.holder or "<none>"
        )
        if self.on_stopped:
            self.on_stopped()

    async def release(self) -> None:
        """Give the lease up on shutdown (only if we hold it)."""
        if not self.leading.is_set():
            return
        self.leading.clear()
        try:
            lease = await self.client.request("GET", self._path, timeout=2.0)
            spec = dict(lease.get("spec") or {})
            if spec.get("holderIdentity") != self.identity:
                return
            now = micro_time()
            spec.update(holderIdentity="", leaseDurationSeconds=1, renewTime=now, acquireTime=now)
            await self.client.request(
                "PUT", self._path, body={**lease, "spec": spec}, timeout=2.0, fenced=False
            )
            log.info("released the lease", lease=f"{self.config.namespace}/{self.config.name}")
        except (ApiError, TimeoutError) as exc:
            log.warning("could not release the lease", error=str(exc))

    def healthy(self, tolerance: float = 20.0) -> bool:
        """client-go's HealthzAdaptor: a leader that has not renewed for renew deadline + tolerance is stuck."""
        if not self.leading.is_set():
            return True
        return self._clock() - self.last_renew <= self.config.renew_deadline + tolerance
