"""The release artifacts: `python -m build` gives an sdist and a wheel that carries the compiled
extension, and that wheel, installed into a fresh virtualenv, runs `simulate` on the compiled path.

The build runs without isolation (the test venv has setuptools, wheel and Cython) so it needs no
network and no second environment; it still builds the wheel from the sdist, as a release does,
so a source file missing from the sdist shows here. The fresh venv borrows the dependencies
(aiohttp, PyYAML, ...) from the test venv through a `.pth` path entry instead of downloading
them; `scheduler` itself must come from the installed wheel, which the test checks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

from scheduler.__version__ import __version__

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "tests" / "scenarios" / "vgpu-binpack-seed004"

pytestmark = pytest.mark.slow


def _run(cmd: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)  # type: ignore[call-overload]


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("build", reason="the build package is in the test extras: pip install -e '.[test]'")
    out = tmp_path_factory.mktemp("dist")
    res = _run(
        [
            sys.executable,
            "-m",
            "build",
            "--no-isolation",
            "--skip-dependency-check",
            "-o",
            str(out),
            str(REPO),
        ],
        env={**os.environ, "VC_SCHEDULER_PURE": ""},
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return out


def test_sdist_has_the_sources_and_the_license_not_generated_code(dist: Path) -> None:
    (sdist,) = dist.glob("vc[-_]scheduler-*.tar.gz")  # the separator depends on the setuptools version
    with tarfile.open(sdist) as tf:
        names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    assert {
        "LICENSE",
        "native/gpufit.pyx",
        "native/npufit.pyx",
        "native/int64arrays.pxd",  # cimported by gpufit and npufit: without it they build pure
        "native/nodewindow.pyx",
        "native/cpumemscore.pyx",
        "native/resfit.pyx",
        "setup.py",
        "pyproject.toml",
        "MANIFEST.in",
    } <= names
    assert not [n for n in names if n.endswith((".c", ".so"))], names


def test_wheel_installed_in_a_fresh_venv_runs_simulate_on_the_compiled_path(
    dist: Path, tmp_path: Path
) -> None:
    (wheel,) = dist.glob("vc_scheduler-*.whl")
    assert f"-{__version__}-" in wheel.name and not wheel.name.endswith("-none-any.whl"), wheel.name
    members = zipfile.ZipFile(wheel).namelist()
    # vGPU, HAMi Ascend, allocate's node window, nodeorder's resource score, allocate's resource checks
    for module in ("gpufit", "npufit", "nodewindow", "cpumemscore", "resfit"):
        assert [m for m in members if m.startswith(f"scheduler/_native/{module}") and m.endswith(".so")], (
            members
        )
    assert f"vc_scheduler-{__version__}.dist-info/LICENSE" in members or any(
        m.startswith(f"vc_scheduler-{__version__}.dist-info/licenses/LICENSE") for m in members
    )

    venv = tmp_path / "venv"
    res = _run([sys.executable, "-m", "venv", str(venv)])
    assert res.returncode == 0, res.stderr
    py = venv / "bin" / "python"
    site = Path(
        _run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    )
    (site / "borrowed-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    res = _run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)])
    assert res.returncode == 0, res.stderr

    env = {**os.environ, "VC_SCHEDULER_REQUIRE_NATIVE": "1", "VC_SCHEDULER_PURE": ""}
    env.pop("PYTHONPATH", None)
    where = _run(
        [str(py), "-c", "import scheduler._native.gpufit as g; print(g.__file__)"], cwd=tmp_path, env=env
    )
    assert where.returncode == 0 and where.stdout.startswith(str(site)), where.stdout + where.stderr
    res = _run(
        [
            str(venv / "bin" / "vc-scheduler"),
            "simulate",
            "-f",
            str(SCENARIO / "cluster.yaml"),
            "--conf",
            str(SCENARIO / "scheduler.conf"),
            "-o",
            "json",
        ],
        cwd=tmp_path,
        env=env,
    )
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["bindings"] == {"default/hami-pod": "v100-node"}
    assert out["annotations"]["default/hami-pod"]["volcano.sh/vgpu-ids-new"] == "GPU-v100-b,NVIDIA,3000,50:"
