"""Multiclass max oracle: one weight vector per class, cost-matrix loss.

phi(x, y) puts x in the block of class y (w is K blocks of F features);
L(y, y') = cost[y, y'] (0/1 by default).  The inputs are stored as CSR rows
(dense X is packed by ``MulticlassModel.bind``), so a call costs
O(K nnz(x_i)) and sparse inputs over many features stay cheap.
"""

cimport cython

import numpy as np

from ssvm_core._typedefs cimport float64_t, int32_t, intp_t
from ssvm_core._oracle cimport Corner, MaxOracle
from ssvm_core._vector cimport dot_gather


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
    """
    cdef readonly intp_t n_classes, n_inputs
    cdef readonly intp_t[::1] indptr
    cdef readonly int32_t[::1] indices
    cdef readonly float64_t[::1] data
    cdef readonly float64_t[:, ::1] cost
    cdef readonly int32_t[::1] y

    def __init__(self, intp_t n_inputs, indptr, indices, data, y, cost):
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

    def __reduce__(self):
        return (MulticlassOracle, (self.n_inputs, np.asarray(self.indptr),
                                   np.asarray(self.indices), np.asarray(self.data),
                                   np.asarray(self.y), np.asarray(self.cost)))

    cdef inline float64_t _class_score(self, intp_t i, intp_t k,
                                       const float64_t* w) noexcept nogil:
        cdef intp_t start = self.indptr[i], nnz = self.indptr[i + 1] - start
        if nnz == 0:            # &indices[start] would be past the end for a last empty row
            return 0.0
        return dot_gather(w + k * self.n_inputs, &self.indices[start], &self.data[start], nnz)

    cdef void _write(self, intp_t i, int32_t k, const float64_t* w,
                     Corner* out) noexcept nogil:
        cdef intp_t p, f, F = self.n_inputs, nnz = 0
        cdef int32_t yi = self.y[i]
        cdef float64_t wpsi = 0.0, v
        out.labels[0] = k
        out.n_labels = 1
        if k != yi:
            for p in range(self.indptr[i], self.indptr[i + 1]):
                f = self.indices[p]
                v = self.data[p]
                out.psi_idx[nnz] = <int32_t> (yi * F + f)
                out.psi_val[nnz] = v
                out.psi_idx[nnz + 1] = <int32_t> (k * F + f)
                out.psi_val[nnz + 1] = -v
                wpsi += v * (w[yi * F + f] - w[k * F + f])
                nnz += 2
        out.psi_nnz = nnz
        out.loss = self.cost[yi, k]
        out.score = out.loss - wpsi

    cdef int solve(self, intp_t i, const float64_t* w, Corner* out) except -1 nogil:
        cdef intp_t k
        cdef int32_t best = 0
        cdef float64_t value, best_value = 0.0
        for k in range(self.n_classes):
            value = self._class_score(i, k, w) + self.cost[self.y[i], k]
            if k == 0 or value > best_value:
                best_value = value
                best = <int32_t> k
        self._write(i, best, w, out)
        return 0

    cdef int evaluate(self, intp_t i, const int32_t* labels, intp_t n_labels,
                      const float64_t* w, Corner* out) except -1 nogil:
        if n_labels != 1 or labels[0] < 0 or labels[0] >= self.n_classes:
            with gil:
                raise ValueError(f"a multiclass labelling is one class in [0, {self.n_classes})")
        self._write(i, labels[0], w, out)
        return 0
