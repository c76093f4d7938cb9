"""Chaos fixtures, and the figures table: `CHAOS_REPORT=docs/reliability.md` rewrites that file's
"Chaos suite figures" section with what this run measured (each experiment records one row)."""

from __future__ import annotations

import os
import platform
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.chaos.figures import FIGURES
from tests.chaos.harness import Chaos

COLUMNS = ("experiment", "scale", "pods", "binds", "faults", "bad objects", "violations", "seconds")
BEGIN = "<!-- chaos figures: begin -->"
END = "<!-- chaos figures: end -->"


@pytest.fixture
async def chaos(tmp_path: Path) -> AsyncIterator[Chaos]:
    c = Chaos(tmp_path)
    try:
        yield c
    finally:
        await c.stop()


def figures_table(rows: list[dict[str, Any]], command: str) -> str:
    lines = [
        f"Produced by `{command}` ({platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} CPUs).",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    for r in rows:
        lines.append("| " + " | ".join(str(r.get(c.replace(" ", "_"), "")) for c in COLUMNS) + " |")
    return "\n".join(lines)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    target = os.environ.get("CHAOS_REPORT")
    if not target or not FIGURES:
        return
    path = Path(target)
    text = path.read_text() if path.exists() else ""
    command = os.environ.get("CHAOS_COMMAND", "make chaos CHAOS_REPORT=" + target)
    block = f"{BEGIN}\n{figures_table(FIGURES, command)}\n{END}"
    if BEGIN in text and END in text:
        text = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _m: block, text, flags=re.S)
    else:
        text += "\n" + block + "\n"
    path.write_text(text)
