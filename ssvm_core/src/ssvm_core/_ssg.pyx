"""One-pass kernel of the stochastic subgradient baseline (Lacoste-Julien et al. (2013), Sec. 6,
Pegasos step).

Step k at block i: y* = argmax_y H_i(y; w), w_s = psi_i(y*) / lam and
w <- (1 - gamma) w + gamma w_s with gamma = 1 / (k + 1), i.e. a subgradient
step of size 1 / (lam (k + 1)) on P; the weighted average is
w_avg <- k / (k + 2) w_avg + 2 / (k + 2) w.  Each step is O(d).
"""

from ssvm_core._typedefs cimport float64_t, intp_t
from ssvm_core._oracle cimport Corner, CornerBuffer, MaxOracle


cdef int _ssg_steps(MaxOracle oracle, const intp_t* order, intp_t n_order, float64_t lam,
                    float64_t* w, float64_t* w_avg, intp_t* n_steps,
                    Corner* c) except -1 nogil:
    cdef intp_t t, k, d = oracle.n_features
    cdef float64_t gamma, rho
    for t in range(n_order):
        oracle.solve(order[t], w, c)
        gamma = 1.0 / (n_steps[0] + 1.0)
        for k in range(d):
            w[k] *= 1.0 - gamma
        if c.psi_idx == NULL:
            for k in range(d):
                w[k] += gamma / lam * c.psi_val[k]
        else:
            for k in range(c.psi_nnz):
                w[c.psi_idx[k]] += gamma / lam * c.psi_val[k]
        n_steps[0] += 1
        if w_avg != NULL:
            rho = 2.0 / (n_steps[0] + 1.0)
            for k in range(d):
                w_avg[k] += rho * (w[k] - w_avg[k])
    return 0


def ssg_pass(MaxOracle oracle, const intp_t[::1] order, float64_t lam, float64_t[::1] w,
             float64_t[::1] w_avg, intp_t[::1] n_steps):
    """SSG steps at the blocks of ``order``, updating w, w_avg (if non-empty) and
    ``n_steps[0]`` in place; steps completed before a failing oracle call are kept."""
    cdef CornerBuffer buf = CornerBuffer(oracle)
    cdef float64_t* avg = NULL if w_avg.shape[0] == 0 else &w_avg[0]
    if order.shape[0] == 0:
        return
    if oracle.needs_gil:
        _ssg_steps(oracle, &order[0], order.shape[0], lam, &w[0], avg, &n_steps[0],
                   &buf.corner)
    else:
        with nogil:
            _ssg_steps(oracle, &order[0], order.shape[0], lam, &w[0], avg, &n_steps[0],
                       &buf.corner)
