"""Maximising explicit pairwise potentials on a graph, with per-node state lists.

``decode_potentials`` finds argmax_z sum_v u_v(z_v) + sum_e theta_e(z_head, z_tail)
for given tables u (n, K) and theta (m, K, K).  It runs the compiled
``GraphOracle`` of a one-graph ``GraphModel`` whose node and edge features are
indicator vectors, so that the weight vector *is* the potentials: exact
max-product on forests, exact graph cuts on binary submodular tables, brute
force on tiny graphs, approximate loopy max-product or alpha-expansion
elsewhere (see ``GraphModel``'s ``inference``).  The packed oracle of a graph
is cached, so repeated calls only pay for the decoding.  ``inference="ilp"``
solves the integer program of ``ssvm_oracles.ilp`` instead (exact on any
graph), and ``"auto"`` does so wherever none of the compiled exact methods
applies and the program has at most ``ilp.AUTO_MAX_VARIABLES`` variables, so
small loopy graphs are decoded exactly.

Node v may be restricted to a list of states (``states[v]``, padded with -1):
the tables are gathered into each node's local states 0..len-1 and the local
states a node lacks get a unary penalty larger than the spread of every
achievable score, so an exact method never picks them; an approximate answer
that does is repaired (each such node takes its best allowed unary state) and
reported inexact.  The latent models (``ssvm_oracles.latent``) and the typed
CRFs (``ssvm_oracles.typed``) decode through this function.
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.sparse as sp

from ssvm_oracles.graph import GRAPH_INFERENCE, GraphModel
from ssvm_oracles.ilp import AUTO_MAX_VARIABLES, ilp_decode, labelling_score, n_variables

__all__ = ["DECODE_INFERENCE", "check_decode_inference", "decode_potentials", "gather_local"]

#: The inference names ``decode_potentials`` takes (``GraphModel``'s).
DECODE_INFERENCE = GRAPH_INFERENCE


def check_decode_inference(inference: str) -> str:
    """``inference`` if ``decode_potentials`` takes it, else a ``ValueError`` naming the choices."""
    if inference not in DECODE_INFERENCE:
        raise ValueError(f"inference must be one of {DECODE_INFERENCE}, got {inference!r}")
    return inference


@functools.lru_cache(maxsize=512)
def _packed(n_nodes: int, edge_bytes: bytes, n_states: int, inference: str, *, max_iter: int,
            damping: float, max_brute: int):
    """The one-graph ``GraphOracle`` decoding potentials of this graph, and its method."""
    edges = np.frombuffer(edge_bytes, dtype=np.int64).reshape(-1, 2)
    m = edges.shape[0]
    model = GraphModel(n_states, n_features=n_nodes, n_edge_features=max(m, 1),
                       inference=inference, max_iter=max_iter, damping=damping,
                       max_brute=max_brute)
    nodes = sp.identity(n_nodes, format="csr")
    edge_features = sp.identity(m, format="csr") if m else np.zeros((0, 1))
    oracle = model.bind([(nodes, edges, edge_features)], [np.zeros(n_nodes, np.int32)])
    return oracle, oracle.methods[0]


def _submodular(pairwise: np.ndarray) -> bool:
    """Whether every binary table scores theta(0,0) + theta(1,1) >= theta(0,1) + theta(1,0)."""
    return bool(np.all(pairwise[:, 0, 0] + pairwise[:, 1, 1]
                       >= pairwise[:, 0, 1] + pairwise[:, 1, 0] - 1e-12))


def _best_guess(packed, w, unary, pairwise, edges) -> np.ndarray:
    """The better of loopy max-product's and alpha-expansion's labellings of the packed
    potentials ``w`` (``packed(inference)`` the graph's cached oracle)."""
    guesses = [np.asarray(packed(method)[0].decode(w)[0], dtype=np.int32)
               for method in ("max-product", "alpha-expansion")]
    return max(guesses, key=lambda z: labelling_score(unary, pairwise, edges, z))


def gather_local(unary: np.ndarray, pairwise: np.ndarray, edges: np.ndarray,
                 states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tables over each node's local states: u[v, states[v, j]] and theta_e on them.

    ``states`` is (n, K_local) of global state indices, -1 where node v has
    fewer states (those entries get 0 here; ``decode_potentials`` masks them).
    """
    safe = np.maximum(states, 0)
    local_u = np.take_along_axis(unary, safe, axis=1)
    if edges.shape[0] == 0:
        return local_u, np.zeros((0, states.shape[1], states.shape[1]))
    head, tail = safe[edges[:, 0]], safe[edges[:, 1]]
    e = np.arange(edges.shape[0])[:, None, None]
    return local_u, pairwise[e, head[:, :, None], tail[:, None, :]]


def decode_potentials(unary, pairwise, edges, *, n_allowed=None, inference: str = "auto",
                      max_iter: int = 100, damping: float = 0.5,
                      max_brute: int = 4096) -> tuple[np.ndarray, bool]:
    """argmax of sum_v unary[v, z_v] + sum_e pairwise[e, z_head, z_tail].

    Parameters
    ----------
    unary : array (n, K)
    pairwise : array (m, K, K)
        One table per edge, rows the state of ``edges[e, 0]``.
    edges : int array (m, 2)
    n_allowed : int array (n,), optional
        Node v may only take the states 0..n_allowed[v]-1 (all K if omitted).
    inference : str, default "auto"
        ``GraphModel``'s inference name, or ``"ilp"``: the integer program of
        ``ssvm_oracles.ilp`` (exact on every graph; its cost grows quickly
        with the graph, so it suits graphs of up to a few thousand variables
        n K + m K^2).  ``"auto"`` on a graph where no compiled exact method
        applies (a loopy graph, K > 2; or K = 2 with tables that are not
        submodular) solves the integer program when it has at most
        ``ilp.AUTO_MAX_VARIABLES`` variables, and otherwise runs loopy
        max-product and alpha-expansion and keeps the better labelling
        (flagged inexact).
    max_iter, damping, max_brute
        As in ``GraphModel``.

    Returns
    -------
    labels : int32 array (n,)
    exact : bool
        Whether the answer is a proven maximiser (exact method, or graph cut
        on submodular tables, or brute force after a graph-cut fallback).
    """
    unary = np.array(unary, dtype=np.float64)
    pairwise = np.asarray(pairwise, dtype=np.float64)
    edges = np.ascontiguousarray(edges, dtype=np.int64).reshape(-1, 2)
    n, K = unary.shape
    if pairwise.shape != (edges.shape[0], K, K):
        raise ValueError(f"pairwise must have shape ({edges.shape[0]}, {K}, {K}), "
                         f"got {pairwise.shape}")
    if K == 1:
        return np.zeros(n, np.int32), True
    check_decode_inference(inference)
    small = n_variables(n, edges.shape[0], K) <= AUTO_MAX_VARIABLES
    original = unary.copy()
    mask = None
    if n_allowed is not None:
        n_allowed = np.asarray(n_allowed)
        if n_allowed.shape != (n,) or n_allowed.min(initial=1) < 1 or n_allowed.max(
                initial=1) > K:
            raise ValueError(f"n_allowed must hold {n} counts in [1, {K}]")
        mask = np.arange(K)[None, :] >= n_allowed[:, None]
        if mask.any():
            allowed_u = np.where(mask, np.nan, unary)
            low = np.nanmin(allowed_u, axis=1)
            spread = float(np.sum(np.nanmax(allowed_u, axis=1) - low))
            if pairwise.size:
                spread += float(np.sum(pairwise.max(axis=(1, 2)) - pairwise.min(axis=(1, 2))))
            unary[mask] = np.broadcast_to(low[:, None] - (spread + 1.0), (n, K))[mask]
        else:
            mask = None
    w = np.concatenate([unary.T.ravel(), pairwise.reshape(-1)])
    if edges.shape[0] == 0:
        w = np.concatenate([w, np.zeros(K * K)])
    packed = functools.partial(_packed, n, edges.tobytes(), K, max_iter=max_iter,
                               damping=damping, max_brute=max_brute)
    guess = functools.partial(_best_guess, packed, w, unary, pairwise, edges)
    if inference == "ilp":
        return ilp_decode(original, pairwise, edges, n_allowed=n_allowed,
                          candidate=guess), True
    oracle, method = packed(inference)
    tiny = n * np.log(K) <= np.log(max_brute) + 1e-9
    if inference == "auto" and small and (
            method == "loopy" or (method == "graphcut" and not tiny
                                  and not _submodular(pairwise))):
        # no compiled exact method applies, and the integer program is small enough
        return ilp_decode(original, pairwise, edges, n_allowed=n_allowed,
                          candidate=guess), True
    if inference == "auto" and method == "loopy":
        # no exact method applies: keep the better of loopy max-product and alpha-expansion
        labels = guess()
    else:
        labels = np.asarray(oracle.decode(w)[0], dtype=np.int32)
    if method in ("max-product", "brute"):
        exact = True
    elif method == "graphcut":
        exact = _submodular(pairwise) or tiny
    else:
        exact = False
    if mask is not None and mask[np.arange(n), labels].any():
        bad = mask[np.arange(n), labels]
        labels[bad] = np.argmax(np.where(mask, -np.inf, unary)[bad], axis=1)
        exact = False
    return labels, exact
