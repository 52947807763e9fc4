"""Regularization paths and grid searches against independent optima on enumerable toys.

P*(lam) comes from ``ssvm_core.testing.solve_dual_qp`` (SLSQP + certified polish,
independent of the Frank-Wolfe kernels) or, with sign constraints, from
``box_reference.box_primal_optimum``; primals are computed by enumeration.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
from box_reference import box_primal_optimum
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import DelegatingOracle, toy_problems

from ssvm_core import BruteForceOracle, dual_objective, duality_gap
from ssvm_core.testing import (
    dual_by_enumeration,
    primal_by_enumeration,
    scaled_examples,
    solve_dual_qp,
    weights_from_alpha,
)
from ssvm_paths import RegularizationPath, grid_search, regularization_path
from ssvm_paths._common import resolve_problem
from ssvm_paths._init import initial_point

EPS = 0.1
# the QP's certified precision (relative 1e-10) plus rounding of the path's gaps
SLACK = 1e-7
VARIANTS = (("pairwise", True, "gap"), ("fw", False, "gap"), ("away", False, "perm"))


def _subopt(toy, lam, w):
    qp = solve_dual_qp(toy.enum.psi, toy.enum.loss, lam)
    return primal_by_enumeration(toy.enum.psi, toy.enum.loss, lam, w) - qp.primal


def _lams_inside(path, fractions):
    """Lambdas spread log-uniformly from the lower end (or lams[-1] / 10) to 4 lambda_1
    (the reference QP gets slow for large lambda)."""
    low = path.lam_end if path.lam_end > 0 else path.lams[-1] / 10
    lams = np.exp(np.log(low) + np.asarray(fractions) * np.log(4 * path.lams[0] / low))
    return np.maximum(lams, low)        # exp(log(low)) may round below low


def _some_breakpoints(path, fractions):
    """The first and last breakpoints and a few drawn ones (each check costs a QP)."""
    J = path.n_breakpoints
    return sorted({0, J - 1, *(int(f * (J - 1)) for f in fractions)})


def _check_shape(path, lam_min):
    assert np.all(np.diff(path.lams) < 0)
    assert path.weights.shape == (path.n_breakpoints, path.weights.shape[1])
    assert np.all(np.diff(path.effective_passes) > 0) and np.all(np.diff(path.times) >= 0)
    # rho <= 0 at the last breakpoint (Osokin et al. (2016), eq. 13)
    if path.status == "complete":
        assert path.lam_end == 0.0
        # the heuristic path decides on its (stale) gap estimates
        gap = path.gap_estimates[-1] if path.heuristic else path.gaps[-1]
        assert path.deltas[-1] <= path.eps - gap
    elif path.status == "lam_min":
        assert 0 < path.lam_end <= lam_min < path.lams[-1]
    else:                                 # a breakpoint's solver ran out of passes
        assert path.status == "max_passes" and lam_min < path.lam_end < path.lams[-1]


@settings(max_examples=scaled_examples(25), deadline=None)
@given(toy_problems(n_max=3), st.sampled_from(VARIANTS),
       st.lists(st.floats(0, 1), min_size=6, max_size=6), st.sampled_from((1e-3, 1e-2)))
def test_eps_path_is_eps_approximate_everywhere(toy, variant, fractions, lam_min):
    """P(w_at(lam)) - P*(lam) <= eps for lambdas across (and above) the whole path."""
    step, cache, sampling = variant
    path = regularization_path(toy.model, toy.X, toy.Y, eps=EPS, lam_min=lam_min, step=step,
                               cache=cache, sampling=sampling, max_passes=300)
    _check_shape(path, lam_min)
    assert np.all(path.gaps <= path.kappa * EPS * (1 + 1e-9))
    assert np.all(path.gap_bounds <= EPS * (1 + 1e-9))
    for j in _some_breakpoints(path, fractions[:2]):    # breakpoint certificates hold
        assert -SLACK <= _subopt(toy, path.lams[j], path.weights[j]) <= path.gaps[j] + SLACK
    for lam in _lams_inside(path, fractions[2:]):
        assert -SLACK <= _subopt(toy, lam, path.w_at(lam)) <= EPS + SLACK
    if path.lam_end > 0:
        with pytest.raises(ValueError, match="below the path's lower end"):
            path.w_at(path.lam_end / 2)


@settings(max_examples=scaled_examples(15), deadline=None)
@given(toy_problems(n_max=3), st.lists(st.floats(1, 4), min_size=3, max_size=3),
       st.sampled_from((0.5, 0.9)))
def test_initial_breakpoint_follows_alg_6(toy, factors, kappa):
    """lambda_inf = (||psi~||^2 + mean theta_i) / (kappa eps) with theta by enumeration,
    and (lambda_inf / lam) w_inf is kappa eps-approximate for every lam >= lambda_inf."""
    path = regularization_path(toy.model, toy.X, toy.Y, eps=EPS, kappa=kappa,
                               max_breakpoints=1)
    lam_inf, psi_tilde = path.lam_inf, path.lam_inf * path.weights[0]
    # psi~ is a mean of psi_i(y~_i) over labellings of maximal loss
    theta = [float(np.max(-P @ psi_tilde)) for P in toy.enum.psi]
    expected = (psi_tilde @ psi_tilde + np.mean(theta)) / (kappa * EPS)
    assert lam_inf == pytest.approx(expected, rel=1e-9)
    assert path.status == "max_breakpoints" and path.n_breakpoints == 1
    for factor in factors:
        lam = factor * lam_inf
        w = path.w_at(lam)
        np.testing.assert_allclose(w, psi_tilde / lam, rtol=1e-12, atol=1e-15)
        assert _subopt(toy, lam, w) <= kappa * EPS + SLACK


@settings(max_examples=scaled_examples(15), deadline=None)
@given(toy_problems(n_max=3), st.sampled_from((None, "cone")), st.integers(0, 2 ** 32 - 1))
def test_initial_state_is_alg_6_dual_point(toy, box_kind, seed):
    """The initial state puts alpha_i(y~_i) = 1 with y~_i of maximal loss: its active sets
    hold their invariants, its dual value is that of this alpha by enumeration, and its
    exact gap is within the bound of Osokin et al. (2016), eq. 11."""
    rng = np.random.default_rng(seed)
    d = toy.oracle.n_features
    box = None if box_kind is None else (np.where(rng.random(d) < 0.5, 0.0, -np.inf),
                                         np.full(d, np.inf))
    problem = resolve_problem(toy.model, toy.X, toy.Y, box, cone=True)
    try:
        init = initial_point(problem, EPS, 0.9, active_sets=True, cache_size=50)
    except ValueError as error:
        assert "w = 0 is optimal" in str(error)
        return
    state = init.state
    state.check_atoms()
    alphas = []
    for i, (P, L) in enumerate(zip(toy.enum.psi, toy.enum.loss)):
        atoms_alpha = state.atoms.alphas(i)
        assert atoms_alpha.max() == 1.0 and atoms_alpha.sum() == 1.0
        k = int(np.argmax(atoms_alpha))
        psi_k = state.atoms.psi_matrix(i, d)[k]
        match = [j for j in range(len(L)) if np.allclose(P[j], psi_k, atol=1e-12)
                 and L[j] == state.atoms.losses(i)[k]]
        assert match and L[match[0]] == L.max()            # y~_i has maximal loss
        alpha = np.zeros(len(L))
        alpha[match[0]] = 1.0
        alphas.append(alpha)
    v = weights_from_alpha(toy.enum.psi, state.lam, alphas)
    np.testing.assert_allclose(state.v, v, rtol=1e-12, atol=1e-15)
    if box is None:
        assert dual_objective(state) == pytest.approx(
            dual_by_enumeration(toy.enum.psi, toy.enum.loss, state.lam, alphas), abs=1e-12)
    assert duality_gap(toy.oracle, state) <= 0.9 * EPS * (1 + 1e-9)


@settings(max_examples=scaled_examples(6), deadline=None)
@given(toy_problems(kinds=("multiclass", "multiclass_cost"), n_max=3),
       st.lists(st.floats(0, 1), min_size=3, max_size=3))
def test_path_from_a_bare_oracle_uses_the_theta_bound(toy, fractions):
    """Without a model theta_i is bounded by max_y H_i(y; psi~): lambda_inf grows, the
    path stays eps-approximate."""
    with_model = regularization_path(toy.model, toy.X, toy.Y, eps=EPS, max_breakpoints=1)
    path = regularization_path(DelegatingOracle(toy.bf), eps=EPS, step="fw", cache=False,
                               lam_min=1e-3)
    assert not path.theta_exact and with_model.theta_exact
    assert path.lam_inf >= with_model.lam_inf * (1 - 1e-12)
    for lam in _lams_inside(path, fractions):
        assert _subopt(toy, lam, path.w_at(lam)) <= EPS + SLACK


@settings(max_examples=scaled_examples(8), deadline=None)
@given(toy_problems(n_max=3), st.lists(st.floats(0, 1), min_size=4, max_size=4))
def test_heuristic_path_reports_its_true_gaps(toy, fractions):
    """The heuristic path (App. K) stops on stale estimates; its certified gaps and
    gap bounds are exact: the true suboptimality never exceeds them."""
    path = regularization_path(toy.model, toy.X, toy.Y, eps=EPS, heuristic=True,
                               lam_min=1e-3)
    assert path.heuristic and path.kappa == 0.7
    _check_shape(path, 1e-3)
    for j in _some_breakpoints(path, fractions[:1]):
        assert _subopt(toy, path.lams[j], path.weights[j]) <= path.gaps[j] + SLACK
    for lam in _lams_inside(path, fractions[1:]):
        j = path.piece(lam)
        bound = path.gaps[0] if j < 0 else path.gap_bounds[j]
        assert _subopt(toy, lam, path.w_at(lam)) <= bound + SLACK


@settings(max_examples=scaled_examples(8), deadline=None)
@given(toy_problems(n_max=3), st.lists(st.floats(0, 1), min_size=4, max_size=4),
       st.integers(0, 2 ** 32 - 1))
def test_path_with_sign_constraints(toy, fractions, seed):
    """Boxes with bounds 0 / +-inf (graph cuts' w_P >= 0): eps-approximate for the
    box-constrained problem, and w stays in the box."""
    rng = np.random.default_rng(seed)
    d = toy.oracle.n_features
    lower = np.where(rng.random(d) < 0.5, 0.0, -np.inf)
    upper = np.where((lower == -np.inf) & (rng.random(d) < 0.5), 0.0, np.inf)
    try:
        path = regularization_path(toy.model, toy.X, toy.Y, eps=EPS, box=(lower, upper),
                                   lam_min=1e-3)
    except ValueError as error:          # clip(psi~) = 0 and theta = 0: w = 0 is optimal
        assert "w = 0 is optimal for every lambda" in str(error)
        zero = np.clip(np.zeros(d), lower, upper)
        for lam in (1e-2, 1.0):
            p_star, _ = box_primal_optimum(toy.enum.psi, toy.enum.loss, lam, lower, upper)
            primal = primal_by_enumeration(toy.enum.psi, toy.enum.loss, lam, zero)
            assert primal == pytest.approx(p_star, abs=1e-7)
        return
    assert np.all(path.gap_bounds <= EPS * (1 + 1e-9))
    for lam in _lams_inside(path, fractions):
        w = path.w_at(lam)
        assert np.all(w >= lower) and np.all(w <= upper)
        p_star, _ = box_primal_optimum(toy.enum.psi, toy.enum.loss, lam, lower, upper)
        primal = primal_by_enumeration(toy.enum.psi, toy.enum.loss, lam, w)
        assert primal - p_star <= EPS + 1e-6


@settings(max_examples=scaled_examples(12), deadline=None)
@given(toy_problems(n_max=3), st.sampled_from(("cold", "keep-duals", "keep-primal")),
       st.sampled_from(VARIANTS))
def test_grid_search_solutions_are_certified(toy, warm_start, variant):
    step, cache, sampling = variant
    grid = 2.0 ** np.arange(2, -3, -1)
    result = grid_search(toy.model, toy.X, toy.Y, grid, warm_start=warm_start, tol=0.02,
                         step=step, cache=cache, sampling=sampling)
    assert result.statuses == ["converged"] * grid.size and np.all(result.certified)
    # Keeping w, a point may already be certified by Prop. 1 without an oracle call.
    steps = np.diff(result.effective_passes)
    assert np.all(steps > 0) if warm_start != "keep-primal" else np.all(steps >= 0)
    for lam, w, gap in zip(grid, result.weights, result.gaps):
        assert -SLACK <= _subopt(toy, lam, w) <= gap + SLACK


@settings(max_examples=scaled_examples(8), deadline=None)
@given(toy_problems(kinds=("chain",), n_max=3), st.sampled_from(VARIANTS[:2]),
       st.lists(st.floats(0, 1), min_size=3, max_size=3))
def test_path_with_sparse_block_storage(toy, variant, fractions):
    """Per-block supports (CoNLL-style storage of w_i): the initial state is written on
    the supports and the path stays eps-approximate."""
    from ssvm_oracles import ChainModel

    step, cache, sampling = variant
    model = ChainModel(toy.model.n_states, blocks="sparse")
    oracle = model.bind(toy.X, toy.Y)
    assert any(oracle.block_support(i) is not None for i in range(oracle.n_blocks))
    path = regularization_path(model, toy.X, toy.Y, eps=EPS, lam_min=1e-2, step=step,
                               cache=cache, sampling=sampling, max_passes=300)
    assert np.all(path.gap_bounds <= EPS * (1 + 1e-9))
    for lam in _lams_inside(path, fractions):
        assert _subopt(toy, lam, path.w_at(lam)) <= EPS + SLACK


def _small_path():
    from ssvm_core.testing import random_chain_data
    from ssvm_oracles import ChainModel

    X, Y = random_chain_data(np.random.default_rng(0), 4, 3, 3, 2)
    model = ChainModel(3, 2)
    return model, X, Y, regularization_path(model, X, Y, eps=0.2, lam_min=1e-2)


def test_save_load_round_trip(tmp_path):
    model, X, Y, path = _small_path()
    path.save(tmp_path / "path.npz")
    buffer = io.BytesIO()
    path.save(buffer)
    buffer.seek(0)
    for source in (tmp_path / "path.npz", buffer):
        loaded = RegularizationPath.load(source)
        for name in ("lams", "weights", "gaps", "gap_estimates", "deltas",
                     "effective_passes", "times"):
            np.testing.assert_array_equal(getattr(loaded, name), getattr(path, name))
        assert (loaded.lam_end, loaded.eps, loaded.kappa, loaded.status, loaded.heuristic) == \
            (path.lam_end, path.eps, path.kappa, path.status, path.heuristic)
        for lam in (path.lams[0] * 3, path.lams[1], np.sqrt(path.lams[0] * path.lams[-1])):
            np.testing.assert_array_equal(loaded.w_at(lam), path.w_at(lam))
    with pytest.raises(ValueError, match="no model"):
        loaded.predict(X, path.lams[0])
    lam = path.lams[-1]
    assert loaded.predict(X, lam, model=model)[0].tolist() == path.predict(X, lam)[0].tolist()
    assert path.score(X, Y, lam) == pytest.approx(
        1 - model.mean_loss(Y, model.predict(X, path.w_at(lam))))
    np.savez(tmp_path / "bad.npz", lams=path.lams)
    with pytest.raises(ValueError, match="not a regularization path"):
        RegularizationPath.load(tmp_path / "bad.npz")


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    _, _, _, path = _small_path()
    path.plot(out=tmp_path / "path.png")
    assert (tmp_path / "path.png").read_bytes()[:4] == b"\x89PNG"


class _ShiftedLoss(DelegatingOracle):
    """Adds 1 to every loss, so L_i(y_i) = 1 breaks Osokin et al. (2016), Prop. 1's assumption."""

    def solve(self, i, w):
        labels, psi, loss = self.inner.solve(i, w)
        return labels, psi, loss + 1.0

    def evaluate(self, i, labels, w):
        psi, loss = self.inner.evaluate(i, labels, w)
        return psi, loss + 1.0


class _ShiftedModel:
    """A model whose bound oracle is ``_ShiftedLoss``."""

    def __init__(self, inner):
        self.inner = inner

    def bind(self, X, Y):
        return _ShiftedLoss(BruteForceOracle(self.inner, X, Y))

    def predict(self, X, w):
        return self.inner.predict(X, w)


def test_nonzero_ground_truth_loss_is_detected():
    from ssvm_core.testing import random_multiclass_data
    from ssvm_oracles import MulticlassModel

    X, Y = random_multiclass_data(np.random.default_rng(1), 3, 2, 3)
    with pytest.raises(ValueError, match="L_i"):
        regularization_path(_ShiftedModel(MulticlassModel(3, 2)), X, Y, eps=EPS)


@pytest.mark.parametrize("kwargs, match", [
    ({"eps": 0.0}, "eps"), ({"eps": -1.0}, "eps"), ({"eps": float("nan")}, "eps"),
    ({"kappa": 0.0}, "kappa"), ({"kappa": 1.0}, "kappa"), ({"kappa": 1.5}, "kappa"),
    ({"lam_min": 0.0}, "lam_min"), ({"lam_min": -1.0}, "lam_min"),
    ({"max_breakpoints": 0}, "max_breakpoints"), ({"tol": 0.1}, "set by the path"),
    ({"box": (-1.0, 1.0)}, "0 or infinite"), ({"box": "model"}, "weight_bounds"),
])
def test_bad_path_input_raises(kwargs, match):
    model, X, Y, _ = _small_path()
    with pytest.raises(ValueError, match=match):
        regularization_path(model, X, Y, **kwargs)


def test_bad_grid_input_raises():
    model, X, Y, _ = _small_path()
    with pytest.raises(ValueError, match="warm_start"):
        grid_search(model, X, Y, [1.0], warm_start="hot")
    with pytest.raises(ValueError, match="strictly decreasing"):
        grid_search(model, X, Y, [0.1, 1.0], warm_start="keep-primal")
    with pytest.raises(ValueError, match="finite positive"):
        grid_search(model, X, Y, [1.0, -1.0], warm_start="cold")
    with pytest.raises(ValueError, match="both X and Y"):
        grid_search(model, X, None, [1.0])
    with pytest.raises(ValueError, match="tol"):
        grid_search(model, X, Y, [1.0], tol=0.0)
