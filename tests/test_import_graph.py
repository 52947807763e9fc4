"""No import circle inside any ssvm distribution, Python and Cython modules alike.

An import anywhere in a module counts (at the top, in a function, a cimport of a
``.pxd``), except under ``if TYPE_CHECKING:`` (annotations only) and in a module
``__getattr__`` (a lazy attribute, resolved only on use).  Importing ``a.b.c`` runs
``a/__init__`` and ``a/b/__init__`` first; a module importing its own package is
not an edge (the package's ``__init__`` is already running).
"""

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = {"ssvm_core": REPO / "ssvm_core" / "src" / "ssvm_core",
            "ssvm_oracles": REPO / "ssvm_oracles" / "src" / "ssvm_oracles",
            "ssvm_paths": REPO / "ssvm_paths" / "src" / "ssvm_paths",
            "ssvm_data": REPO / "ssvm_data" / "src" / "ssvm_data",
            "ssvm": REPO / "src" / "ssvm"}
CYTHON_IMPORT = re.compile(r"^\s*(?:from\s+([\w.]+)\s+c?import\s+([\w, ()]+)|c?import\s+([\w.]+))",
                           re.M)


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _skipped_nodes(tree: ast.AST) -> set[int]:
    """Nodes under ``if TYPE_CHECKING:`` or in a module-level ``__getattr__``."""
    skipped = set()
    for node in ast.walk(tree):
        lazy = isinstance(node, ast.FunctionDef) and node.name == "__getattr__"
        typing_only = (isinstance(node, ast.If) and isinstance(node.test, ast.Name)
                       and node.test.id == "TYPE_CHECKING")
        if lazy or typing_only:
            skipped.update(id(n) for n in ast.walk(node) if n is not node)
    return skipped


def _imports(path: Path) -> set[str]:
    text = path.read_text()
    found = set()
    if path.suffix == ".py":
        tree = ast.parse(text)
        skipped = _skipped_nodes(tree)
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module)
                found.update(f"{node.module}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
        return found
    for module, names, plain in CYTHON_IMPORT.findall(text):       # .pyx and .pxd
        if plain:
            found.add(plain)
            continue
        found.add(module)
        found.update(f"{module}.{name.strip()}" for name in names.strip("()").split(",")
                     if name.strip())
    return found


def _graph(package: str, root: Path) -> dict[str, set[str]]:
    files = [*root.rglob("*.py"), *root.rglob("*.pyx"), *root.rglob("*.pxd")]
    modules: dict[str, list[Path]] = {}
    for path in files:
        modules.setdefault(_module_name(root, path), []).append(path)
    graph = {}
    for name, paths in modules.items():
        targets = {t for p in paths for t in _imports(p) if t.split(".")[0] == package}
        for t in list(targets):
            parts = t.split(".")
            targets.update(".".join(parts[:k]) for k in range(1, len(parts)))
        graph[name] = {t for t in targets if t in modules and t != name
                       and not name.startswith(t + ".")}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}

    def visit(node, stack):
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack + [node, nxt]
            if nxt not in state:
                found = visit(nxt, stack + [node])
                if found:
                    return found
        state[node] = 2
        return None

    for name in sorted(graph):
        if name not in state:
            found = visit(name, [])
            if found:
                return found
    return None


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_no_import_circle(package):
    graph = _graph(package, PACKAGES[package])
    assert len(graph) > 3, f"no modules found for {package}"
    cycle = _cycle(graph)
    assert cycle is None, "import circle: " + " -> ".join(cycle)


def test_the_checker_finds_a_circle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
