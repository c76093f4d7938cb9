"""The files a release needs besides the code: the license text and the image's build context."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_license_is_the_full_apache_2_text() -> None:
    text = (REPO / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License\n                           Version 2.0, January 2004")
    for section in (
        "1. Definitions.",
        "4. Redistribution.",
        "9. Accepting Warranty or Additional Liability.",
    ):
        assert section in text
    assert "END OF TERMS AND CONDITIONS" in text
    pyproject = (REPO / "pyproject.toml").read_text()
    assert re.search(r'license = \{ text = "Apache-2.0" \}', pyproject)


def _pattern(p: str) -> re.Pattern[str]:
    out = ""
    i = 0
    while i < len(p):
        if p.startswith("**", i):
            out, i = out + ".*", i + 2
        elif p[i] == "*":
            out, i = out + "[^/]*", i + 1
        else:
            out, i = out + re.escape(p[i]), i + 1
    return re.compile(out + "$")


def in_context(path: str) -> bool:
    """Docker's .dockerignore rules: the last matching line wins; a line matches a path or a parent."""
    included = True
    for line in (REPO / ".dockerignore").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        rx = _pattern(line.lstrip("!").rstrip("/"))
        parts = path.split("/")
        if any(rx.match("/".join(parts[:n])) for n in range(1, len(parts) + 1)):
            included = negate
    return included


def test_dockerignore_sends_the_sources_the_dockerfile_copies_and_nothing_else() -> None:
    dockerfile = (REPO / "deploy" / "Dockerfile").read_text()
    copied = [s for line in re.findall(r"^COPY (.+) \S+$", dockerfile, re.M) for s in line.split()]
    for src in copied:
        src = src.rstrip("/")
        if (REPO / src).is_dir():
            assert any(in_context(str(p.relative_to(REPO))) for p in (REPO / src).rglob("*.py*")), src
        else:
            assert in_context(src), f"{src} is copied by the Dockerfile but .dockerignore leaves it out"
    for path in ("scheduler/cli.py", "native/gpufit.pyx", "scheduler/sim/apiserver/app.py"):
        assert in_context(path), path
    for path in (
        ".venv/bin/python",
        ".git/HEAD",
        "tests/conftest.py",
        "docs/install.md",
        "dist/vc_scheduler-0.2.0.tar.gz",
        "native/gpufit.c",
        "scheduler/_native/gpufit.cpython-311-x86_64-linux-gnu.so",
        "scheduler/sim/__pycache__/gc.cpython-311.pyc",
    ):
        assert not in_context(path), path
