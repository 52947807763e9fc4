"""Multiclass max oracle: one weight vector per class, cost-matrix loss.

phi(x, y) puts x in the block of class y (w is K blocks of F features);
L(y, y') = cost[y, y'] (0/1 by default).  The inputs are stored as CSR rows
(dense X is packed by ``MulticlassModel.bind``), so a call costs
O(K nnz(x_i)) and sparse inputs over many features stay cheap.

Block storage (``blocks`` of ``MulticlassModel``):
- compact: psi_i(k) = x_i (e_{y_i} - e_k) (the Kronecker product of the class
  indicators with the input), so every block's dual vector is x_i c for a
  K-vector c: the block basis A_i has the K columns e_k (x) x_i and a block is
  kept in K numbers instead of K F.  q_i(k) = e_{y_i} - e_k, A_i^T w holds the
  K class scores that the argmax computes anyway, and ||A_i e||^2 =
  ||x_i||^2 ||e||^2 from one norm per example (linear memory);
- sparse: block i's support is the K copies of x_i's nonzero columns;
- dense: K F numbers a block.
"""

cimport cython

import numpy as np

from ssvm_core._typedefs cimport float64_t, int32_t, intp_t
from ssvm_core._oracle cimport Corner, MaxOracle
from ssvm_core._vector cimport axpy, dot, dot_gather, ssvm_prefetch


@cython.final
cdef class MulticlassOracle(MaxOracle):
    """Exact loss-augmented argmax over K classes for n examples.

    Parameters
    ----------
    n_inputs : int
        Input dimension F.
    indptr, indices, data : arrays
        The n x F inputs in CSR form: row i has the values
        ``data[indptr[i]:indptr[i + 1]]`` at the columns ``indices[...]``
        (intp, int32 in [0, F), float64).
    y : int32 array (n,)
        Ground-truth classes in [0, K).
    cost : float64 array (K, K)
        ``cost[y_true, y_pred]``.
    storage : {"dense", "sparse", "compact"}, default "dense"
        The block storage the oracle offers the solvers (see the module
        docstring): "sparse" reports ``block_support``, "compact" offers the
        K-coordinate block basis.

    Attributes
    ----------
    dense_rows : bool
        Every row holds all F inputs, columns in order (a dense X packed
        without zeros): the class scores and ``coord_add`` then read rows as
        contiguous vectors, with the same sums as the gathering loops.
    """
    cdef readonly intp_t n_classes, n_inputs
    cdef readonly intp_t[::1] indptr
    cdef readonly int32_t[::1] indices
    cdef readonly float64_t[::1] data
    cdef readonly float64_t[:, ::1] cost
    cdef readonly int32_t[::1] y
    cdef readonly str storage
    cdef const float64_t[::1] _sqnorms      # compact: ||x_i||^2 per example
    cdef readonly bint dense_rows

    def __init__(self, intp_t n_inputs, indptr, indices, data, y, cost,
                 str storage="dense"):
        if storage not in ("dense", "sparse", "compact"):
            raise ValueError(f"storage must be 'dense', 'sparse' or 'compact', got {storage!r}")
        self.storage = storage
        self.indptr = indptr
        self.indices = indices
        self.data = data
        self.y = y
        self.cost = cost
        self.n_classes = self.cost.shape[0]
        self.n_inputs = n_inputs
        self.n_blocks = self.indptr.shape[0] - 1
        if (self.n_blocks < 1 or self.y.shape[0] != self.n_blocks
                or self.indices.shape[0] != self.data.shape[0]
                or self.indptr[0] != 0 or self.indptr[self.n_blocks] != self.data.shape[0]):
            raise ValueError("inconsistent CSR inputs or labels for MulticlassOracle")
        row_nnz = np.diff(np.asarray(self.indptr))
        if np.any(row_nnz < 0):
            raise ValueError("CSR row pointers must be nondecreasing")
        if self.data.shape[0] and (np.min(self.indices) < 0
                                   or np.max(self.indices) >= n_inputs):
            raise ValueError(f"CSR column indices must lie in [0, {n_inputs})")
        self.n_features = self.n_classes * self.n_inputs
        self.max_labels = 1
        self.max_psi_nnz = max(2 * int(row_nnz.max()), 1)
        self.dense_psi = False
        self.needs_gil = False
        # a dense X packed as CSR: rows are read as contiguous vectors (the same sums)
        self.dense_rows = bool(n_inputs > 0 and np.all(row_nnz == n_inputs) and np.array_equal(
            np.asarray(self.indices).reshape(-1, n_inputs),
            np.broadcast_to(np.arange(n_inputs), (self.n_blocks, n_inputs))))
        if storage == "compact":
            rows = np.repeat(np.arange(self.n_blocks), row_nnz)
            self._sqnorms = np.bincount(rows, weights=np.square(np.asarray(self.data)),
                                        minlength=self.n_blocks)
            self.max_coords = self.n_classes
            self.max_coord_nnz = 2
            self.max_expand = max(self.n_classes * int(row_nnz.max()), 1)

    def __reduce__(self):
        return (MulticlassOracle, (self.n_inputs, np.asarray(self.indptr),
                                   np.asarray(self.indices), np.asarray(self.data),
                                   np.asarray(self.y), np.asarray(self.cost), self.storage))

    def block_support(self, i):
        """Sorted feature indices psi_i(k) can touch for any k (None: not sparse
        storage): the columns of x_i's nonzeros in each of the K class blocks."""
        i = self._check_block(i)
        if self.storage != "sparse":
            return None
        cols = np.asarray(self.indices[self.indptr[i]:self.indptr[i + 1]], dtype=np.int32)
        offsets = np.arange(self.n_classes, dtype=np.int32)[:, None] * self.n_inputs
        return (offsets + cols[None, :]).ravel()

    cdef inline float64_t _class_score(self, intp_t i, intp_t k,
                                       const float64_t* w) noexcept nogil:
        cdef intp_t start = self.indptr[i], nnz = self.indptr[i + 1] - start
        if nnz == 0:            # &indices[start] would be past the end for a last empty row
            return 0.0
        if self.dense_rows:    # dot_gather's sums with the columns 0 .. F - 1
            return dot(w + k * self.n_inputs, &self.data[start], nnz)
        return dot_gather(w + k * self.n_inputs, &self.indices[start], &self.data[start], nnz)

    cdef void _write(self, intp_t i, int32_t k, float64_t wpsi, Corner* out,
                     bint solving) noexcept nogil:
        """Class k's answer for example i, with ``wpsi`` = <w, psi_i(k)> (the score
        of the true class minus class k's, which the caller has): loss, score,
        the coordinates q_i(k) when asked for, and psi (``solve`` skips it when
        only the coordinates are read; ``evaluate`` always writes it)."""
        cdef intp_t p, f, F = self.n_inputs, nnz = 0
        cdef int32_t yi = self.y[i]
        cdef float64_t v
        out.labels[0] = k
        out.n_labels = 1
        out.loss = self.cost[yi, k]
        out.score = out.loss - (wpsi if k != yi else 0.0)
        if out.coord_idx != NULL:
            out.coord_nnz = 0
            if k != yi:
                out.coord_idx[0] = yi
                out.coord_val[0] = 1.0
                out.coord_idx[1] = k
                out.coord_val[1] = -1.0
                out.coord_nnz = 2
            if solving and out.coords_only:
                return
        if k != yi:
            for p in range(self.indptr[i], self.indptr[i + 1]):
                f = self.indices[p]
                v = self.data[p]
                out.psi_idx[nnz] = <int32_t> (yi * F + f)
                out.psi_val[nnz] = v
                out.psi_idx[nnz + 1] = <int32_t> (k * F + f)
                out.psi_val[nnz + 1] = -v
                nnz += 2
        out.psi_nnz = nnz

    cdef int solve(self, intp_t i, const float64_t* w, Corner* out) except -1 nogil:
        cdef intp_t k
        cdef int32_t best = 0, yi = self.y[i]
        cdef float64_t value, score, best_value = 0.0, best_score = 0.0, true_score = 0.0
        for k in range(self.n_classes):
            score = self._class_score(i, k, w)
            if out.coord_idx != NULL and out.theta != NULL:
                out.theta[k] = score
            if k == yi:
                true_score = score
            value = score + self.cost[yi, k]
            if k == 0 or value > best_value:
                best_value = value
                best_score = score
                best = <int32_t> k
        self._write(i, best, true_score - best_score, out, True)
        return 0

    cdef void prefetch(self, intp_t i) noexcept nogil:
        """Example i's input row."""
        cdef intp_t p0 = self.indptr[i], nnz = self.indptr[i + 1] - p0
        if nnz > 0:
            ssvm_prefetch(&self.indices[p0], nnz * sizeof(int32_t))
            ssvm_prefetch(&self.data[p0], nnz * sizeof(float64_t))

    cdef intp_t block_coords(self, intp_t i) noexcept nogil:
        return self.n_classes if self.max_coords > 0 else 0

    cdef int coord_scores(self, intp_t i, const float64_t* w,
                          float64_t* theta) except -1 nogil:
        """theta_k = <w_k, x_i>: the K class scores."""
        cdef intp_t k
        for k in range(self.n_classes):
            theta[k] = self._class_score(i, k, w)
        return 0

    cdef float64_t coord_sqnorm(self, intp_t i, const int32_t* idx, const float64_t* val,
                                intp_t nnz) except? -1 nogil:
        """||A_i e||^2 = ||x_i||^2 ||e||^2 (the K columns have disjoint supports)."""
        cdef intp_t j
        cdef float64_t total = 0.0
        for j in range(nnz):
            total += val[j] * val[j]
        return self._sqnorms[i] * total

    cdef intp_t coord_expand(self, intp_t i, const int32_t* idx, const float64_t* val,
                             intp_t nnz, int32_t* out_idx, float64_t* out_val) except -1 nogil:
        """A_i e: e_k x_i in class k's block for each entry (k, e_k)."""
        cdef intp_t j, p, m = 0, F = self.n_inputs
        cdef intp_t p0 = self.indptr[i], p1 = self.indptr[i + 1]
        for j in range(nnz):
            for p in range(p0, p1):
                out_idx[m] = <int32_t> (idx[j] * F + self.indices[p])
                out_val[m] = val[j] * self.data[p]
                m += 1
        return m

    cdef int coord_add(self, intp_t i, const int32_t* idx, const float64_t* val, intp_t nnz,
                       float64_t* out, float64_t* out2, float64_t c2) except -1 nogil:
        """out += A_i e (and out2 += c2 A_i e): one pass over x_i per entry of e."""
        cdef intp_t j, p, g, F = self.n_inputs
        cdef intp_t p0 = self.indptr[i], p1 = self.indptr[i + 1]
        cdef float64_t a, b
        if p1 == p0:            # &data[p0] would be past the end for a last empty row
            return 0
        if self.dense_rows:     # the columns 0 .. F - 1: the same adds, vectorised
            for j in range(nnz):
                axpy(val[j], &self.data[p0], out + idx[j] * F, F)
                if out2 != NULL:
                    axpy(c2 * val[j], &self.data[p0], out2 + idx[j] * F, F)
            return 0
        for j in range(nnz):
            a = val[j]
            b = c2 * a
            for p in range(p0, p1):
                g = idx[j] * F + self.indices[p]
                out[g] += a * self.data[p]
                if out2 != NULL:
                    out2[g] += b * self.data[p]
        return 0

    cdef int evaluate(self, intp_t i, const int32_t* labels, intp_t n_labels,
                      const float64_t* w, Corner* out) except -1 nogil:
        if n_labels != 1 or labels[0] < 0 or labels[0] >= self.n_classes:
            with gil:
                raise ValueError(f"a multiclass labelling is one class in [0, {self.n_classes})")
        cdef int32_t k = labels[0], yi = self.y[i]
        self._write(i, k, self._class_score(i, yi, w) - self._class_score(i, k, w) if k != yi
                    else 0.0, out, False)
        return 0
