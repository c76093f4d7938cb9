"""What every benchmark writes into docs/performance.md: its own `## ` section and the load it ran under.

Each generator (`bench`, `bench --devices`, `daemonbench`, the API server load test) owns one section;
`replace_section` rewrites that section only, so running one benchmark never loses another's figures.
Instead of a fixed "taken on a shared machine" sentence, a section states the load average it measured
before and after, so a reader can tell a quiet run from a busy one.
"""

from __future__ import annotations

import gc
import os
import platform
from pathlib import Path

_NEW_DOC = "# Performance\n\nAll figures measured on the project's 2-core machines; medians unless stated.\n"


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, or 'unknown' where the platform has none."""
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except (AttributeError, OSError):
        return "unknown"


def machine_line() -> str:
    return f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"


def load_sentence(before: str, after: str | None = None) -> str:
    """Where the figures were taken, in the words a reader needs to judge them."""
    tail = f", after {after}" if after is not None else ""
    return (
        f"Measured on {machine_line()}; load average (1 / 5 / 15 min) before {before}{tail}. "
        f"A load near the CPU count means other work shared the machine and the figures are pessimistic."
    )


def replace_section(path: str | Path, heading: str, text: str) -> None:
    """Put `text` (which starts with `heading`) in place of that section, keeping every other one.

    A section runs from its heading to the next `## ` heading; a missing section is appended, a
    missing file is created.
    """
    path = Path(path)
    doc = path.read_text(encoding="utf-8") if path.exists() else _NEW_DOC
    body = text.rstrip("\n") + "\n"
    start = doc.find(heading)
    if start < 0:
        doc = doc.rstrip("\n") + "\n\n" + body
    else:
        nxt = doc.find("\n## ", start + len(heading))
        doc = doc[:start] + body + (doc[nxt:] if nxt >= 0 else "")
    path.write_text(doc, encoding="utf-8")


# A generated section shows its command in a shell block; the docs' command tests would run it, so
# it carries the skip marker they read (a benchmark of minutes is run by hand).
DOC_TEST_SKIP = (
    "<!-- doc-test: skip: a benchmark of minutes at 5,000 nodes and 150,000 pods, run by hand; "
    "its output is this section -->"
)


class SettledGC:
    """The collector as the daemon sets it after its initial sync (scheduler.daemon.settle_gc):
    the generated cluster frozen out of the collector's sight, a larger young threshold. Undone
    on exit, so that the backlog and the idle measurement do not see each other's objects.
    Benchmarks that time sessions take them under it (bench, bench --devices, misfitbench)."""

    def __enter__(self) -> SettledGC:
        self.threshold = gc.get_threshold()
        self.enabled = gc.isenabled()
        gc.collect()
        gc.freeze()
        gc.set_threshold(20_000, 10, 10)
        gc.enable()
        return self

    def __exit__(self, *exc: object) -> None:
        gc.unfreeze()
        gc.set_threshold(*self.threshold)
        if not self.enabled:
            gc.disable()
        gc.collect()
