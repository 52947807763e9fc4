"""Cython build settings shared by every ssvm package with extensions.

Used by ``ssvm_core/setup.py`` (loaded from its file) and by the setup of
packages that cimport ssvm-core (``from ssvm_core._build import ...``), so the
compiler directives live in one place.  ``SSVM_CYTHON_DEBUG=1`` turns bounds,
wraparound, initialisation and None checks back on and compiles with -O0 -g.
"""

from __future__ import annotations

import os


def cython_extensions(package: str, modules: list[str]) -> list:
    """Cythonized ``Extension`` objects for ``src/<package>/<module>.pyx``."""
    from Cython.Build import cythonize
    from setuptools import Extension

    debug = os.environ.get("SSVM_CYTHON_DEBUG", "0") == "1"
    directives = {
        "language_level": 3,
        "boundscheck": debug,
        "wraparound": debug,
        "initializedcheck": debug,
        "nonecheck": debug,
        "cdivision": not debug,
        "embedsignature": True,
    }
    args = ["-O0", "-g"] if debug else ["-O3"]
    extensions = [Extension(f"{package}.{name}", [f"src/{package}/{name}.pyx"],
                            extra_compile_args=args) for name in modules]
    return cythonize(extensions, compiler_directives=directives)
