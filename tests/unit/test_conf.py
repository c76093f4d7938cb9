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
        'actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n  - name: tdm\n  - name: numaaware\n'
    )
    assert any("'tdm'" in w for w in conf.warnings)
    assert any("'numaaware'" in w for w in conf.warnings)


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
