"""Build the Cython extensions of ssvm-core (settings in src/ssvm_core/_build.py)."""

import importlib.util

from setuptools import setup

_spec = importlib.util.spec_from_file_location("_ssvm_build", "src/ssvm_core/_build.py")
_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_build)

setup(ext_modules=_build.cython_extensions(
    "ssvm_core", ["_oracle", "_atoms", "_storage", "_view", "_linesearch", "_fw", "_active",
                  "_ssg", "_batch", "_pipeline"]),
    options=_build.setup_options())
