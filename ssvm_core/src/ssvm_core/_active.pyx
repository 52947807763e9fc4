"""Block steps over explicit active sets: BCFW, BCPFW, BCAFW, hybrid, with caching.

One kernel serves every combination of Osokin et al. (2016)'s variants: the FW corner comes
from the oracle or, with caching (Osokin et al. (2016), Alg. 5), from the block's stored
labellings; the step is a Frank-Wolfe step (Lacoste-Julien et al. (2013), Alg. 4), an away step
(BCAFW, Osokin et al. (2016), Alg. 4), a pairwise step (BCPFW, Osokin et al. (2016), Alg. 3) or, for
``hybrid``, whichever of the three improves the dual most.  With a box
(Osokin et al. (2016), App. H) directions use v, the inner products use w = clip(v), and
every step size (and hybrid's gains) comes from the exact line search of the
piecewise-quadratic dual (``_linesearch.pxd``).  Every block operation goes
through the state's block store (``_storage.pxd``), which keeps the atoms in
the blocks' frame: with a block basis (``MaxOracle.coord_*``) the atoms are
kept in block coordinates and their scores read theta = A_i^T w, from the
oracle's answer (``answer_frame``), or from ``coord_scores`` when the scores
are needed before (caching) or after a move (sequential steps, ``atom_frame``).

All block quantities come from the atoms (``ActiveSets``): with
H_k = L_i(y_k) - <w, psi_i(y_k)>, the FW gap of corner s is
g_FW = (H_s - sum_k alpha_k H_k) / n (Osokin et al. (2016), eq. 7), the away gap of atom a is
g_A = (sum_k alpha_k H_k - H_a) / n and the pairwise gap their sum.
"""

import math

import numpy as np

from libc.math cimport INFINITY, fabs, isnan
from libc.stdlib cimport free, malloc, realloc

from ssvm_core._typedefs cimport float64_t, int32_t, intp_t
from ssvm_core._oracle cimport Corner, CornerBuffer, MaxOracle
from ssvm_core._atoms cimport (ActiveSets, BlockAtoms, atom_clear, atom_dot,
                               atom_scatter)
from ssvm_core._blocks cimport Ledger, Primal, below_ground_truth, use_ground_truth
from ssvm_core._sampling cimport (Sampler, draw_ahead, next_block, prefetch_steps,
                                  set_gap_weight)
from ssvm_core._view cimport StateView
from ssvm_core._linesearch cimport LINE_WORK
from ssvm_core._storage cimport BlockStore, Direction

from ssvm_core.options import STEPS
from ssvm_core.step_counts import StepCounts

cdef enum:
    STEP_FW = 0
    STEP_AWAY = 1
    STEP_PAIRWISE = 2
    STEP_HYBRID = 3
    STEP_CORRECTIVE = 4
    STEP_SEQUENTIAL = 5


cdef struct Options:
    float64_t lam
    int step
    bint line_search          # False: predefined FW step 2n / (k + 2n)
    bint cache                # also: without a cache, atoms leaving S_i are deleted
    float64_t cache_factor    # F of Osokin et al. (2016), Alg. 5
    float64_t cache_nu        # nu of Osokin et al. (2016), Alg. 5
    float64_t global_gap      # g of the last exact gap pass
    intp_t n_samples          # answers asked of the oracle per call (solve_many)


cdef struct LineWork:
    # Scratch of the exact box line search (Osokin et al. (2016), App. H), allocated once
    # per kernel call and only with a box: LINE_WORK * n_features doubles, and
    # a copy of a block's alpha (corrective steps) that grows with the atoms.
    float64_t* work
    float64_t* alpha
    intp_t alpha_cap


cdef struct Counts:
    intp_t steps, replaced, oracle_calls, fw, away, pairwise, corrective, drop
    intp_t hits_local, hits_global


cdef inline float64_t _line_step(float64_t slope, float64_t curvature,
                                 float64_t gamma_max) noexcept nogil:
    """argmax over [0, gamma_max] of gamma slope - gamma^2 curvature / 2."""
    if slope <= 0.0:
        return 0.0
    if curvature <= 0.0 or slope >= gamma_max * curvature:
        return gamma_max
    return slope / curvature


cdef inline float64_t _gain(float64_t slope, float64_t curvature,
                            float64_t gamma) noexcept nogil:
    return gamma * slope - 0.5 * gamma * gamma * curvature


cdef float64_t _curvature(MaxOracle oracle, BlockStore st, intp_t i,
                          const BlockAtoms* blk, float64_t a, intp_t k1, float64_t c1,
                          intp_t k2, float64_t c2, float64_t* s, const float64_t* w,
                          float64_t lam, Direction* e) except? -1 nogil:
    """lam ||a v_i + c1 psi_k1 + c2 psi_k2||^2 (k2 < 0: no second atom)."""
    atom_scatter(blk, k1, 1.0, s)
    if k2 >= 0:
        atom_scatter(blk, k2, c2 / c1, s)
    st.stats(oracle, i, a, s, c1, w, NULL, e)
    atom_clear(blk, k1, s)
    if k2 >= 0:
        atom_clear(blk, k2, s)
    return lam * e.sqnorm


cdef float64_t _box_line(MaxOracle oracle, BlockStore st, intp_t i, const BlockAtoms* blk,
                         float64_t a, intp_t k1, float64_t c1, intp_t k2, float64_t c2,
                         float64_t* s, const Primal* p, float64_t lam, float64_t delta_ell,
                         float64_t gamma_max, float64_t* work, float64_t* gain,
                         Direction* e) except? -1 nogil:
    """Exact step over [0, gamma_max] along e = a v_i + c1 psi_k1 + c2 psi_k2 with a box.

    ell moves by delta_ell per unit step; ``gain`` receives the dual's increase
    (``box_search``, Osokin et al. (2016), App. H).  k2 < 0: no second atom.
    """
    cdef float64_t gam
    atom_scatter(blk, k1, c1, s)
    if k2 >= 0:
        atom_scatter(blk, k2, c2, s)
    st.form(i, a, s, 1.0, e)
    gam = st.box_step(oracle, e, 1.0, p, delta_ell, lam, gamma_max, work, gain)
    atom_clear(blk, k1, s)
    if k2 >= 0:
        atom_clear(blk, k2, s)
    return gam


cdef int _move(MaxOracle oracle, BlockStore st, intp_t i, const BlockAtoms* blk,
               float64_t a, intp_t k1, float64_t c1, intp_t k2, float64_t c2,
               float64_t* s, Primal* p, float64_t avg_coef, Direction* e) except -1 nogil:
    """v_i += a v_i + c1 psi_k1 + c2 psi_k2 (and v, w, the average with it)."""
    atom_scatter(blk, k1, c1, s)
    if k2 >= 0:
        atom_scatter(blk, k2, c2, s)
    st.form(i, a, s, 1.0, e)
    st.move(oracle, e, 1.0, p, avg_coef)
    atom_clear(blk, k1, s)
    if k2 >= 0:
        atom_clear(blk, k2, s)
    return 0


cdef void _normalise(BlockAtoms* blk) noexcept nogil:
    """Rescale alpha_i to sum to one (it drifts by rounding only)."""
    cdef float64_t total = 0.0
    cdef intp_t k
    for k in range(blk.n):
        total += blk.alpha[k]
    if total == 1.0:                          # x / 1.0 is x: spare the divisions
        return
    for k in range(blk.n):
        blk.alpha[k] /= total


cdef float64_t _rebuild_block(MaxOracle oracle, BlockStore st, intp_t i,
                              const BlockAtoms* blk, float64_t scale, float64_t* s, Primal* p,
                              float64_t avg_coef, Direction* e) except? -1 nogil:
    """Set v_i = scale sum_k alpha_k psi_k from the atoms (v, w, the average follow).

    Returns sum_k alpha_k L_k, i.e. n ell_i.
    """
    cdef intp_t k
    cdef float64_t loss = 0.0
    for k in range(blk.n):
        if blk.alpha[k] != 0.0:
            atom_scatter(blk, k, scale * blk.alpha[k], s)
            loss += blk.alpha[k] * blk.loss[k]
    st.form(i, -1.0, s, 1.0, e)
    st.move(oracle, e, 1.0, p, avg_coef)
    for k in range(blk.n):
        atom_clear(blk, k, s)
    return loss


cdef void _project_simplex(float64_t* x, intp_t K, float64_t* work) noexcept nogil:
    """Euclidean projection of x (length K) onto the probability simplex, in place.

    Sort-based (Huang et al. (2017), eq. 26): with u = x sorted decreasingly and
    tau = (sum_{l<=rho} u_l - 1) / rho for the largest rho with
    u_rho > (sum_{l<=rho} u_l - 1) / rho, x <- max(x - tau, 0).  ``work``
    holds K doubles.
    """
    cdef intp_t j, pos
    cdef float64_t u, csum = 0.0, tau = 0.0
    for j in range(K):                       # insertion sort, decreasing (K is small)
        u = x[j]
        pos = j
        while pos > 0 and work[pos - 1] < u:
            work[pos] = work[pos - 1]
            pos -= 1
        work[pos] = u
    for j in range(K):
        csum += work[j]
        if work[j] - (csum - 1.0) / (j + 1) > 0.0:
            tau = (csum - 1.0) / (j + 1)
    for j in range(K):
        x[j] = x[j] - tau if x[j] > tau else 0.0


cdef intp_t _corrective_alpha(MaxOracle oracle, BlockStore st, intp_t i, BlockAtoms* blk,
                              float64_t lam, float64_t scale, intp_t n,
                              float64_t* s, Direction* e) except -1 nogil:
    """Fully-corrective block step over the block's atoms; returns the atoms dropped.

    alpha_i <- argmax over the simplex of g^T d - lam scale^2 / 2 d^T G d with
    d = alpha - alpha_old, g_k = H_k(w) / n (``blk.score``) and G the Gram
    matrix of the atoms' psi.  Without a box this is the block dual exactly
    (the block QP over the active set, Huang et al. (2017), eq. 25); with one it bounds the
    dual's change from below (clip is 1-Lipschitz), so the step never
    decreases the dual.  Projected gradient with the Gershgorin bound of the
    curvature, until the subproblem's FW gap is at rounding level (at most
    1000 iterations).
    """
    cdef intp_t K = blk.n, k, m, _it, dropped = 0
    cdef float64_t curv = lam * scale * scale, L = 0.0, row, gap, top, gmax = 0.0
    cdef float64_t* mem = <float64_t*> malloc((K * K + 5 * K) * sizeof(float64_t))
    if mem == NULL:
        with gil:
            raise MemoryError()
    cdef float64_t* G = mem
    cdef float64_t* a0 = mem + K * K
    cdef float64_t* x = a0 + K
    cdef float64_t* grad = x + K
    cdef float64_t* g = grad + K
    cdef float64_t* work = g + K
    st.atom_gram(oracle, i, blk, s, G, e)
    for k in range(K):
        a0[k] = blk.alpha[k]
        x[k] = blk.alpha[k]
        g[k] = blk.score[k] / n
        gmax = max(gmax, fabs(g[k]))
        row = 0.0
        for m in range(K):
            row += fabs(G[k * K + m])
        L = max(L, curv * row)
    if L <= 0.0:
        L = 1e-300
    for _it in range(1000):
        top = -INFINITY
        gap = 0.0
        for k in range(K):
            row = 0.0
            for m in range(K):
                row += G[k * K + m] * (x[m] - a0[m])
            grad[k] = g[k] - curv * row
            top = max(top, grad[k])
            gap -= x[k] * grad[k]
        gap += top
        if gap <= 1e-14 * (gmax + 1e-300):
            break
        for k in range(K):
            x[k] += grad[k] / L
        _project_simplex(x, K, work)
    for k in range(K):
        if a0[k] > 0.0 and x[k] == 0.0:
            dropped += 1
        blk.alpha[k] = x[k]
    free(mem)
    return dropped


cdef intp_t _corrective_box(MaxOracle oracle, BlockStore st, intp_t i, BlockAtoms* blk,
                            float64_t lam, float64_t scale, intp_t n, float64_t* s,
                            const Primal* p, LineWork* lw, Direction* e) except -1 nogil:
    """Fully-corrective block step with a box; returns the atoms dropped.

    ``_corrective_alpha`` maximises a lower bound of the dual's change (its
    curvature counts clipped coordinates too), so its solution x only sets a
    direction: alpha <- alpha + gamma (x - alpha), with the exact step
    (``box_search``, Osokin et al. (2016), App. H) over every gamma that keeps
    alpha >= 0.  gamma = 1 gives x, so the step gains at least what the bound
    promised.  The direction's entries are made to sum to zero up to rounding
    relative to their own size (not to alpha's): a long step along a tiny
    direction would otherwise carry alpha off the simplex.
    """
    cdef intp_t K = blk.n, k, top = 0, dropped = 0
    cdef float64_t delta_ell = 0.0, gmax = INFINITY, total = 0.0, gam
    cdef float64_t* a0
    cdef float64_t* dd
    if 2 * K > lw.alpha_cap:
        a0 = <float64_t*> realloc(lw.alpha, 4 * K * sizeof(float64_t))
        if a0 == NULL:
            with gil:
                raise MemoryError(f"cannot grow the corrective step's alpha copy to {4 * K}")
        lw.alpha, lw.alpha_cap = a0, 4 * K
    a0 = lw.alpha
    dd = lw.alpha + K
    for k in range(K):
        a0[k] = blk.alpha[k]
    _corrective_alpha(oracle, st, i, blk, lam, scale, n, s, e)
    for k in range(K):
        dd[k] = blk.alpha[k] - a0[k]
        total += dd[k]
        if blk.alpha[k] > blk.alpha[top]:
            top = k
    dd[top] -= total                          # sum(x) = sum(alpha) = 1 up to rounding
    for k in range(K):
        if dd[k] != 0.0:
            atom_scatter(blk, k, scale * dd[k], s)
            delta_ell += dd[k] * blk.loss[k]
            if dd[k] < 0.0:
                gmax = min(gmax, a0[k] / -dd[k])
    if gmax == INFINITY:                      # x == alpha
        gmax = 0.0
    st.form(i, 0.0, s, 1.0, e)
    gam = st.box_step(oracle, e, 1.0, p, delta_ell / n, lam, gmax, lw.work, NULL)
    for k in range(K):
        atom_clear(blk, k, s)
        if dd[k] < 0.0 and gam >= a0[k] / -dd[k]:   # the atoms that bound gamma
            blk.alpha[k] = 0.0
        else:
            blk.alpha[k] = max(a0[k] + gam * dd[k], 0.0)
        if a0[k] > 0.0 and blk.alpha[k] == 0.0:
            dropped += 1
    return dropped


cdef inline void _score_atoms(BlockAtoms* blk, const float64_t* x) noexcept nogil:
    """blk.score[k] = H_k(w) for every atom, with x = w, or x = theta = A_i^T w
    when the atoms are kept in block coordinates (``CompactStore``)."""
    cdef intp_t k
    for k in range(blk.n):
        blk.score[k] = blk.loss[k] - atom_dot(blk, k, x)


cdef inline int _score_atoms_at(MaxOracle oracle, BlockStore st, intp_t i, BlockAtoms* blk,
                                const float64_t* w, float64_t* theta) except -1 nogil:
    """``_score_atoms`` at w without an oracle answer (the store says what the atoms'
    scores read, e.g. theta = A_i^T w computed into ``theta``)."""
    _score_atoms(blk, st.atom_frame(oracle, i, w, theta))
    return 0


cdef float64_t _sequential_steps(MaxOracle oracle, BlockStore st, intp_t i, BlockAtoms* blk,
                                 intp_t ks, float64_t lam, float64_t scale, intp_t n,
                                 float64_t* s, Primal* p, float64_t avg_coef,
                                 float64_t* theta, float64_t* line_work,
                                 Direction* e) except? -1 nogil:
    """Branson et al.'s sequential multi-sample update (Branson et al. (2013), Alg. 1) in BCFW's
    normalisation.

    Their closed-form update of sample j rescales the block's alpha by s and
    gives sample j the weight that maximises the dual: a FW step toward that
    labelling with exact line search.  Samples: the FW corner ks first, then
    every other stored labelling in order; H_k is recomputed at the moving w.
    Returns the new ell_i.
    """
    cdef intp_t t, k, q
    cdef float64_t H, sum_aH, gam, ell_i = 0.0
    for k in range(blk.n):
        ell_i += blk.alpha[k] * blk.loss[k]
    ell_i /= n
    for t in range(blk.n):
        q = ks if t == 0 else (t - 1 if t - 1 < ks else t)
        sum_aH = 0.0
        _score_atoms_at(oracle, st, i, blk, p.w, theta)
        for k in range(blk.n):
            sum_aH += blk.alpha[k] * blk.score[k]
        H = blk.score[q]
        atom_scatter(blk, q, 1.0, s)
        if p.lower != NULL:
            st.form(i, -1.0, s, scale, e)
            gam = st.box_step(oracle, e, 1.0, p, blk.loss[q] / n - ell_i, lam, 1.0,
                              line_work, NULL)
        else:
            st.stats(oracle, i, -1.0, s, scale, p.w, NULL, e)
            gam = _line_step((H - sum_aH) / n, lam * e.sqnorm, 1.0)
        if gam > 0.0:                # gam times the direction of the search
            st.move(oracle, e, gam, p, avg_coef)
            for k in range(blk.n):
                blk.alpha[k] = 0.0 if gam == 1.0 else (1.0 - gam) * blk.alpha[k]
            blk.alpha[q] += gam
            ell_i += gam * (blk.loss[q] / n - ell_i)
        atom_clear(blk, q, s)
    return ell_i


cdef int _active_steps(MaxOracle oracle, ActiveSets atoms, BlockStore st, Ledger* b,
                       Primal* p, float64_t* s, Sampler* smp, const Options* opt,
                       float64_t* oracle_gaps, float64_t* ell, float64_t* ell_avg,
                       Counts* cnt, Corner* c, LineWork* lw, Direction* e) except -1 nogil:
    cdef intp_t n = oracle.n_blocks, t, i, k, j, ks, ka, kind, n_active, n_got, q
    cdef float64_t lam = opt.lam, scale = 1.0 / (lam * n)
    cdef float64_t H, sum_aH, h_best, h_away, g_fw, g_away, g_pw, thr_local, thr_global
    cdef float64_t curv_fw, curv_away, curv_pw, gam, gam_fw, gam_away, gam_pw
    cdef float64_t gmax_away, best_gain, ell_s, ell_a, ell_step, gain_fw, gain_away, gain_pw
    cdef BlockAtoms* blk
    cdef bint hit
    for t in range(smp.n_order + smp.n_uniforms):
        i = next_block(smp, t, n)
        blk = &atoms.blocks[i]
        j = cnt.steps + 1                     # this step creates iterate j
        prefetch_steps(oracle, st, atoms.blocks, smp, t, n)

        # Scores of the stored atoms at w; the cache corner is the best one.
        # (Without a cache they are scored after the oracle call, whose answer
        # brings what they read, see ``BlockStore.answer_frame``.)
        sum_aH = 0.0
        h_best = -INFINITY
        ks = 0
        if opt.cache:
            _score_atoms_at(oracle, st, i, blk, p.w, c.theta)
            for k in range(blk.n):
                H = blk.score[k]
                if blk.alpha[k] > 0.0:
                    sum_aH += blk.alpha[k] * H
                if H > h_best:
                    h_best, ks = H, k

        hit = False
        if opt.cache and not isnan(oracle_gaps[i]):
            g_fw = (h_best - sum_aH) / n
            thr_local = opt.cache_factor * oracle_gaps[i]
            thr_global = opt.cache_nu * opt.global_gap / n
            if g_fw > 0.0 and g_fw >= thr_local and g_fw >= thr_global:
                hit = True
                if thr_local >= thr_global:
                    cnt.hits_local += 1
                else:
                    cnt.hits_global += 1
                blk.last_used[ks] = j
        if not hit:
            n_got = 1
            if opt.n_samples > 1:
                n_got = oracle.solve_many(i, p.w, opt.n_samples, c)
            else:
                oracle.solve(i, p.w, c)
            cnt.oracle_calls += 1
            if below_ground_truth(c):
                use_ground_truth(c, oracle.n_features)
                cnt.replaced += 1
            if not opt.cache:
                _score_atoms(blk, st.answer_frame(c, p.w))
            for k in range(n_got):          # the atoms' coordinates enter the block's frame
                st.mark(i, c[k].coord_idx, c[k].coord_nnz)
            for k in range(1, n_got):                     # extra samples join the block
                if not below_ground_truth(&c[k]):
                    q = atoms._add(i, &c[k], st.entries(&c[k]), j - 1)
                    blk.score[q] = c[k].score
            ks = atoms._add(i, c, st.entries(c), j)   # last: evictions cannot move it
            blk.score[ks] = c.score

        # Away atom: the worst active one (indices may have moved on eviction).
        sum_aH = 0.0
        h_away = INFINITY
        ka = -1
        n_active = 0
        for k in range(blk.n):
            if blk.alpha[k] > 0.0:
                n_active += 1
                sum_aH += blk.alpha[k] * blk.score[k]
                if blk.score[k] < h_away:
                    h_away, ka = blk.score[k], k
        if ka < 0:
            with gil:
                raise RuntimeError(f"block {i} has no active atom (alpha sums to "
                                   "zero): the state is corrupt")
        g_fw = (blk.score[ks] - sum_aH) / n
        g_away = (sum_aH - h_away) / n
        g_pw = (blk.score[ks] - h_away) / n
        b.gap_estimates[i] = g_fw
        if not hit:
            oracle_gaps[i] = g_fw
        set_gap_weight(smp, i, g_fw)
        draw_ahead(oracle, st, atoms.blocks, smp, t, n)

        # Choose the step.
        # An away step needs another active atom to take the mass of atom a.
        gmax_away = 0.0
        if n_active > 1 and blk.alpha[ka] < 1.0:
            gmax_away = blk.alpha[ka] / (1.0 - blk.alpha[ka])
        kind = opt.step if opt.step >= STEP_CORRECTIVE else STEP_FW
        if opt.step == STEP_AWAY and g_away > g_fw and gmax_away > 0.0:
            kind = STEP_AWAY
        elif opt.step == STEP_PAIRWISE:
            kind = STEP_PAIRWISE
        # With a box, exact steps and gains along each direction (Osokin et al. (2016),
        # App. H); without one, the closed form of the quadratic.
        if kind == STEP_FW or opt.step == STEP_HYBRID:
            if p.lower != NULL:
                gam_fw = _box_line(oracle, st, i, blk, -1.0, ks, scale, -1, 0.0, s, p, lam,
                                   blk.loss[ks] / n - b.ell[i], 1.0, lw.work, &gain_fw, e)
            else:
                curv_fw = _curvature(oracle, st, i, blk, -1.0, ks, scale, -1, 0.0, s, p.w,
                                     lam, e)
                gam_fw = _line_step(g_fw, curv_fw, 1.0)
                gain_fw = _gain(g_fw, curv_fw, gam_fw)
        if kind == STEP_AWAY or opt.step == STEP_HYBRID:
            if p.lower != NULL:
                gam_away = _box_line(oracle, st, i, blk, 1.0, ka, -scale, -1, 0.0, s, p, lam,
                                     b.ell[i] - blk.loss[ka] / n, gmax_away, lw.work,
                                     &gain_away, e)
            else:
                curv_away = _curvature(oracle, st, i, blk, 1.0, ka, -scale, -1, 0.0, s, p.w,
                                       lam, e)
                gam_away = _line_step(g_away, curv_away, gmax_away)
                gain_away = _gain(g_away, curv_away, gam_away)
        if kind == STEP_PAIRWISE or opt.step == STEP_HYBRID:
            if ks == ka:
                gain_pw, gam_pw = 0.0, 0.0
            elif p.lower != NULL:
                gam_pw = _box_line(oracle, st, i, blk, 0.0, ks, scale, ka, -scale, s, p, lam,
                                   (blk.loss[ks] - blk.loss[ka]) / n, blk.alpha[ka], lw.work,
                                   &gain_pw, e)
            else:
                curv_pw = _curvature(oracle, st, i, blk, 0.0, ks, scale, ka, -scale, s, p.w,
                                     lam, e)
                gam_pw = _line_step(g_pw, curv_pw, blk.alpha[ka])
                gain_pw = _gain(g_pw, curv_pw, gam_pw)
        if opt.step == STEP_HYBRID:
            best_gain = gain_fw
            if gain_away > best_gain:
                kind, best_gain = STEP_AWAY, gain_away
            if ks != ka and gain_pw > best_gain:
                kind = STEP_PAIRWISE

        # Take it: v_i, ell_i, alpha_i and the averages move together.
        ell_s = blk.loss[ks] / n
        ell_a = blk.loss[ka] / n
        if kind == STEP_SEQUENTIAL:
            ell_step = _sequential_steps(oracle, st, i, blk, ks, lam, scale, n, s, p,
                                         0.5 * (j - 1) * j, c.theta, lw.work, e) - b.ell[i]
            cnt.corrective += 1
        elif kind == STEP_CORRECTIVE:
            if p.lower != NULL:
                cnt.drop += _corrective_box(oracle, st, i, blk, lam, scale, n, s, p, lw, e)
            else:
                cnt.drop += _corrective_alpha(oracle, st, i, blk, lam, scale, n, s, e)
            _normalise(blk)
            ell_step = _rebuild_block(oracle, st, i, blk, scale, s, p, 0.5 * (j - 1) * j, e) / n \
                - b.ell[i]
            cnt.corrective += 1
        elif kind == STEP_FW:
            gam = gam_fw if opt.line_search else 2.0 * n / (cnt.steps + 2.0 * n)
            _move(oracle, st, i, blk, -gam, ks, gam * scale, -1, 0.0, s, p, 0.5 * (j - 1) * j,
                  e)
            ell_step = gam * (ell_s - b.ell[i])
            for k in range(blk.n):
                blk.alpha[k] = 0.0 if gam == 1.0 else (1.0 - gam) * blk.alpha[k]
            blk.alpha[ks] += gam
            cnt.fw += 1
        elif kind == STEP_AWAY:
            # alpha <- (1 + gam) alpha - gam e_a, renormalised; v_i and ell_i are
            # then rebuilt from the atoms: the factor 1 + gam is large when
            # alpha_a is near 1, and updating v_i by it would cancel badly.
            gam = gam_away
            if gam == gmax_away and gam > 0.0:
                blk.alpha[ka] = 0.0
                cnt.drop += 1
            else:
                blk.alpha[ka] = max(blk.alpha[ka] - gam / (1.0 + gam), 0.0)
            _normalise(blk)
            ell_step = _rebuild_block(oracle, st, i, blk, scale, s, p, 0.5 * (j - 1) * j, e) / n \
                - b.ell[i]
            cnt.away += 1
        else:
            gam = gam_pw
            _move(oracle, st, i, blk, 0.0, ks, gam * scale, ka, -gam * scale, s, p,
                  0.5 * (j - 1) * j, e)
            ell_step = gam * (ell_s - ell_a)
            if gam == blk.alpha[ka] and gam > 0.0:
                blk.alpha[ka] = 0.0
                cnt.drop += 1
            else:
                blk.alpha[ka] -= gam
            blk.alpha[ks] += gam
            cnt.pairwise += 1
        _normalise(blk)                       # no drift of sum alpha from 1
        b.ell[i] += ell_step
        ell[0] += ell_step
        ell_avg[0] = ((j - 1.0) * ell_avg[0] + 2.0 * ell[0]) / (j + 1.0)
        cnt.steps = j

        # Without a cache, atoms leaving the active set are forgotten.
        if not opt.cache:
            k = blk.n - 1
            while k >= 1:
                if blk.alpha[k] == 0.0:
                    atoms._remove(i, k)
                k -= 1
    return 0


def active_pass(MaxOracle oracle, state, const intp_t[::1] order, *, str step="fw",
                bint line_search=True, bint cache=False, float64_t cache_factor=0.25,
                float64_t cache_nu=0.01, intp_t n_samples=1, gap_uniforms=None):
    """One pass of block steps over explicit active sets (see the module docstring).

    Parameters
    ----------
    oracle : MaxOracle
        The bound oracle.
    state : SolverState
        With ``state.atoms`` (``active_sets=True``); the dual point moves in
        place and the returned counts are booked by ``state.record_steps``.
    order : int array
        Blocks visited first (all of them, or the unvisited ones with gap
        sampling).
    step : {"fw", "away", "pairwise", "hybrid", "corrective", "sequential"}
        See ``ssvm_core.options`` (the one table of solver options).
    line_search : bool
        False uses the predefined step 2n / (k + 2n) (FW steps only).
    cache, cache_factor, cache_nu :
        Caching (Osokin et al. (2016), Alg. 5): the best stored labelling replaces the oracle
        when its gap is >= max(F g_i, nu g / n), g_i the block's gap at its
        last oracle call and g the last exact global gap.
    n_samples : int
        Labellings asked of the oracle per call (``MaxOracle.solve_many``):
        the extra ones join the block's stored labellings, for the
        multi-sample steps (and the cache) to use.
    gap_uniforms : float array, optional
        Gap sampling (see ``bcfw_pass``).

    Returns
    -------
    StepCounts
        What the pass did (``oracle_calls``: the oracle calls made).
    """
    if state.atoms is None:
        raise ValueError("active_pass needs a state with active sets (active_sets=True)")
    if step not in STEPS:
        raise ValueError(f"step must be one of {STEPS}, got {step!r}")
    if not line_search and step != "fw":
        raise ValueError("the predefined step size (line_search=False) applies to FW "
                         f"steps only, not step={step!r}")
    state.invalidate_gaps()              # the iterate moves
    cdef StateView view = StateView(state, order, gap_uniforms, oracle)
    cdef float64_t[::1] s = view.store.frame_scratch(oracle)
    cdef float64_t[::1] oracle_gaps = state.block_oracle_gaps
    cdef float64_t ell = state.ell, ell_avg = state.ell_avg
    if n_samples < 1:
        raise ValueError(f"n_samples must be >= 1, got {n_samples}")
    buffers = [view.store.corner_buffer(oracle, psi=False) for _ in range(n_samples)]
    cdef Corner* corners = <Corner*> malloc(n_samples * sizeof(Corner))
    if corners == NULL:
        raise MemoryError()
    cdef intp_t b_
    for b_ in range(n_samples):
        corners[b_] = (<CornerBuffer> buffers[b_]).corner
    cdef ActiveSets atoms = state.atoms
    cdef Options opt
    cdef Counts cnt
    cdef float64_t[::1] line_work = np.zeros(LINE_WORK * oracle.n_features
                                             if state.has_box else 1)
    cdef LineWork lw
    lw.work = &line_work[0]
    lw.alpha = NULL                      # grown by _corrective_box, freed below
    lw.alpha_cap = 0
    opt.lam = state.lam
    opt.step = STEPS.index(step)
    opt.line_search = line_search
    opt.cache = cache
    opt.cache_factor = cache_factor
    opt.cache_nu = cache_nu
    opt.n_samples = n_samples
    opt.global_gap = 0.0 if math.isnan(state.last_exact_gap) else state.last_exact_gap
    cnt.steps = state.n_steps
    cnt.replaced = cnt.oracle_calls = cnt.fw = cnt.away = cnt.pairwise = cnt.drop = 0
    cnt.corrective = 0
    cnt.hits_local = cnt.hits_global = 0
    if view.sampler.n_order + view.sampler.n_uniforms == 0:
        free(corners)
        return StepCounts()
    try:
        if oracle.needs_gil:
            _active_steps(oracle, atoms, view.store, &view.ledger, &view.primal, &s[0],
                          &view.sampler, &opt, &oracle_gaps[0], &ell, &ell_avg, &cnt, corners,
                          &lw, &view.direction.d)
        else:
            with nogil:
                _active_steps(oracle, atoms, view.store, &view.ledger, &view.primal, &s[0],
                              &view.sampler, &opt, &oracle_gaps[0], &ell, &ell_avg, &cnt,
                              corners, &lw, &view.direction.d)
    finally:
        free(corners)
        free(lw.alpha)
        # Booked here (see ``_fw.bcfw_pass``): completed steps are kept when an
        # oracle call fails part-way.
        counts = StepCounts(ell=ell, ell_avg=ell_avg, steps=cnt.steps - state.n_steps,
                            oracle_calls=cnt.oracle_calls, replaced=cnt.replaced, fw=cnt.fw,
                            away=cnt.away, pairwise=cnt.pairwise, corrective=cnt.corrective,
                            drop=cnt.drop, hits_local=cnt.hits_local,
                            hits_global=cnt.hits_global)
        state.record_steps(counts)
    return counts


def move_to_vertices(MaxOracle oracle, state, labellings):
    """Put block i at the vertex alpha_i = delta(labellings[i]), for every block.

    This is a FW step of size 1 on each block toward the given labelling:
    v_i = psi_i(y) / (lam n) and ell_i = L_i(y) / n, with v and w = clip(v)
    following; with active sets the labelling becomes the block's only active
    atom (other stored labellings stay, inactive, and a run without a cache
    drops them at the block's next step).  Only the dual point moves:
    ``SolverState.move_to_vertices`` then sets ell and restarts the
    bookkeeping.  Costs one ``evaluate`` per block, O(nnz(psi) + size of v_i).
    """
    cdef intp_t n = oracle.n_blocks, i, k, ks
    if len(labellings) != n:
        raise ValueError(f"{len(labellings)} labellings for {n} blocks")
    cdef StateView view = StateView(state, None, None, oracle)
    cdef float64_t[::1] s = view.store.frame_scratch(oracle)
    cdef CornerBuffer buf = view.store.corner_buffer(oracle, psi=False)
    cdef Corner* c = &buf.corner
    cdef float64_t scale = 1.0 / (state.lam * n)
    cdef int32_t[::1] lab
    cdef ActiveSets atoms = state.atoms
    cdef BlockAtoms* blk
    cdef const float64_t* vs
    for i in range(n):
        lab = np.ascontiguousarray(labellings[i], dtype=np.int32).ravel()
        oracle.evaluate(i, &lab[0] if lab.shape[0] else NULL, lab.shape[0], view.primal.w, c)
        vs = view.store.frame(c, i, &s[0])
        view.store.form(i, -1.0, vs, scale, &view.direction.d)
        view.store.move(oracle, &view.direction.d, 1.0, &view.primal, 0.0)
        view.ledger.ell[i] = c.loss / n
        if atoms is not None:
            ks = atoms._add(i, c, view.store.entries(c), 0)
            blk = &atoms.blocks[i]
            for k in range(blk.n):
                blk.alpha[k] = 1.0 if k == ks else 0.0
        view.store.clear_frame(c, &s[0])
