"""The `volcano-scheduler.conf` format: parse, defaults and validation.

Volcano's per-point switches are tri-state (absent = true) and spelled inconsistently
(`enableJobOrder` but `enabledOverused`); we accept exactly its spellings and turn them into a set
of disabled extension points per plugin. Validation is strict where Volcano is lax in ways that hurt
operators: a wrong type or an unknown key is an error naming the field, the value and what is
allowed; an unknown plugin name is an error with the closest known name, except for plugins Volcano
has and we do not implement, which load with a warning so existing configurations keep working.

This module knows the format, not the plugins: `parse_with` is handed the table of actions and plugin
classes (the registry, one layer up, in `scheduler.registry`, passes its own) and resolves every name
to its implementation, so the framework runs a configuration without importing the registry.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import yaml

from scheduler.framework.arguments import ArgumentError, Arguments

# YAML switch -> extension points it governs (spec 1.1).
SWITCHES: dict[str, tuple[str, ...]] = {
    "enableJobOrder": ("job_order",),
    "enableJobReady": ("job_ready",),
    "enableJobPipelined": ("job_pipelined",),
    "enableTaskOrder": ("task_order",),
    "enablePreemptable": ("preemptable",),
    "enableReclaimable": ("reclaimable",),
    "enablePreemptive": ("preemptive",),
    "enableQueueOrder": ("queue_order",),
    "enablePredicate": ("predicate", "pre_predicate"),
    "enableBestNode": ("best_node",),
    "enableNodeOrder": ("node_order", "batch_node_order"),
    "enableTargetJob": ("target_job",),
    "enableReservedNodes": ("reserved_nodes",),
    "enableJobEnqueued": ("job_enqueueable", "job_enqueued"),
    "enabledVictim": ("victim_tasks",),
    "enableJobStarving": ("job_starving",),
    "enabledOverused": ("overused",),
    "enabledAllocatable": ("allocatable",),
    "enabledHyperNodeOrder": ("hyper_node_order",),
    "enabledSubJobReady": ("sub_job_ready",),
    "enabledSubJobPipelined": ("sub_job_pipelined",),
    "enabledSubJobOrder": ("sub_job_order",),
    "enabledHyperNodeGradient": ("hyper_node_gradient",),
}
# Switches that are NOT defaulted to true (absent = off).
OFF_BY_DEFAULT = {"enableHierarchy": "hierarchy", "enabledClusterOrder": "cluster_order"}

# every action Volcano registers (pkg/scheduler/actions/factory.go)
KNOWN_ACTIONS = (
    "enqueue",
    "allocate",
    "backfill",
    "preempt",
    "reclaim",
    "gangpreempt",
    "gangreclaim",
    "shuffle",
)

# Every plugin Volcano registers (pkg/scheduler/plugins/factory.go) loads: those we do not
# implement load with a warning and do nothing, so a configuration Volcano accepts is not refused.
VOLCANO_ONLY_PLUGINS = (
    "tdm",
    "numa-aware",
    "task-topology",
    "extender",
    "usage",
    "rescheduling",
    "cdp",
    "resource-strategy-fit",
    "nodegroup",
    # names from other Volcano releases
    "dynamicresources",
    "hdrf",
    "capacity-card",
)

DEFAULT_CONF = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


class ConfigError(ValueError):
    """A configuration that must not replace a good one; `errors` lists every problem found."""

    def __init__(self, message: str, errors: list[str] | None = None) -> None:
        super().__init__(message)
        self.errors = errors or [message]


class PluginClass(Protocol):
    """What the configuration needs of a plugin class: its arguments' validation."""

    name: str

    @staticmethod
    def validate(arguments: Arguments) -> list[str] | None: ...

    def __call__(self, arguments: Arguments) -> Any: ...


@dataclass(frozen=True, slots=True)
class Catalogue:
    """The actions and plugins a configuration may name, by name (see `scheduler.registry`)."""

    actions: Mapping[str, Callable[[Any], None]]
    plugins: Mapping[str, PluginClass]
    # parsers of the actions' arguments (`configurations:`), run when the configuration loads so a
    # value of the wrong type is refused there, naming it, instead of failing a session
    action_arguments: Mapping[str, Callable[[Arguments], object]] = field(default_factory=dict)


@dataclass(slots=True)
class PluginOption:
    name: str
    arguments: Arguments
    disabled: frozenset[str] = frozenset()
    enabled_extra: frozenset[str] = frozenset()  # off-by-default switches turned on
    plugin: PluginClass | None = None  # None: a Volcano plugin we do not implement (skipped)

    @property
    def implemented(self) -> bool:
        return self.plugin is not None

    def enabled(self, point: str) -> bool:
        return point not in self.disabled


@dataclass(slots=True)
class Tier:
    plugins: list[PluginOption]


@dataclass(slots=True)
class SchedulerConfiguration:
    actions: list[str]
    tiers: list[Tier]
    configurations: dict[str, Arguments] = field(default_factory=dict)
    metrics: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    source: str = ""
    # the implementation of each name in `actions`, resolved when parsed
    action_steps: dict[str, Callable[[Any], None]] = field(default_factory=dict)

    def action_arguments(self, action: str) -> Arguments:
        return self.configurations.get(action, Arguments({}, action))

    def plugin_names(self) -> list[str]:
        return [p.name for t in self.tiers for p in t.plugins]


def _suggest(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.5)
    return f"; did you mean {close[0]!r}?" if close else ""


def _type_name(value: Any) -> str:
    return type(value).__name__ if value is not None else "null"


def parse_with(catalogue: Catalogue, text: str, source: str = "<config>") -> SchedulerConfiguration:
    """Parse and validate a configuration against `catalogue`; raise ConfigError with a precise message."""
    PLUGINS = catalogue.plugins
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        ctx = getattr(exc, "context_mark", None)
        if ctx is not None and (mark is None or ctx.line != mark.line):
            # an unclosed quote or bracket is found where the file ends: say where it opened
            where += f" ({getattr(exc, 'context', None) or 'started'} at line {ctx.line + 1})"
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{source}: invalid YAML{where}: {problem}") from None
    if data is None:
        raise ConfigError(f"{source}: the configuration is empty")
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the configuration must be a mapping, got {_type_name(data)}")
    allowed_top = {"actions", "tiers", "configurations", "metrics"}
    for key in data:
        if key not in allowed_top:
            raise ConfigError(
                f"{source}: unknown field {key!r}; allowed: {', '.join(sorted(allowed_top))}"
                + _suggest(str(key), sorted(allowed_top))
            )
    warnings: list[str] = []
    # every error of the file in one run (check-config shows them all); fatal only at the end
    errors: list[str] = []

    actions_raw = data.get("actions")
    if not isinstance(actions_raw, str):
        raise ConfigError(
            f"{source}: field 'actions' must be a comma-separated string, got {_type_name(actions_raw)}"
        )
    actions: list[str] = []
    for raw in actions_raw.split(","):
        name = raw.strip()
        if name in KNOWN_ACTIONS:
            actions.append(name)
        else:
            shown = repr(name) if name else "'' (empty name: a trailing or doubled comma?)"
            errors.append(
                f"{source}: failed to find action {shown} in 'actions'; allowed: {', '.join(KNOWN_ACTIONS)}"
                + (_suggest(name, list(KNOWN_ACTIONS)) if name else "")
            )

    tiers_raw = data.get("tiers", [])
    if tiers_raw is None:
        tiers_raw = []
    if not isinstance(tiers_raw, list):
        raise ConfigError(f"{source}: field 'tiers' must be a list, got {_type_name(tiers_raw)}")
    tiers: list[Tier] = []
    known_plugins = sorted(PLUGINS)
    for ti, tier in enumerate(tiers_raw):
        where_t = f"tiers[{ti}]"
        if not isinstance(tier, dict) or set(tier) - {"plugins"}:
            errors.append(
                f"{source}: {where_t} must be a mapping with the single key 'plugins', got {tier!r}"
            )
            continue
        plugins_raw = tier.get("plugins") or []
        if not isinstance(plugins_raw, list):
            errors.append(f"{source}: {where_t}.plugins must be a list, got {_type_name(plugins_raw)}")
            continue
        options: list[PluginOption] = []
        for pi, popt in enumerate(plugins_raw):
            try:
                options.append(
                    _parse_plugin(
                        PLUGINS, popt, f"{source}: {where_t}.plugins[{pi}]", known_plugins, warnings
                    )
                )
            except ConfigError as exc:
                errors.append(str(exc))
        tiers.append(Tier(options))

    # capacity replaces proportion (Volcano's guide: they conflict). Volcano still loads both (its
    # own preempt tests do), so this warns instead of refusing a configuration Volcano accepts.
    all_names = [p.name for t in tiers for p in t.plugins]
    if "capacity" in all_names and "proportion" in all_names:
        warnings.append(
            "plugins 'capacity' and 'proportion' are both enabled: they conflict (both order queues and "
            "decide reclaim with different shares); capacity replaces proportion, remove one of them"
        )
    # drf hierarchy and proportion in one tier conflict (Volcano rejects this too).
    for ti, tier in enumerate(tiers):
        names = {p.name for p in tier.plugins}
        if "proportion" in names and any(
            p.name == "drf" and "hierarchy" in p.enabled_extra for p in tier.plugins
        ):
            errors.append(
                f"{source}: tiers[{ti}]: drf with enableHierarchy: true conflicts with proportion in the same tier"
            )

    configurations: dict[str, Arguments] = {}
    conf_raw = data.get("configurations") or []
    if not isinstance(conf_raw, list):
        errors.append(f"{source}: field 'configurations' must be a list, got {_type_name(conf_raw)}")
        conf_raw = []
    for ci, entry in enumerate(conf_raw):
        where_c = f"{source}: configurations[{ci}]"
        if not isinstance(entry, dict) or "name" not in entry:
            errors.append(f"{where_c} must be a mapping with 'name' and 'arguments'")
            continue
        extra = set(entry) - {"name", "arguments"}
        if extra:
            errors.append(f"{where_c}: unknown field {sorted(extra)[0]!r}; allowed: arguments, name")
            continue
        aname = entry["name"]
        if aname not in KNOWN_ACTIONS:
            errors.append(
                f"{where_c}: unknown action {aname!r}; allowed: {', '.join(KNOWN_ACTIONS)}"
                + _suggest(str(aname), list(KNOWN_ACTIONS))
            )
            continue
        args = entry.get("arguments") or {}
        if not isinstance(args, dict):
            errors.append(f"{where_c}.arguments must be a mapping, got {_type_name(args)}")
            continue
        configurations[aname] = Arguments(args, aname, kind="action")
        parse_arguments = catalogue.action_arguments.get(aname)
        if parse_arguments is not None:
            try:
                parse_arguments(configurations[aname])
            except ArgumentError as exc:
                errors.append(f"{where_c}: {exc}")

    metrics = data.get("metrics") or {}
    if not isinstance(metrics, dict):
        errors.append(f"{source}: field 'metrics' must be a mapping, got {_type_name(metrics)}")
        metrics = {}
    if errors:
        raise ConfigError("\n".join(errors), errors)

    return SchedulerConfiguration(
        actions=actions,
        tiers=tiers,
        configurations=configurations,
        metrics={str(k): str(v) for k, v in metrics.items()},
        warnings=warnings,
        source=source,
        action_steps={name: catalogue.actions[name] for name in actions},
    )


def _parse_plugin(
    PLUGINS: Mapping[str, PluginClass], popt: Any, where: str, known: list[str], warnings: list[str]
) -> PluginOption:
    if isinstance(popt, str):  # tolerate the short form "- priority"
        popt = {"name": popt}
    if not isinstance(popt, dict):
        raise ConfigError(f"{where} must be a mapping with 'name', got {_type_name(popt)}")
    name = popt.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{where}: field 'name' is required and must be a string, got {name!r}")
    disabled: set[str] = set()
    enabled_extra: set[str] = set()
    allowed = set(SWITCHES) | set(OFF_BY_DEFAULT) | {"name", "arguments"}
    for key, value in popt.items():
        if key in ("name", "arguments"):
            continue
        if key not in allowed:
            raise ConfigError(
                f"{where} ({name}): unknown field {key!r}" + _suggest(str(key), sorted(allowed))
            )
        if not isinstance(value, bool):
            raise ConfigError(f"{where} ({name}): field {key!r} must be true or false, got {value!r}")
        if key in SWITCHES:
            if not value:
                disabled.update(SWITCHES[key])
        elif value:
            enabled_extra.add(OFF_BY_DEFAULT[key])
    args_raw = popt.get("arguments") or {}
    if not isinstance(args_raw, dict):
        raise ConfigError(
            f"{where} ({name}): field 'arguments' must be a mapping, got {_type_name(args_raw)}"
        )
    arguments = Arguments(args_raw, name)
    plugin = PLUGINS.get(name)
    if plugin is not None:
        try:
            notes = plugin.validate(arguments) or ()
        except ArgumentError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        warnings.extend(f"plugin {name!r}: {note}" for note in notes)
    elif name in VOLCANO_ONLY_PLUGINS:
        warnings.append(
            f"plugin {name!r} is a Volcano plugin that vc-scheduler does not implement; it is skipped"
        )
    else:
        raise ConfigError(
            f"{where}: unknown plugin {name!r}" + _suggest(name, known + list(VOLCANO_ONLY_PLUGINS))
        )
    return PluginOption(name, arguments, frozenset(disabled), frozenset(enabled_extra), plugin)
