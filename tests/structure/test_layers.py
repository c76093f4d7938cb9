"""The layers of `scheduler/`, checked from the source (the contracts listed in README's layout).

1. The decision core (`model`, `framework`, `actions`, `plugins`, `conf`) does no I/O: it imports
   nothing from the edge (`kube`, `daemon`, `server`, `metrics`, `sim`, `reload`, `cli`, `flags`,
   `registry`) and no networking or process library.
2. `kube/` (the daemon's Kubernetes I/O) never imports the sandbox (`sim/`).
3. `sim/` reaches the scheduler only through its public entry points (ENTRY_POINTS below): the
   sandbox talks to the daemon over HTTP, never through its internals (the two micro-benchmarks of
   the core excepted).
4. No import cycle between the files of one package.

Each check is also run on a small tree that breaks it, so a check that cannot fail would fail here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.structure.imports import ROOT, Import, all_imports, cycles_within_packages, edges

CORE = ("scheduler.model", "scheduler.framework", "scheduler.actions", "scheduler.plugins", "scheduler.conf")
EDGE = (
    "scheduler.kube",
    "scheduler.daemon",
    "scheduler.server",
    "scheduler.metrics",
    "scheduler.sim",
    "scheduler.reload",
    "scheduler.cli",
    "scheduler.flags",
    "scheduler.registry",
    "scheduler.web",
)
IO_LIBRARIES = (
    "aiohttp",
    "kubernetes_asyncio",
    "asyncio",
    "uvloop",
    "socket",
    "http",
    "urllib",
    "requests",
    "subprocess",
    "ssl",
)
# What the sandbox and the offline tools may use of the scheduler: the configuration and registry,
# one session run on a snapshot, the model (how manifests become records) and the device wire format.
ENTRY_POINTS = (
    "scheduler.__version__",
    "scheduler.conf",
    "scheduler.registry",
    "scheduler.framework.cycle",
    "scheduler.framework.session",
    "scheduler.model",
    "scheduler.plugins.deviceshare.annotations",
    "scheduler.sim",
    "scheduler.flags",
    "scheduler.daemon",
)
# The micro-benchmarks time the core's own internals (the device hot path, the placement scan), so
# they may import them; they are tools beside the sandbox, not part of it.
CORE_BENCHMARKS = ("scheduler.sim.bench", "scheduler.sim.devicebench")


def _under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def core_violations(imports: list[Import]) -> list[str]:
    return [
        f"{i.source}:{i.line} imports {i.target}"
        for i in imports
        if _under(i.source, CORE) and (_under(i.target, EDGE) or _under(i.target, IO_LIBRARIES))
    ]


def kube_violations(imports: list[Import]) -> list[str]:
    return [
        f"{i.source}:{i.line} imports {i.target}"
        for i in imports
        if _under(i.source, ("scheduler.kube",)) and _under(i.target, ("scheduler.sim",))
    ]


def sim_violations(imports: list[Import]) -> list[str]:
    return [
        f"{i.source}:{i.line} imports {i.target}"
        for i in imports
        if _under(i.source, ("scheduler.sim",))
        and not _under(i.source, CORE_BENCHMARKS)
        and _under(i.target, ("scheduler",))
        and not _under(i.target, ENTRY_POINTS)
    ]


def test_the_core_does_no_io() -> None:
    assert core_violations(all_imports()) == []


def test_kube_never_imports_the_sandbox() -> None:
    assert kube_violations(all_imports()) == []


def test_the_sandbox_uses_public_entry_points_only() -> None:
    assert sim_violations(all_imports()) == []


def test_no_import_cycle_within_a_package() -> None:
    assert cycles_within_packages(edges()) == []


def test_the_registry_sits_above_the_framework() -> None:
    assert (ROOT / "scheduler" / "registry.py").exists()
    assert not (ROOT / "scheduler" / "framework" / "registry.py").exists()


# ---- the checks fire on a tree that breaks them ------------------------------------------------


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / "scheduler" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for d in [p for p in (tmp_path / "scheduler").rglob("*") if p.is_dir()] + [tmp_path / "scheduler"]:
        (d / "__init__.py").touch()
    return tmp_path


@pytest.mark.parametrize(
    ("files", "check"),
    [
        ({"plugins/bad.py": "from scheduler.kube import client\n"}, core_violations),
        ({"model/bad.py": "def f():\n    import aiohttp\n"}, core_violations),
        ({"framework/bad.py": "from ..daemon import Daemon\n"}, core_violations),
        ({"kube/bad.py": "from scheduler.sim.kubelet import Kubelet\n"}, kube_violations),
        ({"sim/bad.py": "from scheduler.kube.binder import Binder\n"}, sim_violations),
    ],
    ids=[
        "plugin-imports-kube",
        "lazy-aiohttp-in-model",
        "relative-import-of-daemon",
        "kube-uses-sim",
        "sim-uses-kube",
    ],
)
def test_a_broken_contract_is_reported(tmp_path: Path, files: dict[str, str], check) -> None:
    root = _tree(tmp_path, files)
    assert check(all_imports(root)) != []


def test_type_checking_imports_do_not_count(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "plugins/ok.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from scheduler.kube import c\n"
        },
    )
    assert core_violations(all_imports(root)) == []


def test_a_cycle_is_reported(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "model/a.py": "from scheduler.model.b import B\n",
            "model/b.py": "def f():\n    from scheduler.model import a\n",
        },
    )
    assert cycles_within_packages(edges(root)) == [["scheduler.model.a", "scheduler.model.b"]]
