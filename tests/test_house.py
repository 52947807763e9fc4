"""House rules of the sources: no module imports a private name of another module.

Every ``.py`` under ``ssvm_*/src`` and ``src`` is parsed with :mod:`ast`, every
``.pyx``/``.pxd`` is read line by line (its ``import``/``cimport`` statements).
A module may import a private module (``ssvm_core._oracle``) of its own
distribution, that is how the compiled kernels are wrapped; another
distribution's private modules only through the documented Cython ABI of
ssvm-core (:data:`CYTHON_ABI`).  Private names (``_name``, not ``__dunder__``)
of another module are never imported, from any distribution, nor read as
attributes of an imported module (``solvers._budget_status``), except the
entries of :data:`ALLOWED`, each with its reason.
"""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE_ROOTS = sorted(ROOT.glob("ssvm_*/src")) + [ROOT / "src"]

# The Cython ABI of ssvm-core that other distributions build against (README, "Packages";
# ssvm_core/CHANGELOG.md): the oracle protocol, its typedefs and the shared vector kernels.
CYTHON_ABI = {"ssvm_core._oracle", "ssvm_core._typedefs", "ssvm_core._vector"}

# (importing module, imported module) -> (private names, why they are allowed).  The
# kernels share their C helpers through .pxd declarations, whose names are public: what a
# .pxd declares is its interface.
ALLOWED: dict[tuple[str, str], tuple[set[str], str]] = {}


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def modules() -> dict[str, Path]:
    """Dotted module name -> file, for every source file of the repository's packages."""
    found = {}
    for root in SOURCE_ROOTS:
        for path in sorted(root.rglob("*")):
            if path.suffix in (".py", ".pyx", ".pxd") and "build" not in path.parts:
                parts = list(path.relative_to(root).with_suffix("").parts)
                if parts[-1] == "__init__":
                    parts.pop()
                found[".".join(parts)] = path
    return found


MODULES = modules()


def resolve(module: str, is_package: bool, target: str | None, level: int) -> str:
    """The absolute name of ``from <.. target> import`` in ``module``."""
    if level == 0:
        return target or ""
    base = module.split(".")
    base = base[:len(base) - level + (1 if is_package else 0)]
    return ".".join(base + ([target] if target else []))


def py_imports(module: str, path: Path):
    """(line, imported module, imported name or None) of a Python file; attribute reads
    ``alias._name`` of an imported module count as importing ``_name``."""
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    aliases = {}                                  # local name -> module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, None
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    aliases[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            source = resolve(module, is_package, node.module, node.level)
            for alias in node.names:
                if f"{source}.{alias.name}" in MODULES:      # a submodule, not a name
                    yield node.lineno, f"{source}.{alias.name}", None
                    aliases[alias.asname or alias.name] = f"{source}.{alias.name}"
                else:
                    yield node.lineno, source, alias.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in aliases and aliases[node.value.id] in MODULES
                and is_private(node.attr)):
            yield node.lineno, aliases[node.value.id], node.attr


CY_FROM = re.compile(r"^\s*from\s+([\w.]+)\s+c?import\s+\(?([^#]*)")
CY_IMPORT = re.compile(r"^\s*c?import\s+([\w., ]+)")


def cython_imports(path: Path):
    """(line, imported module, imported name or None) of a .pyx/.pxd file."""
    lines = path.read_text().splitlines()
    for number, line in enumerate(lines, 1):
        if match := CY_FROM.match(line):
            names = match.group(2)
            k = number
            while names.rstrip().endswith(",") or ("(" in line and ")" not in names):
                names += lines[k]
                k += 1
            for name in re.split(r"[,\s()]+", names):
                if name and name != "as":
                    yield number, match.group(1), name
        elif match := CY_IMPORT.match(line):
            for name in match.group(1).split(","):
                yield number, name.split(" as ")[0].strip(), None


def distribution(module: str) -> str:
    return module.split(".")[0]


FIRST_PARTY = {"ssvm", "ssvm_core", "ssvm_oracles", "ssvm_data", "ssvm_paths"}


def file_violations(module: str, path: Path) -> list[str]:
    """The rule's violations in the file ``path`` of module ``module``."""
    found = []
    imports = py_imports(module, path) if path.suffix == ".py" else cython_imports(path)
    for line, source, name in imports:
        where = f"{path.name}:{line}"
        if distribution(source) not in FIRST_PARTY:
            continue                          # third-party and standard library
        private_module = any(is_private(part) for part in source.split("."))
        if (private_module and distribution(source) != distribution(module)
                and source not in CYTHON_ABI):
            message = f"{where}: {module} imports {source}, another distribution's private module"
            if message not in found:
                found.append(message)
        if name is not None and is_private(name) and source != module:
            if name not in ALLOWED.get((module, source), ((), ""))[0]:
                found.append(f"{where}: {module} imports the private {name} of {source}")
    return found


def violations() -> list[str]:
    return [v for module, path in MODULES.items() for v in file_violations(module, path)]


def test_rule_flags_private_imports(tmp_path):
    # The checker can fail: each kind of violation in a scratch file is reported.
    py = tmp_path / "mod.py"
    py.write_text("from ssvm_core.solvers import _prepare_state\n"
                  "from ssvm_core import solvers\n"
                  "import ssvm_core.state as st\n"
                  "x = solvers._block_order, st._check_lam, solvers.__name__\n"
                  "from ssvm_oracles._graph import GraphOracle\n"
                  "from ssvm_core._oracle import MaxOracle\n")
    found = file_violations("ssvm_paths.mod", py)
    assert len(found) == 4, found
    assert ["_prepare_state" in found[0], "_graph" in found[1]] == [True, True]
    assert any("_block_order" in v for v in found) and any("_check_lam" in v for v in found)
    pyx = tmp_path / "mod.pyx"
    pyx.write_text("from ssvm_core._vector cimport dot, checked_malloc\n"
                   "from ssvm_core._blocks cimport (_step_size,\n    _clear_psi)\n"
                   "cimport ssvm_oracles._maxflow\n")
    found = file_violations("ssvm_paths._mod", pyx)
    assert len(found) == 4, found     # the _blocks and _maxflow modules, two private names
    assert file_violations("ssvm_oracles._mod", pyx) == [
        v.replace("ssvm_paths", "ssvm_oracles") for v in found if "_maxflow" not in v]


def test_sources_found():
    assert {"ssvm_core.solvers", "ssvm_core._fw", "ssvm_oracles._graphcut", "ssvm.cli",
            "ssvm_data.synthetic.letters", "ssvm_paths.path"} <= set(MODULES)


def test_no_private_imports():
    assert violations() == []


def test_allow_list_is_current():
    # An allowed import that no longer exists is removed from ALLOWED.
    used = set()
    for module, path in MODULES.items():
        imports = (py_imports(module, path) if path.suffix == ".py" else cython_imports(path))
        used |= {(module, source, name) for _, source, name in imports}
    allowed = {(module, source, name) for (module, source), (names, _) in ALLOWED.items()
               for name in names}
    assert allowed <= used, sorted(allowed - used)
