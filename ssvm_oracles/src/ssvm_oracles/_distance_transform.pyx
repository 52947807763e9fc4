"""Generalized distance transforms (Felzenszwalb & Huttenlocher, 2012) on 1-D and 2-D grids.

``dt1d`` computes d[x] = max_q f[q] - a (q - x)^2 - b (q - x) in O(n) by the
upper envelope of lines, ``dt2d`` the separable 2-D transform of an (H, W) map
by 1-D transforms along the columns, then the rows.  Cimported by the pose
oracle (``_tree_maxsum``); ``distance_transform_1d`` / ``distance_transform_2d``
are their Python twins (for tests).  Declarations in ``_distance_transform.pxd``.
"""

from libc.math cimport INFINITY

import numpy as np

from ssvm_core._typedefs cimport float64_t, int32_t, intp_t


cdef void reciprocals(intp_t m, float64_t* inv) noexcept nogil:
    """inv[k] = 1 / k for k in [1, m] (inv[0] unused): the envelope's divisions."""
    cdef intp_t k
    inv[0] = INFINITY
    for k in range(1, m + 1):
        inv[k] = 1.0 / k


cdef void dt1d(const float64_t* f, intp_t n, float64_t a, float64_t b,
               float64_t* d, intp_t ds, int32_t* arg, intp_t gs, const float64_t* inv,
               intp_t* v, float64_t* z, float64_t* hv) noexcept nogil:
    """d[x] = max_q f[q] - a (q - x)^2 - b (q - x) for x, q in [0, n); arg[x] = the q.

    f is contiguous; strides ds, gs for d and arg (arg may be NULL); a >= 0.
    Up to the common term b x - a x^2, candidate q is the line h_q + 2 a q x with
    h_q = f[q] - a q^2 - b q (the parabola form of F&H): the upper envelope of
    these lines, in order of increasing slope, is built in one sweep and read in
    a second, O(n).  Breakpoints are kept multiplied by 2 a, so that the line of
    q overtakes the one of v at 2 a x = (h_v - h_q) / (q - v), a product with
    inv[q - v] = 1 / (q - v) (table of ``reciprocals``, n entries).
    Workspace v (2 n + 1), z (n + 1), hv (n): the envelope's lines (then the
    count of breakpoints passed at each x), their breakpoints and their h.
    """
    cdef intp_t q, k, x, j, best
    cdef intp_t* first = v + n
    cdef float64_t s, hq, u, a2
    if negligible(a):                       # linear: the argmax does not depend on x
        best = 0
        for q in range(1, n):
            if f[q] - b * q > f[best] - b * best:
                best = q
        for x in range(n):
            if arg != NULL:
                arg[x * gs] = <int32_t> best
            d[x * ds] = f[best] - b * (best - x)
        return
    k = 0
    v[0] = 0
    z[0] = -INFINITY
    hv[0] = f[0]
    for q in range(1, n):
        hq = f[q] - (a * q + b) * q
        while True:
            # line q overtakes the envelope's last line v[k] for 2 a x > s
            s = (hv[k] - hq) * inv[q - v[k]]
            if s > z[k]:
                k += 1
                break
            if k == 0:                  # line q dominates everywhere so far
                break
            k -= 1
        v[k] = q
        hv[k] = hq
        z[k] = s if k > 0 else -INFINITY
    # x is in segment j of the envelope when j = #{i in [1, k] : z[i] < 2 a x}, i.e.
    # when x > z[i] / (2 a) for j breakpoints: count the breakpoints passed at each x
    # (first[x]) and sum them, branch free
    for x in range(n + 1):
        first[x] = 0
    a2 = 0.5 / a
    for j in range(1, k + 1):
        s = z[j] * a2
        s = s if s > -1.0 else -1.0
        s = s if s < n - 1 else <float64_t> (n - 1)
        first[<intp_t> (s + 1.0)] += 1
    k = 0
    for x in range(n):
        k += first[x]
        q = v[k]
        u = <float64_t> (q - x)
        if arg != NULL:
            arg[x * gs] = <int32_t> q
        d[x * ds] = f[q] - (a * u + b) * u


cdef void dt2d(const float64_t* ft, intp_t H, intp_t W, float64_t ax, float64_t bx,
               float64_t ay, float64_t by, float64_t* tmp, int32_t* argy,
               float64_t* d, int32_t* argx, const char* rows, const float64_t* inv,
               intp_t* v, float64_t* z, float64_t* hv) noexcept nogil:
    """d[y, x] = max_{y', x'} f[y', x'] - ax u^2 - bx u - ay r^2 - by r, u = x'-x, r = y'-y.

    Input ft = f transposed (W, H), so both passes read contiguous memory:
    first along the columns into tmp (H, W), then along the rows.  If argy and
    argx are not NULL, the maximiser of (y, x) is x' = argx[y, x],
    y' = argy[y, x'].  If rows is not NULL, only the rows y with rows[y] != 0
    of d (and argx) are written.  inv: ``reciprocals`` up to max(H, W).  With
    both quadratic weights negligible the maximiser is the same for every
    (y, x): one pass over f, and argy is only written in its column.
    """
    cdef intp_t x, y, best = 0
    cdef float64_t val, top = -INFINITY
    if negligible(ax) and negligible(ay):       # linear: one maximiser l' for every l
        for x in range(W):
            for y in range(H):
                val = ft[x * H + y] - bx * x - by * y
                if val > top:
                    top = val
                    best = x * H + y
        for y in range(H):
            if rows == NULL or rows[y]:
                for x in range(W):
                    d[y * W + x] = top + bx * x + by * y
                    if argx != NULL:
                        argx[y * W + x] = <int32_t> (best // H)
            if argy != NULL:
                argy[y * W + best // H] = <int32_t> (best % H)
        return
    for x in range(W):
        dt1d(ft + x * H, H, ay, by, tmp + x, W, argy + x if argy != NULL else NULL, W,
             inv, v, z, hv)
    for y in range(H):
        if rows == NULL or rows[y]:
            dt1d(tmp + y * W, W, ax, bx, d + y * W, 1,
                 argx + y * W if argx != NULL else NULL, 1, inv, v, z, hv)


def _check_map(f):
    arr = np.ascontiguousarray(f, dtype=np.float64)
    if arr.size == 0 or not np.all(np.isfinite(arr)):
        raise ValueError("the map must be non-empty and finite")
    return arr


def _check_quadratic(a, name):
    a = float(a)
    if not a >= 0.0:
        raise ValueError(f"{name} = {a}: the distance transform needs a quadratic "
                         "weight >= 0")
    return a


def distance_transform_1d(f, a, b):
    """Python twin of the 1-D transform: ``(d, arg)`` with
    ``d[x] = max_q f[q] - a (q - x)^2 - b (q - x) = f[arg[x]] - ...``, a >= 0."""
    cdef float64_t[::1] fv = _check_map(f).reshape(-1)
    cdef intp_t n = fv.shape[0]
    cdef float64_t av = _check_quadratic(a, "a"), bv = float(b)
    d = np.empty(n)
    arg = np.empty(n, dtype=np.int32)
    cdef float64_t[::1] dv = d, zv = np.empty(n + 1), hv = np.empty(n)
    cdef float64_t[::1] inv = np.empty(n + 1)
    cdef int32_t[::1] gv = arg
    cdef intp_t[::1] vv = np.empty(2 * n + 1, dtype=np.intp)
    with nogil:
        reciprocals(n, &inv[0])
        dt1d(&fv[0], n, av, bv, &dv[0], 1, &gv[0], 1, &inv[0], &vv[0], &zv[0], &hv[0])
    return d, arg


def distance_transform_2d(f, ax, bx, ay, by):
    """Python twin of the 2-D transform of an (H, W) map: ``(d, arg)`` with
    ``d[y, x] = max_{y', x'} f[y', x'] - ax u^2 - bx u - ay r^2 - by r`` (u = x' - x,
    r = y' - y) attained at the flat index ``arg[y, x] = y' W + x'``; ax, ay >= 0."""
    arr = _check_map(f)
    if arr.ndim != 2:
        raise ValueError(f"the map must be 2-D, got shape {arr.shape}")
    cdef float64_t[:, ::1] fv = np.ascontiguousarray(arr.T)
    cdef intp_t H = arr.shape[0], W = arr.shape[1], m = max(H, W), x, y, xs
    cdef float64_t axv = _check_quadratic(ax, "ax"), ayv = _check_quadratic(ay, "ay")
    cdef float64_t bxv = float(bx), byv = float(by)
    d = np.empty((H, W))
    arg = np.empty((H, W), dtype=np.int32)
    cdef float64_t[:, ::1] dv = d
    cdef int32_t[:, ::1] gv = arg
    cdef float64_t[::1] tmp = np.empty(H * W), zv = np.empty(m + 1), hv = np.empty(m)
    cdef float64_t[::1] inv = np.empty(m + 1)
    cdef int32_t[::1] argy = np.empty(H * W, dtype=np.int32)
    cdef intp_t[::1] vv = np.empty(2 * m + 1, dtype=np.intp)
    with nogil:
        reciprocals(m, &inv[0])
        dt2d(&fv[0, 0], H, W, axv, bxv, ayv, byv, &tmp[0], &argy[0], &dv[0, 0],
             &gv[0, 0], NULL, &inv[0], &vv[0], &zv[0], &hv[0])
        for y in range(H):
            for x in range(W):
                xs = gv[y, x]
                gv[y, x] = <int32_t> (argy[y * W + xs] * W + xs)
    return d, arg
