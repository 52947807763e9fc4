"""Build the Cython extensions of ssvm-oracles.

Compiler directives live here, once for the whole package.  Set
``SSVM_CYTHON_DEBUG=1`` to turn bounds, wraparound and initialisation checks
back on (for a debug test job).
"""

import os

from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("SSVM_CYTHON_DEBUG", "0") == "1"

DIRECTIVES = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "nonecheck": DEBUG,
    "cdivision": not DEBUG,
    "embedsignature": True,
}
COMPILE_ARGS = ["-O0", "-g"] if DEBUG else ["-O3"]

MODULES = ["_chain", "_multiclass"]

extensions = [
    Extension(
        f"ssvm_oracles.{name}",
        [f"src/ssvm_oracles/{name}.pyx"],
        extra_compile_args=COMPILE_ARGS,
    )
    for name in MODULES
]

setup(ext_modules=cythonize(extensions, compiler_directives=DIRECTIVES))
