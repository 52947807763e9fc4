"""Solver-level properties on enumerable toy problems.

The optimum comes from ``ssvm_core.testing.solve_dual_qp``, an independent
solver of the enumerated dual QP (SciPy plus an exact active-set polish,
certified by its own primal-dual gap).

Plain (block-coordinate) Frank-Wolfe converges at the sublinear O(1/k) rate
when the optimum lies on a face of the product of simplices, which is the
usual case here (many labellings tie in loss).  A 1e-9 tolerance is then out
of reach in any reasonable number of passes, so the tests split into

- tight agreement (1e-6 relative) where FW provably converges fast: binary
  problems, whose blocks are segments, so a BCFW step with line search is an
  exact block minimisation (coordinate descent, linear rate), and batch FW
  with n = 1 (one exact line search);
- for every variant, on any toy problem: the certificates bracket the
  independent optimum, and the dual suboptimality obeys the O(1/k) bound of
  Lacoste-Julien et al. (2013), Theorem 2 (batch FW is its n = 1 case) with curvature constants
  computed from the enumeration.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from strategies import binary_problems, toy_problems

from ssvm_core import SolverState, as_oracle, dual_objective, duality_gap, solve
from ssvm_core.testing import (
    EnumeratedProblem,
    primal_by_enumeration,
    scaled_examples,
    solve_dual_qp,
)

VARIANTS = [
    {"batch": True, "averaging": False}, {"batch": True, "averaging": True},
    {"sampling": "uniform", "averaging": False}, {"sampling": "uniform", "averaging": True},
    {"sampling": "perm", "averaging": False}, {"sampling": "perm", "averaging": True},
]


def primal(toy, w):
    return primal_by_enumeration(toy.enum.psi, toy.enum.loss, toy.lam, w)


# ---------------------------------------------------------------------------
# Convergence to the independent optimum
# ---------------------------------------------------------------------------


@settings(max_examples=scaled_examples(15))
@given(binary_problems())
def test_converges_to_the_qp_optimum_on_binary_problems(toy):
    opt = solve_dual_qp(toy.enum.psi, toy.enum.loss, toy.lam)
    P_star = opt.primal
    tol = 1e-10 * max(P_star, 1e-3)
    runs = [{"sampling": "uniform"}, {"sampling": "perm"}]
    if toy.oracle.n_blocks == 1:
        runs.append({"batch": True})
    for options in runs:
        result = solve(toy.oracle, toy.lam, tol=tol, max_passes=3000, gap_check_every=5,
                       averaging=False, random_state=0, **options)
        assert result.status == "converged", (options, result.gap)
        P = primal(toy, result.w)
        assert P == pytest.approx(P_star, rel=1e-6, abs=1e-12), options
        assert P >= opt.dual - 1e-12                          # weak duality
        assert P - P_star <= result.gap + 1e-12
        np.testing.assert_allclose(result.w, opt.w, rtol=0,
                                   atol=1e-3 * max(1.0, np.abs(opt.w).max()))

        # Averaging restarted at the converged iterate: a few more passes keep the
        # certificate of the average valid and it stays at the optimum (the primal
        # of single FW iterates is not monotone, so only the certificate bounds it).
        start = result.state.passes
        averaged = solve(toy.oracle, toy.lam, state=result.state, averaging=True, tol=0,
                         max_passes=10 ** 6, random_state=0,
                         callback=lambda rec, start=start: rec["pass"] >= start + 5,
                         **options)
        assert averaged.status in ("callback", "converged")     # converged: exact gap 0
        gap_avg = duality_gap(toy.oracle, averaged.state, averaged=True)
        P_avg = primal(toy, averaged.w)
        assert P_star - 1e-12 <= P_avg <= P_star + gap_avg + 1e-12
        assert P_avg == pytest.approx(P_star, rel=1e-6, abs=max(gap_avg, 1e-12)), options


@settings(max_examples=scaled_examples(20))
@given(toy_problems())
def test_certificates_bracket_the_qp_optimum_for_every_variant(toy):
    """P(w) - P* <= reported gap, D <= P* <= P(w), for FW/BCFW x averaging."""
    opt = solve_dual_qp(toy.enum.psi, toy.enum.loss, toy.lam)
    eps = 1e-10 * max(1.0, opt.primal)
    for options in VARIANTS:
        result = solve(toy.oracle, toy.lam, tol=0, max_passes=40, gap_check_every=10,
                       random_state=5, **options)
        P = primal(toy, result.w)
        D = dual_objective(result.state, averaged=options["averaging"])
        assert P >= opt.dual - eps, options
        assert D <= opt.primal + eps, options
        assert P - D == pytest.approx(result.gap, rel=1e-9, abs=eps)
        assert P - opt.primal <= result.gap + eps
        assert opt.primal - D <= result.gap + eps
        # progress (line search): the final dual is at least the dual after one pass
        duals = [h["dual"] for h in result.history]
        assert duals[-1] >= duals[1] - eps


def _diameters(enum: EnumeratedProblem) -> np.ndarray:
    """max_{y, y'} ||psi_i(y) - psi_i(y')|| for every block."""
    out = []
    for P in enum.psi:
        diff = P[:, None, :] - P[None, :, :]
        out.append(np.sqrt((diff ** 2).sum(-1)).max())
    return np.array(out)


@settings(max_examples=scaled_examples(20))
@given(toy_problems(lams=(-2, 1)), st.booleans())
def test_batch_fw_obeys_its_convergence_bound(toy, line_search):
    """P* - D(alpha_k) <= 2 (C_f + h_0) / (k + 2) for every k (Lacoste-Julien et al. (2013), Thm. 2
    with n = 1).

    For this quadratic C_f = lam max ||A (s - alpha)||^2 <= (sum_i diam_i)^2 / (lam n^2).
    Deterministic, so it must hold on every run.
    """
    opt = solve_dual_qp(toy.enum.psi, toy.enum.loss, toy.lam)
    n = toy.oracle.n_blocks
    C_f = _diameters(toy.enum).sum() ** 2 / (toy.lam * n * n)
    h0 = opt.primal                                       # D(alpha_0) = 0
    result = solve(toy.oracle, toy.lam, batch=True, line_search=line_search, tol=0,
                   max_passes=60, gap_check_every=100, averaging=False)
    for rec in result.history[1:]:
        k = rec["n_steps"]
        assert opt.primal - rec["dual"] <= 2.0 * (C_f + h0) / (k + 2) + 1e-12, k


@settings(max_examples=scaled_examples(15))
@given(toy_problems(lams=(-2, 1)), st.booleans())
def test_bcfw_mean_suboptimality_obeys_the_expected_bound(toy, line_search):
    """E[P* - D(alpha_k)] <= 2n (C_f^x + h_0) / (k + 2n) (Lacoste-Julien et al. (2013), Thm. 2).

    C_f^x = sum_i C_f^(i) <= sum_i diam_i^2 / (lam n^2).  The bound is on the
    expectation over the block sampling: the mean of 8 seeded runs is checked
    (the observed values stay well below the bound).
    """
    opt = solve_dual_qp(toy.enum.psi, toy.enum.loss, toy.lam)
    n = toy.oracle.n_blocks
    C = (_diameters(toy.enum) ** 2).sum() / (toy.lam * n * n)
    h0 = opt.primal
    subopt = []
    for seed in range(8):
        result = solve(toy.oracle, toy.lam, line_search=line_search, tol=0, max_passes=15,
                       gap_check_every=100, averaging=False, random_state=seed)
        subopt.append([opt.primal - h["dual"] for h in result.history])
        steps = np.array([h["n_steps"] for h in result.history])
    mean = np.mean(subopt, axis=0)
    bound = 2.0 * n * (C + h0) / (steps + 2.0 * n)
    assert np.all(mean <= bound + 1e-12), (mean / bound).max()


# ---------------------------------------------------------------------------
# Equivalences
# ---------------------------------------------------------------------------


def record_run(oracle, lam, averaging, **kwargs):
    """solve() with a callback keeping (w, w_avg, ell, ell_avg) at every record."""
    state = SolverState.for_oracle(as_oracle(oracle), lam, averaging)
    seen = []

    def callback(rec):
        seen.append((state.w.copy(), state.averaged_w(), state.ell, state.averaged_ell()))

    result = solve(oracle, lam, state=state, averaging=averaging, callback=callback,
                   **kwargs)
    return result, seen


def assert_same_trajectory(run_a, run_b, rtol, atol):
    """Same iterates and records, up to rounding.

    With tol = 0 a run stops as "converged" only when its gap is exactly 0, so
    rounding may stop one run earlier than the other, or end it as
    "converged" instead of "max_passes"; the common part must agree and both
    runs must be (numerically) converged where they part.
    ``atol`` is relative to the largest weight seen.
    """
    (res_a, seen_a), (res_b, seen_b) = run_a, run_b
    atol = atol * max(1.0, max(float(np.abs(w).max()) for w, *_ in seen_a))
    common = min(len(seen_a), len(seen_b))
    if len(seen_a) != len(seen_b) or res_a.status != res_b.status:
        # Only an exact-zero gap of one run may make them part ways.
        assert "converged" in (res_a.status, res_b.status), (res_a.status, res_b.status)
        for res in (res_a, res_b):
            rec = res.history[common - 1]
            for key in ("gap", "gap_avg"):
                if rec.get(key) is not None:
                    assert abs(rec[key]) <= 1e3 * atol, (key, rec[key])
    for (w_a, avg_a, ell_a, ella_a), (w_b, avg_b, ell_b, ella_b) in zip(
            seen_a[:common], seen_b[:common], strict=True):
        np.testing.assert_allclose(w_a, w_b, rtol=rtol, atol=atol)
        np.testing.assert_allclose(avg_a, avg_b, rtol=rtol, atol=atol)
        assert ell_a == pytest.approx(ell_b, rel=rtol, abs=atol)
        assert ella_a == pytest.approx(ella_b, rel=rtol, abs=atol)
    for rec_a, rec_b in zip(res_a.history[:common], res_b.history[:common], strict=True):
        assert rec_a["n_steps"] == rec_b["n_steps"]
        assert rec_a["oracle_calls"] == rec_b["oracle_calls"]
        for key in ("dual", "primal", "gap", "gap_estimate", "primal_avg", "dual_avg",
                    "gap_avg"):
            if rec_a.get(key) is None:
                assert rec_b.get(key) is None, key
            else:
                assert rec_a[key] == pytest.approx(rec_b[key], rel=1e3 * rtol, abs=atol), key


@settings(max_examples=scaled_examples(25))
@given(toy_problems(n_max=1), st.booleans(), st.booleans())
def test_bcfw_with_one_block_is_batch_fw(toy, line_search, averaging):
    """With n = 1 a BCFW pass is one FW step: the same iterates, averages and history.

    (Equal up to rounding: the two kernels accumulate the line-search sums
    differently, which can change the last bits.)
    """
    kwargs = {"line_search": line_search, "tol": 0, "max_passes": 15, "gap_check_every": 3,
              "random_state": 0}
    fw = record_run(toy.oracle, toy.lam, averaging, batch=True, **kwargs)
    bcfw = record_run(toy.oracle, toy.lam, averaging, batch=False, **kwargs)
    assert_same_trajectory(fw, bcfw, rtol=1e-13, atol=1e-14)


class TieWatch:
    """Python oracle around a brute force that notes ties away from w = 0.

    At w = 0 both oracles break the loss ties alike (first class; for chains
    the smallest wrong state at every position, which is also the first
    labelling enumerated).  Elsewhere a tie may be broken differently, by
    rounding or by the Viterbi back-tracking order, and the two runs may then
    follow different (equally valid) corners.
    """

    def __init__(self, bf):
        self.bf, self.tie = bf, False
        self.n_blocks, self.n_features, self.max_labels = bf.n_blocks, bf.n_features, bf.max_labels

    def solve(self, i, w):
        if np.any(w):
            H = np.sort(self.bf.scores(i, w))
            if len(H) > 1 and H[-1] - H[-2] <= 1e-9 * max(1.0, abs(H[-1])):
                self.tie = True
        return self.bf.solve(i, w)

    def evaluate(self, i, labels, w):
        return self.bf.evaluate(i, labels, w)


@settings(max_examples=scaled_examples(25))
@given(toy_problems(kinds=("multiclass_cost", "chain")), st.sampled_from(VARIANTS),
       st.booleans())
def test_python_and_cython_oracles_give_the_same_trajectory(toy, options, line_search):
    """BruteForceOracle (Python, via PythonOracle) and the Cython oracle are interchangeable.

    Same seed, same options: the same block order, corners and iterates (up to
    rounding: dense Python psi against sparse Cython psi), as long as no
    labellings tie (random costs keep the wrong classes from being symmetric).
    """
    options = dict(options)
    averaging = options.pop("averaging")
    kwargs = {"tol": 0, "max_passes": 8, "gap_check_every": 2, "line_search": line_search,
              "random_state": 11, **options}
    watch = TieWatch(toy.bf)
    py = record_run(watch, toy.lam, averaging, **kwargs)
    assume(not watch.tie)
    cy = record_run(toy.oracle, toy.lam, averaging, **kwargs)
    assert_same_trajectory(cy, py, rtol=1e-11, atol=1e-12)
    if cy[0].state.passes == py[0].state.passes:
        assert cy[0].state.rng_state == py[0].state.rng_state
