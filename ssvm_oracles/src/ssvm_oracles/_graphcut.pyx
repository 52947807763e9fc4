"""Graph-cut max oracle (binary Potts labelling of superpixel graphs) without the GIL.

Model and loss are documented in ``ssvm_oracles.graphcut.GraphCutModel``.  One
call of the oracle on image i:

1. unary scores u_p = <w_U, x_p> from the CSR rows of the unary features
   (O(nnz)) and edge capacities c_e = <w_P, x_e> >= 0 over the nonzero
   pairwise weights (those at the box bound 0 cost nothing), which leaves the
   rows of the pairwise features in cache for the pairwise part of psi;
2. an exact s-t minimum cut of the energy
   sum_p D_p [y_p = 1] + sum_e c_e [y_p != y_q], D_p = -2 u_p + omega_p (2 y*_p - 1),
   which is minus the loss-augmented score up to a constant, by the
   Boykov-Kolmogorov max-flow of ``ssvm_oracles._maxflow``;
3. psi_i(y) = phi(x_i, y*) - phi(x_i, y) as sparse entries (the CSR rows of
   the nodes whose label differs, times +-2, then the n_pairwise pairwise
   entries when some edge changed its cut status), the class-balanced loss,
   and the score L - <w, psi> from the potentials.

Negative pairwise weights make the energy non-submodular:
``solve`` then raises ``NonSubmodularError``.  Workspaces are allocated per
call, so concurrent calls from several threads are safe.

Block storage (``storage="compact"``, the ``blocks`` option of
``GraphCutModel``): psi_i(y) = A_i q_i(y) with one coordinate per node, column
x_p^U in w_U and q_p = 2 (y*_p - y_p), then, in an image with edges, one per
pairwise weight, its own entry of w, with q = the pairwise part of psi.  A
block is kept in n + n_pairwise numbers instead of d, A_i^T w is the unary
scores u and w_P, and ||A_i e||^2 comes from the image's node Gram where it
costs no more than a dense block (``_graph.gram_entries``), else from the node
rows (``_node_coords``).
"""

cimport cython
from cython cimport floating
from libc.stdlib cimport free

import numpy as np

from ssvm_core._typedefs cimport float64_t, int32_t, intp_t
from ssvm_core._oracle cimport Corner, MaxOracle
from ssvm_core._vector cimport checked_malloc, dot_gather, ssvm_prefetch
from ssvm_oracles._labels cimport check_labelling
from ssvm_oracles._maxflow cimport min_cut_arcs
from ssvm_oracles._node_coords cimport gram_sqnorm, rows_sqnorm

from ssvm_oracles._graph import node_grams
from ssvm_oracles._maxflow import arc_lists


cdef void _unary_scores(const float64_t* w, const intp_t* row_ptr, const int32_t* col,
                        const floating* val, intp_t n, float64_t* u) noexcept nogil:
    """u[p] = <w, x_p> for the n CSR rows starting at row_ptr (global offsets)."""
    cdef intp_t p
    for p in range(n):
        u[p] = dot_gather(w, col + row_ptr[p], val + row_ptr[p], row_ptr[p + 1] - row_ptr[p])


cdef void _capacities(const float64_t* w_active, const intp_t* active, intp_t n_active,
                      const floating* pairwise, intp_t m, intp_t n_pairwise,
                      float64_t* c) noexcept nogil:
    """c[e] = sum_j w_active[j] x_e[active[j]]: <w_P, x_e> over the nonzero weights.

    Reads the m rows of pairwise, which leaves them in cache for psi.
    """
    cdef intp_t e, j, n2 = n_active - n_active % 2
    cdef float64_t s0, s1
    cdef const floating* x
    for e in range(m):
        x = pairwise + e * n_pairwise
        s0 = s1 = 0.0
        for j in range(0, n2, 2):
            s0 += w_active[j] * x[active[j]]
            s1 += w_active[j + 1] * x[active[j + 1]]
        if n2 < n_active:
            s0 += w_active[n2] * x[active[n2]]
        c[e] = s0 + s1


cdef intp_t _unary_psi(const int32_t* y, const int32_t* truth, intp_t n, const intp_t* row_ptr,
                       const int32_t* col, const floating* val, int32_t* idx,
                       float64_t* out) noexcept nogil:
    """2 (y*_p - y_p) x_p for every node p whose label differs, as sparse entries; their count."""
    cdef intp_t p, k, nnz = 0
    cdef float64_t coef
    for p in range(n):
        if y[p] == truth[p]:
            continue
        coef = 2.0 * (truth[p] - y[p])
        for k in range(row_ptr[p], row_ptr[p + 1]):
            idx[nnz] = col[k]
            out[nnz] = coef * val[k]
            nnz += 1
    return nnz


cdef void _pairwise_psi(const intp_t* changed, const float64_t* diff, intp_t n_changed,
                        const floating* pairwise, intp_t n_pairwise, float64_t* out) noexcept nogil:
    """out = sum_j diff[j] x_{changed[j]}, the edge feature rows at pairwise + e n_pairwise."""
    cdef intp_t j, k
    cdef float64_t s
    cdef const floating* x
    for k in range(n_pairwise):
        out[k] = 0.0
    for j in range(n_changed):
        ssvm_prefetch(pairwise + changed[j] * n_pairwise, n_pairwise * sizeof(floating))
    for j in range(n_changed):
        s = diff[j]
        x = pairwise + changed[j] * n_pairwise
        for k in range(n_pairwise):
            out[k] += s * x[k]


cdef int _raise_nonsubmodular(intp_t k, float64_t value) except -1 nogil:
    with gil:
        from ssvm_oracles.exceptions import NonSubmodularError
        raise NonSubmodularError.for_weight(k, value)


def graphcut_weight_bounds(intp_t n_unary, intp_t n_pairwise):
    """Box ``(lower, upper)`` under which the graph-cut oracle is exact.

    ``lower`` is -inf on the n_unary unary weights and 0 on the n_pairwise
    pairwise ones (submodular energies); ``upper`` is +inf everywhere.
    """
    lower = np.full(n_unary + n_pairwise, -np.inf)
    lower[n_unary:] = 0.0
    return lower, np.full(n_unary + n_pairwise, np.inf)


@cython.final
cdef class GraphCutOracle(MaxOracle):
    """Exact loss-augmented min-cut oracle of ``GraphCutModel`` for n bound images.

    Built by ``GraphCutModel.bind``.  Arrays, over the images concatenated:
    ``node_ptr`` (n + 1) node offsets; ``row_ptr`` (nodes + 1), ``col`` and
    ``val``: the unary features of every node as CSR rows; ``edge_ptr``
    (n + 1) edge offsets; ``head``, ``tail`` (edges,) endpoints, local to
    the image; ``pairwise`` (edges, n_pairwise) features >= 0; ``labels``
    (nodes,) the 0/1 ground truth; ``omega`` (nodes,) the loss weight of each
    node.  ``val`` and ``pairwise`` are both float64 or both float32 (half the
    memory traffic of a call; every product and sum is still in float64).  psi
    is sparse: at most the image's unary nonzeros plus n_pairwise entries.
    ``storage`` ("dense" by default, or "compact") is the block storage offered
    to the solvers (see the module docstring).
    """
    cdef readonly intp_t n_unary, n_pairwise
    cdef readonly bint single             # features stored as float32
    cdef readonly intp_t[::1] node_ptr, row_ptr, edge_ptr
    cdef readonly int32_t[::1] col, head, tail, labels
    cdef readonly float64_t[::1] omega
    cdef float64_t[::1] val64
    cdef float[::1] val32
    cdef float64_t[:, ::1] pairwise64
    cdef float[:, ::1] pairwise32
    cdef int32_t[::1] arc_to, arc_rev, arc_edge   # the max-flow graphs (arc_lists)
    cdef intp_t[::1] arc_ptr
    cdef readonly str storage
    cdef const intp_t[::1] _gram_ptr              # compact blocks: node Grams (node_grams)
    cdef const float64_t[::1] _grams

    def __init__(self, intp_t n_unary, node_ptr, row_ptr, col, val, edge_ptr, head, tail,
                 pairwise, labels, omega, str storage="dense"):
        if storage not in ("dense", "compact"):
            raise ValueError(f"storage must be 'dense' or 'compact', got {storage!r}")
        self.storage = storage
        node_ptr, edge_ptr = np.asarray(node_ptr), np.asarray(edge_ptr)
        val, pairwise = np.asarray(val), np.asarray(pairwise)
        n_nodes, n_edges = int(node_ptr[-1]), int(edge_ptr[-1])
        if (len(node_ptr) != len(edge_ptr) or len(node_ptr) < 2 or len(row_ptr) != n_nodes + 1
                or len(labels) != n_nodes or len(omega) != n_nodes
                or len(head) != n_edges or len(tail) != n_edges
                or pairwise.ndim != 2 or pairwise.shape[0] != n_edges
                or len(col) != len(val) or len(col) != row_ptr[-1]):
            raise ValueError("inconsistent packed graph-cut arrays")
        if val.dtype != pairwise.dtype or val.dtype not in (np.float32, np.float64):
            raise ValueError(f"val and pairwise must be both float64 or both float32, got "
                             f"{val.dtype} and {pairwise.dtype}")
        self.n_unary = n_unary
        self.n_pairwise = pairwise.shape[1]
        self.single = val.dtype == np.float32
        self.node_ptr = node_ptr
        self.row_ptr = row_ptr
        self.edge_ptr = edge_ptr
        # keep &x[0] valid for empty arrays
        self.col = col if len(col) else np.zeros(1, np.int32)
        val = val if len(val) else np.zeros(1, val.dtype)
        self.head = head if len(head) else np.zeros(1, np.int32)
        self.tail = tail if len(tail) else np.zeros(1, np.int32)
        pairwise = pairwise if len(pairwise) else np.zeros((1, self.n_pairwise), pairwise.dtype)
        if self.single:
            self.val32, self.pairwise32 = val, pairwise
        else:
            self.val64, self.pairwise64 = val, pairwise
        self.labels = labels
        self.omega = omega
        arcs = arc_lists(head, tail, node_ptr, edge_ptr)
        self.arc_ptr = arcs[3]
        self.arc_to, self.arc_rev, self.arc_edge = [a if len(a) else np.zeros(1, np.int32)
                                                    for a in arcs[:3]]
        self.n_blocks = len(node_ptr) - 1
        self.n_features = self.n_unary + self.n_pairwise
        self.max_labels = int(np.diff(node_ptr).max())
        nnz = np.asarray(row_ptr)[node_ptr[1:]] - np.asarray(row_ptr)[node_ptr[:-1]]
        self.max_psi_nnz = int(nnz.max()) + self.n_pairwise
        self.dense_psi = False
        self.needs_gil = False
        if storage == "compact":
            self._gram_ptr, self._grams = node_grams(self.node_ptr, self.row_ptr, self.col,
                                                     val, n_unary, self.n_features)
            sizes, n_edges = np.diff(node_ptr), np.diff(edge_ptr)
            pair = np.where(n_edges > 0, self.n_pairwise, 0)
            self.max_coords = int(np.max(sizes + pair))
            self.max_coord_nnz = self.max_coords
            self.max_expand = max(int(np.max(nnz + pair)), 1)

    @property
    def val(self):
        """The unary feature values (CSR order), float64 or float32."""
        cdef intp_t nnz = self.row_ptr[self.row_ptr.shape[0] - 1]
        if self.single:
            return np.asarray(self.val32)[:nnz]
        return np.asarray(self.val64)[:nnz]

    @property
    def pairwise(self):
        """The (edges, n_pairwise) edge features, float64 or float32."""
        cdef intp_t n_edges = self.edge_ptr[self.n_blocks]
        if self.single:
            return np.asarray(self.pairwise32)[:n_edges]
        return np.asarray(self.pairwise64)[:n_edges]

    def weight_bounds(self):
        """Box ``(lower, upper)`` under which ``solve`` is exact (w_P >= 0, see
        ``graphcut_weight_bounds``); ``solve``'s default ``box="auto"`` trains in it."""
        return graphcut_weight_bounds(self.n_unary, self.n_pairwise)

    def __reduce__(self):
        cdef intp_t nnz = self.row_ptr[self.row_ptr.shape[0] - 1]
        cdef intp_t n_edges = self.edge_ptr[self.n_blocks]
        return (GraphCutOracle, (self.n_unary, np.asarray(self.node_ptr),
                                 np.asarray(self.row_ptr), np.asarray(self.col)[:nnz],
                                 self.val, np.asarray(self.edge_ptr),
                                 np.asarray(self.head)[:n_edges],
                                 np.asarray(self.tail)[:n_edges], self.pairwise,
                                 np.asarray(self.labels), np.asarray(self.omega),
                                 self.storage))

    @property
    def gram_nbytes(self) -> int:
        """Bytes of the node Grams kept for compact blocks (0 for dense storage)."""
        return 0 if self.storage != "compact" else int(np.asarray(self._grams).nbytes)

    cdef int _write(self, intp_t i, const int32_t* y, Corner* out, const float64_t* c=NULL,
                    float64_t* c_dot=NULL, bint solving=False) except -1 nogil:
        """Labels, sparse psi = phi(y*) - phi(y) and the loss of labelling y, with the
        coordinates q_i(y) when the caller asks for them (``solve`` then skips psi
        when only the coordinates are read; ``evaluate`` always writes it).

        With capacities c, also c_dot = sum_e c_e ([y cut e] - [y* cut e]).
        """
        cdef intp_t p0 = self.node_ptr[i], n = self.node_ptr[i + 1] - p0
        cdef intp_t e0 = self.edge_ptr[i], m = self.edge_ptr[i + 1] - e0
        cdef const int32_t* truth = &self.labels[p0]
        cdef const int32_t* head = &self.head[0] + e0   # e0 may be the end when m = 0
        cdef const int32_t* tail = &self.tail[0] + e0
        cdef intp_t p, e, k, nnz = 0, n_changed = 0, cnz = 0
        cdef float64_t loss = 0.0
        cdef bint coords = out.coord_idx != NULL
        cdef bint psi = not (solving and coords and out.coords_only)
        cdef float64_t* pair                        # where the pairwise part is summed
        # One allocation (8-byte items) holds both lists; freed at the end (nothing raises).
        cdef intp_t* changed = <intp_t*> checked_malloc(
            (m + 1) * (sizeof(intp_t) + sizeof(float64_t)), "graph-cut psi")
        cdef float64_t* diff = <float64_t*> (changed + m + 1)
        # The edges whose cut status changed, listed without branches.
        for e in range(m):
            changed[n_changed] = e
            diff[n_changed] = ((y[head[e]] != y[tail[e]])
                               - <float64_t> (truth[head[e]] != truth[tail[e]]))
            n_changed += diff[n_changed] != 0.0
        if c != NULL:
            c_dot[0] = 0.0
            for k in range(n_changed):
                c_dot[0] += c[changed[k]] * diff[k]
        for p in range(n):
            out.labels[p] = y[p]
            if y[p] != truth[p]:
                loss += self.omega[p0 + p]
                if coords:
                    out.coord_idx[cnz] = <int32_t> p
                    out.coord_val[cnz] = 2.0 * (truth[p] - y[p])
                    cnz += 1
        if psi:
            if self.single:
                nnz = _unary_psi(y, truth, n, &self.row_ptr[p0], &self.col[0], &self.val32[0],
                                 out.psi_idx, out.psi_val)
            else:
                nnz = _unary_psi(y, truth, n, &self.row_ptr[p0], &self.col[0], &self.val64[0],
                                 out.psi_idx, out.psi_val)
        if n_changed:
            pair = out.coord_val + cnz if coords else out.psi_val + nnz
            if self.single:
                _pairwise_psi(changed, diff, n_changed, &self.pairwise32[e0, 0],
                              self.n_pairwise, pair)
            else:
                _pairwise_psi(changed, diff, n_changed, &self.pairwise64[e0, 0],
                              self.n_pairwise, pair)
            for k in range(self.n_pairwise):
                if coords:
                    out.coord_idx[cnz + k] = <int32_t> (n + k)
                if psi:
                    out.psi_idx[nnz + k] = <int32_t> (self.n_unary + k)
                    out.psi_val[nnz + k] = pair[k]
            cnz += self.n_pairwise if coords else 0
            nnz += self.n_pairwise if psi else 0
        free(changed)
        out.n_labels = n
        if psi:
            out.psi_nnz = nnz
        if coords:
            out.coord_nnz = cnz
        out.loss = loss
        return 0

    cdef int solve(self, intp_t i, const float64_t* w, Corner* out) except -1 nogil:
        cdef intp_t p0 = self.node_ptr[i], n = self.node_ptr[i + 1] - p0
        cdef intp_t e0 = self.edge_ptr[i], m = self.edge_ptr[i + 1] - e0
        cdef const int32_t* truth = &self.labels[p0]
        cdef const float64_t* w_pair = w + self.n_unary
        cdef intp_t p, e, k
        cdef intp_t n_active = 0
        cdef float64_t wpsi = 0.0, c_dot
        for k in range(self.n_pairwise):
            if w_pair[k] < 0.0:
                _raise_nonsubmodular(k, w_pair[k])
        # The max-flow walks the arc lists in random order: start loading them now.
        ssvm_prefetch(&self.arc_ptr[p0], (n + 1) * sizeof(intp_t))
        if m:
            ssvm_prefetch(&self.arc_to[2 * e0], 2 * m * sizeof(int32_t))
            ssvm_prefetch(&self.arc_rev[2 * e0], 2 * m * sizeof(int32_t))
            ssvm_prefetch(&self.arc_edge[2 * e0], 2 * m * sizeof(int32_t))
        # One allocation (8-byte items): u, D, c, w_active, then the active indices.
        cdef intp_t n_float = 2 * n + m + self.n_pairwise
        cdef float64_t* mem = <float64_t*> checked_malloc(
            n_float * sizeof(float64_t) + (self.n_pairwise + 1) * sizeof(intp_t),
            "graph-cut potentials")
        cdef intp_t* active = <intp_t*> (mem + n_float)
        cdef float64_t* u = mem
        cdef float64_t* D = mem + n
        cdef float64_t* c = mem + 2 * n
        cdef float64_t* w_active = c + m
        for k in range(self.n_pairwise):      # pairwise weights at the box bound 0 cost nothing
            if w_pair[k] != 0.0:
                active[n_active] = k
                w_active[n_active] = w_pair[k]
                n_active += 1
        try:
            if self.single:
                _unary_scores(w, &self.row_ptr[p0], &self.col[0], &self.val32[0], n, u)
            else:
                _unary_scores(w, &self.row_ptr[p0], &self.col[0], &self.val64[0], n, u)
            if out.coord_idx != NULL and out.theta != NULL:
                self._write_theta(i, u, w, out.theta)
            for p in range(n):
                D[p] = -2.0 * u[p] + self.omega[p0 + p] * (2 * truth[p] - 1)
            if not (m and n_active):         # w_P = 0: no pairwise terms
                for e in range(m):
                    c[e] = 0.0
            elif self.single:
                _capacities(w_active, active, n_active, &self.pairwise32[e0, 0], m,
                            self.n_pairwise, c)
            else:
                _capacities(w_active, active, n_active, &self.pairwise64[e0, 0], m,
                            self.n_pairwise, c)
            k = 2 * e0 if m else 0
            min_cut_arcs(n, m, D, c, &self.arc_to[k], &self.arc_rev[k], &self.arc_edge[k],
                         &self.arc_ptr[p0], 2 * e0, out.labels)
            self._write(i, out.labels, out, c, &c_dot, True)
            # <w, psi> = sum_p 2 (y*_p - y_p) u_p - sum_e c_e ([y* cut] - [y cut])
            for p in range(n):
                wpsi += 2.0 * (truth[p] - out.labels[p]) * u[p]
            out.score = out.loss - (wpsi + c_dot)
        finally:
            free(mem)
        return 0

    cdef int evaluate(self, intp_t i, const int32_t* labels, intp_t n_labels,
                      const float64_t* w, Corner* out) except -1 nogil:
        check_labelling(i, labels, n_labels, self.node_ptr[i + 1] - self.node_ptr[i], 2)
        self._write(i, labels, out)
        out.score = out.loss - dot_gather(w, out.psi_idx, out.psi_val, out.psi_nnz)
        return 0

    # -- compact blocks (see the module docstring) ---------------------------------

    cdef void _write_theta(self, intp_t i, const float64_t* u, const float64_t* w,
                           float64_t* theta) noexcept nogil:
        """theta = A_i^T w: the unary scores u, then w_P in an image with edges."""
        cdef intp_t n = self.node_ptr[i + 1] - self.node_ptr[i], k
        for k in range(n):
            theta[k] = u[k]
        if self.edge_ptr[i + 1] > self.edge_ptr[i]:
            for k in range(self.n_pairwise):
                theta[n + k] = w[self.n_unary + k]

    cdef intp_t block_coords(self, intp_t i) noexcept nogil:
        if self.max_coords <= 0:
            return 0
        return ((self.node_ptr[i + 1] - self.node_ptr[i])
                + (self.n_pairwise if self.edge_ptr[i + 1] > self.edge_ptr[i] else 0))

    cdef int coord_scores(self, intp_t i, const float64_t* w,
                          float64_t* theta) except -1 nogil:
        cdef intp_t p0 = self.node_ptr[i], n = self.node_ptr[i + 1] - p0
        if self.single:
            _unary_scores(w, &self.row_ptr[p0], &self.col[0], &self.val32[0], n, theta)
        else:
            _unary_scores(w, &self.row_ptr[p0], &self.col[0], &self.val64[0], n, theta)
        self._write_theta(i, theta, w, theta)
        return 0

    cdef float64_t coord_sqnorm(self, intp_t i, const int32_t* idx, const float64_t* val,
                                intp_t nnz) except? -1 nogil:
        """The node entries' norm from the image's Gram (or its node rows), plus the
        pairwise entries' squares (orthonormal columns, disjoint from the nodes')."""
        cdef intp_t p0 = self.node_ptr[i], n = self.node_ptr[i + 1] - p0, j, n_node = 0
        cdef float64_t total
        while n_node < nnz and idx[n_node] < n:
            n_node += 1
        if self._gram_ptr[i + 1] > self._gram_ptr[i]:
            total = gram_sqnorm(&self._grams[self._gram_ptr[i]], n, 1, idx, val, n_node)
        elif self.single:
            total = rows_sqnorm(&self.row_ptr[p0], &self.col[0], &self.val32[0], self.n_unary,
                                1, idx, val, n_node)
        else:
            total = rows_sqnorm(&self.row_ptr[p0], &self.col[0], &self.val64[0], self.n_unary,
                                1, idx, val, n_node)
        for j in range(n_node, nnz):
            total += val[j] * val[j]
        return total

    cdef intp_t coord_expand(self, intp_t i, const int32_t* idx, const float64_t* val,
                             intp_t nnz, int32_t* out_idx, float64_t* out_val) except -1 nogil:
        """A_i e: e_p x_p^U for a node entry, its own weight for a pairwise one."""
        cdef intp_t p0 = self.node_ptr[i], n = self.node_ptr[i + 1] - p0, j, p, v, m = 0
        for j in range(nnz):
            if idx[j] >= n:
                out_idx[m] = <int32_t> (self.n_unary + idx[j] - n)
                out_val[m] = val[j]
                m += 1
                continue
            v = p0 + idx[j]
            for p in range(self.row_ptr[v], self.row_ptr[v + 1]):
                out_idx[m] = self.col[p]
                out_val[m] = val[j] * (self.val32[p] if self.single else self.val64[p])
                m += 1
        return m

    cdef int coord_add(self, intp_t i, const int32_t* idx, const float64_t* val, intp_t nnz,
                       float64_t* out, float64_t* out2, float64_t c2) except -1 nogil:
        """out += A_i e (and out2 += c2 A_i e) in one sweep over e's entries."""
        cdef intp_t p0 = self.node_ptr[i], n = self.node_ptr[i + 1] - p0, j, p, v, g
        cdef float64_t a, b, x
        for j in range(nnz):
            a = val[j]
            b = c2 * a
            if idx[j] >= n:
                g = self.n_unary + idx[j] - n
                out[g] += a
                if out2 != NULL:
                    out2[g] += b
                continue
            v = p0 + idx[j]
            for p in range(self.row_ptr[v], self.row_ptr[v + 1]):
                x = self.val32[p] if self.single else self.val64[p]
                out[self.col[p]] += a * x
                if out2 != NULL:
                    out2[self.col[p]] += b * x
        return 0
