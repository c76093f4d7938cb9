"""The many-node forms of the predicate and node-order points, and allocate's window scan that
asks them, answer exactly what the one-node forms answer: the same verdicts, the same float
scores, the same nodes asked in the same order, and a plugin's failure contained to its node and
recorded as the one-node path records it."""

from __future__ import annotations

import random
from typing import Any

from scheduler.framework.cycle import open_session
from scheduler.framework.fiterrors import FitErrors
from scheduler.framework.placement import (
    PlacementCache,
    allocate_predicate,
    allocate_predicate_many,
    predicate_nodes,
)
from scheduler.framework.session import Session, SessionOptions
from scheduler.framework.status import Unfit
from scheduler.model.cluster import ClusterState
from scheduler.model.node import NodeInfo
from scheduler.model.objects import TaskInfo, TaskStatus
from scheduler.plugins.deviceshare import annotations as ann
from scheduler.registry import parse
from scheduler.sim.devicebench import SESSION_CONF
from scheduler.sim.nodegen import make_nodes, parse_node_spec

WEIGHTED = SESSION_CONF.replace(
    "deviceshare.SchedulePolicy: binpack\n",
    "deviceshare.SchedulePolicy: binpack\n      deviceshare.ScheduleWeight: 10\n",
)


def _session(nodes: int = 40, pods: int = 6, conf: str = WEIGHTED) -> Session:
    """vGPU nodes, some with little CPU left for a 3-CPU pod, and pending one-pod vGPU jobs."""
    state = ClusterState()
    specs = [parse_node_spec(f"{nodes // 2}:cpu=4,memory=32Gi,gpu=2xA100-40GB")]
    specs.append(parse_node_spec(f"{nodes - nodes // 2}:cpu=64,memory=256Gi,gpu=8xA100-40GB"))
    for node in make_nodes(specs):
        state.apply_node(node)
    state.apply_queue(
        {"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}, "status": {"state": "Open"}}
    )
    rng = random.Random(3)
    for j in range(pods):
        name = f"job-{j}"
        meta = {"name": name, "namespace": "ml", "creationTimestamp": float(j)}
        state.apply_podgroup({"kind": "PodGroup", "metadata": meta, "spec": {"minMember": 1, "queue": "default"},
                              "status": {"phase": "Inqueue"}})  # fmt: skip
        limits = {
            ann.VGPU_NUMBER: str(rng.choice((1, 2, 3))),
            ann.VGPU_MEMORY: str(rng.choice((1024, 30000))),
            ann.VGPU_CORES: "10",
        }
        state.apply_pod({
            "kind": "Pod",
            "metadata": {**meta, "uid": f"uid-{name}", "annotations": {"scheduling.k8s.io/group-name": name}},
            "spec": {"schedulerName": "volcano", "containers": [
                {"name": "main", "resources": {"requests": {"cpu": "3"}, "limits": limits}}]},
            "status": {"phase": "Pending"},
        })  # fmt: skip
    return open_session(state.snapshot(), parse(conf), SessionOptions(), rng=random.Random(1))


def _pending(ssn: Session) -> list[TaskInfo]:
    return [t for j in ssn.jobs.values() for t in j.tasks_in(TaskStatus.PENDING)]


def _reasons(answers: list[Any]) -> list[Any]:
    return [r.reason if isinstance(r, Unfit) else r for r in answers]


def _with_a_bug(ssn: Session, point: str, plugin: str, node: str, refuse: str = "") -> None:
    """The plugin's one-node function raises on `node` (and refuses `refuse`); it has no many form."""
    fn = ssn._registered[point][plugin]

    def buggy(task: TaskInfo, n: NodeInfo) -> Any:
        if n.name == node:
            raise RuntimeError("bug on odd input")
        if n.name == refuse:
            return Unfit("refused by the test")
        return fn(task, n)

    for tier in ssn._tiered[point]:
        for i, (name, _) in enumerate(tier):
            if name == plugin:
                tier[i] = (name, buggy)
    ssn._predicate_many.pop(plugin, None) if point == "predicate" else ssn._node_order_many.pop(plugin, None)


def test_predicate_many_answers_what_predicate_answers_node_by_node() -> None:
    ssn = _session()
    nodes = ssn.node_list
    for task in _pending(ssn):
        many = ssn.predicate_many(task, nodes)
        one = [ssn.predicate(task, n) for n in nodes]
        assert _reasons(many) == _reasons(one)
    # the devices refuse some nodes for some pods, and let some through: both branches ran
    assert any(r is not None for r in many) and any(r is None for r in many)


def test_predicate_many_asks_the_later_plugins_only_about_the_nodes_left() -> None:
    """A plugin after the first refusal (here a third one, with no many form, in the last tier)
    answers for the nodes no earlier plugin refused, and the answers are predicate's."""
    ssn = _session()
    nodes = ssn.node_list
    refused_first = {nodes[1].name, nodes[2].name}
    asked_last: list[str] = []
    tier = next(t for t in ssn._tiered["predicate"] if t)
    first_name, first_fn = tier[0]

    def first(task: TaskInfo, n: NodeInfo) -> Any:
        return Unfit("refused first") if n.name in refused_first else first_fn(task, n)

    def last(task: TaskInfo, n: NodeInfo) -> Any:
        asked_last.append(n.name)
        return Unfit("refused last") if n.name == nodes[7].name else None

    tier[0] = (first_name, first)
    ssn._predicate_many.pop(first_name, None)
    ssn._tiered["predicate"][-1].append(("third", last))
    task = _pending(ssn)[0]
    many = _reasons(ssn.predicate_many(task, nodes))
    ends = (None, "refused first", "refused last")
    refused_between = {n.name for n, r in zip(nodes, many, strict=True) if r not in ends}
    assert asked_last and set(asked_last).isdisjoint(refused_first | refused_between)
    assert many == _reasons([ssn.predicate(task, n) for n in nodes])
    assert many[1] == many[2] == "refused first"
    assert many[7] == "refused last" or nodes[7].name in refused_between


def test_a_plugin_failure_in_predicate_many_is_contained_and_recorded_as_node_by_node() -> None:
    answers, errors = [], []
    for many in (True, False):
        ssn = _session()
        _with_a_bug(ssn, "predicate", "predicates", ssn.node_list[3].name, refuse=ssn.node_list[5].name)
        task = _pending(ssn)[0]
        got = (
            ssn.predicate_many(task, ssn.node_list)
            if many
            else [ssn.predicate(task, n) for n in ssn.node_list]
        )
        answers.append(_reasons(got))
        errors.append([str(e) for e in ssn.plugin_errors])
    assert answers[0] == answers[1]
    assert "bug on odd input" in answers[0][3] and answers[0][5] == "refused by the test"
    assert errors[0] == errors[1] and len(errors[0]) == 1


def test_node_order_scores_are_the_same_floats_as_node_by_node() -> None:
    ssn = _session()
    for task in _pending(ssn):
        assert ssn.node_order_scores(task, ssn.node_list) == [
            ssn.node_order_score(task, n) for n in ssn.node_list
        ]
    scores = ssn.node_order_scores(_pending(ssn)[0], ssn.node_list)
    assert len(set(scores)) > 1  # the device score and binpack tell nodes apart


def test_a_plugin_failure_in_node_order_scores_keeps_the_other_plugins_scores() -> None:
    got = []
    for many in (True, False):
        ssn = _session()
        _with_a_bug(ssn, "node_order", "binpack", ssn.node_list[2].name)
        task = _pending(ssn)[0]
        scores = (
            ssn.node_order_scores(task, ssn.node_list)
            if many
            else [ssn.node_order_score(task, n) for n in ssn.node_list]
        )
        got.append((scores, [str(e) for e in ssn.plugin_errors]))
    assert got[0] == got[1]
    assert len(got[0][1]) == 1 and "binpack" in got[0][1][0]


def _asking(check: Any, asked: list[str]) -> Any:
    def counted(task: TaskInfo, node: NodeInfo) -> Any:
        asked.append(node.name)
        return check(task, node)

    return counted


def test_window_scan_asks_the_nodes_a_plain_scan_asks_and_finds_the_same_window() -> None:
    """Cold and warm scans from rotating starts, with refusals (too little CPU on the small nodes,
    cards too small) interleaved: the cache's scan and predicate_nodes agree on the feasible list,
    the errors in order, the next start, and which nodes the predicate was asked about, in order."""
    ssn = _session(nodes=60)
    ssn.options = SessionOptions(minimum_feasible_nodes=5, percentage_nodes_to_find=20)
    plain_asked: list[str] = []
    cache_asked: list[str] = []
    check = allocate_predicate(ssn)
    many = allocate_predicate_many(ssn)

    def counted_many(task: TaskInfo, nodes: list[NodeInfo]) -> list[Any]:
        cache_asked.extend(n.name for n in nodes)
        return many(task, nodes)

    cache = PlacementCache(ssn, check, check_many=counted_many)
    tasks = _pending(ssn)
    refusals = 0
    for rnd in range(3):
        for task in tasks:
            start = ssn.predicate_round_robin
            plain_errors = FitErrors()
            plain_from, cache_from = len(plain_asked), len(cache_asked)
            want = predicate_nodes(ssn, task, ssn.node_list, _asking(check, plain_asked), plain_errors)
            after = ssn.predicate_round_robin
            ssn.predicate_round_robin = start
            cache_errors = FitErrors()
            got = cache._scan_nodes(task, cache._fresh(_values(cache, task), task), cache_errors)
            assert [n.name for n in got] == [n.name for n in want]
            assert list(cache_errors.nodes.items()) == list(plain_errors.nodes.items())
            assert ssn.predicate_round_robin == after
            window, asked = plain_asked[plain_from:], cache_asked[cache_from:]
            if rnd == 0 and task is tasks[0]:
                assert asked == window  # a cold scan asks what the plain scan asks, in its order
            # only nodes inside this scan's window, in scan order
            assert asked == [n for n in window if n in set(asked)]
            refusals += len(plain_errors.nodes)
    assert len(cache_asked) < len(plain_asked)  # warm scans reuse known answers
    assert refusals  # refusals were part of the windows


def _values(cache: PlacementCache, task: TaskInfo) -> Any:
    from scheduler.framework.placement import _NodeValues, _shape_key

    vkey = _shape_key(task)[2:]  # type: ignore[index]
    vals = cache.values.get(vkey)
    if vals is None:
        vals = cache.values[vkey] = _NodeValues(len(cache.ssn.node_changes))
    return vals


def test_a_many_form_that_raises_sends_the_nodes_down_the_one_node_path() -> None:
    ssn = _session()
    task = _pending(ssn)[0]
    want = _reasons([ssn.predicate(task, n) for n in ssn.node_list])
    want_scores = [ssn.node_order_score(task, n) for n in ssn.node_list]

    def broken(task: TaskInfo, nodes: list[NodeInfo]) -> list[Any]:
        raise RuntimeError("bug in the many form")

    ssn._predicate_many["deviceshare"] = broken
    ssn._node_order_many["deviceshare"] = broken
    assert _reasons(ssn.predicate_many(task, ssn.node_list)) == want
    assert ssn.node_order_scores(task, ssn.node_list) == want_scores
    assert not ssn.plugin_errors  # the one-node forms did not fail: nothing to record


def test_nodeorder_scores_a_window_at_once_as_it_scores_node_by_node() -> None:
    """nodeorder's many-node split (what a cold window is scored with) gives per_node's integers,
    under each weight mix, and again after a placement changed a node's usage."""
    mixes = [
        "",
        "      mostrequested.weight: 2\n      leastrequested.weight: 0\n",
        "      balancedresource.weight: 3\n      tainttoleration.weight: 0\n",
        "      leastrequested.weight: 0\n      balancedresource.weight: 0\n",
    ]
    for mix in mixes:
        conf = WEIGHTED.replace("  - name: nodeorder\n", "  - name: nodeorder\n    arguments:\n" + mix)
        batch, plain = _session(conf=conf), _session(conf=conf)
        (b,) = [sp for sp in batch.batch_node_order_splits() or [] if sp.per_nodes is not None]
        (p,) = [sp for sp in plain.batch_node_order_splits() or [] if sp.per_nodes is not None]
        assert b.per_nodes is not None
        seen = set()
        for ssn in (batch, plain):
            task = _pending(ssn)[0]
            ssn.place(task, ssn.node_list[0], TaskStatus.ALLOCATED)
        for task in _pending(batch):
            want = [p.per_node(task, n) for n in plain.node_list]
            assert b.per_nodes(task, batch.node_list) == want
            assert b.per_nodes(task, batch.node_list) == want  # from the memo
            seen.update(want)
        # the weights tell nodes apart, except in the mix where only the taint constant is left
        assert len(seen) > 1 or mix.endswith("balancedresource.weight: 0\n")


def test_changed_nodes_are_forgotten_by_position_in_a_cache_over_part_of_the_nodes() -> None:
    """The change log's entries are converted to positions once and read from any point on: a
    node outside the cache's list (a HyperNode's cache) is left out, and every shape forgets
    exactly the nodes changed since it was last brought up to date, whenever that was."""
    ssn = _session(nodes=12)
    part = ssn.node_list[4:10]
    cache = PlacementCache(ssn, allocate_predicate(ssn), part)
    names = [n.name for n in ssn.node_list]
    log = ssn.node_changes
    log += [names[5], names[0], names[9], names[5]]
    assert cache._changed_at(log, 0) == [1, 5, 1]
    log.append(names[11])
    assert cache._changed_at(log, 4) == []
    log.append(names[6])
    assert cache._changed_at(log, 5) == [2]
    assert cache._changed_at(log, 1) == [5, 1, 2]
    codes = bytearray([1] * len(part))
    cache._forget_changed(log, 2, (), (codes,))
    assert codes == bytearray([1, 0, 0, 1, 1, 0])


def test_one_changed_node_is_forgotten_as_the_general_pass_forgets_it() -> None:
    """A gang's next pod finds one node changed since its shape was last brought up to date: that
    shortcut forgets exactly what the pass over several changes forgets (the same node logged
    twice takes that pass), for a node of the cache's list and for one outside it."""
    ssn = _session(nodes=12)
    part = ssn.node_list[4:10]
    names = [n.name for n in ssn.node_list]
    for changed in (names[6], names[11]):
        got = []
        for log in ([names[5], changed], [names[5], changed, changed]):
            cache = PlacementCache(ssn, allocate_predicate(ssn), part)
            codes, other = bytearray([1] * len(part)), bytearray([2] * len(part))
            known = {names[5]: 1.0, names[6]: 2.0, names[11]: 3.0}
            cache._forget_changed(log, 1, (known, {}), (codes, bytearray(), other))
            got.append((codes, other, known))
        assert got[0] == got[1]
        if changed == names[6]:  # position 2 of the list, in both code arrays
            assert got[0][:2] == (bytearray([1, 1, 0, 1, 1, 1]), bytearray([2, 2, 0, 2, 2, 2]))
    assert got[0][2] == {names[5]: 1.0, names[6]: 2.0}  # the last change: outside the list
    assert got[0][0] == bytearray([1] * len(part))


def test_a_window_where_every_node_fits_is_a_run_of_the_ring() -> None:
    """A scan window without refusals hands out a ring slice and its positions as a run (no
    list); it is the window the listing scan gives, from every start, wrapping ones included."""
    from scheduler.framework import nodewindow
    from scheduler.framework.placement import _Run

    ssn = _session(nodes=40)
    ssn.options = SessionOptions(minimum_feasible_nodes=5, percentage_nodes_to_find=20)
    cache = PlacementCache(ssn, allocate_predicate(ssn), check_many=allocate_predicate_many(ssn))
    runs = 0
    for task in _pending(ssn):
        vals = _values(cache, task)
        for start in (0, 17, 35, 39):
            ssn.predicate_round_robin = start
            errors = FitErrors()
            got, at = cache._scan_window(task, cache._fresh(vals, task), errors)
            pos = len(got) + len(errors.nodes)
            fits, listed, refused = nodewindow.window_nodes(cache._codes(vals), start, pos, cache.nodes)
            assert got == fits and [at[k] for k in range(len(at))] == listed
            assert ssn.predicate_round_robin == (start + pos) % len(cache.nodes)
            if not refused:
                runs += 1
                assert isinstance(at, _Run) and (at[0], at[-1]) == (listed[0], listed[-1])
    assert runs
