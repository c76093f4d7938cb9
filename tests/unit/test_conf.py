from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.conf import ConfigError
from scheduler.registry import default_configuration, parse

ROOT = Path(__file__).resolve().parents[2]


def test_the_default_configuration_matches_volcano() -> None:
    conf = default_configuration()
    assert conf.actions == ["enqueue", "allocate", "backfill"]
    assert [[p.name for p in t.plugins] for t in conf.tiers] == [
        ["priority", "gang", "conformance"],
        ["overcommit", "drf", "predicates", "proportion", "nodeorder"],
    ]


def test_switches_use_volcanos_own_spellings() -> None:
    conf = parse(
        """
actions: "allocate"
tiers:
- plugins:
  - name: priority
    enableJobOrder: false
  - name: proportion
    enabledOverused: false
    enableJobEnqueued: false
"""
    )
    prio, prop = conf.tiers[0].plugins
    assert not prio.enabled("job_order") and prio.enabled("task_order")
    assert not prop.enabled("overused")
    assert not prop.enabled("job_enqueueable") and not prop.enabled("job_enqueued")


def test_the_wrong_spelling_of_a_switch_is_an_error_with_a_suggestion() -> None:
    with pytest.raises(ConfigError, match=r"unknown field 'enableOverused'.*enabledOverused"):
        parse('actions: "allocate"\ntiers:\n- plugins:\n  - name: proportion\n    enableOverused: false\n')


def test_an_unknown_action_is_refused_with_the_closest_name() -> None:
    with pytest.raises(ConfigError, match=r"'alocate'.*did you mean 'allocate'"):
        parse('actions: "enqueue, alocate"\ntiers: []\n')


def test_a_trailing_comma_in_actions_is_refused() -> None:
    with pytest.raises(ConfigError, match="empty name"):
        parse('actions: "enqueue, allocate,"\ntiers: []\n')


def test_an_unknown_plugin_is_refused_with_the_closest_name() -> None:
    with pytest.raises(ConfigError, match=r"unknown plugin 'gnag'.*did you mean 'gang'"):
        parse('actions: "allocate"\ntiers:\n- plugins:\n  - name: gnag\n')


def test_a_volcano_plugin_we_do_not_implement_loads_with_a_warning() -> None:
    conf = parse(
        'actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n  - name: tdm\n  - name: numa-aware\n'
    )
    assert any("'tdm'" in w and "skipped" in w for w in conf.warnings)
    assert any("'numa-aware'" in w for w in conf.warnings)


# Every name Volcano's plugin factory registers (pkg/scheduler/plugins/factory.go).
VOLCANO_REGISTERED_PLUGINS = [
    "drf",
    "gang",
    "deviceshare",
    "predicates",
    "priority",
    "nodeorder",
    "conformance",
    "binpack",
    "resource-strategy-fit",
    "tdm",
    "overcommit",
    "sla",
    "task-topology",
    "numa-aware",
    "cdp",
    "rescheduling",
    "usage",
    "pdb",
    "nodegroup",
    "network-topology-aware",
    "proportion",
    "capacity",
    "extender",
    "resourcequota",
]


def test_every_action_volcano_registers_loads_and_runs() -> None:
    conf = parse(
        'actions: "enqueue, allocate, backfill, preempt, reclaim, gangpreempt, gangreclaim, shuffle"\n'
        "tiers: []\nconfigurations:\n- name: gangpreempt\n  arguments: {maxDomains: 2}\n"
    )
    assert conf.actions == [
        "enqueue", "allocate", "backfill", "preempt", "reclaim", "gangpreempt", "gangreclaim", "shuffle"
    ]  # fmt: skip
    assert conf.warnings == []


def test_every_plugin_volcano_registers_loads() -> None:
    # a configuration Volcano accepts is never refused: unimplemented ones are skipped with a warning
    text = 'actions: "allocate"\ntiers:\n- plugins:\n' + "".join(
        f"  - name: {name}\n" for name in VOLCANO_REGISTERED_PLUGINS
    )
    conf = parse(text)
    assert conf.plugin_names() == VOLCANO_REGISTERED_PLUGINS
    skipped = {p.name for t in conf.tiers for p in t.plugins if not p.implemented}
    for name in skipped:
        assert any(f"{name!r}" in w and "does not implement" in w for w in conf.warnings)


def test_a_wrong_type_names_the_field_and_the_value() -> None:
    with pytest.raises(ConfigError, match=r"'enableJobOrder' must be true or false, got 'yes please'"):
        parse('actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n    enableJobOrder: yes please\n')
    with pytest.raises(ConfigError, match="'actions' must be a comma-separated string"):
        parse("actions: [allocate]\n")


def test_a_bad_plugin_argument_is_refused_naming_plugin_and_key() -> None:
    with pytest.raises(ConfigError, match=r"overcommit.*overcommit-factor"):
        parse(
            'actions: "enqueue"\ntiers:\n- plugins:\n  - name: overcommit\n    arguments: {overcommit-factor: lots}\n'
        )


def test_unparsable_yaml_names_the_position() -> None:
    with pytest.raises(ConfigError, match="line 3"):
        parse('actions: "allocate"\ntiers: [\n- plugins\n')


def test_every_shipped_configuration_is_valid() -> None:
    files = [
        ROOT / "config" / "volcano-scheduler.conf",
        *sorted((ROOT / "config" / "examples").glob("*.conf")),
    ]
    assert len(files) >= 4
    for f in files:
        parse(f.read_text(), str(f))


def test_preempt_arguments_of_the_wrong_type_are_refused_naming_the_action() -> None:
    conf = parse(
        'actions: "preempt"\ntiers: []\nconfigurations:\n- name: preempt\n'
        "  arguments: {enableTopologyAwarePreemption: true, minCandidateNodesPercentage: 20}\n"
    )
    assert conf.action_arguments("preempt").get_bool("enableTopologyAwarePreemption", False)
    with pytest.raises(ConfigError, match=r"action 'preempt' argument 'minCandidateNodesAbsolute'"):
        parse(
            'actions: "preempt"\ntiers: []\nconfigurations:\n- name: preempt\n'
            "  arguments: {minCandidateNodesAbsolute: many}\n"
        )


def test_quoted_arguments_read_as_they_spell() -> None:
    """Booleans as Go's strconv.ParseBool reads a quoted one (Volcano's GetBool); numbers too,
    where Volcano would drop the value for its default (docs/configuration.md says why)."""
    from scheduler.framework.arguments import ArgumentError, Arguments

    args = Arguments({"a": "t", "b": "False", "c": "0", "w": "10", "bad": "yes"}, "binpack")
    assert (args.get_bool("a", False), args.get_bool("b", True), args.get_bool("c", True)) == (
        True,
        False,
        False,
    )
    assert args.get_int("w", 1) == 10
    with pytest.raises(ArgumentError, match=r"plugin 'binpack' argument 'bad'"):
        args.get_bool("bad", False)
