"""One-pass Frank-Wolfe kernels for the n-slack structured SVM dual.

Each ``def`` kernel takes a ``SolverState`` (``ssvm_core.state``), reads its
arrays once, runs a whole pass in C (without the GIL when the oracle allows)
and writes the updated scalars back.  Notation follows Lacoste-Julien et al.
(2013): v = sum_i v_i = A alpha, ell = sum_i ell_i, the corner of block i is
v_s = psi_i(y*) / (lam n), ell_s = L_i(y*) / n, and the block gap is
g_i = lam <v_i - v_s, w> - ell_i + ell_s, where w = v without box
constraints and w = clip(v, lower, upper) with them (Osokin et al. (2016), App. H, Alg. 8-9;
the oracle is called at w; with line search the step sizes are exact along v, see
``_linesearch.pxd``).

Weighted averaging (iterate k weighted by k) is kept lazily in O(nnz) per
step: with R_k = k (k + 1) / 2 and u = sum_j R_{j-1} (v^(j) - v^(j-1)),
the average is v_avg = v - u / R_k (see ``SolverState.averaged_w``).
"""

import numpy as np

from ssvm_core._typedefs cimport float64_t, int32_t, intp_t
from ssvm_core._oracle cimport Corner, CornerBuffer, MaxOracle
from ssvm_core._atoms cimport ActiveSets, BlockAtoms
from ssvm_core._blocks cimport Ledger, Primal, below_ground_truth, step_size, use_ground_truth
from ssvm_core._sampling cimport (Sampler, draw_ahead, next_block, prefetch_steps,
                                  set_gap_weight)
from ssvm_core._view cimport StateView
from ssvm_core._linesearch cimport LINE_WORK, Breakpoint, box_search
from ssvm_core._storage cimport BlockStore, Direction

from ssvm_core.step_counts import StepCounts


cdef int bcfw_steps(MaxOracle oracle, BlockStore st, Ledger* b, Primal* p, float64_t* s,
                    Sampler* smp, float64_t lam, bint line_search,
                    float64_t* ell, float64_t* ell_avg, intp_t* n_steps,
                    intp_t* n_replaced, Corner* c, Direction* e,
                    float64_t* line_work) except -1 nogil:
    # line_work: LINE_WORK * n_features doubles for the exact box line search (unused
    # without a box).
    cdef intp_t n = oracle.n_blocks, t, i, j
    cdef float64_t scale = 1.0 / (lam * n), ell_s, gap, gamma, ell_step
    cdef const float64_t* vs
    for t in range(smp.n_order + smp.n_uniforms):
        i = next_block(smp, t, n)
        prefetch_steps(oracle, st, NULL, smp, t, n)
        oracle.solve(i, p.w, c)
        if below_ground_truth(c):
            use_ground_truth(c, oracle.n_features)
            n_replaced[0] += 1
        vs = st.frame(c, i, s)
        st.stats(oracle, i, 1.0, vs, -scale, p.w, c.theta, e)     # e = w_i - v_s
        ell_s = c.loss / n
        gap = lam * e.dot - b.ell[i] + ell_s
        b.gap_estimates[i] = gap
        set_gap_weight(smp, i, gap)
        draw_ahead(oracle, st, NULL, smp, t, n)
        if line_search and p.lower != NULL:
            gamma = st.box_step(oracle, e, -1.0, p, ell_s - b.ell[i], lam, 1.0, line_work,
                                NULL)
        elif line_search:
            gamma = step_size(gap, lam * e.sqnorm)
        else:
            gamma = 2.0 * n / (n_steps[0] + 2.0 * n)
        j = n_steps[0] + 1                    # this step creates iterate j
        st.move(oracle, e, -gamma, p, 0.5 * (j - 1) * j)     # toward the corner
        ell_step = gamma * (ell_s - b.ell[i])
        b.ell[i] += ell_step
        ell[0] += ell_step
        ell_avg[0] = ((j - 1.0) * ell_avg[0] + 2.0 * ell[0]) / (j + 1.0)
        n_steps[0] = j
        st.clear_frame(c, s)
    return 0


def bcfw_pass(MaxOracle oracle, state, const intp_t[::1] order, bint line_search,
              gap_uniforms=None):
    """Block-coordinate FW steps (Lacoste-Julien et al. (2013), Alg. 4, Osokin et al. (2016), Alg.
    8 with a box), one per block drawn.

    The blocks in ``order`` come first; with ``gap_uniforms`` (Osokin et al. (2016), Alg. 2,
    gap sampling) then one block per uniform in [0, 1), drawn with
    probability proportional to its last gap estimate, which each step
    refreshes.  ``line_search=False`` uses the predefined step 2n / (k + 2n).
    Moves the dual point in place, including the lazy average when
    ``state.avg_u`` is set, and returns a ``StepCounts`` that
    ``state.record_steps`` has booked (ell, the step and replacement counts).
    """
    if state.atoms is not None:
        raise ValueError("this state keeps active sets, which plain BCFW steps would leave "
                         "out of sync with alpha; use _active.active_pass(step='fw')")
    state.invalidate_gaps()              # the iterate moves
    cdef StateView view = StateView(state, order, gap_uniforms, oracle)
    cdef float64_t[::1] s = view.store.frame_scratch(oracle)
    cdef float64_t ell = state.ell, ell_avg = state.ell_avg
    cdef intp_t n_steps = state.n_steps, n_replaced = 0
    cdef CornerBuffer buf = view.store.corner_buffer(oracle, psi=False)
    cdef float64_t lam = state.lam
    cdef float64_t[::1] line_work = np.zeros(LINE_WORK * oracle.n_features
                                             if state.has_box else 1)
    if view.sampler.n_order + view.sampler.n_uniforms == 0:
        return StepCounts()
    try:
        if oracle.needs_gil:
            bcfw_steps(oracle, view.store, &view.ledger, &view.primal, &s[0], &view.sampler,
                       lam, line_search, &ell, &ell_avg, &n_steps, &n_replaced, &buf.corner,
                       &view.direction.d, &line_work[0])
        else:
            with nogil:
                bcfw_steps(oracle, view.store, &view.ledger, &view.primal, &s[0],
                           &view.sampler, lam, line_search, &ell, &ell_avg, &n_steps,
                           &n_replaced, &buf.corner, &view.direction.d, &line_work[0])
    finally:
        # Booked here, not by the caller, so that the steps completed before an
        # oracle call fails are kept: the blocks have moved, and ell and the
        # counts must follow them for the state to stay one dual point.
        counts = StepCounts(ell=ell, ell_avg=ell_avg, steps=n_steps - state.n_steps,
                            oracle_calls=n_steps - state.n_steps,
                            replaced=n_replaced, fw=n_steps - state.n_steps)
        state.record_steps(counts)
    return counts


cdef int _fw_corners(MaxOracle oracle, BlockStore st, Ledger* b, const float64_t* w,
                     float64_t lam,
                     int32_t* labels, intp_t* n_labels, float64_t* vs,
                     float64_t* ell_s, intp_t* n_replaced, Corner* c) except -1 nogil:
    # Batch FW, phase 1: all corners at w; sum v_s and ell_s; exact block gaps.
    cdef intp_t n = oracle.n_blocks, d = oracle.n_features, i, k
    cdef intp_t stride = oracle.max_labels
    cdef float64_t scale = 1.0 / (lam * n)
    ell_s[0] = 0.0
    for i in range(n):
        oracle.solve(i, w, c)
        if below_ground_truth(c):
            use_ground_truth(c, d)
            n_replaced[0] += 1
        for k in range(c.n_labels):
            labels[i * stride + k] = c.labels[k]
        n_labels[i] = c.n_labels
        if c.psi_idx == NULL:
            for k in range(d):
                vs[k] += scale * c.psi_val[k]
        else:
            for k in range(c.psi_nnz):
                vs[c.psi_idx[k]] += scale * c.psi_val[k]
        ell_s[0] += c.loss / n
        b.gap_estimates[i] = lam * st.dot(i, w, c.theta) - b.ell[i] + c.score / n
    return 0


cdef int _fw_move(MaxOracle oracle, BlockStore st, Ledger* b, Primal* p, float64_t* s,
                  float64_t avg_coef, float64_t lam, float64_t gamma,
                  const int32_t* labels, const intp_t* n_labels, ActiveSets atoms,
                  intp_t step, Corner* c, Direction* e) except -1 nogil:
    # Batch FW, phase 2: move every block toward its corner with the common gamma.
    # With active sets, alpha_i <- (1 - gamma) alpha_i + gamma delta(corner) too
    # (zeroed atoms other than the ground truth are dropped: batch FW has no cache).
    cdef intp_t n = oracle.n_blocks, i, k, ks
    cdef float64_t scale = 1.0 / (lam * n), loss
    cdef const float64_t* vs
    cdef BlockAtoms* blk
    for i in range(n):
        if n_labels[i] < 0:                  # replaced by the ground truth: psi = 0
            vs, loss = s, 0.0                # s is all zeros between steps
        else:
            oracle.evaluate(i, labels + i * oracle.max_labels, n_labels[i], p.w, c)
            vs, loss = st.frame(c, i, s), c.loss
        st.form(i, -gamma, vs, gamma * scale, e)
        st.move(oracle, e, 1.0, p, avg_coef)
        b.ell[i] += gamma * (loss / n - b.ell[i])
        if atoms is not None:
            blk = &atoms.blocks[i]
            ks = 0 if n_labels[i] < 0 else atoms._add(i, c, st.entries(c), step)
            for k in range(blk.n):
                blk.alpha[k] = 0.0 if gamma == 1.0 else (1.0 - gamma) * blk.alpha[k]
            blk.alpha[ks] += gamma
            k = blk.n - 1
            while k >= 1:
                if blk.alpha[k] == 0.0:
                    atoms._remove(i, k)
                k -= 1
        if n_labels[i] >= 0:
            st.clear_frame(c, s)
    return 0


def fw_step(MaxOracle oracle, state, bint line_search):
    """One batch Frank-Wolfe iteration (Lacoste-Julien et al. (2013), Alg. 2; Osokin et al. (2016),
    Alg. 9 with a box).

    Returns the FW gap at the old point, which is exact (it equals
    P(w) - D(alpha) before the step); the exact block gaps are left in
    ``state.block_gap_estimates`` and the step's ``StepCounts`` are booked by
    ``state.record_steps``.  The corners are found at w and stored as
    labellings, then re-evaluated for the move, so w must not change in
    between: with a box, the move updates v and w = clip(v) block by block,
    and the re-evaluation only reads psi and the loss, which do not depend
    on w.
    """
    state.invalidate_gaps()              # the iterate moves
    cdef StateView view = StateView(state, None, None, oracle)
    cdef intp_t n = oracle.n_blocks, d = oracle.n_features
    cdef float64_t[::1] v = state.v
    cdef float64_t[::1] w = state.w
    cdef float64_t[::1] vs = np.zeros(d)
    cdef float64_t[::1] s = view.store.frame_scratch(oracle)
    cdef int32_t[::1] labels = np.zeros(max(n * oracle.max_labels, 1), dtype=np.int32)
    cdef intp_t[::1] n_labels = np.zeros(n, dtype=np.intp)
    cdef CornerBuffer buf = view.store.corner_buffer(oracle)
    cdef float64_t lam = state.lam, ell = state.ell, ell_s = 0.0, dot = 0.0, sq = 0.0
    cdef float64_t gap, gamma, diff
    cdef intp_t k, j = state.n_steps + 1, n_replaced = 0
    cdef ActiveSets atoms = state.atoms
    cdef float64_t[::1] e, line_work
    if oracle.needs_gil:
        _fw_corners(oracle, view.store, &view.ledger, &w[0], lam, &labels[0], &n_labels[0],
                    &vs[0], &ell_s, &n_replaced, &buf.corner)
    else:
        with nogil:
            _fw_corners(oracle, view.store, &view.ledger, &w[0], lam, &labels[0],
                        &n_labels[0], &vs[0], &ell_s, &n_replaced, &buf.corner)
    for k in range(d):
        diff = v[k] - vs[k]
        dot += diff * w[k]
        sq += diff * diff
    gap = lam * dot - ell + ell_s
    if line_search and state.has_box:         # exact: e = v_s - v over all features
        e = np.subtract(vs, v)
        line_work = np.zeros(4 * d)             # 2 d breakpoints
        gamma = box_search(&v[0], view.primal.lower, view.primal.upper, NULL, &e[0], d,
                           ell_s - ell, lam, 1.0, <Breakpoint*> &line_work[0], NULL)
    else:
        gamma = step_size(gap, lam * sq) if line_search else 2.0 / (j + 1.0)
    if oracle.needs_gil:
        _fw_move(oracle, view.store, &view.ledger, &view.primal, &s[0], 0.5 * (j - 1) * j,
                 lam, gamma, &labels[0], &n_labels[0], atoms, j, &buf.corner,
                 &view.direction.d)
    else:
        with nogil:
            _fw_move(oracle, view.store, &view.ledger, &view.primal, &s[0],
                     0.5 * (j - 1) * j, lam, gamma, &labels[0], &n_labels[0], atoms, j,
                     &buf.corner, &view.direction.d)
    ell = ell + gamma * (ell_s - ell)
    state.record_steps(StepCounts(ell=ell, ell_avg=((j - 1.0) * state.ell_avg + 2.0 * ell)
                                  / (j + 1.0), steps=1, oracle_calls=n, replaced=n_replaced,
                                  fw=n))       # every block moved
    return gap
