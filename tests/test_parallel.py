"""Gap passes in threads give the same sums and block gaps as one thread."""

import numpy as np
import pytest

from ssvm_core import BruteForceOracle, SolverState, as_oracle, solve
from ssvm_core.parallel import effective_n_jobs, score_pass
from ssvm_oracles import ChainModel


def _chain_problem(seed, n=40):
    rng = np.random.default_rng(seed)
    X = [rng.normal(size=(rng.integers(1, 6), 4)) for _ in range(n)]
    Y = [rng.integers(0, 3, len(x)).astype(np.int32) for x in X]
    return ChainModel(n_states=3, n_features=4), X, Y


@pytest.mark.parametrize("n_jobs", [2, 3, -1])
def test_threaded_score_pass_matches_serial(n_jobs):
    model, X, Y = _chain_problem(0)
    oracle = model.bind(X, Y)
    state = solve(oracle, 0.1, max_passes=3, tol=0, random_state=0).state
    serial, threaded = state.copy(), state.copy()
    total_1 = score_pass(oracle, serial.w, serial)
    total_k = score_pass(oracle, threaded.w, threaded, n_jobs=n_jobs)
    assert total_k == pytest.approx(total_1, rel=1e-13)
    np.testing.assert_allclose(threaded.block_gap_estimates, serial.block_gap_estimates,
                               rtol=0, atol=0)


def test_solver_with_threads_follows_the_serial_run():
    model, X, Y = _chain_problem(1)
    oracle = model.bind(X, Y)
    a = solve(oracle, 0.05, max_passes=6, gap_check_every=2, tol=0, random_state=4)
    b = solve(oracle, 0.05, max_passes=6, gap_check_every=2, tol=0, random_state=4, n_jobs=2)
    np.testing.assert_array_equal(a.w, b.w)
    for ra, rb in zip(a.history, b.history):
        for key in ("gap", "gap_avg", "primal"):
            if ra[key] is not None:
                assert rb[key] == pytest.approx(ra[key], rel=1e-12, abs=1e-15)


def test_python_oracles_run_in_the_calling_thread():
    model, X, Y = _chain_problem(2, n=5)
    brute = as_oracle(BruteForceOracle(model, X, Y))
    w = np.random.default_rng(0).normal(size=model.size_joint_feature)
    assert score_pass(brute, w, n_jobs=2) == pytest.approx(score_pass(model.bind(X, Y), w))
    state = SolverState.for_oracle(brute, 1.0)       # w = 0, ell = 0: g_i = H_i / n
    total = score_pass(brute, state.w, state, n_jobs=2)
    assert np.sum(state.block_gap_estimates) == pytest.approx(total / len(X))


def test_n_jobs_rules():
    assert effective_n_jobs(None) == 1
    assert effective_n_jobs(3) == 3
    assert effective_n_jobs(-1) >= 1
    for bad in (0, 1.5):
        with pytest.raises(ValueError, match="n_jobs"):
            effective_n_jobs(bad)
