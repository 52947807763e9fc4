"""FrankWolfeSSVM on Cython models end to end: planted data, pickling, resuming."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from ssvm_core import FrankWolfeSSVM, SolverState, duality_gap, primal_objective, solve
from ssvm_oracles import ChainModel, MulticlassModel


def planted_chains(seed, n=30, T=(3, 8), K=4, F=6):
    """Sequences labelled by Viterbi under a random planted w (realizable data)."""
    rng = np.random.default_rng(seed)
    model = ChainModel(K, F)
    w_true = rng.normal(size=model.size_joint_feature)
    X = [rng.normal(size=(int(rng.integers(*T)), F)) for _ in range(n)]
    Y = model.predict(X, w_true)
    return model, X, Y


def test_chain_estimator_learns_planted_data():
    model, X, Y = planted_chains(0)
    est = FrankWolfeSSVM(model, lam=1e-3, tol=1e-3, max_passes=300, random_state=0)
    est.fit(X, Y)
    assert est.status_ in ("converged", "max_passes")
    assert est.score(X, Y) >= 0.9
    # fresh data from the same planted model
    _model2, X2, Y2 = planted_chains(0, n=60)
    assert est.score(X2[30:], Y2[30:]) >= 0.7
    oracle = model.bind(X, Y)
    averaged = est.history_[-1]["iterate"] == "average"          # the iterate returned
    assert est.gap_ == pytest.approx(duality_gap(oracle, est.state_, averaged=averaged),
                                     rel=1e-9, abs=1e-12)


def test_fitted_estimator_pickles():
    model, X, Y = planted_chains(1, n=10)
    est = FrankWolfeSSVM(model, lam=0.01, max_passes=20, tol=0, random_state=0).fit(X, Y)
    clone = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(clone.w_, est.w_)
    for a, b in zip(clone.predict(X), est.predict(X)):
        np.testing.assert_array_equal(a, b)
    assert clone.get_params()["lam"] == 0.01


def test_resume_from_a_saved_state_with_a_cython_oracle(tmp_path):
    model, X, Y = planted_chains(2, n=12)
    oracle = model.bind(X, Y)

    def stop(k):
        return lambda rec: rec["pass"] >= k

    once = solve(oracle, 0.01, tol=0, max_passes=1000, random_state=4, callback=stop(8))
    first = solve(oracle, 0.01, tol=0, max_passes=1000, random_state=4, callback=stop(5))
    first.state.save(tmp_path / "state.npz")
    resumed = solve(model.bind(X, Y), 0.01, tol=0, max_passes=1000,
                    state=SolverState.load(tmp_path / "state.npz"), callback=stop(8))
    np.testing.assert_array_equal(resumed.state.w, once.state.w)
    np.testing.assert_array_equal(resumed.w, once.w)


def test_multiclass_estimator_with_costs():
    rng = np.random.default_rng(3)
    K, F, n = 4, 5, 80
    W = rng.normal(size=(K, F))
    X = rng.normal(size=(n, F))
    Y = np.argmax(X @ W.T, axis=1)
    cost = rng.uniform(0.5, 2.0, size=(K, K))
    np.fill_diagonal(cost, 0.0)
    model = MulticlassModel(K, cost=cost)
    est = FrankWolfeSSVM(model, C=10.0, tol=1e-3, max_passes=500, random_state=0).fit(X, Y)
    assert est.lam_ == 1.0 / (10.0 * n)
    pred = est.predict(X)
    assert est.score(X, Y) == pytest.approx(1.0 - cost[Y, pred].mean())
    assert np.mean(pred == Y) >= 0.9
    oracle = model.bind(X, Y)
    assert est.status_ in ("converged", "max_passes")
    averaged = est.history_[-1]["iterate"] == "average"          # the iterate returned
    assert est.gap_ == pytest.approx(duality_gap(oracle, est.state_, averaged=averaged),
                                     rel=1e-9, abs=1e-12)
    assert 0 <= est.gap_ <= primal_objective(oracle, est.lam_, est.w_)
