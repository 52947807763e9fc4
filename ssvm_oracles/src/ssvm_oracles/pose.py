"""Pose estimation on a tree of parts (Osokin et al. (2016), App. I.4, after Chen & Yuille 2014)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from ssvm_core import StructuredModel
from ssvm_core.validation import check_weights
from ssvm_oracles._tree_maxsum import (
    LOSS_KINDS,
    PoseData,
    PoseOracle,
    decode,
    pose_size,
    pose_weight_bounds,
    tree_arrays,
)


class PoseModel(StructuredModel):
    """Tree-structured pose model with type-dependent quadratic deformations.

    Parts p = 0..P-1 form a tree (``parents[p]``, -1 at the root); each tree
    edge {c, parent(c)} gives two arcs, (c -> parent) = arc 2k and
    (parent -> c) = arc 2k + 1 for the k-th non-root part c, A = 2 (P - 1).
    A labelling is the int32 vector ``[x_0, y_0, ..., x_{P-1}, y_{P-1}, t_0, ...,
    t_{A-1}]``: a grid position per part (x the column, y the row) and a type
    in [0, T) per arc.  An input ``x`` is a triple ``(unary, pairwise, offsets)``:

    - ``unary`` (P, H, W): phi^U_p, a score map per part;
    - ``pairwise`` (A, T, H, W): phi^P_a(l, t), the type score of arc a at the
      position of its source part;
    - ``offsets`` (A, T, 2): the mean displacement (r_x, r_y) of each arc type
      (Osokin et al. (2016) puts these in x; they come from clustering the training poses).

    The score (Osokin et al. (2016), App. I.4) is
    ``sum_p w_U[p] unary[p, l_p] + sum_a w_T[a] pairwise[a, t_a, l_src(a)]
    - sum_a <w_P[a, t_a], (d_x, d_x^2, d_y, d_y^2)>`` with
    ``d = l_src(a) - l_dst(a) - offsets[a, t_a]``: w = [w_U (P) | w_T (A) |
    w_P (A, T, 4)], d = P + A + 4 A T (2,676 for P = 26, T = 13, as in the
    paper).  The deformation features are the paper's Delta negated, so the
    paper's positivity constraints (``weight_bounds``) make each arc's
    score concave in its displacement and the max oracle exact with distance
    transforms; the oracle raises ``ValueError`` on a negative quadratic weight.

    Task loss: ``(1/P) sum_p min(1, |l_true,p - l_p|^2 / rho^2)``
    (``loss="truncated"``, Osokin et al. (2016), App. I.4) or ``(1/P) #{p : |l_true,p - l_p| >
    rho}``
    (``loss="pdj"``), with ``rho = loss_scale * |l_true,a - l_true,b|`` for
    ``(a, b) = scale_parts`` (in the paper the left shoulder and the right hip).

    Parameters
    ----------
    parents : sequence of int
        Parent of each part, -1 for the root (at least two parts).
    scale_parts : (int, int)
        The two parts whose ground-truth distance scales the loss.
    n_types : int, optional
        Types per arc T, enforced on every input; if omitted (default), each
        ``bind``, ``predict`` or ``joint_feature`` takes it from its inputs,
        so the model can be refitted on data with another T.
    loss : {"truncated", "pdj"}
        Per-part loss, see above.
    loss_scale : float
        Loss radius as a multiple of the scale distance (> 0).

    Attributes
    ----------
    n_types_in_ : int
        T of the data last bound (set by ``bind``; the constructor's
        ``n_types`` is never changed).
    """

    def __init__(self, parents: Sequence[int], scale_parts: tuple[int, int],
                 n_types: int | None = None, loss: str = "truncated",
                 loss_scale: float = 1.0):
        self.parents, self._order, self._arc_up = tree_arrays(parents)
        if self.n_parts < 2:
            raise ValueError("a pose tree needs at least two parts")
        a, b = (int(v) for v in scale_parts)
        if a == b or not (0 <= a < self.n_parts and 0 <= b < self.n_parts):
            raise ValueError(f"scale_parts must be two different parts in [0, {self.n_parts}), "
                             f"got {scale_parts}")
        self.scale_parts = (a, b)
        if n_types is not None and (int(n_types) != n_types or n_types < 1):
            raise ValueError(f"n_types must be a positive integer, got {n_types}")
        self.n_types = None if n_types is None else int(n_types)
        if loss not in LOSS_KINDS:
            raise ValueError(f"unknown loss {loss!r}; use one of {sorted(LOSS_KINDS)}")
        self.loss_kind = loss
        if not (np.isfinite(loss_scale) and loss_scale > 0):
            raise ValueError(f"loss_scale must be a finite positive number, got {loss_scale}")
        self.loss_scale = float(loss_scale)

    def get_params(self, deep: bool = True) -> dict:
        """Constructor parameters (``loss`` is kept as ``loss_kind``)."""
        return {"parents": self.parents, "scale_parts": self.scale_parts,
                "n_types": self.n_types, "loss": self.loss_kind, "loss_scale": self.loss_scale}

    def __repr__(self) -> str:
        return (f"PoseModel(n_parts={self.n_parts}, n_types={self.n_types}, "
                f"scale_parts={self.scale_parts}, loss={self.loss_kind!r})")

    @property
    def n_parts(self) -> int:
        return int(self.parents.shape[0])

    @property
    def n_arcs(self) -> int:
        return 2 * (self.n_parts - 1)

    @property
    def arcs(self) -> np.ndarray:
        """(A, 2) int array: source and destination part of every arc."""
        out = np.empty((self.n_arcs, 2), dtype=np.intp)
        for c in np.flatnonzero(self.parents >= 0):
            up = self._arc_up[c]
            out[up] = (c, self.parents[c])
            out[up + 1] = (self.parents[c], c)
        return out

    def _types(self) -> int:
        """T as given, else of the data last bound."""
        T = self.n_types if self.n_types is not None else getattr(self, "n_types_in_", None)
        if T is None:
            raise ValueError("n_types is unknown until the model is bound to data")
        return T

    @property
    def size_joint_feature(self) -> int:
        """d for T types per arc (as given, else of the data last bound)."""
        return int(pose_size(self.n_parts, self._types()))

    def weight_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Box constraints ``lower <= w <= upper`` the max oracle needs.

        The quadratic deformation weights (w_P[a, t, 1] and w_P[a, t, 3]) are
        bounded below by 0; everything else is free (+-inf).
        """
        return pose_weight_bounds(self.n_parts, self._types())

    def split_labels(self, y) -> tuple[np.ndarray, np.ndarray]:
        """``(positions (P, 2) as (x, y), types (A,))`` of a labelling."""
        y = np.asarray(y)
        if y.shape != (2 * self.n_parts + self.n_arcs,):
            raise ValueError(f"a pose labelling has shape ({2 * self.n_parts + self.n_arcs},), "
                             f"got {y.shape}")
        return y[:2 * self.n_parts].reshape(self.n_parts, 2), y[2 * self.n_parts:]

    # -- inputs -------------------------------------------------------------

    def _check_x(self, x, index: int,
                 n_types: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(unary, pairwise, offsets) of one input with ``n_types`` types per arc
        (any T >= 1 when None; it is ``pairwise.shape[1]``)."""
        where = f"input {index}"
        if not isinstance(x, (tuple, list)) or len(x) != 3:
            raise ValueError(f"{where} must be a triple (unary, pairwise, offsets)")
        unary, pairwise, offsets = (np.asarray(v, dtype=np.float64) for v in x)
        P, A = self.n_parts, self.n_arcs
        if unary.ndim != 3 or unary.shape[0] != P or 0 in unary.shape:
            raise ValueError(f"{where}: unary has shape {unary.shape}, expected ({P}, H, W)")
        if pairwise.ndim != 4 or pairwise.shape[0] != A:
            raise ValueError(f"{where}: pairwise has shape {pairwise.shape}, "
                             f"expected ({A}, T, H, W)")
        if n_types is None:
            if pairwise.shape[1] < 1:
                raise ValueError(f"{where}: pairwise has no types")
            n_types = int(pairwise.shape[1])
        T, (H, W) = n_types, unary.shape[1:]
        if pairwise.shape != (A, T, H, W):
            raise ValueError(f"{where}: pairwise has shape {pairwise.shape}, "
                             f"expected {(A, T, H, W)}")
        if offsets.shape != (A, T, 2):
            raise ValueError(f"{where}: offsets have shape {offsets.shape}, expected {(A, T, 2)}")
        for name, arr in (("unary", unary), ("pairwise", pairwise), ("offsets", offsets)):
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"{where}: {name} has NaN or infinite entries")
        return unary, pairwise, offsets

    def _pack(self, X: Sequence) -> tuple[PoseData, int]:
        """The checked inputs packed for the oracle, and their T."""
        if len(X) == 0:
            raise ValueError("X is empty")
        checked = [self._check_x(X[0], 0, self.n_types)]
        T = checked[0][1].shape[1]
        checked += [self._check_x(x, i, T) for i, x in enumerate(X[1:], start=1)]
        shapes = np.array([u.shape[1:] for u, _, _ in checked], dtype=np.intp)
        unary_ptr = np.concatenate([[0], np.cumsum([u.size for u, _, _ in checked])])
        pair_ptr = np.concatenate([[0], np.cumsum([p.size for _, p, _ in checked])])
        data = PoseData(self.parents, T, shapes,
                         np.concatenate([u.ravel() for u, _, _ in checked]),
                         unary_ptr.astype(np.intp),
                         np.concatenate([p.ravel() for _, p, _ in checked]),
                         pair_ptr.astype(np.intp),
                         np.ascontiguousarray(np.stack([o for _, _, o in checked])))
        return data, T

    def _check_y(self, y, shape: tuple[int, int], index: int, n_types: int) -> np.ndarray:
        y = np.asarray(y)
        if not np.issubdtype(y.dtype, np.integer):
            raise ValueError(f"labelling {index} must hold integers, got dtype {y.dtype}")
        positions, types = self.split_labels(y)
        H, W = shape
        if (positions.min() < 0 or positions[:, 0].max() >= W
                or positions[:, 1].max() >= H):
            raise ValueError(f"labelling {index} has a part outside the {H} x {W} grid")
        if types.min() < 0 or types.max() >= n_types:
            raise ValueError(f"labelling {index} has an arc type outside [0, {n_types})")
        return y.astype(np.int32)

    def _radius2(self, y) -> float:
        positions, _ = self.split_labels(y)
        a, b = self.scale_parts
        dist2 = float(np.sum((positions[a] - positions[b]).astype(float) ** 2))
        if dist2 == 0.0:
            raise ValueError(f"parts {a} and {b} coincide in the ground truth: the loss scale "
                             "(their distance) is zero")
        return self.loss_scale ** 2 * dist2

    # -- the StructuredModel interface -----------------------------------------

    def bind(self, X: Sequence, Y: Sequence) -> PoseOracle:
        if len(X) != len(Y):
            raise ValueError(f"X has {len(X)} examples but Y has {len(Y)}")
        data, T = self._pack(X)
        shapes = np.asarray(data.shapes)
        truth = np.stack([self._check_y(y, shapes[i], i, T)
                          for i, y in enumerate(Y)])
        radius2 = np.array([self._radius2(y) for y in truth])
        oracle = PoseOracle(data, truth, radius2, self.loss_kind)
        self.n_types_in_ = T
        return oracle

    def predict(self, X: Sequence, w: np.ndarray) -> list[np.ndarray]:
        data, T = self._pack(X)
        P = self.n_parts
        w = check_weights(w, int(pose_size(P, T)), f"{P} parts and {T} types per arc")
        return list(decode(data, w))

    def joint_feature(self, x, y) -> np.ndarray:
        unary, pairwise, offsets = self._check_x(x, 0, self.n_types)
        P, A, T = self.n_parts, self.n_arcs, pairwise.shape[1]
        y = self._check_y(y, unary.shape[1:], 0, T)
        positions, types = self.split_labels(y)
        src, dst = self.arcs.T
        arange = np.arange(A)
        d = positions[src] - positions[dst] - offsets[arange, types]
        deform = np.zeros((A, T, 4))
        deform[arange, types] = -np.stack([d[:, 0], d[:, 0] ** 2, d[:, 1], d[:, 1] ** 2], axis=1)
        return np.concatenate([
            unary[np.arange(P), positions[:, 1], positions[:, 0]],
            pairwise[arange, types, positions[src, 1], positions[src, 0]],
            deform.ravel()])

    def loss(self, y_true, y_pred) -> float:
        true_pos, _ = self.split_labels(y_true)
        pred_pos, _ = self.split_labels(y_pred)
        dist2 = np.sum((true_pos - pred_pos).astype(float) ** 2, axis=1)
        radius2 = self._radius2(y_true)
        if self.loss_kind == "pdj":
            return float(np.mean(dist2 > radius2))
        return float(np.mean(np.minimum(1.0, dist2 / radius2)))

    def enumerate_labellings(self, x):
        unary, pairwise, _ = self._check_x(x, 0, self.n_types)
        H, W = unary.shape[1:]
        cells = [(cx, cy) for cy in range(H) for cx in range(W)]
        for placement in itertools.product(cells, repeat=self.n_parts):
            for types in itertools.product(range(pairwise.shape[1]), repeat=self.n_arcs):
                yield np.array([v for cell in placement for v in cell] + list(types),
                               dtype=np.int32)
