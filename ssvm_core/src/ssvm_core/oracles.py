"""Turning Python objects into max oracles, and the brute-force oracle."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

from ssvm_core._oracle import DelegatingOracle, MaxOracle, PythonOracle, labelling_key
from ssvm_core.deprecation import renamed_argument, warn_renamed


def as_oracle(obj) -> MaxOracle:
    """Return ``obj`` if it is a ``MaxOracle``, else wrap it in a ``PythonOracle``.

    See ``PythonOracle`` for what a Python oracle must provide.

    Raises
    ------
    TypeError
        For a ``DelegatingOracle`` subclass whose constructor did not call
        ``super().__init__(oracle)`` (it wraps nothing).
    """
    if isinstance(obj, DelegatingOracle) and obj.oracle is None:
        raise TypeError(f"{type(obj).__name__} wraps no oracle: its __init__ must call "
                        "super().__init__(oracle) (DelegatingOracle) first")
    if isinstance(obj, MaxOracle):
        return obj
    return PythonOracle(obj)


class BruteForceOracle:
    """Exact max oracle by enumerating every labelling (tiny problems only).

    Parameters
    ----------
    model : StructuredModel
        Provides ``joint_feature``, ``loss``, ``size_joint_feature`` and, unless
        ``labellings`` is given, ``enumerate_labellings(x)``.
    X, Y : sequences
        Training inputs and ground-truth labellings.
    labellings : callable, optional
        ``labellings(x)`` yields every candidate labelling of input ``x``.
    labelings : callable, optional
        Deprecated spelling of ``labellings``.

    Notes
    -----
    A Python oracle: pass it to any solver directly or through ``as_oracle``.
    Ties in ``solve`` go to the first labelling enumerated.
    """

    def __init__(self, model, X: Sequence, Y: Sequence,
                 labellings: Callable[[object], Iterable] | None = None, *,
                 labelings: Callable[[object], Iterable] | None = None):
        if len(X) != len(Y):
            raise ValueError(f"X has {len(X)} examples but Y has {len(Y)}")
        if len(X) == 0:
            raise ValueError("the training set is empty")
        labellings = renamed_argument(labellings, labelings, "labelings", "labellings")
        if labellings is None and not hasattr(model, "enumerate_labellings"):
            if hasattr(model, "enumerate_labelings"):       # a model of the old spelling
                warn_renamed(f"{type(model).__name__}.enumerate_labelings",
                             "enumerate_labellings")
                labellings = model.enumerate_labelings
            else:
                raise TypeError(f"{type(model).__name__} has no enumerate_labellings: "
                                "pass labellings=")
        enumerate_ = labellings if labellings is not None else model.enumerate_labellings
        self.model = model
        self.n_blocks = len(X)
        self.n_features = int(model.size_joint_feature)
        self._candidates: list[list[np.ndarray]] = []
        self._psi: list[np.ndarray] = []
        self._loss: list[np.ndarray] = []
        self._index: list[dict[bytes, int]] = []
        for x, y in zip(X, Y):
            cands = [np.atleast_1d(np.asarray(c, dtype=np.int32)) for c in enumerate_(x)]
            phi_true = model.joint_feature(x, y)
            self._candidates.append(cands)
            self._psi.append(np.array([phi_true - model.joint_feature(x, c) for c in cands]))
            self._loss.append(np.array([model.loss(y, c) for c in cands], dtype=float))
            self._index.append({labelling_key(c): k for k, c in enumerate(cands)})
        self.max_labels = max(len(c) for cands in self._candidates for c in cands)

    def scores(self, i: int, w: np.ndarray) -> np.ndarray:
        """H_i(y; w) for every candidate labelling of block i."""
        return self._loss[i] - self._psi[i] @ w

    def solve(self, i: int, w: np.ndarray):
        k = int(np.argmax(self.scores(i, w)))
        return self._candidates[i][k], self._psi[i][k], self._loss[i][k]

    def evaluate(self, i: int, labels: np.ndarray, w: np.ndarray):
        k = self._index[i].get(labelling_key(labels))
        if k is None:
            raise ValueError(f"labelling {labels} is not a candidate of block {i}")
        return self._psi[i][k], self._loss[i][k]

    def candidates(self, i: int) -> list[np.ndarray]:
        """The enumerated labellings of block i."""
        return list(self._candidates[i])

    def psi_matrix(self, i: int) -> np.ndarray:
        """psi_i(y) of every candidate, one row each."""
        return self._psi[i].copy()

    def losses(self, i: int) -> np.ndarray:
        """L_i(y) of every candidate."""
        return self._loss[i].copy()
