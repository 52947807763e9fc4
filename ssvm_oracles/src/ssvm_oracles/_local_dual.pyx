"""A labelling proven optimal over the local polytope by its dual: MPLP block coordinate descent.

The local polytope relaxation of max_z sum_v u_v(z_v) + sum_e theta_e(z_a, z_b) (edge e from
node a to node b, see ``ssvm_oracles.ilp``) has the dual

    min_lam  U(lam) = sum_v max_k b_v(k) + sum_e max_{k, l} [theta_e(k, l) - lam_ea(k) - lam_eb(l)],
    b_v = u_v + sum_{e at v} lam_ev,

and every lam bounds the relaxed optimum from above (weak duality), which bounds every
labelling's score.  A labelling z whose score s(z) reaches U(lam) is therefore an optimal
vertex of the relaxation (and a MAP labelling): the relaxation is tight, and the proof needs
no LP solver.  The lam are improved by MPLP's edge updates (Globerson and Jaakkola, 2007),
block coordinate descent over the two messages of one edge at a time,

    lam_ea(k) = (max_l [theta_e(k, l) + b_b(l) - lam_eb(l)] - (b_a(k) - lam_ea(k))) / 2,

and its mirror for lam_eb, which never increase U.  Sweeps alternate between the edges'
order and its reverse; every ``check_every`` sweeps the labelling of the beliefs' maxima
(the lowest state among ties) is scored against U.  Coordinate descent can stall above the
relaxed optimum and a fractional relaxation has no labelling at its optimum, so the search
gives up after ``max_sweeps`` sweeps, or when U fell by no more than the tolerance since
the last check; the caller then solves the relaxation.  O(m K^2) per sweep.
"""

import numpy as np

from libc.math cimport INFINITY, fabs
from ssvm_core._typedefs cimport float64_t, int32_t, int64_t, intp_t


cdef float64_t _bound(const float64_t[:, :, ::1] pairwise, const int64_t[:, ::1] edges,
                      const intp_t[::1] states, const float64_t[:, ::1] belief,
                      const float64_t[:, :, ::1] lam) noexcept nogil:
    """U(lam)."""
    cdef intp_t n = belief.shape[0], m = edges.shape[0], v, e, k, r, a, b
    cdef float64_t total = 0.0, best, t
    for v in range(n):
        best = -INFINITY
        for k in range(states[v]):
            if belief[v, k] > best:
                best = belief[v, k]
        total += best
    for e in range(m):
        a, b = edges[e, 0], edges[e, 1]
        best = -INFINITY
        for k in range(states[a]):
            for r in range(states[b]):
                t = pairwise[e, k, r] - lam[e, 0, k] - lam[e, 1, r]
                if t > best:
                    best = t
        total += best
    return total


cdef float64_t _decode(const float64_t[:, ::1] unary, const float64_t[:, :, ::1] pairwise,
                       const int64_t[:, ::1] edges, const intp_t[::1] states,
                       const float64_t[:, ::1] belief, int32_t[::1] z) noexcept nogil:
    """z = the beliefs' maxima (the lowest state among ties); returns s(z)."""
    cdef intp_t n = belief.shape[0], m = edges.shape[0], v, e, k
    cdef float64_t total = 0.0
    for v in range(n):
        z[v] = 0
        for k in range(1, states[v]):
            if belief[v, k] > belief[v, z[v]]:
                z[v] = <int32_t> k
        total += unary[v, z[v]]
    for e in range(m):
        total += pairwise[e, z[edges[e, 0]], z[edges[e, 1]]]
    return total


cdef void _update(const float64_t[:, :, ::1] pairwise, intp_t e, intp_t a, intp_t b,
                  intp_t Ka, intp_t Kb, float64_t[:, ::1] belief, float64_t[:, :, ::1] lam,
                  float64_t* ra, float64_t* rb, float64_t* ma, float64_t* mb) noexcept nogil:
    """MPLP's update of edge e's two messages (ra, rb, ma, mb: K doubles of scratch each)."""
    cdef intp_t k, r
    cdef float64_t t, row
    for k in range(Ka):
        ra[k] = belief[a, k] - lam[e, 0, k]      # a's belief without e's message
    for r in range(Kb):
        rb[r] = belief[b, r] - lam[e, 1, r]
        mb[r] = -INFINITY
    for k in range(Ka):
        row = -INFINITY
        for r in range(Kb):
            t = pairwise[e, k, r]
            if t + rb[r] > row:
                row = t + rb[r]
            if t + ra[k] > mb[r]:
                mb[r] = t + ra[k]
        ma[k] = row
    for k in range(Ka):
        lam[e, 0, k] = 0.5 * (ma[k] - ra[k])
        belief[a, k] = ra[k] + lam[e, 0, k]
    for r in range(Kb):
        lam[e, 1, r] = 0.5 * (mb[r] - rb[r])
        belief[b, r] = rb[r] + lam[e, 1, r]


def tight_labelling(const float64_t[:, ::1] unary, const float64_t[:, :, ::1] pairwise,
                    const int64_t[:, ::1] edges, const intp_t[::1] states, float64_t rtol,
                    intp_t max_sweeps=200, intp_t check_every=4):
    """A labelling proven to maximise the pairwise score over the local polytope, or None.

    Parameters
    ----------
    unary : float64 array (n, K)
        Node scores; node v's states are 0 .. ``states[v]`` - 1 (the others are ignored).
    pairwise : float64 array (m, K, K)
        Edge scores, rows the state of ``edges[e, 0]``.
    edges : int64 array (m, 2)
        Valid node indices, no self-loop (both checked by the caller: the update of a
        self-loop's two messages would overwrite one node's belief twice).
    states : intp array (n,)
        The number of states of each node, in [1, K].
    rtol : float
        The labelling is proven when its score s and the dual bound U satisfy
        s >= U - rtol (1 + |U|).
    max_sweeps : int, default 200
        Sweeps over the edges before giving up.
    check_every : int, default 4
        Sweeps between two comparisons of the bound with the beliefs' labelling.

    Returns
    -------
    tuple (z, score, bound, belief, lam) or None
        The labelling (int32, (n,)), its score, the dual bound it reaches and the dual point:
        the beliefs b (n, K) and the messages lam (m, 2, K), lam[e, 0] to ``edges[e, 0]``;
        None when no labelling was proven (the relaxation may be fractional, or the descent
        stalled).
    """
    cdef intp_t n = unary.shape[0], K = unary.shape[1], m = edges.shape[0]
    cdef intp_t sweep, q, e
    cdef float64_t bound = INFINITY, last = INFINITY, score = -INFINITY
    cdef bint proven = False
    belief_arr = np.array(unary, dtype=np.float64)
    lam_arr = np.zeros((m, 2, K))
    scratch = np.empty((4, max(K, 1)))
    z_arr = np.zeros(n, dtype=np.int32)
    cdef float64_t[:, ::1] belief = belief_arr
    cdef float64_t[:, :, ::1] lam = lam_arr
    cdef float64_t[:, ::1] s = scratch
    cdef int32_t[::1] z = z_arr
    with nogil:
        for sweep in range(1, max_sweeps + 1):
            for q in range(m):
                e = q if sweep % 2 else m - 1 - q
                _update(pairwise, e, edges[e, 0], edges[e, 1], states[edges[e, 0]],
                        states[edges[e, 1]], belief, lam, &s[0, 0], &s[1, 0], &s[2, 0],
                        &s[3, 0])
            if sweep % check_every and sweep != max_sweeps:
                continue
            bound = _bound(pairwise, edges, states, belief, lam)
            score = _decode(unary, pairwise, edges, states, belief, z)
            proven = score >= bound - rtol * (1.0 + fabs(bound))
            if proven or last - bound <= rtol * (1.0 + fabs(bound)):
                break                            # proven, or stalled
            last = bound
    return (z_arr, score, bound, belief_arr, lam_arr) if proven else None
