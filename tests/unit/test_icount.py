"""Instructions per session (scheduler/sim/icount.py): the count parsed from valgrind, the two
counted children told apart, and one session's figure the difference of their counts."""

from __future__ import annotations

import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

from scheduler.sim import icount


def test_parse_refs_reads_cachegrinds_total() -> None:
    err = "==1== Cachegrind, a high-precision tracing profiler\n==1== \n==1== I   refs:      2,385,197,243\n"
    assert icount.parse_refs(err) == 2_385_197_243


def test_parse_refs_without_a_count_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="no instruction count"):
        icount.parse_refs("valgrind: no such tool\n")


@pytest.mark.parametrize("kind", icount.KINDS)
def test_counted_child_schedules_every_pod_of_its_kind(kind: str) -> None:
    assert icount.run_child(kind, nodes=20, gpus=8, pods=20, seed=7, sessions=1, run=True) == 20


def test_unknown_kind_and_no_sessions_are_refused() -> None:
    with pytest.raises(ValueError, match="kind must be one of"):
        icount.count_session("tpu", 10, 8, 10, 7, 1)
    with pytest.raises(ValueError, match="at least 1"):
        icount.count_session("vgpu", 10, 8, 10, 7, 0)


def _fake_valgrind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stand-in valgrind: 1,000 instructions for the child that only builds clusters and 1,000 +
    450 per counted session for the one that schedules them (900 per session when the child's
    PYTHONPATH is another checkout), printed as cachegrind prints them."""
    fake = tmp_path / "bin" / "valgrind"
    fake.parent.mkdir()
    fake.write_text(
        f"#!{sys.executable}\n"
        "import os, sys\n"
        "args = sys.argv[1:]\n"
        "assert args[0] == '--tool=cachegrind', args\n"
        "assert os.environ['PYTHONHASHSEED'] == '0'\n"
        "if os.environ['PYTHONPATH'].endswith('unbuilt'):\n"
        "    sys.exit('ImportError: VC_SCHEDULER_REQUIRE_NATIVE is set but the compiled module x is not installed')\n"
        "child = args[args.index('--child') + 1:]\n"
        "sessions = int(child[5])\n"
        f"per = 450 if os.environ['PYTHONPATH'] == {str(icount.OWN_ROOT)!r} else 900\n"
        "n = 1000 + (per * sessions if child[6] == 'run' else 0)\n"
        "sys.stderr.write(f'==7== I   refs:      {n:,}\\n')\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")


def test_one_sessions_count_is_the_difference_of_the_two_children(tmp_path: Path, monkeypatch) -> None:
    _fake_valgrind(tmp_path, monkeypatch)
    got = icount.count_session("floor", 10, 8, 10, 7, sessions=3)
    assert got.instructions == 450
    assert "floor: 0 M instructions per session" in got.line()


def test_against_another_checkout_writes_both_counts_and_their_ratio(tmp_path: Path, monkeypatch) -> None:
    _fake_valgrind(tmp_path, monkeypatch)
    other = tmp_path / "older"
    (other / "scheduler").mkdir(parents=True)
    (other / "scheduler" / "__init__.py").write_text("")
    doc = tmp_path / "performance.md"
    doc.write_text("# Performance\n\n## Other section\n\nkept\n")
    argv = ["--kind", "all", "--sessions", "1", "--against", str(other), "--output", str(doc)]
    assert icount.main(argv) == 0
    text = doc.read_text()
    assert "## Other section\n\nkept" in text
    assert icount.SECTION in text
    for kind in icount.KINDS:
        assert f"| {kind} |" in text
    assert text.count("| x0.50 |") == 3  # 450 against 900 instructions a session
    assert str(other) not in text  # the other checkout is named by its commit, not its directory


def test_a_directory_without_the_package_is_refused() -> None:
    with pytest.raises(ValueError, match="holds no scheduler package"):
        icount.count_session("vgpu", 10, 8, 10, 7, 1, root=Path("/"))


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_a_real_count_is_one_sessions_work_and_not_the_interpreters() -> None:
    # the interpreter's start and imports alone are ~2,000 M instructions: a count that kept them
    # would be far above these bounds for 30 one-pod jobs (~600 k instructions a pod at 41122c0)
    got = icount.count_session("vgpu", 30, 8, 30, 7, sessions=1)
    assert 30 * 50_000 < got.instructions < 30 * 5_000_000


def test_bench_without_valgrind_says_what_is_missing(monkeypatch, capsys) -> None:
    from scheduler.sim.bench import main as bench_main

    monkeypatch.setattr(icount.shutil, "which", lambda name: None)
    assert bench_main(["--devices", "--instructions", "--kind", "floor"]) == 2
    assert "valgrind is not on PATH" in capsys.readouterr().err


def test_an_unbuilt_checkout_is_named_not_counted_as_pure_python(tmp_path: Path, monkeypatch) -> None:
    _fake_valgrind(tmp_path, monkeypatch)
    other = tmp_path / "unbuilt"
    (other / "scheduler").mkdir(parents=True)
    (other / "scheduler" / "__init__.py").write_text("")
    with pytest.raises(RuntimeError, match="compiled modules are not built"):
        icount.count_session("vgpu", 10, 8, 10, 7, 1, root=other)
