# The max-oracle protocol.  Changing this file changes the ABI that
# ssvm-oracles compiles against: bump ssvm-core's minor version.
from ssvm_core._typedefs cimport float64_t, int32_t, intp_t


ctypedef struct Corner:
    # One oracle answer for block i; the buffers are owned by the caller.
    int32_t* labels        # the labelling y, n_labels entries (<= max_labels)
    intp_t n_labels
    # psi_idx: feature indices of psi_i(y) (sparse oracles); repeated indices
    # add up; NULL for dense oracles
    int32_t* psi_idx
    float64_t* psi_val     # values; n_features entries for dense oracles
    intp_t psi_nnz         # entries written (n_features for dense oracles)
    float64_t loss         # L_i(y)
    float64_t score        # H_i(y; w) = L_i(y) - <w, psi_i(y)>


cdef class MaxOracle:
    cdef readonly intp_t n_blocks
    cdef readonly intp_t n_features
    cdef readonly intp_t max_labels      # longest labelling of any block
    cdef readonly intp_t max_psi_nnz     # longest sparse psi (n_features if dense)
    cdef readonly bint dense_psi
    cdef readonly bint needs_gil         # fixed at construction

    cdef int solve(self, intp_t i, const float64_t* w, Corner* out) except -1 nogil
    cdef int evaluate(self, intp_t i, const int32_t* labels, intp_t n_labels,
                      const float64_t* w, Corner* out) except -1 nogil
    # Up to k distinct high-scoring labellings, the argmax first; returns how
    # many were written (the base class writes solve's answer only).
    cdef intp_t solve_many(self, intp_t i, const float64_t* w, intp_t k,
                           Corner* outs) except -1 nogil


cdef class CornerBuffer:
    # Owns the memory behind one Corner, sized for a given oracle.
    cdef Corner corner
    cdef object _labels, _idx, _val


cdef class PythonOracle(MaxOracle):
    cdef readonly object obj
    cdef object _w_view
    cdef const float64_t* _w_ptr
    cdef object _view_of(self, const float64_t* w)
    cdef int _store(self, object labels, object psi, object loss, object w,
                    Corner* out, str where) except -1
