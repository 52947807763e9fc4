"""Reference objectives by enumeration: every labelling of a tiny problem.

For block ``i`` an enumerated problem holds a matrix ``psi[i]`` whose rows are
psi_i(y) for every candidate labelling y, and a vector ``loss[i]`` with L_i(y).
The dual variables are one probability vector ``alpha[i]`` per block; with
``n`` blocks,

- ``w(alpha) = sum_i psi[i].T @ alpha[i] / (lam n)``,
- ``D(alpha) = sum_i loss[i] @ alpha[i] / n - lam/2 ||w(alpha)||^2``,
- ``P(w) = lam/2 ||w||^2 + (1/n) sum_i max_y (loss[i] - psi[i] @ w)``.

``check_gaps`` and ``recover_alpha`` check a solver state against these.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.optimize

from ssvm_core._oracle import PythonOracle, labelling_key
from ssvm_core.oracles import BruteForceOracle, as_oracle
from ssvm_core.state import SolverState


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
        must implement ``enumerate_labellings``).
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


def block_count(psi_list: Sequence[np.ndarray], n: int | None) -> int:
    """The normalisation n of the loss term: ``n``, or the number of blocks if None.

    Raises
    ------
    ValueError
        If n < 1.
    """
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
    n = block_count(psi_list, n)
    w = np.asarray(w, dtype=float)
    hinge = sum(float(np.max(L - P @ w)) for P, L in zip(psi_list, loss_list))
    return 0.5 * lam * float(w @ w) + hinge / n


def weights_from_alpha(psi_list: Sequence[np.ndarray], lam: float,
                       alphas: Sequence[np.ndarray], n: int | None = None) -> np.ndarray:
    """w(alpha) = sum_i psi_i^T alpha_i / (lam n)."""
    n = block_count(psi_list, n)
    total = sum(P.T @ a for P, a in zip(psi_list, alphas))
    return np.asarray(total, dtype=float) / (lam * n)


def dual_by_enumeration(psi_list: Sequence[np.ndarray], loss_list: Sequence[np.ndarray],
                        lam: float, alphas: Sequence[np.ndarray],
                        n: int | None = None) -> float:
    """D(alpha) = sum_i L_i^T alpha_i / n - lam/2 ||w(alpha)||^2 (alpha given explicitly)."""
    n = block_count(psi_list, n)
    w = weights_from_alpha(psi_list, lam, alphas, n)
    ell = sum(float(L @ a) for L, a in zip(loss_list, alphas)) / n
    return ell - 0.5 * lam * float(w @ w)


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
