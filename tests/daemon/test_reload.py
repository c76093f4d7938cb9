"""Hot reload: a valid edit takes effect, an invalid one is refused and the last good one stays."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from scheduler.conf import ConfigError
from scheduler.reload import ConfigReloader

BINPACK = 'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n  - name: binpack\n'
SPREAD = 'actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n  - name: gang\n  - name: nodeorder\n'
BROKEN = 'actions: "enqueue, allocate,"\ntiers: []\n'


def write(p: Path, text: str, bump: int) -> None:
    p.write_text(text)
    st = p.stat()
    # a filesystem with coarse mtimes must still see the change
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + bump * 1_000_000_000))


def names(r: ConfigReloader) -> list[str]:
    return [p.name for t in r.current.tiers for p in t.plugins]


def make(path: str, **kw: object) -> tuple[ConfigReloader, list[tuple[str, str]], list[tuple[str, str, str]]]:
    failures: list[tuple[str, str]] = []
    events: list[tuple[str, str, str]] = []
    r = ConfigReloader(
        path,
        on_failure=lambda k, e: failures.append((k, e)),
        warn_event=lambda reason, msg, kind: events.append((reason, msg, kind)),
        **kw,
    )  # type: ignore[arg-type]
    return r, failures, events


def test_file_edit_is_picked_up(tmp_path: Path) -> None:
    f = tmp_path / "volcano-scheduler.conf"
    write(f, BINPACK, 0)
    r, failures, _ = make(str(f))
    r.load_initial()
    assert names(r) == ["gang", "binpack"] and r.current.actions == ["enqueue", "allocate"]
    write(f, SPREAD, 1)
    assert r.check_file() is True
    assert names(r) == ["gang", "nodeorder"]
    assert failures == [] and r.reloads == 1


def test_invalid_edit_keeps_the_last_good_config_and_says_why(tmp_path: Path) -> None:
    f = tmp_path / "volcano-scheduler.conf"
    write(f, BINPACK, 0)
    r, failures, _ = make(str(f))
    r.load_initial()
    write(f, BROKEN, 1)
    assert r.check_file() is False
    assert names(r) == ["gang", "binpack"]
    assert len(failures) == 1 and failures[0][0] == "file"
    assert "failed to find action" in failures[0][1] and "trailing or doubled comma" in failures[0][1]
    assert r.last_error == failures[0][1]
    # fixing the file is accepted again
    write(f, SPREAD, 2)
    assert r.check_file() is True and names(r) == ["gang", "nodeorder"]


def test_touching_the_file_without_changing_it_does_nothing(tmp_path: Path) -> None:
    f = tmp_path / "c.conf"
    write(f, BINPACK, 0)
    r, failures, _ = make(str(f))
    r.load_initial()
    write(f, BINPACK, 1)
    assert r.check_file() is False and r.reloads == 0 and failures == []


def test_missing_file_at_start_falls_back_to_the_default(tmp_path: Path) -> None:
    r, failures, _ = make(str(tmp_path / "absent.conf"))
    r.load_initial()
    assert r.current.actions == ["enqueue", "allocate", "backfill"]
    assert "cannot read" in failures[0][1]


def test_strict_start_refuses_an_invalid_file(tmp_path: Path) -> None:
    f = tmp_path / "c.conf"
    write(f, BROKEN, 0)
    r, _, _ = make(str(f))
    with pytest.raises(ConfigError, match="failed to find action"):
        r.load_initial(strict=True)


def cm(text: str, key: str = "volcano-scheduler.conf") -> dict[str, object]:
    return {
        "metadata": {"name": "volcano-scheduler-configmap", "namespace": "volcano-system"},
        "data": {key: text},
    }


def test_configmap_edit_wins_and_the_late_identical_file_refresh_is_a_no_op(tmp_path: Path) -> None:
    f = tmp_path / "volcano-scheduler.conf"
    write(f, BINPACK, 0)
    r, _, _ = make(str(f))
    r.load_initial()
    assert r.on_configmap(cm(BINPACK)) is False  # same text as the file: nothing to do
    assert r.on_configmap(cm(SPREAD)) is True
    assert names(r) == ["gang", "nodeorder"] and "configmap" in r.current_source
    write(f, SPREAD, 1)  # the kubelet refreshes the mount a minute later
    assert r.check_file() is False and r.reloads == 1


def test_invalid_configmap_emits_a_warning_event_and_counts(tmp_path: Path) -> None:
    r, failures, events = make("")
    r.load_initial()
    assert r.on_configmap(cm(BROKEN)) is False
    assert r.current.actions == ["enqueue", "allocate", "backfill"]
    assert failures and failures[0][0] == "configmap"
    assert events and events[0][0] == "FailedLoadConfig" and "failed to find action" in events[0][1]


def test_configmap_without_the_key_changes_nothing() -> None:
    r, failures, _ = make("")
    r.load_initial()
    assert r.on_configmap(cm(SPREAD, key="other.conf")) is False
    assert failures == [] and r.reloads == 0


def test_the_key_follows_the_mounted_file_name(tmp_path: Path) -> None:
    r, _, _ = make(str(tmp_path / "my.conf"))
    assert r.key == "my.conf"
    assert r.on_configmap(cm(SPREAD, key="my.conf")) is True


async def test_a_large_configuration_is_parsed_off_the_event_loop() -> None:
    import asyncio
    import time

    from scheduler.reload import LARGE_CONFIG, ConfigReloader

    # thousands of tiers: valid, and slow enough to parse that a blocked loop would show
    tiers = "".join("- plugins:\n  - name: priority\n  - name: gang\n" for _ in range(2000))
    text = 'actions: "enqueue, allocate"\ntiers:\n' + tiers
    assert len(text) > LARGE_CONFIG
    r = ConfigReloader()
    cm = {"metadata": {"name": "volcano-scheduler-configmap"}, "data": {"volcano-scheduler.conf": text}}
    gaps: list[float] = []
    t0 = time.perf_counter()
    assert r.on_configmap(cm) is False  # not in force yet: being parsed in a thread
    assert time.perf_counter() - t0 < 0.2
    assert r.parsing is not None
    last = time.perf_counter()
    while not r.parsing.done():
        await asyncio.sleep(0.01)
        now = time.perf_counter()
        gaps.append(now - last)
        last = now
    await asyncio.sleep(0)
    assert r.current_source.startswith("configmap") and len(r.current.tiers) == 2000
    assert len(gaps) > 3 and max(gaps) < 0.5  # the loop kept running all along
