"""Building oracles from parts.

- ``CountingOracle``, ``ApproximateOracle``, ``ProductOracle`` and
  ``DispatchOracle`` (compiled, in ``_combinators``) wrap other oracles and
  call them in C; a combination of Cython oracles stays GIL-free.
- ``EnumerationModel`` turns a feature function and a list of candidate
  labellings into a model whose oracle enumerates them (``BruteForceOracle``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

from ssvm_core import BruteForceOracle, StructuredModel
from ssvm_core.deprecation import renamed_argument
from ssvm_core.validation import check_weights
from ssvm_oracles._combinators import (
    ApproximateOracle,
    CountingOracle,
    DispatchOracle,
    ProductOracle,
)

__all__ = ["ApproximateOracle", "CountingOracle", "DispatchOracle", "EnumerationModel",
           "ProductOracle"]


def _zero_one(y_true, y_pred) -> float:
    return float(not np.array_equal(np.asarray(y_true), np.asarray(y_pred)))


class EnumerationModel(StructuredModel):
    """A model defined by a feature function and explicit candidate labellings.

    Decoding and the max oracle enumerate the candidates, so this suits small
    output spaces (rankings of a few items, small multi-label sets, tests).

    Parameters
    ----------
    joint_feature : callable
        ``joint_feature(x, y)`` returns phi(x, y) as a vector of length
        ``n_features``.
    n_features : int
        Dimension d of phi.
    labellings : sequence of labellings, or callable
        The candidates of every input, or ``labellings(x)`` returning those of
        ``x``; each labelling is a 1-D integer array (scalars are promoted).
    loss : callable, optional
        ``loss(y_true, y_pred) >= 0``, zero when equal; the 0/1 loss if omitted.
    labelings : sequence or callable, optional
        Deprecated spelling of ``labellings``.

    Examples
    --------
    >>> import numpy as np
    >>> model = EnumerationModel(lambda x, y: x * (1 if y[0] else -1), 2, [[0], [1]])
    >>> oracle = model.bind([np.array([1.0, 2.0])], [[1]])
    >>> [int(v) for v in model.predict([np.array([1.0, 2.0])], np.array([1.0, 0.0]))[0]]
    [1]
    """

    def __init__(self, joint_feature: Callable, n_features: int,
                 labellings: Sequence | Callable[[object], Iterable] | None = None,
                 loss: Callable | None = None, *,
                 labelings: Sequence | Callable[[object], Iterable] | None = None):
        labellings = renamed_argument(labellings, labelings, "labelings", "labellings")
        if labellings is None:
            raise TypeError("EnumerationModel needs the candidate labellings")
        if int(n_features) != n_features or n_features < 1:
            raise ValueError(f"n_features must be a positive integer, got {n_features}")
        if not callable(joint_feature):
            raise TypeError("joint_feature must be callable")
        self._phi = joint_feature
        self.n_features = int(n_features)
        self._labellings = labellings
        self._loss = _zero_one if loss is None else loss
        if not callable(labellings):
            self._shared = [self._as_labelling(c) for c in labellings]
            if not self._shared:
                raise ValueError("give at least one candidate labelling")

    def get_params(self, deep: bool = True) -> dict:
        """Constructor parameters (the functions as given; ``loss`` None for the 0/1 loss)."""
        return {"joint_feature": self._phi, "n_features": self.n_features,
                "labellings": self._labellings,
                "loss": None if self._loss is _zero_one else self._loss}

    @staticmethod
    def _as_labelling(y) -> np.ndarray:
        y = np.atleast_1d(np.asarray(y))
        if y.ndim != 1 or (y.size and not np.issubdtype(y.dtype, np.integer)):
            raise ValueError(f"a labelling must be a 1-D integer array, got {y!r}")
        return y.astype(np.int32)

    @property
    def size_joint_feature(self) -> int:
        return self.n_features

    def joint_feature(self, x, y) -> np.ndarray:
        phi = np.asarray(self._phi(x, self._as_labelling(y)), dtype=np.float64)
        if phi.shape != (self.n_features,):
            raise ValueError(f"joint_feature returned shape {phi.shape}, "
                             f"expected ({self.n_features},)")
        if not np.all(np.isfinite(phi)):
            raise ValueError("joint_feature returned NaN or infinite values")
        return phi

    def loss(self, y_true, y_pred) -> float:
        value = float(self._loss(self._as_labelling(y_true), self._as_labelling(y_pred)))
        if not (np.isfinite(value) and value >= 0):
            raise ValueError(f"loss returned {value}; losses must be finite and >= 0")
        return value

    def enumerate_labellings(self, x) -> list[np.ndarray]:
        if not callable(self._labellings):
            return list(self._shared)
        cands = [self._as_labelling(c) for c in self._labellings(x)]
        if not cands:
            raise ValueError("labellings(x) returned no candidate")
        return cands

    def bind(self, X: Sequence, Y: Sequence) -> BruteForceOracle:
        """A ``BruteForceOracle`` over the candidates (ground truths must be candidates)."""
        Y = [self._as_labelling(y) for y in Y]
        oracle = BruteForceOracle(self, list(X), Y)
        for i, y in enumerate(Y):
            try:
                oracle.evaluate(i, y, np.zeros(self.n_features))
            except ValueError:
                raise ValueError(f"Y[{i}] = {y} is not one of the candidate labellings") from None
        return oracle

    def predict(self, X: Sequence, w: np.ndarray) -> list[np.ndarray]:
        """The candidate maximising <w, phi(x, y)> (the first on ties), per input."""
        w = check_weights(w, self.n_features)
        out = []
        for x in X:
            cands = self.enumerate_labellings(x)
            scores = [float(w @ self.joint_feature(x, c)) for c in cands]
            out.append(cands[int(np.argmax(scores))])
        return out
