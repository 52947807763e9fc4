"""Multiclass model with a 0/1 or cost-matrix loss."""

from __future__ import annotations

import numpy as np

from ssvm_core import StructuredModel
from ssvm_core.validation import check_weights
from ssvm_oracles._multiclass import MulticlassOracle


class MulticlassModel(StructuredModel):
    """Multiclass SVM as a structured model (one labelling = one class).

    Parameters
    ----------
    n_classes : int
        Number of classes K (>= 2).
    n_features : int, optional
        Input dimension F; inferred from the first ``bind`` if omitted.  Add a
        constant column to X for a per-class bias.
    cost : array (K, K), optional
        Loss ``cost[y_true, y_pred]``: zero diagonal, nonnegative; 0/1 if
        omitted.
    """

    def __init__(self, n_classes: int, n_features: int | None = None, cost=None):
        if int(n_classes) != n_classes or n_classes < 2:
            raise ValueError(f"n_classes must be an integer >= 2, got {n_classes}")
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

    def __repr__(self) -> str:
        return f"MulticlassModel(n_classes={self.n_classes}, n_features={self.n_features})"

    @property
    def size_joint_feature(self) -> int:
        if self.n_features is None:
            raise ValueError("n_features is unknown until the model is bound to data")
        return self.n_classes * self.n_features

    def _check_X(self, X) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (examples x features), got shape {X.shape}")
        if X.shape[0] == 0:
            raise ValueError("X is empty")
        if self.n_features is None:
            self.n_features = X.shape[1]
        if X.shape[1] != self.n_features:
            raise ValueError(f"X has {X.shape[1]} features, expected {self.n_features}")
        if not np.all(np.isfinite(X)):
            raise ValueError("X has NaN or infinite features")
        return np.ascontiguousarray(X)

    def _check_y(self, Y, n: int) -> np.ndarray:
        y = np.asarray(Y).reshape(-1) if len(Y) else np.zeros(0, np.int32)
        if y.shape != (n,):
            raise ValueError(f"Y must hold one class per example: {n} expected, got {y.shape}")
        if not np.issubdtype(y.dtype, np.integer):
            raise ValueError(f"Y must hold integer classes, got dtype {y.dtype}")
        if y.min() < 0 or y.max() >= self.n_classes:
            raise ValueError(f"Y has classes outside [0, {self.n_classes})")
        return y.astype(np.int32)

    def bind(self, X, Y) -> MulticlassOracle:
        X = self._check_X(X)
        return MulticlassOracle(X, self._check_y(Y, X.shape[0]), self.cost)

    def predict(self, X, w) -> np.ndarray:
        X = self._check_X(X)
        W = check_weights(w, self.size_joint_feature).reshape(self.n_classes, self.n_features)
        return np.argmax(X @ W.T, axis=1).astype(np.int32)

    def joint_feature(self, x, y) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64).ravel()
        k = int(np.asarray(y).ravel()[0])
        out = np.zeros(self.n_classes * x.shape[0])
        out[k * x.shape[0]:(k + 1) * x.shape[0]] = x
        return out

    def loss(self, y_true, y_pred) -> float:
        return float(self.cost[int(np.asarray(y_true).ravel()[0]),
                               int(np.asarray(y_pred).ravel()[0])])

    def mean_loss(self, Y_true, Y_pred) -> float:
        y_true = np.asarray(Y_true).reshape(-1)
        y_pred = np.asarray(Y_pred).reshape(-1)
        if y_true.shape != y_pred.shape:
            raise ValueError(f"{y_true.shape[0]} true classes but {y_pred.shape[0]} predictions")
        return float(self.cost[y_true, y_pred].mean())

    def enumerate_labellings(self, x):
        return [np.array([k], dtype=np.int32) for k in range(self.n_classes)]
