"""Tree max-sum with generalized distance transforms: the pose model of Osokin et al. (2016), App.
I.4.

A tree of P parts (nodes) with parent array ``parent`` (-1 at the root).  Each
tree edge {c, parent(c)} gives two arcs (Osokin et al. (2016), App. I.4 uses both orientations):
for the k-th non-root node c (in increasing order of c) arc 2k is (c -> parent)
and arc 2k + 1 is (parent -> c), A = 2 (P - 1) arcs in all.  A labelling holds
a grid position l_p = (x_p, y_p) per part (x the column, y the row) and a type
t_a in [0, T) per arc, stored as the int32 vector
``[x_0, y_0, ..., x_{P-1}, y_{P-1}, t_0, ..., t_{A-1}]``.

Per example the input is ``unary[p, y, x]`` (phi^U_p), ``pairwise[a, t, y, x]``
(phi^P_a at the position of the arc's source part) and the mean displacements
``offsets[a, t] = (r_x, r_y)`` of each arc type.  With
d_a = l_src(a) - l_dst(a) - r_a^{t_a} the joint feature map is

    phi = [unary[p, l_p]  (P) | pairwise[a, t_a, l_src(a)]  (A) |
           -(d_x, d_x^2, d_y, d_y^2) of arc a in the block of type t_a  (A x T x 4)]

so d = P + A + 4 A T (2,676 for 26 parts and 13 types, as in Osokin et al. (2016), Table 1).  The
deformation block is the paper's Delta with the sign flipped: the score of an
arc is -(w_0 d_x + w_1 d_x^2 + w_2 d_y + w_3 d_y^2), concave in the displacement
exactly when the quadratic weights w_1, w_3 are >= 0 -- the paper's positivity
constraints, under which the generalized distance transform applies.

Max-sum runs from the leaves to the root.  The message of part c to its parent
maximises over (t_up, t_down), the types of the two arcs of the edge: for each
pair the two quadratics add up to one separable quadratic in l_c - l_parent,
so the max over l_c is a 2-D distance transform (1-D transforms along the
columns, then the rows), O(L) per type pair: O(P T^2 L) per call for L
positions at worst.  The pairs are tried in decreasing order of an upper bound
of their message, and a pair (or a row of its transform) is skipped when its
bounds show it cannot beat the message so far anywhere (there) -- exact, the
bounds carry a margin far above rounding errors.  The best type pair per
parent position is kept; the best l_c of that pair is recomputed on the way
down (O(L) per edge) to recover the argmax.

Task loss (Osokin et al. (2016), App. I.4): L = (1/P) sum_p min(1, |l_{i,p} - l_p|^2 / rho_i^2)
("truncated"; the paper prints max, which would not vanish at the truth) or
the PDJ-style 0/1 count (1/P) #{p : |l_{i,p} - l_p| > rho_i} ("pdj").  It
decomposes over parts, so loss augmentation only adds to the unary scores.
"""

cimport cython
from libc.math cimport INFINITY, fabs

import numpy as np

from ssvm_core._typedefs cimport float64_t, int32_t, intp_t
from ssvm_core._oracle cimport Corner, MaxOracle
from ssvm_core._vector cimport (Arena, arena_allocate, arena_check, arena_free, arena_init,
                                arena_take, dot_gather)
from ssvm_oracles._distance_transform cimport dt1d, dt2d, negligible, reciprocals

from ssvm_core.validation import check_weights

cdef enum:
    LOSS_TRUNCATED = 0
    LOSS_PDJ = 1

LOSS_KINDS = {"truncated": LOSS_TRUNCATED, "pdj": LOSS_PDJ}


def pose_size(intp_t n_parts, intp_t n_types):
    """Dimension P + A + 4 A T of the pose model's joint feature map (A = 2 (P - 1))."""
    cdef intp_t n_arcs = 2 * (n_parts - 1)
    return n_parts + n_arcs + 4 * n_arcs * n_types


def pose_weight_bounds(intp_t n_parts, intp_t n_types):
    """Box ``(lower, upper)`` under which the pose oracle is exact.

    The quadratic deformation weights (w_P[a, t, 1] and w_P[a, t, 3]) are
    bounded below by 0; every other weight is free (+-inf).
    """
    cdef intp_t n_arcs = 2 * (n_parts - 1)
    d = pose_size(n_parts, n_types)
    lower = np.full(d, -np.inf)
    deform = lower[n_parts + n_arcs:].reshape(n_arcs, n_types, 4)
    deform[:, :, 1] = 0.0
    deform[:, :, 3] = 0.0
    return lower, np.full(d, np.inf)


def tree_arrays(parents):
    """Validate a parent array and return ``(parents, order, arc_up)`` as int32 arrays.

    ``order`` lists the parts root first, every part after its parent;
    ``arc_up[c]`` is the arc (c -> parent) (its reverse is ``arc_up[c] + 1``),
    -1 at the root.

    Raises
    ------
    ValueError
        If ``parents`` is not a 1-D integer array describing one tree (exactly
        one root marked -1, every parent index in range, no cycle).
    """
    arr = np.asarray(parents)
    if arr.ndim != 1 or arr.shape[0] < 1:
        raise ValueError(f"parents must be a non-empty 1-D array, got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"parents must hold integers, got dtype {arr.dtype}")
    P = arr.shape[0]
    roots = np.flatnonzero(arr == -1)
    if roots.shape[0] != 1:
        raise ValueError(f"a tree has exactly one root (parent -1), got {roots.shape[0]}")
    if arr.min() < -1 or arr.max() >= P or np.any(arr == np.arange(P)):
        raise ValueError(f"parents must be -1 or another part in [0, {P})")
    children = [[] for _ in range(P)]
    for c in range(P):
        if arr[c] >= 0:
            children[arr[c]].append(c)
    order = [int(roots[0])]
    for p in order:
        order.extend(children[p])
    if len(order) != P:
        raise ValueError("parents contain a cycle: not every part is connected to the root")
    nonroot = arr >= 0
    arc_up = np.where(nonroot, 2 * (np.cumsum(nonroot) - 1), -1)
    return (arr.astype(np.int32), np.array(order, dtype=np.int32), arc_up.astype(np.int32))


cdef struct _Tree:
    intp_t P, A, T
    const int32_t* parent
    const int32_t* order
    const int32_t* arc_up


cdef struct _Example:
    intp_t H, W, L
    const float64_t* unary      # (P, H, W)
    const float64_t* pairwise   # (A, T, H, W)
    const float64_t* offsets    # (A, T, 2): (r_x, r_y)


# ---------------------------------------------------------------------------
# The pose model
# ---------------------------------------------------------------------------

cdef inline intp_t _off_types(const _Tree* tr) noexcept nogil:
    return tr.P


cdef inline intp_t _off_deform(const _Tree* tr) noexcept nogil:
    return tr.P + tr.A


cdef int _check_quadratics(const _Tree* tr, const float64_t* w) except -1 nogil:
    """Raise ValueError if a quadratic deformation weight is negative."""
    cdef intp_t j, k, base = _off_deform(tr), n = tr.A * tr.T
    for j in range(n):
        if not (w[base + 4 * j + 1] >= 0.0 and w[base + 4 * j + 3] >= 0.0):
            k = 1 if not w[base + 4 * j + 1] >= 0.0 else 3
            with gil:
                raise ValueError(
                    f"negative quadratic deformation weight w[{base + 4 * j + k}] = "
                    f"{w[base + 4 * j + k]} (arc {j // tr.T}, type {j % tr.T}, "
                    f"{'d_x^2' if k == 1 else 'd_y^2'}): tree max-sum with distance "
                    "transforms needs these weights >= 0; train with the box "
                    "constraints of model.weight_bounds()")
    return 0


cdef inline float64_t _part_loss(float64_t dist2, float64_t radius2,
                                 int kind) noexcept nogil:
    if kind == LOSS_PDJ:
        return 1.0 if dist2 > radius2 else 0.0
    return dist2 / radius2 if dist2 < radius2 else 1.0


cdef float64_t _loss(const _Tree* tr, const int32_t* truth, const int32_t* y,
                     float64_t radius2, int kind) noexcept nogil:
    cdef intp_t p
    cdef float64_t dx, dy, total = 0.0
    for p in range(tr.P):
        dx = y[2 * p] - truth[2 * p]
        dy = y[2 * p + 1] - truth[2 * p + 1]
        total += _part_loss(dx * dx + dy * dy, radius2, kind)
    return total / tr.P


cdef inline intp_t _arc_src(const _Tree* tr, intp_t c, intp_t a) noexcept nogil:
    # a is arc_up[c] (source c) or arc_up[c] + 1 (source parent[c])
    return c if a == tr.arc_up[c] else tr.parent[c]


cdef intp_t _write_phi(const _Tree* tr, const _Example* ex, const int32_t* y,
                       float64_t sign, int32_t* idx, float64_t* val) noexcept nogil:
    """Append the nonzeros of sign * phi(x, y) (P + 5 A entries); returns the count."""
    cdef intp_t p, c, a, src, dst, t, base, nnz = 0, T = tr.T, L = ex.L
    cdef float64_t dx, dy
    cdef const float64_t* r
    for p in range(tr.P):
        idx[nnz] = <int32_t> p
        val[nnz] = sign * ex.unary[p * L + y[2 * p + 1] * ex.W + y[2 * p]]
        nnz += 1
    for c in range(tr.P):
        if tr.parent[c] < 0:
            continue
        for a in range(tr.arc_up[c], tr.arc_up[c] + 2):
            src = _arc_src(tr, c, a)
            dst = tr.parent[c] if src == c else c
            t = y[2 * tr.P + a]
            idx[nnz] = <int32_t> (_off_types(tr) + a)
            val[nnz] = sign * ex.pairwise[(a * T + t) * L + y[2 * src + 1] * ex.W + y[2 * src]]
            r = ex.offsets + 2 * (a * T + t)
            dx = y[2 * src] - y[2 * dst] - r[0]
            dy = y[2 * src + 1] - y[2 * dst + 1] - r[1]
            base = _off_deform(tr) + 4 * (a * T + t)
            idx[nnz + 1] = <int32_t> base
            val[nnz + 1] = -sign * dx
            idx[nnz + 2] = <int32_t> (base + 1)
            val[nnz + 2] = -sign * dx * dx
            idx[nnz + 3] = <int32_t> (base + 2)
            val[nnz + 3] = -sign * dy
            idx[nnz + 4] = <int32_t> (base + 3)
            val[nnz + 4] = -sign * dy * dy
            nnz += 5
    return nnz


cdef int _check_labelling(const _Tree* tr, const _Example* ex, const int32_t* y,
                          intp_t n_labels) except -1 nogil:
    cdef intp_t p, a
    if n_labels != 2 * tr.P + tr.A:
        with gil:
            raise ValueError(f"a pose labelling has 2 P + A = {2 * tr.P + tr.A} entries "
                             f"(x, y per part, then a type per arc), got {n_labels}")
    for p in range(tr.P):
        if not (0 <= y[2 * p] < ex.W and 0 <= y[2 * p + 1] < ex.H):
            with gil:
                raise ValueError(f"part {p} at (x, y) = ({y[2 * p]}, {y[2 * p + 1]}) is "
                                 f"outside the {ex.H} x {ex.W} grid")
    for a in range(tr.A):
        if not 0 <= y[2 * tr.P + a] < tr.T:
            with gil:
                raise ValueError(f"arc {a} has type {y[2 * tr.P + a]} outside "
                                 f"[0, {tr.T})")
    return 0


cdef void _pair_coefficients(const float64_t* w1, const float64_t* r1, const float64_t* w2,
                             const float64_t* r2, intp_t k, float64_t* a, float64_t* b,
                             float64_t* c) noexcept nogil:
    """Deformation cost of the edge along axis k (0: x, 1: y) as a u^2 + b u + c.

    u = l_c - l_parent along the axis; arc 1 (c -> parent) has displacement
    u - r1, arc 2 (parent -> c) has -u - r2; w = (linear, quadratic) of each.
    """
    cdef float64_t l1 = w1[2 * k], q1 = w1[2 * k + 1], l2 = w2[2 * k], q2 = w2[2 * k + 1]
    cdef float64_t s1 = r1[k], s2 = r2[k]
    a[0] = q1 + q2
    b[0] = l1 - 2.0 * q1 * s1 - l2 + 2.0 * q2 * s2
    c[0] = q1 * s1 * s1 - l1 * s1 + q2 * s2 * s2 - l2 * s2


cdef void _edge_cost(const _Tree* tr, const _Example* ex, const float64_t* w, intp_t a1,
                     intp_t t1, intp_t t2, float64_t* q) noexcept nogil:
    """q = (ax, bx, ay, by, c): the deformation cost of the edge of arcs a1 (type t1)
    and a1 + 1 (type t2) is ax u^2 + bx u + ay r^2 + by r + c at l_c - l_parent = (u, r)."""
    cdef intp_t T = tr.T, j1 = a1 * T + t1, j2 = (a1 + 1) * T + t2
    cdef const float64_t* wd = w + _off_deform(tr)
    cdef float64_t cx, cy
    _pair_coefficients(wd + 4 * j1, ex.offsets + 2 * j1, wd + 4 * j2, ex.offsets + 2 * j2,
                       0, &q[0], &q[1], &cx)
    _pair_coefficients(wd + 4 * j1, ex.offsets + 2 * j1, wd + 4 * j2, ex.offsets + 2 * j2,
                       1, &q[2], &q[3], &cy)
    q[4] = cx + cy


cdef intp_t _best_child_position(const float64_t* belief, const float64_t* pair1,
                                 float64_t wt1, intp_t H, intp_t W, const float64_t* q,
                                 intp_t xp, intp_t yp) noexcept nogil:
    """argmax over l = (x, y) of belief[l] + wt1 pair1[l] - cost(l - (xp, yp)), cost as
    in ``_edge_cost`` (flat index): the back-pointer of one parent position, O(L)."""
    cdef intp_t x, y, k, best = 0
    cdef float64_t u, r, ry, val, best_val = -INFINITY
    for y in range(H):
        r = <float64_t> (y - yp)
        ry = (q[2] * r + q[3]) * r
        for x in range(W):
            u = <float64_t> (x - xp)
            k = y * W + x
            val = (belief[k] + wt1 * pair1[k]) - (q[0] * u + q[1]) * u - ry
            if val > best_val:
                best_val = val
                best = k
    return best


cdef intp_t _vertex_floor(float64_t a, float64_t b, intp_t n) noexcept nogil:
    """floor of the minimiser -b / (2 a) of a u^2 + b u (a >= 0), clamped to [-n, n];
    with a negligible (linear), the end -n or n where b u is least."""
    cdef float64_t vertex
    cdef intp_t u
    if negligible(a):
        return -n if b > 0.0 else n
    vertex = -b / (2.0 * a)
    vertex = vertex if vertex > -n else <float64_t> -n
    vertex = vertex if vertex < n else <float64_t> n
    u = <intp_t> vertex
    return u - 1 if u > vertex else u


cdef inline float64_t _min_cost(float64_t a, float64_t b, intp_t lo, intp_t hi,
                                intp_t u) noexcept nogil:
    """min of the convex a u^2 + b u over the integers in [lo, hi] (lo <= hi, u =
    ``_vertex_floor`` with n >= max(|lo|, |hi|)): at u or u + 1 clamped to the range.
    (A negligible a: a u^2 < 1e-300 is neglected: far below ``_live_rows``'s margin.)"""
    cdef intp_t u0 = lo if u < lo else (hi if u > hi else u)
    cdef intp_t u1 = lo if u + 1 < lo else (hi if u + 1 > hi else u + 1)
    cdef float64_t c0 = (a * u0 + b) * u0, c1 = (a * u1 + b) * u1
    return c0 if c0 < c1 else c1


cdef struct _Work:
    # workspace of one tree max-sum call (``_maxsum``), handed out by ``_carve``
    float64_t* belief       # (P, L): unaries plus the messages received, per part
    float64_t* msg          # (L,): the message of the current edge
    int32_t* bestpair       # (P, L): best type pair of each edge per parent position
    float64_t* gts          # (T, W, H): child scores per up type, transposed
    intp_t* ready           # (T,): gts[t] holds its scores
    float64_t* gmax         # (T,): max and max |.| of the child scores per up type
    float64_t* gabs
    float64_t* pmax         # (T,): max and max |.| of wt2 * pairwise per down type
    float64_t* pabs
    float64_t* key          # (T^2,): upper bound of each type pair's message
    intp_t* rank            # (T^2,): the pairs by decreasing key
    float64_t* rowmax       # (T, H), (T, W): row and column maxima of the child scores
    float64_t* colmax
    float64_t* cxmin        # (W,), (H,): least deformation cost per parent position
    float64_t* cymin
    float64_t* ry           # (H,), (W,): bounds of ``_live_rows``
    float64_t* cx
    float64_t* msgmin       # (H,): row minima of the message so far
    float64_t* prowmax      # (T, H): row maxima of wt2 * pairwise per down type
    char* live              # (H,): rows where the current pair may win
    float64_t* tmp          # (L,): distance transform buffers
    float64_t* dbuf
    float64_t* inv          # (m + 1,): 1 / k, m = max(H, W)
    intp_t* v               # envelope workspace of ``dt1d`` (2 m + 1, m + 1, m)
    float64_t* z
    float64_t* hv


cdef void _carve(Arena* a, _Work* wk, intp_t P, intp_t T, intp_t H, intp_t W) noexcept nogil:
    """Hand out every buffer of ``_Work`` from the arena (sizes as documented there).

    Run twice by ``_maxsum``: to count the bytes, then to carve the allocation.
    """
    cdef intp_t L = H * W, m = max(H, W)
    cdef size_t f = sizeof(float64_t), i = sizeof(intp_t)
    wk.belief = <float64_t*> arena_take(a, P * L, f)
    wk.msg = <float64_t*> arena_take(a, L, f)
    wk.bestpair = <int32_t*> arena_take(a, P * L, sizeof(int32_t))
    wk.gts = <float64_t*> arena_take(a, T * L, f)
    wk.ready = <intp_t*> arena_take(a, T, i)
    wk.gmax = <float64_t*> arena_take(a, T, f)
    wk.gabs = <float64_t*> arena_take(a, T, f)
    wk.pmax = <float64_t*> arena_take(a, T, f)
    wk.pabs = <float64_t*> arena_take(a, T, f)
    wk.key = <float64_t*> arena_take(a, T * T, f)
    wk.rank = <intp_t*> arena_take(a, T * T, i)
    wk.rowmax = <float64_t*> arena_take(a, T * H, f)
    wk.colmax = <float64_t*> arena_take(a, T * W, f)
    wk.cxmin = <float64_t*> arena_take(a, W, f)
    wk.cymin = <float64_t*> arena_take(a, H, f)
    wk.ry = <float64_t*> arena_take(a, H, f)
    wk.cx = <float64_t*> arena_take(a, W, f)
    wk.msgmin = <float64_t*> arena_take(a, H, f)
    wk.prowmax = <float64_t*> arena_take(a, T * H, f)
    wk.live = <char*> arena_take(a, H, sizeof(char))
    wk.tmp = <float64_t*> arena_take(a, L, f)
    wk.dbuf = <float64_t*> arena_take(a, L, f)
    wk.inv = <float64_t*> arena_take(a, m + 1, f)
    wk.v = <intp_t*> arena_take(a, 2 * m + 1, i)
    wk.z = <float64_t*> arena_take(a, m + 1, f)
    wk.hv = <float64_t*> arena_take(a, m, f)


cdef intp_t _live_rows(const _Example* ex, const float64_t* q, const float64_t* rowmax,
                       const float64_t* colmax, float64_t gabs, float64_t pabs,
                       float64_t wt2, const float64_t* pair2, const float64_t* prowmax,
                       const float64_t* msg, _Work* wk) noexcept nogil:
    """The rows y where a type pair may beat msg: wk.live[y] = 1 (else 0); their count.

    With g the child's scores and cost = cost_x + cost_y its deformation cost,
    the pair's message at l is wt2 pair2[l] - c + max_{l'} g[l'] - cost(l' - l),
    at most both ry[y] - min_u cost_x(u) and cx[x] - min_r cost_y(r), where
    ry[y] = max_{y'} (max_x' g[y', x']) - cost_y(y' - y) (1-D transform of the
    row maxima) and cx[x] likewise over the column maxima (u, r over the grid).
    A row is dead when the smaller bound, plus a margin far above rounding
    errors (1e-12 times a bound on every term), is below msg[l] at each l of
    the row, so that skipping it never changes the maximum.  A row y is
    cleared at once when the largest bound of the row (plus wt2 pair2 at most
    prowmax[y]) is below the row's least msg (wk.msgmin[y]).
    """
    cdef intp_t H = ex.H, W = ex.W, m = max(H, W), x, y, u
    cdef float64_t margin, bound, ryy, cyy, cxlo = INFINITY, cxhi = -INFINITY
    cdef intp_t n_live = 0
    cdef char reached
    cdef const float64_t* msg_row
    cdef const float64_t* pair_row
    u = _vertex_floor(q[2], q[3], m)
    for y in range(H):
        wk.cymin[y] = _min_cost(q[2], q[3], -y, H - 1 - y, u)
    dt1d(rowmax, H, q[2], q[3], wk.ry, 1, NULL, 1, wk.inv, wk.v, wk.z, wk.hv)
    dt1d(colmax, W, q[0], q[1], wk.cx, 1, NULL, 1, wk.inv, wk.v, wk.z, wk.hv)
    u = _vertex_floor(q[0], q[1], m)
    for x in range(W):
        wk.cxmin[x] = _min_cost(q[0], q[1], -x, W - 1 - x, u)
        cxlo = wk.cxmin[x] if wk.cxmin[x] < cxlo else cxlo
        cxhi = wk.cx[x] if wk.cx[x] > cxhi else cxhi
    # row y is dead when msg[l] - wt2 pair2[l] - bound[l] > margin - c at every l in it
    margin = 1e-12 * (1.0 + gabs + pabs + fabs(q[4]) + (q[0] + q[2]) * m * m
                      + (fabs(q[1]) + fabs(q[3])) * m) - q[4]
    for y in range(H):
        ryy = wk.ry[y]
        cyy = wk.cymin[y]
        bound = ryy - cxlo if ryy - cxlo < cxhi - cyy else cxhi - cyy
        reached = 0
        if not wk.msgmin[y] - prowmax[y] - bound > margin:
            msg_row = msg + y * W
            pair_row = pair2 + y * W
            for x in range(W):          # branch free, no dependency chain
                bound = ryy - wk.cxmin[x]
                bound = bound if bound < wk.cx[x] - cyy else wk.cx[x] - cyy
                reached |= msg_row[x] - wt2 * pair_row[x] - bound <= margin
        wk.live[y] = reached
        n_live += reached
    return n_live


cdef void _rank_pairs(const _Tree* tr, const _Example* ex, const float64_t* w, intp_t a1,
                      const float64_t* g, _Work* wk) noexcept nogil:
    """Statistics of the child scores and pairwise terms for the bounds of
    ``_live_rows``, and wk.rank: the type pairs of the edge (arcs a1, a1 + 1) by
    decreasing upper bound of their message."""
    cdef intp_t T = tr.T, H = ex.H, W = ex.W, L = ex.L, a2 = a1 + 1
    cdef intp_t t1, t2, tp, j, k, x, y
    cdef float64_t wt1 = w[_off_types(tr) + a1], wt2 = w[_off_types(tr) + a2]
    cdef float64_t val, mx, ab, top
    cdef float64_t q[5]
    cdef const float64_t* pair
    cdef float64_t* rowmax
    cdef float64_t* colmax
    for t1 in range(T):
        pair = ex.pairwise + (a1 * T + t1) * L
        rowmax = wk.rowmax + t1 * H
        colmax = wk.colmax + t1 * W
        for x in range(W):
            colmax[x] = -INFINITY
        mx = -INFINITY
        ab = 0.0
        for y in range(H):
            top = -INFINITY
            for x in range(W):
                val = g[y * W + x] + wt1 * pair[y * W + x]
                top = val if val > top else top
                colmax[x] = val if val > colmax[x] else colmax[x]
                ab = fabs(val) if fabs(val) > ab else ab
            rowmax[y] = top
            mx = top if top > mx else mx
        wk.gmax[t1] = mx
        wk.gabs[t1] = ab
    for t2 in range(T):
        pair = ex.pairwise + (a2 * T + t2) * L
        mx = -INFINITY
        ab = 0.0
        for k in range(L):
            val = wt2 * pair[k]
            mx = val if val > mx else mx
            ab = fabs(val) if fabs(val) > ab else ab
        wk.pmax[t2] = mx
        wk.pabs[t2] = ab
        for y in range(H):
            mx = -INFINITY
            for x in range(W):
                val = wt2 * pair[y * W + x]
                mx = val if val > mx else mx
            wk.prowmax[t2 * H + y] = mx
    for tp in range(T * T):
        t1 = tp // T
        t2 = tp % T
        _edge_cost(tr, ex, w, a1, t1, t2, q)
        wk.key[tp] = (wk.gmax[t1] + wk.pmax[t2] - q[4]
                      - _min_cost(q[0], q[1], 1 - W, W - 1, _vertex_floor(q[0], q[1], W))
                      - _min_cost(q[2], q[3], 1 - H, H - 1, _vertex_floor(q[2], q[3], H)))
        j = tp
        while j > 0 and wk.key[wk.rank[j - 1]] < wk.key[tp]:
            wk.rank[j] = wk.rank[j - 1]
            j -= 1
        wk.rank[j] = tp


cdef void _edge_message(const _Tree* tr, const _Example* ex, const float64_t* w, intp_t c,
                        const float64_t* g, float64_t* msg, int32_t* bestpair,
                        _Work* wk) noexcept nogil:
    """msg[l] = max over (t_up, t_down, l_c) of the edge (c, parent) at parent position l;
    bestpair[l] = t_up T + t_down of the max.

    One 2-D distance transform per type pair, in decreasing order of an upper
    bound of the pair's message (``_rank_pairs``); pairs that cannot beat the
    message so far at any position are skipped, and the row pass of the
    transform is run only on the rows where the pair may win (``_live_rows``).
    Pairs with linear costs (both quadratic weights negligible: an O(L)
    transform, cheaper than the bounds) are always transformed; when every
    pair of the edge is linear (e.g. w = 0), the pairs are not ranked.
    """
    cdef intp_t T = tr.T, H = ex.H, W = ex.W, L = ex.L, a1 = tr.arc_up[c], a2 = a1 + 1
    cdef intp_t t1, t2, tp, r, k, x, y
    cdef float64_t wt1 = w[_off_types(tr) + a1], wt2 = w[_off_types(tr) + a2]
    cdef float64_t val, mx
    cdef float64_t q[5]
    cdef const float64_t* wd = w + _off_deform(tr)
    cdef const float64_t* pair
    cdef float64_t* gt
    cdef bint bounded = False
    for k in range(L):
        msg[k] = -INFINITY
    for t1 in range(T):
        wk.ready[t1] = 0
    for k in range(a1 * T, (a2 + 1) * T):       # any quadratic weight on the edge's arcs
        bounded = bounded or not negligible(wd[4 * k + 1]) or not negligible(wd[4 * k + 3])
    if bounded:
        _rank_pairs(tr, ex, w, a1, g, wk)
    else:
        for tp in range(T * T):
            wk.rank[tp] = tp
    for r in range(T * T):
        tp = wk.rank[r]
        t1 = tp // T
        t2 = tp % T
        pair = ex.pairwise + (a2 * T + t2) * L
        _edge_cost(tr, ex, w, a1, t1, t2, q)
        if r == 0 or (negligible(q[0]) and negligible(q[2])):
            for y in range(H):
                wk.live[y] = 1
        elif _live_rows(ex, q, wk.rowmax + t1 * H, wk.colmax + t1 * W, wk.gabs[t1],
                        wk.pabs[t2], wt2, pair, wk.prowmax + t2 * H, msg, wk) == 0:
            continue
        gt = wk.gts + t1 * L
        if not wk.ready[t1]:                    # the child's scores, transposed
            wk.ready[t1] = 1
            for x in range(W):
                for y in range(H):
                    gt[x * H + y] = (g[y * W + x]
                                     + wt1 * ex.pairwise[(a1 * T + t1) * L + y * W + x])
        dt2d(gt, H, W, q[0], q[1], q[2], q[3], wk.tmp, NULL, wk.dbuf, NULL, wk.live, wk.inv,
             wk.v, wk.z, wk.hv)
        for y in range(H):
            if not wk.live[y]:
                continue
            mx = INFINITY
            for x in range(W):
                k = y * W + x
                val = wk.dbuf[k] + wt2 * pair[k] - q[4]
                if val > msg[k]:
                    msg[k] = val
                    bestpair[k] = <int32_t> tp
                mx = msg[k] if msg[k] < mx else mx
            wk.msgmin[y] = mx


cdef int _maxsum(const _Tree* tr, const _Example* ex, const float64_t* w,
                 const int32_t* truth, float64_t radius2, int kind,
                 int32_t* out) except -1 nogil:
    """Write argmax_y <w, phi(x, y)> (+ L(truth, y) if truth != NULL) to out.

    The forward pass keeps only the best type pair per edge and parent
    position; the best child position of the chosen pair is recovered on the
    way down by ``_best_child_position`` (O(L) per edge), so the distance
    transforms store no argmax.
    """
    cdef _Work wk
    cdef Arena arena
    arena_init(&arena)
    _carve(&arena, &wk, tr.P, tr.T, ex.H, ex.W)      # count the bytes
    arena_allocate(&arena, "tree max-sum workspace")
    try:
        _carve(&arena, &wk, tr.P, tr.T, ex.H, ex.W)  # hand them out
        arena_check(&arena)
        reciprocals(max(ex.H, ex.W), wk.inv)
        _maxsum_passes(tr, ex, w, truth, radius2, kind, out, &wk)
    finally:
        arena_free(&arena)
    return 0


cdef void _maxsum_passes(const _Tree* tr, const _Example* ex, const float64_t* w,
                         const int32_t* truth, float64_t radius2, int kind, int32_t* out,
                         _Work* wk) noexcept nogil:
    """The passes of ``_maxsum`` (leaves to root, then back) in its workspace wk."""
    cdef intp_t P = tr.P, T = tr.T, H = ex.H, W = ex.W, L = ex.L
    cdef intp_t i, p, c, par, a1, t1, t2, k, x, y, pos
    cdef float64_t wu, dx, dy
    cdef float64_t q[5]
    cdef float64_t* belief = wk.belief
    cdef float64_t* msg = wk.msg
    cdef int32_t* bestpair = wk.bestpair

    for p in range(P):                          # unaries (+ loss augmentation)
        wu = w[p]
        for k in range(L):
            belief[p * L + k] = wu * ex.unary[p * L + k]
        if truth != NULL:
            for y in range(H):
                for x in range(W):
                    dx = x - truth[2 * p]
                    dy = y - truth[2 * p + 1]
                    belief[p * L + y * W + x] += _part_loss(dx * dx + dy * dy, radius2,
                                                            kind) / P
    for i in range(P - 1, 0, -1):               # leaves to root
        c = tr.order[i]
        par = tr.parent[c]
        _edge_message(tr, ex, w, c, belief + c * L, msg, bestpair + c * L, wk)
        for k in range(L):
            belief[par * L + k] += msg[k]

    c = tr.order[0]                             # the root
    pos = 0
    for k in range(1, L):
        if belief[c * L + k] > belief[c * L + pos]:
            pos = k
    out[2 * c] = <int32_t> (pos % W)
    out[2 * c + 1] = <int32_t> (pos // W)
    for i in range(1, P):                       # root to leaves
        c = tr.order[i]
        par = tr.parent[c]
        a1 = tr.arc_up[c]
        k = out[2 * par + 1] * W + out[2 * par]
        t1 = bestpair[c * L + k] // T
        t2 = bestpair[c * L + k] % T
        _edge_cost(tr, ex, w, a1, t1, t2, q)
        pos = _best_child_position(belief + c * L, ex.pairwise + (a1 * T + t1) * L,
                                   w[_off_types(tr) + a1], H, W, q, out[2 * par],
                                   out[2 * par + 1])
        out[2 * c] = <int32_t> (pos % W)
        out[2 * c + 1] = <int32_t> (pos // W)
        out[2 * P + a1] = <int32_t> t1
        out[2 * P + a1 + 1] = <int32_t> t2


def _take_ragged(values, ptr, idx):
    """Rows ``idx`` of a ragged array (row i is ``values[ptr[i]:ptr[i + 1]]``), repacked."""
    lengths = ptr[idx + 1] - ptr[idx]
    new_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.intp)
    if new_ptr[-1] == 0:
        return np.zeros(0), new_ptr
    return np.concatenate([values[ptr[i]:ptr[i + 1]] for i in idx]), new_ptr


cdef class PoseData:
    """Packed inputs of n examples (shared by the oracle and decoding)."""
    cdef _Tree tree
    cdef readonly int32_t[::1] parents, order, arc_up
    cdef readonly intp_t[:, ::1] shapes
    cdef readonly intp_t[::1] unary_ptr, pair_ptr
    cdef readonly float64_t[::1] unary, pairwise
    cdef readonly float64_t[:, :, :, ::1] offsets

    def __init__(self, parents, intp_t n_types, shapes, unary, unary_ptr, pairwise,
                 pair_ptr, offsets):
        self.parents, self.order, self.arc_up = tree_arrays(parents)
        self.tree.P = self.parents.shape[0]
        self.tree.A = 2 * (self.tree.P - 1)
        self.tree.T = n_types
        self.tree.parent = &self.parents[0]
        self.tree.order = &self.order[0]
        self.tree.arc_up = &self.arc_up[0]
        self.shapes = shapes
        self.unary = unary
        self.unary_ptr = unary_ptr
        self.pairwise = pairwise if len(pairwise) else np.zeros(1)
        self.pair_ptr = pair_ptr
        self.offsets = offsets if offsets.size else np.zeros((offsets.shape[0], 1, 1, 2))

    cdef inline _Example example(self, intp_t i) noexcept nogil:
        cdef _Example ex
        ex.H = self.shapes[i, 0]
        ex.W = self.shapes[i, 1]
        ex.L = ex.H * ex.W
        ex.unary = &self.unary[self.unary_ptr[i]]
        ex.pairwise = &self.pairwise[self.pair_ptr[i]]
        ex.offsets = &self.offsets[i, 0, 0, 0]
        return ex

    def take(self, indices):
        """The packed inputs of examples ``indices`` (in that order)."""
        idx = np.asarray(indices, dtype=np.intp)
        unary, unary_ptr = _take_ragged(np.asarray(self.unary), np.asarray(self.unary_ptr), idx)
        pairwise, pair_ptr = _take_ragged(np.asarray(self.pairwise), np.asarray(self.pair_ptr),
                                          idx)
        return PoseData(np.asarray(self.parents), self.tree.T, np.asarray(self.shapes)[idx],
                        unary, unary_ptr, pairwise, pair_ptr,
                        np.ascontiguousarray(np.asarray(self.offsets)[idx]))

    def __reduce__(self):
        return (PoseData, (np.asarray(self.parents), self.tree.T, np.asarray(self.shapes),
                           np.asarray(self.unary), np.asarray(self.unary_ptr),
                           np.asarray(self.pairwise), np.asarray(self.pair_ptr),
                           np.asarray(self.offsets)))


@cython.final
cdef class PoseOracle(MaxOracle):
    """Loss-augmented tree max-sum with distance transforms for n examples.

    Built by ``PoseModel.bind``: the packed inputs (``PoseData``), the ground
    truth labellings (n, 2 P + A), the loss radius^2 per example and the loss
    kind.  ``solve`` raises ``ValueError`` if a quadratic deformation weight is
    negative.
    """
    cdef readonly PoseData data
    cdef readonly int32_t[:, ::1] truth
    cdef readonly float64_t[::1] radius2
    cdef readonly int loss_kind

    def __init__(self, PoseData data, truth, radius2, str loss="truncated"):
        if loss not in LOSS_KINDS:
            raise ValueError(f"unknown loss {loss!r}; use one of {sorted(LOSS_KINDS)}")
        self.data = data
        self.truth = truth
        self.radius2 = radius2
        self.loss_kind = LOSS_KINDS[loss]
        self.n_blocks = self.truth.shape[0]
        self.n_features = pose_size(data.tree.P, data.tree.T)
        self.max_labels = 2 * data.tree.P + data.tree.A
        self.max_psi_nnz = 2 * (data.tree.P + 5 * data.tree.A)
        self.dense_psi = False
        self.needs_gil = False

    def weight_bounds(self):
        """Box ``(lower, upper)`` under which ``solve`` is exact (``pose_weight_bounds``);
        ``solve``'s default ``box="auto"`` trains in it."""
        return pose_weight_bounds(self.data.tree.P, self.data.tree.T)

    def take_blocks(self, indices):
        """The oracle of examples ``indices`` only (block k is example ``indices[k]``).

        Distributed executors send each worker the shard it answers for
        (``ssvm_core.executors.DaskExecutor``).
        """
        idx = np.asarray(indices)
        if idx.ndim != 1 or not np.issubdtype(idx.dtype, np.integer) or idx.size == 0:
            raise ValueError("indices must be a nonempty 1-D array of example indices")
        if idx.min() < 0 or idx.max() >= self.n_blocks:
            raise IndexError(f"example indices must lie in [0, {self.n_blocks})")
        loss = {v: k for k, v in LOSS_KINDS.items()}[self.loss_kind]
        return PoseOracle(self.data.take(idx), np.ascontiguousarray(np.asarray(self.truth)[idx]),
                          np.ascontiguousarray(np.asarray(self.radius2)[idx]), loss)

    def __reduce__(self):
        loss = {v: k for k, v in LOSS_KINDS.items()}[self.loss_kind]
        return (PoseOracle, (self.data, np.asarray(self.truth), np.asarray(self.radius2),
                             loss))

    cdef int _fill(self, intp_t i, const _Example* ex, const int32_t* y,
                   const float64_t* w, Corner* out) except -1 nogil:
        cdef const _Tree* tr = &self.data.tree
        cdef const int32_t* z = &self.truth[i, 0]
        cdef intp_t nnz_z, nnz
        cdef float64_t dot_z, dot_y
        nnz_z = _write_phi(tr, ex, z, 1.0, out.psi_idx, out.psi_val)
        nnz = nnz_z + _write_phi(tr, ex, y, -1.0, out.psi_idx + nnz_z, out.psi_val + nnz_z)
        out.psi_nnz = nnz
        # two sums, in the same order: H(y_i) is exactly 0
        dot_z = dot_gather(w, out.psi_idx, out.psi_val, nnz_z)
        dot_y = dot_gather(w, out.psi_idx + nnz_z, out.psi_val + nnz_z, nnz - nnz_z)
        out.n_labels = 2 * tr.P + tr.A
        out.loss = _loss(tr, z, y, self.radius2[i], self.loss_kind)
        out.score = out.loss - (dot_z + dot_y)
        return 0

    cdef int solve(self, intp_t i, const float64_t* w, Corner* out) except -1 nogil:
        cdef const _Tree* tr = &self.data.tree
        cdef _Example ex = self.data.example(i)
        _check_quadratics(tr, w)
        _maxsum(tr, &ex, w, &self.truth[i, 0], self.radius2[i], self.loss_kind, out.labels)
        return self._fill(i, &ex, out.labels, w, out)

    cdef int evaluate(self, intp_t i, const int32_t* labels, intp_t n_labels,
                      const float64_t* w, Corner* out) except -1 nogil:
        cdef const _Tree* tr = &self.data.tree
        cdef _Example ex = self.data.example(i)
        cdef intp_t k
        _check_labelling(tr, &ex, labels, n_labels)
        for k in range(n_labels):
            out.labels[k] = labels[k]
        return self._fill(i, &ex, labels, w, out)


def decode(PoseData data, w):
    """argmax_y <w, phi(x, y)> for every packed example: int32 array (n, 2 P + A)."""
    cdef const _Tree* tr = &data.tree
    cdef intp_t n = data.shapes.shape[0], i
    cdef float64_t[::1] wv = check_weights(w, pose_size(tr.P, tr.T))
    out = np.zeros((n, 2 * tr.P + tr.A), dtype=np.int32)
    cdef int32_t[:, ::1] o = out
    cdef _Example ex
    _check_quadratics(tr, &wv[0])
    with nogil:
        for i in range(n):
            ex = data.example(i)
            _maxsum(tr, &ex, &wv[0], NULL, 1.0, LOSS_TRUNCATED, &o[i, 0])
    return out


def check_deformation_weights(PoseData data, w):
    """Raise ``ValueError`` if a quadratic deformation weight of ``w`` is negative."""
    cdef float64_t[::1] wv = check_weights(w, pose_size(data.tree.P, data.tree.T))
    _check_quadratics(&data.tree, &wv[0])
