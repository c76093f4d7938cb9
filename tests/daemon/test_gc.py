"""The daemon process collects once after the initial sync and freezes the cache out of the collector."""

from __future__ import annotations

import subprocess
import sys

from scheduler.daemon import Daemon, parse_args


def test_settle_gc_collects_freezes_and_reenables() -> None:
    code = (
        "import gc\n"
        "from scheduler.daemon import settle_gc\n"
        "cache = [{'pod': i} for i in range(10000)]\n"
        "gc.disable()\n"
        "settle_gc()\n"
        "print(gc.isenabled(), gc.get_freeze_count() >= 10000, gc.get_threshold()[0])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["True", "True", "20000"]


def test_an_embedded_daemon_leaves_the_collector_alone() -> None:
    d = Daemon(parse_args(["--leader-elect=false"]))
    assert d.manage_gc is False  # only the vc-scheduler process entry point turns it on
