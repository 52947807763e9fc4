"""Seeded generators of small structured-prediction problems.

Every generator takes ``random_state`` (None, an int or a `numpy.random.Generator`,
passed to `numpy.random.default_rng`); the same seed gives identical output. Tests,
benchmarks and examples share these generators.  One module per family:

- ``letters``: :func:`ocr_like` (OCR-shaped words);
- ``gaussian``: :func:`chain` (an HMM with Gaussian emissions) and :func:`multiclass`;
- ``chunking``: :func:`conll_like` (CoNLL-2000-shaped sentences);
- ``alignment``: :func:`matching` (word-alignment-like bipartite matchings);
- ``superpixels``: :func:`horseseg_like` (HorseSeg-shaped superpixel graphs);
- ``poses``: :func:`lsp_like` (LSP-shaped pose trees).
"""

from ssvm_data.synthetic._checks import RandomState
from ssvm_data.synthetic.alignment import matching
from ssvm_data.synthetic.chunking import conll_like
from ssvm_data.synthetic.gaussian import chain, multiclass
from ssvm_data.synthetic.letters import GLYPH_SHAPE, N_LETTERS, ocr_like
from ssvm_data.synthetic.poses import lsp_like
from ssvm_data.synthetic.superpixels import horseseg_like

__all__ = ["GLYPH_SHAPE", "N_LETTERS", "RandomState", "chain", "conll_like", "horseseg_like",
           "lsp_like", "matching", "multiclass", "ocr_like"]
