"""The list of known data sets, a loader that dispatches by name, and each set's model.

Every data set names the structured model it is trained with as a lazy
:class:`ModelSpec` (module, class and arguments), so that ``ssvm_data`` does not
import ``ssvm_oracles``: :func:`model_for` imports and builds it on demand.
"""

from __future__ import annotations

import importlib
import os
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple

import numpy as np

from ssvm_data import _io, conll, ocr, synthetic
from ssvm_data.conll import CHUNK_TAGS, find_conll_files, load_conll2000
from ssvm_data.lsp import POSE_TREE_PARENTS, SCALE_PARTS
from ssvm_data.ocr import find_ocr_file, load_ocr


@dataclass(frozen=True)
class ModelSpec:
    """The structured model a data set is trained with, imported only when built.

    ``build`` returns ``getattr(import_module(module), name)(*args, **kwargs)``;
    with ``n_labels`` set, the keyword ``n_labels`` is also passed, as the number
    of labels seen in the data (largest label + 1, at least 2).

    Parameters
    ----------
    module : str
        Module holding the model class, e.g. ``"ssvm_oracles"``.
    name : str
        The class, e.g. ``"ChainModel"``.
    args : tuple, default ()
        Positional arguments.
    kwargs : mapping, default {}
        Keyword arguments.
    n_labels : str, optional
        Keyword that receives the number of labels in ``Y`` and ``Y_test``
        (e.g. ``"n_states"``); None when the model does not need it.
    """

    module: str
    name: str
    args: tuple = ()
    kwargs: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    n_labels: str | None = None

    def build(self, Y: Sequence | None = None, Y_test: Sequence | None = None):
        """Import the model class and instantiate it (labels counted in Y and Y_test).

        Raises
        ------
        ImportError
            If the model's package is not installed.
        ValueError
            If ``n_labels`` is set and neither ``Y`` nor ``Y_test`` holds a label.
        """
        try:
            module = importlib.import_module(self.module)
        except ImportError as err:
            raise ImportError(f"the model {self.module}.{self.name} needs the package "
                              f"{self.module.split('.')[0]} ({err})") from err
        kwargs = dict(self.kwargs)
        if self.n_labels is not None:
            kwargs[self.n_labels] = max(2, _largest_label(Y, Y_test) + 1)
        return getattr(module, self.name)(*self.args, **kwargs)

    def __str__(self) -> str:
        shown = [repr(a) if not isinstance(a, np.ndarray) else "..." for a in self.args]
        shown += [f"{k}={v!r}" for k, v in self.kwargs.items()]
        if self.n_labels is not None:
            shown.append(f"{self.n_labels}=<from the labels>")
        return f"{self.module}.{self.name}({', '.join(shown)})"


def _largest_label(*label_sets: Sequence | None) -> int:
    """Largest label in any labelling of the given sets (arrays of labels or of labellings)."""
    tops = [int(np.max(y)) for labels in label_sets if labels is not None
            for y in labels if np.size(y)]
    if not tops:
        raise ValueError("the data hold no label to count the model's labels from")
    return max(tops)


class _Dataset(NamedTuple):
    kind: str  # "real" or "synthetic"
    description: str
    load: Callable[[Any, Any], tuple]  # (data_home, random_state) -> X, Y, X_test, Y_test
    model: ModelSpec  # the structured model it is trained with
    find: Callable[[Any], str | None] | None = None  # real data: data_home -> local file
    search: Callable[[Any], list[str]] | None = None  # real data: data_home -> folders searched
    source: str = ""  # real data: how to get it


def _ocr_file(data_home) -> str | None:
    found = find_ocr_file(data_home=data_home)
    return None if found is None else str(found)


def _conll_folder(data_home) -> str | None:
    found = find_conll_files(data_home=data_home)
    return None if found is None else str(found["train"].parent)


def _ocr_search(data_home) -> list[str]:
    return [str(folder) for folder in ocr.search_folders(data_home)]


def _conll_search(data_home) -> list[str]:
    return [str(folder) for folder in conll.search_folders(data_home)]


_HOME = f"${_io.DATA_HOME_ENV}"
_OCR_SOURCE = (f"downloaded on first use from {ocr.OCR_URL} (unless ${_io.OFFLINE_ENV} is set), "
               f"or put letter.data.gz or letters.npz into {_HOME}/ocr/")
_CONLL_SOURCE = (f"downloaded on first use from {conll.CONLL_URLS['train']} and test.txt.gz "
                 f"beside it (unless ${_io.OFFLINE_ENV} is set), or put train.txt.gz and "
                 f"test.txt.gz into {_HOME}/conll2000/")


def _synthetic_split(generator: Callable, n_train: int, n_test: int, **kwargs) -> Callable:
    """A loader drawing n_train + n_test samples of one problem, split in this order.

    One draw is split (rather than two draws with different seeds) because chain()
    and multiclass() also draw the problem itself from the seed.
    """
    def load(data_home, random_state):
        X, Y = generator(n_train + n_test, random_state=random_state, **kwargs)
        return X[:n_train], Y[:n_train], X[n_train:], Y[n_train:]
    return load


_OCR_MODEL = ModelSpec("ssvm_oracles", "ChainModel", kwargs=MappingProxyType({"n_states": 26}))
_CONLL_MODEL = ModelSpec("ssvm_oracles", "ChainModel",
                         kwargs=MappingProxyType({"n_states": len(CHUNK_TAGS)}))

_DATASETS = {
    "ocr-small": _Dataset(
        "real", "Taskar's OCR words, split 'small': train on fold 0 (626 words), "
        "test on folds 1-9 (6,251 words)",
        lambda data_home, random_state: load_ocr("small", data_home=data_home), _OCR_MODEL,
        _ocr_file, _ocr_search, _OCR_SOURCE),
    "ocr-large": _Dataset(
        "real", "Taskar's OCR words, split 'large': train on folds 1-9 (6,251 words), "
        "test on fold 0 (626 words)",
        lambda data_home, random_state: load_ocr("large", data_home=data_home), _OCR_MODEL,
        _ocr_file, _ocr_search, _OCR_SOURCE),
    "conll": _Dataset(
        "real", "CoNLL-2000 chunking, CRFsuite attributes: train on 8,936 sentences, "
        "test on 2,012 (23 chunk tags)",
        lambda data_home, random_state: load_conll2000("full", data_home=data_home),
        _CONLL_MODEL, _conll_folder, _conll_search, _CONLL_SOURCE),
    "conll-small": _Dataset(
        "real", "CoNLL-2000 chunking, first 1,000 training sentences (attributes from "
        "them), test on 2,012",
        lambda data_home, random_state: load_conll2000("small", data_home=data_home),
        _CONLL_MODEL, _conll_folder, _conll_search, _CONLL_SOURCE),
    "synthetic-ocr": _Dataset(
        "synthetic", "OCR-like noisy glyph words with letter bigrams "
        "(synthetic.ocr_like), 600 train and 200 test words",
        _synthetic_split(synthetic.ocr_like, 600, 200), _OCR_MODEL),
    "synthetic-chain": _Dataset(
        "synthetic", "random HMM chains with Gaussian features (synthetic.chain: "
        "4 states, 8 features, lengths 3-10), 200 train and 200 test sequences",
        _synthetic_split(synthetic.chain, 200, 200, length=(3, 10), n_states=4, n_features=8),
        ModelSpec("ssvm_oracles", "ChainModel", n_labels="n_states")),
    "synthetic-multiclass": _Dataset(
        "synthetic", "Gaussian blobs (synthetic.multiclass: 3 classes, 5 features), "
        "300 train and 300 test samples",
        _synthetic_split(synthetic.multiclass, 300, 300),
        ModelSpec("ssvm_oracles", "MulticlassModel", n_labels="n_classes")),
    "synthetic-horseseg": _Dataset(
        "synthetic", "HorseSeg-like superpixel graphs (synthetic.horseseg_like: 147 "
        "superpixels, 1,969 unary and 100 pairwise features), 20 train and 20 test images",
        _synthetic_split(synthetic.horseseg_like, 20, 20),
        # exact min-cut oracle, needs w_P >= 0 (Osokin et al. (2016), App. I.3)
        ModelSpec("ssvm_oracles", "GraphCutModel")),
    "synthetic-matching": _Dataset(
        "synthetic", "word-alignment-like bipartite matchings (synthetic.matching: "
        "sentences of 10-30 words, 82 edge features, planted weights), 200 train and "
        "100 test pairs",
        _synthetic_split(synthetic.matching, 200, 100),
        # asymmetric Hamming loss, costs 1 and 3 (Lacoste-Julien et al. (2013), App. F)
        ModelSpec("ssvm_oracles", "MatchingModel")),
    "synthetic-lsp": _Dataset(
        "synthetic", "LSP-like poses of the 26-node tree (synthetic.lsp_like: 13 types per "
        "arc, score maps on a 16 x 16 grid), 20 train and 10 test poses",
        _synthetic_split(synthetic.lsp_like, 20, 10),
        # distance transforms need quadratic weights >= 0
        ModelSpec("ssvm_oracles", "PoseModel", (POSE_TREE_PARENTS, SCALE_PARTS))),
}


class DatasetTask(NamedTuple):
    """What a data set's labels mean, for evaluating and writing predictions.

    Attributes
    ----------
    kind : str
        The task kind, a key of :data:`ssvm_data.metrics.TASK_METRICS`:
        ``"sequence"``, ``"chunking"``, ``"multiclass"`` or ``"structured"``.
    labels : tuple of str or None
        Name of each label (``labels[k]`` of label k): letters for OCR, chunk
        tags for CoNLL; None when the labels have no names.
    """

    kind: str
    labels: tuple[str, ...] | None = None


_LETTERS = DatasetTask("sequence", tuple(string.ascii_lowercase))
_CHUNKS = DatasetTask("chunking", CHUNK_TAGS)
_TASKS = {
    "ocr-small": _LETTERS, "ocr-large": _LETTERS, "synthetic-ocr": _LETTERS,
    "conll": _CHUNKS, "conll-small": _CHUNKS,
    "synthetic-chain": DatasetTask("sequence"),
    "synthetic-multiclass": DatasetTask("multiclass"),
}


def dataset_task(name: str) -> DatasetTask:
    """The task of data set ``name``: which metrics ``ssvm evaluate`` reports, label names.

    Raises
    ------
    ValueError
        If `name` is unknown (the message lists the known names).

    Examples
    --------
    >>> dataset_task("conll").kind, dataset_task("ocr-large").labels[:3]
    ('chunking', ('a', 'b', 'c'))
    >>> dataset_task("synthetic-matching")
    DatasetTask(kind='structured', labels=None)
    """
    _dataset(name)
    return _TASKS.get(name, DatasetTask("structured"))


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
        would be read, for CoNLL the folder of its two files, as a str, or None),
        ``searched`` (real data sets: the folders searched, in order; synthetic
        ones: empty), ``source`` (real data sets: how to get the files; synthetic
        ones: empty) and ``description``.

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
            "searched": dataset.search(data_home) if dataset.search is not None else [],
            "source": dataset.source,
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
    return _dataset(name).load(data_home, random_state)


def model_spec(name: str) -> ModelSpec:
    """The :class:`ModelSpec` of the model data set ``name`` is trained with.

    Raises
    ------
    ValueError
        If `name` is unknown (the message lists the known names).

    Examples
    --------
    >>> str(model_spec("synthetic-ocr"))
    'ssvm_oracles.ChainModel(n_states=26)'
    >>> str(model_spec("synthetic-chain"))
    'ssvm_oracles.ChainModel(n_states=<from the labels>)'
    """
    return _dataset(name).model


def model_for(name: str, Y: Sequence | None = None, Y_test: Sequence | None = None):
    """The structured model data set ``name`` is trained with, built (imports its package).

    Parameters
    ----------
    name : str
        One of the names listed by :func:`available_datasets`.
    Y, Y_test : sequences of labellings, optional
        The training and test labels, from :func:`load_dataset`; needed by the
        data sets whose number of labels comes from the data
        (``synthetic-chain``, ``synthetic-multiclass``).

    Returns
    -------
    StructuredModel
        E.g. ``ssvm_oracles.ChainModel(n_states=26)`` for the OCR data sets.

    Raises
    ------
    ValueError
        If `name` is unknown (the message lists the known names), or if the
        model needs the labels and none are given.
    ImportError
        If the model's package (``ssvm_oracles``) is not installed.
    """
    return model_spec(name).build(Y, Y_test)


def _dataset(name: str) -> _Dataset:
    if name not in _DATASETS:
        raise ValueError(f"unknown data set {name!r}; known names: {', '.join(_DATASETS)}")
    return _DATASETS[name]
