"""SSG baseline: the kernel against a pure-Python reference, convergence, resume, errors."""

from __future__ import annotations

import numpy as np
import pytest

from ssvm_core import SubgradientSSVM, as_oracle, subgradient_solve
from ssvm_core.testing import (
    ToyChainModel,
    enumerate_problem,
    primal_by_enumeration,
    random_chain_data,
    solve_dual_qp,
)


def toy(seed=0, n=4):
    rng = np.random.default_rng(seed)
    X, Y = random_chain_data(rng, n, 3, 3, 2)
    model = ToyChainModel(3, 2)
    return model, X, Y, model.bind(X, Y)


def reference_ssg(problem, lam, order):
    """Lacoste-Julien et al. (2013), Sec. 6 written out: gamma = 1/(k+1),
    w <- (1-gamma) w + gamma psi / lam."""
    d = problem.n_features
    w, w_avg = np.zeros(d), np.zeros(d)
    for k, i in enumerate(order):
        j = int(np.argmax(problem.scores(i, w)))
        gamma = 1.0 / (k + 1)
        w = (1 - gamma) * w + gamma * problem.psi[i][j] / lam
        w_avg = k / (k + 2) * w_avg + 2 / (k + 2) * w
    return w, w_avg


@pytest.mark.parametrize("sampling", ["uniform", "perm"])
def test_kernel_matches_the_reference(sampling):
    *_, oracle = toy()
    problem = enumerate_problem(oracle)
    result = subgradient_solve(oracle, 0.1, sampling=sampling, max_passes=7, random_state=3)
    rng = np.random.default_rng(3)
    n = oracle.n_blocks
    order = np.concatenate([rng.permutation(n) if sampling == "perm"
                            else rng.integers(0, n, size=n) for _ in range(7)])
    w, w_avg = reference_ssg(problem, 0.1, order)
    np.testing.assert_allclose(result.state.w, w, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(result.w, w_avg, rtol=1e-12, atol=1e-12)
    assert result.state.n_steps == 7 * n
    assert result.primal == pytest.approx(
        primal_by_enumeration(problem.psi, problem.loss, 0.1, w_avg), rel=1e-12)


def test_averaged_iterate_approaches_the_optimum():
    *_, oracle = toy(seed=1)
    problem = enumerate_problem(oracle)
    lam = 0.5
    p_star = solve_dual_qp(problem.psi, problem.loss, lam).primal
    result = subgradient_solve(oracle, lam, max_passes=3000, eval_every=1000, random_state=0)
    primals = [rec["primal_avg"] for rec in result.history if rec["primal_avg"] is not None]
    assert all(p >= p_star - 1e-9 for p in primals)
    assert primals[-1] - p_star <= 1e-2 * p_star
    assert primals[-1] < primals[0]


def test_history_has_the_solver_keys_and_resume_is_exact():
    *_, oracle = toy(seed=2)
    whole = subgradient_solve(oracle, 0.2, max_passes=6, eval_every=3, random_state=5)
    part = subgradient_solve(oracle, 0.2, max_passes=3, eval_every=3, random_state=5)
    rest = subgradient_solve(oracle, 0.2, max_passes=3, eval_every=3, state=part.state)
    np.testing.assert_array_equal(rest.w, whole.w)
    keys = {"pass", "effective_passes", "oracle_calls", "n_steps", "time", "dual",
            "gap_estimate", "primal", "gap", "primal_avg", "dual_avg", "gap_avg"}
    assert all(set(rec) == keys for rec in whole.history)
    assert whole.history[-1]["oracle_calls"] == 6 * 4 + 3 * 2 * 4   # steps + evaluations
    assert whole.status == "max_passes"


def test_estimator_and_errors():
    model, X, Y, oracle = toy()
    est = SubgradientSSVM(model, lam=0.1, max_passes=5, random_state=0).fit(X, Y)
    assert est.n_passes_ == 5 and np.isfinite(est.primal_)
    assert 0.0 <= est.score(X, Y) <= 1.0
    with pytest.raises(ValueError, match="sampling"):
        subgradient_solve(oracle, 0.1, sampling="gap")
    with pytest.raises(ValueError, match="lam"):
        subgradient_solve(oracle, -1.0)
    with pytest.raises(ValueError, match="another lam"):
        subgradient_solve(oracle, 0.3, state=est.state_)
    with pytest.raises(ValueError, match="averaging"):
        subgradient_solve(as_oracle(oracle), 0.1, averaging=False, state=est.state_)
