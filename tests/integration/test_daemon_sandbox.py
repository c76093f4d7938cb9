"""The daemon against the sandbox API server over HTTP: what a user of a real cluster would see."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import aiohttp

from tests import k8stools
from tests.integration.conftest import FAST_LEASE, Cluster, wait_for

BINPACK = """actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: binpack
"""
SPREAD = BINPACK.replace("name: binpack", "name: nodeorder")
BROKEN = BINPACK.replace('"enqueue, allocate, backfill"', '"enqueue, allocate, backfil"')


async def get(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as s, s.get(url) as r:
        return r.status, await r.text()


async def test_pods_are_bound_exactly_once_and_statuses_written(cluster: Cluster) -> None:
    cluster.job("gang", 3)
    cluster.job("solo", 1)
    d = await cluster.start_daemon("--leader-elect=false")
    await wait_for(lambda: len(cluster.bound()) == 4, 10, "4 pods bound")
    await asyncio.sleep(0.5)  # several more sessions: nothing may be bound again
    assert cluster.successful_binds_per_pod() == {"gang-0": 1, "gang-1": 1, "gang-2": 1, "solo-0": 1}
    assert [r["code"] for r in cluster.binding_requests()] == [201] * 4
    pg = cluster.store.get("podgroups", "default", "gang")
    await wait_for(
        lambda: (
            (cluster.store.get("podgroups", "default", "gang").get("status") or {}).get("phase") == "Running"
        ),
        5,
        "PodGroup Running",
    )
    pg = cluster.store.get("podgroups", "default", "gang")
    [cond] = pg["status"]["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == (
        "Scheduled",
        "True",
        "tasks in gang are ready to be scheduled",
    )
    events = [
        (e["involvedObject"]["name"], e["reason"], e["message"])
        for e in cluster.store.list("events", "default")
    ]
    assert (
        "gang-1",
        "Scheduled",
        f"Successfully assigned default/gang-1 to {cluster.node_of('gang-1')}",
    ) in events
    q = cluster.store.get("queues", None, "default")
    await wait_for(
        lambda: (cluster.store.get("queues", None, "default").get("status") or {}).get("running") == 2,
        5,
        "queue status counts",
    )
    assert d.sessions > 0 and q is not None


async def test_unschedulable_pod_gets_the_reason_on_its_condition(cluster: Cluster, tmp_path: Path) -> None:
    cluster.podgroup("huge", 1, inqueue=True)
    cluster.pod("huge-0", "huge", cpu="64")
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(SPREAD)  # no proportion: its queue check would speak before the nodes do
    await cluster.start_daemon("--leader-elect=false", f"--scheduler-conf={conf}")

    def condition() -> dict[str, Any] | None:
        p = cluster.store.get("pods", "default", "huge-0")
        return next(
            (c for c in (p.get("status") or {}).get("conditions") or [] if c["type"] == "PodScheduled"), None
        )

    await wait_for(condition, 10, "PodScheduled condition")
    c = condition()
    assert c is not None
    assert (c["status"], c["reason"]) == ("False", "Unschedulable")
    assert c["message"] == "0/3 nodes are unavailable: 3 Insufficient cpu."
    await asyncio.sleep(0.6)
    writes = [
        r for r in cluster.srv.request_log if r.get("subresource") == "status" and r.get("name") == "huge-0"
    ]
    assert len(writes) == 1, "an unchanged condition must not be rewritten every session"
    warn = [e for e in cluster.store.list("events", "default") if e["reason"] == "FailedScheduling"]
    assert len(warn) == 1 and warn[0]["type"] == "Warning" and warn[0]["message"] == c["message"]
    pg = cluster.store.get("podgroups", "default", "huge")
    assert pg["status"]["conditions"][0]["reason"] == "NotEnoughResources"
    assert pg["status"]["conditions"][0]["message"].startswith(
        "1/1 tasks in gang unschedulable: pod group is not ready"
    )


async def test_metrics_and_health_endpoints(cluster: Cluster) -> None:
    cluster.job("m", 2)
    d = await cluster.start_daemon("--leader-elect=false")
    await wait_for(lambda: len(cluster.bound()) == 2, 10, "pods bound")
    base = f"http://127.0.0.1:{d.ports[0]}"
    await wait_for(lambda: d.metrics.pods_bound._value.get() == 2, 5, "bind counter")
    status, text = await get(f"{base}/metrics")
    assert status == 200
    assert re.search(r"^volcano_e2e_scheduling_latency_milliseconds_count [1-9]", text, re.M)
    assert re.search(
        r'^volcano_action_scheduling_latency_milliseconds_count\{action="allocate"\} [1-9]', text, re.M
    )
    assert "volcano_pods_bound_total 2.0" in text
    assert (await get(f"{base}/healthz"))[0] == 200
    status, body = await get(f"{base}/readyz")
    assert status == 200 and "leader" in body


async def test_hot_reload_changes_placement_and_an_invalid_edit_keeps_the_old_config(
    cluster: Cluster,
) -> None:
    cluster.configmap(BINPACK)
    d = await cluster.start_daemon("--leader-elect=false")
    await wait_for(lambda: d.reloader.current_source.startswith("configmap"), 5, "ConfigMap config loaded")

    async def place(name: str) -> str:
        cluster.job(name, 1)
        await wait_for(lambda: cluster.node_of(f"{name}-0"), 10, f"{name} bound")
        return cluster.node_of(f"{name}-0")

    a = await place("a")
    assert await place("b") == a, "binpack packs the second pod next to the first"
    cluster.configmap(SPREAD)
    await wait_for(
        lambda: any(p.name == "nodeorder" for t in d.reloader.current.tiers for p in t.plugins), 5, "reload"
    )
    c = await place("c")
    assert c != a, "spread (least requested) avoids the busy node"
    cluster.configmap(BROKEN)
    await wait_for(lambda: d.reloader.failures >= 1, 5, "the invalid edit is refused")
    assert "failed to find action 'backfil'" in d.reloader.last_error
    assert await place("d") not in (a,), "still spreading: the last good config is in force"
    await wait_for(
        lambda: any(
            e["reason"] == "FailedLoadConfig" for e in cluster.store.list("events", "volcano-system")
        ),
        5,
        "Warning event on the ConfigMap",
    )
    ev = next(e for e in cluster.store.list("events", "volcano-system") if e["reason"] == "FailedLoadConfig")
    assert ev["type"] == "Warning" and ev["involvedObject"]["name"] == "volcano-scheduler-configmap"
    _status, text = await get(f"http://127.0.0.1:{d.ports[0]}/metrics")
    assert 'volcano_config_reload_failures_total{source="configmap"} 1.0' in text


async def test_leader_election_takeover_without_double_binding(cluster: Cluster) -> None:
    first = await cluster.start_daemon(*FAST_LEASE)
    await wait_for(lambda: first.is_leader, 5, "first leader")
    second = await cluster.start_daemon(*FAST_LEASE)
    await asyncio.sleep(0.5)
    assert not second.is_leader
    status, body = await get(f"http://127.0.0.1:{second.ports[0]}/readyz")
    assert status == 200 and "standby" in body
    cluster.job("x", 3)
    await wait_for(lambda: len(cluster.bound()) == 3, 10, "leader binds")
    await cluster.kill_daemon(first)  # crash: the lease is not released
    cluster.job("y", 3)
    await wait_for(lambda: second.is_leader, 6, "standby takes over after the lease expires")
    await wait_for(lambda: len(cluster.bound()) == 6, 10, "new leader binds")
    await asyncio.sleep(0.3)
    assert all(n == 1 for n in cluster.successful_binds_per_pod().values())
    assert len(cluster.successful_binds_per_pod()) == 6
    lease = cluster.store.get("leases", "volcano-system", "volcano")
    assert lease["spec"]["holderIdentity"] == second.elector.identity  # type: ignore[union-attr]
    assert lease["spec"]["leaseTransitions"] >= 1


async def test_graceful_stop_releases_the_lease(cluster: Cluster) -> None:
    d = await cluster.start_daemon(*FAST_LEASE)
    await wait_for(lambda: d.is_leader, 5, "leader")
    assert await cluster.stop_daemon(d) == 0
    lease = cluster.store.get("leases", "volcano-system", "volcano")
    assert lease["spec"]["holderIdentity"] == ""


async def test_restart_on_a_busy_cluster_allocates_nothing_twice(cluster: Cluster) -> None:
    for i in range(4):
        cluster.job(f"early{i}", 2)
    d = await cluster.start_daemon("--leader-elect=false")
    await wait_for(lambda: len(cluster.bound()) == 8, 10, "first daemon binds")
    await cluster.stop_daemon(d)
    for i in range(2):
        cluster.job(f"late{i}", 2)
    await cluster.start_daemon("--leader-elect=false")
    await wait_for(lambda: len(cluster.bound()) == 12, 10, "second daemon binds the rest")
    await asyncio.sleep(0.5)
    assert set(cluster.successful_binds_per_pod().values()) == {1}
    assert not [r for r in cluster.binding_requests() if r["code"] == 409], (
        "the restarted daemon knew the earlier binds"
    )
    # 12 cpus on 3 x 4-cpu nodes: nothing may be overcommitted
    per_node: dict[str, int] = {}
    for n in cluster.bound().values():
        per_node[n] = per_node.get(n, 0) + 1
    assert max(per_node.values()) <= 4


async def test_faults_every_pod_bound_exactly_once(cluster: Cluster) -> None:
    cluster.srv.set_faults(close_watches_every=1.0, error_rate=0.1, error_codes=[429, 500], retry_after=0)
    await cluster.start_daemon(*FAST_LEASE)
    for i in range(30):
        cluster.job(f"f{i}", 1, cpu="300m")
        if i % 5 == 0:
            await asyncio.sleep(0.3)
    await wait_for(lambda: len(cluster.bound()) == 30, 30, "all pods bound despite faults")
    await asyncio.sleep(1.0)
    assert cluster.successful_binds_per_pod() == {f"f{i}-0": 1 for i in range(30)}
    assert cluster.srv.faults.injected > 0


async def test_dry_run_decides_but_writes_nothing(cluster: Cluster) -> None:
    cluster.job("shadow", 3)
    d = await cluster.start_daemon("--dry-run")
    await wait_for(lambda: d.metrics.dry_run_binds._value.get() == 3, 10, "3 would-be binds counted")
    await asyncio.sleep(0.5)
    assert d.metrics.dry_run_binds._value.get() == 3, "each pod is counted once, not once per session"
    assert cluster.bound() == {}
    writes = [r for r in cluster.srv.request_log if r["method"] not in ("GET",)]
    assert writes == [], "shadow mode must not write: no binds, statuses, events or lease"
    assert d.elector is None


async def test_healthz_also_served_on_the_volcano_healthz_address(cluster: Cluster) -> None:
    d = await cluster.start_daemon(
        "--leader-elect=false", "--enable-healthz", "--healthz-address=127.0.0.1:0"
    )
    assert len(d.ports) == 2
    assert (await get(f"http://127.0.0.1:{d.ports[1]}/healthz"))[0] == 200


async def test_podgroup_events_name_the_podgroup_so_kubectl_describe_lists_them(cluster: Cluster) -> None:
    # a gang asking more than the cluster has: enqueue refuses it with a PodGroup event
    cluster.create(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "too-big", "namespace": "default"},
            "spec": {"minMember": 1, "queue": "default", "minResources": {"cpu": "64"}},
        }
    )
    cluster.pod("too-big-0", "too-big", cpu="64")
    await cluster.start_daemon("--leader-elect=false")
    pg = cluster.store.get("podgroups", "default", "too-big")

    def pg_events() -> list[dict[str, Any]]:
        return [
            e
            for e in cluster.store.list("events", "default")
            if e["involvedObject"].get("kind") == "PodGroup" and e["involvedObject"]["name"] == "too-big"
        ]

    await wait_for(pg_events, 10, "a PodGroup event")
    ref = pg_events()[0]["involvedObject"]
    assert ref == {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "namespace": "default",
        "name": "too-big",
        "uid": pg["metadata"]["uid"],
    }
    tools = k8stools.ensure_binaries()
    if tools is None:  # the API answer kubectl describe relies on, without kubectl
        return
    proc = await asyncio.create_subprocess_exec(
        str(tools["kubectl"]),
        "--kubeconfig",
        cluster.kubeconfig,
        "describe",
        "podgroup",
        "too-big",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    text = out.decode()
    assert proc.returncode == 0, err.decode()
    assert "Events:  <none>" not in text and "Unschedulable" in text, text
