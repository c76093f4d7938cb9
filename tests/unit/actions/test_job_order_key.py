"""allocate's job heap ordered by sort keys (Session.job_order_key) pops the jobs job_compare pops:
the keys order every pair as job_compare does, a keyed queue pops as a compare-ordered one, and a
whole allocation decides the same binds with the keys as without them."""

from __future__ import annotations

import random
from typing import Any

import pytest

from scheduler.framework.cycle import open_session, run_session
from scheduler.framework.pqueue import PriorityQueue
from scheduler.framework.session import Session, SessionOptions
from scheduler.model.cluster import ClusterState
from scheduler.model.job import JobInfo
from scheduler.registry import default_configuration, parse
from scheduler.sim.bench import _pod, gen_nodes, gen_queues

SLA = parse(
    'actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n'
    "  - name: sla\n- plugins:\n  - name: drf\n  - name: predicates\n  - name: proportion\n  - name: nodeorder\n"
)


def _state(seed: int) -> ClusterState:
    """Small nodes, jobs of three priorities whose minMember is below their task count (a ready
    job goes back into the heap with a new share), some running already (non-zero shares)."""
    rng = random.Random(seed)
    state = ClusterState()
    gen_nodes(state, 10, cpu=8, mem_gi=16)
    queues = gen_queues(state, 2)
    for name, value in (("low", 1), ("mid", 50), ("high", 1000)):
        state.apply_priority_class({"kind": "PriorityClass", "metadata": {"name": name}, "value": value})
    idx = 0
    for j in range(60):
        ns = f"team-{j % 4}"
        name = f"job-{j:04d}"
        tasks = rng.choice((1, 2, 3, 4))
        running = rng.random() < 0.2
        cpu = rng.choice(("500m", "1", "2"))
        state.apply_podgroup(
            {
                "kind": "PodGroup",
                # equal creation times: the uid decides between them, as _older_first does
                "metadata": {"name": name, "namespace": ns, "creationTimestamp": float(j // 3)},
                "spec": {
                    "minMember": rng.randint(1, tasks),
                    "queue": queues[j % 2],
                    "priorityClassName": rng.choice(("low", "mid", "high")),
                },
                "status": {"phase": "Running" if running else "Inqueue"},
            }
        )
        for k in range(tasks):
            node = f"node-{rng.randrange(10):05d}" if running and k == 0 else ""
            phase = "Running" if node else "Pending"
            state.apply_pod(_pod(f"{name}-{k}", ns, name, cpu, "1Gi", node=node, phase=phase, idx=idx))
            idx += 1
    return state


def _sign(x: int) -> int:
    return (x > 0) - (x < 0)


def test_keys_order_every_pair_as_job_compare() -> None:
    ssn = open_session(_state(1).snapshot(), default_configuration(), SessionOptions())
    key = ssn.job_order_key()
    assert key is not None
    drf = ssn.plugins["drf"]
    rng = random.Random(2)
    jobs = list(ssn.jobs.values())
    for _ in range(5):
        # ties and orders of every part: a few priorities, shares and readiness values
        for job in jobs:
            job.priority = rng.choice((0, 1, 5))
            job.min_available = rng.choice((0, 1, 9))
            drf.shares[job.uid] = rng.choice((0.0, 0.25, 0.5))
        keys = {job.uid: key(job) for job in jobs}
        for a in jobs:
            for b in jobs:
                ka, kb = keys[a.uid], keys[b.uid]
                by_key = -1 if ka < kb else (1 if kb < ka else 0)
                assert by_key == _sign(ssn.job_compare(a, b)), (a.uid, b.uid)


def test_nan_share_has_no_key() -> None:
    ssn = open_session(_state(1).snapshot(), default_configuration(), SessionOptions())
    key = ssn.job_order_key()
    assert key is not None
    job = next(iter(ssn.jobs.values()))
    ssn.plugins["drf"].shares[job.uid] = float("nan")
    assert key(job) is None


def test_a_plugin_without_key_leaves_the_compare() -> None:
    ssn = open_session(_state(1).snapshot(), SLA, SessionOptions())
    assert ssn.job_order_key() is None


def _pops(queue: PriorityQueue[Any], items: list[Any], rng: random.Random) -> list[Any]:
    out: list[Any] = []
    for item in items:
        queue.push(item)
        if rng.random() < 0.3:
            out.append(queue.pop())
    while not queue.empty():
        out.append(queue.pop())
    return out


@pytest.mark.parametrize("nan_at", [None, 0, 17, 60])
def test_keyed_queue_pops_as_the_compare_queue(nan_at: int | None) -> None:
    rng = random.Random(7)
    items = [(rng.randrange(5), rng.randrange(3), f"u{i:03d}") for i in range(80)]

    def cmp(a: tuple, b: tuple) -> int:
        return -1 if a < b else (1 if b < a else 0)

    def key(item: tuple) -> tuple | None:
        # one item the key cannot order: from there on the queue compares
        return None if nan_at is not None and item is items[nan_at] else item

    plain = _pops(PriorityQueue(cmp), items, random.Random(3))
    keyed_queue: PriorityQueue[tuple] = PriorityQueue.keyed(cmp, key)
    keyed = _pops(keyed_queue, items, random.Random(3))
    assert keyed == plain
    assert (keyed_queue._sort_key is None) == (nan_at is not None)


def _binds(conf: Any, monkeypatch: pytest.MonkeyPatch, keyed: bool, seed: int) -> list:
    if not keyed:
        monkeypatch.setattr(Session, "job_order_key", lambda self: None)
    res = run_session(_state(seed).snapshot(), conf, SessionOptions(), rng=random.Random(seed))
    monkeypatch.undo()
    return [(b.task.key, b.node) for b in res.binds]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_allocate_binds_the_same_with_keys(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    keyed = _binds(default_configuration(), monkeypatch, True, seed)
    plain = _binds(default_configuration(), monkeypatch, False, seed)
    assert 20 < len(keyed) < 120  # a real allocation that does not place everything
    assert keyed == plain


def test_keys_follow_a_queued_job_that_is_pushed_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A key kept from a job's first push (not taken again at its next) would misorder the jobs
    that go back into the heap with a new share: the binds would differ from job_compare's."""
    stale: dict[str, tuple] = {}
    real = Session.job_order_key

    def once(self: Session) -> Any:
        key = real(self)
        assert key is not None

        def first(job: JobInfo) -> tuple | None:
            return stale.setdefault(job.uid, key(job))

        return first

    keyed = _binds(default_configuration(), monkeypatch, True, 1)
    monkeypatch.setattr(Session, "job_order_key", once)
    res = run_session(_state(1).snapshot(), default_configuration(), SessionOptions(), rng=random.Random(1))
    monkeypatch.undo()
    assert [(b.task.key, b.node) for b in res.binds] != keyed
