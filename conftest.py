"""Make the test run use the *installed* ssvm packages.

Under ``--import-mode=importlib`` pytest names a test module after its path
(``ssvm_core.tests.test_x``) and, for a parent package missing from
``sys.modules``, inserts a namespace placeholder made from the source folder
(``./ssvm_core`` has no ``__init__.py``), which would shadow the installed
distribution.  Importing the installed packages first prevents that.
"""

import importlib
import itertools
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


def _worksteal_chunks(n_items: int, n_workers: int) -> list[int]:
    """The sizes of the contiguous chunks pytest-xdist's ``worksteal`` scheduler first sends
    its ``n_workers`` workers (each idle worker in turn gets the pending items' share)."""
    sizes = []
    for remaining in range(n_workers, 0, -1):
        sizes.append((n_items - sum(sizes)) // remaining)
    return sizes


def pytest_collection_modifyitems(config, items):
    """Run the tests marked ``slow`` first, the longest expected first (``slow(seconds=...)``;
    otherwise in collection order), and the rest after them in theirs.

    Under ``pytest -n N --dist worksteal`` (the README's command) the collection is first
    cut into N contiguous chunks, one per worker, and an idle worker steals from the *end*
    of another's queue: slow tests at the head of one chunk stay on that worker, one after
    the other.  So the slow tests are dealt out longest first to the chunk whose expected
    seconds are fewest (Graham's LPT rule), each chunk starting with its own; the other
    tests fill the chunks in collection order, and stealing balances them at the end.
    """
    slow = sorted((item for item in items if item.get_closest_marker("slow")),
                  key=lambda item: -_expected_seconds(item))
    rest = [item for item in items if not item.get_closest_marker("slow")]
    n_workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if n_workers <= 1:
        items[:] = slow + rest
        return
    heads: list[list] = [[] for _ in range(n_workers)]
    load = [0.0] * n_workers
    for item in slow:
        chunk = min(range(n_workers), key=lambda j: (load[j], len(heads[j])))
        heads[chunk].append(item)
        load[chunk] += _expected_seconds(item)
    ordered, fill = [], iter(rest)
    for head, size in zip(heads, _worksteal_chunks(len(items), n_workers)):
        ordered += head
        ordered += itertools.islice(fill, max(size - len(head), 0))
    ordered += list(fill)
    items[:] = ordered
