"""Sphinx configuration of the ssvm documentation site.

Build it from the repository root, after installing the packages (tools/install.sh) and
requirements/docs.txt::

    python -m sphinx -W -b html docs docs/_build/html

The gallery (``examples/``) runs during the build; the API pages import the installed
packages, so rebuild after reinstalling a changed package.  With
``SSVM_DOCS_SKIP_TESTED=1`` (set by ``.ci/run``, after the test suite) the examples the test
suite already runs (``examples/pystruct``, see ``tests/test_compat_pystruct_examples.py``)
are rendered without being run again: their pages then show the code without its output.
"""

from __future__ import annotations

import os
import sys
from importlib.metadata import version

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "sphinxext"))

from ssvm_docs import CITATIONS  # noqa: E402  (the local extension's citation table)

project = "ssvm"
author = "the ssvm developers"
copyright = "the ssvm developers, BSD-3-Clause"
release = version("ssvm")
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
    "ssvm_docs",
]

root_doc = "index"
# README.md describes the docs folder for contributors; it is not a page of the site.
exclude_patterns = ["_build", "README.md", "**.ipynb_checkpoints", "auto_examples/**/*.ipynb"]
# Pages written on other branches: listed in the front page's toctree when present.
ssvm_optional_pages = ["pystruct_migration"]
nitpicky = False
default_role = "py:obj"

# |Osokin2016| and friends: author-year citations linking to the references page.
rst_epilog = "\n".join(
    f".. |{key}| replace:: :ref:`{cite.short} <{cite.label}>`" for key, cite in CITATIONS.items()
)

# -- Markdown (MyST): pages written in Markdown, e.g. scaling.md ----------------------------
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
myst_heading_anchors = 3            # [text](#a-heading) links within a Markdown page

# -- API reference -------------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": True, "inherited-members": "BaseException,tuple,object"}
autodoc_typehints = "none"          # numpydoc's Parameters sections say the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# -- Gallery -------------------------------------------------------------------------------
#: the gallery examples the test suite runs (tests/test_compat_pystruct_examples.py)
TESTED_EXAMPLES = r"/examples/pystruct/"
sphinx_gallery_conf = {
    "examples_dirs": ["../examples"],
    "gallery_dirs": ["auto_examples"],
    # the examples run: every plot_ script (but those tests run, when told to skip them)
    "filename_pattern": (rf"^(?!.*{TESTED_EXAMPLES}).*/plot_"
                         if os.environ.get("SSVM_DOCS_SKIP_TESTED") == "1" else r"/plot_"),
    "ignore_pattern": r"__init__\.py",
    "subsection_order": [
        "../examples/training",
        "../examples/models",
        "../examples/oracles",
        "../examples/paths",
        "../examples/pystruct",
    ],
    "within_subsection_order": "ssvm_docs.ExampleOrder",
    "download_all_examples": False,
    "remove_config_comments": True,
    "min_reported_time": 1,
    "show_memory": False,
    # sphinx-gallery aborts the build when an example raises.
    "only_warn_on_example_error": False,
}

# -- HTML ----------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"ssvm {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 6,
    "secondary_sidebar_items": ["page-toc"],
}
html_sidebars = {"index": [], "getting_started": [], "references": []}
html_show_sourcelink = False
# A wider content column, so that code and its output fit (_static/ssvm.css).
html_static_path = ["_static"]
html_css_files = ["ssvm.css"]
