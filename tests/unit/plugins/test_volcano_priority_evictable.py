"""priority's vote in gang-aware eviction, checked against Volcano's
TestUnifiedEvictableFn_GangReclaimPermitsAll: gangreclaim takes back a queue's share whatever
the victims' priority, gangpreempt only evicts jobs of lower priority than the starving one."""

from __future__ import annotations

import random

import yaml

from scheduler.framework.cycle import open_session
from scheduler.framework.session import GANG_PREEMPT, GANG_RECLAIM, EvictionContext, SessionOptions
from scheduler.model.cluster import ClusterState
from scheduler.model.job import JobInfo
from scheduler.registry import parse
from tests.builders import node, pod, podgroup, priority_class, queue


def test_gang_reclaim_permits_all_candidates_regardless_of_priority() -> None:
    state = ClusterState()
    state.apply_queue(queue("q1"))
    for name, value in (("low-priority", 100), ("high-priority", 1000)):
        state.apply_priority_class(priority_class(name, value))
    state.apply_node(node("node1", cpu="4", memory="4G", pods="10"))
    for ns, group, task, pc in (
        ("ns1", "pg-high", "high-task", "high-priority"),
        ("ns2", "pg-low", "low-task", "low-priority"),
    ):
        state.apply_podgroup(podgroup(group, ns=ns, queue="q1", phase="Running", priority_class=pc))
        state.apply_pod(
            pod(task, cpu="1", memory="1G", ns=ns, group=group, node_name="node1", phase="Running",
                labels={"volcano.sh/preemptable": "true"}, priority_class=pc)
        )  # fmt: skip
    conf = yaml.safe_dump(
        {"actions": "gangreclaim, gangpreempt", "tiers": [{"plugins": [{"name": "priority"}]}]}
    )
    ssn = open_session(state.snapshot(), parse(conf), SessionOptions(), random.Random(0))
    tasks = {t.name: t for j in ssn.jobs.values() for t in j.tasks.values()}
    candidates = [tasks["high-task"], tasks["low-task"]]
    reclaimer = JobInfo("reclaimer", "reclaimer", "ns3", queue="q1", priority=500)

    reclaimed = ssn.unified_evictable(EvictionContext(GANG_RECLAIM, reclaimer, ""), candidates)
    assert sorted(t.name for t in reclaimed) == ["high-task", "low-task"]
    preempted = ssn.unified_evictable(EvictionContext(GANG_PREEMPT, reclaimer, ""), candidates)
    assert [t.name for t in preempted] == ["low-task"]
