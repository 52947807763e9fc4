# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""A multi-label max oracle in Cython: the worked example of "Writing your own oracle".

A labelling y in {0, 1}^L says which of L labels an input x (F features) has.
phi(x, y) = vec(outer(y, x)): w holds one weight vector per label (d = L F,
entry l F + f), and the loss is the Hamming loss divided by L.  With
s_l = <w_l, x_i> and the true labelling y_i,

    H_i(y; w) = L_i(y) - <w, psi_i(y)>
              = sum_l [y_l != y_il] (1/L + (1 - 2 y_il) s_l),

so the loss-augmented argmax flips label l exactly when 1/L + (1 - 2 y_il) s_l > 0.
(In the code, k is the label index.)
psi_i(y) = vec(outer(y_i - y, x_i)) is nonzero only on the rows of flipped
labels: the oracle writes it sparse (indices and values).

Compact blocks (optional, see "compact blocks" in the docs): psi_i(y) = A_i q_i(y)
with q_i(y) = y_i - y (L numbers) and A_i the d x L matrix whose column l is x_i in
label l's row of w.  So the solvers keep each block's dual vector as L numbers instead
of L F: A_i^T w holds the label scores s_l that solve computes anyway, and
||A_i e||^2 = ||x_i||^2 ||e||^2.
"""

import numpy as np

from ssvm_core._oracle cimport Corner, MaxOracle
from ssvm_core._typedefs cimport float64_t, int32_t, intp_t


cdef class MultiLabelOracle(MaxOracle):
    """Exact loss-augmented decoding of independent binary labels, without the GIL."""
    cdef readonly const float64_t[:, ::1] X     # (n, F) inputs
    cdef readonly const int32_t[:, ::1] Y       # (n, L) true labellings, 0/1
    cdef readonly intp_t n_labels, n_inputs
    cdef const float64_t[::1] sqnorms           # compact blocks: ||x_i||^2

    def __init__(self, X, Y, bint compact=True):
        X = np.ascontiguousarray(X, dtype=np.float64)
        Y = np.ascontiguousarray(Y, dtype=np.int32)
        if X.ndim != 2 or Y.ndim != 2 or X.shape[0] != Y.shape[0] or X.shape[0] == 0:
            raise ValueError(f"X (n, F) and Y (n, L) must have the same n >= 1, "
                             f"got shapes {X.shape} and {Y.shape}")
        if not np.all(np.isfinite(X)):
            raise ValueError("X has NaN or infinite values")
        if Y.size and (Y.min() < 0 or Y.max() > 1):
            raise ValueError("Y must hold 0/1 labels")
        self.X = X
        self.Y = Y
        self.n_inputs = X.shape[1]
        self.n_labels = Y.shape[1]
        # The protocol's attributes, fixed at construction (see ssvm_core/_oracle.pxd):
        self.n_blocks = X.shape[0]
        self.n_features = self.n_labels * self.n_inputs
        self.max_labels = self.n_labels            # longest labelling
        self.max_psi_nnz = self.n_features         # longest sparse psi
        self.dense_psi = False                     # we write (psi_idx, psi_val) pairs
        self.needs_gil = False                     # solve/evaluate are pure C
        if compact:                                # offer compact blocks: L coordinates
            self.sqnorms = np.einsum("ij,ij->i", X, X)
            self.max_coords = self.n_labels        # the largest block_coords(i)
            self.max_coord_nnz = self.n_labels     # the most entries of a q_i(y)
            self.max_expand = self.n_features      # the most entries of an A_i e

    def __reduce__(self):
        return (type(self), (np.asarray(self.X), np.asarray(self.Y), self.max_coords > 0))

    cdef float64_t _label_score(self, intp_t i, intp_t k, const float64_t* w) noexcept nogil:
        cdef intp_t f, F = self.n_inputs
        cdef float64_t acc = 0.0
        for f in range(F):
            acc += w[k * F + f] * self.X[i, f]
        return acc

    cdef void _write(self, intp_t i, const int32_t* labels, const float64_t* w,
                     Corner* out) noexcept nogil:
        # Fill the corner of labelling `labels`: psi_i(y), L_i(y) and H_i(y; w).
        cdef intp_t k, f, F = self.n_inputs, nnz = 0, wrong = 0
        cdef int32_t diff
        cdef float64_t value, dot = 0.0
        for k in range(self.n_labels):
            out.labels[k] = labels[k]
            diff = self.Y[i, k] - labels[k]
            if diff == 0:
                continue
            wrong += 1
            for f in range(F):
                value = diff * self.X[i, f]
                if value != 0.0:
                    out.psi_idx[nnz] = <int32_t> (k * F + f)
                    out.psi_val[nnz] = value
                    dot += w[k * F + f] * value
                    nnz += 1
        out.n_labels = self.n_labels
        out.psi_nnz = nnz
        out.loss = wrong / <float64_t> self.n_labels
        out.score = out.loss - dot
        if out.coord_idx != NULL:                  # the caller asks for q_i(y) = y_i - y
            out.coord_nnz = 0
            for k in range(self.n_labels):
                diff = self.Y[i, k] - labels[k]
                if diff != 0:
                    out.coord_idx[out.coord_nnz] = <int32_t> k
                    out.coord_val[out.coord_nnz] = diff
                    out.coord_nnz += 1

    cdef int solve(self, intp_t i, const float64_t* w, Corner* out) except -1 nogil:
        cdef intp_t k
        cdef int32_t truth
        cdef float64_t gain
        cdef float64_t score
        for k in range(self.n_labels):
            truth = self.Y[i, k]
            score = self._label_score(i, k, w)
            if out.theta != NULL:                  # compact: theta = A_i^T w, the s_l
                out.theta[k] = score
            gain = 1.0 / self.n_labels + (1 - 2 * truth) * score
            out.labels[k] = 1 - truth if gain > 0.0 else truth
        self._write(i, out.labels, w, out)
        return 0

    cdef int evaluate(self, intp_t i, const int32_t* labels, intp_t n_labels,
                      const float64_t* w, Corner* out) except -1 nogil:
        cdef intp_t k
        if n_labels != self.n_labels:
            with gil:
                raise ValueError(f"a labelling has {self.n_labels} entries, got {n_labels}")
        for k in range(n_labels):
            if labels[k] != 0 and labels[k] != 1:
                with gil:
                    raise ValueError(f"labels are 0 or 1, got {labels[k]}")
        self._write(i, labels, w, out)
        return 0

    # Compact blocks: the four methods below apply A_i (never formed).  A direction e comes
    # as nnz entries at increasing coordinates idx with values val.

    cdef intp_t block_coords(self, intp_t i) noexcept nogil:
        return self.n_labels if self.max_coords > 0 else 0

    cdef int coord_scores(self, intp_t i, const float64_t* w,
                          float64_t* theta) except -1 nogil:
        cdef intp_t k
        for k in range(self.n_labels):
            theta[k] = self._label_score(i, k, w)
        return 0

    cdef float64_t coord_sqnorm(self, intp_t i, const int32_t* idx, const float64_t* val,
                                intp_t nnz) except? -1 nogil:
        cdef intp_t j
        cdef float64_t total = 0.0
        for j in range(nnz):
            total += val[j] * val[j]
        return self.sqnorms[i] * total             # the columns have disjoint supports

    cdef intp_t coord_expand(self, intp_t i, const int32_t* idx, const float64_t* val,
                             intp_t nnz, int32_t* out_idx, float64_t* out_val) except -1 nogil:
        cdef intp_t j, f, m = 0, F = self.n_inputs
        for j in range(nnz):
            for f in range(F):
                out_idx[m] = <int32_t> (idx[j] * F + f)
                out_val[m] = val[j] * self.X[i, f]
                m += 1
        return m

    cdef int coord_add(self, intp_t i, const int32_t* idx, const float64_t* val, intp_t nnz,
                       float64_t* out, float64_t* out2, float64_t c2) except -1 nogil:
        cdef intp_t j, f, F = self.n_inputs
        for j in range(nnz):
            for f in range(F):
                out[idx[j] * F + f] += val[j] * self.X[i, f]
                if out2 != NULL:
                    out2[idx[j] * F + f] += c2 * val[j] * self.X[i, f]
        return 0
