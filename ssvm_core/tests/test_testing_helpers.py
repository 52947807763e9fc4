"""The reference helpers of ``ssvm_core.testing`` are themselves right."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ssvm_core import BruteForceOracle, as_oracle, primal_objective, solve
from ssvm_core.testing import (
    QPSolution,
    ToyChainModel,
    ToyMulticlassModel,
    check_gaps,
    check_oracle,
    dual_by_enumeration,
    enumerate_problem,
    primal_by_enumeration,
    random_chain_data,
    random_multiclass_data,
    recover_alpha,
    scaled_examples,
    solve_dual_qp,
    weights_from_alpha,
)


@st.composite
def enumerated_problems(draw):
    """Enumerated toy problems (multiclass with/without costs, chains): sizes and a seed."""
    kind = draw(st.sampled_from(["multiclass", "chain"]))
    n = draw(st.integers(1, 4))
    lam = 10.0 ** draw(st.integers(-3, 1))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    if kind == "chain":
        K, F = draw(st.integers(2, 3)), draw(st.integers(1, 2))
        X, Y = random_chain_data(rng, n, draw(st.integers(1, 4)), K, F)
        model = ToyChainModel(K, F)
    else:
        K, F = draw(st.integers(2, 4)), draw(st.integers(1, 3))
        X, Y = random_multiclass_data(rng, n, F, K)
        cost = None
        if draw(st.booleans()):
            cost = rng.uniform(0.1, 2.0, size=(K, K))
            np.fill_diagonal(cost, 0.0)
        model = ToyMulticlassModel(K, F, cost)
        X, Y = list(X), [np.atleast_1d(y) for y in Y]
    return model.bind(X, Y), lam, rng


def _kkt_check(sol: QPSolution, problem, lam, tol=1e-8):
    """Every labelling with alpha > 0 maximises H_i at w*, and w* = w(alpha)."""
    np.testing.assert_allclose(sol.w, weights_from_alpha(problem.psi, lam, sol.alphas),
                               rtol=1e-12, atol=1e-14)
    for i, a in enumerate(sol.alphas):
        assert np.all(a >= 0) and a.sum() == pytest.approx(1.0, abs=1e-12)
        H = problem.scores(i, sol.w)
        scale = max(1.0, float(np.abs(H).max()))
        assert np.all(H[a > 1e-7] >= H.max() - tol * scale)


@settings(max_examples=scaled_examples(25))
@given(enumerated_problems())
def test_solve_dual_qp_is_optimal(args):
    oracle, lam, rng = args
    problem = enumerate_problem(oracle)
    sol = solve_dual_qp(problem.psi, problem.loss, lam)
    scale = max(1.0, abs(sol.primal))
    # Certified: primal and dual agree (the optimum is in between).
    assert 0 <= sol.gap + 1e-14 and sol.gap <= 1e-10 * scale
    assert sol.primal == pytest.approx(primal_by_enumeration(problem.psi, problem.loss, lam,
                                                             sol.w), rel=1e-14, abs=1e-15)
    assert sol.dual == pytest.approx(dual_by_enumeration(problem.psi, problem.loss, lam,
                                                         sol.alphas), rel=1e-14, abs=1e-15)
    _kkt_check(sol, problem, lam)
    # No random feasible point beats it (weak duality / optimality).
    for _ in range(20):
        w = sol.w + rng.normal(size=sol.w.shape) * 10.0 ** rng.integers(-6, 0)
        assert primal_by_enumeration(problem.psi, problem.loss, lam, w) >= sol.primal - 1e-12
        alphas = [rng.dirichlet(np.ones(len(L))) for L in problem.loss]
        assert dual_by_enumeration(problem.psi, problem.loss, lam, alphas) <= sol.primal + 1e-12


def test_solve_dual_qp_on_a_problem_solved_by_hand():
    """One block, two labellings: psi = (0, p), loss = (0, 1).

    D(a) = a - lam/2 (a p / lam)^2 = a - a^2 p^2 / (2 lam) is maximal at
    a = lam / p^2 (clipped to [0, 1]).
    """
    for lam, p in [(0.5, 2.0), (0.1, 1.0), (4.0, 1.0)]:
        psi = [np.array([[0.0], [p]])]
        loss = [np.array([0.0, 1.0])]
        sol = solve_dual_qp(psi, loss, lam)
        a = min(1.0, lam / p ** 2)
        np.testing.assert_allclose(sol.alphas[0], [1 - a, a], atol=1e-10)
        assert sol.dual == pytest.approx(a - a * a * p * p / (2 * lam), abs=1e-12)
        assert sol.optimum == pytest.approx(sol.dual, abs=1e-12)


def test_solve_dual_qp_with_explicit_n_and_errors():
    psi = [np.array([[0.0], [1.0]]), np.array([[0.0], [2.0]])]
    loss = [np.array([0.0, 1.0]), np.array([0.0, 1.0])]
    default = solve_dual_qp(psi, loss, 0.3)
    explicit = solve_dual_qp(psi, loss, 0.3, n=2)
    assert default.primal == pytest.approx(explicit.primal, abs=1e-13)
    with pytest.raises(ValueError, match="lam must be"):
        solve_dual_qp(psi, loss, 0.0)
    with pytest.raises(ValueError, match="n must be positive"):
        solve_dual_qp(psi, loss, 0.3, n=0)


@settings(max_examples=scaled_examples(20))
@given(enumerated_problems())
def test_primal_and_gaps_helpers_agree_with_the_package(args):
    oracle, lam, rng = args
    problem = enumerate_problem(oracle)
    w = rng.normal(size=problem.n_features)
    assert primal_by_enumeration(problem.psi, problem.loss, lam, w) == pytest.approx(
        primal_objective(oracle, lam, w), rel=1e-12, abs=1e-14)
    result = solve(oracle, lam, max_passes=3, tol=0, random_state=0)
    gaps_enum = check_gaps(None, result.state, problem)
    gaps_oracle = check_gaps(oracle, result.state)
    np.testing.assert_allclose(gaps_enum, gaps_oracle, rtol=1e-12, atol=1e-14)
    alphas, residual = recover_alpha(problem, result.state)
    assert residual < 1e-9
    D = dual_by_enumeration(problem.psi, problem.loss, lam, alphas)
    P = primal_by_enumeration(problem.psi, problem.loss, lam, result.state.w)
    assert gaps_enum.sum() == pytest.approx(P - D, rel=1e-9, abs=1e-12)


def test_recover_alpha_detects_an_infeasible_state():
    rng = np.random.default_rng(0)
    X, Y = random_multiclass_data(rng, 3, 2, 3)
    oracle = ToyMulticlassModel(3, 2).bind(list(X), [np.atleast_1d(y) for y in Y])
    problem = enumerate_problem(oracle)
    state = solve(oracle, 0.1, max_passes=2, tol=0, random_state=0).state
    assert recover_alpha(problem, state)[1] < 1e-10
    state.block_ell[0] += 0.5            # ell_0 above every corner's loss / n
    assert recover_alpha(problem, state)[1] > 1e-3


def test_enumerate_problem_sources():
    rng = np.random.default_rng(1)
    X, Y = random_chain_data(rng, 2, 2, 2, 1)
    model = ToyChainModel(2, 1)
    bf = BruteForceOracle(model, X, Y)
    a = enumerate_problem(bf)
    b = enumerate_problem(as_oracle(bf))
    c = enumerate_problem(model, X, Y)
    for p in (b, c):
        assert p.n_blocks == a.n_blocks == 2 and p.n_features == a.n_features
        for i in range(2):
            np.testing.assert_array_equal(p.psi[i], a.psi[i])
            np.testing.assert_array_equal(p.loss[i], a.loss[i])
    assert a.index(0, a.candidates[0][-1]) == len(a.candidates[0]) - 1
    with pytest.raises(KeyError):
        a.index(0, [5, 5])
    with pytest.raises(ValueError, match="give both X and Y"):
        enumerate_problem(model, X)
    with pytest.raises(TypeError, match="cannot enumerate"):
        enumerate_problem(object())


def test_check_oracle_accepts_a_correct_oracle_and_catches_wrong_ones():
    rng = np.random.default_rng(2)
    X, Y = random_chain_data(rng, 2, 3, 2, 2)
    bf = ToyChainModel(2, 2).bind(X, Y)
    problem = enumerate_problem(bf)
    weights = [rng.normal(size=bf.n_features) for _ in range(3)]
    check_oracle(bf, problem, weights)

    class WorstAnswer:
        n_blocks, n_features, max_labels = bf.n_blocks, bf.n_features, bf.max_labels

        def solve(self, i, w):
            k = int(np.argmin(bf.scores(i, w)))
            return bf.candidates(i)[k], bf.psi_matrix(i)[k], bf.losses(i)[k]

        def evaluate(self, i, labels, w):
            return bf.evaluate(i, labels, w)

    with pytest.raises(AssertionError, match="solve returned"):
        check_oracle(WorstAnswer(), problem, weights)

    class WrongLoss(WorstAnswer):
        def solve(self, i, w):
            return bf.solve(i, w)

        def evaluate(self, i, labels, w):
            psi, loss = bf.evaluate(i, labels, w)
            return psi, loss + 0.25

    with pytest.raises(AssertionError, match="evaluate loss"):
        check_oracle(WrongLoss(), problem, weights)

    class WrongPsi(WrongLoss):
        def evaluate(self, i, labels, w):
            psi, loss = bf.evaluate(i, labels, w)
            return 2 * psi, loss

    with pytest.raises(AssertionError, match="evaluate psi"):
        check_oracle(WrongPsi(), problem, weights)


def test_toy_chain_model_layout():
    model = ToyChainModel(3, 2)
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    phi = model.joint_feature(x, [2, 0])
    assert phi.shape == (2 * 3 + 9 + 9,) == (model.size_joint_feature,)
    emission = phi[:6].reshape(2, 3)
    np.testing.assert_array_equal(emission, [[3, 0, 1], [4, 0, 2]])
    transition = phi[6:15].reshape(3, 3)
    assert transition[2, 0] == 1 and transition.sum() == 1
    np.testing.assert_array_equal(phi[15:18], [1, 0, 1])     # bias
    np.testing.assert_array_equal(phi[18:21], [0, 0, 1])     # start
    np.testing.assert_array_equal(phi[21:24], [1, 0, 0])     # end
    assert model.loss([2, 0], [2, 1]) == 0.5
    assert len(model.enumerate_labellings(x)) == 9
    w = np.zeros(model.size_joint_feature)
    w[6 + 2 * 3 + 0] = 5.0           # reward the transition 2 -> 0
    assert [list(p) for p in model.predict([x], w)] == [[2, 0]]


def test_toy_models_decode_by_enumeration():
    rng = np.random.default_rng(3)
    model = ToyMulticlassModel(4, 3)
    X = rng.normal(size=(6, 3))
    w = rng.normal(size=12)
    assert model.predict(X, w) == list(np.argmax(X @ w.reshape(4, 3).T, axis=1))
    chain = ToyChainModel(2, 1)
    x = rng.normal(size=(3, 1))
    w = rng.normal(size=chain.size_joint_feature)
    best = max(itertools.product(range(2), repeat=3),
               key=lambda y: w @ chain.joint_feature(x, y))
    assert tuple(chain.predict([x], w)[0]) == best
