"""Initialisation of the regularization path (Osokin et al. (2016), Sec. 4 and Alg. 6)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ssvm_core import SolverState
from ssvm_paths._common import Problem


@dataclass
class InitialPoint:
    """Alg. 6's output.

    Attributes
    ----------
    lam : float
        lambda_inf = (<u, psi~> + mean theta_i) / (kappa eps); u = psi~ without a box.
    state : SolverState
        The dual point alpha_i(y~_i) = 1 at ``lam`` (w = u / lam), with active sets
        when asked for.
    theta : ndarray (n,)
        theta_i = max_y -<u, psi_i(y)>, or its upper bound max_y H_i(y; u).
    theta_exact : bool
        Whether ``theta`` is exact (a model's loss-free decoding) or the bound.
    oracle_calls : int
        Oracle calls made (y~ and, without a model, theta).
    """

    lam: float
    state: SolverState
    theta: np.ndarray
    theta_exact: bool
    oracle_calls: int


def check_ground_truth(problem: Problem, Y, max_blocks: int = 20) -> None:
    """Check L_i(y_i) = 0 and psi_i(y_i) = 0 (Osokin et al. (2016), Prop. 1) on up to
    ``max_blocks`` blocks.

    Needs the ground truths ``Y`` (a model was given); a bare oracle is trusted.
    """
    if Y is None:
        return
    zero = np.zeros(problem.d)
    for i in range(min(problem.n, max_blocks)):
        psi, loss, _ = problem.oracle.evaluate_py(i, np.ravel(Y[i]), zero)
        if loss != 0 or np.any(psi != 0):
            raise ValueError(f"block {i}: the ground truth has loss L_i(y_i) = {loss} and "
                             f"|psi_i(y_i)| = {np.abs(psi).max():g}; the regularization path "
                             "(Osokin et al. (2016), Prop. 1) needs both to be 0")


def initial_point(problem: Problem, eps: float, kappa: float, active_sets: bool,
                  cache_size: int) -> InitialPoint:
    """Osokin et al. (2016), Alg. 6, generalised to sign-constraint boxes.

    y~_i = argmax_y L_i(y) is the oracle's answer at w = 0 and
    psi~ = mean_i psi_i(y~_i).  With alpha_i(y~_i) = 1 at lambda, v = psi~ / lambda
    and w = clip(v) = u / lambda with u = clip(psi~) (u = psi~ without a box), and
    since L_i(y~_i) = max_y L_i(y) the duality gap is at most
    (<u, psi~> + mean_i theta_i) / lambda with theta_i = max_y -<u, psi_i(y)> (Osokin et al. (2016)
    eq. 11; with a box the dual is D = ell - lam <w, v> + lam/2 ||w||^2).  It is a
    convex function of 1 / lambda that vanishes at 0, so it is <= kappa eps for
    every lambda >= lambda_inf.  theta_i is a loss-free decoding at u: with a model,
    ``model.predict`` and the oracle's ``evaluate`` give it exactly; a bare oracle
    only gives max_y H_i(y; u) = max_y (L_i(y) - <u, psi_i(y)>) >= theta_i, which
    keeps the bound valid (a larger lambda_inf).
    """
    oracle, n, d = problem.oracle, problem.n, problem.d
    zero = np.zeros(d)
    psi_sum = np.zeros(d)
    labellings = []              # y~_i
    for i in range(n):
        lab, psi, loss, _ = oracle.solve_py(i, zero)
        if not (np.isfinite(psi.sum()) and np.isfinite(loss) and loss >= 0):
            raise ValueError(f"block {i}: the oracle answered a non-finite psi or a negative "
                             f"loss ({loss}) at w = 0")
        psi_sum += psi
        labellings.append(lab)
    psi_tilde = psi_sum / n
    u = psi_tilde if problem.box is None else np.clip(psi_tilde, *problem.box)
    calls = n
    if problem.model is not None:
        preds = problem.model.predict(problem.X, u)
        theta = np.array([-float(oracle.evaluate_py(i, np.ravel(preds[i]), u)[0] @ u)
                          for i in range(n)])
        theta_exact = True
    else:
        theta = np.array([oracle.solve_py(i, u)[3] for i in range(n)])
        theta_exact = False
        calls += n
    # theta_i >= -<u, psi_i(y_i)> = 0 and <u, psi~> = ||u||^2 >= 0 (u is psi~ clipped to a cone)
    bound = float(u @ psi_tilde) + float(theta.mean())
    if not bound > 0:
        raise ValueError("w = 0 is optimal for every lambda (psi~ and theta vanish): "
                         "there is no path to compute")
    lam = bound / (kappa * eps)
    # alpha_i(y~_i) = 1 at lam: v_i = psi_i(y~_i) / (lam n), ell_i = L_i(y~_i) / n.
    state = SolverState.for_oracle(oracle, lam, averaging=False, box=problem.box,
                                   active_sets=active_sets, cache_size=cache_size)
    state.move_to_vertices(oracle, labellings)
    return InitialPoint(lam, state, theta, theta_exact, calls)
