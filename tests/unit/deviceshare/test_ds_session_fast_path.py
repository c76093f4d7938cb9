"""A session's vGPU placements are the same with the hot-path shortcuts as without them.

The shortcuts: the per-shape verdicts and scores of allocate's placement cache (reused until the
node changes), device scans shared by equal requests and brought up to date node by node, and the
per-node cpu/memory score memos of binpack and nodeorder. Without them every verdict and score
the cache needs is computed afresh, each pod scans the whole card table for itself, and every
score is computed. (The cache's sample, its candidate list per job, is the same either way.)
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from scheduler.actions import allocate as allocate_action
from scheduler.framework.cycle import run_session
from scheduler.framework.placement import PlacementCache, _NodeValues
from scheduler.framework.session import Session, SessionOptions
from scheduler.model.cluster import ClusterState
from scheduler.model.objects import TaskInfo
from scheduler.plugins.deviceshare import annotations as ann
from scheduler.plugins.deviceshare import fit as python_fit
from scheduler.plugins.deviceshare import hotpath, vgpu
from scheduler.plugins.deviceshare.vgpu import ScanCache
from scheduler.plugins.k8s.noderesources import CpuMemoryMemo
from scheduler.registry import parse
from scheduler.sim.devicebench import SESSION_CONF
from scheduler.sim.nodegen import make_nodes, parse_node_spec

# the device score counts in node order only with a weight (deviceshare.ScheduleWeight, default 0)
WEIGHTED = SESSION_CONF.replace(
    "deviceshare.SchedulePolicy: binpack\n",
    "deviceshare.SchedulePolicy: binpack\n      deviceshare.ScheduleWeight: 10\n",
)
SPREAD = WEIGHTED.replace("SchedulePolicy: binpack", "SchedulePolicy: spread")


def _cluster(seed: int) -> ClusterState:
    """Nodes of a few sizes and card counts; jobs of 1-3 pods of a few vGPU sizes (so shapes repeat),
    some asking more CPU than some nodes have left, some asking whole cards or two cards."""
    rng = random.Random(seed)
    state = ClusterState()
    specs = [
        parse_node_spec(f"{rng.randrange(3, 7)}:cpu=8,memory=32Gi,gpu=4xA100-40GB"),
        parse_node_spec(f"{rng.randrange(3, 7)}:cpu=16,memory=64Gi,gpu=2xA100-40GB"),
        parse_node_spec(f"{rng.randrange(2, 5)}:cpu=32,memory=128Gi,gpu=8xT4"),
    ]
    for node in make_nodes(specs):
        state.apply_node(node)
    state.apply_queue(
        {"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}, "status": {"state": "Open"}}
    )
    for j in range(rng.randrange(60, 90)):
        name = f"job-{j:03d}"
        size = rng.choice((1, 1, 1, 2, 3))
        meta = {"name": name, "namespace": "ml", "creationTimestamp": float(j)}
        state.apply_podgroup({"kind": "PodGroup", "metadata": meta, "spec": {"minMember": size, "queue": "default"},
                              "status": {"phase": "Inqueue"}})  # fmt: skip
        limits = {
            ann.VGPU_NUMBER: str(rng.choice((1, 1, 1, 2))),
            ann.VGPU_MEMORY: str(rng.choice((1024, 2048, 6000, 12000))),
            ann.VGPU_CORES: str(rng.choice((0, 10, 25, 50, 100))),
        }
        cpu = rng.choice(("100m", "500m", "2", "6"))
        for k in range(size):
            pod = f"{name}-{k}"
            state.apply_pod({
                "kind": "Pod",
                "metadata": {"name": pod, "namespace": "ml", "uid": f"uid-{pod}", "creationTimestamp": float(j),
                             "annotations": {"scheduling.k8s.io/group-name": name}},
                "spec": {"schedulerName": "volcano", "containers": [
                    {"name": "main", "resources": {"requests": {"cpu": cpu}, "limits": limits}}]},
                "status": {"phase": "Pending"},
            })  # fmt: skip
    return state


def _decide(conf: str, seed: int) -> tuple[list[tuple[str, str, str]], list[tuple[str, str]], list[str]]:
    res = run_session(
        _cluster(seed).snapshot(),
        parse(conf),
        SessionOptions(minimum_feasible_nodes=3, percentage_nodes_to_find=40),
        rng=random.Random(seed),
    )
    binds = [(b.task.key, b.node, b.annotations.get(ann.VGPU_IDS_NEW, "")) for b in res.binds]
    conditions = sorted(f"{c.task.key}: {c.message}" for c in res.pod_conditions)
    return binds, sorted(res.pipelined.items()), conditions


def _forget(self: PlacementCache, vals: _NodeValues, task: TaskInfo) -> _NodeValues:
    """PlacementCache._fresh that keeps nothing: every value is computed again when looked up."""
    vals.forget()
    vals.seq = len(self.ssn.node_changes)
    return vals


def _without_shortcuts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(PlacementCache, "_fresh", _forget)
    # the Idle fits computed on their own, not in the resource fit's pass
    monkeypatch.setattr(allocate_action, "allocate_predicate_many_idle", lambda ssn: None)
    # the many-node forms (deviceshare reads a whole window from one scan) asked node by node
    monkeypatch.setattr(
        Session, "predicate_many", lambda self, task, nodes: [self.predicate(task, n) for n in nodes]
    )
    monkeypatch.setattr(
        Session,
        "node_order_scores",
        lambda self, task, nodes: [self.node_order_score(task, n) for n in nodes],
    )
    monkeypatch.setattr(
        ScanCache, "answers", lambda self, table, req, policy, at=None: table.scan(req, policy)
    )
    monkeypatch.setattr(CpuMemoryMemo, "score", lambda self, task, node, compute: compute(task, node))
    monkeypatch.setattr(
        CpuMemoryMemo,
        "cpu_memory_scores",
        lambda self, req, nodes, weights, compute: list(map(compute, nodes)),
    )


@pytest.mark.parametrize(
    "conf", [SESSION_CONF, WEIGHTED, SPREAD], ids=["bench", "binpack-weighted", "spread-weighted"]
)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_vgpu_session_decides_the_same_with_idle_fits_asked_apart(
    conf: str, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Idle fits written in the resource fit's pass (allocate_predicate_many_idle) are the
    ones best() would compute itself: the same binds, pipelined pods and reasons."""
    fused = _decide(conf, seed)
    monkeypatch.setattr(allocate_action, "allocate_predicate_many_idle", lambda ssn: None)
    apart = _decide(conf, seed)
    assert len(fused[0]) > 20
    assert fused == apart


@pytest.mark.parametrize(
    "conf", [SESSION_CONF, WEIGHTED, SPREAD], ids=["bench", "binpack-weighted", "spread-weighted"]
)
@pytest.mark.parametrize("seed", [1, 2])
def test_vgpu_session_decides_the_same_without_shortcuts(
    conf: str, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = _decide(conf, seed)
    _without_shortcuts(monkeypatch)
    slow = _decide(conf, seed)
    binds, _, conditions = fast
    assert len(binds) > 20  # a real allocation happened
    assert conditions  # and not every pod fitted: the reasons are compared too
    assert all(ids for _, _, ids in binds)  # every bound pod got its cards
    assert fast == slow


@pytest.mark.parametrize("conf", [SESSION_CONF, WEIGHTED], ids=["bench", "binpack-weighted"])
def test_vgpu_session_decides_the_same_on_the_python_twin(conf: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole-window answers come from the compiled scan or from its Python twin: same decisions."""
    native = hotpath.native_module()
    if native is None:
        pytest.skip("compiled module not built")
    monkeypatch.setattr(vgpu, "fit_impl", native)
    compiled = _decide(conf, 3)
    monkeypatch.setattr(vgpu, "fit_impl", python_fit)
    twin = _decide(conf, 3)
    assert len(compiled[0]) > 20
    assert compiled == twin


def _caches(monkeypatch: pytest.MonkeyPatch) -> list[PlacementCache]:
    """Every placement cache the sessions build from now on."""
    made: list[PlacementCache] = []
    init = PlacementCache.__init__

    def keep(self: PlacementCache, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(PlacementCache, "__init__", keep)
    return made


@pytest.mark.parametrize("seed", [1, 2])
def test_shapes_differing_in_their_device_requests_share_their_scores(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under the default weights no score reads the vGPU request: the pods of one cpu size share
    one score table whatever cards they ask, and decide as with a score table per shape."""
    caches = _caches(monkeypatch)
    shared = _decide(SESSION_CONF, seed)
    values = [v for c in caches for v in c.values.values()]
    tables = {id(v.sc) for v in values}
    assert len(tables) < len(values)  # some shapes scored through one table
    assert len(tables) <= 4  # one per cpu size of _cluster
    monkeypatch.setattr(Session, "score_shape", lambda self, task: None)
    caches.clear()
    apart = _decide(SESSION_CONF, seed)
    values = [v for c in caches for v in c.values.values()]
    assert len({id(v.sc) for v in values}) == len(values)
    assert shared == apart


def test_a_weighted_device_score_keeps_a_score_table_per_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    """With deviceshare.ScheduleWeight the device request is scored: no sharing between shapes."""
    caches = _caches(monkeypatch)
    _decide(WEIGHTED, 1)
    values = [v for c in caches for v in c.values.values()]
    assert len(values) > 4
    assert len({id(v.sc) for v in values}) == len(values)


def test_the_shape_key_memo_gives_the_shape_key_across_jobs() -> None:
    """The memo finds a template's key for every job using it (one-pod jobs differ only in their
    group name), and gives exactly _shape_key: job and role first, then the template's part."""
    from scheduler.framework.cycle import open_session
    from scheduler.framework.placement import _shape_key, allocate_predicate

    ssn = open_session(_cluster(4).snapshot(), parse(SESSION_CONF), SessionOptions())
    cache = PlacementCache(ssn, allocate_predicate(ssn))
    tasks = [t for job in ssn.jobs.values() for t in job.tasks.values()]
    assert len({t.job for t in tasks}) > 50
    for task in tasks:
        assert cache._key(task) == _shape_key(task)
    templates = {_shape_key(t)[2:] for t in tasks}  # type: ignore[index]
    assert len(templates) < len({t.job for t in tasks})  # some jobs share a template
    assert len(cache._shape_keys) == len(templates)  # one entry per template, not per job
