"""Multiclass model with a 0/1 or cost-matrix loss."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ssvm_core import StructuredModel
from ssvm_core.validation import check_blocks, check_weights
from ssvm_oracles._multiclass import MulticlassOracle


class MulticlassModel(StructuredModel):
    """Multiclass SVM as a structured model (one labelling = one class).

    Parameters
    ----------
    n_classes : int
        Number of classes K (>= 2).
    n_features : int, optional
        Input dimension F, enforced on every input; if omitted (default), each
        ``bind`` or ``predict`` takes it from its X, so the model can be
        refitted on data of another width.  Add a constant column to X for a
        per-class bias.
    cost : array (K, K), optional
        Loss ``cost[y_true, y_pred]``: zero diagonal, nonnegative; 0/1 if
        omitted.
    blocks : {"auto", "compact", "sparse", "dense"}, default "auto"
        How the solvers keep each example's dual vector. "compact" (what
        "auto" chooses): K numbers, the coefficients of the example's input in
        each class block (the dual vector of example i is always x_i c for a
        K-vector c); "sparse": x_i's nonzeros in every class block; "dense":
        K F numbers.  All three reach the same iterates up to rounding;
        compact needs F times less memory than dense and steps in O(K + nnz(x_i))
        instead of O(K F).

    Attributes
    ----------
    n_features_in_ : int
        F of the data last bound (set by ``bind``; the constructor's
        ``n_features`` is never changed).

    Notes
    -----
    X may be a dense (n, F) array or a scipy sparse matrix; the oracle
    stores the rows in CSR form and visits only their nonzeros.
    """

    def __init__(self, n_classes: int, n_features: int | None = None, cost=None,
                 blocks: str = "auto"):
        if int(n_classes) != n_classes or n_classes < 2:
            raise ValueError(f"n_classes must be an integer >= 2, got {n_classes}")
        if n_features is not None and (int(n_features) != n_features or n_features < 1):
            raise ValueError(f"n_features must be a positive integer, got {n_features}")
        self.n_classes = int(n_classes)
        self.n_features = None if n_features is None else int(n_features)
        if cost is None:
            cost = 1.0 - np.eye(self.n_classes)
        cost = np.array(cost, dtype=np.float64)
        if cost.shape != (self.n_classes, self.n_classes):
            raise ValueError(f"cost has shape {cost.shape}, expected "
                             f"({self.n_classes}, {self.n_classes})")
        if not np.all(np.isfinite(cost)) or cost.min() < 0 or np.any(np.diag(cost) != 0):
            raise ValueError("cost must be finite, nonnegative, with a zero diagonal")
        self.cost = cost
        self.blocks = check_blocks(blocks, ("dense", "sparse", "compact"))

    def __repr__(self) -> str:
        extra = "" if self.blocks == "auto" else f", blocks={self.blocks!r}"
        return (f"MulticlassModel(n_classes={self.n_classes}, "
                f"n_features={self.n_features}{extra})")

    @property
    def size_joint_feature(self) -> int:
        """d = K F for ``n_features``, else for the data last bound."""
        F = self.n_features if self.n_features is not None else getattr(
            self, "n_features_in_", None)
        if F is None:
            raise ValueError("n_features is unknown until the model is bound to data")
        return self.n_classes * F

    def _check_X(self, X) -> sp.csr_array | np.ndarray:
        """X as a CSR array (sparse input) or a C-contiguous float64 array, checked."""
        if sp.issparse(X):
            X = sp.csr_array(X, dtype=np.float64, copy=True)     # sorted in place below
            X.sum_duplicates()
            values = X.data
        else:
            X = np.ascontiguousarray(X, dtype=np.float64)
            values = X
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (examples x features), got shape {X.shape}")
        if X.shape[0] == 0:
            raise ValueError("X is empty")
        if self.n_features is not None and X.shape[1] != self.n_features:
            raise ValueError(f"X has {X.shape[1]} features, expected {self.n_features}")
        if not np.all(np.isfinite(values)):
            raise ValueError("X has NaN or infinite features")
        return X

    def _check_classes(self, y, name: str) -> np.ndarray:
        """``y`` as a flat int32 array of classes in [0, K), else a ``ValueError``."""
        y = np.asarray(y).reshape(-1)
        if y.size and not np.issubdtype(y.dtype, np.integer):
            raise ValueError(f"{name} must hold integer classes, got dtype {y.dtype}")
        if y.size and (y.min() < 0 or y.max() >= self.n_classes):
            raise ValueError(f"{name} has classes outside [0, {self.n_classes}): "
                             f"min {y.min()}, max {y.max()}")
        return y.astype(np.int32)

    def _one_class(self, y, name: str) -> int:
        """The class of a single labelling (a scalar or a length-1 array)."""
        y = self._check_classes(y, name)
        if y.shape != (1,):
            raise ValueError(f"{name} must be one class, got {y.shape[0]} values")
        return int(y[0])

    def _check_y(self, Y, n: int) -> np.ndarray:
        y = np.asarray(Y).reshape(-1) if len(Y) else np.zeros(0, np.int32)
        if y.shape != (n,):
            raise ValueError(f"Y must hold one class per example: {n} expected, got {y.shape}")
        return self._check_classes(y, "Y")

    def bind(self, X, Y) -> MulticlassOracle:
        X = self._check_X(X)
        y = self._check_y(Y, X.shape[0])
        csr = X if sp.issparse(X) else sp.csr_array(X)
        csr.eliminate_zeros()
        csr.sort_indices()
        oracle = MulticlassOracle(X.shape[1], csr.indptr.astype(np.intp),
                                  csr.indices.astype(np.int32), csr.data.astype(np.float64),
                                  y, self.cost,
                                  "compact" if self.blocks == "auto" else self.blocks)
        self.n_features_in_ = X.shape[1]
        return oracle

    def predict(self, X, w) -> np.ndarray:
        X = self._check_X(X)
        K, F = self.n_classes, X.shape[1]
        W = check_weights(w, K * F, f"{K} classes and {F} features").reshape(K, F)
        return np.argmax(np.asarray(X @ W.T), axis=1).astype(np.int32)

    def joint_feature(self, x, y) -> np.ndarray:
        x = (x.toarray() if sp.issparse(x) else np.asarray(x, dtype=np.float64)).ravel()
        k = self._one_class(y, "y")
        out = np.zeros(self.n_classes * x.shape[0])
        out[k * x.shape[0]:(k + 1) * x.shape[0]] = x
        return out

    def loss(self, y_true, y_pred) -> float:
        return float(self.cost[self._one_class(y_true, "y_true"),
                               self._one_class(y_pred, "y_pred")])

    def mean_loss(self, Y_true, Y_pred) -> float:
        y_true = self._check_classes(Y_true, "Y_true")
        y_pred = self._check_classes(Y_pred, "Y_pred")
        if y_true.shape != y_pred.shape:
            raise ValueError(f"{y_true.shape[0]} true classes but {y_pred.shape[0]} predictions")
        return float(self.cost[y_true, y_pred].mean())

    def enumerate_labellings(self, x):
        return [np.array([k], dtype=np.int32) for k in range(self.n_classes)]
