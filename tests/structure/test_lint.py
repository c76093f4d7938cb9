"""`make lint` (run by `make test`, hence by CI) fails on an unformatted file and on a core module
that imports `scheduler.kube`: each is shown on a throwaway copy of the package with one bad file
added, next to the unchanged copy, which passes (so the failure is the bad file's doing)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _lint(tmp_path: Path, bad: dict[str, str]) -> subprocess.CompletedProcess[str]:
    tree = tmp_path / "tree"
    shutil.copytree(
        ROOT / "scheduler", tree / "scheduler", ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.c")
    )
    (tree / "tests").mkdir()
    shutil.copy(ROOT / "pyproject.toml", tree)  # ruff's settings (line length, rules)
    for rel, text in bad.items():
        (tree / "scheduler" / rel).write_text(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))}
    return subprocess.run(
        ["make", "-s", "-C", str(ROOT), "lint", f"LINT_ROOT={tree}"],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,  # a loaded 2-core machine has taken most of 300 s
    )


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_lint_passes_on_the_unchanged_package(tmp_path: Path) -> None:
    out = _lint(tmp_path, {})
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize(
    ("bad", "said"),
    [
        ({"plugins/throwaway.py": "x = {'a':1}\n"}, "would be reformatted"),
        (
            {
                "plugins/throwaway.py": '"""A plugin that talks to the API server."""\n\n'
                "from scheduler.kube import client\n\nCLIENT = client\n"
            },
            "scheduler.plugins.throwaway:3 imports scheduler.kube.client",
        ),
    ],
    ids=["unformatted-file", "core-imports-kube"],
)
def test_make_lint_fails(tmp_path: Path, bad: dict[str, str], said: str) -> None:
    out = _lint(tmp_path, bad)
    assert out.returncode != 0
    assert said in out.stdout + out.stderr
