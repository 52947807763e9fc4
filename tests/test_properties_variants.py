"""Every solver variant of Osokin et al. (2016) on enumerable toy problems, against independent
references.

The combinations {uniform, perm, gap} x {fw, away, pairwise, hybrid, corrective} x
{cache, no cache} x {box, no box} x {averaging, none} all run through
``ssvm_core.solve``.  For each, on hypothesis-drawn toy problems:

- the certificate brackets the independent optimum (QP over the enumeration,
  box-constrained when there is a box): 0 <= P(w) - P* <= gap;
- the gap equals P(w) - D(alpha) with P by enumeration and D from the
  multiplier form of Osokin et al. (2016), App. H (``box_reference``), and the block gaps,
  recomputed by enumeration, sum to it;
- the dual of the iterate never decreases from pass to pass;
- w stays in the box; active sets keep their invariants;
- away, pairwise, hybrid and corrective steps (without averaging or box)
  converge to P*;
- a corrective step reaches the block optimum over its labellings.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from box_reference import box_dual_value, box_primal_optimum, random_box
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import RecordingOracle, _toy, toy_problems

from ssvm_core import SolverState, as_oracle, solve
from ssvm_core._active import active_pass
from ssvm_core.parallel import score_pass
from ssvm_core.testing import (
    check_gaps,
    primal_by_enumeration,
    scaled_examples,
    solve_dual_qp,
)

COMBINATIONS = list(itertools.product(("uniform", "perm", "gap"),
                                      ("fw", "away", "pairwise", "hybrid", "corrective",
                                       "sequential"),
                                      (False, True), (False, True), (False, True)))


def optimum(toy, box):
    if box is None:
        return solve_dual_qp(toy.enum.psi, toy.enum.loss, toy.lam).primal
    return box_primal_optimum(toy.enum.psi, toy.enum.loss, toy.lam, *box)[0]


def check_certificates(toy, result, box, p_star):
    state = result.state
    lam, enum = toy.lam, toy.enum
    scale = max(1.0, abs(p_star))
    tol = 1e-9 * scale
    w = state.w
    if box is not None:
        lower, upper = box
        assert np.all(w >= lower) and np.all(w <= upper)
        assert np.all(result.w >= lower) and np.all(result.w <= upper)
    # The returned iterate is certified by the returned gap.
    primal_ret = primal_by_enumeration(enum.psi, enum.loss, lam, result.w)
    assert primal_ret - p_star >= -1e-7 * scale
    assert primal_ret - p_star <= result.gap + 1e-7 * scale
    # Identities at the plain iterate, from independent formulas.
    v = sum(state.block_vector(i) for i in range(state.n_blocks))
    np.testing.assert_allclose(v, state.v, atol=1e-12 * max(1.0, np.abs(v).max()))
    ell = float(np.sum(state.block_ell))
    if box is None:
        dual = ell - 0.5 * lam * v @ v
    else:
        dual = box_dual_value(ell, v, lam, *box)
    primal = primal_by_enumeration(enum.psi, enum.loss, lam, w)
    assert dual <= p_star + tol
    gaps = check_gaps(None, state, enum, w=w)
    assert gaps.min() >= -tol
    assert gaps.sum() == pytest.approx(primal - dual, abs=tol)
    for rec in result.history:
        if rec["gap"] is not None:
            assert rec["primal"] - rec["dual"] == pytest.approx(rec["gap"], abs=tol)
            assert rec["gap_estimate"] == pytest.approx(rec["gap"], abs=tol)
    duals = [rec["dual"] for rec in result.history]
    assert all(b >= a - tol for a, b in itertools.pairwise(duals))


@pytest.mark.parametrize("sampling,step,cache,use_box,averaging", COMBINATIONS)
@settings(max_examples=scaled_examples(2), deadline=None)
@given(toy=toy_problems(n_max=3), box_seed=st.integers(0, 2 ** 16))
def test_every_combination_is_certified(toy, box_seed, sampling, step, cache, use_box,
                                        averaging):
    box = random_box(np.random.default_rng(box_seed), toy.oracle.n_features) \
        if use_box else None
    p_star = optimum(toy, box)
    # Linear convergence is checked without a box: with one, Osokin et al. (2016), Alg. 8 measures
    # the curvature in v, and once w is clipped its steps can be arbitrarily
    # small (seen for FW, pairwise and corrective steps alike at lam = 1e-3).
    linear = step not in ("fw", "sequential") and not averaging and box is None
    result = solve(toy.oracle, toy.lam, sampling=sampling, step=step, cache=cache, box=box,
                   averaging=averaging, tol=1e-9 if linear else 0.0,
                   max_passes=20000 if linear else 60, gap_check_every=7, random_state=3)
    check_certificates(toy, result, box, p_star)
    if result.state.atoms is not None:
        result.state.check_atoms()
    if linear:
        scale = max(1.0, abs(p_star))
        assert result.gap <= 1e-6 * scale, (result.status, result.gap)


@settings(max_examples=scaled_examples(10), deadline=None)
@given(toy_problems(n_max=3),
       st.sampled_from(("away", "pairwise", "hybrid", "corrective", "sequential")),
       st.booleans(), st.booleans())
def test_invariants_and_dual_ascent_after_every_pass(toy, step, cache, use_box):
    box = random_box(toy.rng, toy.oracle.n_features) if use_box else None
    state = None
    last_dual = -np.inf
    for _ in range(15):
        result = solve(toy.oracle, toy.lam, step=step, cache=cache, box=box, state=state,
                       max_passes=1, tol=0, averaging=False, random_state=0)
        state = result.state
        state.check_atoms()
        dual = result.history[-1]["dual"]
        assert dual >= last_dual - 1e-12 * max(1.0, abs(dual))
        last_dual = dual
        for i in range(state.n_blocks):       # atoms are distinct labellings
            keys = [None if y is None else y.tobytes() for y in state.atoms.labellings(i)]
            assert len(keys) == len(set(keys))
            if not cache:                      # without a cache only active atoms stay
                assert np.all(state.atoms.alphas(i)[1:] > 0)


@settings(max_examples=scaled_examples(10), deadline=None)
@given(toy_problems(n_max=4), st.sampled_from(("fw", "pairwise", "hybrid")))
def test_gap_sampling_with_active_sets_never_visits_a_zero_gap_block(toy, step):
    """Each draw from exact block gaps avoids the blocks whose gap is 0.

    One step per pass, right after an exact gap pass, so the sum tree holds
    exact gaps.  (Within a pass the visited blocks' estimates change; when
    all are 0 the point is optimal and draws fall back to uniform.)
    """
    recorder = RecordingOracle(toy.bf)
    oracle = as_oracle(recorder)
    state = SolverState.for_oracle(oracle, toy.lam, active_sets=True)
    rng = np.random.default_rng(0)
    for _ in range(12):
        score_pass(oracle, state.w, state)          # exact block gaps
        gaps = state.block_gap_estimates.copy()
        if not np.any(gaps > 0):
            break
        recorder.calls.clear()
        active_pass(oracle, state, np.zeros(0, dtype=np.intp), step=step,
                    gap_uniforms=rng.random(1))
        (visited,) = recorder.calls
        assert gaps[visited] > 0


def test_cache_rule_thresholds():
    """F = nu = 0 takes the cache whenever its gap is positive; huge F and nu never do.

    (A huge F alone is not enough: after an oracle call that found a zero gap,
    F g_i = 0 and the global rule decides.)
    """

    from ssvm_core.testing import random_multiclass_data
    from ssvm_oracles import MulticlassModel
    rng = np.random.default_rng(4)
    X, Y = random_multiclass_data(rng, 5, 3, 4)
    toy = _toy(MulticlassModel(4, 3), X, Y, 0.01, rng)
    never = solve(toy.oracle, toy.lam, cache=True, cache_factor=1e9, cache_nu=1e9,
                  max_passes=20, tol=0, random_state=0)
    assert never.gap > 0
    assert never.state.cache_hits_local + never.state.cache_hits_global == 0
    eager = solve(toy.oracle, toy.lam, cache=True, cache_factor=0.0, cache_nu=0.0,
                  max_passes=20, tol=0, random_state=0)
    st_ = eager.state
    assert st_.cache_hits_local + st_.cache_hits_global > 0
    # Calls: one per step that missed the cache, plus the gap checks (n calls at
    # the iterate and n at the average, except the first check, at w = w_avg = 0).
    n_checks = sum(rec["gap"] is not None for rec in eager.history)
    misses = st_.n_steps - st_.cache_hits_local - st_.cache_hits_global
    assert st_.oracle_calls == misses + 5 + (n_checks - 1) * 5 * 2


@pytest.mark.parametrize("step,cache,use_box", [("pairwise", True, True),
                                                ("hybrid", False, False),
                                                ("away", True, False)])
def test_save_load_resume_is_exact_with_active_sets(tmp_path, step, cache, use_box):

    from ssvm_core.testing import random_chain_data
    from ssvm_oracles import ChainModel
    rng = np.random.default_rng(8)
    X, Y = random_chain_data(rng, 4, 3, 3, 2)
    toy = _toy(ChainModel(3, 2), X, Y, 0.05, rng)
    box = random_box(rng, toy.oracle.n_features) if use_box else None
    opts = {"step": step, "cache": cache, "box": box, "sampling": "gap", "tol": 0,
            "gap_check_every": 3}
    whole = solve(toy.oracle, toy.lam, max_passes=6, random_state=1, **opts)
    part = solve(toy.oracle, toy.lam, max_passes=3, random_state=1, **opts)
    path = tmp_path / "state.npz"
    part.state.save(path)
    loaded = SolverState.load(path)
    np.testing.assert_array_equal(loaded.atoms.to_arrays()["atom_alpha"],
                                  part.state.atoms.to_arrays()["atom_alpha"])
    loaded.check_atoms()
    rest = solve(toy.oracle, toy.lam, max_passes=3, state=loaded, **opts)
    np.testing.assert_array_equal(rest.state.w, whole.state.w)
    np.testing.assert_array_equal(rest.state.v, whole.state.v)
    assert rest.state.pairwise_steps == whole.state.pairwise_steps


@pytest.mark.parametrize("kwargs,match", [
    ({"step": "diagonal"}, "step must be one of"),
    ({"batch": True, "step": "pairwise"}, "batch Frank-Wolfe supports neither"),
    ({"batch": True, "cache": True}, "batch Frank-Wolfe supports neither"),
    ({"step": "away", "line_search": False}, "needs line search"),
    ({"cache": True, "cache_size": 1}, "cache_size"),
    ({"cache": True, "cache_factor": -1.0}, "cache_factor"),
    ({"box": (1.0, 0.0)}, "infeasible box"),
    ({"box": (np.nan, 1.0)}, "NaN"),
    ({"box": (np.zeros(3), 1.0)}, "shape"),
    ({"box": (np.inf, np.inf)}, "infeasible box"),
])
def test_bad_variant_options_are_rejected(kwargs, match):
    from ssvm_core.testing import ToyMulticlassModel, random_multiclass_data
    rng = np.random.default_rng(0)
    X, Y = random_multiclass_data(rng, 4, 2, 3)
    oracle = ToyMulticlassModel(3, 2).bind(list(X), [np.atleast_1d(y) for y in Y])
    with pytest.raises(ValueError, match=match):
        solve(oracle, 0.1, **kwargs)


def test_plain_state_cannot_continue_with_pairwise_steps():
    from ssvm_core.testing import ToyMulticlassModel, random_multiclass_data
    rng = np.random.default_rng(0)
    X, Y = random_multiclass_data(rng, 4, 2, 3)
    oracle = ToyMulticlassModel(3, 2).bind(list(X), [np.atleast_1d(y) for y in Y])
    plain = solve(oracle, 0.1, max_passes=2, tol=0)
    with pytest.raises(ValueError, match="need the active sets"):
        solve(oracle, 0.1, step="pairwise", state=plain.state)
    boxed = solve(oracle, 0.1, max_passes=2, tol=0, box=(0.0, 1.0))
    with pytest.raises(ValueError, match="box"):
        solve(oracle, 0.1, state=boxed.state)
    with pytest.raises(ValueError, match="box"):
        solve(oracle, 0.1, state=boxed.state, box=(0.0, 2.0))


@settings(max_examples=scaled_examples(10), deadline=None)
@given(toy_problems(n_max=3), st.booleans())
def test_corrective_step_reaches_the_block_optimum(toy, cache):
    """After a corrective step on block i, no labelling stored for i improves the dual:
    the block QP's optimality conditions hold (every stored atom has
    H_k(w) <= sum_l alpha_l H_l(w), with equality on the active ones)."""
    state = None
    for _ in range(4):
        result = solve(toy.oracle, toy.lam, step="corrective", cache=cache, state=state,
                       max_passes=1, tol=0, averaging=False, random_state=1)
        state = result.state
    psi_scale = max(1.0, max(float(np.abs(P).max()) for P in toy.enum.psi))
    for i in range(state.n_blocks):
        # One more corrective step on block i alone, then check its KKT conditions.
        active_pass(toy.oracle, state, np.array([i], dtype=np.intp), step="corrective",
                    cache=cache)
        alpha = state.atoms.alphas(i)
        psi = state.atoms.psi_matrix(i, state.n_features)
        H = state.atoms.losses(i) - psi @ state.w
        mean = alpha @ H
        tol = 1e-7 * psi_scale * max(1.0, np.abs(H).max())
        assert np.all(H <= mean + tol)
        assert np.all(np.abs(H[alpha > 1e-9] - mean) <= tol)


@settings(max_examples=scaled_examples(15), deadline=None)
@given(toy_problems(n_max=3), st.sampled_from(("fw", "pairwise")), st.booleans(),
       st.floats(0.05, 1.0))
def test_shrink_duals_keeps_w_and_moves_the_gap_by_prop_1(toy, step, use_box, rho):
    """Osokin et al. (2016), Prop. 1: rescaling alpha off the ground truth by
    rho = lam_new / lam keeps w, and g(alpha', lam_new) = g(alpha, lam) + (1 - rho) Delta,
    gaps by enumeration."""
    box = random_box(toy.rng, toy.oracle.n_features) if use_box else None
    result = solve(toy.oracle, toy.lam, step=step, box=box, max_passes=5, tol=0,
                   averaging=False, random_state=0)
    state = result.state
    enum = toy.enum

    def gap(st_):
        v = st_.v
        ell = float(np.sum(st_.block_ell))
        dual = (ell - 0.5 * st_.lam * v @ v if box is None
                else box_dual_value(ell, v, st_.lam, *box))
        return primal_by_enumeration(enum.psi, enum.loss, st_.lam, st_.w) - dual

    w_before, g_before = state.w.copy(), gap(state)
    assert state.exact_gaps                  # the solve ended on a gap pass
    deltas = state.block_deltas()
    delta = state.shrink_duals(rho * toy.lam)
    np.testing.assert_array_equal(state.w, w_before)
    scale = max(1.0, abs(g_before), abs(delta))
    assert deltas.sum() == pytest.approx(delta, abs=1e-12 * scale)
    assert gap(state) == pytest.approx(g_before + (1 - rho) * delta, abs=1e-9 * scale)
    if state.atoms is not None:
        state.check_atoms()
    # The state's gaps stay exact, block by block: a fresh gap pass gives the same.
    assert state.exact_gaps
    assert state.last_exact_gap == pytest.approx(gap(state), abs=1e-9 * scale)
    fresh = state.copy()
    score_pass(toy.oracle, state.w, fresh)
    np.testing.assert_allclose(state.block_gap_estimates, fresh.block_gap_estimates,
                               rtol=0, atol=1e-9 * scale)


@settings(max_examples=scaled_examples(10), deadline=None)
@given(toy_problems(n_max=3), st.sampled_from(("fw", "pairwise")), st.booleans())
def test_solve_without_the_initial_gap_pass_reuses_exact_gaps_only(toy, step, use_box):
    """initial_gap_pass=False: no oracle call at the start after shrink_duals (the history
    starts from the Prop. 1 gap), one full pass when the gaps are stale."""
    box = random_box(toy.rng, toy.oracle.n_features) if use_box else None
    state = solve(toy.oracle, toy.lam, step=step, box=box, max_passes=3, tol=0,
                  averaging=False, random_state=0).state
    state.shrink_duals(0.5 * toy.lam)
    known, calls = state.last_exact_gap, state.oracle_calls
    result = solve(toy.oracle, 0.5 * toy.lam, step=step, box=box, state=state, max_passes=2,
                   tol=0, averaging=False, initial_gap_pass=False, random_state=0)
    first = result.history[0]
    assert first["oracle_calls"] == calls and first["gap"] == known
    assert first["primal"] == pytest.approx(first["dual"] + known)
    # A pass after the last gap check makes the gaps stale, a rescale too: the start
    # pass is then made anyway.
    for rescale in (False, True):
        start = state.passes
        stopped = solve(toy.oracle, state.lam, step=step, box=box, state=state, max_passes=5,
                        gap_check_every=5, tol=0, averaging=False, random_state=0,
                        callback=lambda record, k=start: record["pass"] > k)  # one pass
        if stopped.status == "converged":                  # gap exactly 0: no pass made
            return
        assert stopped.status == "callback" and not state.exact_gaps
        if rescale:
            solve(toy.oracle, state.lam, step=step, box=box, state=state, max_passes=1,
                  tol=0, averaging=False, random_state=0)
            assert state.exact_gaps
            state.rescale(0.5 * state.lam)
            assert not state.exact_gaps
        calls = state.oracle_calls
        result = solve(toy.oracle, state.lam, step=step, box=box, state=state, max_passes=1,
                       tol=0, averaging=False, initial_gap_pass=False, random_state=0)
        assert result.history[0]["oracle_calls"] == calls + toy.oracle.n_blocks


@settings(max_examples=scaled_examples(25), deadline=None)
@given(toy_problems(kinds=("chain",), n_max=3), st.integers(2, 6), st.integers(0, 2 ** 16))
def test_chain_solve_many_against_enumeration(toy, k, seed):
    """Answers are distinct, scored correctly, non-increasing, the argmax first and the
    exact second-best second."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=toy.oracle.n_features)
    for i in range(toy.oracle.n_blocks):
        answers = toy.oracle.solve_many_py(i, w, k)
        H = np.sort(toy.enum.scores(i, w))[::-1]
        assert 1 <= len(answers) <= min(k, len(H))
        keys = {labels.tobytes() for labels, *_ in answers}
        assert len(keys) == len(answers)
        scores = [score for *_, score in answers]
        assert scores[0] == pytest.approx(H[0], abs=1e-9)
        if len(answers) > 1:
            assert scores[1] == pytest.approx(H[1], abs=1e-9)
        assert all(b <= a + 1e-9 for a, b in itertools.pairwise(scores))
        for labels, psi, loss, score in answers:
            psi_e, loss_e, score_e = toy.oracle.evaluate_py(i, labels, w)
            np.testing.assert_allclose(psi, psi_e, atol=1e-12)
            assert loss == pytest.approx(loss_e) and score == pytest.approx(score_e, abs=1e-9)


@settings(max_examples=scaled_examples(10), deadline=None)
@given(toy_problems(n_max=3), st.sampled_from(("corrective", "sequential", "pairwise")),
       st.booleans())
def test_multi_sample_steps_with_extra_samples(toy, step, cache):
    """Extra oracle answers (n_samples = 3) join the blocks: certificates, invariants
    and dual ascent hold; Python oracles without solve_many give one answer."""
    p_star = solve_dual_qp(toy.enum.psi, toy.enum.loss, toy.lam).primal
    result = solve(toy.oracle, toy.lam, step=step, cache=cache, n_samples=3, tol=0,
                   max_passes=25, averaging=False, random_state=0)
    check_certificates(toy, result, None, p_star)
    result.state.check_atoms()
    bf = solve(toy.bf, toy.lam, step=step, cache=cache, n_samples=3, tol=0, max_passes=3,
               averaging=False, random_state=0)
    bf.state.check_atoms()


def test_python_solve_many_is_checked():
    from ssvm_core.testing import ToyMulticlassModel, random_multiclass_data
    rng = np.random.default_rng(0)
    X, Y = random_multiclass_data(rng, 3, 2, 3)
    inner = ToyMulticlassModel(3, 2).bind(list(X), [np.atleast_1d(y) for y in Y])

    class Many(RecordingOracle):
        def solve_many(self, i, w, k):
            scores = [(inner.evaluate(i, [c], w), c) for c in range(3)]
            order = sorted(range(3), key=lambda c: -(scores[c][0][1] - scores[c][0][0] @ w))
            return [([c], *inner.evaluate(i, [c], w)) for c in order[:k]]

    oracle = as_oracle(Many(inner))
    answers = oracle.solve_many_py(0, np.zeros(oracle.n_features), 2)
    assert len(answers) == 2 and answers[0][3] >= answers[1][3]
    result = solve(oracle, 0.1, step="corrective", n_samples=3, max_passes=5, tol=0)
    result.state.check_atoms()
    assert max(result.state.atoms.n_atoms(i) for i in range(3)) >= 2

    class TooMany(Many):
        def solve_many(self, i, w, k):
            return super().solve_many(i, w, 3) * 2

    with pytest.raises(ValueError, match="returned 6 answers"):
        as_oracle(TooMany(inner)).solve_many_py(0, np.zeros(oracle.n_features), 2)
    with pytest.raises(ValueError, match="n_samples"):
        solve(oracle, 0.1, n_samples=0)


@pytest.mark.parametrize("step,cache", [("pairwise", True), ("corrective", False)])
def test_float32_atoms_are_certified_and_round_trip(tmp_path, step, cache):
    """psi stored in single precision: the solver's w is built from rounded corners,
    so D is that of a perturbed problem; the certificate holds up to the rounding,
    |D - D_exact| <~ 2^-24 lam ||w||^2 (documented at ``solve``)."""
    from ssvm_core.testing import random_chain_data
    from ssvm_oracles import ChainModel
    rng = np.random.default_rng(5)
    X, Y = random_chain_data(rng, 4, 3, 3, 2)
    toy = _toy(ChainModel(3, 2), X, Y, 0.05, rng)
    p_star = solve_dual_qp(toy.enum.psi, toy.enum.loss, toy.lam).primal
    result = solve(toy.oracle, toy.lam, step=step, cache=cache, psi_float32=True, tol=1e-5,
                   max_passes=5000, averaging=False, random_state=0)
    arrays = result.state.atoms.to_arrays()
    assert arrays["atom_psi_val"].dtype == np.float32
    primal = primal_by_enumeration(toy.enum.psi, toy.enum.loss, toy.lam, result.w)
    slack = 1e-6 * toy.lam * float(result.w @ result.w)
    assert -1e-9 <= primal - p_star <= result.gap + slack
    assert result.status == "converged"
    result.state.check_atoms(atol=1e-6)                 # w_i from rounded psi
    path = tmp_path / "state.npz"
    result.state.save(path)
    loaded = SolverState.load(path)
    assert loaded.atoms.single
    np.testing.assert_array_equal(loaded.atoms.to_arrays()["atom_psi_val"],
                                  arrays["atom_psi_val"])


@settings(max_examples=scaled_examples(15), deadline=None)
@given(toy_problems(n_max=3), st.booleans(), st.booleans(), st.integers(0, 2 ** 16))
def test_move_to_vertices_puts_each_block_at_its_labelling(toy, active, use_box, seed):
    rng = np.random.default_rng(seed)
    box = random_box(rng, toy.oracle.n_features) if use_box else None
    state = solve(toy.oracle, toy.lam, step="pairwise" if active else "fw", box=box,
                  max_passes=2, tol=0, random_state=0).state
    picks = [int(rng.integers(len(c))) for c in toy.enum.candidates]
    state.move_to_vertices(toy.oracle, [toy.enum.candidates[i][k] for i, k in enumerate(picks)])
    n = state.n_blocks
    psi = [toy.enum.psi[i][k] for i, k in enumerate(picks)]
    loss = np.array([toy.enum.loss[i][k] for i, k in enumerate(picks)])
    for i in range(n):
        np.testing.assert_allclose(state.block_vector(i), psi[i] / (toy.lam * n), atol=1e-12)
    np.testing.assert_allclose(state.v, sum(psi) / (toy.lam * n), atol=1e-12)
    np.testing.assert_allclose(state.block_ell, loss / n)
    assert state.ell == pytest.approx(loss.sum() / n)
    if box is not None:
        np.testing.assert_array_equal(state.w, np.clip(state.v, *box))
    if active:
        state.check_atoms()
        assert all(np.count_nonzero(state.atoms.alphas(i)) == 1 for i in range(n))
    assert np.isnan(state.block_gap_estimates).all() and state.n_steps == 0
