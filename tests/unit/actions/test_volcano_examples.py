"""The worked examples of Volcano's own unit tests (spec section 10), through a full session."""

from __future__ import annotations

from tests.builders import node, pod, podgroup, priority_class, queue, run, tiers

ALLOCATE = tiers("allocate", ["gang"], ["drf", "proportion", "predicates", "nodeorder"])
PREEMPT = tiers("preempt", ["conformance", "gang", "priority", "proportion"])
RECLAIM = tiers("reclaim", ["conformance", "gang", "proportion", "priority"])


def test_a_node_selector_filters_one_role_of_a_job() -> None:
    out = run(
        ALLOCATE,
        [
            queue("c1"),
            node("n1", cpu="2", memory="4Gi", labels={"nodeRole": "worker"}),
            podgroup("pg1", 1, queue="c1"),
            pod("p1", role="master", group="pg1", selector={"nodeRole": "master"}),
            pod("p2", role="worker", group="pg1", selector={"nodeRole": "worker"}),
        ],
    )
    assert out.bindings == {"c1/p2": "n1"}


def test_allocation_continues_past_a_failed_role_until_the_gang_is_met() -> None:
    out = run(
        ALLOCATE,
        [
            queue("c1"),
            node("n1", cpu="1", labels={"role": "master"}),
            node("n2", cpu="1", labels={"role": "worker"}),
            podgroup("pg1", 2, queue="c1", min_task_member={"master": 1, "worker": 1}),
            pod("p0", role="master", group="pg1", selector={"role": "master"}),
            pod("p1", role="master", group="pg1", selector={"role": "master"}),
            pod("p2", role="worker", group="pg1", selector={"role": "worker"}),
            pod("p3", role="worker", group="pg1", selector={"role": "worker"}),
        ],
    )
    assert out.bindings == {"c1/p0": "n1", "c1/p2": "n2"}


def test_allocation_stops_when_a_required_role_cannot_be_met() -> None:
    out = run(
        ALLOCATE,
        [
            queue("c1"),
            node("n1", cpu="1", labels={"role": "master"}),
            node("n2", cpu="2", labels={"role": "worker"}),
            podgroup("pg1", 2, queue="c1", min_task_member={"master": 2, "worker": 0}),
            pod("p0", role="master", group="pg1", selector={"role": "master"}),
            pod("p1", role="master", group="pg1", selector={"role": "master"}),
            pod("p2", role="worker", group="pg1", selector={"role": "worker"}),
            pod("p3", role="worker", group="pg1", selector={"role": "worker"}),
        ],
    )
    assert out.bindings == {}


def test_two_pods_of_one_job_share_a_node() -> None:
    out = run(
        ALLOCATE,
        [
            queue("c1"),
            node("n1", cpu="2"),
            podgroup("pg1", 0, queue="c1"),
            pod("p1", group="pg1"),
            pod("p2", group="pg1"),
        ],
    )
    assert out.bindings == {"c1/p1": "n1", "c1/p2": "n1"}


def test_queues_share_a_node_fairly() -> None:
    out = run(
        ALLOCATE,
        [
            queue("c1"),
            queue("c2"),
            node("n1", cpu="2", memory="4G"),
            podgroup("pg1", 0, queue="c1"),
            podgroup("pg2", 0, queue="c2"),
            pod("pg1-p-1", group="pg1", memory="1G"),
            pod("pg1-p-2", group="pg1", memory="1G"),
            pod("pg2-p-1", group="pg2", memory="1G"),
            pod("pg2-p-2", group="pg2", memory="1G"),
        ],
    )
    assert len(out.bindings) == 2
    assert {k.split("-p-")[0] for k in out.bindings} == {"c1/pg1", "c1/pg2"}


def test_a_job_that_does_not_fit_does_not_block_others() -> None:
    out = run(
        ALLOCATE,
        [
            queue("c1"),
            queue("c2"),
            node("n1", cpu="2"),
            podgroup("pg1", 1, queue="c1"),
            podgroup("pg2", 1, queue="c2"),
            pod("p1", cpu="3", group="pg1"),
            pod("p2", cpu="1", group="pg2"),
        ],
    )
    assert out.bindings == {"c1/p2": "n1"}
    # its queue's deserved share (half of 2 CPUs) can never hold 3 CPUs
    assert "queue c1 resource quota insufficient" in out.pending["c1/p1"]


def test_preempt_one_task_of_a_lower_priority_job() -> None:
    out = run(
        PREEMPT,
        [
            priority_class("low", 10),
            priority_class("high", 100),
            queue("q1"),
            node("n1", cpu="2", memory="2G"),
            podgroup("pg1", 1, queue="q1", priority_class="low", phase="Running"),
            podgroup("pg2", 1, queue="q1", priority_class="high"),
            pod(
                "preemptee1",
                group="pg1",
                node_name="n1",
                phase="Running",
                memory="1G",
                annotations={"volcano.sh/preemptable": "true"},
            ),
            pod(
                "preemptee2",
                group="pg1",
                node_name="n1",
                phase="Running",
                memory="1G",
                annotations={"volcano.sh/preemptable": "false"},
            ),
            pod("preemptor1", group="pg2", memory="1G"),
            pod("preemptor2", group="pg2", memory="1G"),
        ],
    )
    assert out.evictions == ["c1/preemptee1"]
    assert out.bindings == {}
    assert list(out.pipelined) == ["c1/preemptor1"]


def test_several_victims_are_evicted_for_one_large_task() -> None:
    out = run(
        PREEMPT,
        [
            priority_class("low", 10),
            priority_class("high", 100),
            queue("q1"),
            node("n1", cpu="6", memory="6G"),
            podgroup("pg1", 1, queue="q1", priority_class="low", phase="Running"),
            podgroup("pg2", 1, queue="q1", priority_class="high"),
            pod("preemptee1", group="pg1", node_name="n1", phase="Running", memory="1G"),
            pod("preemptee2", group="pg1", node_name="n1", phase="Running", memory="1G"),
            pod(
                "preemptee3",
                group="pg1",
                node_name="n1",
                phase="Running",
                memory="1G",
                annotations={"volcano.sh/preemptable": "false"},
            ),
            pod("preemptor1", group="pg2", cpu="5", memory="1G"),
        ],
    )
    assert sorted(out.evictions) == ["c1/preemptee1", "c1/preemptee2"]


def test_no_preemption_when_idle_resources_suffice() -> None:
    out = run(
        PREEMPT,
        [
            queue("q1"),
            node("n1", cpu="10", memory="10G"),
            podgroup("pg1", 3, queue="q1", phase="Running"),
            pod("p1", group="pg1", node_name="n1", phase="Running", memory="1G"),
            pod("p2", group="pg1", node_name="n1", phase="Running", memory="1G"),
            pod("p3", group="pg1", memory="1G"),
        ],
    )
    assert out.evictions == []


def test_no_preemption_for_a_job_that_is_not_starving() -> None:
    out = run(
        PREEMPT,
        [
            priority_class("low", 10),
            priority_class("high", 100),
            queue("q1"),
            node("n1", cpu="3", memory="3G"),
            podgroup("pg1", 1, queue="q1", priority_class="low", phase="Running"),
            podgroup("pg2", 1, queue="q1", priority_class="high", phase="Running"),
            pod("a1", group="pg1", node_name="n1", phase="Running", memory="1G"),
            pod("a2", group="pg1", node_name="n1", phase="Running", memory="1G"),
            pod("b1", group="pg2", node_name="n1", phase="Running", memory="1G"),
            pod("b2", group="pg2", memory="1G"),
        ],
    )
    assert out.evictions == []


def test_reclaim_from_an_overusing_queue() -> None:
    out = run(
        RECLAIM,
        [
            priority_class("low", 10),
            priority_class("high", 100),
            queue("q1"),
            queue("q2"),
            node("n1", cpu="3", memory="3Gi"),
            podgroup("pg1", 1, queue="q1", priority_class="low", phase="Running"),
            podgroup("pg2", 1, queue="q2", priority_class="high"),
            pod(
                "preemptee1",
                group="pg1",
                node_name="n1",
                phase="Running",
                annotations={"volcano.sh/preemptable": "false"},
            ),
            pod(
                "preemptee2",
                group="pg1",
                node_name="n1",
                phase="Running",
                annotations={"volcano.sh/preemptable": "true"},
            ),
            pod(
                "preemptee3",
                group="pg1",
                node_name="n1",
                phase="Running",
                annotations={"volcano.sh/preemptable": "false"},
            ),
            pod("preemptor1", group="pg2"),
        ],
    )
    assert out.evictions == ["c1/preemptee2"]


def test_reclaim_takes_from_the_lowest_priority_job_first() -> None:
    out = run(
        RECLAIM,
        [
            priority_class("low", 10),
            priority_class("mid", 50),
            priority_class("high", 100),
            queue("q1"),
            queue("q2"),
            queue("q3"),
            node("n1", cpu="4", memory="4Gi"),
            podgroup("pg1", 1, queue="q1", priority_class="mid", phase="Running"),
            podgroup("pg2", 1, queue="q2", priority_class="low", phase="Running"),
            podgroup("pg3", 1, queue="q3", priority_class="high"),
            pod("preemptee1-1", group="pg1", node_name="n1", phase="Running"),
            pod("preemptee1-2", group="pg1", node_name="n1", phase="Running"),
            pod("preemptee2-1", group="pg2", node_name="n1", phase="Running"),
            pod(
                "preemptee2-2",
                group="pg2",
                node_name="n1",
                phase="Running",
                annotations={"volcano.sh/preemptable": "false"},
            ),
            pod("preemptor1", group="pg3"),
        ],
    )
    assert out.evictions == ["c1/preemptee2-1"]
