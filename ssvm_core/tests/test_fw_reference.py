"""The Cython kernels against a pure-Python Frank-Wolfe with explicit alpha.

The reference below keeps the dual variables alpha_i (a probability vector
over the enumerated labellings of block i) and recomputes everything from
them; the kernels keep only w_i = A alpha_[i] and ell_i.  Both are driven
through the same block order, one step at a time, and compared after every
step: iterate, block vectors, ell, block gap, step index and the weighted
averages (Lacoste-Julien et al. (2013), Alg. 2 and 4).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ssvm_core import SolverState, as_oracle, dual_objective
from ssvm_core._fw import bcfw_pass, fw_step
from ssvm_core.parallel import score_pass
from ssvm_core.testing import (
    EnumeratedProblem,
    ToyChainModel,
    ToyMulticlassModel,
    check_gaps,
    dual_by_enumeration,
    enumerate_problem,
    primal_by_enumeration,
    random_chain_data,
    random_multiclass_data,
    scaled_examples,
    weights_from_alpha,
)


class ReferenceFW:
    """Frank-Wolfe on the enumerated dual, alpha explicit (pure NumPy)."""

    def __init__(self, problem: EnumeratedProblem, truth_rows: list[int], lam: float):
        self.p, self.lam, self.n = problem, lam, problem.n_blocks
        self.alphas = [np.zeros(len(L)) for L in problem.loss]
        for a, k in zip(self.alphas, truth_rows):
            a[k] = 1.0
        self.k = 0
        self.iterates = []           # (w, ell) after each step, for the averages

    def w_block(self, i):
        return self.p.psi[i].T @ self.alphas[i] / (self.lam * self.n)

    def ell_block(self, i):
        return float(self.p.loss[i] @ self.alphas[i]) / self.n

    @property
    def w(self):
        return weights_from_alpha(self.p.psi, self.lam, self.alphas)

    @property
    def ell(self):
        return sum(self.ell_block(i) for i in range(self.n))

    def _corner(self, i, w, choice=None):
        """The FW corner of block i at w.

        ``choice`` is the kernel's labelling (row): exact ties may be broken
        differently after rounding, so the reference follows it once it has
        checked that it is a maximiser at the reference's own w.
        """
        H = self.p.scores(i, w)
        s = int(np.argmax(H))
        if choice is not None:
            assert H[choice] >= H[s] - 1e-9 * max(1.0, float(np.abs(H).max())), (choice, s)
            s = choice
        return s, self.p.psi[i][s] / (self.lam * self.n), self.p.loss[i][s] / self.n

    @staticmethod
    def _step(gap, curvature):
        if curvature > 0:
            return float(np.clip(gap / curvature, 0.0, 1.0))
        return 1.0 if gap > 0 else 0.0

    def bcfw_step(self, i, line_search=True, choice=None):
        w = self.w
        s, w_s, ell_s = self._corner(i, w, choice)
        diff = self.w_block(i) - w_s
        gap = self.lam * diff @ w - self.ell_block(i) + ell_s
        if line_search:
            gamma = self._step(gap, self.lam * diff @ diff)
        else:
            gamma = 2.0 * self.n / (self.k + 2.0 * self.n)
        self.alphas[i] *= 1.0 - gamma
        self.alphas[i][s] += gamma
        self.k += 1
        self.iterates.append((self.w, self.ell))
        return gap

    def fw_step(self, line_search=True, choices=None):
        w = self.w
        corners = [self._corner(i, w, None if choices is None else choices[i])
                   for i in range(self.n)]
        w_s = sum(c[1] for c in corners)
        ell_s = sum(c[2] for c in corners)
        diff = w - w_s
        gap = self.lam * diff @ w - self.ell + ell_s
        gamma = self._step(gap, self.lam * diff @ diff) if line_search else 2.0 / (self.k + 2)
        for i, (s, _, _) in enumerate(corners):
            self.alphas[i] *= 1.0 - gamma
            self.alphas[i][s] += gamma
        self.k += 1
        self.iterates.append((self.w, self.ell))
        return gap

    def averages(self):
        weights = np.arange(1, self.k + 1, dtype=float)
        w_avg = sum(k * w for k, (w, _) in zip(weights, self.iterates)) / weights.sum()
        ell_avg = sum(k * e for k, (_, e) in zip(weights, self.iterates)) / weights.sum()
        return w_avg, ell_avg


@st.composite
def toy_problems(draw):
    """A tiny multiclass or chain problem: sizes and a seed only."""
    kind = draw(st.sampled_from(["multiclass", "multiclass_cost", "chain"]))
    n = draw(st.integers(1, 4))
    lam = 10.0 ** draw(st.integers(-3, 1))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    if kind == "chain":
        K, F = draw(st.integers(2, 3)), draw(st.integers(1, 2))
        X, Y = random_chain_data(rng, n, 3, K, F)
        model = ToyChainModel(K, F)
    else:
        K, F = draw(st.integers(2, 4)), draw(st.integers(1, 3))
        X, Y = random_multiclass_data(rng, n, F, K)
        cost = None
        if kind == "multiclass_cost":
            cost = rng.uniform(0.1, 2.0, size=(K, K))
            np.fill_diagonal(cost, 0.0)
        model = ToyMulticlassModel(K, F, cost)
        X, Y = list(X), [np.atleast_1d(y) for y in Y]
    oracle = model.bind(X, Y)
    return oracle, lam, rng


class Recorder:
    """A Python oracle passing calls through and remembering each block's last answer."""

    def __init__(self, inner, problem):
        self.inner, self.problem = inner, problem
        self.n_blocks, self.n_features = inner.n_blocks, inner.n_features
        self.max_labels = inner.max_labels
        self.last = {}

    def solve(self, i, w):
        answer = self.inner.solve(i, w)
        self.last[i] = self.problem.index(i, answer[0])
        return answer

    def evaluate(self, i, labels, w):
        return self.inner.evaluate(i, labels, w)


def _setup(oracle, lam, averaging=True):
    problem = enumerate_problem(oracle)
    truth = [int(np.flatnonzero(problem.loss[i] == 0)[0]) for i in range(problem.n_blocks)]
    # the ground-truth row has psi = 0 (it is the first zero-loss row for these models)
    for i, k in enumerate(truth):
        assert not problem.psi[i][k].any()
    recorder = Recorder(oracle, problem)
    mo = as_oracle(recorder)
    return mo, problem, ReferenceFW(problem, truth, lam), SolverState.for_oracle(
        mo, lam, averaging)


def _compare(ref: ReferenceFW, state: SolverState, rtol=1e-9):
    scale = max(1.0, float(np.abs(ref.w).max()))
    atol = rtol * scale
    np.testing.assert_allclose(state.w, ref.w, rtol=0, atol=atol)
    for i in range(ref.n):
        np.testing.assert_allclose(state.block_vector(i), ref.w_block(i), rtol=0, atol=atol)
        assert state.block_ell[i] == pytest.approx(ref.ell_block(i), rel=rtol, abs=1e-15)
    assert state.ell == pytest.approx(ref.ell, rel=rtol, abs=1e-15)
    assert state.n_steps == ref.k
    if state.averaging and ref.k:
        w_avg, ell_avg = ref.averages()
        np.testing.assert_allclose(state.averaged_w(), w_avg, rtol=0, atol=atol)
        assert state.averaged_ell() == pytest.approx(ell_avg, rel=rtol, abs=1e-15)


@settings(max_examples=scaled_examples(30))
@given(toy_problems(), st.booleans(), st.booleans())
def test_bcfw_steps_match_the_reference(problem, line_search, averaging):
    oracle, lam, rng = problem
    mo, enum, ref, state = _setup(oracle, lam, averaging)
    n = enum.n_blocks
    order = rng.integers(0, n, size=4 * n)
    for i in order:
        bcfw_pass(mo, state, np.array([i], dtype=np.intp), line_search)
        gap_ref = ref.bcfw_step(int(i), line_search, choice=mo.obj.last[i])
        # the kernel stores the block gap it computed before the step
        assert state.block_gap_estimates[i] == pytest.approx(gap_ref, rel=1e-9, abs=1e-12)
        _compare(ref, state)
    # The kept (w, ell) is exactly the dual point of the reference alpha.
    assert dual_objective(state) == pytest.approx(
        dual_by_enumeration(enum.psi, enum.loss, lam, ref.alphas), rel=1e-9, abs=1e-13)


@settings(max_examples=scaled_examples(30))
@given(toy_problems(), st.booleans(), st.booleans())
def test_batch_fw_steps_match_the_reference(problem, line_search, averaging):
    oracle, lam, _ = problem
    mo, enum, ref, state = _setup(oracle, lam, averaging)
    for _ in range(6):
        w_before = state.w.copy()
        dual_before = dual_objective(state)
        gap = fw_step(mo, state, line_search)
        gap_ref = ref.fw_step(line_search, choices=mo.obj.last)
        assert gap == pytest.approx(gap_ref, rel=1e-9, abs=1e-12)
        # The returned gap is the exact duality gap at the previous iterate...
        primal_before = primal_by_enumeration(enum.psi, enum.loss, lam, w_before)
        assert gap == pytest.approx(primal_before - dual_before, rel=1e-9, abs=1e-12)
        # ...and the stored block gaps are exact at that iterate and sum to it.
        assert state.block_gap_estimates.sum() == pytest.approx(gap, rel=1e-9, abs=1e-12)
        _compare(ref, state)


def test_first_predefined_step_jumps_to_the_corner():
    """gamma_0 = 2n / (0 + 2n) = 1: the first block moves fully to its corner."""
    rng = np.random.default_rng(0)
    X, Y = random_multiclass_data(rng, 3, 2, 3)
    oracle = ToyMulticlassModel(3, 2).bind(list(X), [np.atleast_1d(y) for y in Y])
    mo = as_oracle(oracle)
    state = SolverState.for_oracle(mo, 0.5)
    bcfw_pass(mo, state, np.array([1], dtype=np.intp), False)
    _labels, psi, loss, _ = mo.solve_py(1, np.zeros(mo.n_features))
    np.testing.assert_allclose(state.block_vector(1), psi / (0.5 * 3), rtol=1e-15)
    assert state.block_ell[1] == pytest.approx(loss / 3, rel=1e-15)
    np.testing.assert_allclose(state.w, psi / 1.5, rtol=1e-15)


def test_zero_curvature_guard():
    """A corner with the same w_i: full step iff the loss term increases the dual."""
    class Flat:
        n_blocks, n_features, max_labels = 1, 2, 1

        def solve(self, i, w):
            return np.array([1]), np.zeros(2), 0.5       # psi = 0, loss 0.5

        def evaluate(self, i, labels, w):
            return (np.zeros(2), 0.5) if labels[0] == 1 else (np.zeros(2), 0.0)

    mo = as_oracle(Flat())
    state = SolverState.for_oracle(mo, 1.0)
    bcfw_pass(mo, state, np.array([0], dtype=np.intp), True)
    assert state.ell == 0.5 and not state.w.any()
    # At the corner already: gap 0, curvature 0 -> no move, no NaN.
    bcfw_pass(mo, state, np.array([0], dtype=np.intp), True)
    assert state.ell == 0.5 and np.isfinite(state.w).all()
    assert state.block_gap_estimates[0] == 0.0
    state2 = SolverState.for_oracle(mo, 1.0)
    fw_step(mo, state2, True)
    assert state2.ell == 0.5


def test_empty_order_is_a_no_op():
    rng = np.random.default_rng(0)
    X, Y = random_multiclass_data(rng, 3, 2, 3)
    mo = as_oracle(ToyMulticlassModel(3, 2).bind(list(X), [np.atleast_1d(y) for y in Y]))
    state = SolverState.for_oracle(mo, 0.5)
    bcfw_pass(mo, state, np.zeros(0, dtype=np.intp), True)
    assert state.n_steps == 0 and not state.w.any()


@settings(max_examples=scaled_examples(25))
@given(toy_problems())
def test_score_pass_gives_the_primal_and_exact_block_gaps(problem):
    oracle, lam, rng = problem
    mo, enum, _, state = _setup(oracle, lam)
    n = enum.n_blocks
    bcfw_pass(mo, state, rng.integers(0, n, size=3 * n).astype(np.intp), True)
    total = score_pass(mo, state.w, state)
    expected = sum(enum.scores(i, state.w).max() for i in range(n))
    assert total == pytest.approx(expected, rel=1e-12, abs=1e-14)
    np.testing.assert_allclose(state.block_gap_estimates, check_gaps(mo, state, enum),
                               rtol=1e-9, atol=1e-13)
    # without a state only the sum is computed, at any w
    w = rng.normal(size=mo.n_features)
    assert score_pass(mo, w) == pytest.approx(
        sum(enum.scores(i, w).max() for i in range(n)), rel=1e-12, abs=1e-13)
