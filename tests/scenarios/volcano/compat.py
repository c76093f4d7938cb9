"""Volcano's unit tests, case by case: which we pass, which we skip and which differ.

    python -m tests.scenarios.volcano.compat enumerate --source VOLCANO_GIT_DIR_OR_CHECKOUT
        parses the Go test tables of the upstream files below at the pinned commit and writes
        upstream-cases.yaml (every test case, by file and test function);
    python -m tests.scenarios.volcano.compat [--check]
        writes docs/compatibility.md from upstream-cases.yaml, the scenario folders here and the
        cases-skipped*.yaml / cases-failing*.yaml / cases-unit*.yaml lists (--check: only say whether
        it is stale).

A case id is `<upstream path>::<TestFunc>::<case name>`, the first line of a scenario's source.txt.
A test function without a table of named cases is one case named `(single case)`.
"""

from __future__ import annotations

import argparse
import fnmatch
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).parent
REPO = HERE.parents[2]
CASES_FILE = HERE / "upstream-cases.yaml"
TABLE = REPO / "docs" / "compatibility.md"
PINNED = "ed72c7c815a9fd547a787134676f73d42e9d049c"
SINGLE = "(single case)"

# The upstream test files the suite covers: the actions, the plugins we implement (or mean to) and
# the device code.
UPSTREAM_FILES = (
    "pkg/scheduler/actions/allocate/*_test.go",
    "pkg/scheduler/actions/backfill/*_test.go",
    "pkg/scheduler/actions/enqueue/*_test.go",
    "pkg/scheduler/actions/preempt/*_test.go",
    "pkg/scheduler/actions/reclaim/*_test.go",
    "pkg/scheduler/actions/gangpreempt/*_test.go",
    "pkg/scheduler/actions/gangreclaim/*_test.go",
    "pkg/scheduler/actions/shuffle/*_test.go",
    "pkg/scheduler/actions/utils/*_test.go",
    "pkg/scheduler/plugins/priority/*_test.go",
    "pkg/scheduler/plugins/gang/*_test.go",
    "pkg/scheduler/plugins/conformance/*_test.go",
    "pkg/scheduler/plugins/drf/*_test.go",
    "pkg/scheduler/plugins/proportion/*_test.go",
    "pkg/scheduler/plugins/overcommit/*_test.go",
    "pkg/scheduler/plugins/predicates/*_test.go",
    "pkg/scheduler/plugins/nodeorder/*_test.go",
    "pkg/scheduler/plugins/binpack/*_test.go",
    "pkg/scheduler/plugins/capacity/*_test.go",
    "pkg/scheduler/plugins/sla/*_test.go",
    "pkg/scheduler/plugins/pdb/*_test.go",
    "pkg/scheduler/plugins/resourcequota/*_test.go",
    "pkg/scheduler/plugins/network-topology-aware/*_test.go",
    "pkg/scheduler/plugins/deviceshare/*_test.go",
    "pkg/scheduler/api/devices/**_test.go",
)

TEST_FUNC = re.compile(r"^func (Test\w+)\(\w+ \*testing\.T\)")
TABLE_LOOP = re.compile(r"for \w+, \w+ := range (tests|testCases|cases|tcs)\b")
# the case table itself: names before it belong to fixtures (a device named "node1"), not cases
TABLE_DECL = re.compile(r"^\s*(tests|testCases|cases|tcs)\s*:?=\s*\[\]")
CASE_NAME = re.compile(r'^(\s*)(?:Name|name)\s*:\s*"((?:[^"\\]|\\.)*)"')


def cases_in_go(text: str) -> dict[str, list[str]]:
    """Test function -> case names: the `Name:`/`name:` fields of its least indented table."""
    out: dict[str, list[str]] = {}
    func = ""
    found: list[tuple[int, str]] = []
    has_run = False
    table_at: int | None = None  # how many names were found before the table was declared

    def close() -> None:
        if not func or func == "TestMain":
            return
        if not found or not has_run:
            # names outside a table run by t.Run are object names, not cases
            out[func] = [SINGLE]
            return
        cands = found[table_at:] if table_at is not None and table_at < len(found) else found
        depth = min(indent for indent, _ in cands)
        names: list[str] = []
        for indent, name in cands:
            if indent == depth:
                # a repeated name gets its position so every case keeps its own id
                names.append(name if name not in names else f"{name} (#{names.count(name) + 1})")
        out[func] = names

    for line in text.splitlines():
        m = TEST_FUNC.match(line)
        if m:
            close()
            func, found, has_run, table_at = m.group(1), [], False, None
            continue
        if line.startswith("}"):
            close()
            func, found = "", []
            continue
        if func:
            has_run = has_run or "t.Run(" in line or bool(TABLE_LOOP.search(line))
            if table_at is None and TABLE_DECL.match(line):
                table_at = len(found)
            c = CASE_NAME.match(line)
            if c:
                found.append((len(c.group(1).expandtabs(8)), c.group(2).replace('\\"', '"')))
    close()
    return out


def _git(source: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(source), *args], check=True, capture_output=True, text=True
    ).stdout


def enumerate_upstream(source: Path) -> dict[str, Any]:
    """Every case of UPSTREAM_FILES at the pinned commit of a Volcano git dir or checkout."""
    files = _git(source, "ls-tree", "-r", "--name-only", PINNED, "pkg/scheduler").split()
    wanted = sorted(f for f in files if any(fnmatch.fnmatch(f, pat) for pat in UPSTREAM_FILES))
    cases: dict[str, dict[str, list[str]]] = {}
    for path in wanted:
        funcs = cases_in_go(_git(source, "show", f"{PINNED}:{path}"))
        if funcs:
            cases[path] = funcs
    return {"commit": PINNED, "files": cases}


def case_ids(upstream: dict[str, Any]) -> Iterator[tuple[str, str]]:
    for path, funcs in upstream["files"].items():
        for func, names in funcs.items():
            for name in names:
                yield path, f"{path}::{func}::{name}"


def load_lists(kind: str) -> dict[str, str]:
    """All cases-<kind>*.yaml files merged: case id -> reason."""
    merged: dict[str, str] = {}
    for f in sorted(HERE.glob(f"cases-{kind}*.yaml")):
        entries = yaml.safe_load(f.read_text()) or {}
        for key, why in entries.items():
            assert key not in merged, f"{f.name}: {key} is listed twice"
            merged[key] = str(why)
    return merged


def scenarios() -> dict[str, Path]:
    """Case id -> scenario folder."""
    out: dict[str, Path] = {}
    for folder in sorted(p for p in HERE.iterdir() if (p / "source.txt").exists()):
        case = (folder / "source.txt").read_text().splitlines()[0].strip()
        assert case not in out, f"{folder.name} and {out[case].name} both translate {case}"
        out[case] = folder
    return out


def statuses() -> list[tuple[str, str, str, str]]:
    """(file, case id, status, note) for every upstream case, in upstream order."""
    upstream = yaml.safe_load(CASES_FILE.read_text())
    translated, skipped, failing = scenarios(), load_lists("skipped"), load_lists("failing")
    units = load_lists("unit")
    rows: list[tuple[str, str, str, str]] = []
    for path, case in case_ids(upstream):
        where = f"`{translated[case].name}`" if case in translated else f"unit test `{units.get(case)}`"
        if case in translated or case in units:
            if case in failing:
                rows.append((path, case, "failing", f"{where}: {failing[case]}"))
            else:
                rows.append((path, case, "passing", where))
        elif case in skipped:
            rows.append((path, case, "skipped", skipped[case]))
        else:
            rows.append((path, case, "not translated yet", ""))
    return rows


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render() -> str:
    upstream = yaml.safe_load(CASES_FILE.read_text())
    rows = statuses()
    by_file: dict[str, list[tuple[str, str, str, str]]] = {}
    for row in rows:
        by_file.setdefault(row[0], []).append(row)
    kinds = ("passing", "failing", "skipped", "not translated yet")
    lines = [
        "# Compatibility with Volcano's unit tests",
        "",
        "<!-- generated by `python -m tests.scenarios.volcano.compat`; do not edit -->",
        "",
        f"Every test case of Volcano's scheduler unit tests (volcano-sh/volcano at `{upstream['commit']}`)",
        "for the actions, the plugins and the device code, with its status here. A translated case is a",
        "scenario folder under `tests/scenarios/volcano/` (cluster, configuration with the test's tiers",
        "and switches, and the outcome the Go test expects), run by `make test`; a check of one function",
        "that no scenario can express (a codec, a score) is a unit test named after the case instead",
        "(`cases-unit*.yaml`). *Passing*: we decide",
        "what Volcano decides. *Failing*: we decide otherwise, and why (a deliberate departure or a",
        "bug still open); the test suite fails if such a case starts passing without this table",
        "changing. *Skipped*: the case cannot be expressed as a scenario, and why.",
        "",
        "| file | passing | failing | skipped | not translated yet |",
        "|---|---|---|---|---|",
    ]
    totals = dict.fromkeys(kinds, 0)
    for path, file_rows in by_file.items():
        counts = [sum(1 for r in file_rows if r[2] == k) for k in kinds]
        for k, n in zip(kinds, counts, strict=True):
            totals[k] += n
        lines.append(f"| `{path}` | " + " | ".join(str(n) for n in counts) + " |")
    lines.append("| **total** | " + " | ".join(f"**{totals[k]}**" for k in kinds) + " |")
    for path, file_rows in by_file.items():
        lines += ["", f"## `{path}`", "", "| test | case | status | scenario / reason |", "|---|---|---|---|"]
        for _, case, status, note in file_rows:
            _, func, name = case.split("::", 2)
            lines.append(f"| {func} | {_cell(name)} | {status} | {_cell(note)} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="python -m tests.scenarios.volcano.compat", description=__doc__.split("\n")[0]
    )
    sub = p.add_subparsers(dest="cmd")
    e = sub.add_parser("enumerate", help="list the upstream cases into upstream-cases.yaml")
    e.add_argument("--source", required=True, type=Path, help="a volcano-sh/volcano git dir or checkout")
    p.add_argument("--check", action="store_true", help="exit 1 if docs/compatibility.md is stale")
    args = p.parse_args(argv)
    if args.cmd == "enumerate":
        data = enumerate_upstream(args.source)
        CASES_FILE.write_text(
            "# generated by `python -m tests.scenarios.volcano.compat enumerate`; do not edit\n"
            + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=1000)
        )
        print(f"{sum(1 for _ in case_ids(data))} cases in {len(data['files'])} files -> {CASES_FILE}")
        return 0
    text = render()
    if args.check:
        stale = not TABLE.exists() or TABLE.read_text() != text
        print(f"{TABLE} is {'stale' if stale else 'current'}")
        return 1 if stale else 0
    TABLE.write_text(text)
    print(f"wrote {TABLE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
