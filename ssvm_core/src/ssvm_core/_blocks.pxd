# Storage-independent pieces of one block step: the primal side of the dual
# point (Primal), the per-block bookkeeping a kernel writes (Ledger), corner
# buffers seen as dense vectors, step sizes and the ground-truth fallback.
# How a block's w_i is stored and moved is the block store's business
# (``_storage.pxd``).
from ssvm_core._typedefs cimport float64_t, int32_t, intp_t
from libc.math cimport fabs

from ssvm_core._oracle cimport Corner


cdef struct Ledger:
    # Per-block bookkeeping of a SolverState that the kernels write: ell_i
    # and the last gap estimate of every block.
    float64_t* ell
    float64_t* gap_estimates


cdef struct Primal:
    # The primal side of a dual point: v = A alpha and w = clip(v, lower, upper)
    # (Osokin et al. (2016), App. H).  Without a box, w and v are the same array and lower ==
    # upper == NULL.  avg_u (NULL without averaging) accumulates changes of v.
    float64_t* v
    float64_t* w
    const float64_t* lower
    const float64_t* upper
    float64_t* avg_u


cdef inline float64_t clip(float64_t x, float64_t lo, float64_t hi) noexcept nogil:
    return lo if x < lo else (hi if x > hi else x)


cdef inline void scatter_psi(const Corner* c, float64_t* s) noexcept nogil:
    """s[idx] += val for a sparse corner (s must be zero on entry)."""
    cdef intp_t k
    for k in range(c.psi_nnz):
        s[c.psi_idx[k]] += c.psi_val[k]


cdef inline void clear_psi(const Corner* c, float64_t* s) noexcept nogil:
    """Undo scatter_psi: zero s at the corner's indices."""
    cdef intp_t k
    for k in range(c.psi_nnz):
        s[c.psi_idx[k]] = 0.0


cdef inline const float64_t* corner_dense(const Corner* c, float64_t* s) noexcept nogil:
    """Dense view of psi: the corner's own buffer, or s after scattering."""
    if c.psi_idx == NULL:
        return c.psi_val
    scatter_psi(c, s)
    return s


cdef inline float64_t step_size(float64_t gap, float64_t curvature) noexcept nogil:
    """Line-search step gap / curvature clipped to [0, 1].

    curvature = lam ||w_i - w_s||^2.  When it is 0 the corner has the same w
    and only the loss term moves: take the full step iff it increases the dual.
    """
    if curvature > 0.0:
        if gap <= 0.0:
            return 0.0
        return 1.0 if gap >= curvature else gap / curvature
    return 1.0 if gap > 0.0 else 0.0


cdef inline bint below_ground_truth(const Corner* c) noexcept nogil:
    """The answer scores below the ground truth (H_i(y_i; w) = 0): an inexact oracle.

    A margin of 1e-12 relative to |<w, psi>| absorbs the rounding of exact ones.
    """
    return c.score < -1e-12 * (1.0 + fabs(c.loss - c.score))


cdef inline void apply_delta(Primal* p, const int32_t* idx, const float64_t* val,
                             intp_t nnz, float64_t avg_coef) noexcept nogil:
    """v += delta for COO entries (repeats add up); w = clip(v) and the average follow."""
    cdef intp_t q
    cdef int32_t g
    for q in range(nnz):
        g = idx[q]
        p.v[g] += val[q]
        if p.lower != NULL:
            p.w[g] = clip(p.v[g], p.lower[g], p.upper[g])
        if p.avg_u != NULL:
            p.avg_u[g] += avg_coef * val[q]


cdef inline void use_ground_truth(Corner* c, intp_t n_features) noexcept nogil:
    """Replace the answer by the ground-truth corner: psi = 0, L = 0, H = 0.

    ``n_labels = -1`` marks the replacement for callers that stored labels.
    """
    cdef intp_t k
    if c.psi_idx == NULL:
        for k in range(n_features):
            c.psi_val[k] = 0.0
    else:
        c.psi_nnz = 0
    c.coord_nnz = 0
    c.loss = 0.0
    c.score = 0.0
    c.n_labels = -1
