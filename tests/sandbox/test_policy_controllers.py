"""The sandbox's disruption and quota controllers compute the statuses Kubernetes would write."""

from __future__ import annotations

from typing import Any

from scheduler.sim.policycontrollers import budget_status, quota_used, selector_string


def pod(
    phase: str = "Running", cpu: str = "1", deleting: bool = False, limits: dict | None = None
) -> dict[str, Any]:
    md: dict[str, Any] = {"name": "p"}
    if deleting:
        md["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    res: dict[str, Any] = {"requests": {"cpu": cpu, "memory": "1Gi"}}
    if limits:
        res["limits"] = limits
    return {"metadata": md, "spec": {"containers": [{"resources": res}]}, "status": {"phase": phase}}


def test_min_available_and_max_unavailable_as_counts_and_percentages() -> None:
    pods = [pod(), pod(), pod(), pod("Pending"), pod(deleting=True)]
    assert budget_status({"minAvailable": 2}, pods) == {
        "expectedPods": 4,
        "currentHealthy": 3,
        "desiredHealthy": 2,
        "disruptionsAllowed": 1,
    }
    assert budget_status({"minAvailable": "50%"}, pods)["disruptionsAllowed"] == 1
    assert budget_status({"maxUnavailable": 1}, pods)["disruptionsAllowed"] == 0  # 3 healthy, 3 wanted
    assert budget_status({"maxUnavailable": "100%"}, pods)["disruptionsAllowed"] == 3


def test_selector_becomes_the_list_query() -> None:
    sel = {
        "matchLabels": {"app": "db"},
        "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}],
    }
    assert selector_string(sel) == "app=db,tier in (a,b)"
    assert selector_string({}) is None and selector_string(None) is None


def test_quota_used_counts_live_pods_by_the_names_the_quota_lists() -> None:
    pods = [pod(cpu="500m"), pod(cpu="2", limits={"cpu": "3"}), pod("Succeeded"), pod(deleting=True)]
    used = quota_used({"cpu": "4", "requests.memory": "8Gi", "limits.cpu": "8", "pods": "10"}, pods)
    assert used == {"cpu": "2500m", "requests.memory": str(2 * 2**30), "limits.cpu": "3", "pods": "2"}


def test_queue_admission_refuses_what_volcanos_webhook_refuses() -> None:
    import pytest

    from scheduler.sim.apiserver.errors import ApiError
    from scheduler.sim.apiserver.store import Store

    store = Store()

    def queue(name: str, **spec: Any) -> dict[str, Any]:
        return {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": name},
            "spec": spec,
        }

    store.create(queue("dept", deserved={"cpu": "4"}))
    for bad, why in (
        (queue("loop", parent="loop"), "queue loop cannot use itself as parent"),
        (
            queue("lost", parent="nowhere"),
            'failed to get parent queue of queue lost: queue.scheduling.volcano.sh "nowhere" not found',
        ),
        (
            queue("greedy", deserved={"cpu": "8"}, capability={"cpu": "4"}),
            "deserved[cpu]=8 must be <= capability[cpu]=4",
        ),
        (
            queue("short", deserved={"cpu": "1"}, guarantee={"resource": {"cpu": "2"}}),
            "deserved[cpu]=1 must be >= guarantee[cpu]=2",
        ),
    ):
        with pytest.raises(ApiError) as exc:
            store.create(bad)
        assert why in str(exc.value.status()), exc.value.status()
    store.create(queue("team", parent="dept", deserved={"cpu": "2"}))
    with pytest.raises(ApiError):  # an update is checked too: the stored queue stays as it was
        store.update(queue("team", parent="team", deserved={"cpu": "2"}))
    assert store.get("queues.scheduling.volcano.sh", None, "team")["spec"]["parent"] == "dept"
