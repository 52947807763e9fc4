"""Make the test run use the *installed* ssvm packages.

Under ``--import-mode=importlib`` pytest names a test module after its path
(``ssvm_core.tests.test_x``) and, for a parent package missing from
``sys.modules``, inserts a namespace placeholder made from the source folder
(``./ssvm_core`` has no ``__init__.py``), which would shadow the installed
distribution.  Importing the installed packages first prevents that.
"""

import importlib
import os

for _name in ("ssvm_data", "ssvm_core", "ssvm_oracles", "ssvm_paths"):
    _module = importlib.import_module(_name)
    if getattr(_module, "__file__", None) is None:
        raise ImportError(f"{_name} is not installed; run `bash tools/install.sh` first")

# .ci/run's debug step installs ssvm-core and ssvm-oracles built with
# SSVM_CYTHON_DEBUG=1 into a --target folder and names it here: the run must
# test that build, not the normal one of the environment.
_expected = os.environ.get("SSVM_EXPECT_BUILD_DIR")
if _expected:
    for _name in ("ssvm_core", "ssvm_oracles"):
        _file = importlib.import_module(_name).__file__
        if not os.path.realpath(_file).startswith(os.path.realpath(_expected) + os.sep):
            raise ImportError(f"{_name} comes from {_file}, not from the build in {_expected}")

# Hypothesis profiles for every test folder: ``ci`` (default; derandomised, no
# example database, no deadline), ``dev`` and ``fuzz``; choose one with
# SSVM_HYPOTHESIS_PROFILE.  Solver-level properties lower their own examples.
from ssvm_core.testing import register_hypothesis_profiles  # noqa: E402  (after the check)

register_hypothesis_profiles()


def _expected_seconds(item) -> float:
    """The ``seconds`` a ``slow`` mark expects the test to take (0 when it names none)."""
    return float(item.get_closest_marker("slow").kwargs.get("seconds", 0))


def pytest_collection_modifyitems(config, items):
    """Run the tests marked ``slow`` first, the longest expected first (``slow(seconds=...)``;
    otherwise in collection order), and the rest after them in theirs: a parallel run
    (``pytest -n auto``, the README's command) then starts the longest tests at once instead
    of ending on one of them with the other workers idle."""
    items.sort(key=lambda item: (0, -_expected_seconds(item))
               if item.get_closest_marker("slow") else (1, 0))
