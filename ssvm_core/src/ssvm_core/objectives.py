"""Primal and dual objectives and the duality gap of the n-slack SSVM.

With the dual point stored as w = A alpha and ell = b^T alpha (Lacoste-Julien et al. (2013), eq. 4):

- primal  P(w) = lam/2 ||w||^2 + (1/n) sum_i max_y H_i(y; w),
- dual    D(alpha) = ell - lam/2 ||A alpha||^2 (see ``dual_objective`` with a box),
- gap     P(w) - D(alpha) >= 0 for any w and alpha; it is the Frank-Wolfe
  (Lagrange) gap sum_i g_i when w = A alpha (Lacoste-Julien et al. (2013), App. B.2).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ssvm_core.oracles import as_oracle
from ssvm_core.parallel import score_pass
from ssvm_core.validation import check_lam, check_weights

if TYPE_CHECKING:                     # the state uses these objectives: no import circle
    from ssvm_core.state import SolverState


def primal_objective(oracle, lam: float, w: np.ndarray, n_jobs: int | None = None) -> float:
    """P(w), one max-oracle call per block.

    Parameters
    ----------
    oracle : MaxOracle or Python oracle
        Bound model (see ``as_oracle``).
    lam : float
        Regularisation strength.
    w : ndarray of shape (n_features,)
        Weights.
    n_jobs : int, optional
        Threads for the oracle calls (see ``ssvm_core.parallel.score_pass``).
    """
    oracle = as_oracle(oracle)
    w = check_weights(w, oracle.n_features)
    lam = check_lam(lam)
    return 0.5 * lam * float(w @ w) + score_pass(oracle, w, n_jobs=n_jobs) / oracle.n_blocks


def dual_objective(state: SolverState, averaged: bool = False) -> float:
    """D(alpha) at the state's (or its averaged) dual point.

    D = ell - lam/2 ||w||^2 with w = v = A alpha; with box constraints
    (Osokin et al. (2016), App. H) w = clip(v, lower, upper) and
    D = ell - lam <w, v> + lam/2 ||w||^2, which equals
    ell - lam/2 ||w||^2 - lam (beta_u^T u - beta_l^T l) for the multipliers
    beta_u = [v - u]_+ and beta_l = [l - v]_+.
    """
    if averaged:
        v, ell = state.averaged_v(), state.averaged_ell()
    else:
        v, ell = state.v, state.ell
    if not state.has_box:
        return ell - 0.5 * state.lam * float(v @ v)
    w = state.project(v)
    return ell - state.lam * float(w @ v) + 0.5 * state.lam * float(w @ w)


def duality_gap(oracle, state: SolverState, averaged: bool = False,
                n_jobs: int | None = None) -> float:
    """P(w) - D(alpha) at the state's iterate (or its weighted average).

    The result certifies ``P(w) - min P <= gap``.  It costs one oracle call
    per block.
    """
    oracle = as_oracle(oracle)
    state.check_compatible(oracle)
    w = state.averaged_w() if averaged else state.w
    return primal_objective(oracle, state.lam, w, n_jobs) - dual_objective(state, averaged)

