"""Every oracle of the project passes ``ssvm_core.testing.check_oracle`` as a user would call it."""

from __future__ import annotations

import numpy as np
import pytest

from ssvm_core import BruteForceOracle
from ssvm_core.testing import ToyChainModel, check_oracle, random_chain_data
from ssvm_data.synthetic import chain, matching, multiclass
from ssvm_oracles import (
    ApproximateOracle,
    ChainModel,
    CountingOracle,
    DispatchOracle,
    EnumerationModel,
    MatchingModel,
    MulticlassModel,
    ProductOracle,
)


def _chain():
    X, Y = chain(4, length=(1, 3), n_states=3, n_features=2, random_state=0)
    return ChainModel(3, 2), X, Y


def _multiclass():
    X, Y = multiclass(5, n_features=3, n_classes=3, random_state=1)
    return MulticlassModel(3, 3), X, Y


def _matching():
    X, Y = matching(3, length=(1, 3), n_features=4, band=1.0, random_state=2)
    return MatchingModel(), X, Y


SMALL = {"chain": _chain, "multiclass": _multiclass, "matching": _matching}


@pytest.mark.parametrize("name", sorted(SMALL))
def test_bound_oracles_against_their_models_enumeration(name):
    model, X, Y = SMALL[name]()
    oracle = model.bind(X, Y)
    check_oracle(oracle, model=model, X=X, Y=Y, check_labels=False)
    check_oracle(oracle, Y=Y)                       # no enumeration: own answers cross-checked
    check_oracle(BruteForceOracle(model, X, Y), Y=Y, check_labels=False)


def test_oracles_at_paper_size_without_enumeration():
    X, Y = matching(5, random_state=0)              # 10-30 words, d = 82
    check_oracle(MatchingModel().bind(X, Y), Y=Y, n_weights=6)
    X, Y = chain(5, length=(8, 14), n_states=26, n_features=128, random_state=0)
    check_oracle(ChainModel(26).bind(X, Y), Y=Y, n_weights=6)


def test_combinators_pass_the_conformance_check():
    chain_model, Xc, Yc = _chain()
    mc_model, Xm, Ym = _multiclass()
    co, mo = chain_model.bind(Xc, Yc), mc_model.bind(Xm[:4], Ym[:4])
    truths = [np.concatenate([[len(y), 1], y, [ym]]).astype(np.int32)
              for y, ym in zip(Yc, Ym)]
    check_oracle(ProductOracle([co, mo]), ground_truth=truths)
    check_oracle(CountingOracle(co, timing=True), Y=Yc)
    check_oracle(ApproximateOracle(co, 0.5, memory=2), model=chain_model, X=Xc, Y=Yc, nu=0.5,
                 deterministic=False, check_labels=False)
    toy = ToyChainModel(3, 2)
    Xt, Yt = random_chain_data(np.random.default_rng(3), 2, 2, 3, 2)
    dispatch = DispatchOracle([co, BruteForceOracle(toy, Xt, Yt)])
    check_oracle(dispatch, ground_truth=list(Yc) + list(Yt), check_labels=False)


def test_enumeration_model_oracle():
    def phi(x, y):               # a ranking of 3 items: item k at position p scores x_k (3 - p)
        out = np.zeros(4)
        for pos, k in enumerate(y):
            out[k] += x[k] * (3 - pos)
        out[3] = float(y[0] == 0)
        return out

    rankings = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]]
    model = EnumerationModel(phi, 4, rankings,
                             loss=lambda t, p: float(np.sum(t != p)) / len(t))
    X = list(np.random.default_rng(4).normal(size=(3, 3)))
    Y = [rankings[1], rankings[4], rankings[0]]
    check_oracle(model.bind(X, Y), Y=Y, check_labels=False)
