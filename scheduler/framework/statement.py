"""A transaction over the session: allocate / pipeline / evict, then commit or discard.

Operations take effect in the session at once (later decisions see them); `discard` undoes them in
reverse order, `commit` makes them real in order (binds and evictions handed to the session's
decisions). This is what makes a gang all-or-nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.framework.session import Session
from scheduler.model.node import NodeInfo
from scheduler.model.objects import TaskInfo, TaskStatus

EVICT = "evict"
PIPELINE = "pipeline"
ALLOCATE = "allocate"
# the members themselves: a member looked up on TaskStatus goes through EnumType's __getattr__
# hook (~900 instructions), and these are asked per placement
_ALLOCATED, _PIPELINED = TaskStatus.ALLOCATED, TaskStatus.PIPELINED


@dataclass(slots=True)
class Operation:
    kind: str
    task: TaskInfo
    reason: str = ""
    prior_status: TaskStatus = TaskStatus.PENDING


class Statement:
    __slots__ = ("operations", "ssn")

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.operations: list[Operation] = []

    def evict(self, task: TaskInfo, reason: str) -> None:
        task, prior = self.ssn.mark_releasing(task)
        self.operations.append(Operation(EVICT, task, reason, prior))

    def pipeline(self, task: TaskInfo, node: NodeInfo) -> None:
        task = self.ssn.place(task, node, _PIPELINED)
        self.operations.append(Operation(PIPELINE, task))

    def allocate(self, task: TaskInfo, node: NodeInfo) -> None:
        """Raises AllocateError (nothing changed) when a device handler refuses the node."""
        task = self.ssn.place(task, node, _ALLOCATED)
        self.operations.append(Operation(ALLOCATE, task))

    def discard(self) -> None:
        for op in reversed(self.operations):
            if op.kind == EVICT:
                self.ssn.unmark_releasing(op.task, op.prior_status)
            else:
                self.ssn.unplace(op.task)
        self.operations.clear()

    def commit(self) -> None:
        ops = self.operations
        if len(ops) == 1 and ops[0].kind == ALLOCATE:
            # a one-pod job's statement (most of a backlog of small jobs): its bind, without the
            # passes that look for evictions
            self.ssn.dispatch(ops[0].task)
            ops.clear()
            return
        for reason in {op.reason for op in self.operations if op.kind == EVICT}:
            self.ssn.eviction_transactions[reason] += 1
        for op in self.operations:
            if op.kind == EVICT:
                self.ssn.evict_committed(op.task, op.reason)
            elif op.kind == ALLOCATE:
                self.ssn.dispatch(op.task)
            # a pipelined task stays Pipelined for this session only: nothing external happens
        self.operations.clear()

    def has_evictions(self) -> bool:
        return any(op.kind == EVICT for op in self.operations)
