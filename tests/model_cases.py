"""Small seeded training sets for every built-in model (the saved-model tests use them).

``CASES[name]()`` returns ``(model, X, Y)``; calling it twice gives the same
data, so a fresh process rebuilds the inputs it predicts on.
"""

from __future__ import annotations

import numpy as np

import ssvm_oracles as so
from ssvm_core.testing import (
    ToyChainModel,
    ToyMulticlassModel,
    random_chain_data,
    random_multiclass_data,
)
from ssvm_data import synthetic
from ssvm_data.lsp import POSE_TREE_PARENTS, SCALE_PARTS


def _graphs(rng, n, n_nodes, F, K):
    X, Y = [], []
    for _ in range(n):
        nodes = rng.normal(size=(n_nodes, F))
        edges = np.array([[i, i + 1] for i in range(n_nodes - 1)] + [[0, n_nodes - 1]])
        y = rng.integers(0, K, size=n_nodes)
        nodes[np.arange(n_nodes), y % F] += 2.0
        X.append((nodes, edges))
        Y.append(y)
    return X, Y


def chain():
    X, Y = synthetic.chain(12, length=(3, 6), n_states=3, n_features=4, random_state=0)
    return so.ChainModel(n_states=3, blocks="dense"), X, Y


def chain_compact():
    X, Y = synthetic.ocr_like(8, random_state=1)
    return so.ChainModel(n_states=26, blocks="compact"), X, Y


def multiclass():
    X, Y = synthetic.multiclass(30, n_classes=3, n_features=4, random_state=2)
    cost = np.array([[0.0, 1.0, 2.5], [1.0, 0.0, 1.0], [0.5, 3.0, 0.0]])
    return so.MulticlassModel(n_classes=3, cost=cost), X, Y


def graph():
    X, Y = _graphs(np.random.default_rng(3), 6, 5, 3, 3)
    return so.GraphModel(3, class_weight=[1.0, 2.0, 0.5], max_iter=20), X, Y


def grid():
    rng = np.random.default_rng(4)
    X = [rng.normal(size=(3, 3, 2)) for _ in range(5)]
    Y = [(x[..., 0] > 0).astype(np.int32) for x in X]
    return so.GridModel(2, directional=True), X, Y


def multilabel():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(12, 3))
    Y = (X @ rng.normal(size=(3, 4)) > 0).astype(np.int32)
    return so.MultiLabelModel(edges=np.array([[0, 1], [1, 2], [1, 3]])), X, Y


def binary():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(20, 3))
    Y = (X @ np.array([1.0, -2.0, 0.5]) > 0).astype(np.int32)
    return so.BinaryModel(), X, Y


def graphcut():
    X, Y = synthetic.horseseg_like(4, n_nodes=6, n_unary=4, n_pairwise=3, random_state=7)
    return so.GraphCutModel(), X, Y


def pose():
    X, Y = synthetic.lsp_like(3, grid=(6, 6), n_types=2, random_state=8)
    return so.PoseModel(POSE_TREE_PARENTS, SCALE_PARTS, loss="pdj"), X, Y


def matching():
    X, Y = synthetic.matching(5, length=(2, 4), n_features=4, random_state=9)
    return so.MatchingModel(recall_cost=2.0), X, Y


def signed_feature(x, y):
    """phi(x, y) = x if the label is 1, else -x (a module-level function: it can be saved)."""
    return np.asarray(x, dtype=float) * (1.0 if y[0] else -1.0)


def enumeration():
    rng = np.random.default_rng(10)
    X = [rng.normal(size=3) for _ in range(10)]
    Y = [[int(x[0] > 0)] for x in X]
    return so.EnumerationModel(signed_feature, 3, [[0], [1]]), X, Y


def toy_multiclass():
    X, Y = random_multiclass_data(np.random.default_rng(11), n=15, n_features=3, n_classes=3)
    return ToyMulticlassModel(n_classes=3, n_features=3), X, Y


def toy_chain():
    X, Y = random_chain_data(np.random.default_rng(12), n=6, max_length=3, n_states=2,
                             n_features=2)
    return ToyChainModel(n_states=2, n_features=2), X, Y


CASES = {f.__name__: f for f in (chain, chain_compact, multiclass, graph, grid, multilabel,
                                  binary, graphcut, pose, matching, enumeration,
                                  toy_multiclass, toy_chain)}
