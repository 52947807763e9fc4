"""Refitting an estimator, or its clone, on data of another feature width.

``bind`` used to write the inferred width into the model's constructor
parameter (``n_features``, ``n_unary``/``n_pairwise``, ``n_types``), so a
second fit on wider data failed.  The width now comes from each call's data
(recorded as ``*_in_`` by ``bind``), and predicting inputs of another width
than the weights is a clear error.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from ssvm_core import FrankWolfeSSVM, SubgradientSSVM
from ssvm_core.testing import random_chain_data, random_multiclass_data
from ssvm_data.synthetic import matching
from ssvm_oracles import ChainModel, GraphCutModel, MatchingModel, MulticlassModel, PoseModel


def chain_data(rng, width):
    return random_chain_data(rng, 6, 4, 3, width)


def multiclass_data(rng, width):
    return random_multiclass_data(rng, 8, width, 3)


def graphcut_data(rng, width):
    X, Y = [], []
    for _ in range(4):
        n = int(rng.integers(2, 5))
        edges = np.array([[p, p + 1] for p in range(n - 1)])
        X.append((rng.normal(size=(n, width)), edges, rng.random((n - 1, width % 2 + 1))))
        Y.append(rng.integers(0, 2, size=n))
    return X, Y


def matching_data(rng, width):
    return matching(4, length=(2, 3), n_features=width, random_state=int(rng.integers(1 << 30)))


PARENTS, SCALE = [-1, 0, 1], (0, 2)


def pose_data(rng, width):
    P, A, T, H, W = 3, 4, width, 2, 3
    X = [(rng.normal(size=(P, H, W)), rng.normal(size=(A, T, H, W)), rng.normal(size=(A, T, 2)))
         for _ in range(3)]
    Y = []
    for _ in X:
        pos = np.array([[0, 0], [1, 1], [2, 1]])
        Y.append(np.concatenate([pos.ravel(), rng.integers(0, T, size=A)]))
    return X, Y


CASES = {
    "chain": (lambda: ChainModel(3), chain_data, (2, 5)),
    "multiclass": (lambda: MulticlassModel(3), multiclass_data, (2, 5)),
    "graphcut": (lambda: GraphCutModel(), graphcut_data, (2, 5)),
    "matching": (lambda: MatchingModel(), matching_data, (3, 5)),
    "pose": (lambda: PoseModel(PARENTS, SCALE), pose_data, (1, 2)),
}


def estimator(name, solver):
    make_model = CASES[name][0]
    box = "model" if name in ("graphcut", "pose") else None
    if solver == "fw":
        return FrankWolfeSSVM(make_model(), lam=0.1, max_passes=3, random_state=0, box=box)
    return SubgradientSSVM(make_model(), lam=0.1, max_passes=2, random_state=0)


@pytest.mark.parametrize("name", sorted(CASES))
def test_refit_and_clone_on_another_width(name):
    _, make_data, (narrow, wide) = CASES[name]
    rng = np.random.default_rng(0)
    X1, Y1 = make_data(rng, narrow)
    X2, Y2 = make_data(rng, wide)
    solvers = ("fw", "ssg") if name in ("chain", "multiclass", "matching") else ("fw",)
    for solver in solvers:
        est = estimator(name, solver)
        params = repr(est.model)
        d1 = est.fit(X1, Y1).w_.shape[0]
        fresh = copy.deepcopy(est)                        # what sklearn.base.clone does
        d2 = est.fit(X2, Y2).w_.shape[0]                  # the same estimator, wider data
        assert d2 > d1 and repr(est.model) == params      # constructor parameters untouched
        assert est.model.size_joint_feature == d2
        assert len(est.predict(X2)) == len(X2)
        assert 0.0 <= est.score(X2, Y2) <= 1.0
        assert fresh.fit(X2, Y2).w_.shape == (d2,)
        # A fresh estimator on the wide data learns the same weights as the refitted one.
        np.testing.assert_array_equal(fresh.w_, est.w_)
        with pytest.raises(ValueError, match=rf"w has shape \({d2},\), expected \({d1},\) for "
                                             "inputs with .*another feature width"):
            est.predict(X1)


@pytest.mark.parametrize("name", ["chain", "multiclass", "matching", "graphcut", "pose"])
def test_a_given_width_is_still_enforced(name):
    make_model, make_data, (narrow, wide) = CASES[name]
    rng = np.random.default_rng(1)
    X1, Y1 = make_data(rng, narrow)
    X2, Y2 = make_data(rng, wide)
    width = {"chain": "n_features", "multiclass": "n_features", "matching": "n_features",
             "graphcut": "n_unary", "pose": "n_types"}[name]
    model = make_model()
    if name == "pose":
        model = PoseModel(PARENTS, SCALE, n_types=narrow)
    else:
        setattr(model, width, narrow)
    model.bind(X1, Y1)
    with pytest.raises(ValueError, match=f"expected .*{narrow}|expected {narrow}"):
        model.bind(X2, Y2)
