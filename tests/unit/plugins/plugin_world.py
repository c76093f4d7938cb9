"""A tiny cluster builder for plugin tests: nodes, pods and a session with one tier of plugins."""

from __future__ import annotations

from typing import Any

from scheduler.framework.cycle import open_session
from scheduler.framework.session import Session
from scheduler.model.job import JobInfo
from scheduler.model.node import NodeInfo
from scheduler.model.objects import PodInfo, QueueInfo, TaskInfo, TaskStatus
from scheduler.model.resources import Resource
from scheduler.model.snapshot import Snapshot
from scheduler.registry import parse

GI = 2**30


class World:
    def __init__(self) -> None:
        self.nodes: dict[str, NodeInfo] = {}
        self.jobs: dict[str, JobInfo] = {}
        self.namespaces: dict[str, dict[str, str]] = {}

    def node(
        self,
        name: str,
        cpu: float = 4,
        mem_gi: float = 8,
        pods: int = 110,
        labels: dict | None = None,
        taints: list | None = None,
        unschedulable: bool = False,
        scalars: dict | None = None,
    ) -> NodeInfo:
        alloc = Resource(cpu * 1000, mem_gi * GI, scalars, pods=pods)
        n = NodeInfo(
            name,
            alloc,
            labels={"kubernetes.io/hostname": name, **(labels or {})},
            taints=taints,
            unschedulable=unschedulable,
        )
        self.nodes[name] = n
        return n

    def pod(
        self,
        name: str,
        ns: str = "ns",
        on: str = "",
        cpu: float = 1,
        mem_gi: float = 1,
        status: TaskStatus | None = None,
        scalars: dict | None = None,
        **fields: Any,
    ) -> TaskInfo:
        pod = PodInfo(uid=f"{ns}-{name}", name=name, namespace=ns, **fields)
        req = Resource(cpu * 1000, mem_gi * GI, scalars)
        st = status or (TaskStatus.RUNNING if on else TaskStatus.PENDING)
        job = self.jobs.setdefault(ns, JobInfo(ns, ns, ns, queue="default", min_available=1))
        task = TaskInfo(pod, job.uid, req, req.clone(), st)
        task.node_name = on
        job.add_task(task)
        if on:
            self.nodes[on].add_task(task)
        return task

    def session(self, conf: str) -> Session:
        snap = Snapshot(
            nodes=self.nodes,
            jobs=self.jobs,
            queues={"default": QueueInfo("default", 1)},
            namespaces=self.namespaces,
            has_required_anti_affinity=True,
        )
        return open_session(snap, parse(conf))


def tier(plugin: str, arguments: str = "") -> str:
    text = f'actions: "allocate"\ntiers:\n- plugins:\n  - name: {plugin}\n'
    if arguments:
        text += "    arguments:\n" + "".join(f"      {line}\n" for line in arguments.strip().splitlines())
    return text
