"""Cython build settings shared by every ssvm package with extensions.

Used by ``ssvm_core/setup.py`` (loaded from its file) and by the setup of
packages that cimport ssvm-core (``from ssvm_core._build import ...``), so the
compiler directives live in one place.  ``SSVM_CYTHON_DEBUG=1`` turns bounds,
wraparound and initialisation checks back on, Python's division semantics
(``cdivision`` off: a zero divisor raises) and compiles with -O0 -g;
such a build writes its C sources and objects under ``build/debug`` (see
:func:`setup_options`), apart from the normal build's, so that neither build
reuses the other's files because they look up to date.
"""

from __future__ import annotations

import os


def _debug() -> bool:
    return os.environ.get("SSVM_CYTHON_DEBUG", "0") == "1"


def setup_options() -> dict:
    """``setup(options=...)``: the C compiler runs in parallel (``build_ext -j``, in
    threads); a debug build compiles under ``build/debug``."""
    options = {"build_ext": {"parallel": os.cpu_count() or 1}}
    if _debug():
        options["build"] = {"build_base": "build/debug"}
    return options


def cython_extensions(package: str, modules: list[str]) -> list:
    """Cythonized ``Extension`` objects for ``src/<package>/<module>.pyx``, and the package's
    shared utility module ``<package>._cyutility``.

    Cython (3.1 and later) writes the utility code every module needs -- typed memoryviews
    above all -- once into the shared module instead of into each module: ssvm-core then
    compiles in 55 instead of 85 s on 2 cores and its extensions take 11.4 instead of
    20.3 MB.  Each package has its own shared module, built with the same Cython as its
    modules."""
    from Cython.Build import cythonize
    from setuptools import Extension

    debug = _debug()
    directives = {
        "language_level": 3,
        "boundscheck": debug,
        "wraparound": debug,
        "initializedcheck": debug,
        # Not even in debug builds: a None check needs the GIL, so nonecheck rejects
        # every attribute access of ``self`` in the kernels' nogil methods.
        "nonecheck": False,
        "cdivision": not debug,
        "embedsignature": True,
    }
    args = ["-O0", "-g"] if debug else ["-O3"]
    extensions = [Extension(f"{package}.{name}", [f"src/{package}/{name}.pyx"],
                            extra_compile_args=args) for name in modules]
    shared = f"{package}._cyutility"
    extensions.append(Extension(shared, [f"src/{package}/_cyutility.c"],
                                extra_compile_args=args))
    # The modules are translated in parallel processes, as the C compiler then runs.
    # Cython decides whether a .c file is stale from timestamps only, not from the
    # directives: a debug build regenerates its own C files, away from the normal ones.
    options = {"compiler_directives": directives, "nthreads": os.cpu_count() or 1,
               "shared_utility_qualified_name": shared}
    if debug:
        return cythonize(extensions, build_dir="build/debug", force=True, **options)
    return cythonize(extensions, **options)
