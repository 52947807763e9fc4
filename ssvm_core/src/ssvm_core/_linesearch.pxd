# Exact line search of the box-constrained dual along a step direction.
#
# With box constraints lower <= w <= upper (Osokin et al. (2016), App. H) the multipliers
# beta_u = [v - u]_+ and beta_l = [l - v]_+ of the box are eliminated in closed form
# (Osokin et al. (2016), eqs. 56-57), which leaves the dual (maximisation form) as a function
# of v = A alpha and ell = b^T alpha alone:
#
#     D(alpha) = ell - lam f(v),   f(v) = sum_k f_k(v_k),
#     f_k(x) = w x - w^2 / 2 with w = clip(x, l_k, u_k),
#
# i.e. f_k(x) = x^2 / 2 inside [l_k, u_k], u_k x - u_k^2 / 2 above it and
# l_k x - l_k^2 / 2 below it (f = ||v||^2 / 2 - dist(v, box)^2 / 2; without a box
# f = ||v||^2 / 2 and D is the usual dual of Lacoste-Julien et al. (2013), eq. 4).  f is
# convex and differentiable with gradient clip(v, l, u) = w, so along a step
# (v, ell) + gamma (e, Delta_ell)
#
#     D(gamma) = D(0) + gamma Delta_ell - lam (f(v + gamma e) - f(v)),
#     D'(gamma) = Delta_ell - lam <e, clip(v + gamma e, l, u)>,
#
# a non-increasing piecewise-linear derivative: coordinate k adds e_k^2 to the
# curvature -D'' while v_k + gamma e_k is strictly inside (l_k, u_k) and 0 while
# it is clipped.  Its breakpoints are where a coordinate enters or leaves its
# box; an unboxed coordinate (infinite bounds) always contributes e_k^2.
# D'(0) is the usual gap-like slope lam <-e, w> + Delta_ell, and the closed
# form step of Osokin et al. (2016), App. H (Alg. 8, line 8) divides it by the
# full curvature lam ||e||^2, an upper bound on -D'' (so it is a safe but short
# step once coordinates are clipped).  ``box_search`` walks the sorted
# breakpoints instead and returns the exact maximiser.
from libc.math cimport INFINITY

from ssvm_core._typedefs cimport float64_t, int32_t, intp_t
from ssvm_core._blocks cimport clip


ctypedef struct Breakpoint:
    float64_t t          # step size at which the curvature changes
    float64_t dcurv      # the change: +e_k^2 entering the box's interior, -e_k^2 leaving it


cdef enum:
    # Doubles of scratch per direction entry that ``BlockStore.box_step`` needs:
    # the entry itself and up to two breakpoints of two doubles each.
    LINE_WORK = 5


cdef inline void sift_down(Breakpoint* heap, intp_t n, intp_t i) noexcept nogil:
    """Restore the min-heap order (by t) below node i of heap[0..n)."""
    cdef intp_t child
    cdef Breakpoint x = heap[i]
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        if child + 1 < n and heap[child + 1].t < heap[child].t:
            child += 1
        if heap[child].t >= x.t:
            break
        heap[i] = heap[child]
        i = child
    heap[i] = x


cdef inline float64_t box_search(const float64_t* v, const float64_t* lower,
                                 const float64_t* upper, const int32_t* idx,
                                 const float64_t* val, intp_t nnz, float64_t delta_ell,
                                 float64_t lam, float64_t gamma_max, Breakpoint* work,
                                 float64_t* gain) noexcept nogil:
    """argmax over [0, gamma_max] of the box-constrained dual D(gamma) along a step.

    The step moves v by gamma e and ell by gamma Delta_ell; D is given at the top of
    this file (Osokin et al. (2016), App. H).  The direction is sparse: entry k is
    e[idx[k]] = val[k] (idx NULL: dense, entry k is feature k); indices are unique.
    ``lower`` NULL means no box (then ``upper`` is ignored), giving the closed form
    clip((Delta_ell - lam <e, v>) / (lam ||e||^2), 0, gamma_max); infinite bounds
    are allowed.  ``work`` holds 2 nnz breakpoints.  ``gain`` (may be NULL)
    receives D(gamma) - D(0) >= 0.  ``gamma_max`` must be finite and >= 0.

    O(nnz) to find the breakpoints inside (0, gamma_max), heapified in O(b), plus
    O(log b) per breakpoint passed.  The smallest maximiser is returned: 0 when
    D'(0) <= 0 and, on a flat piece with D' = 0, its start.
    """
    cdef float64_t slope = delta_ell, curv = 0.0, ek, vk, lo, hi, t_in, t_out
    cdef float64_t gam = 0.0, nxt, step, acc = 0.0
    cdef intp_t k, g, nb = 0, n_in = 0
    for k in range(nnz):
        ek = val[k]
        if ek == 0.0:
            continue
        g = k if idx == NULL else idx[k]
        vk = v[g]
        if lower == NULL:
            slope -= lam * ek * vk
            curv += ek * ek
            n_in += 1
            continue
        lo, hi = lower[g], upper[g]
        slope -= lam * ek * clip(vk, lo, hi)
        # v_k + gamma e_k is inside the box for gamma in (t_in, t_out)
        # (infinite bounds give infinite times).
        if ek > 0.0:
            t_in, t_out = (lo - vk) / ek, (hi - vk) / ek
        else:
            t_in, t_out = (hi - vk) / ek, (lo - vk) / ek
        if not t_in < t_out:                  # l_k == u_k: the coordinate is fixed
            continue
        if t_in <= 0.0 < t_out:               # inside just after 0
            curv += ek * ek
            n_in += 1
        if 0.0 < t_in < gamma_max:
            work[nb].t, work[nb].dcurv = t_in, ek * ek
            nb += 1
        if 0.0 < t_out < gamma_max:
            work[nb].t, work[nb].dcurv = t_out, -ek * ek
            nb += 1
    k = nb // 2
    while k > 0:
        k -= 1
        sift_down(work, nb, k)
    # Walk the pieces: on [gam, nxt] the slope is slope - lam curv (gamma - gam).
    while slope > 0.0:
        nxt = gamma_max if nb == 0 else work[0].t
        if curv > 0.0 and slope < lam * curv * (nxt - gam):
            step = slope / (lam * curv)
            acc += 0.5 * slope * step
            gam += step
            if gam > nxt:                     # rounding
                gam = nxt
            break
        step = nxt - gam
        acc += step * (slope - 0.5 * lam * curv * step)
        slope -= lam * curv * step
        gam = nxt
        if nb == 0:
            break
        while nb > 0 and work[0].t == nxt:    # every breakpoint at nxt
            curv += work[0].dcurv
            n_in += 1 if work[0].dcurv > 0.0 else -1
            nb -= 1
            work[0] = work[nb]
            sift_down(work, nb, 0)
        if n_in == 0 or curv < 0.0:           # no rounding residue on a flat piece
            curv = 0.0
    if gain != NULL:
        gain[0] = acc
    return gam
