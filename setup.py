"""Build the optional compiled hot paths in native/.

The Cython modules are compiled when Cython and a C compiler are available; otherwise (or when
VC_SCHEDULER_PURE=1) the package installs without them and the pure-Python twins are used.
"""

import os
import sys

from setuptools import setup


def _extensions() -> list:
    if os.environ.get("VC_SCHEDULER_PURE", "") not in ("", "0"):
        return []
    try:
        from Cython.Build import cythonize
        from setuptools import Extension
    except ImportError:
        print("setup.py: Cython not available, building pure-Python only", file=sys.stderr)
        return []
    import glob

    sources = sorted(glob.glob(os.path.join("native", "*.pyx")))
    exts = [
        Extension(
            "scheduler._native." + os.path.splitext(os.path.basename(src))[0],
            [src],
            extra_compile_args=["-O3"],
        )
        for src in sources
    ]
    if not exts:
        return []
    return cythonize(exts, language_level=3, compiler_directives={"boundscheck": False, "wraparound": False})


class _OptionalBuildExt:
    """Make a failing compiler non-fatal: the pure-Python fallback is always there."""


def _cmdclass() -> dict:
    from setuptools.command.build_ext import build_ext

    class optional_build_ext(build_ext):
        def run(self) -> None:
            try:
                super().run()
            except Exception as exc:  # compiler missing or broken
                print(f"setup.py: native build skipped ({exc})", file=sys.stderr)

        def build_extension(self, ext) -> None:  # type: ignore[no-untyped-def]
            try:
                super().build_extension(ext)
            except Exception as exc:
                print(f"setup.py: native module {ext.name} skipped ({exc})", file=sys.stderr)

    return {"build_ext": optional_build_ext}


setup(ext_modules=_extensions(), cmdclass=_cmdclass())
