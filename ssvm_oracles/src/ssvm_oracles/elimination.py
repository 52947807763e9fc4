"""Exact MAP labellings of pairwise scores by max-sum variable elimination.

The score s(z) = sum_v u_v(z_v) + sum_e theta_e(z_head, z_tail) is maximised one node at a
time: eliminating node v sums the tables that involve v into one table over v and its
current neighbours, maximises it over v, and keeps the maximising state of v for every
state of the neighbours; the neighbours become a clique.  After the last node, the kept
tables are read backwards to a maximising labelling (bucket elimination, Dechter 1999).  The
answer is exact on every graph; time and memory follow the tables' entries, K to the power
of each eliminated node's neighbourhood plus one, which a good order keeps small on graphs
of small treewidth (a 6 x 6 grid with K = 5: 431,280 entries in all, the largest table
5^7, where the integer program of ``ssvm_oracles.ilp`` takes seconds).  The order is
greedy min-fill (the node whose elimination adds the fewest edges; ties by degree, then
index).  Among tied maximisers the lowest state wins at every elimination, so the answer
is deterministic.
"""

from __future__ import annotations

import functools
import heapq

import numpy as np

from ssvm_oracles._score_tables import allowed_states, check_tables

__all__ = ["elimination_decode", "elimination_order", "elimination_table_entries"]


def elimination_order(n_nodes: int, edges) -> tuple[np.ndarray, int]:
    """A greedy min-fill elimination order and the largest table scope it meets.

    Parameters
    ----------
    n_nodes : int
    edges : int array (m, 2)

    Returns
    -------
    order : int array (n_nodes,)
        The nodes in the order they are eliminated.
    width : int
        The largest number of nodes in one table (a node and its neighbours when it is
        eliminated): the tables have K ** width entries at most.

    Notes
    -----
    The orders of the last 64 graph structures are kept (a training run decodes the same
    graphs again and again).
    """
    order, scopes = _min_fill_of(n_nodes, edges)
    return np.asarray(order, dtype=np.intp), max(scopes, default=0)


def _min_fill_of(n_nodes: int, edges) -> tuple[tuple[int, ...], tuple[int, ...]]:
    edges = np.ascontiguousarray(edges, dtype=np.int64).reshape(-1, 2)
    return _min_fill(int(n_nodes), edges.tobytes())


@functools.lru_cache(maxsize=64)
def _min_fill(n_nodes: int, edge_bytes: bytes) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The greedy min-fill order of a structure and the size of each elimination's table
    scope (the node and its neighbours then): a heap of (fill, degree, node) keys, where
    eliminating v changes the keys of its neighbours and theirs only."""
    adjacent: list[set[int]] = [set() for _ in range(n_nodes)]
    for a, b in np.frombuffer(edge_bytes, dtype=np.int64).reshape(-1, 2).tolist():
        if a != b:
            adjacent[a].add(b)
            adjacent[b].add(a)

    def key(u: int) -> tuple[int, int]:
        near = sorted(adjacent[u])
        fill = sum(1 for i, a in enumerate(near) for b in near[i + 1:]
                   if b not in adjacent[a])
        return fill, len(near)

    keys = [key(u) for u in range(n_nodes)]
    heap = [(*keys[u], u) for u in range(n_nodes)]
    heapq.heapify(heap)
    gone = [False] * n_nodes
    order, scopes = [], []
    while heap:
        fill, degree, v = heapq.heappop(heap)
        if gone[v] or (fill, degree) != keys[v]:
            continue                                  # eliminated, or a stale key
        near = adjacent[v]
        scopes.append(len(near) + 1)
        for a in near:
            adjacent[a] |= near - {a}
            adjacent[a].discard(v)
        gone[v] = True
        order.append(v)
        for u in set(near).union(*(adjacent[a] for a in near)) - {v}:
            if not gone[u] and (new := key(u)) != keys[u]:
                keys[u] = new
                heapq.heappush(heap, (*new, u))
    return tuple(order), tuple(scopes)


def elimination_table_entries(n_nodes: int, edges, n_states: int) -> int:
    """The entries of all the tables ``elimination_decode`` builds, sum of K ** (scope size)
    over the eliminations: its time and memory grow with it."""
    return _entries(_min_fill_of(n_nodes, edges)[1], n_states)


def _entries(scopes: tuple[int, ...], n_states: int) -> int:
    return sum(int(n_states) ** size for size in scopes)


def elimination_decode(unary, pairwise, edges, *, n_allowed=None,
                       max_entries: int = 2 ** 26) -> np.ndarray:
    """An exact argmax labelling of the pairwise score, int32 (n,), by variable elimination.

    Parameters
    ----------
    unary : array (n, K)
        Node scores u_v(k).
    pairwise : array (m, K, K)
        Edge scores, rows the state of ``edges[e, 0]``.
    edges : int array (m, 2)
    n_allowed : int array (n,), optional
        Node v may only take the states 0..n_allowed[v]-1; all K if omitted.
    max_entries : int, default 2 ** 26
        Refuse graphs whose tables would have more entries together
        (``elimination_table_entries``, which time and memory follow; a table of 2 ** 26
        doubles is 512 MB).

    Returns
    -------
    int32 array (n,)
        A maximiser (among tied ones, the lowest state at each elimination).

    Raises
    ------
    ValueError
        For inconsistent shapes, non-finite scores, bad ``n_allowed``, or tables of more
        than ``max_entries`` entries together.
    """
    unary = np.array(unary, dtype=np.float64)
    pairwise = np.asarray(pairwise, dtype=np.float64)
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    check_tables(unary, pairwise, edges)
    n, K = unary.shape
    if n_allowed is not None:
        unary[~allowed_states(n, K, n_allowed)] = -np.inf
    # tables: scope (increasing node ids) -> values, one axis per node of the scope
    tables: list[tuple[tuple[int, ...], np.ndarray]] = [((v,), unary[v]) for v in range(n)]
    for (a, b), theta in zip(edges.tolist(), pairwise):
        if a == b:
            tables.append(((a,), np.diagonal(theta).copy()))
        else:
            tables.append(((a, b), theta) if a < b else ((b, a), theta.T))
    holding: list[set[int]] = [set() for _ in range(n)]      # node -> tables that hold it
    for t, (scope, _) in enumerate(tables):
        for v in scope:
            holding[v].add(t)
    order, scopes = _min_fill_of(n, edges)
    entries = _entries(scopes, K)
    if entries > max_entries:
        raise ValueError(f"variable elimination on this graph needs tables of {entries} "
                         f"entries (more than max_entries={max_entries}; the largest has "
                         f"{K}^{max(scopes)}): its treewidth is too large for exact "
                         "elimination; use ssvm_oracles.ilp.ilp_decode")
    state_type = np.min_scalar_type(K - 1)        # the kept maximisers: one byte for K <= 256
    kept = []                                     # (v, the other nodes, argmax of v)
    for v in order:
        used = sorted(holding[v])
        scope = sorted({u for t in used for u in tables[t][0]})
        total = np.zeros((K,) * len(scope))
        for t in used:
            own, values = tables[t]
            total = total + values.reshape([K if u in own else 1 for u in scope])
            for u in own:
                holding[u].discard(t)
        axis = scope.index(v)
        rest = tuple(scope[:axis] + scope[axis + 1:])
        kept.append((v, rest, np.argmax(total, axis=axis).astype(state_type)))
        tables.append((rest, np.max(total, axis=axis)))
        for u in rest:
            holding[u].add(len(tables) - 1)
    z = np.zeros(n, dtype=np.int32)
    for v, rest, best in reversed(kept):
        z[v] = best[tuple(z[u] for u in rest)]
    return z
