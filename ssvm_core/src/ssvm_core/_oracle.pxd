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
    # Compact blocks (oracles with max_coords > 0; see MaxOracle.coord_*).  The
    # caller sets these buffers to ask for them, else they are NULL and ignored.
    # coord_idx/coord_val: q_i(y) in the block's coordinates, psi_i(y) = A_i q_i(y)
    # (COO, repeated indices add up); theta: A_i^T w, block_coords(i) entries
    # (solve only: evaluate leaves it alone).
    int32_t* coord_idx
    float64_t* coord_val
    intp_t coord_nnz
    float64_t* theta
    # With coord_idx set, True when the caller reads no psi (its steps run on the
    # block coordinates): an oracle may then leave psi_idx, psi_val and psi_nnz
    # unwritten.  Ignored without coord_idx.
    bint coords_only


cdef class MaxOracle:
    cdef readonly intp_t n_blocks
    cdef readonly intp_t n_features
    cdef readonly intp_t max_labels      # longest labelling of any block
    cdef readonly intp_t max_psi_nnz     # longest sparse psi (n_features if dense)
    cdef readonly bint dense_psi
    cdef readonly bint needs_gil         # fixed at construction
    # Compact blocks: the largest block_coords(i), 0 when the oracle offers none;
    # max_coord_nnz bounds coord_nnz, max_expand the entries coord_expand writes.
    cdef readonly intp_t max_coords
    cdef readonly intp_t max_coord_nnz
    cdef readonly intp_t max_expand

    cdef int solve(self, intp_t i, const float64_t* w, Corner* out) except -1 nogil
    cdef int evaluate(self, intp_t i, const int32_t* labels, intp_t n_labels,
                      const float64_t* w, Corner* out) except -1 nogil
    # Up to k distinct high-scoring labellings, the argmax first; returns how
    # many were written (the base class writes solve's answer only).
    cdef intp_t solve_many(self, intp_t i, const float64_t* w, intp_t k,
                           Corner* outs) except -1 nogil
    # A hint that block i comes next: ask for its data in the cache (the solvers
    # call it one step ahead of solve; the base class does nothing)
    cdef void prefetch(self, intp_t i) noexcept nogil
    # Compact blocks: block i's dual vector is kept as coordinates b with
    # v_i = A_i b, A_i a d x block_coords(i) matrix the oracle never forms.
    cdef intp_t block_coords(self, intp_t i) noexcept nogil
    # theta = A_i^T w
    cdef int coord_scores(self, intp_t i, const float64_t* w,
                          float64_t* theta) except -1 nogil
    # The other four take sparse coordinates e: nnz entries at the distinct,
    # increasing indices idx with values val (a step touches few coordinates).
    # ||A_i e||^2
    cdef float64_t coord_sqnorm(self, intp_t i, const int32_t* idx, const float64_t* val,
                                intp_t nnz) except? -1 nogil
    # A_i e as COO entries out_idx/out_val (repeated indices add up); returns how
    # many were written (at most max_expand)
    cdef intp_t coord_expand(self, intp_t i, const int32_t* idx, const float64_t* val,
                             intp_t nnz, int32_t* out_idx, float64_t* out_val) except -1 nogil
    # out += A_i e and, when out2 is not NULL, out2 += c2 A_i e (dense d-vectors)
    cdef int coord_add(self, intp_t i, const int32_t* idx, const float64_t* val, intp_t nnz,
                       float64_t* out, float64_t* out2, float64_t c2) except -1 nogil
    # <A_i e, w> (a d-vector w); work_idx/work_val: max_expand entries of the
    # caller's scratch, into which the base class expands e (fast oracles that
    # read w directly leave them alone)
    cdef float64_t coord_dot(self, intp_t i, const int32_t* idx, const float64_t* val,
                             intp_t nnz, const float64_t* w, int32_t* work_idx,
                             float64_t* work_val) except? -1 nogil

cdef class DelegatingOracle(MaxOracle):
    # Forwards the whole protocol (the C methods above, exact, block_support and
    # other attributes) to the wrapped oracle, whose sizes and flags it takes at
    # construction; wrappers override what they change.
    cdef readonly MaxOracle oracle


cdef class CornerBuffer:
    # Owns the memory behind one Corner, sized for a given oracle.
    cdef Corner corner
    cdef object _owner, _labels, _idx, _val, _coord_idx, _coord_val, _theta


cdef class PythonOracle(MaxOracle):
    cdef readonly object obj
    cdef object _w_view
    cdef const float64_t* _w_ptr
    cdef object _view_of(self, const float64_t* w)
    cdef int _store(self, object labels, object psi, object loss, object w,
                    Corner* out, str where) except -1
