"""Independent references for box-constrained SSVMs on enumerated toy problems.

The box-constrained primal min_{l <= w <= u} lam/2 ||w||^2 + (1/n) sum_i xi_i,
xi_i >= L_i(y) - <w, psi_i(y)> for every y, is solved as a QP with SciPy, and
the dual value comes from the multiplier form of Osokin et al. (2016), App. H, written here
from the definitions rather than from ``ssvm_core``.
"""

from __future__ import annotations

import numpy as np
import scipy.optimize


def box_primal_optimum(psi_list, loss_list, lam, lower, upper) -> tuple[float, np.ndarray]:
    """``(P*, w*)`` of the box-constrained primal, by SLSQP on (w, xi)."""
    n = len(psi_list)
    d = psi_list[0].shape[1]
    rows, rhs = [], []
    for i, (P, L) in enumerate(zip(psi_list, loss_list)):
        for psi, loss in zip(P, L):          # xi_i + <psi, w> >= loss
            row = np.zeros(d + n)
            row[:d] = psi
            row[d + i] = 1.0
            rows.append(row)
            rhs.append(loss)
    A, b = np.array(rows), np.array(rhs)

    def fun(z):
        return 0.5 * lam * z[:d] @ z[:d] + z[d:].sum() / n

    def jac(z):
        return np.concatenate([lam * z[:d], np.full(n, 1.0 / n)])

    bounds = [(None if np.isneginf(lo) else lo, None if np.isposinf(hi) else hi)
              for lo, hi in zip(lower, upper)] + [(None, None)] * n
    w0 = np.clip(np.zeros(d), lower, upper)
    xi0 = np.array([np.max(L - P @ w0) for P, L in zip(psi_list, loss_list)])
    res = scipy.optimize.minimize(
        fun, np.concatenate([w0, xi0]), jac=jac, method="SLSQP", bounds=bounds,
        constraints=[{"type": "ineq", "fun": lambda z: A @ z - b, "jac": lambda z: A}],
        options={"ftol": 1e-15, "maxiter": 2000})
    w = np.clip(res.x[:d], lower, upper)
    primal = 0.5 * lam * w @ w + np.mean([np.max(L - P @ w)
                                          for P, L in zip(psi_list, loss_list)])
    return float(primal), w


def box_dual_value(ell: float, v: np.ndarray, lam: float, lower, upper) -> float:
    """D = ell - lam/2 ||w||^2 - lam (beta_u^T u - beta_l^T l), w = clip(v, l, u).

    beta_u = [v - u]_+ and beta_l = [l - v]_+ are the multipliers of the box;
    coordinates with an infinite bound have a zero multiplier and add nothing.
    """
    w = np.clip(v, lower, upper)
    beta_u = np.maximum(v - upper, 0.0)
    beta_l = np.maximum(lower - v, 0.0)
    up = np.sum(beta_u[beta_u > 0] * upper[beta_u > 0])
    lo = np.sum(beta_l[beta_l > 0] * lower[beta_l > 0])
    return float(ell - 0.5 * lam * w @ w - lam * (up - lo))


def random_box(rng: np.random.Generator, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-coordinate bounds mixing infinite, two-sided and one-sided ones.

    Some boxes exclude 0, so the initial point clip(0) is already on a face.
    """
    lower = np.full(d, -np.inf)
    upper = np.full(d, np.inf)
    for k in range(d):
        kind = rng.integers(0, 5)
        if kind == 1:
            lower[k] = 0.0                              # nonnegativity
        elif kind == 2:
            lower[k], upper[k] = -rng.uniform(0, 0.3), rng.uniform(0, 0.3)
        elif kind == 3:
            lower[k] = rng.uniform(0.05, 0.2)           # excludes 0
            upper[k] = lower[k] + rng.uniform(0, 0.3)
        elif kind == 4:
            upper[k] = -rng.uniform(0, 0.1)
    return lower, upper
