"""Bipartite matching model for word alignment.

Taskar et al. (2006); Lacoste-Julien et al. (2013), Sec. 6 and App. F.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple

import numpy as np

from ssvm_core import StructuredModel
from ssvm_core.validation import check_blocks, check_weights
from ssvm_oracles._graphs import block_storage
from ssvm_oracles._matching import MatchingOracle, decode


class MatchingInput(NamedTuple):
    """One pair: ``n_source`` x ``n_target`` nodes and candidate ``edges`` (m, 2) with
    ``features`` (m, d); edge ``e`` joins source ``edges[e, 0]`` and target ``edges[e, 1]``."""

    n_source: int
    n_target: int
    edges: np.ndarray
    features: np.ndarray


class _Packed(NamedTuple):
    pair_ptr: np.ndarray    # (n + 1,) source-node offsets
    n_target: np.ndarray    # (n,)
    row_ptr: np.ndarray     # (sources + 1,) edge offsets per source node
    col: np.ndarray         # (edges,) int32 target of each edge
    features: np.ndarray    # (edges, d)


def as_matching_input(x, n_features: int | None = None) -> MatchingInput:
    """Validate one pair given as an (n_s, n_t, d) array (every pair is a candidate
    edge) or as ``(n_source, n_target, edges, features)``; edges sorted by (source, target).
    """
    if isinstance(x, tuple):
        if len(x) != 4:
            raise ValueError("a pair given as a tuple must be (n_source, n_target, edges, "
                             f"features), got {len(x)} items")
        n_s, n_t = _positive(x[0], "n_source"), _positive(x[1], "n_target")
        edges = np.asarray(x[2])
        features = np.asarray(x[3], dtype=np.float64)
        if edges.size == 0:
            edges = edges.reshape(0, 2)
        if edges.ndim != 2 or edges.shape[1] != 2:
            raise ValueError(f"edges must have shape (m, 2), got {edges.shape}")
        if edges.size and not np.issubdtype(edges.dtype, np.integer):
            raise ValueError(f"edges must hold integer node indices, got dtype {edges.dtype}")
        if features.ndim != 2 or features.shape[0] != edges.shape[0]:
            raise ValueError(f"features must have shape ({edges.shape[0]}, d), "
                             f"got {features.shape}")
        if edges.size and (edges[:, 0].min() < 0 or edges[:, 0].max() >= n_s
                           or edges[:, 1].min() < 0 or edges[:, 1].max() >= n_t):
            raise ValueError(f"edges must join sources in [0, {n_s}) to targets in [0, {n_t})")
    else:
        arr = np.asarray(x, dtype=np.float64)
        if arr.ndim != 3:
            raise ValueError("a pair must be an (n_source, n_target, d) feature array or an "
                             f"(n_source, n_target, edges, features) tuple, got shape {arr.shape}")
        n_s, n_t = _positive(arr.shape[0], "n_source"), _positive(arr.shape[1], "n_target")
        j, k = np.divmod(np.arange(n_s * n_t), n_t)
        edges = np.stack([j, k], axis=1)
        features = arr.reshape(n_s * n_t, arr.shape[2])
    if n_features is not None and features.shape[1] != n_features:
        raise ValueError(f"edge features have {features.shape[1]} dimensions, "
                         f"expected {n_features}")
    if not np.all(np.isfinite(features)):
        raise ValueError("edge features have NaN or infinite values")
    edges = edges.astype(np.intp)
    order = np.lexsort((edges[:, 1], edges[:, 0]))
    edges, features = edges[order], features[order]
    if np.any(np.all(edges[1:] == edges[:-1], axis=1)):
        raise ValueError("a candidate edge is listed twice")
    return MatchingInput(n_s, n_t, edges, features)


def _positive(value, name: str) -> int:
    if int(value) != value or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


class MatchingModel(StructuredModel):
    """Bipartite matchings with per-edge features and an asymmetric Hamming loss.

    A pair ``x`` has ``n_s`` source and ``n_t`` target nodes and candidate edges
    with d features each: an ``(n_s, n_t, d)`` array (all pairs are
    candidates) or ``(n_source, n_target, edges, features)`` (see
    ``MatchingInput``).  A labelling is a matching stored as an int array of
    length ``n_s``: ``y[j]`` is the target matched to source ``j`` or -1;
    nodes may stay unmatched.  ``phi(x, y)`` sums the features of the matched
    edges.  Loss (Lacoste-Julien et al. (2013), App. F): ``(precision_cost * #predicted edges not
    true +
    recall_cost * #true edges missed) / n_s`` (no division when
    ``normalize=False``).  ``bind`` returns a Cython ``MatchingOracle``
    (maximum-weight matching by the Hungarian method, without the GIL).

    Parameters
    ----------
    n_features : int, optional
        Edge feature dimension d, enforced on every input; if omitted
        (default), each ``bind`` or ``predict`` takes it from its inputs, so
        the model can be refitted on data of another width.
    precision_cost, recall_cost : float
        Cost of a predicted edge that is not true (1 in the paper) and of a
        true edge that is missed (3).
    normalize : bool
        Divide the loss by the number of source nodes.
    blocks : {"auto", "compact", "dense"}, default "auto"
        How the solvers keep each pair's dual vector. "compact": one
        coordinate per candidate edge (the difference of the two matchings'
        edge indicators), 8 m bytes for m candidate edges, plus the pair's
        m x m edge Gram when it is no larger than a dense block (m^2 <= d,
        m <= 256); "dense": d numbers, 8 d bytes.  "auto" chooses compact
        unless it needs more memory than dense, i.e. when the pairs have fewer
        candidate edges than features.  Both reach the same iterates up to
        rounding.

    Attributes
    ----------
    n_features_in_ : int
        d of the data last bound (set by ``bind``; the constructor's
        ``n_features`` is never changed).
    """

    def __init__(self, n_features: int | None = None, precision_cost: float = 1.0,
                 recall_cost: float = 3.0, normalize: bool = True, *, blocks: str = "auto"):
        if n_features is not None:
            n_features = _positive(n_features, "n_features")
        for name, cost in (("precision_cost", precision_cost), ("recall_cost", recall_cost)):
            if not (np.isfinite(cost) and cost >= 0):
                raise ValueError(f"{name} must be finite and >= 0, got {cost}")
        self.n_features = n_features
        self.precision_cost = float(precision_cost)
        self.recall_cost = float(recall_cost)
        self.normalize = bool(normalize)
        self.blocks = check_blocks(blocks, ("dense", "compact"))

    def __repr__(self) -> str:
        extra = "" if self.blocks == "auto" else f", blocks={self.blocks!r}"
        return (f"MatchingModel(n_features={self.n_features}, precision_cost="
                f"{self.precision_cost}, recall_cost={self.recall_cost}, "
                f"normalize={self.normalize}{extra})")

    @property
    def size_joint_feature(self) -> int:
        """d (as given, else of the data last bound)."""
        d = self.n_features if self.n_features is not None else getattr(
            self, "n_features_in_", None)
        if d is None:
            raise ValueError("n_features is unknown until the model is bound to data")
        return d

    def _inputs(self, X: Sequence) -> list[MatchingInput]:
        if len(X) == 0:
            raise ValueError("X is empty")
        pairs = [as_matching_input(X[0], self.n_features)]
        d = pairs[0].features.shape[1]
        if d < 1:
            raise ValueError("edge features must have at least one dimension")
        pairs += [as_matching_input(x, d) for x in X[1:]]
        return pairs

    def _pack(self, pairs: list[MatchingInput]) -> _Packed:
        n_s = np.array([p.n_source for p in pairs], dtype=np.intp)
        counts = np.concatenate([np.bincount(p.edges[:, 0], minlength=p.n_source)
                                 for p in pairs])
        return _Packed(pair_ptr=np.concatenate([[0], np.cumsum(n_s)]).astype(np.intp),
                       n_target=np.array([p.n_target for p in pairs], dtype=np.intp),
                       row_ptr=np.concatenate([[0], np.cumsum(counts)]).astype(np.intp),
                       col=np.concatenate([p.edges[:, 1] for p in pairs]).astype(np.int32),
                       features=np.ascontiguousarray(np.concatenate(
                           [p.features for p in pairs]), dtype=np.float64))

    def _check_matching(self, x: MatchingInput, y, where: str) -> np.ndarray:
        y = np.asarray(y)
        if y.shape != (x.n_source,):
            raise ValueError(f"{where}: a matching has one entry per source node "
                             f"({x.n_source}), got shape {y.shape}")
        if y.size and not np.issubdtype(y.dtype, np.integer):
            raise ValueError(f"{where}: a matching must hold integers, got dtype {y.dtype}")
        if y.size and (y.min() < -1 or y.max() >= x.n_target):
            raise ValueError(f"{where}: targets must be in [-1, {x.n_target})")
        matched = y[y >= 0]
        if np.unique(matched).size != matched.size:
            raise ValueError(f"{where}: a target is matched to two sources")
        return y.astype(np.int32)

    def _edge_indices(self, x: MatchingInput, y: np.ndarray, where: str) -> np.ndarray:
        """Row of each matched edge in ``x.edges`` (-1 for unmatched sources)."""
        keys = x.edges[:, 0] * x.n_target + x.edges[:, 1]        # sorted
        src = np.flatnonzero(y >= 0)
        want = src * x.n_target + y[src]
        pos = np.searchsorted(keys, want)
        ok = pos < keys.size
        ok[ok] = keys[pos[ok]] == want[ok]
        if not np.all(ok):
            j = src[np.flatnonzero(~ok)[0]]
            raise ValueError(f"{where}: ({j}, {y[j]}) is not a candidate edge")
        out = np.full(x.n_source, -1, dtype=np.intp)
        out[src] = pos
        return out

    def bind(self, X: Sequence, Y: Sequence) -> MatchingOracle:
        if len(X) != len(Y):
            raise ValueError(f"X has {len(X)} pairs but Y has {len(Y)}")
        pairs = self._inputs(X)
        packed = self._pack(pairs)
        labels, true_edge = [], []
        for i, (x, y) in enumerate(zip(pairs, Y)):
            y = self._check_matching(x, y, f"Y[{i}]")
            rows = self._edge_indices(x, y, f"Y[{i}]")
            labels.append(y)
            true_edge.append(np.where(rows >= 0, rows + packed.row_ptr[packed.pair_ptr[i]], -1))
        edges = np.diff(packed.row_ptr[packed.pair_ptr])
        storage = block_storage(self.blocks, np.maximum(edges, 1), np.zeros_like(edges),
                                node_coords=1, pair_coords=0,
                                n_features=packed.features.shape[1])
        oracle = MatchingOracle(packed.pair_ptr, packed.n_target, packed.row_ptr, packed.col,
                                packed.features, np.concatenate(labels).astype(np.int32),
                                np.concatenate(true_edge).astype(np.intp), self.precision_cost,
                                self.recall_cost, self.normalize, storage)
        self.n_features_in_ = packed.features.shape[1]
        return oracle

    def predict(self, X: Sequence, w: np.ndarray) -> list[np.ndarray]:
        """The maximum-weight matching of each pair (edges with positive score only)."""
        pairs = self._inputs(X)
        packed = self._pack(pairs)
        d = packed.features.shape[1]
        w = check_weights(w, d, f"{d} edge features")
        flat = decode(w, packed.pair_ptr, packed.n_target, packed.row_ptr, packed.col,
                      packed.features)
        return np.split(flat, packed.pair_ptr[1:-1])

    def joint_feature(self, x, y) -> np.ndarray:
        x = as_matching_input(x, self.n_features)
        y = self._check_matching(x, y, "joint_feature")
        rows = self._edge_indices(x, y, "joint_feature")
        return x.features[rows[rows >= 0]].sum(axis=0)

    def loss(self, y_true, y_pred) -> float:
        y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
        if y_true.shape != y_pred.shape or y_true.ndim != 1:
            raise ValueError(f"matchings of shapes {y_true.shape} and {y_pred.shape}")
        differ = y_true != y_pred
        n_fp = int(np.count_nonzero(differ & (y_pred >= 0)))
        n_fn = int(np.count_nonzero(differ & (y_true >= 0)))
        scale = 1.0 / max(y_true.shape[0], 1) if self.normalize else 1.0
        return (self.precision_cost * n_fp + self.recall_cost * n_fn) * scale

    def enumerate_labellings(self, x) -> Iterator[np.ndarray]:
        """Every matching of the candidate edges (tiny pairs only)."""
        x = as_matching_input(x, self.n_features)
        targets = [x.edges[x.edges[:, 0] == j, 1] for j in range(x.n_source)]
        y = np.full(x.n_source, -1, dtype=np.int32)

        def extend(j: int, used: set) -> Iterator[np.ndarray]:
            if j == x.n_source:
                yield y.copy()
                return
            y[j] = -1
            yield from extend(j + 1, used)
            for k in targets[j]:
                if k not in used:
                    y[j] = k
                    yield from extend(j + 1, used | {int(k)})
            y[j] = -1

        yield from extend(0, frozenset())
