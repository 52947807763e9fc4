"""The Examples sections of the public modules' docstrings run and give what they show.

Every public module (no ``_`` in its dotted name) of the installed ssvm_core,
ssvm_oracles, ssvm_paths, ssvm_data and ssvm is imported by name and its
docstrings' examples are run by :mod:`doctest` (``ELLIPSIS`` and
``NORMALIZE_WHITESPACE`` on).  A module without examples passes; a failing
example fails its module's test.
"""

import doctest
import importlib
import pkgutil

import pytest

DISTRIBUTIONS = ("ssvm_core", "ssvm_oracles", "ssvm_paths", "ssvm_data", "ssvm")
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def public_modules() -> list[str]:
    """Dotted names of the installed packages' public modules, the packages included."""
    names = []
    for top in DISTRIBUTIONS:
        names.append(top)
        package = importlib.import_module(top)
        for info in pkgutil.walk_packages(package.__path__, f"{top}."):
            if not any(part.startswith("_") for part in info.name.split(".")):
                names.append(info.name)
    return sorted(names)


MODULES = public_modules()


def examples(name: str) -> list[doctest.DocTest]:
    """The doctests of module ``name``, its own objects only (not re-exported ones)."""
    module = importlib.import_module(name)
    return [test for test in doctest.DocTestFinder(exclude_empty=True).find(module, name)
            if test.examples]


def run(name: str) -> doctest.TestResults:
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    for test in examples(name):
        runner.run(test, out=print)   # the report of a failure goes to the captured output
    return runner.summarize(verbose=False)


@pytest.mark.parametrize("name", MODULES)
def test_examples_pass(name, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)      # an example that writes a file writes it here
    result = run(name)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {name} fail"


def test_modules_found():
    # The walk reaches the subpackages and skips the private modules.
    assert {"ssvm_core.solvers", "ssvm_oracles.chain", "ssvm_data.synthetic.letters",
            "ssvm_paths.path", "ssvm.cli", "ssvm.compat.pystruct.models.crf"} <= set(MODULES)
    assert not [name for name in MODULES if "._" in name]


def test_key_functions_have_examples():
    # The entry points of the README and of each package show an example.
    documented = {test.name for name in ("ssvm_core", "ssvm_oracles.chain", "ssvm_paths.path",
                                         "ssvm_data.registry") for test in examples(name)}
    assert {"ssvm_core", "ssvm_oracles.chain.ChainModel",
            "ssvm_paths.path.regularization_path",
            "ssvm_data.registry.load_dataset"} <= documented
    assert sum(len(test.examples) for name in MODULES for test in examples(name)) > 0
