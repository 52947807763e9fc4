"""Binary superpixel segmentation (HorseSeg, Osokin et al. (2016), App. I.3): graph-cut max oracle.

The default max oracle is :class:`GraphCutOracle` (``ssvm_oracles._graphcut``),
a Cython oracle that runs without the GIL: potentials from CSR unary features,
an exact s-t min-cut by its own Boykov-Kolmogorov max-flow, then sparse psi
and the class-balanced loss.  ``backend="pymaxflow"`` computes the same cut
with PyMaxflow (Kolmogorov's C++ max-flow; GPL, the optional extra
``ssvm-oracles[graphcut]``) in a Python oracle.  :meth:`GraphCutModel.predict`
uses the backend's min-cut.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ssvm_core import StructuredModel
from ssvm_core.validation import check_blocks, check_weights
from ssvm_oracles._graphcut import GraphCutOracle, graphcut_weight_bounds
from ssvm_oracles._graphs import block_storage
from ssvm_oracles._maxflow import min_cut
from ssvm_oracles.exceptions import NonSubmodularError

__all__ = ["GraphCutModel", "GraphCutOracle", "NonSubmodularError", "PyMaxflowOracle",
           "balanced_weights", "min_cut", "pymaxflow_min_cut"]

BACKENDS = ("bk", "pymaxflow")
FEATURE_DTYPES = ("auto", "float64", "float32")


class _Image(NamedTuple):
    """One validated example: CSR unary features, edges as two index vectors."""

    unary: sp.csr_array  # (n_nodes, n_unary) float64, explicit zeros removed
    head: np.ndarray  # (n_edges,) int32, first endpoint
    tail: np.ndarray  # (n_edges,) int32, second endpoint
    pairwise: np.ndarray  # (n_edges, n_pairwise), C-contiguous, >= 0


def _check_image(x, i: int, n_unary: int | None, n_pairwise: int | None,
                 round32: bool = False) -> _Image:
    if not isinstance(x, (tuple, list)) or len(x) != 3:
        raise ValueError(f"X[{i}] must be a (unary, edges, pairwise) triple, "
                         f"got {type(x).__name__}")
    unary = sp.csr_array(x[0], dtype=np.float64) if sp.issparse(x[0]) else np.asarray(
        x[0], dtype=np.float64)
    edges = np.asarray(x[1])
    pairwise = np.asarray(x[2], dtype=np.float64)
    if unary.ndim != 2 or unary.shape[0] < 1:
        raise ValueError(f"X[{i}] unary features must be 2-D (nodes x features) with at "
                         f"least one node, got shape {unary.shape}")
    if n_unary is not None and unary.shape[1] != n_unary:
        raise ValueError(f"X[{i}] has {unary.shape[1]} unary features, expected {n_unary}")
    if edges.size == 0:
        edges = edges.reshape(0, 2)
    if edges.ndim != 2 or edges.shape[1] != 2:
        raise ValueError(f"X[{i}] edges must have shape (n_edges, 2), got {edges.shape}")
    if edges.size and not np.issubdtype(edges.dtype, np.integer):
        raise ValueError(f"X[{i}] edges must hold integer node indices, got dtype {edges.dtype}")
    n_nodes = unary.shape[0]
    if edges.size and (edges.min() < 0 or edges.max() >= n_nodes):
        raise ValueError(f"X[{i}] has edge endpoints outside [0, {n_nodes}): "
                         f"min {edges.min()}, max {edges.max()}")
    if np.any(edges[:, 0] == edges[:, 1]):
        raise ValueError(f"X[{i}] has self-loop edges (both endpoints equal)")
    if pairwise.ndim != 2 or pairwise.shape[0] != edges.shape[0]:
        raise ValueError(f"X[{i}] pairwise features must have shape (n_edges={edges.shape[0]}, "
                         f"n_pairwise), got {pairwise.shape}")
    if n_pairwise is not None and pairwise.shape[1] != n_pairwise:
        raise ValueError(f"X[{i}] has {pairwise.shape[1]} pairwise features, "
                         f"expected {n_pairwise}")
    values = unary.data if sp.issparse(unary) else unary
    if not (np.all(np.isfinite(values)) and np.all(np.isfinite(pairwise))):
        raise ValueError(f"X[{i}] has NaN or infinite features")
    if pairwise.size and pairwise.min() < 0:
        raise ValueError(f"X[{i}] has negative pairwise features; they must be >= 0 so that "
                         "nonnegative pairwise weights give a submodular problem")
    unary = sp.csr_array(unary)
    if round32:
        with np.errstate(over="ignore"):              # overflow to inf is reported below
            unary.data = unary.data.astype(np.float32).astype(np.float64)
            pairwise = pairwise.astype(np.float32).astype(np.float64)
        if not (np.all(np.isfinite(unary.data)) and np.all(np.isfinite(pairwise))):
            raise ValueError(f"X[{i}] has features beyond the float32 range "
                             "(feature_dtype='float32')")
    unary.eliminate_zeros()
    unary.sort_indices()
    return _Image(unary, edges[:, 0].astype(np.int32), edges[:, 1].astype(np.int32),
                  np.ascontiguousarray(pairwise))


def _check_labels(y, i: int, n_nodes: int) -> np.ndarray:
    y = np.asarray(y)
    if y.shape != (n_nodes,):
        raise ValueError(f"Y[{i}] has shape {y.shape}, expected ({n_nodes},) to match X[{i}]")
    if y.size and not (np.issubdtype(y.dtype, np.integer) or y.dtype == np.bool_):
        raise ValueError(f"Y[{i}] must hold integer labels 0/1, got dtype {y.dtype}")
    if np.any((y != 0) & (y != 1)):
        raise ValueError(f"Y[{i}] has labels outside {{0, 1}}")
    return y.astype(np.int32)


def balanced_weights(y_true: np.ndarray) -> np.ndarray:
    """Per-node loss weight omega_{y_true[p]} of the class-balanced Hamming loss.

    With n_0 and n_1 nodes of each true class, omega_c = 1 / (2 n_c) when both
    classes occur and 1 / n_c when only class c does, so the loss of a labelling
    lies in [0, 1] and is 1 exactly when every node is wrong.
    """
    y_true = np.asarray(y_true)
    counts = np.bincount(y_true, minlength=2).astype(np.float64)
    present = counts > 0
    omega = np.zeros(2)
    omega[present] = 1.0 / (present.sum() * counts[present])
    return omega[y_true]


def _check_pairwise_weights(w_pairwise: np.ndarray) -> None:
    if w_pairwise.size and w_pairwise.min() < 0:
        k = int(np.argmin(w_pairwise))
        raise NonSubmodularError.for_weight(k, w_pairwise[k])


def _exact_in_float32(values: np.ndarray) -> bool:
    return bool(np.all(values.astype(np.float32) == values))


def _pack(images: list[_Image], labels: list[np.ndarray], feature_dtype: str,
          blocks: str = "dense") -> GraphCutOracle:
    """Concatenate the images into the arrays of :class:`GraphCutOracle`.

    The feature values are stored as float32 for ``feature_dtype="float32"``
    (rounded by ``_check_image`` already) and for ``"auto"`` when that loses
    nothing, else as float64.  The blocks are stored as ``blocks`` says
    ("auto": ``_graphs.block_storage``).
    """
    unary = sp.vstack([im.unary for im in images], format="csr")
    n_pairwise = images[0].pairwise.shape[1]
    pairwise = np.concatenate([im.pairwise for im in images]).reshape(-1, n_pairwise)
    single = feature_dtype == "float32" or (
        feature_dtype == "auto" and _exact_in_float32(unary.data)
        and _exact_in_float32(pairwise))
    dtype = np.float32 if single else np.float64
    node_ptr = np.concatenate([[0], np.cumsum([im.unary.shape[0] for im in images])])
    edge_ptr = np.concatenate([[0], np.cumsum([len(im.head) for im in images])])
    n_unary = images[0].unary.shape[1]
    storage = block_storage(blocks, np.diff(node_ptr), np.diff(edge_ptr), node_coords=1,
                            pair_coords=n_pairwise, n_features=n_unary + n_pairwise)
    if blocks == "auto" and storage == "compact":
        storage = _boxed_storage(unary.indptr[node_ptr], n_pairwise, n_unary + n_pairwise)
    return GraphCutOracle(
        images[0].unary.shape[1], node_ptr.astype(np.intp), unary.indptr.astype(np.intp),
        unary.indices.astype(np.int32), unary.data.astype(dtype),
        edge_ptr.astype(np.intp), np.concatenate([im.head for im in images]),
        np.concatenate([im.tail for im in images]), np.ascontiguousarray(pairwise, dtype=dtype),
        np.concatenate(labels), np.concatenate([balanced_weights(y) for y in labels]), storage)


def _boxed_storage(image_rows: np.ndarray, n_pairwise: int, n_features: int) -> str:
    """"compact" unless a step on compact blocks does more work than on dense ones.

    Graph cuts train in a box (``weight_bounds``), and inside a box every step
    works in features: its line search and its move expand the direction into
    A_i e, about an image's stored unary entries plus the pairwise weights, where
    a dense block has d entries.  ``image_rows`` holds the unary matrix's row
    pointers at the images' first nodes (and after the last).
    """
    expansion = np.diff(image_rows).mean() + n_pairwise
    return "compact" if expansion <= n_features else "dense"


def _import_maxflow():
    try:
        import maxflow
    except ImportError as exc:
        raise ImportError("GraphCutModel(backend='pymaxflow') needs PyMaxflow: install it with "
                          "pip install 'ssvm-oracles[graphcut]' (PyMaxflow is GPL-licensed), "
                          "or use the built-in backend='bk'") from exc
    return maxflow


def pymaxflow_min_cut(unary_cost: np.ndarray, capacity: np.ndarray, head: np.ndarray,
                      tail: np.ndarray) -> np.ndarray:
    """:func:`min_cut` computed by PyMaxflow: one graph, vectorised edges and terminal arcs.

    Node p gets the terminal capacities (max(cost_p, 0), max(-cost_p, 0))
    towards (source, sink); nodes on the sink side of the minimum cut take
    label 1.
    """
    maxflow = _import_maxflow()
    unary_cost = np.asarray(unary_cost, dtype=np.float64)
    capacity = np.asarray(capacity, dtype=np.float64)
    graph = maxflow.Graph[float](len(unary_cost), len(capacity))
    nodes = graph.add_nodes(len(unary_cost))
    if len(capacity):
        graph.add_edges(nodes[head], nodes[tail], capacity, capacity)
    graph.add_grid_tedges(nodes, np.maximum(unary_cost, 0.0), np.maximum(-unary_cost, 0.0))
    graph.maxflow()
    return graph.get_grid_segments(nodes).astype(np.int32)


class PyMaxflowOracle:
    """The max oracle of :class:`GraphCutOracle` with the min-cut done by PyMaxflow.

    A Python oracle (see ``ssvm_core.PythonOracle``; it holds the GIL during
    a call): per call it forms the potentials in NumPy, cuts with
    :func:`pymaxflow_min_cut` and takes psi and the loss from the bound
    :class:`GraphCutOracle`'s ``evaluate``.  Built by
    ``GraphCutModel(backend="pymaxflow").bind``.
    """

    def __init__(self, oracle: GraphCutOracle, images: list[_Image]):
        _import_maxflow()
        self.oracle, self.images = oracle, images
        node_ptr = np.asarray(oracle.node_ptr)
        blocks = [slice(a, b) for a, b in itertools.pairwise(node_ptr)]
        self.labels = [np.asarray(oracle.labels)[b] for b in blocks]
        self.omega = [np.asarray(oracle.omega)[b] for b in blocks]
        self.n_blocks, self.n_features = oracle.n_blocks, oracle.n_features
        self.max_labels, self.max_psi_nnz = oracle.max_labels, oracle.max_psi_nnz
        self.n_unary = oracle.n_unary

    def weight_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """The box of the bound :class:`GraphCutOracle` (w_P >= 0)."""
        return self.oracle.weight_bounds()

    def solve(self, i: int, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        im, truth = self.images[i], self.labels[i]
        w_pairwise = w[self.n_unary:]
        _check_pairwise_weights(w_pairwise)
        cost = -2.0 * (im.unary @ w[:self.n_unary]) + self.omega[i] * (2 * truth - 1)
        labels = pymaxflow_min_cut(cost, im.pairwise @ w_pairwise, im.head, im.tail)
        psi, loss, _ = self.oracle.evaluate_py(i, labels, w)
        return labels, psi, loss

    def evaluate(self, i: int, labels: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, float]:
        psi, loss, _ = self.oracle.evaluate_py(i, labels, w)
        return psi, loss


class GraphCutModel(StructuredModel):
    """Binary labelling of superpixel graphs with Potts pairwise terms (Osokin et al. (2016), App.
    I.3).

    An input is a triple ``x = (unary, edges, pairwise)``: ``unary`` (n_nodes,
    n_unary) node features, ``edges`` (n_edges, 2) integer endpoints of the
    undirected adjacency graph and ``pairwise`` (n_edges, n_pairwise)
    nonnegative edge features.  A labelling ``y`` is a 0/1 vector over the
    nodes (1 = object, e.g. horse).

    Joint feature map, d = n_unary + n_pairwise (HorseSeg: 1,969 + 100)::

        phi(x, y) = [ sum_p (2 y_p - 1) x_p^U  |  - sum_{(p,q) in E, y_p != y_q} x_pq^P ]

    so <w, phi(x, y)> = sum_p <w_U, x_p^U> ([y_p = 1] - [y_p = 0])
    - sum_{(p,q)} <w_P, x_pq^P> [y_p != y_q]: the unary part is the paper's
    +/-1 layout (one weight vector shared by both labels), the pairwise part
    is a Potts term that *penalises* cut edges.  The paper prints the Potts term
    with a plus sign and maximises ``L - <w, phi>``; we maximise ``L + <w, phi>``
    as everywhere in ssvm, so the sign of the pairwise block is flipped to keep
    the paper's tractability condition: with nonnegative features, the
    loss-augmented problem is a min-cut exactly when ``w_P >= 0``
    (:meth:`weight_bounds`).  The oracle raises :class:`NonSubmodularError`
    otherwise.

    Loss: class-balanced Hamming loss L(y_i, y) = sum_p omega_{y_i,p}
    [y_p != y_i,p] with omega_c = 1 / (2 n_c) for the n_c nodes of true class c
    (1 / n_c if the image has a single class), so 0 <= L <= 1.  The authors'
    code additionally weights nodes by superpixel area; this model counts
    nodes.

    Parameters
    ----------
    n_unary, n_pairwise : int, optional
        Feature counts, enforced on every input; if omitted (default), each
        ``bind``, ``predict`` or ``joint_feature`` takes them from its inputs,
        so the model can be refitted on data of another width.
    feature_dtype : {"auto", "float64", "float32"}
        How the bound oracle stores the feature values (every product and sum
        is in float64 either way).  float32 halves the memory a call streams
        (at HorseSeg's size about 1.2x faster per call).  ``"auto"`` uses it
        when every value is exactly a float32; ``"float32"`` first rounds the
        features to float32 everywhere (``bind``, ``predict``,
        ``joint_feature``): the model is then the one on the rounded
        features, and its duality gaps are exact for that model.
    backend : {"bk", "pymaxflow"}
        Min-cut of the oracle and of ``predict``: the built-in Cython
        Boykov-Kolmogorov max-flow (GIL-free, the fastest), or PyMaxflow in a
        Python oracle (:class:`PyMaxflowOracle`; needs the extra
        ``ssvm-oracles[graphcut]``).
    blocks : {"auto", "compact", "dense"}, default "auto"
        How the solvers keep each image's dual vector. "compact" (the built-in
        backend only): one coordinate per node (the coefficient of its unary
        features) plus, in an image with edges, the n_pairwise pairwise
        weights, 8 (n_nodes + n_pairwise) bytes an image, and the image's node
        Gram (8 n_nodes^2 bytes, kept when no larger than a dense block, for
        images of at most 256 nodes); "dense": d = n_unary + n_pairwise
        numbers, 8 d bytes.  "auto" chooses compact unless it needs more
        memory than dense or a step on it does more work: graph cuts train in a
        box, where a step expands its direction into features, so compact blocks
        pay only when an image's stored unary entries (plus the pairwise
        weights) are fewer than d on average (and dense with
        ``backend="pymaxflow"``, a Python oracle).  Both reach the same iterates
        up to rounding.

    Attributes
    ----------
    n_unary_in_, n_pairwise_in_ : int
        The feature counts of the data last bound (set by ``bind``; the
        constructor's ``n_unary`` and ``n_pairwise`` are never changed).
    """

    def __init__(self, n_unary: int | None = None, n_pairwise: int | None = None, *,
                 feature_dtype: str = "auto", backend: str = "bk", blocks: str = "auto"):
        for name, value in (("n_unary", n_unary), ("n_pairwise", n_pairwise)):
            if value is not None and (int(value) != value or value < 1):
                raise ValueError(f"{name} must be a positive integer, got {value}")
        if feature_dtype not in FEATURE_DTYPES:
            raise ValueError(f"feature_dtype must be one of {FEATURE_DTYPES}, "
                             f"got {feature_dtype!r}")
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        self.n_unary = None if n_unary is None else int(n_unary)
        self.n_pairwise = None if n_pairwise is None else int(n_pairwise)
        self.feature_dtype = feature_dtype
        self.backend = backend
        self.blocks = check_blocks(blocks, ("dense", "compact") if backend == "bk"
                                   else ("dense",))

    def __repr__(self) -> str:
        extra = "" if self.blocks == "auto" else f", blocks={self.blocks!r}"
        return (f"GraphCutModel(n_unary={self.n_unary}, n_pairwise={self.n_pairwise}, "
                f"feature_dtype={self.feature_dtype!r}, backend={self.backend!r}{extra})")

    def _counts(self) -> tuple[int, int]:
        """(n_unary, n_pairwise) as given, else of the data last bound."""
        n_unary = self.n_unary if self.n_unary is not None else getattr(
            self, "n_unary_in_", None)
        n_pairwise = self.n_pairwise if self.n_pairwise is not None else getattr(
            self, "n_pairwise_in_", None)
        if n_unary is None or n_pairwise is None:
            raise ValueError("the feature counts are unknown until the model is bound to data")
        return n_unary, n_pairwise

    @property
    def size_joint_feature(self) -> int:
        """d = n_unary + n_pairwise (as given, else of the data last bound)."""
        return sum(self._counts())

    def weight_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Box ``lower <= w <= upper`` under which the oracle is exact.

        Returns
        -------
        lower, upper : ndarray (d,)
            ``lower`` is -inf on the unary weights and 0 on the pairwise ones;
            ``upper`` is +inf everywhere.
        """
        return graphcut_weight_bounds(*self._counts())

    def _check_X(self, X: Sequence) -> list[_Image]:
        if isinstance(X, (str, bytes)) or not isinstance(X, Sequence):
            raise TypeError(f"X must be a list of (unary, edges, pairwise) triples, "
                            f"got {type(X).__name__}")
        if len(X) == 0:
            raise ValueError("X is empty")
        images = []
        n_unary, n_pairwise = self.n_unary, self.n_pairwise
        for i, x in enumerate(X):
            image = _check_image(x, i, n_unary, n_pairwise,
                                 round32=self.feature_dtype == "float32")
            n_unary, n_pairwise = image.unary.shape[1], image.pairwise.shape[1]
            images.append(image)
        return images

    def bind(self, X: Sequence, Y: Sequence) -> GraphCutOracle | PyMaxflowOracle:
        images = self._check_X(X)
        if len(Y) != len(images):
            raise ValueError(f"X has {len(images)} images but Y has {len(Y)} labellings")
        labels = [_check_labels(y, i, im.unary.shape[0])
                  for i, (y, im) in enumerate(zip(Y, images))]
        oracle = _pack(images, labels, self.feature_dtype,
                       self.blocks if self.backend == "bk" else "dense")
        if self.backend != "bk":
            oracle = PyMaxflowOracle(oracle, images)
        self.n_unary_in_, self.n_pairwise_in_ = oracle.n_unary, oracle.n_features - oracle.n_unary
        return oracle

    def predict(self, X: Sequence, w: np.ndarray) -> list[np.ndarray]:
        images = self._check_X(X)
        n_unary, n_pairwise = images[0].unary.shape[1], images[0].pairwise.shape[1]
        w = check_weights(w, n_unary + n_pairwise,
                          f"{n_unary} unary and {n_pairwise} pairwise features")
        w_unary, w_pairwise = w[:n_unary], w[n_unary:]
        _check_pairwise_weights(w_pairwise)
        cut = min_cut if self.backend == "bk" else pymaxflow_min_cut
        # max <w, phi>: label 1 costs -2 <w_U, x_p> more than label 0.
        return [cut(-2.0 * (im.unary @ w_unary), im.pairwise @ w_pairwise, im.head, im.tail)
                for im in images]

    def joint_feature(self, x, y) -> np.ndarray:
        image = self._check_X([x])[0]
        y = _check_labels(y, 0, image.unary.shape[0])
        cut = (y[image.head] != y[image.tail]).astype(np.float64)
        return np.concatenate([image.unary.T @ (2.0 * y - 1.0), -(cut @ image.pairwise)])

    def loss(self, y_true, y_pred) -> float:
        y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
        if y_true.shape != y_pred.shape:
            raise ValueError(f"labellings of shapes {y_true.shape} and {y_pred.shape}")
        y_true = _check_labels(y_true, 0, y_true.shape[0])
        return float(balanced_weights(y_true) @ (y_true != y_pred))

    def enumerate_labellings(self, x):
        n_nodes = x[0].shape[0] if sp.issparse(x[0]) else np.asarray(x[0]).shape[0]
        for labels in itertools.product((0, 1), repeat=n_nodes):
            yield np.array(labels, dtype=np.int32)
