"""The one explicit list of actions and plugins by name (no registration by import side effects)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from scheduler.actions.allocate import allocate
from scheduler.actions.backfill import backfill
from scheduler.actions.enqueue import enqueue
from scheduler.actions.preempt import PreemptOptions, preempt
from scheduler.actions.reclaim import reclaim
from scheduler.framework.arguments import Arguments
from scheduler.plugins.binpack import BinpackPlugin
from scheduler.plugins.conformance import ConformancePlugin
from scheduler.plugins.deviceshare import DeviceSharePlugin
from scheduler.plugins.drf import DrfPlugin
from scheduler.plugins.gang import GangPlugin
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

# Parsers of the actions' arguments (`configurations:`), run when the configuration loads so a
# value of the wrong type is refused there, naming it, instead of failing a session.
ACTION_ARGUMENTS: dict[str, Callable[[Arguments], object]] = {"preempt": PreemptOptions.parse}

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
    )
}
