"""Pods of one job that differ from their siblings in one field the shape key reads get their own
placement answers, although the key is memoised per pod template within an allocate run."""

from __future__ import annotations

import random

from scheduler.framework.cycle import run_session
from scheduler.framework.session import SessionOptions
from scheduler.model.cluster import ClusterState
from scheduler.registry import default_configuration
from scheduler.sim.bench import _pod, add_gang, gen_nodes, gen_queues


def test_pods_of_one_job_keep_their_own_selector_and_annotations() -> None:
    state = ClusterState()
    gen_nodes(state, 6, cpu=8, mem_gi=16)
    queue = gen_queues(state, 1)[0]
    pods = [_pod(f"w-{i}", "ns", "job", "1", "1Gi", idx=i) for i in range(6)]
    # the third pod only fits one node; the fourth differs only in an annotation the key reads
    pods[2]["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "node-00004"}
    pods[3]["metadata"]["annotations"]["example.com/flavour"] = "b"
    # the fifth asks for a node that does not exist, so the whole gang must wait
    pods[4]["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "node-00099"}
    add_gang(state, "job", "ns", 0, queue, "Inqueue", pods[:4])
    add_gang(state, "stuck", "ns", 1, queue, "Inqueue", [pods[4], pods[5]])
    res = run_session(state.snapshot(), default_configuration(), SessionOptions(), rng=random.Random(3))
    binds = {b.task.key: b.node for b in res.binds}
    assert set(binds) == {"ns/w-0", "ns/w-1", "ns/w-2", "ns/w-3"}
    assert binds["ns/w-2"] == "node-00004"
