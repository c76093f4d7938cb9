"""Chaos experiments against the real daemon: each ends with the referee's verdict on the API
server's record (no pod bound twice, no node or card over-committed, no kubelet rejection, no
valid pod left unbound while it fits, no daemon exited). Each runs at a fast scale in `make test`
and at a long one under `make chaos` (pytest marker `chaos`, excluded by default)."""

from __future__ import annotations

import asyncio
import random
import signal
import time
from dataclasses import dataclass
from typing import Any

import pytest

from scheduler.sim.nodegen import device_configmap, make_nodes, parse_node_spec
from scheduler.sim.restclient import ApiError
from tests.chaos.figures import record
from tests.chaos.fuzz import bad_objects, collection_path
from tests.chaos.harness import FAST_LEASE, VALID, Chaos, cpu_nodes, valid_pod
from tests.integration.test_daemon_device_metrics import CONF as VGPU_CONF

# at the long scale a session on a loaded machine can outlast a 1.5 s renew deadline, and the
# fence then rightly stops the leader: the lease is longer there
LONG_LEASE = (
    "--leader-elect-lease-duration=8s",
    "--leader-elect-renew-deadline=6s",
    "--leader-elect-retry-period=500ms",
)


@dataclass(frozen=True)
class Scale:
    nodes: int
    pods: int
    node_cpu: str = "4"
    bad: int = 200
    waves: int = 3
    lease: tuple[str, ...] = FAST_LEASE
    timeout: float = 60.0  # for each wait of an experiment


SCALES = {
    "fast": Scale(nodes=6, pods=60),
    "long": Scale(nodes=40, pods=1000, node_cpu="16", bad=386, waves=10, lease=LONG_LEASE, timeout=400.0),
}
BOTH = [pytest.param("fast"), pytest.param("long", marks=pytest.mark.chaos)]


def leader_of(chaos: Chaos) -> Any:
    leaders = [d for d in chaos.daemons if d.alive and chaos.log_has(d, "became leader")]
    return leaders[-1] if leaders else None


def finish(chaos: Chaos, name: str, scale: str, t0: float, pods: int, **extra: Any) -> list[str]:
    assert chaos.checker is not None
    verdict = chaos.verdict()
    record(
        experiment=name,
        scale=scale,
        pods=pods,
        binds=chaos.checker.binds,
        violations=len(verdict),
        seconds=round(time.monotonic() - t0, 1),
        **extra,
    )
    return verdict


@pytest.mark.parametrize("scale", BOTH)
async def test_faults_429_500_503_latency_watch_drops_and_history_expiry(chaos: Chaos, scale: str) -> None:
    s, t0 = SCALES[scale], time.monotonic()
    await chaos.start(cpu_nodes(s.nodes, cpu=s.node_cpu))
    chaos.srv.set_faults(
        error_rate=0.1, error_codes=[429, 500, 503], latency_ms=20, close_watches_every=1.0, retry_after=0
    )
    await chaos.daemon("--leader-elect=false")
    names = chaos.pods("f", s.pods)
    await chaos.until(lambda: chaos.bound(names) >= s.pods // 3, s.timeout, "a third bound")
    chaos.srv.set_faults(expire_history=True)  # every watch resume now gets 410 and relists
    await chaos.until(lambda: chaos.bound(names) == s.pods, s.timeout, "every pod bound")
    injected = chaos.srv.faults.injected
    chaos.srv.set_faults(error_rate=0.0, latency_ms=0, close_watches_every=None)
    assert injected > 0
    assert finish(chaos, "faults", scale, t0, s.pods, faults=injected) == []


@pytest.mark.parametrize("scale", BOTH)
async def test_kill_9_during_a_burst_loses_nothing_and_binds_nothing_twice(chaos: Chaos, scale: str) -> None:
    s, t0 = SCALES[scale], time.monotonic()
    await chaos.start(cpu_nodes(s.nodes, cpu=s.node_cpu))
    kills = 0
    names = chaos.pods("k", s.pods)
    for wave in range(2):
        d = await chaos.daemon(*s.lease)
        target = s.pods * (wave + 1) // 3
        await chaos.until(
            lambda t=target, n=names: chaos.bound(n) >= t, s.timeout, f"{target} bound before kill -9"
        )
        d.kill9()
        await d.proc.wait()
        kills += 1
        names += chaos.pods(f"k{wave}", s.pods // 4)  # a burst arrives while no scheduler runs
    await chaos.daemon(*s.lease)
    await chaos.until(
        lambda: chaos.bound(names) == len(names), s.timeout, "every pod bound after the restarts"
    )
    assert finish(chaos, "kill -9 during a burst", scale, t0, len(names), faults=f"{kills} kill -9") == []


@pytest.mark.parametrize("scale", BOTH)
async def test_leader_kill_fails_over_and_loses_nothing(chaos: Chaos, scale: str) -> None:
    s, t0 = SCALES[scale], time.monotonic()
    await chaos.start(cpu_nodes(s.nodes, cpu=s.node_cpu))
    for _ in range(2):
        await chaos.daemon(*s.lease)
    await chaos.until(lambda: leader_of(chaos) is not None, 30, "a leader")
    names = chaos.pods("l", s.pods)
    await chaos.until(lambda: chaos.bound(names) >= s.pods // 3, s.timeout, "a third bound")
    old = leader_of(chaos)
    old.kill9()
    t_kill = time.monotonic()
    names += chaos.pods("l2", s.pods // 4)
    await chaos.until(
        lambda: chaos.bound(names) == len(names), s.timeout, "every pod bound by the new leader"
    )
    failover = round(time.monotonic() - t_kill, 1)
    assert (
        finish(
            chaos,
            "leader kill -9",
            scale,
            t0,
            len(names),
            faults=f"kill -9 leader, all bound {failover}s after",
        )
        == []
    )


async def test_leader_paused_longer_than_the_lease_never_binds_after_it(chaos: Chaos) -> None:
    """SIGSTOP the leader with binds queued, let a standby take over and fill the nodes with
    higher-priority pods, SIGCONT: the decisions from before the pause must never be sent."""
    t0 = time.monotonic()
    await chaos.start(cpu_nodes(3, cpu="4"))  # 12 CPUs
    chaos.store.create(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
        }
    )
    # the leader sends at most 20 requests a second: most of its decisions wait in its token bucket
    a = await chaos.daemon(*FAST_LEASE, "--kube-api-qps=20", "--kube-api-burst=1")
    await chaos.until(lambda: chaos.log_has(a, "became leader"), 30, "the first daemon leads")
    b = await chaos.daemon(*FAST_LEASE)
    await chaos.until(lambda: chaos.log_has(b, "initial sync done"), 30, "the standby synced")
    paused: list[float] = []

    def stop_at_first_bind(_etype: str, key: str, obj: dict[str, Any]) -> None:
        if key == "pods" and obj["spec"].get("nodeName") and not paused:
            a.signal(signal.SIGSTOP)  # in the API server's own write path: no later bind slips out
            paused.append(time.monotonic())

    unsubscribe = chaos.store.subscribe(stop_at_first_bind)
    low = chaos.pods("low", 36, cpu="1")
    await chaos.until(lambda: bool(paused), 30, "the leader's first bind")
    unsubscribe()
    high = chaos.pods("high", 12, cpu="1", priority_class="high")
    await chaos.until(lambda: chaos.log_has(b, "became leader"), 30, "the standby takes over")
    await chaos.until(lambda: chaos.bound(low + high) >= 12, 30, "the new leader fills the nodes")
    await asyncio.sleep(max(0.0, 3.0 - (time.monotonic() - paused[0])))  # longer than the 2 s lease
    pause = time.monotonic() - paused[0]
    a.signal(signal.SIGCONT)
    await chaos.until(
        lambda: chaos.log_has(a, "lost leadership") or chaos.log_has(a, "fenced"), 20, "a notices"
    )
    await asyncio.sleep(2.0)  # time for any stale decision to go out, if one were going to
    assert chaos.checker is not None
    assert chaos.checker.rejections == 0
    assert chaos.bound(low + high) == 12 and a.alive and b.alive
    verdict = finish(
        chaos, "leader SIGSTOP > lease", "fast", t0, len(low) + len(high), faults=f"SIGSTOP {pause:.1f}s"
    )
    assert verdict == []


@pytest.mark.parametrize("scale", BOTH)
async def test_vgpu_churn_never_over_commits_a_card(chaos: Chaos, scale: str) -> None:
    s, t0 = SCALES[scale], time.monotonic()
    n_nodes = 3 if scale == "fast" else 20
    nodes = make_nodes([parse_node_spec(f"{n_nodes}:cpu=32,memory=128Gi,gpu=2xT4,mode=hami-core")])
    await chaos.start(nodes)
    chaos.store.create(device_configmap())
    chaos.store.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "volcano-scheduler-configmap", "namespace": "volcano-system"},
            "data": {"volcano-scheduler.conf": VGPU_CONF},
        }
    )
    await chaos.daemon("--leader-elect=false")
    rng = random.Random(7)
    names: list[str] = []
    deleted = 0
    per_wave = 20 if scale == "fast" else 200
    for wave in range(s.waves):
        for i in range(per_wave):
            name = f"v{wave}-{i}"
            limits = {
                "volcano.sh/vgpu-number": "1",
                "volcano.sh/vgpu-memory": str(rng.choice((1000, 3000, 6000))),
            }
            if rng.random() < 0.3:
                limits["volcano.sh/vgpu-cores"] = str(rng.choice((20, 50)))
            run = {"sandbox.vc-scheduler.io/run-seconds": str(rng.choice((0.3, 1, 2)))}
            chaos.store.create(valid_pod(name, cpu="100m", limits=limits, annotations=run))
            names.append(name)
        await asyncio.sleep(0.7)
        for name in rng.sample(names, k=len(names) // 10):  # users delete pods, running or not
            if chaos.store.get("pods", "default", name) is not None:
                chaos.store.delete("pods", "default", name)
                deleted += 1

    def settled() -> bool:
        return all(
            p["spec"].get("nodeName") or p["metadata"].get("deletionTimestamp")
            for p in chaos.store.list("pods", "default")
            if VALID in (p["metadata"].get("labels") or {})
        )

    await chaos.until(settled, s.timeout, "every vGPU pod placed")
    assert finish(chaos, "vGPU churn", scale, t0, len(names), faults=f"{deleted} deletions") == []


@pytest.mark.parametrize("scale", BOTH)
async def test_fuzzer_garbage_objects_never_stop_valid_pods(chaos: Chaos, scale: str) -> None:
    s, t0 = SCALES[scale], time.monotonic()
    await chaos.start(cpu_nodes(s.nodes, cpu="8"))
    chaos.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fuzz"}})
    d = await chaos.daemon("--leader-elect=false")
    assert chaos.client is not None
    admitted = refused = 0
    names: list[str] = []
    objs = bad_objects(s.bad)
    for i, obj in enumerate(objs):
        path = collection_path(obj)
        try:
            if obj["kind"] == "ConfigMap" and chaos.store.get(
                "configmaps", obj["metadata"]["namespace"], obj["metadata"]["name"]
            ):
                await chaos.client.request(
                    "PATCH",
                    f"{path}/{obj['metadata']['name']}",
                    {"data": obj["data"]},
                    "application/merge-patch+json",
                )
            else:
                await chaos.client.request("POST", path, obj)
            admitted += 1
        except ApiError as exc:
            assert exc.status < 500, (
                f"the API server failed on {obj['kind']} {obj['metadata']['name']}: {exc}"
            )
            refused += 1
        if i % 10 == 0:  # valid pods keep arriving while the garbage does
            names += chaos.pods(f"ok{i}", 3)
    await chaos.until(lambda: chaos.bound(names) == len(names), s.timeout, "every valid pod bound")
    log = d.log.read_text(errors="replace")
    assert "session failed" not in log and "Traceback" not in log, d.tail(60)
    assert admitted > 50  # the scheduler had to live with a good share of them
    verdict = finish(
        chaos,
        "fuzzer",
        scale,
        t0,
        len(names),
        bad_objects=f"{len(objs)} ({admitted} admitted, {refused} refused)",
    )
    assert verdict == []
