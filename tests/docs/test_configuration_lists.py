"""docs/configuration.md names the Volcano plugins we load but do not implement: the list must be
the one the loader uses, or users read that a plugin they rely on is skipped (or the reverse)."""

from __future__ import annotations

import re
from pathlib import Path

from scheduler.conf import VOLCANO_ONLY_PLUGINS
from scheduler.registry import PLUGINS

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def test_the_skipped_plugins_row_is_the_loaders_list() -> None:
    row = next(
        line for line in DOC.read_text().splitlines() if "a plugin Volcano registers that we do not" in line
    )
    named = re.findall(r"`([a-z-]+)`", row.split("|")[1])
    assert sorted(named) == sorted(VOLCANO_ONLY_PLUGINS)
    assert not set(named) & set(PLUGINS)  # none of them is implemented after all
