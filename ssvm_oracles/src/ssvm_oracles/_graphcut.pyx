"""Graph-cut max oracle (binary Potts labelling of superpixel graphs) without the GIL.

Model and loss are documented in ``ssvm_oracles.graphcut.GraphCutModel``.  One
call of the oracle on image i:

1. unary scores u_p = <w_U, x_p> from the CSR rows of the unary features
   (O(nnz)) and edge capacities c_e = <w_P, x_e> >= 0 from the transposed
   pairwise features, reading only the rows of nonzero pairwise weights;
2. an exact s-t minimum cut of the energy
   sum_p D_p [y_p = 1] + sum_e c_e [y_p != y_q], D_p = -2 u_p + omega_p (2 y*_p - 1),
   which is minus the loss-augmented score up to a constant, by the
   Boykov-Kolmogorov max-flow algorithm (two search trees, augmentation,
   adoption of orphans; Boykov & Kolmogorov, IEEE TPAMI 2004), after pushing
   flow along every path source -> p -> q -> sink.  Node p has one terminal
   arc: source -> p of capacity D_p when D_p > 0 (cut when y_p = 1, the sink
   side), else p -> sink of capacity -D_p (cut when y_p = 0).  Each
   undirected edge is one pair of opposite arcs of capacity c_e.  At the end
   the nodes reachable from the source in the residual graph take label 0, the
   others label 1; by max-flow = min-cut that labelling has the minimum energy;
3. psi_i(y) = phi(x_i, y*) - phi(x_i, y) as sparse entries (the CSR rows of
   the nodes whose label differs, times +-2, then the n_pairwise pairwise
   entries when some edge changed its cut status), the class-balanced loss,
   and the score L - <w, psi> from the potentials.

The max-flow works in floating point without tolerances: an augmentation
subtracts the bottleneck from the arcs of the path, so the bottleneck arc
drops to exactly 0; the final cut is optimal up to rounding of the
capacities.  Negative pairwise weights make the energy non-submodular:
``solve`` then raises ``NonSubmodularError``.  Workspaces are allocated per
call, so concurrent calls from several threads are safe.
"""

cimport cython
from libc.stdlib cimport free, malloc

import numpy as np

from ssvm_core._typedefs cimport float64_t, int32_t, intp_t
from ssvm_core._oracle cimport Corner, MaxOracle


cdef extern from *:
    """
    /* Ask for nbytes from p in cache lines of 64 bytes, without waiting for them. */
    static inline void ssvm_prefetch(const void* p, Py_ssize_t nbytes) {
    #if defined(__GNUC__)
        const char* c = (const char*) p;
        for (Py_ssize_t k = 0; k < nbytes; k += 64) __builtin_prefetch(c + k);
    #endif
    }
    """
    void ssvm_prefetch(const void* p, intp_t nbytes) nogil


cdef inline float64_t _csr_dot(const float64_t* w, const int32_t* idx, const float64_t* val,
                               intp_t nnz) noexcept nogil:
    """sum_k w[idx[k]] val[k], with four partial sums (the add latency bounds one sum)."""
    cdef intp_t k, n4 = nnz - nnz % 4
    cdef float64_t s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    for k in range(0, n4, 4):
        s0 += w[idx[k]] * val[k]
        s1 += w[idx[k + 1]] * val[k + 1]
        s2 += w[idx[k + 2]] * val[k + 2]
        s3 += w[idx[k + 3]] * val[k + 3]
    for k in range(n4, nnz):
        s0 += w[idx[k]] * val[k]
    return (s0 + s1) + (s2 + s3)


cdef enum:
    _FREE = 0
    _SOURCE_TREE = 1
    _SINK_TREE = 2
    _TERMINAL = -1       # parent "arc" of a tree root: its terminal arc
    _ORPHAN = -2         # parent of a node that lost its path to the terminal


cdef inline intp_t _wrap(intp_t k, intp_t n) noexcept nogil:
    """k mod n for 0 <= k < 2 n (the circular queue; avoids a division)."""
    return k - n if k >= n else k


cdef inline intp_t _parent_node(intp_t v, const intp_t* tree, const intp_t* parent,
                                const int32_t* to) noexcept nogil:
    """The parent of v: the tail of its parent arc (source tree) or its head (sink tree)."""
    return to[parent[v] ^ 1] if tree[v] == _SOURCE_TREE else to[parent[v]]


cdef inline bint _rooted(intp_t v, const intp_t* tree, const intp_t* parent,
                         const int32_t* to) noexcept nogil:
    """Whether the tree path from v reaches its terminal (no orphan on the way)."""
    while parent[v] != _TERMINAL:
        if parent[v] == _ORPHAN:
            return False
        v = _parent_node(v, tree, parent, to)
    return True


cdef inline float64_t _path_bottleneck(intp_t v, float64_t b, const intp_t* tree,
                                       const intp_t* parent, const int32_t* to,
                                       const float64_t* cap,
                                       const float64_t* term) noexcept nogil:
    """min(b, residuals on v's tree path, its terminal residual)."""
    while parent[v] != _TERMINAL:
        b = min(b, cap[parent[v]])
        v = _parent_node(v, tree, parent, to)
    return min(b, term[v])


cdef inline void _push_to_terminal(intp_t v, float64_t b, const intp_t* tree,
                                   intp_t* parent, const int32_t* to, float64_t* cap,
                                   float64_t* term, intp_t* orphans,
                                   intp_t* n_orphans) noexcept nogil:
    """Push b along v's tree path and terminal arc; a saturated arc orphans its child."""
    cdef intp_t a, v_next
    while parent[v] != _TERMINAL:
        a = parent[v]
        cap[a] -= b
        cap[a ^ 1] += b
        v_next = to[a ^ 1] if tree[v] == _SOURCE_TREE else to[a]
        if cap[a] == 0.0:
            parent[v] = _ORPHAN
            orphans[n_orphans[0]] = v
            n_orphans[0] += 1
        v = v_next
    term[v] -= b
    if term[v] == 0.0:
        parent[v] = _ORPHAN
        orphans[n_orphans[0]] = v
        n_orphans[0] += 1


cdef int _min_cut(intp_t n, intp_t m, const float64_t* D, const float64_t* c,
                  const int32_t* arc_to, const int32_t* node_arcs, const intp_t* arc_ptr,
                  int32_t* labels) except -1 nogil:
    """labels = argmin_y sum_p D_p [y_p = 1] + sum_e c_e [y_head != y_tail], c >= 0.

    Boykov-Kolmogorov max-flow.  Arcs 2e (head -> tail) and 2e + 1 (tail -> head)
    of edge e are each other's reverse, both of capacity c_e; node p has the
    terminal residuals rs[p] = max(D_p, 0) (source -> p) and rt[p] = max(-D_p, 0)
    (p -> sink).  Two search trees grow from the terminals over residual arcs
    (``parent[v]``: the arc into v for the source tree, out of v for the sink
    tree); a source-tree node meeting a sink-tree node gives an augmenting path,
    whose saturated arcs orphan their subtrees; orphans are re-attached to a
    rooted neighbour or freed.  At the end the source tree is the set of nodes
    reachable from the source in the residual graph: label 0, the others 1.

    The graph comes from :func:`arc_lists`: ``arc_to[a]`` is the node arc a
    points to, and the arcs leaving node p are ``node_arcs[arc_ptr[p]:arc_ptr[p + 1]]``.
    """
    cdef intp_t A = 2 * m, e, p, q, v, a, k, mid, q_head = 0, q_len = 0, n_orphans = 0
    cdef float64_t b
    cdef bint found
    cdef float64_t* mem = <float64_t*> malloc((A + 2 * n) * sizeof(float64_t))
    cdef intp_t* imem = <intp_t*> malloc(5 * n * sizeof(intp_t))
    if mem == NULL or imem == NULL:
        free(mem)
        free(imem)
        with gil:
            raise MemoryError("max-flow workspace")
    cdef float64_t* cap = mem
    cdef float64_t* rs = cap + A
    cdef float64_t* rt = rs + n
    cdef const int32_t* to = arc_to
    cdef const int32_t* adj = node_arcs
    cdef const intp_t* adj_ptr = arc_ptr
    cdef intp_t* tree = imem
    cdef intp_t* parent = tree + n
    cdef intp_t* queue = parent + n     # active nodes, circular FIFO
    cdef intp_t* queued = queue + n
    cdef intp_t* orphans = queued + n
    for e in range(m):
        cap[2 * e] = c[e]
        cap[2 * e + 1] = c[e]
    for p in range(n):
        rs[p] = D[p] if D[p] > 0.0 else 0.0
        rt[p] = -D[p] if D[p] < 0.0 else 0.0
    # Push along every path source -> p -> q -> sink first, without branches (the
    # branches of graph searches are unpredictable): b = 0 leaves everything unchanged.
    for a in range(A):
        p = to[a ^ 1]
        q = to[a]
        b = min(rs[p], cap[a], rt[q])
        rs[p] -= b
        rt[q] -= b
        cap[a] -= b
        cap[a ^ 1] += b
    for p in range(n):                  # rs[p] > 0 and rt[p] > 0 exclude each other
        tree[p] = (rs[p] > 0.0) * _SOURCE_TREE + (rt[p] > 0.0) * _SINK_TREE
        parent[p] = _TERMINAL
        queued[p] = tree[p] != _FREE
        queue[q_len] = p
        q_len += queued[p]
    while True:
        # Growth: scan active nodes until a source-tree node touches a sink-tree node.
        found = False
        while q_len > 0:
            p = queue[q_head]
            if tree[p] != _FREE:
                for k in range(adj_ptr[p], adj_ptr[p + 1]):
                    a = adj[k]
                    if (cap[a] if tree[p] == _SOURCE_TREE else cap[a ^ 1]) <= 0.0:
                        continue
                    q = to[a]
                    if tree[q] == _FREE:
                        tree[q] = tree[p]
                        parent[q] = a if tree[p] == _SOURCE_TREE else a ^ 1
                        if not queued[q]:
                            queued[q] = True
                            queue[_wrap(q_head + q_len, n)] = q
                            q_len += 1
                    elif tree[q] != tree[p]:
                        mid = a if tree[p] == _SOURCE_TREE else a ^ 1
                        found = True
                        break
            if found:
                break                       # p stays active: it may have more paths
            queued[p] = False
            q_head = _wrap(q_head + 1, n)
            q_len -= 1
        if not found:
            break
        # Augmentation: bottleneck of source -> ... -> mid -> ... -> sink, then push.
        b = _path_bottleneck(to[mid ^ 1], cap[mid], tree, parent, to, cap, rs)
        b = _path_bottleneck(to[mid], b, tree, parent, to, cap, rt)
        cap[mid] -= b
        cap[mid ^ 1] += b
        _push_to_terminal(to[mid ^ 1], b, tree, parent, to, cap, rs, orphans, &n_orphans)
        _push_to_terminal(to[mid], b, tree, parent, to, cap, rt, orphans, &n_orphans)
        # Adoption: re-attach each orphan to a rooted neighbour of its tree, or free it.
        while n_orphans > 0:
            n_orphans -= 1
            p = orphans[n_orphans]
            for k in range(adj_ptr[p], adj_ptr[p + 1]):
                a = adj[k]                  # p -> q; the tree arc would be q -> p (source)
                q = to[a]                   # or p -> q (sink)
                if (tree[q] == tree[p]
                        and (cap[a ^ 1] if tree[p] == _SOURCE_TREE else cap[a]) > 0.0
                        and _rooted(q, tree, parent, to)):
                    parent[p] = a ^ 1 if tree[p] == _SOURCE_TREE else a
                    break
            if parent[p] != _ORPHAN:
                continue
            for k in range(adj_ptr[p], adj_ptr[p + 1]):
                a = adj[k]
                q = to[a]
                if tree[q] != tree[p]:
                    continue
                if (cap[a ^ 1] if tree[p] == _SOURCE_TREE else cap[a]) > 0.0 and not queued[q]:
                    queued[q] = True        # q may grow into p again
                    queue[_wrap(q_head + q_len, n)] = q
                    q_len += 1
                if parent[q] >= 0 and _parent_node(q, tree, parent, to) == p:
                    parent[q] = _ORPHAN
                    orphans[n_orphans] = q
                    n_orphans += 1
            tree[p] = _FREE
    for p in range(n):
        labels[p] = 0 if tree[p] == _SOURCE_TREE else 1
    free(mem)
    free(imem)
    return 0


def arc_lists(head, tail, node_ptr, edge_ptr):
    """The directed arcs of graphs packed one after the other, grouped by their tail.

    Edge e of image i (local endpoints ``head[e]``, ``tail[e]``) gives the arcs
    2 e' (head -> tail) and 2 e' + 1 (tail -> head), with e' = e - edge_ptr[i]
    the edge's index inside its image.  Returns ``arc_to`` (2 edges,) int32,
    the local node each arc points to (arcs in global order), ``node_arcs``
    (2 edges,) int32 local arc indices grouped by global tail node, and
    ``arc_ptr`` (nodes + 1,) intp: the arcs leaving global node p are
    ``node_arcs[arc_ptr[p]:arc_ptr[p + 1]]``.
    """
    head, tail = np.asarray(head, np.int64), np.asarray(tail, np.int64)
    node_ptr, edge_ptr = np.asarray(node_ptr, np.int64), np.asarray(edge_ptr, np.int64)
    image = np.repeat(np.arange(len(edge_ptr) - 1), np.diff(edge_ptr))
    arc_to = np.empty(2 * len(head), np.int32)
    arc_to[0::2], arc_to[1::2] = tail, head
    arc_tail = np.empty(2 * len(head), np.int64)
    arc_tail[0::2], arc_tail[1::2] = head, tail
    arc_tail += np.repeat(node_ptr[image], 2)
    order = np.argsort(arc_tail, kind="stable")
    node_arcs = (order - 2 * np.repeat(edge_ptr[image], 2)[order]).astype(np.int32)
    arc_ptr = np.searchsorted(arc_tail[order], np.arange(node_ptr[-1] + 1)).astype(np.intp)
    return arc_to, node_arcs, arc_ptr


def min_cut(const float64_t[::1] unary_cost, const float64_t[::1] capacity, head, tail):
    """argmin_y sum_p unary_cost[p] [y_p = 1] + sum_e capacity[e] [y_head != y_tail].

    ``capacity`` must be >= 0 (not checked here; the oracle checks its weights).
    Returns the int32 0/1 labelling; ties go to label 1.
    """
    cdef intp_t n = unary_cost.shape[0], m = capacity.shape[0]
    if len(head) != m or len(tail) != m:
        raise ValueError(f"{m} capacities but {len(head)} heads and {len(tail)} tails")
    out = np.zeros(n, dtype=np.int32)
    cdef int32_t[::1] o = out
    if n == 0:
        return out
    arcs = arc_lists(head, tail, [0, n], [0, m])
    cdef const int32_t[::1] arc_to = arcs[0] if m else np.zeros(1, np.int32)
    cdef const int32_t[::1] node_arcs = arcs[1] if m else np.zeros(1, np.int32)
    cdef const intp_t[::1] arc_ptr = arcs[2]
    with nogil:
        _min_cut(n, m, &unary_cost[0], &capacity[0] if m else NULL, &arc_to[0],
                 &node_arcs[0], &arc_ptr[0], &o[0])
    return out


cdef int _raise_nonsubmodular(intp_t k, float64_t value) except -1 nogil:
    with gil:
        from ssvm_oracles.graphcut import NonSubmodularError, _nonsubmodular_message
        raise NonSubmodularError(_nonsubmodular_message(k, value))


@cython.final
cdef class GraphCutOracle(MaxOracle):
    """Exact loss-augmented min-cut oracle of ``GraphCutModel`` for n bound images.

    Built by ``GraphCutModel.bind``.  Arrays, over the images concatenated:
    ``node_ptr`` (n + 1) node offsets; ``row_ptr`` (nodes + 1), ``col`` and
    ``val``: the unary features of every node as CSR rows; ``edge_ptr``
    (n + 1) edge offsets; ``head``, ``tail`` (edges,) endpoints, local to
    the image; ``pairwise`` (edges, n_pairwise) features >= 0; ``labels``
    (nodes,) the 0/1 ground truth; ``omega`` (nodes,) the loss weight of each
    node.  psi is sparse: at most the image's unary nonzeros plus n_pairwise
    entries.
    """
    cdef readonly intp_t n_unary, n_pairwise
    cdef readonly intp_t[::1] node_ptr, row_ptr, edge_ptr
    cdef readonly int32_t[::1] col, head, tail, labels
    cdef readonly float64_t[::1] val, omega
    cdef readonly float64_t[:, ::1] pairwise
    cdef float64_t[:, ::1] pairwise_t     # (n_pairwise, edges): capacities read active rows
    cdef int32_t[::1] arc_to, node_arcs   # the max-flow graphs (arc_lists)
    cdef intp_t[::1] arc_ptr

    def __init__(self, intp_t n_unary, node_ptr, row_ptr, col, val, edge_ptr, head, tail,
                 pairwise, labels, omega):
        node_ptr, edge_ptr = np.asarray(node_ptr), np.asarray(edge_ptr)
        n_nodes, n_edges = int(node_ptr[-1]), int(edge_ptr[-1])
        if (len(node_ptr) != len(edge_ptr) or len(node_ptr) < 2 or len(row_ptr) != n_nodes + 1
                or len(labels) != n_nodes or len(omega) != n_nodes
                or len(head) != n_edges or len(tail) != n_edges
                or np.asarray(pairwise).shape[0] != n_edges or len(col) != len(val)
                or len(col) != row_ptr[-1]):
            raise ValueError("inconsistent packed graph-cut arrays")
        self.n_unary = n_unary
        self.n_pairwise = np.asarray(pairwise).shape[1]
        self.node_ptr = node_ptr
        self.row_ptr = row_ptr
        self.edge_ptr = edge_ptr
        # keep &x[0] valid for empty arrays
        self.col = col if len(col) else np.zeros(1, np.int32)
        self.val = val if len(val) else np.zeros(1)
        self.head = head if len(head) else np.zeros(1, np.int32)
        self.tail = tail if len(tail) else np.zeros(1, np.int32)
        self.pairwise = pairwise if len(pairwise) else np.zeros((1, self.n_pairwise))
        self.labels = labels
        self.omega = omega
        self.pairwise_t = np.ascontiguousarray(np.asarray(self.pairwise).T)
        arc_to, node_arcs, self.arc_ptr = arc_lists(head, tail, node_ptr, edge_ptr)
        self.arc_to = arc_to if len(arc_to) else np.zeros(1, np.int32)
        self.node_arcs = node_arcs if len(node_arcs) else np.zeros(1, np.int32)
        self.n_blocks = len(node_ptr) - 1
        self.n_features = self.n_unary + self.n_pairwise
        self.max_labels = int(np.diff(node_ptr).max())
        nnz = np.asarray(row_ptr)[node_ptr[1:]] - np.asarray(row_ptr)[node_ptr[:-1]]
        self.max_psi_nnz = int(nnz.max()) + self.n_pairwise
        self.dense_psi = False
        self.needs_gil = False

    def __reduce__(self):
        return (GraphCutOracle, (self.n_unary, np.asarray(self.node_ptr),
                                 np.asarray(self.row_ptr),
                                 np.asarray(self.col)[:self.row_ptr[-1]],
                                 np.asarray(self.val)[:self.row_ptr[-1]],
                                 np.asarray(self.edge_ptr),
                                 np.asarray(self.head)[:self.edge_ptr[-1]],
                                 np.asarray(self.tail)[:self.edge_ptr[-1]],
                                 np.asarray(self.pairwise)[:self.edge_ptr[-1]],
                                 np.asarray(self.labels), np.asarray(self.omega)))

    cdef int _write(self, intp_t i, const int32_t* y, Corner* out) except -1 nogil:
        """Labels, sparse psi = phi(y*) - phi(y) and the loss of labelling y."""
        cdef intp_t p0 = self.node_ptr[i], n = self.node_ptr[i + 1] - p0
        cdef intp_t e0 = self.edge_ptr[i], m = self.edge_ptr[i + 1] - e0
        cdef const int32_t* truth = &self.labels[p0]
        cdef const int32_t* head = &self.head[e0]
        cdef const int32_t* tail = &self.tail[e0]
        cdef intp_t p, e, j, k, nnz = 0, n_changed = 0
        cdef float64_t coef, diff, loss = 0.0
        cdef float64_t* pw
        cdef const float64_t* x
        cdef intp_t* changed = <intp_t*> malloc((m + 1) * sizeof(intp_t))
        if changed == NULL:
            with gil:
                raise MemoryError("graph-cut psi")
        # The edges whose cut status changed, listed without branches; start loading
        # their feature rows.
        for e in range(m):
            changed[n_changed] = e
            n_changed += (y[head[e]] != y[tail[e]]) != (truth[head[e]] != truth[tail[e]])
        for j in range(n_changed):
            ssvm_prefetch(&self.pairwise[e0 + changed[j], 0], self.n_pairwise * sizeof(float64_t))
        for p in range(n):
            out.labels[p] = y[p]
            if y[p] == truth[p]:
                continue
            loss += self.omega[p0 + p]
            coef = 2.0 * (truth[p] - y[p])
            for k in range(self.row_ptr[p0 + p], self.row_ptr[p0 + p + 1]):
                out.psi_idx[nnz] = self.col[k]
                out.psi_val[nnz] = coef * self.val[k]
                nnz += 1
        if n_changed:
            pw = out.psi_val + nnz
            for k in range(self.n_pairwise):
                out.psi_idx[nnz + k] = <int32_t> (self.n_unary + k)
                pw[k] = 0.0
            for j in range(n_changed):
                e = changed[j]
                diff = (y[head[e]] != y[tail[e]]) - <float64_t> (truth[head[e]] != truth[tail[e]])
                x = &self.pairwise[e0 + e, 0]
                for k in range(self.n_pairwise):
                    pw[k] += diff * x[k]
            nnz += self.n_pairwise
        free(changed)
        out.n_labels = n
        out.psi_nnz = nnz
        out.loss = loss
        return 0

    cdef int solve(self, intp_t i, const float64_t* w, Corner* out) except -1 nogil:
        cdef intp_t p0 = self.node_ptr[i], n = self.node_ptr[i + 1] - p0
        cdef intp_t e0 = self.edge_ptr[i], m = self.edge_ptr[i + 1] - e0
        cdef const int32_t* truth = &self.labels[p0]
        cdef const int32_t* head = &self.head[e0]
        cdef const int32_t* tail = &self.tail[e0]
        cdef const float64_t* w_pair = w + self.n_unary
        cdef intp_t p, e, k, n_active = 0
        cdef float64_t s, wpsi = 0.0
        cdef const float64_t* x
        for k in range(self.n_pairwise):
            if w_pair[k] < 0.0:
                _raise_nonsubmodular(k, w_pair[k])
        # The max-flow walks the arc lists in random order: start loading them now.
        ssvm_prefetch(&self.arc_ptr[p0], (n + 1) * sizeof(intp_t))
        if m:
            ssvm_prefetch(&self.arc_to[2 * e0], 2 * m * sizeof(int32_t))
            ssvm_prefetch(&self.node_arcs[2 * e0], 2 * m * sizeof(int32_t))
        cdef float64_t* mem = <float64_t*> malloc((2 * n + m) * sizeof(float64_t))
        cdef intp_t* active = <intp_t*> malloc((self.n_pairwise + 1) * sizeof(intp_t))
        if mem == NULL or active == NULL:
            free(mem)
            free(active)
            with gil:
                raise MemoryError("graph-cut potentials")
        cdef float64_t* u = mem
        cdef float64_t* D = mem + n
        cdef float64_t* c = mem + 2 * n
        for k in range(self.n_pairwise):      # pairwise weights at the box bound 0 cost nothing
            if w_pair[k] != 0.0:
                active[n_active] = k
                n_active += 1
        try:
            for p in range(n):
                k = self.row_ptr[p0 + p]
                s = _csr_dot(w, &self.col[k], &self.val[k], self.row_ptr[p0 + p + 1] - k)
                u[p] = s
                D[p] = -2.0 * s + self.omega[p0 + p] * (2 * truth[p] - 1)
            for e in range(m):
                c[e] = 0.0
            for k in range(n_active if m else 0):   # transposed features: contiguous rows
                s = w_pair[active[k]]
                x = &self.pairwise_t[active[k], e0]
                for e in range(m):
                    c[e] += s * x[e]
            _min_cut(n, m, D, c, &self.arc_to[2 * e0 if m else 0], &self.node_arcs[0],
                     &self.arc_ptr[p0], out.labels)
            # <w, psi> = sum_p 2 (y*_p - y_p) u_p - sum_e c_e ([y* cut] - [y cut])
            for p in range(n):
                wpsi += 2.0 * (truth[p] - out.labels[p]) * u[p]
            for e in range(m):
                wpsi -= c[e] * ((truth[head[e]] != truth[tail[e]])
                                - <float64_t> (out.labels[head[e]] != out.labels[tail[e]]))
            self._write(i, out.labels, out)
            out.score = out.loss - wpsi
        finally:
            free(mem)
            free(active)
        return 0

    cdef int evaluate(self, intp_t i, const int32_t* labels, intp_t n_labels,
                      const float64_t* w, Corner* out) except -1 nogil:
        cdef intp_t n = self.node_ptr[i + 1] - self.node_ptr[i], p, k
        cdef float64_t dot = 0.0
        if n_labels != n:
            with gil:
                raise ValueError(f"block {i} needs a 0/1 labelling of its {n} nodes, "
                                 f"got {n_labels} labels")
        for p in range(n):
            if labels[p] != 0 and labels[p] != 1:
                with gil:
                    raise ValueError(f"block {i} needs a 0/1 labelling of its {n} nodes, "
                                     f"got label {labels[p]} at node {p}")
        self._write(i, labels, out)
        for k in range(out.psi_nnz):
            dot += w[out.psi_idx[k]] * out.psi_val[k]
        out.score = out.loss - dot
        return 0
