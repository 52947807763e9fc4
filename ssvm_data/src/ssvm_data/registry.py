"""The list of known data sets and a loader that dispatches by name."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ssvm_data import synthetic
from ssvm_data.conll import find_conll_files, load_conll2000
from ssvm_data.ocr import find_ocr_file, load_ocr


class _Dataset(NamedTuple):
    kind: str  # "real" or "synthetic"
    description: str
    load: Callable[[Any, Any], tuple]  # (data_home, random_state) -> X, Y, X_test, Y_test
    find: Callable[[Any], str | None] | None = None  # real data: data_home -> local file


def _ocr_file(data_home) -> str | None:
    found = find_ocr_file(data_home=data_home)
    return None if found is None else str(found)


def _conll_folder(data_home) -> str | None:
    found = find_conll_files(data_home=data_home)
    return None if found is None else str(found["train"].parent)


def _synthetic_split(generator: Callable, n_train: int, n_test: int, **kwargs) -> Callable:
    """A loader drawing n_train + n_test samples of one problem, split in this order.

    One draw is split (rather than two draws with different seeds) because chain()
    and multiclass() also draw the problem itself from the seed.
    """
    def load(data_home, random_state):
        X, Y = generator(n_train + n_test, random_state=random_state, **kwargs)
        return X[:n_train], Y[:n_train], X[n_train:], Y[n_train:]
    return load


_DATASETS = {
    "ocr-small": _Dataset(
        "real", "Taskar's OCR words, split 'small': train on fold 0 (626 words), "
        "test on folds 1-9 (6,251 words)",
        lambda data_home, random_state: load_ocr("small", data_home=data_home), _ocr_file),
    "ocr-large": _Dataset(
        "real", "Taskar's OCR words, split 'large': train on folds 1-9 (6,251 words), "
        "test on fold 0 (626 words)",
        lambda data_home, random_state: load_ocr("large", data_home=data_home), _ocr_file),
    "conll": _Dataset(
        "real", "CoNLL-2000 chunking, CRFsuite attributes: train on 8,936 sentences, "
        "test on 2,012 (23 chunk tags)",
        lambda data_home, random_state: load_conll2000("full", data_home=data_home),
        _conll_folder),
    "conll-small": _Dataset(
        "real", "CoNLL-2000 chunking, first 1,000 training sentences (attributes from "
        "them), test on 2,012",
        lambda data_home, random_state: load_conll2000("small", data_home=data_home),
        _conll_folder),
    "synthetic-ocr": _Dataset(
        "synthetic", "OCR-like noisy glyph words with letter bigrams "
        "(synthetic.ocr_like), 600 train and 200 test words",
        _synthetic_split(synthetic.ocr_like, 600, 200)),
    "synthetic-chain": _Dataset(
        "synthetic", "random HMM chains with Gaussian features (synthetic.chain: "
        "4 states, 8 features, lengths 3-10), 200 train and 200 test sequences",
        _synthetic_split(synthetic.chain, 200, 200, length=(3, 10), n_states=4, n_features=8)),
    "synthetic-multiclass": _Dataset(
        "synthetic", "Gaussian blobs (synthetic.multiclass: 3 classes, 5 features), "
        "300 train and 300 test samples",
        _synthetic_split(synthetic.multiclass, 300, 300)),
    "synthetic-horseseg": _Dataset(
        "synthetic", "HorseSeg-like superpixel graphs (synthetic.horseseg_like: 147 "
        "superpixels, 1,969 unary and 100 pairwise features), 20 train and 20 test images",
        _synthetic_split(synthetic.horseseg_like, 20, 20)),
    "synthetic-matching": _Dataset(
        "synthetic", "word-alignment-like bipartite matchings (synthetic.matching: "
        "sentences of 10-30 words, 82 edge features, planted weights), 200 train and "
        "100 test pairs",
        _synthetic_split(synthetic.matching, 200, 100)),
    "synthetic-lsp": _Dataset(
        "synthetic", "LSP-like poses of the 26-node tree (synthetic.lsp_like: 13 types per "
        "arc, score maps on a 16 x 16 grid), 20 train and 10 test poses",
        _synthetic_split(synthetic.lsp_like, 20, 10)),
}


def available_datasets(data_home: str | os.PathLike | None = None) -> list[dict]:
    """Describe the known data sets and whether they can be loaded without a download.

    Parameters
    ----------
    data_home : str or os.PathLike, optional
        Folder to look in; defaults to ``$SSVM_DATA_HOME`` (see :func:`data_home`).

    Returns
    -------
    list of dict
        One dict per data set with keys ``name``, ``kind`` (``"real"`` or
        ``"synthetic"``), ``available`` (real data sets: a file was found locally,
        without downloading; synthetic ones: always True), ``path`` (the file that
        would be read, for CoNLL the folder of its two files, as a str, or None) and
        ``description``.

    Examples
    --------
    >>> [d["name"] for d in available_datasets()]  # doctest: +NORMALIZE_WHITESPACE
    ['ocr-small', 'ocr-large', 'conll', 'conll-small', 'synthetic-ocr',
     'synthetic-chain', 'synthetic-multiclass', 'synthetic-horseseg',
     'synthetic-matching', 'synthetic-lsp']
    """
    out = []
    for name, dataset in _DATASETS.items():
        path = dataset.find(data_home) if dataset.find is not None else None
        out.append({
            "name": name,
            "kind": dataset.kind,
            "available": dataset.kind == "synthetic" or path is not None,
            "path": path,
            "description": dataset.description,
        })
    return out


def load_dataset(
    name: str,
    *,
    data_home: str | os.PathLike | None = None,
    random_state: int | np.random.Generator | None = 0,
) -> tuple[Any, Any, Any, Any]:
    """Load a data set by name as ``X, Y, X_test, Y_test``.

    Parameters
    ----------
    name : str
        One of the names listed by :func:`available_datasets`.
    data_home : str or os.PathLike, optional
        Folder holding the real data sets; see :func:`ssvm_data.load_ocr`.
    random_state : None, int or numpy.random.Generator, default=0
        Seed of the synthetic data sets (ignored for real ones). Train and test
        sets are disjoint samples of the same problem.

    Returns
    -------
    X, Y, X_test, Y_test
        Lists of per-sequence arrays (OCR and chain data sets; sparse CSR token
        matrices for CoNLL) or arrays
        (``synthetic-multiclass``), as returned by the underlying loader.

    Raises
    ------
    ValueError
        If `name` is unknown.

    Examples
    --------
    >>> X, Y, X_test, Y_test = load_dataset("synthetic-ocr", random_state=0)
    >>> len(X), len(X_test)
    (600, 200)
    """
    if name not in _DATASETS:
        raise ValueError(f"unknown data set {name!r}; known names: {', '.join(_DATASETS)}")
    return _DATASETS[name].load(data_home, random_state)
