"""Local Sphinx extension of the ssvm documentation.

- ``CITATIONS``: the papers, cited author-year (``|Osokin2016|`` in any page, see conf.py's
  ``rst_epilog``) with a link to their entry on the references page.
- Docstrings cite papers author-year in plain text ("Osokin et al. (2016), Alg. 2");
  when they are rendered, each citation becomes a link to the references page.
- The API pages must list every public name (``__all__``) of the four packages: a name
  missing from ``docs/api/<package>.rst`` is a build warning (an error under ``-W``).
- ``ExampleOrder``: the order of the gallery's examples within a section.
- Optional pages (conf.py's ``ssvm_optional_pages``): pages written on other branches
  join the front page's toctree when their source file exists, and are simply absent
  otherwise (a toctree entry or glob matching no file would be a warning).
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Citation:
    short: str   # as written in the text
    label: str   # its anchor on the references page


CITATIONS = {
    "LacosteJulien2013": Citation("Lacoste-Julien et al. (2013)", "ref-lacoste-julien-2013"),
    "Osokin2016": Citation("Osokin et al. (2016)", "ref-osokin-2016"),
    "Huang2017": Citation("Huang et al. (2017)", "ref-huang-2017"),
    "Branson2013": Citation("Branson et al. (2013)", "ref-branson-2013"),
    "Wang2016": Citation("Wang et al. (2016)", "ref-wang-2016"),
    "Ma2015": Citation("Ma et al. (2015)", "ref-ma-2015"),
    "LeeRoth2015": Citation("Lee & Roth (2015)", "ref-lee-roth-2015"),
    "YuJoachims2009": Citation("Yu & Joachims (2009)", "ref-yu-joachims-2009"),
}

# A plain-text author-year citation, as docstrings write them.
_CITED = re.compile("|".join(re.escape(c.short) for c in CITATIONS.values()))
_BY_SHORT = {c.short: c for c in CITATIONS.values()}

# Public names that are modules or metadata, not API entries.
_NOT_API = {"__version__", "synthetic"}
API_PACKAGES = ("ssvm_core", "ssvm_oracles", "ssvm_data", "ssvm_paths")


def cite_papers(text: str) -> str:
    """Turn the plain-text author-year citations in ``text`` into links."""
    def replace(match: re.Match) -> str:
        cite = _BY_SHORT[match.group(0)]
        return f":ref:`{cite.short} <{cite.label}>`"
    return _CITED.sub(replace, text)


def _process_docstring(app, what, name, obj, options, lines: list[str]) -> None:
    # Inside ``literals`` a role would show verbatim: leave those as they are.
    for k, line in enumerate(lines):
        parts = line.split("``")
        for j in range(0, len(parts), 2):
            parts[j] = cite_papers(parts[j])
        lines[k] = "``".join(parts)


def _check_api_pages(app) -> None:
    from sphinx.util import logging

    logger = logging.getLogger(__name__)
    for package in API_PACKAGES:
        page = Path(app.srcdir) / "api" / f"{package}.rst"
        text = page.read_text(encoding="utf-8") if page.exists() else ""
        listed = set(re.findall(r"^\s+~?([A-Za-z_][\w.]*)\s*$", text, re.MULTILINE))
        listed |= set(re.findall(r"^\.\. py:data:: (\w+)", text, re.MULTILINE))
        module = importlib.import_module(package)
        for name in getattr(module, "__all__", []):
            if name not in _NOT_API and name not in listed:
                logger.warning(f"{package}.{name} is public (in __all__) but not listed in "
                               f"docs/api/{package}.rst", location=str(page))


def _add_optional_pages(app, docname: str, source: list[str]) -> None:
    if docname != app.config.root_doc:
        return
    present = [page for page in app.config.ssvm_optional_pages
               if any((Path(app.srcdir) / f"{page}{suffix}").exists()
                      for suffix in app.config.source_suffix)]
    if present:
        entries = "".join(f"   {page}\n" for page in present)
        source[0] += f"\n\n.. toctree::\n   :hidden:\n\n{entries}"


class ExampleOrder:
    """Gallery order within a section: the listed files first, then the rest by name."""

    FIRST = [
        "plot_ocr_bcfw.py",
        "plot_variants_convergence.py",
        "plot_multi_sample.py",
        "plot_box_constraints.py",
        "plot_warm_start_resume.py",
        "plot_graphcut_segmentation.py",
        "plot_matching.py",
        "plot_pose_trees.py",
        "plot_python_oracle.py",
        "plot_cython_oracle.py",
        "plot_regularization_path.py",
    ]

    def __init__(self, src_dir: str):
        self.src_dir = src_dir

    def __call__(self, filename: str) -> tuple[int, str]:
        name = Path(filename).name
        rank = self.FIRST.index(name) if name in self.FIRST else len(self.FIRST)
        return rank, name

    def __repr__(self) -> str:
        return "ssvm_docs.ExampleOrder"


def setup(app):
    app.connect("autodoc-process-docstring", _process_docstring)
    app.connect("builder-inited", _check_api_pages)
    app.add_config_value("ssvm_optional_pages", [], "env")
    app.connect("source-read", _add_optional_pages)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
