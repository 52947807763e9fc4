"""Gap sampling (Osokin et al. (2016), Alg. 2): the sampler, the visiting rules and convergence."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import RecordingOracle, toy_problems

from ssvm_core import BruteForceOracle, SolverState, as_oracle, solve
from ssvm_core._fw import bcfw_pass
from ssvm_core._view import sample_proportional
from ssvm_core.parallel import score_pass
from ssvm_core.solvers import _block_order
from ssvm_core.testing import primal_by_enumeration, scaled_examples, solve_dual_qp
from ssvm_oracles import MulticlassModel


@settings(max_examples=scaled_examples(60))
@given(st.integers(1, 40), st.integers(0, 2 ** 32 - 1))
def test_sampler_is_the_inverse_cdf_and_skips_zero_weights(n, seed):
    rng = np.random.default_rng(seed)
    weights = rng.exponential(size=n) * (rng.random(n) < 0.6)
    uniforms = rng.random(200)
    drawn = sample_proportional(weights, uniforms)
    if weights.sum() == 0:
        np.testing.assert_array_equal(drawn, np.minimum((uniforms * n).astype(int), n - 1))
        return
    assert np.all(weights[drawn] > 0)
    cdf = np.cumsum(weights)
    expected = np.searchsorted(cdf, uniforms * cdf[-1], side="right")
    # Equal except where rounding puts u * total on a bucket boundary.
    agree = drawn == np.minimum(expected, n - 1)
    assert agree.mean() > 0.97


def test_sampler_frequencies_follow_the_weights():
    weights = np.array([0.0, 1.0, 3.0, 0.0, 6.0])
    drawn = sample_proportional(weights, np.random.default_rng(0).random(200_000))
    freq = np.bincount(drawn, minlength=5) / drawn.shape[0]
    np.testing.assert_allclose(freq, weights / weights.sum(), atol=0.005)


def _half_trivial_problem(n=12, seed=0):
    """Multiclass blocks; the odd ones have a single labelling, so g_i = 0 always."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = rng.integers(0, 3, n)
    model = MulticlassModel(3, 3)
    trivial = {tuple(X[i]): y[i] for i in range(1, n, 2)}

    def labellings(x):
        key = tuple(np.ravel(x))
        return [[trivial[key]]] if key in trivial else [[k] for k in range(3)]

    return RecordingOracle(BruteForceOracle(model, list(X), [[v] for v in y], labellings)), y


def test_exact_zero_gap_blocks_are_never_visited():
    recorder, _ = _half_trivial_problem()
    oracle = as_oracle(recorder)
    state = SolverState.for_oracle(oracle, 0.1)
    rng = np.random.default_rng(1)
    for _ in range(5):
        score_pass(oracle, state.w, state)             # exact block gaps
        zero = np.flatnonzero(state.block_gap_estimates == 0.0)
        assert set(range(1, 12, 2)) <= set(zero)
        recorder.calls.clear()
        order, uniforms = _block_order(rng, "gap", state)
        assert order.shape[0] == 0 and uniforms.shape[0] == 12
        bcfw_pass(oracle, state, order, True, uniforms)
        assert len(recorder.calls) == 12
        assert not set(recorder.calls) & set(zero)


def test_unvisited_blocks_come_first_in_random_order():
    recorder, _ = _half_trivial_problem(n=20)
    oracle = as_oracle(recorder)
    state = SolverState.for_oracle(oracle, 0.1)        # every estimate NaN
    order, uniforms = _block_order(np.random.default_rng(3), "gap", state)
    assert sorted(order) == list(range(20)) and uniforms.shape[0] == 0
    assert list(order) != sorted(order)
    bcfw_pass(oracle, state, order, True, uniforms)
    assert recorder.calls == list(order)
    assert not np.isnan(state.block_gap_estimates).any()


@settings(max_examples=scaled_examples(15), deadline=None)
@given(toy_problems(), st.booleans())
def test_gap_sampling_certificates_bracket_the_optimum(toy, averaging):
    result = solve(toy.oracle, toy.lam, sampling="gap", tol=0, max_passes=12,
                   gap_check_every=3, averaging=averaging, random_state=0)
    opt = solve_dual_qp(toy.enum.psi, toy.enum.loss, toy.lam)
    primal = primal_by_enumeration(toy.enum.psi, toy.enum.loss, toy.lam, result.w)
    scale = max(1.0, abs(opt.primal))
    assert primal - opt.primal <= result.gap + 1e-9 * scale
    assert result.gap >= -1e-12 * scale
    for rec in result.history:
        if rec["gap"] is not None:
            assert rec["primal"] - rec["dual"] == pytest.approx(rec["gap"], abs=1e-12 * scale)
            assert rec["gap_estimate"] == pytest.approx(rec["gap"], abs=1e-12 * scale)


def test_gap_sampling_resumes_exactly():
    recorder, _ = _half_trivial_problem(n=10, seed=2)
    oracle = as_oracle(recorder.inner)
    # Every solve starts with an exact gap check, which refreshes the estimates
    # that drive the sampling; with checks at the same passes the runs coincide.
    options = {"sampling": "gap", "tol": 0, "max_passes": 3, "gap_check_every": 3}
    whole = solve(oracle, 0.05, **{**options, "max_passes": 6}, random_state=7)
    part = solve(oracle, 0.05, **options, random_state=7)
    rest = solve(oracle, 0.05, **options, state=part.state)
    np.testing.assert_array_equal(rest.state.w, whole.state.w)
