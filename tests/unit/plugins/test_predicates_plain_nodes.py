"""The predicates plugin's shared record of plain nodes (_PlainNodes) follows the session: a node
that fills up, or whose pods are evicted, between two tasks' checks is answered from its new pod
count, as check() answers it node by node."""

from __future__ import annotations

import random
from typing import Any

from scheduler.framework.cycle import close_session, open_session, run_actions
from scheduler.framework.session import SessionOptions
from scheduler.framework.status import Unfit
from scheduler.model.cluster import ClusterState
from scheduler.model.objects import TaskStatus
from scheduler.plugins import predicates
from scheduler.registry import default_configuration
from tests.builders import node, pod, podgroup, queue
from tests.unit.test_session_many import _pending, _session


def _reasons(answers: list) -> list:
    return [r.reason if isinstance(r, Unfit) else r for r in answers]


def test_a_node_filled_between_two_tasks_is_refused_then_freed_again() -> None:
    ssn = _session(nodes=10, pods=6)
    many = ssn._predicate_many["predicates"]
    one = ssn._registered["predicate"]["predicates"]
    nodes = ssn.node_list
    full = nodes[3]
    full.max_task_num = len(full.tasks) + 1  # one more pod fills it
    first, second, third = _pending(ssn)[:3]
    assert many(first, nodes) == [None] * len(nodes)  # builds the shared record: all plain
    ssn.place(first, full, TaskStatus.ALLOCATED)
    got = many(second, nodes)
    assert _reasons(got) == _reasons([one(second, n) for n in nodes])
    assert got[3] is not None and got.count(None) == len(nodes) - 1  # a stale record passes it
    # the pod evicted in the session: its node counts one pod less and is plain again
    ssn.mark_releasing(ssn.own(first))
    assert many(third, nodes) == [None] * len(nodes)
    assert [one(third, n) for n in nodes] == [None] * len(nodes)


def test_the_plain_nodes_kept_between_sessions_are_those_a_walk_finds(monkeypatch: Any) -> None:
    """The record is carried from one session to the next and only the nodes that changed are
    asked again: after every kind of change (a node filling up or emptying through running pods
    and through the session's own binds, cordoned, tainted, replaced), it is what a walk over
    every node finds, and plain_many answers as check() does."""
    kept = [0]
    from_kept = predicates._PlainNodes._from_kept

    def counted(self: Any) -> bool:
        ok = from_kept(self)
        kept[0] += ok
        return ok

    monkeypatch.setattr(predicates._PlainNodes, "_from_kept", counted)
    rng = random.Random(20261127)
    state = ClusterState()
    state.apply_queue(queue("default"))
    for i in range(8):
        state.apply_node(node(f"n{i}", cpu="16", memory="32Gi", pods="3"))
    conf = default_configuration()
    for serial in range(60):
        _change(state, rng, serial)
        ssn = open_session(state.snapshot(), conf, SessionOptions(deterministic=True), random.Random(serial))
        plain = ssn.plugins["predicates"]._plain
        walk = {n for n in ssn.node_list if plain._plain(n)}
        assert plain.current() == walk, serial
        assert plain.by_name == {n.name: n for n in walk}, serial
        task = next(iter(_pending(ssn)), None)
        if task is not None:
            many = ssn._predicate_many["predicates"]
            one = ssn._registered["predicate"]["predicates"]
            assert _reasons(many(task, ssn.node_list)) == _reasons([one(task, n) for n in ssn.node_list])
        run_actions(ssn, {})
        res = close_session(ssn)
        for b in res.binds:
            if rng.random() < 0.8:
                state.assume_bound(b.task.key, b.node, b.annotations)
    assert kept[0] > 40


def _change(state: ClusterState, rng: random.Random, serial: int) -> None:
    name = f"n{rng.randrange(8)}"
    pick = rng.random()
    if pick < 0.3:
        state.apply_pod(pod(f"r{serial}", cpu="1", node_name=name, phase="Running"))
    elif pick < 0.5:
        on = sorted(t.key for t in state.tasks.values() if t.node_name)
        if on:
            ns, pname = rng.choice(on).split("/")
            state.remove_pod(ns, pname)
    elif pick < 0.6:
        obj = node(name, cpu="16", memory="32Gi", pods="3")
        obj["spec"]["unschedulable"] = rng.random() < 0.5
        state.apply_node(obj)
    elif pick < 0.7:
        taints = [{"key": "k", "value": "v", "effect": "NoSchedule"}] if rng.random() < 0.5 else []
        state.apply_node(node(name, cpu="16", memory="32Gi", pods="3", taints=taints))
    elif pick < 0.9:
        size = rng.randint(1, 3)
        state.apply_podgroup(podgroup(f"g{serial}", min_member=1))
        for k in range(size):
            state.apply_pod(pod(f"g{serial}-{k}", cpu="1", group=f"g{serial}"))


def test_a_few_node_ask_answers_as_check_does_node_by_node() -> None:
    """An ask of a few nodes (a placement cache's usual one: the nodes changed since a shape's last
    window) reads them directly rather than through the shared plain record: a full, a cordoned
    and a tainted node among them get check()'s answers, and a node a placement fills is refused
    at the next ask."""
    ssn = _session(nodes=10, pods=6)
    many = ssn._predicate_many["predicates"]
    one = ssn._registered["predicate"]["predicates"]
    nodes = ssn.node_list
    first, second, *others = _pending(ssn)
    for n in (nodes[1], nodes[4]):
        n.max_task_num = len(n.tasks) + 1  # one more pod fills it
    ssn.place(first, nodes[1], TaskStatus.ALLOCATED)
    nodes[2].unschedulable = True
    nodes[3].taints = [{"key": "k", "value": "v", "effect": "NoSchedule"}]
    asks = [nodes[:2], nodes[1:5], [nodes[4], nodes[0]], nodes[2:3], nodes[:8]]
    for task in (second, *others[:2]):
        for few in asks:
            got = many(task, few)
            assert _reasons(got) == _reasons([one(task, n) for n in few])
        if task is second:
            assert _reasons(many(task, [nodes[4]])) == [None]
            ssn.place(second, nodes[4], TaskStatus.ALLOCATED)
    refused = _reasons(many(others[0], nodes[:5]))
    assert refused[0] is None and all(r is not None for r in refused[1:])
    assert refused[1] == refused[4] == "Too many pods"


def test_tasks_with_other_tolerations_do_not_share_a_plain_answer() -> None:
    """Plain tasks share a predicate state per toleration list: a task tolerating the cordon is
    let onto a cordoned node between two that are refused it, whatever the order of the asks."""
    state = ClusterState()
    state.apply_queue(queue("default"))
    state.apply_node(node("n0", cpu="16", memory="32Gi"))
    cordoned = node("n1", cpu="16", memory="32Gi")
    cordoned["spec"]["unschedulable"] = True
    state.apply_node(cordoned)
    tolerant = {"tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]}
    other = {"tolerations": [{"key": "dedicated", "operator": "Exists"}]}
    for name, spec in (("a", None), ("b", tolerant), ("c", None), ("d", other), ("e", tolerant)):
        state.apply_podgroup(podgroup(name, min_member=1))
        state.apply_pod(pod(name, group=name, spec=spec))
    ssn = open_session(state.snapshot(), default_configuration(), SessionOptions(), random.Random(1))
    many = ssn._predicate_many["predicates"]
    tasks = {t.name: t for t in _pending(ssn)}
    got = {name: _reasons(many(tasks[name], ssn.node_list)) for name in "abcde"}
    unschedulable = predicates.UNSCHEDULABLE.reason
    assert got == {
        "a": [None, unschedulable],
        "b": [None, None],
        "c": [None, unschedulable],
        "d": [None, unschedulable],
        "e": [None, None],
    }
