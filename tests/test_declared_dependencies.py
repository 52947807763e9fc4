"""Every third-party module a distribution imports is one it declares.

Each of the five distributions installs on its own (``tools/check_standalone.sh``), so a
module that its sources import but its ``pyproject.toml`` does not declare is missing for a
user who installs that distribution alone, until the code path that imports it runs. The
rules checked here, on the sources themselves:

- every third-party import (``.py``: the syntax tree; ``.pyx``: the import lines) names a
  distribution among the package's ``dependencies`` or one of its optional extras;
- an import that runs when the module is imported (outside any function) names a required
  dependency: an optional one is imported where it is used, and a missing extra then
  raises an ``ImportError`` that names it;
- the few imports that need neither are listed in :data:`NOT_DECLARED` with the reason.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library "
                              "from Python 3.11")

ROOT = Path(__file__).resolve().parents[1]

#: distribution -> (its pyproject.toml's folder, the folder of its sources)
DISTRIBUTIONS = {
    "ssvm-core": ("ssvm_core", "ssvm_core/src/ssvm_core"),
    "ssvm-oracles": ("ssvm_oracles", "ssvm_oracles/src/ssvm_oracles"),
    "ssvm-data": ("ssvm_data", "ssvm_data/src/ssvm_data"),
    "ssvm-paths": ("ssvm_paths", "ssvm_paths/src/ssvm_paths"),
    "ssvm": (".", "src/ssvm"),
}

#: top-level import name -> the distribution that provides it
PROVIDED_BY = {
    "Cython": "Cython", "dask": "dask", "distributed": "dask", "h5py": "h5py",
    "highspy": "highspy", "hypothesis": "hypothesis", "matplotlib": "matplotlib",
    "maxflow": "PyMaxflow", "networkx": "networkx", "numpy": "numpy", "pooch": "pooch",
    "scipy": "scipy", "setuptools": "setuptools", "sklearn": "scikit-learn",
    "threadpoolctl": "threadpoolctl", "tqdm": "tqdm",
}

#: (distribution, import name) -> why it is imported without being declared
NOT_DECLARED = {
    ("ssvm-core", "sklearn"):
        "only scikit-learn calls the estimators' __sklearn_tags__ and __sklearn_clone__, "
        "which import it",
    ("ssvm-core", "hypothesis"):
        "ssvm_core.testing.register_hypothesis_profiles is for test suites, which install "
        "hypothesis; it imports it when called",
    ("ssvm", "distributed"):
        "ssvm train --scheduler / --dask-local run on ssvm-core's extra 'dask'; without it "
        "the command says to install 'ssvm-core[dask]'",
    ("ssvm-core", "Cython"): "ssvm_core._build is the build helper of setup.py files "
                             "(build-system requires Cython)",
    ("ssvm-core", "setuptools"): "ssvm_core._build is the build helper of setup.py files "
                                 "(build-system requires setuptools)",
}

_OWN = {"ssvm", "ssvm_core", "ssvm_oracles", "ssvm_data", "ssvm_paths"}
#: what a .pyx cimports from Cython itself (C declarations, no module)
_CYTHON = {"cython", "cpython", "libc", "libcpp", "posix"}
_PYX_IMPORT = re.compile(r"^\s*(?:from\s+([\w.]+)\s+c?import\s|c?import\s+([\w.]+)\s*(?:$|,|as\s))",
                         re.M)


def _name(requirement: str) -> str:
    """The distribution a requirement string names ("scikit-learn>=1.2" -> "scikit-learn")."""
    return re.match(r"[A-Za-z0-9_.-]+", requirement).group(0).lower()


def declared(folder: str) -> tuple[set[str], set[str]]:
    """The required and the optional distributions of ``folder/pyproject.toml``."""
    project = tomllib.loads((ROOT / folder / "pyproject.toml").read_text())["project"]
    required = {_name(r) for r in project.get("dependencies", [])}
    optional = {_name(r) for extra in
                project.get("optional-dependencies", {}).values() for r in extra}
    return required, optional


def third_party(top: str) -> bool:
    return top not in sys.stdlib_module_names and top not in _OWN and top != "__future__"


def imports(path: Path) -> list[tuple[str, bool]]:
    """(top-level module name, imported when the module is imported) of a source file."""
    text = path.read_text()
    if path.suffix == ".pyx":
        tops = ((a or b).split(".")[0] for a, b in _PYX_IMPORT.findall(text))
        return [(top, False) for top in tops if top not in _CYTHON]
    found = []

    def visit(node, at_import: bool):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                found.extend((a.name.split(".")[0], at_import) for a in child.names)
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                found.append((child.module.split(".")[0], at_import))
            visit(child, at_import and not isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(ast.parse(text), True)
    return found


def violations(distribution: str) -> list[str]:
    folder, sources = DISTRIBUTIONS[distribution]
    required, optional = declared(folder)
    problems = []
    for path in sorted((ROOT / sources).rglob("*.py")) + sorted((ROOT / sources).rglob("*.pyx")):
        where = path.relative_to(ROOT)
        for top, at_import in imports(path):
            if not third_party(top) or (distribution, top) in NOT_DECLARED:
                continue
            if top not in PROVIDED_BY:
                problems.append(f"{where}: imports {top!r}, unknown to PROVIDED_BY")
                continue
            name = PROVIDED_BY[top].lower()
            if name not in required | optional:
                problems.append(f"{where}: imports {top!r}, which {distribution} does not "
                                f"declare ({PROVIDED_BY[top]})")
            elif at_import and name not in required:
                problems.append(f"{where}: imports {top!r} at import time, but "
                                f"{PROVIDED_BY[top]} is an optional extra of {distribution}")
    return problems


@pytest.mark.parametrize("distribution", sorted(DISTRIBUTIONS))
def test_every_third_party_import_is_declared(distribution):
    assert violations(distribution) == []


def test_the_exceptions_are_still_imported():
    """An entry of NOT_DECLARED whose import is gone must leave the table."""
    for distribution, top in NOT_DECLARED:
        sources = ROOT / DISTRIBUTIONS[distribution][1]
        assert any(name == top for path in [*sources.rglob("*.py"), *sources.rglob("*.pyx")]
                   for name, _ in imports(path)), (distribution, top)


def test_the_checker_finds_an_undeclared_and_an_eager_optional_import(tmp_path, monkeypatch):
    package = tmp_path / "src" / "demo"
    package.mkdir(parents=True)
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "demo"\ndependencies = ["numpy>=1.25"]\n'
        '[project.optional-dependencies]\nplot = ["matplotlib>=3.7"]\n')
    (package / "a.py").write_text("import numpy as np\nimport matplotlib\n\n"
                                  "def f():\n    import sklearn.cluster\n"
                                  "    import matplotlib.pyplot\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setitem(DISTRIBUTIONS, "demo", (".", "src/demo"))
    found = violations("demo")
    assert len(found) == 2
    assert "'matplotlib' at import time" in found[0] and "'sklearn'" in found[1]


def test_latent_models_say_which_extra_gives_their_k_means(monkeypatch):
    from ssvm_oracles.latent import kmeans_clusters

    monkeypatch.setitem(sys.modules, "sklearn.cluster", None)   # as if not installed
    with pytest.raises(ImportError, match=r"ssvm-oracles\[latent\]"):
        kmeans_clusters([[0.0], [1.0]], 2, 0)
