# Per-block dual vectors w_i and the vector algebra of one block step.
#
# All block vectors live in one flat array; block i occupies
# values[ptr[i]:ptr[i+1]].  A block is stored in one of three ways:
# - dense (support == NULL, m == d): entry k is feature k;
# - sparse: entry k is feature support[k];
# - compact (Blocks.compact): the entries are coordinates b with
#   w_i = A_i b, A_i the oracle's block basis (MaxOracle.coord_*).
# A step direction is e = a w_i + c s.  For dense and sparse blocks the corner
# s is a dense length-d array; for compact ones it is in block coordinates
# (the corner's q_i(y)), dots with w read theta = A_i^T w from the oracle
# answer, norms come from the oracle and moves are expanded into v by it.
# A compact block is a few nonzeros among its coordinates (a chain word's
# labels that corners ever gave it), so each block has a bitmask of the
# coordinates that may be nonzero (Blocks.mask): every coordinate a corner or
# atom of the block brings into the scratch s is marked there first
# (corner_frame, mark_coords), and a step reads and writes only the marked
# ones.  Marks only accumulate, so the mask stays a superset of the block's
# nonzeros and of the corner s; it is rebuilt from the values and the atoms
# when a state is loaded (SolverState).
# The block_* helpers dispatch on the storage; the affine_* ones are the
# dense/sparse kernels.
from ssvm_core._typedefs cimport float64_t, int32_t, intp_t
from libc.math cimport fabs
from libc.stdint cimport uint64_t

from ssvm_core._oracle cimport Corner, MaxOracle
from ssvm_core._vector cimport dot, dot_gather, ssvm_ctz64, ssvm_prefetch


cdef struct Blocks:
    # Raw view of a SolverState's block arrays.
    float64_t* values
    const intp_t* ptr
    const int32_t* support      # NULL for dense and compact blocks
    float64_t* ell
    float64_t* gap_estimates
    bint compact                # values are block coordinates (see above)
    uint64_t* mask              # compact: block i's bits at mask[mask_ptr[i]:mask_ptr[i+1]]
    const intp_t* mask_ptr
    int32_t* e_idx              # compact: scratch for one sparse direction (max_coords)
    float64_t* e
    int32_t* ex_idx             # compact: scratch for A_i e (max_expand entries)
    float64_t* ex_val
    int32_t* pos                # compact: n_features entries, -1 between uses


cdef inline const int32_t* block_support(const Blocks* b, intp_t i) noexcept nogil:
    return NULL if b.support == NULL else b.support + b.ptr[i]


cdef inline float64_t dot_block(const float64_t* wi, const int32_t* support, intp_t m,
                                const float64_t* w) noexcept nogil:
    """<w_i, w> of a dense (support NULL) or sparse block."""
    if support == NULL:
        return dot(wi, w, m)
    return dot_gather(w, support, wi, m)


cdef struct Primal:
    # The primal side of a dual point: v = A alpha and w = clip(v, lower, upper)
    # (Osokin et al. (2016), App. H).  Without a box, w and v are the same array and lower ==
    # upper == NULL.  avg_u (NULL without averaging) accumulates changes of v.
    float64_t* v
    float64_t* w
    const float64_t* lower
    const float64_t* upper
    float64_t* avg_u


cdef inline void affine_stats(const float64_t* wi, const int32_t* support, intp_t m,
                              float64_t a, const float64_t* s, float64_t c,
                              const float64_t* w, float64_t* dot_out,
                              float64_t* sqnorm) noexcept nogil:
    """For the block direction e = a w_i + c s: dot_out = <e, w> and sqnorm = ||e||^2.

    ``s`` is dense (length d); two partial sums each, so the additions pipeline.
    """
    cdef float64_t d0 = 0.0, d1 = 0.0, q0 = 0.0, q1 = 0.0, e0, e1
    cdef intp_t k, m2 = m - m % 2
    if support == NULL:
        for k in range(0, m2, 2):
            e0 = a * wi[k] + c * s[k]
            e1 = a * wi[k + 1] + c * s[k + 1]
            d0 += e0 * w[k]
            d1 += e1 * w[k + 1]
            q0 += e0 * e0
            q1 += e1 * e1
        for k in range(m2, m):
            e0 = a * wi[k] + c * s[k]
            d0 += e0 * w[k]
            q0 += e0 * e0
    else:
        for k in range(0, m2, 2):
            e0 = a * wi[k] + c * s[support[k]]
            e1 = a * wi[k + 1] + c * s[support[k + 1]]
            d0 += e0 * w[support[k]]
            d1 += e1 * w[support[k + 1]]
            q0 += e0 * e0
            q1 += e1 * e1
        for k in range(m2, m):
            e0 = a * wi[k] + c * s[support[k]]
            d0 += e0 * w[support[k]]
            q0 += e0 * e0
    dot_out[0] = d0 + d1
    sqnorm[0] = q0 + q1


cdef inline float64_t clip(float64_t x, float64_t lo, float64_t hi) noexcept nogil:
    return lo if x < lo else (hi if x > hi else x)


cdef inline void affine_move(float64_t* wi, const int32_t* support, intp_t m,
                             float64_t a, const float64_t* s, float64_t c,
                             Primal* p, float64_t avg_coef) noexcept nogil:
    """w_i += a w_i + c s; v gets the same change, w = clip(v) follows it and
    avg_u += avg_coef * change."""
    cdef float64_t delta
    cdef intp_t k, g
    if support == NULL and p.lower == NULL:
        if p.avg_u == NULL:
            for k in range(m):
                delta = a * wi[k] + c * s[k]
                wi[k] += delta
                p.v[k] += delta
        else:
            for k in range(m):
                delta = a * wi[k] + c * s[k]
                wi[k] += delta
                p.v[k] += delta
                p.avg_u[k] += avg_coef * delta
        return
    for k in range(m):
        g = k if support == NULL else support[k]
        delta = a * wi[k] + c * s[g]
        wi[k] += delta
        p.v[g] += delta
        if p.lower != NULL:
            p.w[g] = clip(p.v[g], p.lower[g], p.upper[g])
        if p.avg_u != NULL:
            p.avg_u[g] += avg_coef * delta


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


cdef inline void mark_coords(const Blocks* b, intp_t i, const int32_t* idx,
                             intp_t nnz) noexcept nogil:
    """Mark compact block i's coordinates idx as possibly nonzero (see the top)."""
    cdef uint64_t* words = b.mask + b.mask_ptr[i]
    cdef intp_t q
    for q in range(nnz):
        words[idx[q] >> 6] |= (<uint64_t> 1) << (idx[q] & 63)


cdef inline void prefetch_block(const Blocks* b, intp_t i) noexcept nogil:
    """Ask for the cache lines of compact block i's marked coordinates.

    A compact block's few nonzeros are scattered over its coordinates, so the
    step's reads of them wait on memory one line at a time; a kernel calls
    this before the block's oracle call, which then hides the wait.  The
    mask words are read here: ask for them a step earlier (``prefetch_mask``).
    """
    cdef const float64_t* wi
    cdef const uint64_t* words
    cdef intp_t q, k, line = -1
    cdef uint64_t bits
    if not b.compact:
        return
    wi = b.values + b.ptr[i]
    words = b.mask + b.mask_ptr[i]
    for q in range(b.mask_ptr[i + 1] - b.mask_ptr[i]):
        bits = words[q]
        while bits:
            k = (q << 6) + ssvm_ctz64(bits)
            bits &= bits - 1
            if k >> 3 != line:              # 8 doubles to a 64-byte line
                line = k >> 3
                ssvm_prefetch(wi + k, 8)


cdef inline void prefetch_mask(const Blocks* b, intp_t i) noexcept nogil:
    """Ask for the cache lines of compact block i's mask (see ``prefetch_block``)."""
    if b.compact:
        ssvm_prefetch(b.mask + b.mask_ptr[i], 8 * (b.mask_ptr[i + 1] - b.mask_ptr[i]))


cdef inline intp_t compact_direction(const Blocks* b, intp_t i, float64_t a,
                                     const float64_t* s, float64_t c) noexcept nogil:
    """e = a b_i + c s (s NULL: zero) of compact block i on its mask: the nonzero
    entries, at increasing coordinates, into b.e_idx and b.e; returns how many.

    With a = 0 (a pairwise step's direction) the block's values are not read.
    """
    cdef const float64_t* wi = b.values + b.ptr[i]
    cdef const uint64_t* words = b.mask + b.mask_ptr[i]
    cdef intp_t q, k, nnz = 0
    cdef uint64_t bits
    cdef float64_t ek
    for q in range(b.mask_ptr[i + 1] - b.mask_ptr[i]):
        bits = words[q]
        while bits:
            k = (q << 6) + ssvm_ctz64(bits)
            bits &= bits - 1
            if a == 0.0:
                ek = 0.0 if s == NULL else c * s[k]
            else:
                ek = a * wi[k] if s == NULL else a * wi[k] + c * s[k]
            if ek != 0.0:
                b.e_idx[nnz] = <int32_t> k
                b.e[nnz] = ek
                nnz += 1
    return nnz


cdef inline const float64_t* corner_frame(const Corner* c, const Blocks* b, intp_t i,
                                          float64_t* s) noexcept nogil:
    """The corner of block i in the block's frame: psi (dense length d) or, for
    compact blocks, q_i(y) scattered into s (block coordinates, marked)."""
    cdef intp_t k
    if b.compact:
        mark_coords(b, i, c.coord_idx, c.coord_nnz)
        for k in range(c.coord_nnz):
            s[c.coord_idx[k]] += c.coord_val[k]
        return s
    return corner_dense(c, s)


cdef inline void clear_frame(const Corner* c, const Blocks* b, float64_t* s) noexcept nogil:
    """Undo corner_frame (s is all zeros again)."""
    cdef intp_t k
    if b.compact:
        for k in range(c.coord_nnz):
            s[c.coord_idx[k]] = 0.0
    elif c.psi_idx != NULL:
        clear_psi(c, s)


cdef inline float64_t block_dot(const Blocks* b, intp_t i, const float64_t* w,
                                const float64_t* theta) noexcept nogil:
    """<w_i, w>; compact blocks read theta = A_i^T w instead of w."""
    cdef const float64_t* wi = b.values + b.ptr[i]
    cdef intp_t m = b.ptr[i + 1] - b.ptr[i]
    if b.compact:
        m = compact_direction(b, i, 1.0, NULL, 0.0)
        return dot_gather(theta, b.e_idx, b.e, m)
    return dot_block(wi, block_support(b, i), m, w)


cdef inline intp_t block_stats(MaxOracle oracle, const Blocks* b, intp_t i, float64_t a,
                               const float64_t* s, float64_t c, const float64_t* w,
                               const float64_t* theta, float64_t* dot_out,
                               float64_t* sqnorm) except -1 nogil:
    """For e = a w_i + c s: dot_out = <e, w> and sqnorm = ||e||^2 (see affine_stats).

    Compact blocks: e is formed in block coordinates on the block's mask (its
    nonzero entries are left in b.e_idx, b.e and their number is returned, see
    ``block_move_again``), <e, w> = <e, theta> (theta NULL: dot_out is left
    alone) and ||A_i e||^2 comes from the oracle.  Other blocks return 0.
    """
    cdef float64_t* wi = b.values + b.ptr[i]
    cdef intp_t m = b.ptr[i + 1] - b.ptr[i]
    if not b.compact:
        affine_stats(wi, block_support(b, i), m, a, s, c, w, dot_out, sqnorm)
        return 0
    m = compact_direction(b, i, a, s, c)
    if theta != NULL:
        dot_out[0] = dot_gather(theta, b.e_idx, b.e, m)
    sqnorm[0] = oracle.coord_sqnorm(i, b.e_idx, b.e, m)
    return m


cdef inline int block_move(MaxOracle oracle, const Blocks* b, intp_t i, float64_t a,
                           const float64_t* s, float64_t c, Primal* p,
                           float64_t avg_coef) except -1 nogil:
    """w_i += a w_i + c s, with v, w = clip(v) and the average following (see
    affine_move).  Compact blocks: the change e of the coordinates (on the
    block's mask) is expanded into v by the oracle (only the entries A_i e
    touches)."""
    cdef float64_t* wi = b.values + b.ptr[i]
    cdef intp_t m = b.ptr[i + 1] - b.ptr[i]
    if not b.compact:
        affine_move(wi, block_support(b, i), m, a, s, c, p, avg_coef)
        return 0
    return _move_formed(oracle, b, i, compact_direction(b, i, a, s, c), p, avg_coef)


cdef inline int _move_formed(MaxOracle oracle, const Blocks* b, intp_t i, intp_t m,
                             Primal* p, float64_t avg_coef) except -1 nogil:
    """Compact block i += the m entries of e in b.e_idx, b.e; v, w = clip(v) and
    the average follow A_i e."""
    cdef float64_t* wi = b.values + b.ptr[i]
    cdef intp_t q, nnz
    for q in range(m):
        wi[b.e_idx[q]] += b.e[q]
    if p.lower == NULL:                  # w is v: one fused pass over A_i e
        oracle.coord_add(i, b.e_idx, b.e, m, p.v, p.avg_u, avg_coef)
        return 0
    nnz = oracle.coord_expand(i, b.e_idx, b.e, m, b.ex_idx, b.ex_val)
    apply_delta(p, b.ex_idx, b.ex_val, nnz, avg_coef)
    return 0


cdef inline int block_move_again(MaxOracle oracle, const Blocks* b, intp_t i, intp_t m,
                                 float64_t factor, float64_t a, const float64_t* s,
                                 float64_t c, Primal* p, float64_t avg_coef) except -1 nogil:
    """block_move by factor (a w_i + c s), right after ``block_stats(b, i, a, s, c)``
    returned m, with no other direction formed in between.

    A compact block without a box moves by factor times the m entries that
    block_stats formed instead of forming them again (one walk of the mask
    and of the block's values fewer); otherwise this is block_move with the
    coefficients factor a and factor c.
    """
    cdef intp_t q
    if not b.compact or p.lower != NULL:
        return block_move(oracle, b, i, factor * a, s, factor * c, p, avg_coef)
    for q in range(m):
        b.e[q] *= factor
    return _move_formed(oracle, b, i, m, p, avg_coef)


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
