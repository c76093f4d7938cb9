"""Volcano's own unit-test cases, translated into scenarios (see README.md here), run in-process.

A case listed in cases-failing*.yaml is a strict xfail: when a fix makes it pass, the run fails
until the entry is removed, so the list and docs/compatibility.md never claim a stale difference.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.scenarios.judge import judge, load_expected, run_in_process
from tests.scenarios.volcano import compat

TRANSLATED = compat.scenarios()
FAILING = compat.load_lists("failing")
SKIPPED = compat.load_lists("skipped")
UNITS = compat.load_lists("unit")
UPSTREAM = {case for _, case in compat.case_ids(yaml.safe_load(compat.CASES_FILE.read_text()))}


def _params() -> list[object]:
    params: list[object] = []
    for case, folder in TRANSLATED.items():
        marks = [pytest.mark.xfail(strict=True, reason=FAILING[case])] if case in FAILING else []
        params.append(pytest.param(folder, id=folder.name, marks=marks))
    return params


@pytest.mark.parametrize("folder", _params())
def test_volcano_case(folder: Path) -> None:
    expected = load_expected(folder)
    judge(expected, run_in_process(folder, int(expected.get("cycles", 1))))


def test_every_scenario_names_an_upstream_case() -> None:
    unknown = {folder.name: case for case, folder in TRANSLATED.items() if case not in UPSTREAM}
    assert not unknown, f"source.txt first lines that are no upstream case id: {unknown}"
    for folder in TRANSLATED.values():
        for name in ("cluster.yaml", "expected.yaml"):
            assert (folder / name).exists(), f"{folder.name}: {name} missing"


def test_lists_name_real_cases() -> None:
    assert not set(FAILING) - set(TRANSLATED) - set(UNITS), "cases-failing entries without a scenario"
    assert not set(SKIPPED) - UPSTREAM, "cases-skipped entries that are no upstream case"
    assert not set(SKIPPED) & set(TRANSLATED), "cases both skipped and translated"
    assert not set(UNITS) - UPSTREAM, "cases-unit entries that are no upstream case"
    assert not set(UNITS) & (set(TRANSLATED) | set(SKIPPED)), "unit-tested cases also translated or skipped"


def test_unit_tested_cases_name_existing_tests() -> None:
    """cases-unit entries: `<test file>::<test function>[<param id>]`, both found in that file."""
    repo = compat.REPO
    for case, node in UNITS.items():
        path, _, rest = node.partition("::")
        func, _, param = rest.partition("[")
        text = (repo / path).read_text()
        assert f"def {func}(" in text, f"{case}: no {func} in {path}"
        if param:
            assert f'"{param.rstrip("]")}"' in text, f"{case}: no case id {param!r} in {path}"


def test_compatibility_table_is_current() -> None:
    current = compat.TABLE.read_text() == compat.render()
    assert current, "docs/compatibility.md is stale: run `python -m tests.scenarios.volcano.compat`"
