"""resourcequota: enqueue refuses a job whose minResources would exceed its namespace's quotas.

For each ResourceQuota of the job's namespace, the minResources named in the quota's hard limits
plus what the quota already uses plus what this session admitted before in that namespace must
stay within those limits (names must match exactly: a quota on `requests.cpu` does not limit a
minResources `cpu`, as in Volcano).
"""

from __future__ import annotations

from typing import ClassVar

from scheduler.framework.plugin import Plugin
from scheduler.framework.session import PERMIT, REJECT, Session
from scheduler.model.job import JobInfo
from scheduler.model.resources import EPSILON, Resource, format_quantity


def _named(res: Resource) -> dict[str, float]:
    """minResources by resource name (pods included), dimensions it does not ask for left out."""
    out = {n: v for n, v in res.items() if v > 0}
    if res.pods > 0:
        out["pods"] = res.pods
    return out


def _show(amounts: dict[str, float]) -> str:
    return "{" + ", ".join(f"{n}: {format_quantity(n, v)}" for n, v in sorted(amounts.items())) + "}"


class ResourceQuotaPlugin(Plugin):
    name: ClassVar[str] = "resourcequota"

    def on_session_open(self, ssn: Session) -> None:
        by_namespace: dict[str, list] = {}
        for q in ssn.resource_quotas:
            by_namespace.setdefault(q.namespace, []).append(q)
        # namespace -> minResources admitted earlier in this session
        admitted: dict[str, dict[str, float]] = {}

        def enqueueable(job: JobInfo) -> int:
            if job.min_resources is None:
                return PERMIT
            quotas = by_namespace.get(job.namespace)
            if not quotas:
                return PERMIT
            asked = _named(job.min_resources)
            pending = admitted.get(job.namespace, {})
            for quota in quotas:
                requested = {n: v for n, v in asked.items() if n in quota.hard}
                over = [
                    n
                    for n, v in requested.items()
                    if quota.used.get(n, 0.0) + pending.get(n, 0.0) + v > quota.hard[n] + EPSILON
                ]
                if over:
                    ssn.decisions.job_events.append(
                        (
                            job.uid,
                            "Normal",
                            "Unschedulable",
                            f"resource quota insufficient (ResourceQuota {quota.key}), requested: "
                            f"{_show({n: requested[n] for n in over})}, used: "
                            f"{_show({n: quota.used.get(n, 0.0) for n in over})}, limited: "
                            f"{_show({n: quota.hard[n] for n in over})}",
                        )
                    )
                    return REJECT
            return PERMIT

        def enqueued(job: JobInfo) -> None:
            if job.min_resources is None or job.namespace not in by_namespace:
                return
            pending = admitted.setdefault(job.namespace, {})
            for n, v in _named(job.min_resources).items():
                pending[n] = pending.get(n, 0.0) + v

        ssn.add_job_enqueueable_fn(self.name, enqueueable)
        ssn.add_job_enqueued_fn(self.name, enqueued)
