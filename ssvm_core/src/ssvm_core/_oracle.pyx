"""Max-oracle protocol: the ``MaxOracle`` base class, the delegating base of
oracle wrappers (``DelegatingOracle``) and the Python adapter (``PythonOracle``).

A max oracle is a structured model bound to ``n_blocks`` training examples.
For block ``i`` and weights ``w`` it performs loss-augmented decoding
(``solve``) and re-evaluates stored labellings (``evaluate``), writing the
labelling, ``psi_i(y) = phi(x_i, y_i) - phi(x_i, y)``, the task loss
``L_i(y)`` and ``H_i(y; w) = L_i(y) - <w, psi_i(y)>`` into a ``Corner``.
"""

import numbers

from libc.stdlib cimport free, malloc

import numpy as np
import scipy.sparse as sp

from ssvm_core.validation import check_weights

from ssvm_core._typedefs cimport float64_t, int32_t, intp_t
from ssvm_core._vector cimport checked_malloc, dot_gather


cdef struct _Expansion:
    # A_i e as COO entries in buffers of max_expand entries (the default coord_* methods)
    int32_t* idx
    float64_t* val
    intp_t nnz


cdef int _alloc_expansion(MaxOracle oracle, _Expansion* ex) except -1 nogil:
    """Buffers of ``max_expand`` entries for one ``coord_expand`` (``_free_expansion``)."""
    cdef intp_t size = oracle.max_expand if oracle.max_expand > 0 else 1
    ex.nnz = 0
    ex.val = NULL
    ex.idx = <int32_t*> checked_malloc(size * sizeof(int32_t), "coord_expand buffer")
    ex.val = <float64_t*> malloc(size * sizeof(float64_t))
    if ex.val == NULL:
        free(ex.idx)
        ex.idx = NULL
        with gil:
            raise MemoryError("coord_expand buffer")
    return 0


cdef void _free_expansion(_Expansion* ex) noexcept nogil:
    free(ex.idx)
    free(ex.val)
    ex.idx, ex.val, ex.nnz = NULL, NULL, 0


cdef void _sort_entries(int32_t* idx, float64_t* val, intp_t m) noexcept nogil:
    """Sort COO entries by index (insertion sort for short runs, else heap sort)."""
    cdef intp_t a, b, end
    cdef int32_t ti
    cdef float64_t tv
    if m <= 32:
        for a in range(1, m):
            ti, tv, b = idx[a], val[a], a - 1
            while b >= 0 and idx[b] > ti:
                idx[b + 1], val[b + 1] = idx[b], val[b]
                b -= 1
            idx[b + 1], val[b + 1] = ti, tv
        return
    for a in range(m // 2 - 1, -1, -1):          # heapify (max-heap by index)
        _sift(idx, val, a, m)
    for end in range(m - 1, 0, -1):
        idx[0], idx[end] = idx[end], idx[0]
        val[0], val[end] = val[end], val[0]
        _sift(idx, val, 0, end)


cdef inline void _sift(int32_t* idx, float64_t* val, intp_t root, intp_t m) noexcept nogil:
    cdef intp_t child
    while 2 * root + 1 < m:
        child = 2 * root + 1
        if child + 1 < m and idx[child + 1] > idx[child]:
            child += 1
        if idx[root] >= idx[child]:
            return
        idx[root], idx[child] = idx[child], idx[root]
        val[root], val[child] = val[child], val[root]
        root = child


cdef class MaxOracle:
    """Base class of compiled max oracles (see ``_oracle.pxd``).

    Subclasses set ``n_blocks``, ``n_features``, ``max_labels``,
    ``max_psi_nnz``, ``dense_psi`` and ``needs_gil`` at construction and
    implement the C methods ``solve`` and ``evaluate``.

    Compact blocks are optional: an oracle whose joint features factor as
    psi_i(y) = A_i q_i(y), with q_i a short sufficient statistic (for a chain,
    per-token label indicators and transition counts), sets ``max_coords``
    (and ``max_coord_nnz``, ``max_expand``), implements ``block_coords``,
    ``coord_scores`` and ``coord_expand``, and fills a corner's ``coord_*``
    and ``theta`` buffers when they are set.  The solvers then store each
    block's dual vector as its ``block_coords(i)`` coordinates instead of a
    d-vector.  ``coord_sqnorm``, ``coord_expand`` and ``coord_add`` take
    sparse coordinates (distinct, increasing indices): a step changes only
    the coordinates its corner and the block touch, and costs that many, not
    ``block_coords(i)``.

    ``coord_sqnorm`` (||A_i e||^2), ``coord_add`` (the fused
    ``out += A_i e`` the solvers use without a box) and ``coord_dot``
    (<A_i e, w>, which pipelined steps take at the current w) have defaults
    written through ``coord_expand``: correct for any basis, at the cost of an
    expansion (and for the first two an allocation, for ``coord_sqnorm`` a
    sort) per call; fast oracles override them (a Gram matrix, a direct
    scatter, a direct gather).

    ``exact`` (True here) says whether ``solve`` returns a true maximiser of
    H_i(y; w).  Approximate oracles (loopy belief propagation, move-making
    algorithms, ...) override it to return False; the solvers then report
    their gaps as estimates, never as certificates.
    """

    @property
    def exact(self) -> bool:
        """Whether ``solve`` is an exact max oracle (gaps are then certificates)."""
        return True

    cdef int solve(self, intp_t i, const float64_t* w, Corner* out) except -1 nogil:
        with gil:
            raise NotImplementedError(f"{type(self).__name__} does not implement solve")

    cdef int evaluate(self, intp_t i, const int32_t* labels, intp_t n_labels,
                      const float64_t* w, Corner* out) except -1 nogil:
        with gil:
            raise NotImplementedError(f"{type(self).__name__} does not implement evaluate")

    cdef intp_t solve_many(self, intp_t i, const float64_t* w, intp_t k,
                           Corner* outs) except -1 nogil:
        """Up to ``k`` distinct labellings with high H_i(y; w), the argmax first.

        Multi-sample block updates use the extra answers.  This default
        returns ``solve``'s answer only; oracles that can cheaply offer more
        (k-best, max-marginals, samples) override it.
        """
        self.solve(i, w, &outs[0])
        return 1

    cdef void prefetch(self, intp_t i) noexcept nogil:
        """Block i comes next: oracles whose per-block data is large ask for it
        here (``ssvm_core._vector.ssvm_prefetch``) so that ``solve`` does not wait
        on memory.  A hint only: results never depend on it."""
        pass

    cdef intp_t block_coords(self, intp_t i) noexcept nogil:
        return 0

    cdef int coord_scores(self, intp_t i, const float64_t* w,
                          float64_t* theta) except -1 nogil:
        with gil:
            raise NotImplementedError(f"{type(self).__name__} has no compact blocks")

    cdef float64_t coord_sqnorm(self, intp_t i, const int32_t* idx, const float64_t* val,
                                intp_t nnz) except? -1 nogil:
        """||A_i e||^2 by default through ``coord_expand``: the expansion's entries
        sorted by feature, repeated features summed, then squared."""
        cdef intp_t m, q, start
        cdef float64_t total = 0.0, run
        if self.max_coords <= 0:
            with gil:
                raise NotImplementedError(f"{type(self).__name__} has no compact blocks")
        cdef _Expansion ex
        _alloc_expansion(self, &ex)
        try:
            m = self.coord_expand(i, idx, val, nnz, ex.idx, ex.val)
            _sort_entries(ex.idx, ex.val, m)
            q = 0
            while q < m:
                start, run = q, 0.0
                while q < m and ex.idx[q] == ex.idx[start]:
                    run += ex.val[q]
                    q += 1
                total += run * run
        finally:
            _free_expansion(&ex)
        return total

    cdef intp_t coord_expand(self, intp_t i, const int32_t* idx, const float64_t* val,
                             intp_t nnz, int32_t* out_idx, float64_t* out_val) except -1 nogil:
        with gil:
            raise NotImplementedError(f"{type(self).__name__} has no compact blocks")

    cdef int coord_add(self, intp_t i, const int32_t* idx, const float64_t* val, intp_t nnz,
                       float64_t* out, float64_t* out2, float64_t c2) except -1 nogil:
        """out += A_i e (and out2 += c2 A_i e) by default through ``coord_expand``."""
        cdef intp_t q
        if self.max_coords <= 0:
            with gil:
                raise NotImplementedError(f"{type(self).__name__} has no compact blocks")
        cdef _Expansion ex
        _alloc_expansion(self, &ex)
        try:
            ex.nnz = self.coord_expand(i, idx, val, nnz, ex.idx, ex.val)
            for q in range(ex.nnz):
                out[ex.idx[q]] += ex.val[q]
                if out2 != NULL:
                    out2[ex.idx[q]] += c2 * ex.val[q]
        finally:
            _free_expansion(&ex)
        return 0

    cdef float64_t coord_dot(self, intp_t i, const int32_t* idx, const float64_t* val,
                             intp_t nnz, const float64_t* w, int32_t* work_idx,
                             float64_t* work_val) except? -1 nogil:
        """<A_i e, w> by default through ``coord_expand`` into the caller's scratch:
        the expansion's entries times w's."""
        cdef intp_t m = self.coord_expand(i, idx, val, nnz, work_idx, work_val)
        return dot_gather(w, work_idx, work_val, m)

    @property
    def compact_blocks(self) -> bool:
        """Whether the oracle offers compact blocks (``max_coords > 0``)."""
        return self.max_coords > 0

    def coord_sizes(self):
        """``block_coords(i)`` of every block (int array; zeros without compact blocks)."""
        out = np.empty(self.n_blocks, dtype=np.intp)
        cdef intp_t[::1] o = out
        cdef intp_t i
        for i in range(self.n_blocks):
            o[i] = self.block_coords(i)
        return out

    def coord_scores_py(self, i, w):
        """Python twin of ``coord_scores``: A_i^T w."""
        i = self._check_compact(i)
        cdef const float64_t[::1] wv = check_weights(w, self.n_features)
        theta = np.zeros(max(self.block_coords(i), 1))
        cdef float64_t[::1] t = theta
        self.coord_scores(i, &wv[0], &t[0])
        return theta[:self.block_coords(i)]

    def coord_sqnorm_py(self, i, e):
        """Python twin of ``coord_sqnorm``: ||A_i e||^2 (``e`` dense)."""
        i = self._check_compact(i)
        idx, val = self._sparse_coords(i, e)
        cdef const int32_t[::1] iv = idx
        cdef const float64_t[::1] vv = val
        return self.coord_sqnorm(i, &iv[0], &vv[0], idx.shape[0] - 1)

    def coord_dot_py(self, i, e, w):
        """Python twin of ``coord_dot``: <A_i e, w> (``e`` dense)."""
        i = self._check_compact(i)
        idx, val = self._sparse_coords(i, e)
        cdef const int32_t[::1] iv = idx
        cdef const float64_t[::1] vv = val
        cdef const float64_t[::1] wv = check_weights(w, self.n_features)
        work_idx = np.zeros(max(self.max_expand, 1), dtype=np.int32)
        work_val = np.zeros(max(self.max_expand, 1))
        cdef int32_t[::1] wi = work_idx
        cdef float64_t[::1] wvals = work_val
        return self.coord_dot(i, &iv[0], &vv[0], idx.shape[0] - 1, &wv[0], &wi[0],
                              &wvals[0])

    def coord_expand_py(self, i, e):
        """Python twin of ``coord_expand``: A_i e as a dense d-vector (``e`` dense)."""
        i = self._check_compact(i)
        idx, val = self._sparse_coords(i, e)
        cdef const int32_t[::1] iv = idx
        cdef const float64_t[::1] vv = val
        out_idx = np.zeros(max(self.max_expand, 1), dtype=np.int32)
        out_val = np.zeros(max(self.max_expand, 1))
        cdef int32_t[::1] oi = out_idx
        cdef float64_t[::1] ov = out_val
        cdef intp_t nnz = self.coord_expand(i, &iv[0], &vv[0], idx.shape[0] - 1, &oi[0],
                                            &ov[0])
        out = np.zeros(self.n_features)
        np.add.at(out, out_idx[:nnz], out_val[:nnz])
        return out

    def coord_add_py(self, i, e, out, out2=None, c2=0.0):
        """Python twin of ``coord_add``: ``out += A_i e`` (and ``out2 += c2 A_i e``)
        in place, ``e`` dense; both must be float64 C-contiguous d-vectors."""
        i = self._check_compact(i)
        idx, val = self._sparse_coords(i, e)
        cdef const int32_t[::1] iv = idx
        cdef const float64_t[::1] vv = val
        cdef float64_t[::1] o1 = out
        cdef float64_t[::1] o2 = out2 if out2 is not None else None
        if o1.shape[0] != self.n_features or (o2 is not None and o2.shape[0] != self.n_features):
            raise ValueError(f"out and out2 must have {self.n_features} entries")
        self.coord_add(i, &iv[0], &vv[0], idx.shape[0] - 1, &o1[0],
                       NULL if o2 is None else &o2[0], c2)

    def solve_coords_py(self, i, w, psi=True):
        """``solve`` with the compact buffers: ``(labels, psi, q, theta, loss, score)``,
        psi a dense d-vector and q dense in the block's coordinates.

        ``psi=False`` sets ``Corner.coords_only`` (the oracle may skip psi); psi
        is then None.
        """
        i = self._check_compact(i)
        cdef const float64_t[::1] wv = check_weights(w, self.n_features)
        cdef CornerBuffer buf = CornerBuffer(self, compact=True, psi=bool(psi))
        self.solve(i, &wv[0], &buf.corner)
        return (buf.labels(), buf.dense_psi(self.n_features) if psi else None,
                buf.dense_coords(i), buf._theta[:self.block_coords(i)].copy(),
                buf.corner.loss, buf.corner.score)

    def evaluate_coords_py(self, i, labels, w):
        """``evaluate`` with the compact buffers: ``(psi, q, loss, score)``."""
        i = self._check_compact(i)
        cdef const float64_t[::1] wv = check_weights(w, self.n_features)
        cdef int32_t[::1] lab = _as_labels(labels, self.max_labels)
        cdef CornerBuffer buf = CornerBuffer(self, compact=True)
        buf.corner.theta = NULL
        self.evaluate(i, &lab[0] if lab.shape[0] else NULL, lab.shape[0], &wv[0],
                      &buf.corner)
        return (buf.dense_psi(self.n_features), buf.dense_coords(i), buf.corner.loss,
                buf.corner.score)

    def _check_compact(self, i):
        i = self._check_block(i)
        if self.max_coords <= 0:
            raise ValueError(f"{type(self).__name__} has no compact blocks")
        return i

    def _sparse_coords(self, intp_t i, e):
        """Dense coordinates ``e`` of block i as the protocol's sparse form: the
        increasing indices of its nonzeros and their values, each with one
        padding entry at the end (so that &x[0] exists when e is all zeros)."""
        arr = np.asarray(e, dtype=np.float64)
        if arr.shape != (self.block_coords(i),):
            raise ValueError(f"coordinates of block {i} must have shape "
                             f"({self.block_coords(i)},), got {arr.shape}")
        idx = np.flatnonzero(arr)
        return (np.append(idx, 0).astype(np.int32),
                np.append(arr[idx], 0.0))

    def solve_many_py(self, i, w, k):
        """Python twin of ``solve_many``: a list of ``(labels, psi, loss, score)``."""
        i = self._check_block(i)
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        cdef const float64_t[::1] wv = check_weights(w, self.n_features)
        buffers = [CornerBuffer(self) for _ in range(k)]
        cdef Corner* outs = <Corner*> malloc(k * sizeof(Corner))
        cdef intp_t j, got
        if outs == NULL:
            raise MemoryError()
        try:
            for j in range(k):
                outs[j] = (<CornerBuffer> buffers[j]).corner
            got = self.solve_many(i, &wv[0], k, outs)
            for j in range(got):
                (<CornerBuffer> buffers[j]).corner = outs[j]
        finally:
            free(outs)
        return [(b.labels(), b.dense_psi(self.n_features), (<CornerBuffer> b).corner.loss,
                 (<CornerBuffer> b).corner.score) for b in buffers[:got]]

    def block_support(self, i):
        """Feature indices that ``psi_i(y)`` can touch, for any ``y``.

        Returns ``None`` (all features) unless the oracle knows a smaller set;
        solvers then store the block's dual vector ``w_i`` sparsely.
        """
        return None

    def _check_block(self, i):
        if not isinstance(i, numbers.Integral) or not 0 <= i < self.n_blocks:
            raise IndexError(f"block index {i!r} outside [0, {self.n_blocks})")
        return int(i)

    def solve_py(self, i, w):
        """Python twin of ``solve``: ``(labels, psi, loss, score)``, psi dense."""
        i = self._check_block(i)
        cdef const float64_t[::1] wv = check_weights(w, self.n_features)
        cdef CornerBuffer buf = CornerBuffer(self)
        self.solve(i, &wv[0], &buf.corner)
        return buf.labels(), buf.dense_psi(self.n_features), buf.corner.loss, buf.corner.score

    def evaluate_py(self, i, labels, w):
        """Python twin of ``evaluate``: ``(psi, loss, score)``, psi dense."""
        i = self._check_block(i)
        cdef const float64_t[::1] wv = check_weights(w, self.n_features)
        cdef int32_t[::1] lab = _as_labels(labels, self.max_labels)
        cdef CornerBuffer buf = CornerBuffer(self)
        self.evaluate(i, &lab[0] if lab.shape[0] else NULL, lab.shape[0], &wv[0],
                      &buf.corner)
        return buf.dense_psi(self.n_features), buf.corner.loss, buf.corner.score


cdef int32_t[::1] _as_labels(object labels, intp_t max_labels):
    arr = np.asarray(labels)
    if arr.ndim != 1:
        raise ValueError(f"a labelling must be 1-D, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"a labelling must hold integers, got dtype {arr.dtype}")
    if arr.shape[0] > max_labels:
        raise ValueError(f"labelling of length {arr.shape[0]} exceeds max_labels={max_labels}")
    return np.ascontiguousarray(arr, dtype=np.int32)


def labelling_key(labels) -> bytes:
    """Compact, hashable key of a labelling (its int32 bytes)."""
    return np.ascontiguousarray(labels, dtype=np.int32).tobytes()


cdef class CornerBuffer:
    """Memory for one ``Corner``, sized for ``oracle``.

    With ``compact=True`` (the oracle must offer compact blocks) the corner
    also has the ``coord_*`` and ``theta`` buffers, so answers come with
    their block coordinates and A_i^T w; ``psi=False`` then tells the oracle
    that psi is not read (``Corner.coords_only``), so it may skip writing it.
    """

    def __cinit__(self, MaxOracle oracle, bint compact=False, bint psi=True):
        self._owner = oracle
        self._labels = np.zeros(max(oracle.max_labels, 1), dtype=np.int32)
        self._idx = np.zeros(max(oracle.max_psi_nnz, 1), dtype=np.int32)
        n_val = oracle.n_features if oracle.dense_psi else oracle.max_psi_nnz
        self._val = np.zeros(max(n_val, 1), dtype=np.float64)
        cdef int32_t[::1] lab = self._labels
        cdef int32_t[::1] idx = self._idx
        cdef float64_t[::1] val = self._val
        self.corner.labels = &lab[0]
        self.corner.psi_idx = NULL if oracle.dense_psi else &idx[0]
        self.corner.psi_val = &val[0]
        self.corner.n_labels = 0
        self.corner.psi_nnz = 0
        self.corner.loss = 0.0
        self.corner.score = 0.0
        self.corner.coord_idx = NULL
        self.corner.coord_val = NULL
        self.corner.coord_nnz = 0
        self.corner.theta = NULL
        self.corner.coords_only = False
        if not compact:
            return
        if oracle.max_coords <= 0:
            raise ValueError(f"{type(oracle).__name__} has no compact blocks")
        self._coord_idx = np.zeros(max(oracle.max_coord_nnz, 1), dtype=np.int32)
        self._coord_val = np.zeros(max(oracle.max_coord_nnz, 1))
        self._theta = np.zeros(oracle.max_coords)
        cdef int32_t[::1] cidx = self._coord_idx
        cdef float64_t[::1] cval = self._coord_val
        cdef float64_t[::1] theta = self._theta
        self.corner.coord_idx = &cidx[0]
        self.corner.coord_val = &cval[0]
        self.corner.theta = &theta[0]
        self.corner.coords_only = not psi

    def dense_coords(self, intp_t i):
        """q_i(y) dense in block i's coordinates (compact buffers only)."""
        out = np.zeros((<MaxOracle> self._owner).block_coords(i))
        np.add.at(out, self._coord_idx[:self.corner.coord_nnz],
                  self._coord_val[:self.corner.coord_nnz])
        return out

    def labels(self):
        return self._labels[:self.corner.n_labels].copy()

    def dense_psi(self, intp_t n_features):
        cdef intp_t nnz = self.corner.psi_nnz
        if self.corner.psi_idx == NULL:
            return self._val[:n_features].copy()
        psi = np.zeros(n_features)
        np.add.at(psi, self._idx[:nnz], self._val[:nnz])
        return psi


cdef class DelegatingOracle(MaxOracle):
    """The delegating base of oracle wrappers: forwards everything to ``oracle``.

    It takes the wrapped oracle's sizes and flags (``n_blocks``, ``n_features``,
    ``max_labels``, ``max_psi_nnz``, ``dense_psi``, ``needs_gil`` and the
    compact ones, ``max_coords``, ``max_coord_nnz`` and ``max_expand``) and
    forwards every method of the protocol to it: the C methods ``solve``,
    ``evaluate``, ``solve_many``, ``prefetch``, ``block_coords`` and the
    ``coord_*`` methods, the Python ``exact`` and ``block_support``, and,
    through ``__getattr__``, any other attribute of the wrapped oracle (e.g.
    ``weight_bounds``, read by ``box="auto"``), except ``take_blocks``: a
    distributed executor's shard of the wrapped oracle would drop what the
    wrapper does.  A wrapper subclasses it and overrides only what it changes,
    so a wrapped compact oracle still trains on compact blocks.

    Parameters
    ----------
    oracle : MaxOracle or Python oracle
        The wrapped oracle (a Python one is adapted by ``PythonOracle``).

    Notes
    -----
    A subclass whose constructor takes more than the oracle calls
    ``super().__init__(oracle)`` first and overrides ``__reduce__`` (the base
    pickles as ``type(self)(self.oracle)``).  Its C methods reach the wrapped
    oracle's as ``self.oracle.solve(i, w, out)``, without the GIL when the
    wrapped oracle needs none (``needs_gil`` is the wrapped oracle's).
    """

    def __init__(self, oracle):
        self.oracle = oracle if isinstance(oracle, MaxOracle) else PythonOracle(oracle)
        self.n_blocks = self.oracle.n_blocks
        self.n_features = self.oracle.n_features
        self.max_labels = self.oracle.max_labels
        self.max_psi_nnz = self.oracle.max_psi_nnz
        self.dense_psi = self.oracle.dense_psi
        self.needs_gil = self.oracle.needs_gil
        self.max_coords = self.oracle.max_coords
        self.max_coord_nnz = self.oracle.max_coord_nnz
        self.max_expand = self.oracle.max_expand

    def __reduce__(self):
        return (type(self), (self.oracle,))

    def __getattr__(self, name):
        # only reached for names the class does not define
        if self.oracle is None or name.startswith("__") or name == "take_blocks":
            raise AttributeError(name)
        return getattr(self.oracle, name)

    @property
    def exact(self) -> bool:
        """The wrapped oracle's ``exact``."""
        return self.oracle.exact

    def block_support(self, i):
        """The wrapped oracle's ``block_support(i)``."""
        return self.oracle.block_support(i)

    cdef int solve(self, intp_t i, const float64_t* w, Corner* out) except -1 nogil:
        return self.oracle.solve(i, w, out)

    cdef int evaluate(self, intp_t i, const int32_t* labels, intp_t n_labels,
                      const float64_t* w, Corner* out) except -1 nogil:
        return self.oracle.evaluate(i, labels, n_labels, w, out)

    cdef intp_t solve_many(self, intp_t i, const float64_t* w, intp_t k,
                           Corner* outs) except -1 nogil:
        return self.oracle.solve_many(i, w, k, outs)

    cdef void prefetch(self, intp_t i) noexcept nogil:
        self.oracle.prefetch(i)

    cdef intp_t block_coords(self, intp_t i) noexcept nogil:
        return self.oracle.block_coords(i)

    cdef int coord_scores(self, intp_t i, const float64_t* w,
                          float64_t* theta) except -1 nogil:
        return self.oracle.coord_scores(i, w, theta)

    cdef float64_t coord_sqnorm(self, intp_t i, const int32_t* idx, const float64_t* val,
                                intp_t nnz) except? -1 nogil:
        return self.oracle.coord_sqnorm(i, idx, val, nnz)

    cdef intp_t coord_expand(self, intp_t i, const int32_t* idx, const float64_t* val,
                             intp_t nnz, int32_t* out_idx, float64_t* out_val) except -1 nogil:
        return self.oracle.coord_expand(i, idx, val, nnz, out_idx, out_val)

    cdef int coord_add(self, intp_t i, const int32_t* idx, const float64_t* val, intp_t nnz,
                       float64_t* out, float64_t* out2, float64_t c2) except -1 nogil:
        return self.oracle.coord_add(i, idx, val, nnz, out, out2, c2)

    cdef float64_t coord_dot(self, intp_t i, const int32_t* idx, const float64_t* val,
                             intp_t nnz, const float64_t* w, int32_t* work_idx,
                             float64_t* work_val) except? -1 nogil:
        return self.oracle.coord_dot(i, idx, val, nnz, w, work_idx, work_val)


cdef class PythonOracle(MaxOracle):
    """Adapter making any Python object a ``MaxOracle``.

    The object must have integer attributes ``n_blocks``, ``n_features`` and
    ``max_labels`` and the methods

    - ``solve(i, w) -> (labels, psi, loss)``: loss-augmented decoding,
    - ``evaluate(i, labels, w) -> (psi, loss)``: a stored labelling,
    - optionally ``solve_many(i, w, k) -> [(labels, psi, loss), ...]``: up to k
      distinct high-scoring labellings, the argmax first,

    where ``labels`` is a 1-D integer array, ``psi`` is ``psi_i(y)`` as a dense
    vector, a sparse row/column, or an ``(indices, values)`` pair, and ``loss``
    is ``L_i(y) >= 0``.  It may define ``max_psi_nnz`` (defaults to
    ``n_features``) and ``block_support(i)``.  Each call takes the GIL once;
    every answer is checked and a wrong shape or value raises ``ValueError``.
    ``w`` is a read-only copy of the solver's iterate that owns its memory:
    the object may keep it.  Other attributes of the object (e.g.
    ``weight_bounds``) are read through the adapter.
    """

    def __cinit__(self, obj):
        for name in ("n_blocks", "n_features", "max_labels"):
            if not isinstance(getattr(obj, name, None), numbers.Integral):
                raise TypeError(
                    f"{type(obj).__name__} must have an integer attribute {name!r} "
                    "to be used as a max oracle")
        for name in ("solve", "evaluate"):
            if not callable(getattr(obj, name, None)):
                raise TypeError(f"{type(obj).__name__} has no method {name!r}")
        self.obj = obj
        self.n_blocks = obj.n_blocks
        self.n_features = obj.n_features
        self.max_labels = obj.max_labels
        self.max_psi_nnz = getattr(obj, "max_psi_nnz", obj.n_features)
        if self.n_blocks < 1 or self.n_features < 1 or self.max_labels < 0:
            raise ValueError("an oracle needs n_blocks >= 1, n_features >= 1 and max_labels >= 0")
        self.dense_psi = False
        self.needs_gil = True

    def __reduce__(self):
        return (PythonOracle, (self.obj,))

    @property
    def exact(self) -> bool:
        """The wrapped object's ``exact`` attribute (True if it has none)."""
        return bool(getattr(self.obj, "exact", True))

    def block_support(self, i):
        support = getattr(self.obj, "block_support", None)
        return None if support is None else support(i)

    def __getattr__(self, name):
        # the wrapped object's other attributes (e.g. ``weight_bounds``), but not
        # ``take_blocks``: a distributed executor's shard must be a MaxOracle
        if self.obj is None or name.startswith("__") or name == "take_blocks":
            raise AttributeError(name)
        return getattr(self.obj, name)

    cdef object _view_of(self, const float64_t* w):
        # A read-only copy of w that owns its memory: the object may keep it
        # (log it, memoise on it) and it stays intact and equal to that
        # iterate after the solver moves on or frees its buffer.  (The
        # ``_w_view`` and ``_w_ptr`` fields of the .pxd are no longer used.)
        arr = np.array(<float64_t[:self.n_features]> <float64_t*> w)
        arr.flags.writeable = False
        return arr

    cdef int solve(self, intp_t i, const float64_t* w, Corner* out) except -1 nogil:
        with gil:
            w_arr = self._view_of(w)
            answer = self.obj.solve(i, w_arr)
            if not isinstance(answer, tuple) or len(answer) != 3:
                raise ValueError(f"{type(self.obj).__name__}.solve must return "
                                 f"(labels, psi, loss), got {type(answer).__name__}")
            self._store(answer[0], answer[1], answer[2], w_arr, out, "solve")
        return 0

    cdef intp_t solve_many(self, intp_t i, const float64_t* w, intp_t k,
                           Corner* outs) except -1 nogil:
        cdef intp_t j
        with gil:
            method = getattr(self.obj, "solve_many", None)
            if method is None:
                self.solve(i, w, &outs[0])
                return 1
            w_arr = self._view_of(w)
            answers = list(method(i, w_arr, k))
            if not 1 <= len(answers) <= k:
                raise ValueError(f"{type(self.obj).__name__}.solve_many returned "
                                 f"{len(answers)} answers for k={k}")
            for j in range(len(answers)):
                answer = answers[j]
                if not isinstance(answer, tuple) or len(answer) != 3:
                    raise ValueError(f"{type(self.obj).__name__}.solve_many must return "
                                     "(labels, psi, loss) tuples")
                self._store(answer[0], answer[1], answer[2], w_arr, &outs[j], "solve_many")
            return len(answers)

    cdef int evaluate(self, intp_t i, const int32_t* labels, intp_t n_labels,
                      const float64_t* w, Corner* out) except -1 nogil:
        with gil:
            w_arr = self._view_of(w)
            lab = np.array(<const int32_t[:n_labels]> labels) if n_labels else np.zeros(0, np.int32)
            answer = self.obj.evaluate(i, lab, w_arr)
            if not isinstance(answer, tuple) or len(answer) != 2:
                raise ValueError(f"{type(self.obj).__name__}.evaluate must return "
                                 f"(psi, loss), got {type(answer).__name__}")
            self._store(lab, answer[0], answer[1], w_arr, out, "evaluate")
        return 0

    cdef int _store(self, object labels, object psi, object loss, object w,
                    Corner* out, str where) except -1:
        who = f"{type(self.obj).__name__}.{where}"
        cdef int32_t[::1] lab = _as_labels(labels, self.max_labels)
        idx, val = _sparse_psi(psi, self.n_features, who)
        if idx.shape[0] > self.max_psi_nnz:
            raise ValueError(f"{who} returned psi with {idx.shape[0]} nonzeros, "
                             f"more than max_psi_nnz={self.max_psi_nnz}")
        loss = float(loss)
        if not (loss >= 0.0 and np.isfinite(loss)):
            raise ValueError(f"{who} returned loss {loss}; losses must be finite and >= 0")
        cdef intp_t k
        cdef int32_t[::1] iv = idx
        cdef float64_t[::1] vv = val
        for k in range(lab.shape[0]):
            out.labels[k] = lab[k]
        out.n_labels = lab.shape[0]
        for k in range(iv.shape[0]):
            out.psi_idx[k] = iv[k]
            out.psi_val[k] = vv[k]
        out.psi_nnz = iv.shape[0]
        out.loss = loss
        out.score = loss - float(np.dot(w[idx], val))
        return 0


def _sparse_psi(psi, intp_t n_features, str who):
    """``psi`` in any accepted form as (int32 indices, float64 values)."""
    if isinstance(psi, tuple):
        if len(psi) != 2:
            raise ValueError(f"{who}: a sparse psi must be an (indices, values) pair")
        idx = np.asarray(psi[0])
        val = np.asarray(psi[1], dtype=np.float64)
        if idx.ndim != 1 or val.shape != idx.shape:
            raise ValueError(f"{who}: psi indices and values must be 1-D of equal length, "
                             f"got shapes {idx.shape} and {val.shape}")
        if idx.size and (not np.issubdtype(idx.dtype, np.integer)
                         or idx.min() < 0 or idx.max() >= n_features):
            raise ValueError(f"{who}: psi indices must be integers in [0, {n_features})")
    elif sp.issparse(psi):
        if psi.shape not in ((1, n_features), (n_features, 1)):
            raise ValueError(f"{who}: sparse psi has shape {psi.shape}, expected "
                             f"(1, {n_features}) or ({n_features}, 1)")
        coo = sp.coo_array(psi)
        idx = coo.col if psi.shape[0] == 1 else coo.row
        val = np.asarray(coo.data, dtype=np.float64)
    else:
        dense = np.asarray(psi, dtype=np.float64)
        if dense.shape != (n_features,):
            raise ValueError(f"{who}: psi has shape {dense.shape}, expected ({n_features},)")
        idx = np.flatnonzero(dense)
        val = dense[idx]
    if not np.all(np.isfinite(val)):
        raise ValueError(f"{who}: psi has non-finite values")
    return np.ascontiguousarray(idx, dtype=np.int32), np.ascontiguousarray(val)
