"""One-pass Frank-Wolfe kernels for the n-slack structured SVM dual.

Each ``def`` kernel takes a ``SolverState`` (``ssvm_core.state``), reads its
arrays once, runs a whole pass in C (without the GIL when the oracle allows)
and writes the updated scalars back.  Notation follows Lacoste-Julien et al.
(2013): w = sum_i w_i, ell = sum_i ell_i, the corner of block i is
w_s = psi_i(y*) / (lam n), ell_s = L_i(y*) / n, and the block gap is
g_i = lam <w_i - w_s, w> - ell_i + ell_s.

Weighted averaging (iterate k weighted by k) is kept lazily in O(nnz) per
step: with R_k = k (k + 1) / 2 and u = sum_j R_{j-1} (w^(j) - w^(j-1)),
the average is w_avg = w - u / R_k (see ``SolverState.averaged_w``).
"""

import numpy as np

from ssvm_core._typedefs cimport float64_t, int32_t, intp_t
from ssvm_core._oracle cimport Corner, CornerBuffer, MaxOracle
from ssvm_core._blocks cimport (_below_ground_truth, _clear_psi, _corner_dense,
                                _direction_stats, _dot_block, _move_toward, _step_size,
                                _use_ground_truth)
from ssvm_core._sampling cimport _tree_draw, _tree_set


cdef struct _Blocks:
    # Raw view of a SolverState's block arrays.
    float64_t* values
    const intp_t* ptr
    const int32_t* support      # NULL for dense blocks
    float64_t* ell
    float64_t* gap_estimates


cdef inline const int32_t* _block_support(const _Blocks* b, intp_t i) noexcept nogil:
    return NULL if b.support == NULL else b.support + b.ptr[i]


cdef _Blocks _blocks_of(float64_t[::1] values, const intp_t[::1] ptr,
                        const int32_t[::1] support, float64_t[::1] ell,
                        float64_t[::1] gap_estimates):
    cdef _Blocks b
    b.values = &values[0]
    b.ptr = &ptr[0]
    b.support = NULL if support.shape[0] == 0 else &support[0]
    b.ell = &ell[0]
    b.gap_estimates = &gap_estimates[0]
    return b


cdef _Blocks _unpack(state):
    return _blocks_of(state.block_values, state.block_ptr, state.block_support,
                      state.block_ell, state.block_gap_estimates)


cdef struct _Sampler:
    # Which block each step visits: order[0..n_order) first, then one draw
    # per uniform proportional to the sum tree (gap sampling), if any.
    const intp_t* order
    intp_t n_order
    const float64_t* uniforms     # NULL without gap sampling
    intp_t n_uniforms
    float64_t* tree
    intp_t tree_size


cdef inline intp_t _next_block(const _Sampler* smp, intp_t t, intp_t n) noexcept nogil:
    if t < smp.n_order:
        return smp.order[t]
    return _tree_draw(smp.tree, smp.tree_size, n, smp.uniforms[t - smp.n_order])


cdef int _bcfw_steps(MaxOracle oracle, _Blocks* b, float64_t* w, float64_t* s,
                     float64_t* avg_u, const _Sampler* smp, float64_t lam,
                     bint line_search, float64_t* ell, float64_t* ell_avg,
                     intp_t* n_steps, intp_t* n_replaced, Corner* c) except -1 nogil:
    cdef intp_t n = oracle.n_blocks, t, i, m, j
    cdef float64_t scale = 1.0 / (lam * n), dot, sqnorm, ell_s, gap, gamma, ell_step
    cdef const float64_t* ws
    cdef float64_t* wi
    for t in range(smp.n_order + smp.n_uniforms):
        i = _next_block(smp, t, n)
        oracle.solve(i, w, c)
        if _below_ground_truth(c):
            _use_ground_truth(c, oracle.n_features)
            n_replaced[0] += 1
        ws = _corner_dense(c, s)
        wi = b.values + b.ptr[i]
        m = b.ptr[i + 1] - b.ptr[i]
        _direction_stats(wi, _block_support(b, i), m, ws, scale, w, &dot, &sqnorm)
        ell_s = c.loss / n
        gap = lam * dot - b.ell[i] + ell_s
        b.gap_estimates[i] = gap
        if smp.uniforms != NULL:
            _tree_set(smp.tree, smp.tree_size, i, gap if gap > 0.0 else 0.0)
        if line_search:
            gamma = _step_size(gap, lam * sqnorm)
        else:
            gamma = 2.0 * n / (n_steps[0] + 2.0 * n)
        j = n_steps[0] + 1                    # this step creates iterate j
        _move_toward(wi, _block_support(b, i), m, ws, scale, gamma, w, avg_u,
                     0.5 * (j - 1) * j)
        ell_step = gamma * (ell_s - b.ell[i])
        b.ell[i] += ell_step
        ell[0] += ell_step
        ell_avg[0] = ((j - 1.0) * ell_avg[0] + 2.0 * ell[0]) / (j + 1.0)
        n_steps[0] = j
        if c.psi_idx != NULL:
            _clear_psi(c, s)
    return 0


def _sum_tree(const float64_t[::1] weights):
    """Sum tree over weights (NaN and negative entries count as zero)."""
    cdef intp_t n = weights.shape[0], size = 1, i
    while size < n:
        size *= 2
    tree = np.zeros(2 * size)
    cdef float64_t[::1] tv = tree
    for i in range(n):
        tv[size + i] = weights[i] if weights[i] > 0.0 else 0.0   # NaN > 0 is false
    for i in range(size - 1, 0, -1):
        tv[i] = tv[2 * i] + tv[2 * i + 1]
    return tree, size


def sample_proportional(const float64_t[::1] weights, const float64_t[::1] uniforms):
    """Test hook: the blocks the gap sampler draws for ``uniforms`` (no updates)."""
    tree, size = _sum_tree(weights)
    cdef float64_t[::1] tv = tree
    out = np.empty(uniforms.shape[0], dtype=np.intp)
    cdef intp_t k
    for k in range(uniforms.shape[0]):
        out[k] = _tree_draw(&tv[0], size, weights.shape[0], uniforms[k])
    return out


def bcfw_pass(MaxOracle oracle, state, const intp_t[::1] order, bint line_search,
              gap_uniforms=None):
    """Block-coordinate FW steps (000 Alg. 4), one per entry of ``order``.

    With ``gap_uniforms`` (001 Alg. 2, gap sampling) the blocks in ``order``
    (those never visited) come first, then one block per uniform in [0, 1),
    drawn with probability proportional to its last gap estimate, which each
    step refreshes.  ``line_search=False`` uses the predefined step
    2n / (k + 2n).  Updates the state in place, including the lazy average
    when ``state.avg_u`` is set.
    """
    cdef _Blocks b = _unpack(state)
    cdef float64_t[::1] w = state.w
    cdef float64_t[::1] s = np.zeros(oracle.n_features)
    cdef float64_t[::1] avg_u = state.avg_u
    cdef float64_t* avg_ptr = NULL if avg_u.shape[0] == 0 else &avg_u[0]
    cdef float64_t ell = state.ell, ell_avg = state.ell_avg
    cdef intp_t n_steps = state.n_steps, n_replaced = 0
    cdef CornerBuffer buf = CornerBuffer(oracle)
    cdef float64_t lam = state.lam
    cdef _Sampler smp
    cdef const float64_t[::1] uniforms
    cdef float64_t[::1] tree
    smp.order = &order[0] if order.shape[0] else NULL
    smp.n_order = order.shape[0]
    smp.uniforms = NULL
    smp.n_uniforms = 0
    if gap_uniforms is not None:
        uniforms = gap_uniforms
        tree_arr, smp.tree_size = _sum_tree(state.block_gap_estimates)
        tree = tree_arr
        smp.tree = &tree[0]
        if uniforms.shape[0]:
            smp.uniforms = &uniforms[0]
            smp.n_uniforms = uniforms.shape[0]
    if smp.n_order + smp.n_uniforms == 0:
        return
    try:
        if oracle.needs_gil:
            _bcfw_steps(oracle, &b, &w[0], &s[0], avg_ptr, &smp, lam, line_search,
                        &ell, &ell_avg, &n_steps, &n_replaced, &buf.corner)
        else:
            with nogil:
                _bcfw_steps(oracle, &b, &w[0], &s[0], avg_ptr, &smp, lam, line_search,
                            &ell, &ell_avg, &n_steps, &n_replaced, &buf.corner)
    finally:
        # Completed steps are kept even if an oracle call failed part-way.
        state.ell = ell
        state.ell_avg = ell_avg
        state.n_steps = n_steps
        state.replaced_answers += n_replaced


cdef int _score_blocks(MaxOracle oracle, _Blocks* b, const float64_t* w, float64_t lam,
                       bint block_gaps, intp_t start, intp_t stop, float64_t* sum_scores,
                       Corner* c) except -1 nogil:
    cdef intp_t n = oracle.n_blocks, i
    cdef float64_t total = 0.0
    for i in range(start, stop):
        oracle.solve(i, w, c)
        if _below_ground_truth(c):          # max_y H_i >= H_i(y_i) = 0
            c.score = 0.0
        total += c.score
        if block_gaps:
            b.gap_estimates[i] = (lam * _dot_block(b.values + b.ptr[i], _block_support(b, i),
                                                   b.ptr[i + 1] - b.ptr[i], w)
                                  - b.ell[i] + c.score / n)
    sum_scores[0] = total
    return 0


def score_range(MaxOracle oracle, const float64_t[::1] w, state, intp_t start, intp_t stop):
    """sum_{start <= i < stop} max_y H_i(y; w); see ``score_pass``.

    Thread-safe for oracles with ``needs_gil == False`` (it runs without the
    GIL and writes only the block gaps of its own range).
    """
    cdef _Blocks b
    cdef bint block_gaps = state is not None
    cdef float64_t lam = state.lam if block_gaps else 1.0
    if block_gaps:
        b = _unpack(state)
    cdef CornerBuffer buf = CornerBuffer(oracle)
    cdef float64_t total = 0.0
    if not 0 <= start <= stop <= oracle.n_blocks:
        raise IndexError(f"block range [{start}, {stop}) outside [0, {oracle.n_blocks}]")
    if oracle.needs_gil:
        _score_blocks(oracle, &b, &w[0], lam, block_gaps, start, stop, &total, &buf.corner)
    else:
        with nogil:
            _score_blocks(oracle, &b, &w[0], lam, block_gaps, start, stop, &total,
                          &buf.corner)
    return total


cdef int _fw_corners(MaxOracle oracle, _Blocks* b, const float64_t* w, float64_t lam,
                     int32_t* labels, intp_t* n_labels, float64_t* ws,
                     float64_t* ell_s, intp_t* n_replaced, Corner* c) except -1 nogil:
    # Batch FW, phase 1: all corners at w; sum w_s and ell_s; exact block gaps.
    cdef intp_t n = oracle.n_blocks, d = oracle.n_features, i, k
    cdef intp_t stride = oracle.max_labels
    cdef float64_t scale = 1.0 / (lam * n)
    ell_s[0] = 0.0
    for i in range(n):
        oracle.solve(i, w, c)
        if _below_ground_truth(c):
            _use_ground_truth(c, d)
            n_replaced[0] += 1
        for k in range(c.n_labels):
            labels[i * stride + k] = c.labels[k]
        n_labels[i] = c.n_labels
        if c.psi_idx == NULL:
            for k in range(d):
                ws[k] += scale * c.psi_val[k]
        else:
            for k in range(c.psi_nnz):
                ws[c.psi_idx[k]] += scale * c.psi_val[k]
        ell_s[0] += c.loss / n
        b.gap_estimates[i] = (lam * _dot_block(b.values + b.ptr[i], _block_support(b, i),
                                               b.ptr[i + 1] - b.ptr[i], w)
                              - b.ell[i] + c.score / n)
    return 0


cdef int _fw_move(MaxOracle oracle, _Blocks* b, float64_t* w, float64_t* s,
                  float64_t* avg_u, float64_t avg_coef, float64_t lam, float64_t gamma,
                  const int32_t* labels, const intp_t* n_labels, Corner* c) except -1 nogil:
    # Batch FW, phase 2: move every block toward its corner with the common gamma.
    cdef intp_t n = oracle.n_blocks, i
    cdef float64_t scale = 1.0 / (lam * n), loss
    cdef const float64_t* ws
    for i in range(n):
        if n_labels[i] < 0:                  # replaced by the ground truth: psi = 0
            ws, loss = s, 0.0                # s is all zeros between steps
        else:
            oracle.evaluate(i, labels + i * oracle.max_labels, n_labels[i], w, c)
            ws, loss = _corner_dense(c, s), c.loss
        _move_toward(b.values + b.ptr[i], _block_support(b, i), b.ptr[i + 1] - b.ptr[i],
                     ws, scale, gamma, w, avg_u, avg_coef)
        b.ell[i] += gamma * (loss / n - b.ell[i])
        if n_labels[i] >= 0 and c.psi_idx != NULL:
            _clear_psi(c, s)
    return 0


def fw_step(MaxOracle oracle, state, bint line_search):
    """One batch Frank-Wolfe iteration (000 Alg. 2); returns the FW gap at the old w.

    The gap returned is exact (it equals P(w) - D(alpha) before the step) and
    the exact block gaps are left in ``state.block_gap_estimates``.
    """
    cdef _Blocks b = _unpack(state)
    cdef intp_t n = oracle.n_blocks, d = oracle.n_features
    cdef float64_t[::1] w = state.w
    cdef float64_t[::1] ws = np.zeros(d)
    cdef float64_t[::1] s = np.zeros(d)
    cdef float64_t[::1] avg_u = state.avg_u
    cdef float64_t* avg_ptr = NULL if avg_u.shape[0] == 0 else &avg_u[0]
    cdef int32_t[::1] labels = np.zeros(max(n * oracle.max_labels, 1), dtype=np.int32)
    cdef intp_t[::1] n_labels = np.zeros(n, dtype=np.intp)
    cdef CornerBuffer buf = CornerBuffer(oracle)
    cdef float64_t lam = state.lam, ell = state.ell, ell_s = 0.0, dot = 0.0, sq = 0.0
    cdef float64_t gap, gamma, diff
    cdef intp_t k, j = state.n_steps + 1, n_replaced = 0
    if oracle.needs_gil:
        _fw_corners(oracle, &b, &w[0], lam, &labels[0], &n_labels[0], &ws[0], &ell_s,
                    &n_replaced, &buf.corner)
    else:
        with nogil:
            _fw_corners(oracle, &b, &w[0], lam, &labels[0], &n_labels[0], &ws[0], &ell_s,
                        &n_replaced, &buf.corner)
    for k in range(d):
        diff = w[k] - ws[k]
        dot += diff * w[k]
        sq += diff * diff
    gap = lam * dot - ell + ell_s
    gamma = _step_size(gap, lam * sq) if line_search else 2.0 / (j + 1.0)
    if oracle.needs_gil:
        _fw_move(oracle, &b, &w[0], &s[0], avg_ptr, 0.5 * (j - 1) * j, lam, gamma,
                 &labels[0], &n_labels[0], &buf.corner)
    else:
        with nogil:
            _fw_move(oracle, &b, &w[0], &s[0], avg_ptr, 0.5 * (j - 1) * j, lam, gamma,
                     &labels[0], &n_labels[0], &buf.corner)
    state.ell = ell + gamma * (ell_s - ell)
    state.ell_avg = ((j - 1.0) * state.ell_avg + 2.0 * state.ell) / (j + 1.0)
    state.n_steps = j
    state.replaced_answers += n_replaced
    return gap
