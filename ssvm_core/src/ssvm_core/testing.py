"""Reference implementations and checkers for testing solvers and oracles.

Everything here is independent of the Cython kernels: objectives are
computed by enumerating every labelling of tiny problems, and the dual QP is
solved by SciPy followed by an exact active-set polish.  The helpers are
meant for tests (of this package and of packages that provide oracles), not
for production use.

The notation follows ``docs/algorithms.md``: for block ``i`` the enumerated
problem holds a matrix ``psi[i]`` whose rows are psi_i(y) for every candidate
labelling y, and a vector ``loss[i]`` with L_i(y).  The dual variables are one
probability vector ``alpha[i]`` per block; with ``n`` blocks,

- ``w(alpha) = sum_i psi[i].T @ alpha[i] / (lam n)``,
- ``D(alpha) = sum_i loss[i] @ alpha[i] / n - lam/2 ||w(alpha)||^2``,
- ``P(w) = lam/2 ||w||^2 + (1/n) sum_i max_y (loss[i] - psi[i] @ w)``.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.optimize

from ssvm_core._oracle import PythonOracle, labelling_key
from ssvm_core.models import StructuredModel
from ssvm_core.oracles import BruteForceOracle, as_oracle
from ssvm_core.state import SolverState

__all__ = [
    "EnumeratedProblem", "QPSolution", "ToyChainModel", "ToyMulticlassModel", "check_gaps",
    "check_oracle", "dual_by_enumeration", "enumerate_problem", "primal_by_enumeration",
    "random_chain_data", "random_multiclass_data", "recover_alpha",
    "register_hypothesis_profiles", "scaled_examples", "solve_dual_qp", "weights_from_alpha",
]


# ---------------------------------------------------------------------------
# Enumerated problems
# ---------------------------------------------------------------------------

@dataclass
class EnumeratedProblem:
    """Every labelling of every block, with its psi_i(y) and L_i(y).

    Attributes
    ----------
    psi : list of ndarray, each (m_i, d)
        Row ``k`` of ``psi[i]`` is psi_i(y) of candidate ``k`` of block ``i``.
    loss : list of ndarray, each (m_i,)
        L_i(y) of every candidate.
    candidates : list of list of int32 arrays
        The labellings, in the order of the rows.
    """

    psi: list[np.ndarray]
    loss: list[np.ndarray]
    candidates: list[list[np.ndarray]] = field(default_factory=list)

    @property
    def n_blocks(self) -> int:
        return len(self.psi)

    @property
    def n_features(self) -> int:
        return int(self.psi[0].shape[1])

    def scores(self, i: int, w: np.ndarray) -> np.ndarray:
        """H_i(y; w) = L_i(y) - <w, psi_i(y)> for every candidate of block ``i``."""
        return self.loss[i] - self.psi[i] @ w

    def index(self, i: int, labels) -> int:
        """Row of labelling ``labels`` in block ``i`` (``KeyError`` if absent)."""
        key = labelling_key(labels)
        for k, cand in enumerate(self.candidates[i]):
            if labelling_key(cand) == key:
                return k
        raise KeyError(f"labelling {np.asarray(labels)} is not a candidate of block {i}")


def enumerate_problem(source, X: Sequence | None = None,
                      Y: Sequence | None = None) -> EnumeratedProblem:
    """Enumerate a tiny problem.

    Parameters
    ----------
    source : BruteForceOracle, PythonOracle wrapping one, or StructuredModel
        Where the labellings come from.  With a model, ``X`` and ``Y`` are
        required and a ``BruteForceOracle(source, X, Y)`` is built (the model
        must implement ``enumerate_labelings``).
    X, Y : sequences, optional
        Training set, only with a model.

    Returns
    -------
    EnumeratedProblem
    """
    if isinstance(source, PythonOracle):
        source = source.obj
    if X is not None or Y is not None:
        if X is None or Y is None:
            raise ValueError("give both X and Y with a model")
        source = BruteForceOracle(source, X, Y)
    if not all(hasattr(source, name) for name in ("psi_matrix", "losses", "candidates")):
        raise TypeError(f"cannot enumerate {type(source).__name__}: pass a BruteForceOracle "
                        "or a model with X and Y")
    blocks = range(source.n_blocks)
    return EnumeratedProblem(psi=[np.asarray(source.psi_matrix(i), dtype=float) for i in blocks],
                             loss=[np.asarray(source.losses(i), dtype=float) for i in blocks],
                             candidates=[source.candidates(i) for i in blocks])


def _n_of(psi_list: Sequence[np.ndarray], n: int | None) -> int:
    n = len(psi_list) if n is None else int(n)
    if n < 1:
        raise ValueError(f"n must be positive, got {n}")
    return n


def primal_by_enumeration(psi_list: Sequence[np.ndarray], loss_list: Sequence[np.ndarray],
                          lam: float, w: np.ndarray, n: int | None = None) -> float:
    """P(w) = lam/2 ||w||^2 + (1/n) sum_i max_y (L_i(y) - <w, psi_i(y)>).

    Parameters
    ----------
    psi_list, loss_list : sequences of arrays
        Enumerated psi matrices (m_i, d) and loss vectors (m_i,).
    lam : float
        Regularisation strength.
    w : ndarray (d,)
        Weights.
    n : int, optional
        Normalisation of the loss term (default: the number of blocks).
    """
    n = _n_of(psi_list, n)
    w = np.asarray(w, dtype=float)
    hinge = sum(float(np.max(L - P @ w)) for P, L in zip(psi_list, loss_list))
    return 0.5 * lam * float(w @ w) + hinge / n


def weights_from_alpha(psi_list: Sequence[np.ndarray], lam: float,
                       alphas: Sequence[np.ndarray], n: int | None = None) -> np.ndarray:
    """w(alpha) = sum_i psi_i^T alpha_i / (lam n)."""
    n = _n_of(psi_list, n)
    total = sum(P.T @ a for P, a in zip(psi_list, alphas))
    return np.asarray(total, dtype=float) / (lam * n)


def dual_by_enumeration(psi_list: Sequence[np.ndarray], loss_list: Sequence[np.ndarray],
                        lam: float, alphas: Sequence[np.ndarray],
                        n: int | None = None) -> float:
    """D(alpha) = sum_i L_i^T alpha_i / n - lam/2 ||w(alpha)||^2 (alpha given explicitly)."""
    n = _n_of(psi_list, n)
    w = weights_from_alpha(psi_list, lam, alphas, n)
    ell = sum(float(L @ a) for L, a in zip(loss_list, alphas)) / n
    return ell - 0.5 * lam * float(w @ w)


# ---------------------------------------------------------------------------
# An independent solver of the dual QP
# ---------------------------------------------------------------------------

@dataclass
class QPSolution:
    """Solution of the enumerated SSVM QP.

    Attributes
    ----------
    alphas : list of ndarray
        Dual variables, one probability vector per block.
    w : ndarray
        ``w(alpha)``, the primal solution.
    primal, dual : float
        ``P(w)`` and ``D(alpha)``, both computed by enumeration.
    gap : float
        ``primal - dual`` (a certificate: both are within ``gap`` of the optimum).
    """

    alphas: list[np.ndarray]
    w: np.ndarray
    primal: float
    dual: float
    gap: float

    @property
    def optimum(self) -> float:
        """Best estimate of the optimal value (the midpoint of the bracket)."""
        return 0.5 * (self.primal + self.dual)


def solve_dual_qp(psi_list: Sequence[np.ndarray], loss_list: Sequence[np.ndarray],
                  lam: float, n: int | None = None, *, rtol: float = 1e-10) -> QPSolution:
    """Solve min_alpha lam/2 ||w(alpha)||^2 - sum_i L_i^T alpha_i / n over simplices.

    Independent of the Frank-Wolfe kernels.  Stage 1 solves the equivalent
    primal QP ``min lam/2 ||w||^2 + mean(xi)`` subject to
    ``xi_i >= L_i(y) - <w, psi_i(y)>`` with SciPy's SLSQP.  Stage 2 polishes:
    for a few thresholds it takes the nearly active labellings, solves the
    KKT equations of that active set exactly (least squares), recovers a
    feasible alpha by non-negative least squares and keeps the candidate with
    the smallest certified duality gap ``P(w(alpha)) - D(alpha)``, both
    computed by enumeration: the answer is verified, not trusted.  On the toy
    problems of the test suites (up to a few hundred labellings) the gap is
    below 1e-12 relative.

    Parameters
    ----------
    psi_list, loss_list : sequences of arrays
        Enumerated psi matrices (m_i, d) and losses (m_i,) of every block.
    lam : float
        Regularisation strength (> 0).
    n : int, optional
        Normalisation (default: the number of blocks).
    rtol : float
        Required gap relative to ``max(1, |P|)``; a ``RuntimeError`` is raised
        if the polish does not reach it.

    Returns
    -------
    QPSolution
    """
    n = _n_of(psi_list, n)
    lam = float(lam)
    if not (np.isfinite(lam) and lam > 0):
        raise ValueError(f"lam must be a finite positive number, got {lam}")
    psi_list = [np.atleast_2d(np.asarray(P, dtype=float)) for P in psi_list]
    loss_list = [np.asarray(L, dtype=float).reshape(-1) for L in loss_list]
    nb = len(psi_list)
    d = psi_list[0].shape[1]
    P_all = np.vstack(psi_list)
    L_all = np.concatenate(loss_list)
    block_of = np.concatenate([np.full(len(L), i) for i, L in enumerate(loss_list)])

    # Stage 1: SLSQP on z = (w, xi); it only has to find the active set.
    G = np.hstack([P_all, np.eye(nb)[block_of]])       # G z >= L  <=>  xi_i + psi.w >= L

    def fun(z):
        w = z[:d]
        return 0.5 * lam * w @ w + z[d:].sum() / n

    def jac(z):
        return np.concatenate([lam * z[:d], np.full(nb, 1.0 / n)])

    z0 = np.concatenate([np.zeros(d), [L.max() for L in loss_list]])
    res = scipy.optimize.minimize(
        fun, z0, jac=jac, method="SLSQP",
        constraints=[{"type": "ineq", "fun": lambda z: G @ z - L_all, "jac": lambda z: G}],
        options={"ftol": 1e-15, "maxiter": 1000})
    w_approx = res.x[:d]

    # Stage 2: exact polish on candidate active sets, refined from the best.
    best: QPSolution | None = None
    for _ in range(3):
        H = L_all - P_all @ (w_approx if best is None else best.w)
        maxes = np.array([H[block_of == i].max() for i in range(nb)])
        scale = max(1.0, float(np.abs(H).max()))
        for tau in (1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-12, 0.0):
            active = H >= maxes[block_of] - tau * scale
            cand = _polish(psi_list, loss_list, lam, n, P_all, L_all, block_of, active)
            if cand is not None and (best is None or cand.gap < best.gap):
                best = cand
        if best is not None and best.gap <= 1e-3 * rtol * max(1.0, abs(best.primal)):
            break
    if best is None or best.gap > rtol * max(1.0, abs(best.primal)):
        got = "no candidate" if best is None else f"gap {best.gap:.3e}"
        raise RuntimeError(f"solve_dual_qp did not reach rtol={rtol} ({got})")
    return best


def _polish(psi_list, loss_list, lam, n, P_all, L_all, block_of, active):
    nb, d = len(psi_list), P_all.shape[1]
    idx = np.flatnonzero(active)
    S, m = P_all[idx], idx.shape[0]
    blocks = block_of[idx]
    E = np.zeros((nb, m))
    E[blocks, np.arange(m)] = 1.0
    # Unknowns (w, xi, a): lam w - S^T a / n = 0; S w + xi_b = L_S; E a = 1.
    K = np.zeros((d + m + nb, d + nb + m))
    K[:d, :d] = lam * np.eye(d)
    K[:d, d + nb:] = -S.T / n
    K[d:d + m, :d] = S
    K[d:d + m, d:d + nb] = np.eye(nb)[blocks]
    K[d + m:, d + nb:] = E
    rhs = np.concatenate([np.zeros(d), L_all[idx], np.ones(nb)])
    sol = np.linalg.lstsq(K, rhs, rcond=None)[0]
    w = sol[:d]
    # A feasible alpha reproducing w on the active set (non-negative least squares).
    A = np.vstack([S.T / (lam * n), E])
    a, _ = scipy.optimize.nnls(A, np.concatenate([w, np.ones(nb)]), maxiter=50 * A.shape[1])
    alphas = []
    for i in range(nb):
        alpha = np.zeros(len(loss_list[i]))
        sel = blocks == i
        alpha[idx[sel] - np.flatnonzero(block_of == i)[0]] = a[sel]
        total = alpha.sum()
        if not total > 0:
            return None
        alphas.append(alpha / total)
    w_alpha = weights_from_alpha(psi_list, lam, alphas, n)
    primal = primal_by_enumeration(psi_list, loss_list, lam, w_alpha, n)
    dual = dual_by_enumeration(psi_list, loss_list, lam, alphas, n)
    return QPSolution(alphas=alphas, w=w_alpha, primal=primal, dual=dual, gap=primal - dual)


# ---------------------------------------------------------------------------
# Checkers for solver states and oracles
# ---------------------------------------------------------------------------

def check_gaps(oracle, state: SolverState, problem: EnumeratedProblem | None = None,
               w: np.ndarray | None = None) -> np.ndarray:
    """Block gaps g_i = lam <w_i, w> - ell_i + max_y H_i(y; w) / n, computed in Python.

    Parameters
    ----------
    oracle : MaxOracle or Python oracle
        Gives max_y H_i(y; w) through ``solve_py`` (ignored if ``problem``
        is given).
    state : SolverState
        Provides ``w_i`` (``block_vector``), ``ell_i`` (``block_ell``) and lam.
    problem : EnumeratedProblem, optional
        If given, the max is taken over the enumerated labellings instead of
        calling the oracle.
    w : ndarray, optional
        Iterate (default ``state.w``).  The gaps sum to ``P(w) - D`` only when
        ``w`` equals ``sum_i w_i``.

    Returns
    -------
    ndarray (n_blocks,)
        Independent block gaps; their sum is ``P(w) - D(alpha)``.
    """
    n = state.n_blocks
    w = np.asarray(state.w if w is None else w, dtype=float)
    if problem is None:
        mo = as_oracle(oracle)
        maxes = np.array([mo.solve_py(i, w)[3] for i in range(n)])
    else:
        maxes = np.array([problem.scores(i, w).max() for i in range(n)])
    inner = np.array([state.lam * float(state.block_vector(i) @ w) for i in range(n)])
    return inner - np.asarray(state.block_ell, dtype=float) + maxes / n


def recover_alpha(problem: EnumeratedProblem,
                  state: SolverState) -> tuple[list[np.ndarray], float]:
    """Find alpha_i in the simplex reproducing the state's (w_i, ell_i) block by block.

    Solves ``min ||[psi_i^T / (lam n); L_i^T / n; 1^T] alpha - [w_i; ell_i; 1]||`` over
    ``alpha >= 0`` with NNLS.  A tiny residual proves the state is a feasible
    dual point (``(w_i, ell_i)`` in the convex hull of the block's corners).

    Returns
    -------
    alphas : list of ndarray
        The recovered dual variables (normalised to sum to one).
    residual : float
        Largest NNLS residual over the blocks.
    """
    n, lam = state.n_blocks, state.lam
    alphas, worst = [], 0.0
    for i in range(n):
        P, L = problem.psi[i], problem.loss[i]
        A = np.vstack([P.T / (lam * n), L[None, :] / n, np.ones((1, len(L)))])
        b = np.concatenate([state.block_vector(i), [state.block_ell[i]], [1.0]])
        a, res = scipy.optimize.nnls(A, b, maxiter=50 * A.shape[1])
        worst = max(worst, float(res))
        alphas.append(a / a.sum() if a.sum() > 0 else a)
    return alphas, worst


def check_oracle(oracle, problem: EnumeratedProblem | None = None,
                 weights: Sequence[np.ndarray] | None = None, *,
                 model: StructuredModel | None = None, X: Sequence | None = None,
                 Y: Sequence | None = None, labelings=None, ground_truth: Sequence | None = None,
                 nu: float = 1.0, deterministic: bool = True, n_weights: int = 4,
                 random_state: int | np.random.Generator | None = 0, atol: float = 1e-10,
                 check_labels: bool = True) -> None:
    """Assert that ``oracle`` is a correct max oracle, on small inputs.

    For every block i and every ``w`` tested, it checks that

    - ``solve`` returns finite psi, a loss >= 0 and ``score = loss - <w, psi>``;
    - ``evaluate`` of the returned labelling reproduces psi, loss and score;
    - with ``deterministic``, a second ``solve`` at the same w returns a
      labelling with the same ``labelling_key``;
    - ``solve`` is an argmax (``score >= nu * max``) against the reference
      labellings below, and the max is >= 0 (the ground truth scores 0);
    - ``evaluate`` of every reference labelling gives a loss >= 0 and a score
      that ``solve`` does not beat by more than the tolerance;
    - the ground truth (when known) has psi = 0, loss = 0 and score = 0.

    The reference labellings of a block are, in this order of preference:

    1. an enumeration: ``problem``, or ``enumerate_problem(model, X, Y)``, or
       the oracle itself when it is a ``BruteForceOracle`` (or wraps one); then
       ``solve`` must reach the enumerated max, its labelling must be a
       candidate with the enumerated psi and loss, and ``evaluate`` must
       reproduce psi, loss and score of every candidate;
    2. ``labelings``: per-block candidate labellings (a sequence of sequences,
       or a callable ``labelings(i)``), e.g. random labellings the caller
       generated; ``solve`` must score at least ``nu`` times the best of them;
    3. otherwise the labellings ``solve`` itself returned at all the weights
       tested: an answer found at one w must not beat ``solve`` at another.

    Parameters
    ----------
    oracle : MaxOracle or Python oracle
        The oracle under test.
    problem : EnumeratedProblem, optional
        The reference enumeration (e.g. ``enumerate_problem(BruteForceOracle(...))``).
    weights : sequence of ndarray, optional
        Weight vectors to test at; default ``n_weights`` Gaussian vectors of
        scales 0.1 to 10 drawn from ``random_state``, plus ``w = 0``.
    model, X, Y : optional
        A model that can enumerate labellings, with the bound data; ``Y``
        alone (without ``model``) gives the ground truths.
    labelings : sequence or callable, optional
        Candidate labellings per block (case 2 above).
    ground_truth : sequence of labellings, optional
        y_i per block (scalars count as length-1 labellings), checked to have
        psi = 0, loss = 0, score = 0 (``Y`` is used when this is omitted).
    nu : float in (0, 1]
        Required accuracy of ``solve`` (1 for an exact oracle; less for an
        approximate one, which then must score >= nu * max).
    deterministic : bool
        Require repeated ``solve`` calls at one w to return the same labelling.
    n_weights : int
        Random weight vectors when ``weights`` is omitted.
    random_state : None, int or numpy.random.Generator
        Seed of the default weights.
    atol : float
        Absolute tolerance, scaled by the magnitude of the quantities.
    check_labels : bool
        With an enumeration and ``nu == 1``, also require the returned
        labelling to be the enumeration's first maximiser (set False when ties
        are possible).

    Raises
    ------
    AssertionError
        Naming the block, the weight index and the quantity that differ.
    """
    mo = as_oracle(oracle)
    if not 0.0 < nu <= 1.0:
        raise ValueError(f"nu must be in (0, 1], got {nu}")
    if problem is None and model is not None:
        if X is None or Y is None:
            raise ValueError("give X and Y with a model")
        problem = enumerate_problem(model, X, Y)
    if problem is None and all(hasattr(mo.obj if isinstance(mo, PythonOracle) else oracle,
                                       name) for name in ("psi_matrix", "losses", "candidates")):
        problem = enumerate_problem(mo.obj if isinstance(mo, PythonOracle) else oracle)
    if problem is not None and ((mo.n_blocks, mo.n_features)
                                != (problem.n_blocks, problem.n_features)):
        raise AssertionError(f"oracle is {mo.n_blocks} x {mo.n_features}, problem "
                             f"{problem.n_blocks} x {problem.n_features}")
    if ground_truth is None:
        ground_truth = Y
    if ground_truth is not None and len(ground_truth) != mo.n_blocks:
        raise ValueError(f"{len(ground_truth)} ground truths for {mo.n_blocks} blocks")
    if weights is None:
        rng = np.random.default_rng(random_state)
        scales = np.logspace(-1, 1, max(int(n_weights), 1))
        weights = [np.zeros(mo.n_features)] + [s * rng.normal(size=mo.n_features)
                                               for s in scales]
    weights = [np.asarray(w, dtype=float) for w in weights]

    found: list[dict[bytes, np.ndarray]] = [{} for _ in range(mo.n_blocks)]
    answers = {}
    for t, w in enumerate(weights):
        for i in range(mo.n_blocks):
            where = f"block {i}, weights #{t}"
            labels, psi, loss, score = mo.solve_py(i, w)
            tol = _tol(atol, w, psi, loss)
            if not np.all(np.isfinite(psi)) or not np.isfinite(score):
                raise AssertionError(f"{where}: solve returned non-finite psi or score")
            if not loss >= 0:
                raise AssertionError(f"{where}: solve returned loss {loss} < 0")
            _close(score, loss - float(w @ psi), tol, f"{where}: solve score vs loss - <w, psi>")
            e_psi, e_loss, e_score = mo.evaluate_py(i, labels, w)
            what = f"{where}, solve's labelling {labels}"
            _close(e_psi, psi, tol, f"{what}: evaluate psi")
            _close(e_loss, loss, tol, f"{what}: evaluate loss")
            _close(e_score, score, tol, f"{what}: evaluate score")
            if deterministic:
                again = mo.solve_py(i, w)[0]
                if labelling_key(again) != labelling_key(labels):
                    raise AssertionError(f"{where}: solve returned {labels}, then {again} at "
                                         "the same w (keys differ)")
            found[i][labelling_key(labels)] = np.asarray(labels)
            answers[t, i] = (labels, psi, loss, score)
            if problem is not None:
                _check_against_enumeration(mo, problem, i, w, labels, psi, loss, score,
                                           nu, check_labels, atol, where)
                _check_nonnegative(score, tol, labels, where)
            if ground_truth is not None:
                g_psi, g_loss, g_score = mo.evaluate_py(i, np.atleast_1d(ground_truth[i]), w)
                what = f"{where}, ground truth {np.asarray(ground_truth[i])}"
                _close(g_psi, np.zeros_like(g_psi), tol, f"{what}: psi")
                _close(g_loss, 0.0, tol, f"{what}: loss")
                _close(g_score, 0.0, tol, f"{what}: score")
    if problem is not None:
        return
    for t, w in enumerate(weights):
        for i in range(mo.n_blocks):
            if labelings is None:
                refs = list(found[i].values())
            else:
                refs = labelings(i) if callable(labelings) else labelings[i]
            labels, psi, loss, score = answers[t, i]
            for ref in refs:
                r_psi, r_loss, r_score = mo.evaluate_py(i, ref, w)
                tol = _tol(atol, w, psi, loss, r_psi, r_loss)
                what = f"block {i}, weights #{t}, labelling {np.asarray(ref)}"
                if not r_loss >= 0:
                    raise AssertionError(f"{what}: evaluate loss {r_loss} < 0")
                _close(r_score, r_loss - float(w @ r_psi), tol,
                       f"{what}: evaluate score vs loss - <w, psi>")
                if score < nu * r_score - tol:
                    raise AssertionError(f"{what}: scores {r_score}, more than solve's "
                                         f"{score} {'' if nu == 1 else f'/ nu = {nu} '}"
                                         f"(solve returned {labels}): solve is not a max")
            _check_nonnegative(score, _tol(atol, w, psi, loss), labels,
                               f"block {i}, weights #{t}")


def _check_nonnegative(score, tol, labels, where):
    if score < -tol:
        raise AssertionError(f"{where}: solve returned {labels} with score {score} < 0, "
                             "but the ground truth scores 0")


def _check_against_enumeration(mo, problem, i, w, labels, psi, loss, score, nu, check_labels,
                               atol, where):
    H = problem.scores(i, w)
    tol = atol * max(1.0, float(np.abs(H).max()), float(np.abs(w).max(initial=0.0)))
    try:
        k = problem.index(i, labels)
    except KeyError:
        raise AssertionError(f"{where}: solve returned {labels}, not a candidate "
                             "of the enumeration") from None
    if nu == 1.0:
        if check_labels and k != int(np.argmax(H)):
            raise AssertionError(f"{where}: solve returned {labels}, enumeration "
                                 f"{problem.candidates[i][int(np.argmax(H))]}")
        _close(score, H.max(), tol, f"{where}: solve score")
    elif score < nu * H.max() - tol:
        raise AssertionError(f"{where}: solve returned {labels} with score {score}, "
                             f"below nu = {nu} times the max {H.max()}")
    _close(score, H[k], tol, f"{where}: solve score of its own labelling")
    _close(loss, problem.loss[i][k], tol, f"{where}: solve loss")
    _close(psi, problem.psi[i][k], tol, f"{where}: solve psi")
    if np.any(problem.loss[i] < 0):
        raise AssertionError(f"block {i}: the enumeration has negative losses")
    for k, cand in enumerate(problem.candidates[i]):
        e_psi, e_loss, e_score = mo.evaluate_py(i, cand, w)
        what = f"{where}, labelling {cand}"
        _close(e_psi, problem.psi[i][k], tol, f"{what}: evaluate psi")
        _close(e_loss, problem.loss[i][k], tol, f"{what}: evaluate loss")
        _close(e_score, H[k], tol, f"{what}: evaluate score")


def _tol(atol: float, w: np.ndarray, *values) -> float:
    """``atol`` scaled by the largest |w_j| and the l1 norms of ``values``."""
    return atol * max(1.0, float(np.abs(w).max(initial=0.0)),
                      *(float(np.abs(np.asarray(v, dtype=float)).sum()) for v in values))


def _close(got, expected, tol, what):
    got, expected = np.asarray(got, dtype=float), np.asarray(expected, dtype=float)
    if got.shape != expected.shape or not np.all(np.abs(got - expected) <= tol):
        raise AssertionError(f"{what}: got {got}, expected {expected} (tol {tol:.1e})")


# ---------------------------------------------------------------------------
# Toy data (NumPy only; the ``ssvm_data`` generators are for realistic data)
# ---------------------------------------------------------------------------

def random_multiclass_data(rng: np.random.Generator, n: int, n_features: int,
                           n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian inputs with a planted linear labelling plus label noise.

    Returns ``X`` (n, n_features) float64 and ``Y`` (n,) int64 classes.
    """
    X = rng.normal(size=(n, n_features))
    W = rng.normal(size=(n_classes, n_features))
    Y = np.argmax(X @ W.T + 0.5 * rng.normal(size=(n, n_classes)), axis=1)
    return X, Y.astype(np.int64)


def random_chain_data(rng: np.random.Generator, n: int, max_length: int, n_states: int,
                      n_features: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Random sequences of lengths in [1, max_length] with Gaussian token features.

    Returns ``X``, a list of (T_i, n_features) float64 arrays, and ``Y``, a
    list of (T_i,) int64 label arrays.
    """
    lengths = rng.integers(1, max_length + 1, size=n)
    X = [rng.normal(size=(T, n_features)) for T in lengths]
    Y = [rng.integers(0, n_states, size=T) for T in lengths]
    return X, Y


# ---------------------------------------------------------------------------
# Pure-Python reference models (bound through BruteForceOracle)
# ---------------------------------------------------------------------------

class ToyMulticlassModel(StructuredModel):
    """Multiclass model in plain Python: phi(x, y) puts x in the block of class y.

    Parameters
    ----------
    n_classes : int
        Number of classes K.
    n_features : int
        Input dimension F; d = K F.
    cost : array (K, K), optional
        Loss ``cost[y_true, y_pred]`` (0/1 if omitted).
    """

    def __init__(self, n_classes: int, n_features: int, cost=None):
        self.n_classes = int(n_classes)
        self.n_features = int(n_features)
        self.cost = (1.0 - np.eye(self.n_classes)) if cost is None else np.asarray(cost, float)

    @property
    def size_joint_feature(self) -> int:
        return self.n_classes * self.n_features

    def joint_feature(self, x, y) -> np.ndarray:
        k = int(np.asarray(y).reshape(-1)[0])
        out = np.zeros((self.n_classes, self.n_features))
        out[k] = np.asarray(x, dtype=float)
        return out.ravel()

    def loss(self, y_true, y_pred) -> float:
        return float(self.cost[int(np.asarray(y_true).reshape(-1)[0]),
                               int(np.asarray(y_pred).reshape(-1)[0])])

    def enumerate_labelings(self, x):
        return [np.array([k], dtype=np.int32) for k in range(self.n_classes)]

    def bind(self, X, Y) -> BruteForceOracle:
        return BruteForceOracle(self, list(X), [np.atleast_1d(y) for y in Y])

    def predict(self, X, w) -> list:
        W = np.asarray(w, dtype=float).reshape(self.n_classes, self.n_features)
        return [int(np.argmax(W @ np.asarray(x, dtype=float))) for x in X]


class ToyChainModel(StructuredModel):
    """Linear-chain model in plain Python, written independently of ssvm_oracles.

    phi(x, y) = [emission (F x K, row-major) | transition (K x K) | bias (K) |
    start (K) | end (K)], loss = normalised Hamming distance; decoding and the
    max oracle enumerate all K^T labellings (tiny T only).

    Parameters
    ----------
    n_states : int
        Number of states K.
    n_features : int
        Token features F.
    """

    def __init__(self, n_states: int, n_features: int):
        self.n_states = int(n_states)
        self.n_features = int(n_features)

    @property
    def size_joint_feature(self) -> int:
        K, F = self.n_states, self.n_features
        return F * K + K * K + 3 * K

    def joint_feature(self, x, y) -> np.ndarray:
        K, F = self.n_states, self.n_features
        x = np.asarray(x, dtype=float)
        y = [int(v) for v in np.asarray(y).reshape(-1)]
        emission = np.zeros((F, K))
        transition = np.zeros((K, K))
        bias, start, end = np.zeros(K), np.zeros(K), np.zeros(K)
        for t, k in enumerate(y):
            emission[:, k] += x[t]
            bias[k] += 1.0
            if t > 0:
                transition[y[t - 1], k] += 1.0
        start[y[0]] = 1.0
        end[y[-1]] = 1.0
        return np.concatenate([emission.ravel(), transition.ravel(), bias, start, end])

    def loss(self, y_true, y_pred) -> float:
        y_true, y_pred = np.asarray(y_true).reshape(-1), np.asarray(y_pred).reshape(-1)
        return float(np.mean(y_true != y_pred))

    def enumerate_labelings(self, x):
        T = np.asarray(x).shape[0]
        return [np.array(c, dtype=np.int32)
                for c in itertools.product(range(self.n_states), repeat=T)]

    def bind(self, X, Y) -> BruteForceOracle:
        return BruteForceOracle(self, list(X), list(Y))

    def predict(self, X, w) -> list:
        w = np.asarray(w, dtype=float)
        out = []
        for x in X:
            cands = self.enumerate_labelings(x)
            out.append(cands[int(np.argmax([w @ self.joint_feature(x, c) for c in cands]))])
        return out


# ---------------------------------------------------------------------------
# Hypothesis profiles
# ---------------------------------------------------------------------------

_CI_EXAMPLES = 40


def register_hypothesis_profiles(default: str = "ci") -> str:
    """Register the ``ci``, ``dev`` and ``fuzz`` profiles and load one.

    The profile comes from ``$SSVM_HYPOTHESIS_PROFILE`` (default ``default``).
    ``ci`` is derandomised, without an example database or deadline;
    ``dev`` runs 100 examples and ``fuzz`` 2000.  Imports hypothesis lazily,
    so this module does not depend on it.

    Returns
    -------
    str
        The loaded profile name.
    """
    from hypothesis import settings

    settings.register_profile("ci", derandomize=True, database=None, deadline=None,
                              print_blob=True, max_examples=_CI_EXAMPLES)
    settings.register_profile("dev", deadline=None, max_examples=100)
    settings.register_profile("fuzz", deadline=None, max_examples=2000)
    name = os.environ.get("SSVM_HYPOTHESIS_PROFILE", default)
    settings.load_profile(name)
    return name


def scaled_examples(ci_examples: int) -> int:
    """``max_examples`` for a test that runs ``ci_examples`` under the ``ci`` profile.

    Scales with the loaded profile (x2.5 for ``dev``, x50 for ``fuzz``), so
    tests that lower their budget with ``@settings`` still grow when fuzzing.

    Parameters
    ----------
    ci_examples : int
        Examples under the ``ci`` profile (40 examples by default).
    """
    from hypothesis import settings

    return max(1, round(ci_examples * settings.default.max_examples / _CI_EXAMPLES))

