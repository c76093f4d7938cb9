"""predicates: kube-scheduler's filter plugins as Volcano's predicates plugin runs them (spec 7.6).

Checks, in order, each with kube-scheduler's message and resolvability (resolvable = evicting
pods could cure it, so preempt and reclaim keep the node):

1. pod count: the node's pods (minus those evicted in the session) reach allocatable `pods`:
   "Too many pods", resolvable;
2. NodeUnschedulable, always on: a cordoned node, unless the pod tolerates the
   `node.kubernetes.io/unschedulable:NoSchedule` taint: "node(s) were unschedulable", unresolvable;
3. NodeName: spec.nodeName names another node: "node(s) didn't match the requested node name",
   unresolvable;
4. NodeAffinity (`predicate.NodeAffinityEnable`): nodeSelector + required node affinity:
   "node(s) didn't match Pod's node affinity/selector", unresolvable;
5. NodePorts (`predicate.NodePortsEnable`): "node(s) didn't have free ports for the requested pod
   ports", resolvable;
6. TaintToleration (`predicate.TaintTolerationEnable`): the first untolerated NoSchedule/NoExecute
   taint: "node(s) had untolerated taint {key: value}", unresolvable;
7. InterPodAffinity (`predicate.PodAffinityEnable`): see `k8s.interpod` for its three messages;
8. PodTopologySpread (`predicate.PodTopologySpreadEnable`): see `k8s.spread`.

Volcano gathers every failing status of a node and stops at the first unresolvable one; a node's
answer here is therefore its first unresolvable failure if it has one (so that preempt never
keeps a node that a selector or taint rules out just because the pod count failed first), else
its first resolvable failure.

A task's inter-pod affinity and spread counts are computed once per attempt (its pre-predicate,
Volcano's PreFilter cycle state): pods evicted for it are not seen to leave, so preemption never
cures an affinity or spread conflict, except in preempt's topology-aware dry run
(`Session.victim_dry_run`), whose removals reach the inter-pod affinity counts when this plugin's
`enablePreemptable` or `enabledAllocatable` switch is on (Volcano's SimulateRemoveTask).

Accepted for compatibility and validated as booleans, without effect because the model has no
volumes, CSI drivers or resource claims, and caches nothing across nodes:
`predicate.NodeVolumeLimitsEnable`, `predicate.VolumeZoneEnable`, `predicate.VolumeBindingEnable`,
`predicate.DynamicResourceAllocationEnable`, `predicate.CacheEnable`, and the pre-deviceshare keys
`predicate.GPUSharingEnable`, `predicate.GPUNumberEnable`, `predicate.ProportionalEnable` (GPU
sharing is the deviceshare plugin's job). Resource fit is allocate's own check (spec 6.2).

Cost: everything that depends only on the task (compiled selectors, tolerations, and the
inter-pod affinity and spread counts, which reflect the session's placements so far) is computed
once per task in the pre-predicate and then kept current by the session's allocate/deallocate
events, so the per-node check is a few attribute reads for a pod without affinity, spread or
ports. Such a plain pod's state reads only its tolerations: the tasks with one toleration list
share it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from scheduler.framework.arguments import Arguments
from scheduler.framework.nodewindow_impl import window_impl
from scheduler.framework.plugin import Plugin
from scheduler.framework.session import Session
from scheduler.framework.status import Unfit
from scheduler.model.node import NodeInfo
from scheduler.model.objects import PodInfo, TaskInfo
from scheduler.plugins.k8s.interpod import InterPodState, pod_terms
from scheduler.plugins.k8s.nodeaffinity import RequiredNodeAffinity, required_node_affinity
from scheduler.plugins.k8s.podindex import SessionPods, session_pods
from scheduler.plugins.k8s.ports import PORTS_REASON, ports_fit
from scheduler.plugins.k8s.spread import DO_NOT_SCHEDULE, SpreadState, constraints_of
from scheduler.plugins.k8s.taints import (
    find_untolerated_taint,
    tolerates_unschedulable,
    untolerated_taint_reason,
)

TOO_MANY_PODS = Unfit("Too many pods", resolvable=True)
UNSCHEDULABLE = Unfit("node(s) were unschedulable", resolvable=False)
NODE_NAME = Unfit("node(s) didn't match the requested node name", resolvable=False)
NODE_AFFINITY = Unfit("node(s) didn't match Pod's node affinity/selector", resolvable=False)
NODE_PORTS = Unfit(PORTS_REASON, resolvable=True)

NO_OP_SWITCHES = {
    "predicate.NodeVolumeLimitsEnable": True,
    "predicate.VolumeZoneEnable": True,
    "predicate.VolumeBindingEnable": True,
    "predicate.DynamicResourceAllocationEnable": False,
    "predicate.CacheEnable": False,
    "predicate.GPUSharingEnable": False,
    "predicate.GPUNumberEnable": False,
    "predicate.ProportionalEnable": False,
}


class _SpecMemo:
    """What the filters read from a pod's spec alone, computed once per session for the pods of
    one template: conversion hands them the same node selector, affinity and toleration objects
    (model/convert.py `_interned`), so the object itself is the key, kept alive beside its answer
    so that its id cannot be reused while cached."""

    __slots__ = ("_affinity", "_tolerations")

    def __init__(self) -> None:
        self._tolerations: dict[int, tuple[Any, bool]] = {}
        self._affinity: dict[tuple[int, int], tuple[Any, Any, RequiredNodeAffinity | None]] = {}

    def tolerates_unschedulable(self, tolerations: list[dict[str, Any]]) -> bool:
        if not tolerations:
            return False
        hit = self._tolerations.get(id(tolerations))
        if hit is None or hit[0] is not tolerations:
            hit = self._tolerations[id(tolerations)] = (tolerations, tolerates_unschedulable(tolerations))
        return hit[1]

    def node_affinity(
        self, selector: dict[str, str], affinity: dict[str, Any]
    ) -> RequiredNodeAffinity | None:
        """The pod's nodeSelector and required node affinity; None when it has neither."""
        if not selector and not affinity:
            return None
        key = (id(selector), id(affinity))
        hit = self._affinity.get(key)
        if hit is None or hit[0] is not selector or hit[1] is not affinity:
            req = required_node_affinity(selector, affinity)
            hit = self._affinity[key] = (selector, affinity, None if req.empty else req)
        return hit[2]


class _TaskState:
    """What the filters need of one task, computed once."""

    __slots__ = (
        "affinity",
        "interpod",
        "node_name",
        "plain",
        "ports",
        "spread",
        "taints",
        "tolerates_unschedulable",
    )

    def __init__(self, plugin: PredicatesPlugin, sp: SessionPods, task: TaskInfo, memo: _SpecMemo) -> None:
        pod: PodInfo = task.pod
        self.node_name = pod.node_name
        self.tolerates_unschedulable = memo.tolerates_unschedulable(pod.tolerations)
        self.taints = plugin.taints
        self.affinity: RequiredNodeAffinity | None = None
        if plugin.node_affinity:
            self.affinity = memo.node_affinity(pod.node_selector, pod.affinity)
        self.ports = list(pod.host_ports) if plugin.node_ports else []
        self.interpod: InterPodState | None = None
        if plugin.pod_affinity:
            terms = pod_terms(sp, pod)
            if InterPodState.needed(sp, terms):
                self.interpod = InterPodState(sp, pod, terms)
        self.spread: SpreadState | None = None
        if plugin.topology_spread and pod.topology_spread:
            cs = constraints_of(pod, DO_NOT_SCHEDULE)
            if cs:
                self.spread = SpreadState(sp, pod, cs)
        # only a full node, an unschedulable one or an untolerated taint can refuse this task
        self.plain = not (
            self.node_name
            or self.affinity is not None
            or self.ports
            or self.interpod is not None
            or self.spread is not None
        )


# A plain task's ask of at most this many nodes reads them directly (plain_many) instead of
# bringing the shared plain set up to date with the change log (_PlainNodes.current)
_FEW_NODES = 8

# Session.carry's name for the plain nodes kept from one session to the next
CARRY_PLAIN = "predicates/plain"


class _PlainKept:
    """The plain nodes as a session closed, for the next one: what it found plain (by name and
    by object), over which node list (its name index), and the names whose entries may be out of
    date (changed since they were asked). Handed over, not copied: the first session to take
    them owns them (`take`), a later one finds nothing to take."""

    __slots__ = ("by_name", "changed", "index", "objects", "taints", "total")

    def __init__(
        self,
        by_name: dict[str, NodeInfo] | None,
        objects: set[NodeInfo],
        index: dict[str, int],
        total: int,
        taints: bool,
        changed: set[str],
    ) -> None:
        self.by_name = by_name  # None once taken
        self.objects = objects
        self.index = index
        self.total = total
        self.taints = taints
        self.changed = changed

    def take(self) -> tuple[dict[str, NodeInfo], set[NodeInfo]] | None:
        by_name, self.by_name = self.by_name, None
        return None if by_name is None else (by_name, self.objects)


class _PlainNodes:
    """The session's nodes a plain task passes without check() (see plain_many): neither full nor
    cordoned nor, with the taint check on, tainted. The condition reads nothing of the task, so
    every task and shape shares one answer, kept up to date from the session's change log: a
    node's pod count (its tasks, less those evicted in the session) changes only through the
    placement primitives, which log the node; cordons and taints do not change in a session. A
    cold window of ~400 nodes asked this per shape, 4 attribute reads a node.

    Between sessions the answer is kept too (see `carry`): a node whose view is handed out again
    shows the same cluster node (its pods, cordon, taints and capacity), so only the nodes the
    snapshot names as changed, and those changed since they were last asked, are asked again; a
    walk over every node cost ~3 ms a session at 5,000 nodes."""

    __slots__ = ("by_name", "flags", "flags_seq", "objects", "seq", "sp", "ssn", "taints")

    def __init__(self, ssn: Session, sp: SessionPods, taints: bool) -> None:
        self.ssn = ssn
        self.sp = sp
        self.taints = taints
        # the node objects found plain (by identity: asking reads nothing of a node), and the
        # same by name, so that a node's entry goes when it changes whatever object it was
        self.objects: set[NodeInfo] = set()
        self.by_name: dict[str, NodeInfo] = {}
        self.seq = -1  # the change log's length they are up to date with (-1: not built)
        # the same answer by position in the session's node list (1: plain), for the asks by
        # position (see at), and the change log's length it is up to date with (-1: not built)
        self.flags = bytearray()
        self.flags_seq = -1

    def _plain(self, n: NodeInfo) -> bool:
        return bool(self._plain_ones((n,)))

    def _plain_ones(self, nodes: Iterable[NodeInfo]) -> dict[str, NodeInfo]:
        """The plain ones of `nodes`, by name: read in one loop (a call or two per node, the pod
        count's among them, were most of a session's walk of its 1,000 nodes)."""
        evicted = self.sp.evicted_count  # SessionPods.pod_count's subtrahend
        taints = self.taints
        out: dict[str, NodeInfo] = {}
        for n in nodes:
            cap = n.max_task_num
            if (
                (cap and len(n.tasks) - evicted.get(n.name, 0) >= cap)
                or n.unschedulable
                or (taints and n.taints)
            ):
                continue
            out[n.name] = n
        return out

    def current(self) -> set[NodeInfo]:
        """The plain node objects, up to date with the change log."""
        log = self.ssn.node_changes
        if self.seq < 0:
            if not self._from_kept():
                self.by_name = self._plain_ones(self.ssn.node_list)
                self.objects = set(self.by_name.values())
        elif self.seq != len(log):
            self._redo(set(log[self.seq :]))
        self.seq = len(log)
        return self.objects

    def _redo(self, names: set[str]) -> None:
        """Ask the nodes `names` again (their entries may be out of date)."""
        nodes, by_name, objects = self.ssn.nodes, self.by_name, self.objects
        for name in names:
            old = by_name.pop(name, None)
            if old is not None:
                objects.discard(old)
        found = self._plain_ones(n for n in map(nodes.get, names) if n is not None)
        by_name.update(found)
        objects.update(found.values())

    def at(self, at: list[int]) -> list[int]:
        """The places in `at` (positions in the session's node list) of the nodes that are not
        plain, read from the flags by position: no node read, no hash of a node object. The
        flags follow the change log on their own, node by node (bringing the record by name up
        to date after each placement cost ~20 k instructions an ask); they are built from it."""
        log = self.ssn.node_changes
        flags = self.flags
        if self.flags_seq < 0 or len(flags) != len(self.ssn.node_list):
            objects = self.current()
            flags = self.flags = bytearray(map(objects.__contains__, self.ssn.node_list))
        elif self.flags_seq != len(log):
            self._redo_flags(log, self.flags_seq)
        self.flags_seq = len(log)
        return window_impl.zeros_at(flags, at)

    def read(self, at: list[int]) -> list[int]:
        """at() read from the nodes themselves, as _plain_ones reads them, without bringing the
        flags up to date: cheaper for the few nodes of a placement cache's usual ask."""
        evicted = self.sp.evicted_count
        taints = self.taints
        nodes = self.ssn.node_list
        out: list[int] = []
        for k, i in enumerate(at):
            n = nodes[i]
            cap = n.max_task_num
            if (
                (cap and len(n.tasks) - evicted.get(n.name, 0) >= cap)
                or n.unschedulable
                or (taints and n.taints)
            ):
                out.append(k)
        return out

    def _redo_flags(self, log: list[str], seq: int) -> None:
        """Ask the nodes the log names from `seq` on again, into the flags (as _plain_ones asks)."""
        ssn = self.ssn
        index, nodes, flags = ssn.node_index(), ssn.node_list, self.flags
        evicted = self.sp.evicted_count
        taints = self.taints
        for name in log[seq:]:
            i = index.get(name)
            if i is None:
                continue
            n = nodes[i]
            cap = n.max_task_num
            flags[i] = not (
                (cap and len(n.tasks) - evicted.get(n.name, 0) >= cap)
                or n.unschedulable
                or (taints and n.taints)
            )

    def _kept(self) -> tuple[_PlainKept, set[str]] | None:
        """The previous session's answer, when it kept one over the same nodes in the same places
        and the snapshot knows which of them changed since; with the names to ask again: those,
        the ones changed since that session asked them, and the ones this session changed so far."""
        ssn = self.ssn
        got = ssn.carried(CARRY_PLAIN)
        kept = got[2] if got is not None else None
        at = ssn.node_changed_at()
        nodes = ssn.node_list
        if (
            not isinstance(kept, _PlainKept)
            or kept.by_name is None
            or at is None
            or kept.taints != self.taints
            or kept.total != len(nodes)
            or kept.index is not ssn.node_index()
        ):
            return None
        return kept, {nodes[i].name for i in at} | kept.changed | set(ssn.node_changes)

    def _from_kept(self) -> bool:
        """Start from the previous session's answer (see _kept), taken over: no copy."""
        found = self._kept()
        taken = found[0].take() if found is not None else None
        if found is None or taken is None:
            return False
        self.by_name, self.objects = taken
        self._redo(found[1])
        return True

    def carry(self) -> None:
        """Keep the answer for the next session, which takes it over: this session's record is
        emptied (were it asked again, it would be walked afresh). A session that never asked hands
        the previous session's answer on, with the names it would have asked added."""
        ssn = self.ssn
        if self.seq < 0:
            found = self._kept()
            if found is None:
                return
            kept, redo = found
            by_name: dict[str, NodeInfo] | None = kept.by_name
            objects, changed = kept.objects, redo
            kept.by_name = None  # handed on: the new record owns it
        else:
            by_name, objects = self.by_name, self.objects
            # the whole log, not only what came after the last ask: a node the session changed
            # is handed out anew next time anyway, and its entry shows the session's own state
            changed = set(ssn.node_changes)
            self.by_name, self.objects, self.seq = {}, set(), -1
        self.flags, self.flags_seq = bytearray(), -1
        ssn.carry(
            CARRY_PLAIN,
            _PlainKept(by_name, objects, ssn.node_index(), len(ssn.node_list), self.taints, changed),
        )


class PredicatesPlugin(Plugin):
    name = "predicates"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.node_affinity = arguments.get_bool("predicate.NodeAffinityEnable", True)
        self.node_ports = arguments.get_bool("predicate.NodePortsEnable", True)
        self.taints = arguments.get_bool("predicate.TaintTolerationEnable", True)
        self.pod_affinity = arguments.get_bool("predicate.PodAffinityEnable", True)
        self.topology_spread = arguments.get_bool("predicate.PodTopologySpreadEnable", True)
        self._plain: _PlainNodes | None = None
        for key, default in NO_OP_SWITCHES.items():
            arguments.get_bool(key, default)  # validated, then ignored (see the module docstring)

    def on_session_open(self, ssn: Session) -> None:
        sp = session_pods(ssn)
        # The state of the task being scheduled, and that task's uid; a new task replaces them.
        current: list[_TaskState | None] = [None]
        owner = [""]
        memo = _SpecMemo()
        # tolerations' id -> (those tolerations, the state of a plain task with them), see prepare
        plain_states: dict[int, tuple[Any, _TaskState]] = {}
        # A task's affinity and spread counts are those of its pre-predicate: evictions made for
        # it are not seen (Volcano's cycle state), except by the inter-pod affinity counts in
        # preempt's topology-aware dry run, which Volcano replays into this plugin only when its
        # preemptable or allocatable switch is on (SimulateAddTask/SimulateRemoveTask).
        follows_dry_run = ssn.follows_dry_run(self.name)

        def follow(pod: PodInfo, node_name: str, delta: int) -> None:
            st = current[0]
            if st is not None and st.interpod is not None and ssn.victim_dry_run and follows_dry_run:
                st.interpod.update(pod, node_name, delta)

        sp.listeners.append(follow)

        def prepare(task: TaskInfo) -> _TaskState:
            pod = task.pod
            if not (
                pod.node_name or pod.node_selector or pod.affinity or pod.host_ports or pod.topology_spread
            ) and not (self.pod_affinity and sp.has_required_anti()):
                # A pod without node name, selector, affinity, ports or spread, while no counted pod
                # has required anti-affinity, gets a plain state that reads only its tolerations:
                # one per toleration list, shared by the tasks that have it (built per task, it was
                # a tenth of a one-node ask). Never changed: only an inter-pod state is updated.
                tolerations = pod.tolerations
                key = id(tolerations) if tolerations else 0
                hit = plain_states.get(key)
                if hit is None or (key and hit[0] is not tolerations):
                    hit = plain_states[key] = (tolerations, _TaskState(self, sp, task, memo))
                st = hit[1]
            else:
                st = _TaskState(self, sp, task, memo)
            current[0] = st
            owner[0] = task.uid
            return st

        def pre_predicate(task: TaskInfo) -> Unfit | None:
            # The task's state is built on its first node check, which placement caches often
            # answer without asking; the actions move no pod between a task's pre-predicate and
            # its first check, so a state built later is the one built here would have been.
            current[0] = None
            return None

        def predicate(task: TaskInfo, node: NodeInfo) -> Unfit | None:
            st = current[0]
            if st is None or owner[0] != task.uid:
                st = prepare(task)
            return check(st, task, node)

        def check(st: _TaskState, task: TaskInfo, node: NodeInfo) -> Unfit | None:
            resolvable: Unfit | None = None
            if node.max_task_num and sp.pod_count(node.name, len(node.tasks)) >= node.max_task_num:
                resolvable = TOO_MANY_PODS
            if node.unschedulable and not st.tolerates_unschedulable:
                return UNSCHEDULABLE
            if st.node_name and st.node_name != node.name:
                return NODE_NAME
            if st.affinity is not None and not st.affinity.matches(node.name, node.labels):
                return NODE_AFFINITY
            if (
                st.ports
                and resolvable is None
                and not ports_fit(st.ports, node.used_ports, sp.evicted_ports.get(node.name))
            ):
                resolvable = NODE_PORTS
            if st.taints and node.taints:
                taint = find_untolerated_taint(node.taints, task.pod.tolerations)
                if taint is not None:
                    return Unfit(untolerated_taint_reason(taint), resolvable=False)
            for extra in (st.interpod, st.spread):
                if extra is not None:
                    r = extra.check(node.labels)
                    if r is not None:
                        if not r.resolvable:
                            return r
                        if resolvable is None:
                            resolvable = r
            return resolvable

        def predicate_many(task: TaskInfo, nodes: list[NodeInfo]) -> list[Unfit | None]:
            st = current[0]
            if st is None or owner[0] != task.uid:
                st = prepare(task)
            if not st.plain:
                return [check(st, task, n) for n in nodes]
            if len(nodes) <= _FEW_NODES:
                # a placement cache's usual ask (the few nodes changed since the shape's last
                # window): read directly, cheaper than bringing the plain set up to date
                return plain_many(st, task, nodes)
            if plain.current().issuperset(nodes):
                # the usual case: every node a known plain one, none of them read (once per ask
                # of a placement cache)
                return [None] * len(nodes)
            return plain_many(st, task, nodes)

        def predicate_at(task: TaskInfo, at: list[int]) -> list[int] | None:
            # predicate_many by node position (Session.add_predicate_fn's `at`): a plain task's
            # places of the nodes that are not plain, whose answers check() gives; None (the
            # list form answers) for any other task
            st = current[0]
            if st is None or owner[0] != task.uid:
                st = prepare(task)
            if not st.plain:
                return None
            # the few nodes of a placement cache's usual ask are read directly (as plain_many
            # reads them), cheaper than bringing the flags up to date
            return plain.read(at) if len(at) <= _FEW_NODES else plain.at(at)

        plain = self._plain = _PlainNodes(ssn, sp, self.taints)

        def plain_many(st: _TaskState, task: TaskInfo, nodes: list[NodeInfo]) -> list[Unfit | None]:
            # A task without node name, affinity, ports, inter-pod or spread terms can only be
            # refused by a full node, an unschedulable one or an untolerated taint: a node with
            # none of these passes without check()'s call, the others take check() itself.
            # (predicate_many has answered when every node of a longer list is a known plain one.)
            out: list[Unfit | None] = [None] * len(nodes)
            taints = st.taints
            # without evictions in the session a node's pod count is its task count (pod_count)
            count = sp.pod_count if sp.evicted_count else None
            for i, n in enumerate(nodes):
                cap = n.max_task_num
                if (
                    (cap and (len(n.tasks) if count is None else count(n.name, len(n.tasks))) >= cap)
                    or n.unschedulable
                    or (taints and n.taints)
                ):
                    out[i] = check(st, task, n)
            return out

        ssn.add_pre_predicate_fn(self.name, pre_predicate)
        ssn.add_predicate_fn(self.name, predicate, predicate_many, predicate_at)

    def on_session_close(self, ssn: Session) -> None:
        plain = self._plain
        if plain is not None and not ssn.plugin_errors:
            plain.carry()
