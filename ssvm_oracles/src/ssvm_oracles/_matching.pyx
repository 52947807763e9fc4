"""Bipartite matching (word alignment) max oracle without the GIL.

A pair has n_s source and n_t target nodes and a set of candidate edges
(j, k), each with a feature vector f_e in R^d.  A labelling is a matching,
stored as y[j] = k (the target matched to source j) or -1 (unmatched); each
target is used at most once.  phi(x, y) = sum of f_e over the matched edges.

Task loss (Lacoste-Julien et al. (2013), App. F, Taskar et al. 2006): asymmetric Hamming,
L(y*, y) = (c_p #{edges in y, not in y*} + c_r #{edges in y*, not in y}) / Z
with precision cost c_p (1 in the paper), recall cost c_r (3) and Z = n_s
when normalised (else 1).

Loss-augmented decoding is a maximum-weight matching: up to the constant
c_r |y*| / Z, H(y) + <w, phi(x, y*)> is the sum over matched edges of
s_e = <w, f_e> + (c_p / Z if e is not in y*, else -c_r / Z).  Unmatched
nodes are allowed, so only edges with s_e > 0 can help: the oracle solves
the rectangular assignment problem on max(s_e, 0) (0 for non-edges) with the
Hungarian method (shortest augmenting paths with potentials, O(r^2 c) for
r = min(n_s, n_t) rows and c = max(n_s, n_t) columns) and drops the
assigned pairs whose s_e is not positive.  That is exact: any matching's
value only grows when its non-positive edges are removed, and every
assignment on the clipped gains is such a pruned matching.

Block storage (``storage="compact"``, the ``blocks`` option of
``MatchingModel``): psi_i(y) = A_i q_i(y) with one coordinate per candidate
edge of the pair (column f_e) and q_i(y) = [edge in y*] - [edge in y], the
difference of the two matchings' edge indicators.  A block is kept in m_i
numbers (its candidate edges) instead of d, A_i^T w holds the edge scores
<w, f_e> the gains need anyway, and ||A_i e||^2 comes from the pair's m_i x m_i
edge Gram where it costs no more than a dense block (``_graph.gram_entries``),
else from the feature rows the direction touches.  A pair without candidate
edges keeps one coordinate whose column is zero (no block is empty).
"""

cimport cython
from libc.stdlib cimport free
from libc.math cimport INFINITY

import numpy as np

from ssvm_core._typedefs cimport float64_t, int32_t, intp_t
from ssvm_core._oracle cimport Corner, MaxOracle
from ssvm_core._vector cimport checked_malloc, dot
from ssvm_oracles._node_coords cimport gram_sqnorm

from ssvm_oracles._graph import gram_entries


cdef struct _Pair:
    # One pair inside the packed arrays: sources j = 0..n_s-1 are global rows
    # src0 + j; their candidate edges are row_ptr[src0 + j] .. row_ptr[src0 + j + 1].
    intp_t n_s, n_t, src0
    const intp_t* row_ptr
    const int32_t* col
    const float64_t* feat
    intp_t d


cdef inline intp_t _edge_of(const _Pair* x, intp_t j, intp_t k) noexcept nogil:
    """Global index of candidate edge (j, k), or -1."""
    cdef intp_t e
    for e in range(x.row_ptr[x.src0 + j], x.row_ptr[x.src0 + j + 1]):
        if x.col[e] == k:
            return e
    return -1


cdef void _gains(const _Pair* x, const float64_t* w, const int32_t* y_true,
                 float64_t c_fp, float64_t c_fn, float64_t* G,
                 float64_t* theta=NULL) noexcept nogil:
    """G[j, k] = max(<w, f_e> + loss term, 0) for edges, 0 elsewhere (n_s x n_t);
    with ``theta``, also theta[e - e0] = <w, f_e> for the pair's edges from e0."""
    cdef intp_t j, e, k, e0 = x.row_ptr[x.src0]
    cdef float64_t s
    for j in range(x.n_s * x.n_t):
        G[j] = 0.0
    for j in range(x.n_s):
        for e in range(x.row_ptr[x.src0 + j], x.row_ptr[x.src0 + j + 1]):
            k = x.col[e]
            s = dot(w, x.feat + e * x.d, x.d)
            if theta != NULL:
                theta[e - e0] = s
            if y_true != NULL:
                s += -c_fn if k == y_true[j] else c_fp
            if s > 0.0:
                G[j * x.n_t + k] = s


cdef int _max_matching(const float64_t* G, intp_t n_s, intp_t n_t,
                       int32_t* y) except -1 nogil:
    """Maximum-weight matching on the nonnegative gains G (n_s x n_t, row-major).

    Writes y[j] = k for every matched pair with G[j, k] > 0, else -1.  Runs the
    Hungarian method on costs -G with the smaller side as rows; every row is
    assigned (gains are >= 0, so a full assignment of the smaller side is
    optimal) and zero-gain pairs are then dropped.
    """
    cdef bint flip = n_s > n_t
    cdef intp_t r = n_t if flip else n_s, c = n_s if flip else n_t
    cdef intp_t sr = 1 if flip else n_t, sc = n_t if flip else 1   # G[i*sr + j*sc]
    cdef intp_t i, j, i0, j0, j1
    cdef float64_t delta, cur
    cdef float64_t* u = NULL
    cdef intp_t* p = NULL
    cdef char* used = NULL
    cdef float64_t* v
    cdef float64_t* minv
    cdef intp_t* way
    try:
        u = <float64_t*> checked_malloc((r + 1 + 2 * (c + 1)) * sizeof(float64_t),
                                        "matching workspace")
        p = <intp_t*> checked_malloc(2 * (c + 1) * sizeof(intp_t), "matching workspace")
        used = <char*> checked_malloc((c + 1) * sizeof(char), "matching workspace")
        v = u + r + 1
        minv = v + c + 1
        way = p + c + 1
        for j in range(r + 1):
            u[j] = 0.0
        for j in range(c + 1):
            v[j] = 0.0
            p[j] = 0
            way[j] = 0
        # 1-based rows and columns; column 0 is the root of the alternating tree,
        # p[j] is the row assigned to column j (0: none).
        for i in range(1, r + 1):
            p[0] = i
            j0 = 0
            for j in range(c + 1):
                minv[j] = INFINITY
                used[j] = 0
            while True:
                used[j0] = 1
                i0 = p[j0]
                delta = INFINITY
                j1 = 0
                for j in range(1, c + 1):
                    if not used[j]:
                        cur = -G[(i0 - 1) * sr + (j - 1) * sc] - u[i0] - v[j]
                        if cur < minv[j]:
                            minv[j] = cur
                            way[j] = j0
                        # any minimiser is correct; a free column ends the search
                        # (ties are common: at w = 0 every wrong edge has the same gain)
                        if minv[j] < delta or (minv[j] == delta and p[j] == 0 and p[j1] != 0):
                            delta = minv[j]
                            j1 = j
                for j in range(c + 1):
                    if used[j]:
                        u[p[j]] += delta
                        v[j] -= delta
                    else:
                        minv[j] -= delta
                j0 = j1
                if p[j0] == 0:
                    break
            while j0 != 0:                      # augment along the path
                j1 = way[j0]
                p[j0] = p[j1]
                j0 = j1
        for j in range(n_s):
            y[j] = -1
        for j in range(1, c + 1):
            i = p[j]
            if i != 0 and G[(i - 1) * sr + (j - 1) * sc] > 0.0:
                if flip:
                    y[j - 1] = <int32_t> (i - 1)
                else:
                    y[i - 1] = <int32_t> (j - 1)
    finally:
        free(u)
        free(p)
        free(used)
    return 0


@cython.final
cdef class MatchingOracle(MaxOracle):
    """Loss-augmented maximum-weight matching for n bound pairs.

    Built by ``MatchingModel.bind``.  Arrays: ``pair_ptr`` (n + 1) source-node
    offsets of the pairs, ``n_target`` (n,), ``row_ptr`` (sources + 1) edge
    offsets per source node, ``col`` (edges,) target of each edge,
    ``features`` (edges, d), ``labels`` (sources,) the true target or -1 and
    ``true_edge`` (sources,) the edge index of the true pair or -1.
    ``storage`` ("dense" by default, or "compact") is the block storage offered
    to the solvers (see the module docstring).
    """
    cdef readonly intp_t[::1] pair_ptr, n_target, row_ptr, true_edge
    cdef readonly int32_t[::1] col, labels
    cdef readonly float64_t[:, ::1] features
    cdef readonly float64_t precision_cost, recall_cost
    cdef readonly bint normalize
    cdef readonly str storage
    cdef const intp_t[::1] _gram_ptr              # compact blocks: per-pair edge Grams
    cdef const float64_t[::1] _grams

    def __init__(self, pair_ptr, n_target, row_ptr, col, features, labels, true_edge,
                 float64_t precision_cost=1.0, float64_t recall_cost=3.0,
                 bint normalize=True, str storage="dense"):
        if storage not in ("dense", "compact"):
            raise ValueError(f"storage must be 'dense' or 'compact', got {storage!r}")
        self.storage = storage
        self.pair_ptr = pair_ptr
        self.n_target = n_target
        self.row_ptr = row_ptr
        self.col = col if len(col) else np.zeros(1, np.int32)     # keep &col[0] valid
        self.features = features if len(features) else np.zeros((1, features.shape[1]))
        self.labels = labels
        self.true_edge = true_edge
        self.precision_cost = precision_cost
        self.recall_cost = recall_cost
        self.normalize = normalize
        self.n_blocks = self.pair_ptr.shape[0] - 1
        self.n_features = self.features.shape[1]
        self.max_labels = int(np.diff(np.asarray(pair_ptr)).max())
        self.max_psi_nnz = self.n_features
        self.dense_psi = True
        self.needs_gil = False
        if storage == "compact":
            ptr = np.asarray(row_ptr)[np.asarray(pair_ptr)]
            m = np.diff(ptr)
            entries = gram_entries(m, self.n_features)
            gram_ptr = np.zeros(len(m) + 1, np.intp)
            np.cumsum(entries, out=gram_ptr[1:])
            grams = np.zeros(gram_ptr[-1])
            feats = np.asarray(self.features)
            for i in np.flatnonzero(entries):
                rows = feats[ptr[i]:ptr[i + 1]]
                grams[gram_ptr[i]:gram_ptr[i + 1]] = (rows @ rows.T).ravel()
            self._gram_ptr, self._grams = gram_ptr, grams
            self.max_coords = max(int(m.max()), 1)
            self.max_coord_nnz = 2 * self.max_labels
            self.max_expand = self.n_features

    def __reduce__(self):
        return (MatchingOracle, (np.asarray(self.pair_ptr), np.asarray(self.n_target),
                                 np.asarray(self.row_ptr), np.asarray(self.col),
                                 np.asarray(self.features), np.asarray(self.labels),
                                 np.asarray(self.true_edge), self.precision_cost,
                                 self.recall_cost, self.normalize, self.storage))

    @property
    def gram_nbytes(self) -> int:
        """Bytes of the edge Grams kept for compact blocks (0 for dense storage)."""
        return 0 if self.storage != "compact" else int(np.asarray(self._grams).nbytes)

    cdef inline _Pair _pair(self, intp_t i) noexcept nogil:
        cdef _Pair x
        x.src0 = self.pair_ptr[i]
        x.n_s = self.pair_ptr[i + 1] - x.src0
        x.n_t = self.n_target[i]
        x.row_ptr = &self.row_ptr[0]
        x.col = &self.col[0]
        x.feat = &self.features[0, 0]
        x.d = self.n_features
        return x

    cdef inline float64_t _scale(self, const _Pair* x) noexcept nogil:
        return 1.0 / x.n_s if self.normalize else 1.0

    cdef void _write(self, const _Pair* x, const int32_t* y, const intp_t* edges,
                     const float64_t* w, Corner* out, float64_t score=0.0,
                     bint solving=False) noexcept nogil:
        """psi = phi(y*) - phi(y), loss and score of matching y with edge indices
        ``edges``, and the coordinates q_i(y) when the caller asks for them.

        ``solve`` passes ``solving`` with score = <w, phi(y)> - <w, phi(y*)> from
        the edge scores, and then skips psi when only the coordinates are read.
        """
        cdef intp_t j, f, d = x.d, n_fp = 0, n_fn = 0, cnz = 0
        cdef intp_t e0 = x.row_ptr[x.src0]
        cdef const float64_t* fe
        cdef const int32_t* y_true = &self.labels[x.src0]
        cdef float64_t* psi = out.psi_val
        cdef bint coords = out.coord_idx != NULL
        cdef bint write_psi = not (solving and coords and out.coords_only)
        if write_psi:
            for f in range(d):
                psi[f] = 0.0
        for j in range(x.n_s):
            out.labels[j] = y[j]
            if y[j] == y_true[j]:
                continue
            if y_true[j] >= 0:
                n_fn += 1
                if coords:
                    out.coord_idx[cnz] = <int32_t> (self.true_edge[x.src0 + j] - e0)
                    out.coord_val[cnz] = 1.0
                    cnz += 1
                if write_psi:
                    fe = x.feat + self.true_edge[x.src0 + j] * d
                    for f in range(d):
                        psi[f] += fe[f]
            if y[j] >= 0:
                n_fp += 1
                if coords:
                    out.coord_idx[cnz] = <int32_t> (edges[j] - e0)
                    out.coord_val[cnz] = -1.0
                    cnz += 1
                if write_psi:
                    fe = x.feat + edges[j] * d
                    for f in range(d):
                        psi[f] -= fe[f]
        out.n_labels = x.n_s
        if write_psi:
            out.psi_nnz = d
        if coords:
            out.coord_nnz = cnz
        out.loss = (self.precision_cost * n_fp + self.recall_cost * n_fn) * self._scale(x)
        out.score = out.loss + score if solving else out.loss - dot(w, psi, d)

    cdef int solve(self, intp_t i, const float64_t* w, Corner* out) except -1 nogil:
        cdef _Pair x = self._pair(i)
        cdef float64_t z = self._scale(&x)
        cdef intp_t j
        cdef float64_t* G = NULL
        cdef intp_t* edges = NULL
        try:
            G = <float64_t*> checked_malloc(x.n_s * x.n_t * sizeof(float64_t), "matching gains")
            edges = <intp_t*> checked_malloc(x.n_s * sizeof(intp_t), "matching gains")
            _gains(&x, w, &self.labels[x.src0], self.precision_cost * z,
                   self.recall_cost * z, G, out.theta if out.coord_idx != NULL else NULL)
            _max_matching(G, x.n_s, x.n_t, out.labels)
            for j in range(x.n_s):
                edges[j] = _edge_of(&x, j, out.labels[j]) if out.labels[j] >= 0 else -1
            if out.coord_idx != NULL and out.coords_only:
                self._write(&x, out.labels, edges, w, out,
                            self._phi_gap(&x, out.labels, edges, w), True)
            else:
                self._write(&x, out.labels, edges, w, out)
        finally:
            free(G)
            free(edges)
        return 0

    cdef float64_t _phi_gap(self, const _Pair* x, const int32_t* y, const intp_t* edges,
                            const float64_t* w) noexcept nogil:
        """<w, phi(y)> - <w, phi(y*)> = -<w, psi> over the sources where y and y* differ."""
        cdef intp_t j
        cdef float64_t s = 0.0
        cdef const int32_t* y_true = &self.labels[x.src0]
        for j in range(x.n_s):
            if y[j] == y_true[j]:
                continue
            if y[j] >= 0:
                s += dot(w, x.feat + edges[j] * x.d, x.d)
            if y_true[j] >= 0:
                s -= dot(w, x.feat + self.true_edge[x.src0 + j] * x.d, x.d)
        return s

    cdef int evaluate(self, intp_t i, const int32_t* labels, intp_t n_labels,
                      const float64_t* w, Corner* out) except -1 nogil:
        cdef _Pair x = self._pair(i)
        cdef intp_t j, k
        cdef intp_t* edges
        if n_labels != x.n_s:
            with gil:
                raise ValueError(f"a matching of pair {i} has {x.n_s} entries "
                                 f"(one per source node), got {n_labels}")
        edges = <intp_t*> checked_malloc(x.n_s * sizeof(intp_t), "matching edges")
        try:
            for j in range(x.n_s):
                edges[j] = -1
                if labels[j] == -1:
                    continue
                if labels[j] < -1 or labels[j] >= x.n_t:
                    with gil:
                        raise ValueError(f"source {j} of pair {i} is matched to "
                                         f"{labels[j]}, outside [-1, {x.n_t})")
                edges[j] = _edge_of(&x, j, labels[j])
                if edges[j] < 0:
                    with gil:
                        raise ValueError(f"({j}, {labels[j]}) is not a candidate edge "
                                         f"of pair {i}")
                for k in range(j):
                    if labels[k] == labels[j]:
                        with gil:
                            raise ValueError(f"target {labels[j]} of pair {i} is matched "
                                             f"twice (sources {k} and {j})")
            self._write(&x, labels, edges, w, out)
        finally:
            free(edges)
        return 0

    # -- compact blocks (see the module docstring) ---------------------------------

    cdef inline intp_t _n_edges(self, intp_t i) noexcept nogil:
        return self.row_ptr[self.pair_ptr[i + 1]] - self.row_ptr[self.pair_ptr[i]]

    cdef intp_t block_coords(self, intp_t i) noexcept nogil:
        if self.max_coords <= 0:
            return 0
        return max(self._n_edges(i), 1)

    cdef int coord_scores(self, intp_t i, const float64_t* w,
                          float64_t* theta) except -1 nogil:
        """theta_e = <w, f_e> for the pair's candidate edges (0 for the zero column of
        a pair without any)."""
        cdef intp_t e, e0 = self.row_ptr[self.pair_ptr[i]]
        cdef intp_t e1 = self.row_ptr[self.pair_ptr[i + 1]]
        theta[0] = 0.0
        for e in range(e0, e1):
            theta[e - e0] = dot(w, &self.features[e, 0], self.n_features)
        return 0

    cdef float64_t coord_sqnorm(self, intp_t i, const int32_t* idx, const float64_t* val,
                                intp_t nnz) except? -1 nogil:
        """From the pair's edge Gram, or ||sum_e e_e f_e||^2 summed in a d-vector."""
        cdef intp_t e0 = self.row_ptr[self.pair_ptr[i]], m = self._n_edges(i)
        cdef intp_t j, f, d = self.n_features
        cdef const float64_t* fe
        cdef float64_t* acc
        cdef float64_t total = 0.0
        if self._gram_ptr[i + 1] > self._gram_ptr[i]:
            return gram_sqnorm(&self._grams[self._gram_ptr[i]], m, 1, idx, val, nnz)
        acc = <float64_t*> checked_malloc(d * sizeof(float64_t), "Gram norm workspace")
        for f in range(d):
            acc[f] = 0.0
        for j in range(nnz):
            if idx[j] >= m:                     # the zero column of a pair without edges
                continue
            fe = &self.features[e0 + idx[j], 0]
            for f in range(d):
                acc[f] += val[j] * fe[f]
        for f in range(d):
            total += acc[f] * acc[f]
        free(acc)
        return total

    cdef intp_t coord_expand(self, intp_t i, const int32_t* idx, const float64_t* val,
                             intp_t nnz, int32_t* out_idx, float64_t* out_val) except -1 nogil:
        """A_i e = sum_e e_e f_e as the d entries of a dense vector."""
        cdef intp_t f, d = self.n_features
        for f in range(d):
            out_idx[f] = <int32_t> f
            out_val[f] = 0.0
        self.coord_add(i, idx, val, nnz, out_val, NULL, 0.0)
        return d

    cdef int coord_add(self, intp_t i, const int32_t* idx, const float64_t* val, intp_t nnz,
                       float64_t* out, float64_t* out2, float64_t c2) except -1 nogil:
        """out += A_i e (and out2 += c2 A_i e): a sweep over each entry's feature row."""
        cdef intp_t e0 = self.row_ptr[self.pair_ptr[i]], j, f, d = self.n_features
        cdef intp_t m = self._n_edges(i)
        cdef const float64_t* fe
        cdef float64_t a, b
        for j in range(nnz):
            if idx[j] >= m:                     # the zero column of a pair without edges
                continue
            a = val[j]
            b = c2 * a
            fe = &self.features[e0 + idx[j], 0]
            for f in range(d):
                out[f] += a * fe[f]
                if out2 != NULL:
                    out2[f] += b * fe[f]
        return 0


def decode(const float64_t[::1] w, const intp_t[::1] pair_ptr, const intp_t[::1] n_target,
           const intp_t[::1] row_ptr, const int32_t[::1] col,
           const float64_t[:, ::1] features):
    """argmax_y <w, phi(x, y)> for every pair: the flat matchings of all source nodes."""
    cdef intp_t n = pair_ptr.shape[0] - 1, i, size = 1
    out = np.full(pair_ptr[n], -1, dtype=np.int32)
    cdef int32_t[::1] o = out
    cdef _Pair x
    cdef float64_t* G
    if col.shape[0] == 0:
        return out
    for i in range(n):
        size = max(size, (pair_ptr[i + 1] - pair_ptr[i]) * n_target[i])
    G = <float64_t*> checked_malloc(size * sizeof(float64_t), "matching gains")
    x.row_ptr = &row_ptr[0]
    x.col = &col[0]
    x.feat = &features[0, 0]
    x.d = features.shape[1]
    try:
        with nogil:
            for i in range(n):
                x.src0 = pair_ptr[i]
                x.n_s = pair_ptr[i + 1] - x.src0
                x.n_t = n_target[i]
                _gains(&x, &w[0], NULL, 0.0, 0.0, G)
                _max_matching(G, x.n_s, x.n_t, &o[x.src0])
    finally:
        free(G)
    return out
