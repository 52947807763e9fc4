"""Multiclass max oracle: one weight vector per class, cost-matrix loss.

phi(x, y) puts x in the block of class y (w is K blocks of F features);
L(y, y') = cost[y, y'] (0/1 by default).
"""

cimport cython

import numpy as np

from ssvm_core._typedefs cimport float64_t, int32_t, intp_t
from ssvm_core._oracle cimport Corner, MaxOracle
from ssvm_core._vector cimport dot


@cython.final
cdef class MulticlassOracle(MaxOracle):
    """Exact loss-augmented argmax over K classes for n examples."""
    cdef readonly intp_t n_classes, n_inputs
    cdef readonly float64_t[:, ::1] X, cost
    cdef readonly int32_t[::1] y

    def __init__(self, X, y, cost):
        self.X = X
        self.y = y
        self.cost = cost
        self.n_classes = self.cost.shape[0]
        self.n_inputs = self.X.shape[1]
        self.n_blocks = self.X.shape[0]
        self.n_features = self.n_classes * self.n_inputs
        self.max_labels = 1
        self.max_psi_nnz = 2 * self.n_inputs
        self.dense_psi = False
        self.needs_gil = False

    def __reduce__(self):
        return (MulticlassOracle, (np.asarray(self.X), np.asarray(self.y),
                                   np.asarray(self.cost)))

    cdef inline float64_t _class_score(self, intp_t i, intp_t k,
                                       const float64_t* w) noexcept nogil:
        return dot(w + k * self.n_inputs, &self.X[i, 0], self.n_inputs)

    cdef void _write(self, intp_t i, int32_t k, const float64_t* w,
                     Corner* out) noexcept nogil:
        cdef intp_t f, F = self.n_inputs, nnz = 0
        cdef int32_t yi = self.y[i]
        cdef float64_t wpsi = 0.0, v
        out.labels[0] = k
        out.n_labels = 1
        if k != yi:
            for f in range(F):
                v = self.X[i, f]
                if v != 0.0:
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
