"""Validation of graph examples and their packing into a ``GraphOracle``.

An example is ``(node_features, edges)`` or ``(node_features, edges,
edge_features)``; ``edges`` is an (n_edges, 2) integer array or a networkx
graph.  Packing concatenates the examples' CSR feature rows and edges, chooses
the inference method of each graph (``plan_methods``) and computes the forest
orders of the max-product graphs (``forest_order``, a BFS).  networkx is
imported only where a networkx graph is converted: it takes a large share of
the package's import time, and an input can only be a networkx graph once
networkx has been imported (``_is_networkx``).
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ssvm_oracles._graph import METHODS, GraphOracle, gram_entries, pairwise_size

INFERENCE = ("auto",) + METHODS
EDGE_ATTRIBUTE = "features"


class Graph(NamedTuple):
    """One validated example."""

    nodes: np.ndarray | sp.csr_array     # (n_nodes, F) float64: dense, or CSR without zeros
    edges: np.ndarray                    # (n_edges, 2) int64
    edge_features: sp.csr_array | None   # (n_edges, E) float64, or None


def as_example_list(X):
    """A 1-D object array of examples (``np.array`` of ragged examples) as a list; other
    inputs unchanged."""
    if isinstance(X, np.ndarray) and X.dtype == object and X.ndim == 1:
        return list(X)
    return X


def as_csr(a, what: str) -> sp.csr_array:
    """A finite 2-D float64 CSR array of ``a`` (dense or sparse), explicit zeros removed."""
    if sp.issparse(a):
        m = sp.csr_array(a, dtype=np.float64)
        values = m.data
    else:
        arr = np.asarray(a, dtype=np.float64)
        if arr.ndim != 2:
            raise ValueError(f"{what} must be 2-D, got shape {arr.shape}")
        m, values = sp.csr_array(arr), arr
    if m.ndim != 2:
        raise ValueError(f"{what} must be 2-D, got shape {m.shape}")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{what} has NaN or infinite values")
    m.sum_duplicates()
    m.eliminate_zeros()
    m.sort_indices()
    return m


def _dense(a, what: str) -> np.ndarray:
    """A finite 2-D float64 array (packed into CSR rows later, all examples at once)."""
    arr = np.asarray(a, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(f"{what} must be 2-D, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{what} has NaN or infinite values")
    return arr


def _is_networkx(edges) -> bool:
    """Whether ``edges`` is a networkx graph (never without networkx imported, so this does
    not import it)."""
    nx = sys.modules.get("networkx")
    return nx is not None and isinstance(edges, nx.Graph)


def _edges_of_networkx(g, n_nodes: int, where: str, want_features: bool):
    booleans = [v for v in g.nodes if isinstance(v, (bool, np.bool_))]
    if booleans:
        raise ValueError(f"{where}: networkx graph nodes must be the integers 0..{n_nodes - 1} "
                         f"(the rows of the node features), got the boolean {booleans[0]!r} "
                         "(True and False would silently stand for nodes 1 and 0)")
    bad = [v for v in g.nodes if not (isinstance(v, (int, np.integer)) and 0 <= v < n_nodes)]
    if bad:
        raise ValueError(f"{where}: networkx graph nodes must be the integers 0..{n_nodes - 1} "
                         f"(the rows of the node features), got {bad[0]!r}")
    directed = g.is_directed()
    edges, features = [], []
    for u, v, data in g.edges(data=True):
        edges.append((u, v) if directed else (min(u, v), max(u, v)))
        if want_features:
            if EDGE_ATTRIBUTE not in data:
                raise ValueError(f"{where}: edge ({u}, {v}) has no {EDGE_ATTRIBUTE!r} attribute "
                                 "holding its edge features")
            features.append(np.asarray(data[EDGE_ATTRIBUTE], dtype=np.float64).reshape(-1))
    edges = np.array(edges, dtype=np.int64).reshape(-1, 2)
    if not want_features:
        return edges, None
    if features and len({f.shape for f in features}) != 1:
        raise ValueError(f"{where}: the edges' {EDGE_ATTRIBUTE!r} attributes differ in length")
    return edges, (np.vstack(features) if features else None)


def check_graph(x, i: int, n_features: int | None, n_edge_features: int | None,
                edge_mode: bool) -> Graph:
    """Validate example ``X[i]`` (see the module docstring).

    With ``edge_mode`` the example must carry edge features: a third tuple
    entry, or the edge attribute ``"features"`` of a networkx graph.
    """
    where = f"X[{i}]"
    if not isinstance(x, (tuple, list)) or len(x) not in (2, 3):
        raise ValueError(f"{where} must be (node_features, edges) or (node_features, edges, "
                         f"edge_features), got {type(x).__name__}")
    nodes = as_csr(x[0], f"{where} node features") if sp.issparse(x[0]) else _dense(
        x[0], f"{where} node features")
    n_nodes = nodes.shape[0]
    if n_nodes < 1:
        raise ValueError(f"{where} has no nodes")
    if n_features is not None and nodes.shape[1] != n_features:
        raise ValueError(f"{where} has {nodes.shape[1]} features per node, expected {n_features}")
    edge_features = x[2] if len(x) == 3 else None
    if _is_networkx(x[1]):
        edges, from_graph = _edges_of_networkx(x[1], n_nodes, where,
                                               edge_mode and edge_features is None)
        edge_features = from_graph if edge_features is None else edge_features
    else:
        edges = np.asarray(x[1])
        if edges.size == 0:
            edges = edges.reshape(0, 2).astype(np.int64)
        if edges.ndim != 2 or edges.shape[1] != 2:
            raise ValueError(f"{where} edges must have shape (n_edges, 2), got {edges.shape}")
        if not np.issubdtype(edges.dtype, np.integer):
            raise ValueError(f"{where} edges must hold integer node indices, "
                             f"got dtype {edges.dtype}")
        edges = edges.astype(np.int64)
    if edges.size and (edges.min() < 0 or edges.max() >= n_nodes):
        raise ValueError(f"{where} has edge endpoints outside [0, {n_nodes}): "
                         f"min {edges.min()}, max {edges.max()}")
    if np.any(edges[:, 0] == edges[:, 1]):
        k = int(np.flatnonzero(edges[:, 0] == edges[:, 1])[0])
        raise ValueError(f"{where} has a self loop: edge {k} joins node {edges[k, 0]} to itself")
    if not edge_mode:
        return Graph(nodes, edges, None)
    if edge_features is None:
        raise ValueError(f"{where} has no edge features; give (node_features, edges, "
                         f"edge_features) or a networkx graph with edge attribute "
                         f"{EDGE_ATTRIBUTE!r}")
    if not sp.issparse(edge_features) and np.asarray(edge_features).size == 0:
        edge_features = np.zeros((0, n_edge_features or 0))
    edge_features = as_csr(edge_features, f"{where} edge features")
    if edge_features.shape[0] != len(edges):
        raise ValueError(f"{where} has {len(edges)} edges but {edge_features.shape[0]} rows "
                         "of edge features")
    if n_edge_features is not None and edge_features.shape[1] != n_edge_features:
        raise ValueError(f"{where} has {edge_features.shape[1]} edge features, "
                         f"expected {n_edge_features}")
    return Graph(nodes, edges, edge_features)


def check_graph_labels(y, i: int, n_nodes: int, n_states: int) -> np.ndarray:
    """``Y[i]`` as int32, checked against the node count and the states."""
    y = np.asarray(y)
    if y.size != n_nodes or y.ndim > 2:
        raise ValueError(f"Y[{i}] has shape {y.shape}, expected ({n_nodes},) to match X[{i}]")
    y = y.reshape(-1)
    if y.size and not (np.issubdtype(y.dtype, np.integer) or y.dtype == np.bool_):
        raise ValueError(f"Y[{i}] must hold integer labels, got dtype {y.dtype}")
    if y.size and (y.min() < 0 or y.max() >= n_states):
        raise ValueError(f"Y[{i}] has labels outside [0, {n_states}): "
                         f"min {y.min()}, max {y.max()}")
    return y.astype(np.int32)


def forest_order(n_nodes: int, edges: np.ndarray):
    """A BFS order of the forest on ``edges``, or None if the graph has a cycle.

    Returns ``(order, parent, pedge, flip)``: nodes in BFS order of each tree
    (trees by smallest node, rooted there; each node's neighbours in the order of
    their edges), each node's parent and the edge to it (-1 at roots), and per edge
    whether the child is its second endpoint.  Duplicate edges and self-loops count
    as cycles.
    """
    if len(edges) >= n_nodes:
        return None
    pairs = edges.tolist()
    adjacent: list[list[tuple[int, int]]] = [[] for _ in range(n_nodes)]
    for e, (u, v) in enumerate(pairs):
        adjacent[u].append((v, e))
        adjacent[v].append((u, e))
    order, parent = [], np.full(n_nodes, -1, np.int32)
    pedge = np.full(n_nodes, -1, np.int32)
    flip = np.zeros(len(pairs), np.int8)
    seen = np.zeros(n_nodes, bool)
    for root in range(n_nodes):
        if seen[root]:
            continue
        seen[root] = True
        order.append(root)
        queue = deque([root])
        while queue:
            u = queue.popleft()
            for v, e in adjacent[u]:
                if seen[v]:
                    if e != pedge[u]:              # a second path to v
                        return None
                    continue
                seen[v] = True
                order.append(v)
                parent[v], pedge[v] = u, e
                flip[e] = pairs[e][1] == v
                queue.append(v)
    return np.array(order, np.intp), parent, pedge, flip


def plan_methods(graphs: Sequence[Graph], n_states: int, inference: str,
                 max_brute: int) -> tuple[np.ndarray, list]:
    """Method code of each graph and the forest orders of the max-product ones.

    ``"auto"``: forests by max-product; otherwise graph cuts when K = 2,
    brute force when K^n <= max_brute, else loopy max-product.
    ``"max-product"``: exact on forests, loopy elsewhere.  ``"brute"``
    requires K^n <= max_brute.
    """
    codes, forests, seen = [], [], {}
    for i, g in enumerate(graphs):
        n = g.nodes.shape[0]
        forest = None
        if inference in ("auto", "max-product"):
            key = (n, g.edges.tobytes())        # examples often share their graph (chains)
            if key not in seen:
                seen[key] = forest_order(n, g.edges)
            forest = seen[key]
        tiny = n * np.log(n_states) <= np.log(max_brute) + 1e-9
        if inference == "brute" and not tiny:
            raise ValueError(f"X[{i}] has {n_states}^{n} labellings, more than "
                             f"max_brute={max_brute}: inference='brute' cannot enumerate them")
        if forest is not None:
            name = "max-product"
        elif inference == "auto":
            name = "graphcut" if n_states == 2 else "brute" if tiny else "loopy"
        elif inference == "max-product":
            name = "loopy"
        else:
            name = inference
        codes.append(METHODS.index(name))
        forests.append(forest)
    return np.array(codes, np.int8), forests


def block_storage(blocks: str, sizes: np.ndarray, counts: np.ndarray, *, node_coords: int,
                  pair_coords: int, n_features: int) -> str:
    """The storage of a graph oracle's blocks (``GraphOracle``, ``GraphCutOracle``):
    ``blocks`` itself, or for "auto" "compact" unless it takes more memory than
    "dense".

    Compact blocks take 8 (n U + P) bytes for a graph of ``sizes`` n nodes (U =
    ``node_coords`` a node: K with one-hot unaries, 1 with signed ones; P =
    ``pair_coords`` pairwise weights when the graph has edges, ``counts`` > 0)
    plus its node Gram when it keeps one (``_graph.gram_entries``: 8 n^2 <= 8 d
    bytes); dense ones 8 d bytes, d = ``n_features``.  Graphs with fewer nodes
    than features (multi-label and binary examples, small graphs over rich
    features) choose compact blocks, large grids over few features dense ones.
    """
    if blocks != "auto":
        return blocks
    sizes, counts = np.asarray(sizes, np.int64), np.asarray(counts, np.int64)
    compact = (sizes * node_coords + np.where(counts > 0, pair_coords, 0)
               + gram_entries(sizes, n_features))
    return "compact" if compact.sum() <= len(sizes) * n_features else "dense"


def pack_graphs(graphs: Sequence[Graph], labels: Sequence[np.ndarray], *, n_states: int,
                n_features: int, unary_mode: str, pairwise_mode: str, n_edge_features: int,
                edge_sym: np.ndarray, class_weight: np.ndarray, inference: str,
                max_iter: int, damping: float, max_brute: int,
                blocks: str = "dense") -> GraphOracle:
    """Concatenate validated graphs and labellings into a ``GraphOracle`` whose
    blocks are stored as ``blocks`` says ("auto": ``block_storage``)."""
    method, forests = plan_methods(graphs, n_states, inference, max_brute)
    if all(isinstance(g.nodes, np.ndarray) for g in graphs):
        nodes = as_csr(np.vstack([g.nodes for g in graphs]), "node features")
    else:
        nodes = sp.vstack([sp.csr_array(g.nodes) for g in graphs], format="csr")
    sizes = [g.nodes.shape[0] for g in graphs]
    counts = [len(g.edges) for g in graphs]
    edges = np.concatenate([g.edges for g in graphs]).reshape(-1, 2)
    if pairwise_mode == "edge_features":
        efeat = sp.vstack([g.edge_features for g in graphs], format="csr")
    else:
        efeat = None
    order, parent, pedge, flip = [], [], [], []
    for n, m, forest in zip(sizes, counts, forests):
        if forest is None:
            forest = (np.arange(n), np.full(n, -1), np.full(n, -1), np.zeros(m))
        for out, part in zip((order, parent, pedge, flip), forest):
            out.append(part)
    plan = (method, *(np.concatenate(part) for part in (order, parent, pedge, flip)))
    return _graph_oracle(nodes, sizes, edges, counts, efeat, np.concatenate(labels), plan,
                         n_states=n_states, n_features=n_features, unary_mode=unary_mode,
                         pairwise_mode=pairwise_mode, n_edge_features=n_edge_features,
                         edge_sym=edge_sym, class_weight=class_weight, max_iter=max_iter,
                         damping=damping, max_brute=max_brute, blocks=blocks)


def pack_single_nodes(nodes: sp.csr_array, labels: np.ndarray, *, n_states: int,
                      unary_mode: str, pairwise_mode: str, class_weight: np.ndarray,
                      inference: str, max_iter: int, damping: float, max_brute: int,
                      blocks: str = "dense") -> GraphOracle:
    """``pack_graphs`` of one edgeless one-node graph per row of ``nodes`` (validated CSR,
    no explicit zeros), labelled ``labels`` (n,), built from the whole matrix at once:
    every such graph gets the method ``plan_methods`` gives the first one."""
    n = nodes.shape[0]
    first = Graph(nodes[[0]], np.zeros((0, 2), np.int64), None)
    method, _ = plan_methods([first], n_states, inference, max_brute)
    # a one-node graph's order is itself, without parent (forest or not)
    plan = (np.repeat(method, n), np.zeros(n, np.intp), np.full(n, -1, np.intp),
            np.full(n, -1, np.intp), np.zeros(0, np.int8))
    efeat = sp.csr_array((0, 0)) if pairwise_mode == "edge_features" else None
    return _graph_oracle(nodes, np.ones(n, np.intp), np.zeros((0, 2), np.int64),
                         np.zeros(n, np.intp), efeat, np.asarray(labels, np.int32), plan,
                         n_states=n_states, n_features=nodes.shape[1], unary_mode=unary_mode,
                         pairwise_mode=pairwise_mode, n_edge_features=0,
                         edge_sym=np.zeros(0, np.int8), class_weight=class_weight,
                         max_iter=max_iter, damping=damping, max_brute=max_brute,
                         blocks=blocks)


def _graph_oracle(nodes: sp.csr_array, sizes, edges: np.ndarray, counts,
                  efeat: sp.csr_array | None, labels: np.ndarray, plan: tuple, *,
                  n_states: int, n_features: int, unary_mode: str, pairwise_mode: str,
                  n_edge_features: int, edge_sym: np.ndarray, class_weight: np.ndarray,
                  max_iter: int, damping: float, max_brute: int, blocks: str) -> GraphOracle:
    """The ``GraphOracle`` of concatenated graphs: node rows ``nodes`` (``sizes`` a graph),
    ``edges`` (``counts`` a graph, node indices local to their graph), edge features
    ``efeat`` (None without edge-feature pairwise terms) and ``plan`` = (method codes,
    forest order, parent, parent edge, flip) concatenated over the graphs."""
    U = n_states if unary_mode == "onehot" else 1
    P = pairwise_size(pairwise_mode, n_states, n_edge_features)
    node_ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.intp)
    edge_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.intp)
    if efeat is not None:
        erow_ptr, ecol, evals = efeat.indptr, efeat.indices, efeat.data
    else:
        erow_ptr, ecol, evals = np.zeros(len(edges) + 1), np.zeros(0), np.zeros(0)
    method, order, parent, pedge, flip = plan
    return GraphOracle(
        n_states, n_features, unary_mode, pairwise_mode, n_edge_features, edge_sym, node_ptr,
        nodes.indptr, nodes.indices, nodes.data, edge_ptr, edges[:, 0], edges[:, 1], erow_ptr,
        ecol, evals, labels, class_weight, method, order, parent, pedge, flip, max_iter,
        damping, max_brute,
        block_storage(blocks, sizes, counts, node_coords=U, pair_coords=P,
                      n_features=n_features * U + P))


def check_count(name: str, value, minimum: int = 1) -> int | None:
    """``value`` as an int >= ``minimum`` (None stays None); ``ValueError`` naming ``name``."""
    if value is None:
        return None
    if isinstance(value, bool) or int(value) != value or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)
