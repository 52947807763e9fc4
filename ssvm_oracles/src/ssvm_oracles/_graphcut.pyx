"""Graph-cut max oracle (binary Potts labelling of superpixel graphs) without the GIL.

Model and loss are documented in ``ssvm_oracles.graphcut.GraphCutModel``.  One
call of the oracle on image i:

1. unary scores u_p = <w_U, x_p> from the CSR rows of the unary features
   (O(nnz)) and edge capacities c_e = <w_P, x_e> >= 0 (O(n_edges n_pairwise));
2. an exact s-t minimum cut of the energy
   sum_p D_p [y_p = 1] + sum_e c_e [y_p != y_q], D_p = -2 u_p + omega_p (2 y*_p - 1),
   which is minus the loss-augmented score up to a constant, by Dinic's
   max-flow algorithm (BFS level graph, blocking flow by an iterative DFS with
   current-arc pointers).  Node p gets one terminal arc: source -> p of
   capacity D_p when D_p >= 0 (cut when y_p = 1, the sink side), else p -> sink
   of capacity -D_p (cut when y_p = 0).  Each undirected edge is one pair of
   opposite arcs of capacity c_e.  After the last phase the nodes reachable
   from the source in the residual graph take label 0, the others label 1;
   by max-flow = min-cut that labelling has the minimum energy;
3. psi_i(y) = phi(x_i, y*) - phi(x_i, y) as sparse entries (the CSR rows of
   the nodes whose label differs, times +-2, then the n_pairwise pairwise
   entries when some edge changed its cut status), the class-balanced loss,
   and the score L - <w, psi> from the potentials.

The max-flow works in floating point without tolerances: an augmentation
subtracts the bottleneck from the arcs of the path, so the bottleneck arc
drops to exactly 0 and every phase terminates; the final cut is optimal up to
rounding of the capacities.  Negative pairwise weights make the energy
non-submodular: ``solve`` then raises ``NonSubmodularError``.
"""

cimport cython
from libc.stdlib cimport free, malloc

import numpy as np

from ssvm_core._typedefs cimport float64_t, int32_t, intp_t
from ssvm_core._oracle cimport Corner, MaxOracle


cdef int _min_cut(intp_t n, intp_t m, const float64_t* D, const float64_t* c,
                  const int32_t* head, const int32_t* tail, int32_t* labels) except -1 nogil:
    """labels = argmin_y sum_p D_p [y_p = 1] + sum_e c_e [y_head != y_tail], c >= 0.

    Nodes 0..n-1, source n, sink n + 1.  Arc pairs (2k, 2k + 1) are each other's
    reverse: pairs 0..m-1 are the edges, pairs m..m+n-1 the terminal arcs.
    """
    cdef intp_t V = n + 2, A = 2 * (m + n), s = n, t = n + 1
    cdef intp_t e, p, v, a, k, depth, first, q_head, q_tail
    cdef float64_t b
    cdef float64_t* cap = <float64_t*> malloc(A * sizeof(float64_t))
    cdef intp_t* mem = <intp_t*> malloc((3 * A + 5 * V + 1) * sizeof(intp_t))
    if cap == NULL or mem == NULL:
        free(cap)
        free(mem)
        with gil:
            raise MemoryError("max-flow workspace")
    cdef intp_t* to = mem               # A: target node of each arc
    cdef intp_t* adj = to + A           # A: arcs leaving each node, CSR with adj_ptr
    cdef intp_t* adj_ptr = adj + A      # V + 1
    cdef intp_t* level = adj_ptr + V + 1
    cdef intp_t* cur = level + V        # current arc of each node (an index into adj)
    cdef intp_t* queue = cur + V
    cdef intp_t* path = queue + V       # arcs of the current path (at most V - 1)
    cdef intp_t* fill = path + V
    for e in range(m):
        to[2 * e] = tail[e]
        to[2 * e + 1] = head[e]
        cap[2 * e] = c[e]
        cap[2 * e + 1] = c[e]
    for p in range(n):
        a = 2 * (m + p)
        if D[p] >= 0.0:                 # source -> p, cut when y_p = 1
            to[a] = p
            to[a + 1] = s
            cap[a] = D[p]
        else:                           # p -> sink, cut when y_p = 0
            to[a] = t
            to[a + 1] = p
            cap[a] = -D[p]
        cap[a + 1] = 0.0
    # CSR adjacency by counting sort on the tail of each arc (= target of its reverse).
    for v in range(V + 1):
        adj_ptr[v] = 0
    for a in range(A):
        adj_ptr[to[a ^ 1] + 1] += 1
    for v in range(V):
        adj_ptr[v + 1] += adj_ptr[v]
        fill[v] = adj_ptr[v]
    for a in range(A):
        v = to[a ^ 1]
        adj[fill[v]] = a
        fill[v] += 1
    while True:
        # BFS levels from the source over arcs with residual capacity.
        for v in range(V):
            level[v] = -1
        level[s] = 0
        queue[0] = s
        q_head, q_tail = 0, 1
        while q_head < q_tail:
            v = queue[q_head]
            q_head += 1
            if level[t] >= 0 and level[v] >= level[t] - 1:
                break                             # deeper nodes are on no shortest path
            for k in range(adj_ptr[v], adj_ptr[v + 1]):
                a = adj[k]
                if cap[a] > 0.0 and level[to[a]] < 0:
                    level[to[a]] = level[v] + 1
                    queue[q_tail] = to[a]
                    q_tail += 1
        if level[t] < 0:
            break
        # Blocking flow on the level graph.
        for v in range(V):
            cur[v] = adj_ptr[v]
        v, depth = s, 0
        while True:
            if v == t:
                b = cap[path[0]]
                for k in range(1, depth):
                    if cap[path[k]] < b:
                        b = cap[path[k]]
                first = -1
                for k in range(depth):
                    a = path[k]
                    cap[a] -= b
                    cap[a ^ 1] += b
                    if first < 0 and cap[a] == 0.0:
                        first = k
                depth = first                     # resume before the first saturated arc
                v = to[path[depth] ^ 1]
                continue
            while cur[v] < adj_ptr[v + 1]:
                a = adj[cur[v]]
                if cap[a] > 0.0 and level[to[a]] == level[v] + 1:
                    break
                cur[v] += 1
            if cur[v] < adj_ptr[v + 1]:
                path[depth] = a
                depth += 1
                v = to[a]
            elif v == s:
                break
            else:                                 # dead end: retreat and never come back
                level[v] = -1
                depth -= 1
                v = to[path[depth] ^ 1]
                cur[v] += 1
    for p in range(n):
        labels[p] = 0 if level[p] >= 0 else 1
    free(cap)
    free(mem)
    return 0


def min_cut(const float64_t[::1] unary_cost, const float64_t[::1] capacity,
            const int32_t[::1] head, const int32_t[::1] tail):
    """argmin_y sum_p unary_cost[p] [y_p = 1] + sum_e capacity[e] [y_head != y_tail].

    ``capacity`` must be >= 0 (not checked here; the oracle checks its weights).
    Returns the int32 0/1 labelling; ties go to label 1.
    """
    cdef intp_t n = unary_cost.shape[0], m = capacity.shape[0]
    if head.shape[0] != m or tail.shape[0] != m:
        raise ValueError(f"{m} capacities but {head.shape[0]} heads and {tail.shape[0]} tails")
    out = np.zeros(n, dtype=np.int32)
    cdef int32_t[::1] o = out
    if n == 0:
        return out
    with nogil:
        _min_cut(n, m, &unary_cost[0], &capacity[0] if m else NULL,
                 &head[0] if m else NULL, &tail[0] if m else NULL, &o[0])
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

    cdef float64_t _write(self, intp_t i, const int32_t* y, Corner* out) noexcept nogil:
        """Labels, sparse psi = phi(y*) - phi(y) and the loss of labelling y; returns L."""
        cdef intp_t p0 = self.node_ptr[i], n = self.node_ptr[i + 1] - p0
        cdef intp_t e0 = self.edge_ptr[i], m = self.edge_ptr[i + 1] - e0
        cdef const int32_t* truth = &self.labels[p0]
        cdef const int32_t* head = &self.head[e0]
        cdef const int32_t* tail = &self.tail[e0]
        cdef intp_t p, e, k, nnz = 0
        cdef float64_t coef, diff, loss = 0.0
        cdef float64_t* pw
        cdef const float64_t* x
        cdef bint changed = False
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
        pw = out.psi_val + nnz
        for e in range(m):
            diff = (y[head[e]] != y[tail[e]]) - <float64_t> (truth[head[e]] != truth[tail[e]])
            if diff == 0.0:
                continue
            if not changed:
                changed = True
                for k in range(self.n_pairwise):
                    out.psi_idx[nnz + k] = <int32_t> (self.n_unary + k)
                    pw[k] = 0.0
            x = &self.pairwise[e0 + e, 0]
            for k in range(self.n_pairwise):
                pw[k] += diff * x[k]
        if changed:
            nnz += self.n_pairwise
        out.n_labels = n
        out.psi_nnz = nnz
        out.loss = loss
        return loss

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
                s = 0.0
                for k in range(self.row_ptr[p0 + p], self.row_ptr[p0 + p + 1]):
                    s += w[self.col[k]] * self.val[k]
                u[p] = s
                D[p] = -2.0 * s + self.omega[p0 + p] * (2 * truth[p] - 1)
            for e in range(m):
                x = &self.pairwise[e0 + e, 0]
                s = 0.0
                for k in range(n_active):
                    s += w_pair[active[k]] * x[active[k]]
                c[e] = s
            _min_cut(n, m, D, c, head, tail, out.labels)
            # <w, psi> = sum_p 2 (y*_p - y_p) u_p - sum_e c_e ([y* cut] - [y cut])
            for p in range(n):
                wpsi += 2.0 * (truth[p] - out.labels[p]) * u[p]
            for e in range(m):
                wpsi -= c[e] * ((truth[head[e]] != truth[tail[e]])
                                - <float64_t> (out.labels[head[e]] != out.labels[tail[e]]))
            out.score = self._write(i, out.labels, out) - wpsi
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
