"""The one explicit list of actions and plugins by name (no registration by import side effects)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from scheduler.actions.allocate import allocate
from scheduler.actions.backfill import backfill
from scheduler.actions.enqueue import enqueue
from scheduler.actions.preempt import preempt
from scheduler.actions.reclaim import reclaim
from scheduler.plugins.binpack import BinpackPlugin
from scheduler.plugins.conformance import ConformancePlugin
from scheduler.plugins.deviceshare import DeviceSharePlugin
from scheduler.plugins.drf import DrfPlugin
from scheduler.plugins.gang import GangPlugin
from scheduler.plugins.network_topology_aware import NetworkTopologyAwarePlugin
from scheduler.plugins.nodeorder import NodeOrderPlugin
from scheduler.plugins.overcommit import OvercommitPlugin
from scheduler.plugins.predicates import PredicatesPlugin
from scheduler.plugins.priority import PriorityPlugin
from scheduler.plugins.proportion import ProportionPlugin

if TYPE_CHECKING:
    from scheduler.framework.plugin import Plugin
    from scheduler.framework.session import Session

ACTIONS: dict[str, Callable[[Session], None]] = {
    "enqueue": enqueue,
    "allocate": allocate,
    "backfill": backfill,
    "preempt": preempt,
    "reclaim": reclaim,
}

PLUGINS: dict[str, type[Plugin]] = {
    cls.name: cls
    for cls in (
        PriorityPlugin,
        GangPlugin,
        ConformancePlugin,
        DrfPlugin,
        ProportionPlugin,
        OvercommitPlugin,
        PredicatesPlugin,
        NodeOrderPlugin,
        BinpackPlugin,
        DeviceSharePlugin,
        NetworkTopologyAwarePlugin,
    )
}
