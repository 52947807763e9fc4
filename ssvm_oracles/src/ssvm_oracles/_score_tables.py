"""Checks of the pairwise score tables the exact decoders take (``ilp``, ``elimination``)."""

from __future__ import annotations

import numpy as np


def check_tables(unary: np.ndarray, pairwise: np.ndarray, edges: np.ndarray) -> None:
    """Raise ValueError unless ``unary`` is (n, K), ``pairwise`` (m, K, K) for the m
    ``edges`` between nodes in [0, n), and every score is finite."""
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


def allowed_states(n: int, K: int, n_allowed) -> np.ndarray:
    """bool (n, K): node v may take the states 0..n_allowed[v]-1 (all K when ``n_allowed``
    is None)."""
    if n_allowed is None:
        return np.ones((n, K), dtype=bool)
    n_allowed = np.asarray(n_allowed)
    if n_allowed.shape != (n,) or n_allowed.min(initial=1) < 1 or n_allowed.max(
            initial=1) > K:
        raise ValueError(f"n_allowed must hold {n} counts in [1, {K}]")
    return np.arange(K)[None, :] < n_allowed[:, None]
