"""Toy data and pure-Python reference models (NumPy only, bound by enumeration).

The ``ssvm_data`` generators are for realistic data; these are for tests.
"""

from __future__ import annotations

import itertools

import numpy as np

from ssvm_core.models import StructuredModel
from ssvm_core.oracles import BruteForceOracle


def random_multiclass_data(rng: np.random.Generator, n: int, n_features: int,
                           n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian inputs with a planted linear labelling plus label noise.

    Returns ``X`` (n, n_features) float64 and ``Y`` (n,) int64 classes.
    """
    X = rng.normal(size=(n, n_features))
    W = rng.normal(size=(n_classes, n_features))
    Y = np.argmax(X @ W.T + 0.5 * rng.normal(size=(n, n_classes)), axis=1)
    return X, Y.astype(np.int64)


def random_chain_data(rng: np.random.Generator, n: int, max_length: int, n_states: int,
                      n_features: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Random sequences of lengths in [1, max_length] with Gaussian token features.

    Returns ``X``, a list of (T_i, n_features) float64 arrays, and ``Y``, a
    list of (T_i,) int64 label arrays.
    """
    lengths = rng.integers(1, max_length + 1, size=n)
    X = [rng.normal(size=(T, n_features)) for T in lengths]
    Y = [rng.integers(0, n_states, size=T) for T in lengths]
    return X, Y


class ToyMulticlassModel(StructuredModel):
    """Multiclass model in plain Python: phi(x, y) puts x in the block of class y.

    Parameters
    ----------
    n_classes : int
        Number of classes K.
    n_features : int
        Input dimension F; d = K F.
    cost : array (K, K), optional
        Loss ``cost[y_true, y_pred]`` (0/1 if omitted).
    """

    def __init__(self, n_classes: int, n_features: int, cost=None):
        self.n_classes = int(n_classes)
        self.n_features = int(n_features)
        self.cost = (1.0 - np.eye(self.n_classes)) if cost is None else np.asarray(cost, float)

    @property
    def size_joint_feature(self) -> int:
        return self.n_classes * self.n_features

    def joint_feature(self, x, y) -> np.ndarray:
        k = int(np.asarray(y).reshape(-1)[0])
        out = np.zeros((self.n_classes, self.n_features))
        out[k] = np.asarray(x, dtype=float)
        return out.ravel()

    def loss(self, y_true, y_pred) -> float:
        return float(self.cost[int(np.asarray(y_true).reshape(-1)[0]),
                               int(np.asarray(y_pred).reshape(-1)[0])])

    def enumerate_labellings(self, x):
        return [np.array([k], dtype=np.int32) for k in range(self.n_classes)]

    def bind(self, X, Y) -> BruteForceOracle:
        return BruteForceOracle(self, list(X), [np.atleast_1d(y) for y in Y])

    def predict(self, X, w) -> list:
        W = np.asarray(w, dtype=float).reshape(self.n_classes, self.n_features)
        return [int(np.argmax(W @ np.asarray(x, dtype=float))) for x in X]


class ToyChainModel(StructuredModel):
    """Linear-chain model in plain Python, written independently of ssvm_oracles.

    phi(x, y) = [emission (F x K, row-major) | transition (K x K) | bias (K) |
    start (K) | end (K)], loss = normalised Hamming distance; decoding and the
    max oracle enumerate all K^T labellings (tiny T only).

    Parameters
    ----------
    n_states : int
        Number of states K.
    n_features : int
        Token features F.
    """

    def __init__(self, n_states: int, n_features: int):
        self.n_states = int(n_states)
        self.n_features = int(n_features)

    @property
    def size_joint_feature(self) -> int:
        K, F = self.n_states, self.n_features
        return F * K + K * K + 3 * K

    def joint_feature(self, x, y) -> np.ndarray:
        K, F = self.n_states, self.n_features
        x = np.asarray(x, dtype=float)
        y = [int(v) for v in np.asarray(y).reshape(-1)]
        emission = np.zeros((F, K))
        transition = np.zeros((K, K))
        bias, start, end = np.zeros(K), np.zeros(K), np.zeros(K)
        for t, k in enumerate(y):
            emission[:, k] += x[t]
            bias[k] += 1.0
            if t > 0:
                transition[y[t - 1], k] += 1.0
        start[y[0]] = 1.0
        end[y[-1]] = 1.0
        return np.concatenate([emission.ravel(), transition.ravel(), bias, start, end])

    def loss(self, y_true, y_pred) -> float:
        y_true, y_pred = np.asarray(y_true).reshape(-1), np.asarray(y_pred).reshape(-1)
        return float(np.mean(y_true != y_pred))

    def enumerate_labellings(self, x):
        T = np.asarray(x).shape[0]
        return [np.array(c, dtype=np.int32)
                for c in itertools.product(range(self.n_states), repeat=T)]

    def bind(self, X, Y) -> BruteForceOracle:
        return BruteForceOracle(self, list(X), list(Y))

    def predict(self, X, w) -> list:
        w = np.asarray(w, dtype=float)
        out = []
        for x in X:
            cands = self.enumerate_labellings(x)
            out.append(cands[int(np.argmax([w @ self.joint_feature(x, c) for c in cands]))])
        return out
