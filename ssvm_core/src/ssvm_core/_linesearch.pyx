"""The exact box line search (``_linesearch.pxd``, Osokin et al. (2016), App. H) for Python.

The kernels use the inline ``box_search`` directly; ``box_line_search`` exposes it
to Python: tests compare it with a brute-force maximisation of the
piecewise-quadratic dual, and ``ssvm.compat.pystruct``'s one-slack working set
takes its box steps with it.
"""

import numpy as np

from ssvm_core._typedefs cimport float64_t, int32_t, intp_t


def box_line_search(const float64_t[::1] v, lower, upper, idx, const float64_t[::1] val,
                    float64_t delta_ell, float64_t lam, float64_t gamma_max):
    """``(gamma, gain)``: the exact step over [0, gamma_max] and D(gamma) - D(0).

    Parameters
    ----------
    v : float array of shape (d,)
        The point v = A alpha.
    lower, upper : float arrays of shape (d,) or None
        The box (both None: no box).
    idx : int32 array of shape (nnz,) or None
        Features of the direction's entries (unique); None: dense, nnz == d.
    val : float array of shape (nnz,)
        The direction's entries.
    delta_ell, lam, gamma_max : float
        Change of ell per unit step, regularisation (> 0), largest step (>= 0).
    """
    cdef intp_t d = v.shape[0], nnz = val.shape[0]
    cdef const float64_t[::1] lo, hi
    cdef const int32_t[::1] ix
    cdef const float64_t* lo_p = NULL
    cdef const float64_t* hi_p = NULL
    cdef const int32_t* ix_p = NULL
    if (lower is None) != (upper is None):
        raise ValueError("give both lower and upper, or neither")
    if not (lam > 0.0) or not (0.0 <= gamma_max < np.inf):
        raise ValueError(f"need lam > 0 and a finite gamma_max >= 0, got {lam}, {gamma_max}")
    if lower is not None:
        lo = np.ascontiguousarray(lower, dtype=np.float64)
        hi = np.ascontiguousarray(upper, dtype=np.float64)
        if lo.shape[0] != d or hi.shape[0] != d:
            raise ValueError(f"bounds of length {lo.shape[0]}, {hi.shape[0]} for d = {d}")
        if np.any(np.asarray(lo) > np.asarray(hi)):
            raise ValueError("infeasible box: lower > upper")
        lo_p, hi_p = &lo[0], &hi[0]
    if idx is None:
        if nnz != d:
            raise ValueError(f"a dense direction needs {d} entries, got {nnz}")
    else:
        ix = np.ascontiguousarray(idx, dtype=np.int32)
        if ix.shape[0] != nnz:
            raise ValueError(f"{ix.shape[0]} indices for {nnz} values")
        if nnz and (np.min(ix) < 0 or np.max(ix) >= d):
            raise ValueError(f"indices out of range [0, {d})")
        if np.unique(ix).shape[0] != nnz:
            raise ValueError("indices must be unique")
        if nnz:
            ix_p = &ix[0]
    cdef float64_t[::1] work = np.empty(4 * max(nnz, 1))    # 2 nnz breakpoints
    cdef float64_t gain = 0.0, gamma
    gamma = box_search(&v[0] if d else NULL, lo_p, hi_p, ix_p,
                       &val[0] if nnz else NULL, nnz, delta_ell, lam, gamma_max,
                       <Breakpoint*> &work[0], &gain)
    return gamma, gain
