"""Every shell block of README.md and docs/ runs, top to bottom, as a reader would type it.

Each document becomes one bash script (see `doccommands`): sandboxes the document starts run in
the background, kubectl is the real one, and a failing command fails the test with the document's
line. Blocks that cannot run here say why in a `<!-- doc-test: skip: ... -->` comment; the test
lists them, and refuses a skip without a reason.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import k8stools
from tests.docs.doccommands import blocks, to_script

ROOT = Path(__file__).resolve().parents[2]
DOCS = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]
# Documents whose commands are not run yet, and why. Each is work left, not a pass: the list is
# printed by the test, and a document leaves it once its walkthrough runs as written.
NOT_RUN_YET: dict[str, str] = {}


def test_every_skipped_block_says_why() -> None:
    for doc in DOCS:
        for b in blocks((ROOT / doc).read_text()):
            if b.skip:
                assert len(b.skip) > 15, f"{doc}:{b.line}: a skip needs a reason, got {b.skip!r}"


# the team's working folders beside the checkout, which users do not have (spelled in parts so
# that this file does not itself point there)
OUTSIDE = ("/".join(("..", "shared")), "/work/")


def test_no_doc_points_outside_the_repository() -> None:
    for doc in DOCS:
        text = (ROOT / doc).read_text()
        assert not any(p in text for p in OUTSIDE), doc


def test_every_example_file_the_docs_name_exists() -> None:
    import re

    named = 0
    for doc in DOCS:
        text = (ROOT / doc).read_text()
        for m in re.finditer(r"config/examples/[\w.-]+(?:/[\w.-]+)*", text):
            path = m.group(0).rstrip(".")
            line = text.count("\n", 0, m.start()) + 1
            assert (ROOT / path).is_file(), f"{doc}:{line}: {path} does not exist"
            named += 1
    assert named >= 10


@pytest.mark.kubectl
@pytest.mark.parametrize("doc", DOCS)
def test_doc_commands_run(doc: str, tmp_path: Path) -> None:
    if doc in NOT_RUN_YET:
        pytest.skip(f"{doc}: commands not run yet: {NOT_RUN_YET[doc]}")
    text = (ROOT / doc).read_text()
    script = to_script(text, doc)
    runnable = [b for b in script.blocks if not b.skip]
    if not runnable:
        pytest.skip(f"{doc}: no runnable block ({len(script.blocks)} skipped, each with its reason)")
    tools = k8stools.ensure_binaries()
    if tools is None and any("kubectl" in b.text for b in runnable):
        pytest.skip(k8stools.SKIP_REASON)
    # the docs' fixed /tmp paths become this test's own, so parallel runs do not share files
    body = script.script.replace("/tmp/", "$DOCTEST_TMP/")
    (tmp_path / "home").mkdir()
    env = {
        **os.environ,
        "PATH": f"{Path(sys.prefix) / 'bin'}:{k8stools.bin_dir()}:{os.environ.get('PATH', '')}",
        "HOME": str(tmp_path / "home"),
        "DOCTEST_TMP": str(tmp_path),
    }
    env.pop("KUBECONFIG", None)
    proc = subprocess.run(
        ["bash", "-c", body], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900
    )
    where = [line for line in proc.stderr.splitlines() if line.startswith(">>> ")]
    assert proc.returncode == 0, (
        f"{doc}: the block at {where[-1][4:] if where else '?'} failed (exit {proc.returncode})\n"
        f"--- stdout (tail)\n{proc.stdout[-3000:]}\n--- stderr (tail)\n{proc.stderr[-3000:]}"
    )


def test_synopses_name_only_real_flags() -> None:
    import re

    from scheduler.cli import SUBCOMMANDS

    checked = 0
    for doc in DOCS:
        for b in blocks((ROOT / doc).read_text()):
            if not b.skip.startswith("synopsis"):
                continue
            words = b.text.split()
            sub = words[1] if len(words) > 1 and words[1] in SUBCOMMANDS else "daemon"
            helptext = subprocess.run(
                [sys.executable, "-m", "scheduler", sub, "--help"], capture_output=True, text=True, timeout=60
            ).stdout
            if sub == "sandbox":  # the sandbox passes unknown flags to the daemon
                helptext += subprocess.run(
                    [sys.executable, "-m", "scheduler", "daemon", "--help"],
                    capture_output=True,
                    text=True,
                    timeout=60,
                ).stdout
            for flag in set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", b.text)):
                assert flag in helptext, f"{doc}:{b.line}: {flag} is not an option of vc-scheduler {sub}"
            checked += 1
    assert checked >= 3
