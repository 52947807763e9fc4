"""Every Python code block of the documentation pages runs.

The pages are ``docs/**/*.rst`` and ``docs/**/*.md`` (the generated gallery and
API pages excluded: the gallery runs during the build, the API pages hold no
code of their own).  A page's blocks run in order in one namespace, in a fresh
working folder, as one test case per page; a block that raises fails the page
with the page's name and line in the traceback.  Doctest blocks (``>>>``) are
run by :mod:`doctest` against that namespace and their output is compared
(``ELLIPSIS`` and ``NORMALIZE_WHITESPACE`` on).

What counts as Python, and how a page marks a block that must not run, is
written in ``docs/README.md`` ("Code in the pages"); the rules in short:

- reStructuredText: ``.. code-block:: python`` (or ``py``, ``pycon``), ``::``
  literal blocks that parse as Python, and doctest blocks; Markdown: fenced
  blocks tagged ``python`` (or ``py``, ``pycon``);
- a marker comment just before a block (``.. docs-test: ...`` in
  reStructuredText, ``<!-- docs-test: ... -->`` in Markdown):

  - ``skip -- <reason>``: not run (a fragment, a file of another project);
    its syntax is still checked;
  - ``needs-data <folder> ...``: the real data under ``$SSVM_DATA_HOME``;
    without them the page stops there, skipped with the reason;
  - ``files <path> ...``: files of the repository (paths from its root)
    copied into the working folder before the block runs.
"""

from __future__ import annotations

import ast
import doctest
import os
import re
import shutil
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
GENERATED = ("_build", "auto_examples", "api/generated")
PYTHON = {"python", "py", "python3", "pycon"}
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
MARKER_KINDS = ("skip", "needs-data", "files")


@dataclass
class Block:
    """One code block of a page."""

    line: int                    # 1-based line of the block's first line of code
    source: str                  # dedented code
    doctest: bool                # ``>>>`` prompts: run and check by doctest
    markers: dict[str, str] = field(default_factory=dict)


def pages() -> list[Path]:
    found = sorted([*DOCS.rglob("*.rst"), *DOCS.rglob("*.md")])
    return [p for p in found
            if not any(p.relative_to(DOCS).as_posix().startswith(g) for g in GENERATED)
            and p.name != "README.md"]


# --- reading the pages ------------------------------------------------------------------

RST_MARKER = re.compile(r"^\s*\.\. docs-test:\s*(.*)$")
MD_MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*(.*?)\s*-->\s*$")
RST_DIRECTIVE = re.compile(r"^(\s*)\.\. (?:code-block|code|sourcecode)::\s*(\S*)\s*$")
MD_FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*\{?([\w-]*)\}?\s*(\S*)\s*$")


def parse_marker(text: str, where: str) -> tuple[str, str]:
    kind, _, rest = text.strip().partition(" ")
    if kind not in MARKER_KINDS:
        raise ValueError(f"{where}: unknown docs-test marker {kind!r}; "
                         f"known: {', '.join(MARKER_KINDS)}")
    rest = rest.strip()
    if kind == "skip":
        rest = rest.removeprefix("--").strip()
    if not rest:
        raise ValueError(f"{where}: the docs-test marker {kind!r} needs "
                         f"{'a reason' if kind == 'skip' else 'arguments'}")
    return kind, rest


def indented_body(lines: list[str], start: int, indent: int) -> tuple[int, list[str], int]:
    """The lines after ``start`` indented deeper than ``indent``: (first line, body, end)."""
    i = start
    while i < len(lines) and lines[i].strip() and lines[i].lstrip().startswith(":"):
        i += 1                                  # directive options (:caption: ...)
    body, first = [], None
    while i < len(lines):
        line = lines[i]
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        if line.strip() and first is None:
            first = i
        if first is not None:
            body.append(line)
        i += 1
    while body and not body[-1].strip():
        body.pop()
    text = "\n".join(body)
    return (first or start), _dedent(text).splitlines(), i


def _dedent(text: str) -> str:
    return textwrap.dedent(text)


def is_python(source: str) -> bool:
    try:
        ast.parse(source)
    except SyntaxError:
        return False
    return True


def rst_blocks(path: Path) -> list[Block]:
    lines = path.read_text().splitlines()
    blocks, pending = [], {}
    i = 0
    while i < len(lines):
        line = lines[i]
        where = f"{path.name}:{i + 1}"
        marker = RST_MARKER.match(line)
        if marker:
            kind, rest = parse_marker(marker.group(1), where)
            pending[kind] = rest
            i += 1
            continue
        directive = RST_DIRECTIVE.match(line)
        literal = (line.rstrip().endswith("::") and not line.lstrip().startswith("..")
                   and line.strip() != "")
        if directive or literal:
            indent = len(line) - len(line.lstrip())
            first, body, end = indented_body(lines, i + 1, indent)
            source = "\n".join(body)
            language = directive.group(2).lower() if directive else ""
            doctest_block = source.lstrip().startswith(">>>")
            runs = (language in PYTHON if directive
                    else doctest_block or (bool(source.strip()) and is_python(source)))
            if runs:
                blocks.append(Block(first + 1, source, doctest_block, pending))
            elif pending:
                raise ValueError(f"{where}: a docs-test marker before a block that is not "
                                 "Python")
            pending = {}
            i = end
            continue
        if line.lstrip().startswith(">>>") and (i == 0 or not lines[i - 1].strip()):
            indent = len(line) - len(line.lstrip())
            j = i
            while j < len(lines) and lines[j].strip():
                j += 1
            source = _dedent("\n".join(lines[i:j]))
            blocks.append(Block(i + 1, source, True, pending))
            pending = {}
            i = j
            continue
        if line.strip() and pending:
            raise ValueError(f"{where}: a docs-test marker must be followed by a code block")
        i += 1
    return blocks


def md_blocks(path: Path) -> list[Block]:
    lines = path.read_text().splitlines()
    blocks, pending = [], {}
    i = 0
    while i < len(lines):
        line = lines[i]
        where = f"{path.name}:{i + 1}"
        marker = MD_MARKER.match(line)
        if marker:
            kind, rest = parse_marker(marker.group(1), where)
            pending[kind] = rest
            i += 1
            continue
        fence = MD_FENCE.match(line)
        if fence:
            tag = fence.group(3).lower()
            language = (fence.group(4) if tag in ("code-block", "code") else tag).lower()
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith(fence.group(2)):
                j += 1
            body = [ln for ln in lines[i + 1:j] if not ln.lstrip().startswith(":")] \
                if tag in ("code-block", "code") else lines[i + 1:j]
            source = _dedent("\n".join(body))
            if language in PYTHON:
                blocks.append(Block(i + 2, source, source.lstrip().startswith(">>>"),
                                    pending))
            elif pending:
                raise ValueError(f"{where}: a docs-test marker before a block that is not "
                                 "Python")
            pending = {}
            i = j + 1
            continue
        if line.strip() and pending:
            raise ValueError(f"{where}: a docs-test marker must be followed by a code block")
        i += 1
    return blocks


def blocks_of(path: Path) -> list[Block]:
    return md_blocks(path) if path.suffix == ".md" else rst_blocks(path)


# --- running them -----------------------------------------------------------------------


def missing_data(folders: str) -> str | None:
    """Why the data of a ``needs-data`` marker are missing, or None."""
    home = os.environ.get("SSVM_DATA_HOME")
    absent = [f for f in folders.split() if not (home and Path(home, f).is_dir())]
    if absent:
        return (f"set SSVM_DATA_HOME to a folder holding {', '.join(f + '/' for f in absent)} "
                "to run the rest of this page")
    return None


def run_block(block: Block, name: str, namespace: dict) -> None:
    if block.doctest:
        test = doctest.DocTestParser().get_doctest(block.source, namespace, name, name,
                                                   block.line - 1)
        runner = doctest.DocTestRunner(optionflags=FLAGS)
        runner.run(test, out=print, clear_globs=False)
        result = runner.summarize(verbose=False)
        assert result.failed == 0, f"{name}:{block.line}: {result.failed} doctest(s) fail"
        return
    code = compile("\n" * (block.line - 1) + block.source, name, "exec")
    exec(code, namespace)


PAGES = pages()


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(DOCS).as_posix() for p in PAGES])
def test_page_code_runs(page, tmp_path, monkeypatch):
    try:
        import matplotlib
    except ImportError:                                # a page that plots then fails
        pass
    else:
        matplotlib.use("Agg")                          # pages may plot; never open a window
    monkeypatch.chdir(tmp_path)                        # a block that writes writes here
    monkeypatch.syspath_prepend(str(tmp_path))         # modules a block builds import from here
    name = str(page.relative_to(ROOT))
    namespace = {"__name__": "__docs__"}
    before = tree_entries()
    for block in blocks_of(page):
        if "skip" in block.markers:
            compile(block.source, name, "exec")        # not run, but still valid Python
            continue
        if "needs-data" in block.markers:
            reason = missing_data(block.markers["needs-data"])
            if reason:
                pytest.skip(f"{name}:{block.line}: {reason}")
        for file in block.markers.get("files", "").split():
            shutil.copy(ROOT / file, tmp_path / Path(file).name)
        run_block(block, name, namespace)
    assert tree_entries() == before, f"{name} wrote into the working tree"


def tree_entries() -> set[Path]:
    """The repository's top folder and docs/ (where a stray relative write would land)."""
    return {*ROOT.iterdir(), *DOCS.iterdir()}


# --- the reader itself --------------------------------------------------------------------


def test_reader_finds_each_kind(tmp_path):
    rst = tmp_path / "page.rst"
    rst.write_text("""Title
=====

.. code-block:: python
   :caption: first

   x = 1

A paragraph::

   y = x + 1

Shell, not Python::

   ssvm train --dataset ocr-small

>>> x + y
3

.. docs-test: skip -- a fragment

.. code-block:: python

   undefined_name()

.. code-block:: text

   not run
""")
    blocks = rst_blocks(rst)
    assert [(b.line, b.doctest) for b in blocks] == [(7, False), (11, False), (17, True),
                                                     (24, False)]
    assert blocks[0].source == "x = 1" and blocks[1].source == "y = x + 1"
    assert blocks[3].markers == {"skip": "a fragment"}

    md = tmp_path / "page.md"
    md.write_text("# T\n\n```python\na = 2\n```\n\n<!-- docs-test: needs-data ocr -->\n"
                  "```py\nb = a\n```\n\n```bash\nls\n```\n")
    blocks = md_blocks(md)
    assert [(b.line, b.source) for b in blocks] == [(4, "a = 2"), (9, "b = a")]
    assert blocks[1].markers == {"needs-data": "ocr"}


def test_reader_rejects_stray_or_unknown_markers(tmp_path):
    page = tmp_path / "page.rst"
    page.write_text(".. docs-test: skipp -- typo\n\n.. code-block:: python\n\n   x = 1\n")
    with pytest.raises(ValueError, match="unknown docs-test marker 'skipp'"):
        rst_blocks(page)
    page.write_text(".. docs-test: skip -- why\n\nA paragraph, not code.\n")
    with pytest.raises(ValueError, match="followed by a code block"):
        rst_blocks(page)
    page.write_text(".. docs-test: skip\n\n.. code-block:: python\n\n   x = 1\n")
    with pytest.raises(ValueError, match="needs a reason"):
        rst_blocks(page)


def test_doctest_output_is_checked():
    namespace: dict = {}
    run_block(Block(1, ">>> 1 + 1\n2", True), "page.rst", namespace)
    with pytest.raises(AssertionError, match="1 doctest"):
        run_block(Block(1, ">>> 1 + 1\n3", True), "page.rst", namespace)


def test_every_page_is_read():
    names = {p.relative_to(DOCS).as_posix() for p in PAGES}
    assert {"index.rst", "getting_started.rst", "scaling.md", "user_guide/saving.rst"} <= names
    assert sum(len(blocks_of(p)) for p in PAGES) >= 10
