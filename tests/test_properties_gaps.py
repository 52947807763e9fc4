"""Gap identities on enumerable toy problems (Cython oracles of ssvm_oracles).

P(w) is computed independently, from the psi/loss matrices enumerated by a
``BruteForceOracle``; D from the alpha-free formula ell - lam/2 ||w||^2 and,
where noted, from an explicit alpha recovered by NNLS (which also proves the
solver's (w_i, ell_i) are feasible dual points).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import toy_problems

from ssvm_core import SolverState, as_oracle, dual_objective, duality_gap, solve
from ssvm_core.testing import (
    check_gaps,
    dual_by_enumeration,
    primal_by_enumeration,
    recover_alpha,
    scaled_examples,
)

solver_options = st.fixed_dictionaries({
    "batch": st.booleans(),
    "sampling": st.sampled_from(["uniform", "perm"]),
    "line_search": st.booleans(),
    "averaging": st.booleans(),
    "max_passes": st.integers(1, 6),
    "gap_check_every": st.integers(1, 3),
})


def independent_dual(state: SolverState, averaged=False) -> float:
    if averaged:
        w, ell = state.averaged_w(), state.averaged_ell()
    else:
        w, ell = state.w, state.ell
    return ell - 0.5 * state.lam * float(w @ w)


def scale_of(*values) -> float:
    return max(1.0, *(abs(v) for v in values))


@settings(max_examples=scaled_examples(40))
@given(toy_problems(), solver_options)
def test_block_gaps_are_nonnegative_and_sum_to_the_duality_gap(toy, options):
    result = solve(toy.oracle, toy.lam, tol=0, random_state=0, **options)
    st_ = result.state
    P = primal_by_enumeration(toy.enum.psi, toy.enum.loss, toy.lam, st_.w)
    D = independent_dual(st_)
    gaps = check_gaps(None, st_, toy.enum)
    tol = 1e-12 * scale_of(P, D)
    assert np.all(gaps >= -tol)
    assert gaps.sum() == pytest.approx(P - D, rel=1e-9, abs=10 * tol)
    # The same through the oracle, and the solver's own exact block gaps
    # (a final gap check was made at the returned iterate).
    np.testing.assert_allclose(check_gaps(toy.oracle, st_), gaps, rtol=1e-10, atol=tol)
    np.testing.assert_allclose(st_.certified_gaps, gaps, rtol=1e-9, atol=10 * tol)
    assert result.history[-1]["gap"] == pytest.approx(P - D, rel=1e-9, abs=10 * tol)
    # The state is a feasible dual point: an explicit alpha reproduces it.
    alphas, residual = recover_alpha(toy.enum, st_)
    assert residual <= 1e-9 * scale_of(*st_.block_values)
    assert dual_by_enumeration(toy.enum.psi, toy.enum.loss, toy.lam, alphas) == pytest.approx(
        D, rel=1e-8, abs=1e-9)


@settings(max_examples=scaled_examples(30))
@given(toy_problems(), solver_options)
def test_duality_gap_equals_the_independent_primal_minus_dual(toy, options):
    result = solve(toy.oracle, toy.lam, tol=0, random_state=1, **options)
    st_ = result.state
    for averaged in (False, True):
        w = st_.averaged_w() if averaged else st_.w
        P = primal_by_enumeration(toy.enum.psi, toy.enum.loss, toy.lam, w)
        D = independent_dual(st_, averaged)
        assert dual_objective(st_, averaged) == pytest.approx(D, rel=1e-14, abs=1e-15)
        gap = duality_gap(toy.oracle, st_, averaged)
        assert gap == pytest.approx(P - D, rel=1e-9, abs=1e-9 * scale_of(P, D))
        # weak duality: the averaged pair is a convex combination of feasible points
        assert gap >= -1e-12 * scale_of(P, D)
    if options["averaging"]:
        assert result.gap == pytest.approx(duality_gap(toy.oracle, st_, True), rel=1e-9,
                                           abs=1e-12)
    else:
        assert result.gap == pytest.approx(duality_gap(toy.oracle, st_), rel=1e-9,
                                           abs=1e-12)


@settings(max_examples=scaled_examples(30))
@given(toy_problems(), solver_options)
def test_history_records_match_independent_objectives(toy, options):
    """Every record with a gap: primal - dual == gap, each value checked independently."""
    averaging = options["averaging"]
    state = SolverState.for_oracle(as_oracle(toy.oracle), toy.lam, averaging)
    seen = []

    def callback(rec):
        seen.append((rec, state.w.copy(), state.averaged_w(), state.ell,
                     state.averaged_ell()))

    result = solve(toy.oracle, toy.lam, tol=0, state=state, callback=callback,
                   random_state=2, **options)
    assert [s[0] for s in seen] == result.history
    n = toy.oracle.n_blocks
    for rec, w, w_avg, ell, ell_avg in seen:
        D = ell - 0.5 * toy.lam * float(w @ w)
        assert rec["dual"] == pytest.approx(D, rel=1e-13, abs=1e-15)
        assert rec["effective_passes"] == rec["oracle_calls"] / n
        if rec["gap"] is None:
            continue
        P = primal_by_enumeration(toy.enum.psi, toy.enum.loss, toy.lam, w)
        scale = scale_of(P, D)
        assert rec["primal"] == pytest.approx(P, rel=1e-12, abs=1e-14)
        assert abs(rec["primal"] - rec["dual"] - rec["gap"]) <= 1e-12 * scale
        assert rec["gap_estimate"] == pytest.approx(rec["gap"], rel=1e-9, abs=1e-12 * scale)
        assert rec["gap"] >= -1e-12 * scale
        if averaging:
            P_avg = primal_by_enumeration(toy.enum.psi, toy.enum.loss, toy.lam, w_avg)
            D_avg = ell_avg - 0.5 * toy.lam * float(w_avg @ w_avg)
            assert rec["primal_avg"] == pytest.approx(P_avg, rel=1e-12, abs=1e-14)
            assert rec["dual_avg"] == pytest.approx(D_avg, rel=1e-12, abs=1e-14)
            assert abs(rec["primal_avg"] - rec["dual_avg"] - rec["gap_avg"]) <= 1e-12 * scale
            assert rec["gap_avg"] >= -1e-12 * scale


@settings(max_examples=scaled_examples(25))
@given(toy_problems(), st.sampled_from(["uniform", "perm", "batch"]), st.booleans())
def test_dual_never_decreases_with_line_search(toy, method, averaging):
    batch = method == "batch"
    result = solve(toy.oracle, toy.lam, tol=0, max_passes=25, gap_check_every=5,
                   batch=batch, sampling="uniform" if batch else method,
                   averaging=averaging, random_state=3)
    duals = np.array([h["dual"] for h in result.history])
    scale = scale_of(*duals)
    assert duals[0] == 0.0                     # alpha at the ground truth
    assert np.all(np.diff(duals) >= -1e-13 * scale), duals
    # Resuming one pass at a time gives the same monotone sequence.
    state = None
    previous = 0.0
    for _ in range(5):
        r = solve(toy.oracle, toy.lam, tol=0, max_passes=1, batch=batch, state=state,
                  sampling="uniform" if batch else method, averaging=averaging,
                  random_state=3)
        state = r.state
        dual = dual_objective(state)
        assert dual >= previous - 1e-13 * scale
        previous = dual
    if state.passes == 5 and len(duals) > 5:
        assert previous == pytest.approx(duals[5], rel=1e-12, abs=1e-15)


@settings(max_examples=scaled_examples(20))
@given(toy_problems(kinds=("chain",)))
def test_rescaled_state_keeps_alpha_and_its_gap_identity(toy):
    result = solve(toy.oracle, toy.lam, tol=0, max_passes=3, random_state=0)
    st_ = result.state
    alphas, _ = recover_alpha(toy.enum, st_)
    new_lam = toy.lam * 10.0 ** toy.rng.integers(-1, 2)
    st_.rescale(new_lam)
    # The same alpha at the new lambda is the rescaled state.
    D = dual_by_enumeration(toy.enum.psi, toy.enum.loss, new_lam, alphas)
    assert dual_objective(st_) == pytest.approx(D, rel=1e-8, abs=1e-10)
    P = primal_by_enumeration(toy.enum.psi, toy.enum.loss, new_lam, st_.w)
    gaps = check_gaps(None, st_, toy.enum)
    assert np.all(gaps >= -1e-12 * scale_of(P, D))
    assert gaps.sum() == pytest.approx(P - dual_objective(st_), rel=1e-9, abs=1e-12)
