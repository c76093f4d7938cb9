from __future__ import annotations

import pytest

from scheduler.model.cluster import ClusterState
from scheduler.model.convert import ConvertError, pod_to_task, podgroup_to_job
from scheduler.model.objects import TaskStatus
from scheduler.model.vcjob import expand_job
from tests.builders import node, pod


def test_pod_request_is_the_larger_of_containers_and_each_init_container_plus_overhead() -> None:
    p = pod("p", cpu="1", memory="1Gi")
    p["spec"]["containers"].append(
        {"name": "side", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}
    )
    p["spec"]["initContainers"] = [
        {"name": "init", "resources": {"requests": {"cpu": "2", "memory": "100Mi"}}}
    ]
    p["spec"]["overhead"] = {"cpu": "100m"}
    t = pod_to_task(p)
    assert t.resreq.milli_cpu == 1600 and t.resreq.memory == 2 * 2**30
    assert t.init_resreq.milli_cpu == 2100 and t.init_resreq.memory == 2 * 2**30


def test_requests_default_to_limits_as_the_api_server_does() -> None:
    p = pod("p", cpu="", memory="", limits={"cpu": "2", "volcano.sh/gpu-memory": "1024"})
    t = pod_to_task(p)
    assert t.resreq.milli_cpu == 2000
    assert t.resreq.scalars["volcano.sh/gpu-memory"] == 1024 * 1000


@pytest.mark.parametrize(
    ("phase", "node_name", "deleting", "status"),
    [
        ("Pending", "", False, TaskStatus.PENDING),
        ("Pending", "n1", False, TaskStatus.BOUND),
        ("Pending", "n1", True, TaskStatus.RELEASING),
        ("Running", "n1", False, TaskStatus.RUNNING),
        ("Running", "n1", True, TaskStatus.RELEASING),
        ("Succeeded", "n1", False, TaskStatus.SUCCEEDED),
        ("Failed", "n1", False, TaskStatus.FAILED),
        ("Unknown", "n1", False, TaskStatus.UNKNOWN),
    ],
)
def test_pod_phase_maps_to_task_status(
    phase: str, node_name: str, deleting: bool, status: TaskStatus
) -> None:
    p = pod("p", node_name=node_name, phase=phase)
    if deleting:
        p["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert pod_to_task(p).status == status


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda p: p["spec"]["containers"][0]["resources"]["requests"].update(cpu="lots"),
            "spec.containers[0].resources.requests.cpu",
        ),
        (
            lambda p: p["spec"]["containers"][0]["resources"]["requests"].update(cpu="-1"),
            "greater than or equal to 0",
        ),
        (lambda p: p["spec"].update(containers=[]), "at least one container"),
        (lambda p: p["spec"].update(priority="high"), "spec.priority"),
    ],
)
def test_a_malformed_pod_is_refused_naming_the_pod_and_field(mutate, message: str) -> None:
    p = pod("broken")
    mutate(p)
    with pytest.raises(ConvertError, match="Pod c1/broken") as exc:
        pod_to_task(p)
    assert message in str(exc.value)


def test_a_podgroup_with_a_negative_min_member_is_refused() -> None:
    with pytest.raises(ConvertError, match="minMember"):
        podgroup_to_job(
            {"kind": "PodGroup", "metadata": {"name": "pg", "namespace": "x"}, "spec": {"minMember": -1}}
        )


def test_a_bare_pod_of_ours_gets_a_one_pod_gang_and_other_schedulers_pods_still_use_their_node() -> None:
    state = ClusterState()
    state.apply_node(node("n1", cpu="4"))
    state.apply_queue({"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}})
    state.apply_pod(pod("bare", cpu="1"))
    other = pod("foreign", cpu="2", node_name="n1", phase="Running")
    other["spec"]["schedulerName"] = "default-scheduler"
    state.apply_pod(other)
    snap = state.snapshot()
    (job,) = snap.jobs.values()
    assert job.uid.startswith("c1/podgroup-") and job.min_available == 1
    assert snap.nodes["n1"].idle.milli_cpu == 2000


def test_a_volcano_job_expands_like_volcanos_controller() -> None:
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "tf", "namespace": "ml", "uid": "u1"},
        "spec": {
            "minAvailable": 3,
            "queue": "research",
            "priorityClassName": "high",
            "tasks": [
                {
                    "name": "ps",
                    "replicas": 1,
                    "template": {
                        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
                    },
                },
                {
                    "name": "worker",
                    "replicas": 2,
                    "minAvailable": 1,
                    "template": {
                        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]}
                    },
                },
            ],
        },
    }
    pg, pods = expand_job(job)
    assert pg["metadata"]["name"] == "tf-u1"
    assert pg["spec"]["minMember"] == 3
    assert pg["spec"]["minTaskMember"] == {"ps": 1, "worker": 1}
    assert pg["spec"]["queue"] == "research" and pg["spec"]["priorityClassName"] == "high"
    assert pg["spec"]["minResources"] == {"cpu": "5"}
    assert [p["metadata"]["name"] for p in pods] == ["tf-ps-0", "tf-worker-0", "tf-worker-1"]
    ann = pods[2]["metadata"]["annotations"]
    assert ann["scheduling.k8s.io/group-name"] == "tf-u1"
    assert ann["volcano.sh/task-spec"] == "worker" and ann["volcano.sh/task-index"] == "1"
    assert pods[0]["spec"]["schedulerName"] == "volcano"


@pytest.mark.parametrize("min_member", [1, 2, 3, 4])
def test_a_job_is_ready_when_ready_tasks_and_pending_best_effort_ones_reach_min_member(
    min_member: int,
) -> None:
    """One bound pod, one pending pod with requests, two pending best-effort pods (no requests)."""
    from tests.builders import podgroup

    state = ClusterState()
    state.apply_node(node("n1"))
    state.apply_podgroup(podgroup("g", min_member=min_member))
    state.apply_pod(pod("bound", group="g", node_name="n1", phase="Running"))
    state.apply_pod(pod("asks", group="g"))
    for i in range(2):
        state.apply_pod(pod(f"free-{i}", cpu="", memory="", group="g"))
    job = next(iter(state.snapshot().jobs.values()))
    assert job.ready_task_num() == 1 and job.pending_best_effort_num() == 2
    assert job.is_ready() is (min_member <= 3)


def _recount(job) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """ready_task_num and pending_best_effort_num counted from the status index itself."""
    from scheduler.model.objects import READY_STATUSES

    idx = job.task_status_index
    ready = sum(len(idx.get(s, {})) for s in READY_STATUSES)
    best_effort = sum(1 for t in idx.get(TaskStatus.PENDING, {}).values() if t.best_effort)
    return ready, best_effort


def test_the_ready_counters_follow_every_change_of_a_job_and_of_its_session_views() -> None:
    """is_ready reads counters kept as tasks come, go and change status; a session view shares
    them with the cluster's job until it first changes, then keeps its own."""
    import random

    from scheduler.model.convert import pod_to_task as to_task

    rng = random.Random(3)
    tasks = [
        to_task(pod(f"p{i}", cpu="" if i % 3 == 0 else "1", memory="" if i % 3 == 0 else "1Gi", group="g"))
        for i in range(12)
    ]
    job = podgroup_to_job({"metadata": {"name": "g", "namespace": "c1"}, "spec": {"minMember": 4}})
    statuses = list(TaskStatus)
    views = [job]
    for step in range(400):
        target = rng.choice(views)
        t = rng.choice(tasks)
        op = rng.random()
        current = target.tasks.get(t.uid)
        if current is None:
            fresh = t.clone()
            fresh.status = rng.choice(statuses)
            target.add_task(fresh)
        elif op < 0.2:
            target.delete_task(current)
        elif op < 0.9:
            if target is not job:  # a session changes its own copy of a task (Session.own)
                mine = current.clone()
                target.replace_task(current, mine)
                current = mine
            target.update_task_status(current, rng.choice(statuses))
        elif step % 7 == 0:
            views.append(job.session_view())
        for j in views:
            assert (j.ready_task_num(), j.pending_best_effort_num()) == _recount(j)
            assert j.is_ready() is (sum(_recount(j)) >= j.min_available)
