"""ssvm_data's modules import each other without a circle (issue: synthetic <-> its helpers)."""

import ast
from pathlib import Path

import ssvm_data

ROOT = Path(ssvm_data.__file__).parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """ssvm_data modules imported by ``path``, at any depth except a module ``__getattr__``
    (a lazy attribute, resolved only on use)."""
    tree = ast.parse(path.read_text())
    lazy = {id(n) for f in tree.body if isinstance(f, ast.FunctionDef)
            and f.name == "__getattr__" for n in ast.walk(f)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in lazy:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {name for name in found if name.startswith("ssvm_data")}


def test_no_import_cycle_between_ssvm_data_modules():
    modules = {_module_name(p): p for p in ROOT.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        targets = {t for t in _imports(path) if t in modules}
        # importing a.b.c runs a/__init__ and a/b/__init__ first
        for t in list(targets):
            parts = t.split(".")
            targets.update(".".join(parts[:k]) for k in range(1, len(parts)))
        graph[name] = {t for t in targets if t in modules and t != name
                       and not name.startswith(t + ".")}
    state: dict[str, int] = {}

    def visit(node, stack):
        state[node] = 1
        for nxt in sorted(graph[node]):
            assert state.get(nxt) != 1, f"import cycle: {' -> '.join(stack + [node, nxt])}"
            if nxt not in state:
                visit(nxt, stack + [node])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [])
    assert "ssvm_data.synthetic._checks" in graph and not graph["ssvm_data.synthetic._checks"]


def test_public_paths_of_the_generators():
    from ssvm_data import horseseg, synthetic
    from ssvm_data.synthetic import superpixels

    assert horseseg.horseseg_like is synthetic.horseseg_like is superpixels.horseseg_like
    assert ssvm_data.matching is synthetic.matching and callable(synthetic.matching)
