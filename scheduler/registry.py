"""The one explicit list of actions and plugins by name (no registration by import side effects).

It sits above the framework: it imports every action and plugin, and hands them to the configuration
parser (`scheduler.conf.parse_with`), which resolves each configured name to its implementation. The
framework then runs what the configuration names without importing this module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from scheduler.actions.allocate import allocate
from scheduler.actions.backfill import backfill
from scheduler.actions.enqueue import enqueue
from scheduler.actions.gangevict import GangEvictOptions
from scheduler.actions.gangpreempt import gangpreempt
from scheduler.actions.gangreclaim import gangreclaim
from scheduler.actions.preempt import PreemptOptions, preempt
from scheduler.actions.reclaim import reclaim
from scheduler.actions.shuffle import shuffle
from scheduler.conf import DEFAULT_CONF, Catalogue, ConfigError, SchedulerConfiguration, parse_with
from scheduler.plugins.binpack import BinpackPlugin
from scheduler.plugins.capacity import CapacityPlugin
from scheduler.plugins.conformance import ConformancePlugin
from scheduler.plugins.deviceshare import DeviceSharePlugin
from scheduler.plugins.drf import DrfPlugin
from scheduler.plugins.gang import GangPlugin
from scheduler.plugins.network_topology_aware import NetworkTopologyAwarePlugin
from scheduler.plugins.nodeorder import NodeOrderPlugin
from scheduler.plugins.overcommit import OvercommitPlugin
from scheduler.plugins.pdb import PdbPlugin
from scheduler.plugins.predicates import PredicatesPlugin
from scheduler.plugins.priority import PriorityPlugin
from scheduler.plugins.proportion import ProportionPlugin
from scheduler.plugins.resourcequota import ResourceQuotaPlugin
from scheduler.plugins.sla import SlaPlugin

if TYPE_CHECKING:
    from scheduler.framework.plugin import Plugin
    from scheduler.framework.session import Session

ACTIONS: dict[str, Callable[[Session], None]] = {
    "enqueue": enqueue,
    "allocate": allocate,
    "backfill": backfill,
    "preempt": preempt,
    "reclaim": reclaim,
    "gangpreempt": gangpreempt,
    "gangreclaim": gangreclaim,
    "shuffle": shuffle,
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
        CapacityPlugin,
        SlaPlugin,
        ResourceQuotaPlugin,
        PdbPlugin,
    )
}

CATALOGUE = Catalogue(
    actions=ACTIONS,
    plugins=PLUGINS,
    action_arguments={
        "preempt": PreemptOptions.parse,
        "gangpreempt": GangEvictOptions.parse,
        "gangreclaim": GangEvictOptions.parse,
    },
)


def parse(text: str, source: str = "<config>") -> SchedulerConfiguration:
    """Parse and validate a `volcano-scheduler.conf` against this registry."""
    return parse_with(CATALOGUE, text, source)


def default_configuration() -> SchedulerConfiguration:
    return parse(DEFAULT_CONF, "<built-in default>")


def load_file(path: str) -> SchedulerConfiguration:
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    return parse(text, path)
