"""Oracle combinators: cdef wrappers that delegate to inner ``MaxOracle`` objects in C.

``CountingOracle`` and ``ApproximateOracle`` wrap one oracle: they derive from
``ssvm_core``'s ``DelegatingOracle``, which forwards the whole protocol, and
override only the calls they change.  ``ProductOracle`` and ``DispatchOracle``
combine several oracles (``_Composite``) and write every method of the
protocol in terms of their parts.
Each wrapper's ``needs_gil`` is the OR of its children's, so a combination
of Cython oracles stays GIL-free and runs in parallel gap passes.  Per-block
state (counters, the approximate oracle's memory) is stored per block, so
concurrent calls on different blocks do not race.  Every wrapper passes on
``solve_many`` (the multi-sample steps): the inner oracles' extra answers reach
the solver, combined as each wrapper documents.
"""

cimport cython
from libc.stdlib cimport free
from libc.string cimport memcpy
from cpython.ref cimport PyObject
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec

import numpy as np

from ssvm_core.oracles import as_oracle

from ssvm_core._typedefs cimport float64_t, int32_t, int64_t, intp_t
from ssvm_core._oracle cimport Corner, DelegatingOracle, MaxOracle
from ssvm_core._vector cimport checked_malloc


cdef inline float64_t _now() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec + 1e-9 * ts.tv_nsec


cdef int _alloc_corner(MaxOracle oracle, Corner* c) except -1 nogil:
    """Buffers of a scratch corner sized for ``oracle`` (free with ``_free_corner``)."""
    cdef intp_t n_val = oracle.n_features if oracle.dense_psi else oracle.max_psi_nnz
    c.labels = NULL
    c.psi_val = NULL
    c.psi_idx = NULL
    c.coord_idx = NULL               # no compact answers from scratch corners
    c.coord_val = NULL
    c.coord_nnz = 0
    c.theta = NULL
    c.coords_only = False
    cdef bint done = False
    c.n_labels = 0
    c.psi_nnz = 0
    try:
        c.labels = <int32_t*> checked_malloc((oracle.max_labels + 1) * sizeof(int32_t),
                                             "scratch corner")
        c.psi_val = <float64_t*> checked_malloc((n_val + 1) * sizeof(float64_t),
                                                "scratch corner")
        if not oracle.dense_psi:
            c.psi_idx = <int32_t*> checked_malloc((oracle.max_psi_nnz + 1) * sizeof(int32_t),
                                                  "scratch corner")
        done = True
    finally:
        if not done:
            _free_corner(c)
    return 0


cdef void _free_corner(Corner* c) noexcept nogil:
    free(c.labels)
    free(c.psi_val)
    free(c.psi_idx)
    c.labels = NULL
    c.psi_val = NULL
    c.psi_idx = NULL


cdef void _copy_corner(const Corner* src, Corner* dst, intp_t n_features) noexcept nogil:
    """dst = src (labels, psi, loss, score and, when both ask for them, the compact
    coordinates) into dst's own buffers, of the same layout: dense (psi_idx NULL,
    n_features values) or sparse (psi_nnz entries)."""
    cdef intp_t n_val = n_features if src.psi_idx == NULL else src.psi_nnz
    if src.coord_idx != NULL and src.coords_only:
        n_val = 0                        # psi was not written (nor is it read)
    if src.n_labels > 0:
        memcpy(dst.labels, src.labels, src.n_labels * sizeof(int32_t))
    if n_val > 0:
        memcpy(dst.psi_val, src.psi_val, n_val * sizeof(float64_t))
        if src.psi_idx != NULL:
            memcpy(dst.psi_idx, src.psi_idx, n_val * sizeof(int32_t))
    if src.coord_idx != NULL and dst.coord_idx != NULL:   # compact answers: q_i(y) too
        if src.coord_nnz > 0:
            memcpy(dst.coord_idx, src.coord_idx, src.coord_nnz * sizeof(int32_t))
            memcpy(dst.coord_val, src.coord_val, src.coord_nnz * sizeof(float64_t))
        dst.coord_nnz = src.coord_nnz
    dst.n_labels = src.n_labels
    dst.psi_nnz = src.psi_nnz
    dst.loss = src.loss
    dst.score = src.score


cdef bint _same_labels(const Corner* a, const Corner* b) noexcept nogil:
    cdef intp_t k
    if a.n_labels != b.n_labels:
        return False
    for k in range(a.n_labels):
        if a.labels[k] != b.labels[k]:
            return False
    return True


cdef void _densify_indices(Corner* c, intp_t start, intp_t d, intp_t offset) noexcept nogil:
    """Index entries start .. start + d of a sparse corner as offset + 0 .. d - 1."""
    cdef intp_t f
    for f in range(d):
        c.psi_idx[start + f] = <int32_t> (offset + f)


@cython.final
cdef class CountingOracle(DelegatingOracle):
    """Counts (and optionally times) the ``solve`` and ``evaluate`` calls of an oracle.

    Parameters
    ----------
    oracle : MaxOracle or Python oracle
        The oracle to observe; answers pass through unchanged.
    timing : bool
        Also accumulate wall-clock seconds per call (monotonic clock).

    Notes
    -----
    ``solve_many`` passes the inner oracle's answers through and counts (and
    times) as one ``solve`` call.

    Attributes
    ----------
    solve_calls, evaluate_calls : ndarray (n_blocks,) int64
        Calls per block (counted before the call, so failed calls count).
    solve_seconds, evaluate_seconds : ndarray (n_blocks,) float64
        Seconds spent per block (zeros unless ``timing``).
    """
    cdef readonly bint timing
    cdef int64_t[::1] _solve_calls, _evaluate_calls
    cdef float64_t[::1] _solve_seconds, _evaluate_seconds

    def __init__(self, oracle, bint timing=False):
        super().__init__(oracle)
        self.timing = timing
        self.reset()

    def __reduce__(self):
        return (CountingOracle, (self.oracle, self.timing))

    def reset(self):
        """Set every counter and timer to zero."""
        self._solve_calls = np.zeros(self.n_blocks, dtype=np.int64)
        self._evaluate_calls = np.zeros(self.n_blocks, dtype=np.int64)
        self._solve_seconds = np.zeros(self.n_blocks)
        self._evaluate_seconds = np.zeros(self.n_blocks)

    @property
    def solve_calls(self):
        return np.asarray(self._solve_calls).copy()

    @property
    def evaluate_calls(self):
        return np.asarray(self._evaluate_calls).copy()

    @property
    def solve_seconds(self):
        return np.asarray(self._solve_seconds).copy()

    @property
    def evaluate_seconds(self):
        return np.asarray(self._evaluate_seconds).copy()

    @property
    def n_solve(self) -> int:
        """Total ``solve`` calls."""
        return int(np.sum(self._solve_calls))

    @property
    def n_evaluate(self) -> int:
        """Total ``evaluate`` calls."""
        return int(np.sum(self._evaluate_calls))

    cdef int solve(self, intp_t i, const float64_t* w, Corner* out) except -1 nogil:
        cdef float64_t t0
        self._solve_calls[i] += 1
        if not self.timing:
            return self.oracle.solve(i, w, out)
        t0 = _now()
        try:
            self.oracle.solve(i, w, out)
        finally:
            self._solve_seconds[i] += _now() - t0
        return 0

    cdef intp_t solve_many(self, intp_t i, const float64_t* w, intp_t k,
                           Corner* outs) except -1 nogil:
        cdef float64_t t0
        self._solve_calls[i] += 1
        if not self.timing:
            return self.oracle.solve_many(i, w, k, outs)
        t0 = _now()
        try:
            return self.oracle.solve_many(i, w, k, outs)
        finally:
            self._solve_seconds[i] += _now() - t0

    cdef int evaluate(self, intp_t i, const int32_t* labels, intp_t n_labels,
                      const float64_t* w, Corner* out) except -1 nogil:
        cdef float64_t t0
        self._evaluate_calls[i] += 1
        if not self.timing:
            return self.oracle.evaluate(i, labels, n_labels, w, out)
        t0 = _now()
        try:
            self.oracle.evaluate(i, labels, n_labels, w, out)
        finally:
            self._evaluate_seconds[i] += _now() - t0
        return 0


@cython.final
cdef class ApproximateOracle(DelegatingOracle):
    """A multiplicative approximate max oracle simulated from an exact one.

    Guarantee: for every call ``solve(i, w)`` the returned labelling y has
    ``H_i(y; w) >= nu * max_y' H_i(y'; w)``, where the max is the inner
    oracle's own answer (so exact when the inner oracle is exact; the max is
    >= 0 because the ground truth scores 0).  The returned psi, loss and score
    are those of y, computed by the inner ``evaluate``.

    How: the wrapper keeps, per block, the last ``memory`` exact answers of
    earlier calls.  Each call solves exactly, re-evaluates the remembered
    labellings at the current w, and returns the one with the *smallest*
    score among those meeting the guarantee (the exact answer if none does,
    or if it is the smallest); then the exact answer joins the memory.  The
    result is deterministic: stale answers, as a warm-started heuristic
    would give, degraded as far as the guarantee allows.  ``nu = 1`` is exact.

    This bounds the loss-augmented score itself.  It is not the block-gap
    guarantee of Lacoste-Julien et al. (2013), App. C (which needs the dual variables), but solvers
    accept it: an answer never falls below the ground truth's score 0.

    ``solve_many`` returns ``solve``'s answer first, then those of the inner
    oracle's other answers that score no more than it (distinct labellings).

    Parameters
    ----------
    oracle : MaxOracle or Python oracle
        The exact oracle.
    nu : float in (0, 1]
        Multiplicative accuracy.
    memory : int >= 1
        Remembered exact answers per block.

    Attributes
    ----------
    approximate_answers : ndarray (n_blocks,) int64
        Calls per block that returned a remembered labelling scoring below
        the exact maximum.
    """
    cdef readonly float64_t nu
    cdef readonly intp_t memory
    cdef int32_t[:, ::1] _stored          # (n_blocks * memory, max_labels)
    cdef intp_t[::1] _stored_len           # -1: empty slot
    cdef intp_t[::1] _next                 # ring position per block
    cdef int64_t[::1] _approximate

    def __init__(self, oracle, float64_t nu, intp_t memory=1):
        super().__init__(oracle)
        if not 0.0 < nu <= 1.0:
            raise ValueError(f"nu must be in (0, 1], got {nu}")
        if memory < 1:
            raise ValueError(f"memory must be >= 1, got {memory}")
        self.nu = nu
        self.memory = memory
        self._stored = np.zeros((self.n_blocks * memory, max(self.max_labels, 1)),
                                dtype=np.int32)
        self._stored_len = np.full(self.n_blocks * memory, -1, dtype=np.intp)
        self._next = np.zeros(self.n_blocks, dtype=np.intp)
        self._approximate = np.zeros(self.n_blocks, dtype=np.int64)

    def __reduce__(self):
        return (ApproximateOracle, (self.oracle, self.nu, self.memory))

    @property
    def approximate_answers(self):
        return np.asarray(self._approximate).copy()

    @property
    def exact(self) -> bool:
        """Exact only with ``nu = 1`` around an exact oracle."""
        return self.nu == 1.0 and self.oracle.exact

    cdef int solve(self, intp_t i, const float64_t* w, Corner* out) except -1 nogil:
        self.oracle.solve(i, w, out)
        return self._degrade(i, w, out)

    cdef intp_t solve_many(self, intp_t i, const float64_t* w, intp_t k,
                           Corner* outs) except -1 nogil:
        """``solve``'s answer first, then the inner oracle's other answers that score
        no more than it and differ from it (so the first stays the best of the list)."""
        cdef intp_t got = self.oracle.solve_many(i, w, k, outs), j, kept = 1
        self._degrade(i, w, &outs[0])
        for j in range(1, got):
            if outs[j].score <= outs[0].score and not _same_labels(&outs[j], &outs[0]):
                if kept != j:
                    _copy_corner(&outs[j], &outs[kept], self.n_features)
                kept += 1
        return kept

    cdef int _degrade(self, intp_t i, const float64_t* w, Corner* out) except -1 nogil:
        """Given the inner oracle's exact answer in out, apply the memory rule above."""
        cdef Corner scratch
        cdef intp_t slot, best = -1, s, n_exact
        cdef float64_t best_score, threshold
        best_score = out.score
        threshold = self.nu * out.score
        _alloc_corner(self.oracle, &scratch)
        try:
            for s in range(self.memory):
                slot = i * self.memory + s
                if self._stored_len[slot] < 0:
                    continue
                self.oracle.evaluate(i, &self._stored[slot, 0], self._stored_len[slot], w,
                                     &scratch)
                if threshold <= scratch.score < best_score:
                    best_score = scratch.score
                    best = slot
            n_exact = out.n_labels
            if n_exact:
                memcpy(scratch.labels, out.labels, n_exact * sizeof(int32_t))
            if best >= 0:
                self.oracle.evaluate(i, &self._stored[best, 0], self._stored_len[best], w,
                                     out)
                self._approximate[i] += 1
            # The exact answer joins the memory (overwriting the oldest entry).
            slot = i * self.memory + self._next[i]
            if n_exact:
                memcpy(&self._stored[slot, 0], scratch.labels, n_exact * sizeof(int32_t))
            self._stored_len[slot] = n_exact
            self._next[i] = (self._next[i] + 1) % self.memory
        finally:
            _free_corner(&scratch)
        return 0


cdef intp_t _best_extensions(intp_t* combos, float64_t* sums, intp_t n_kept, intp_t c,
                             intp_t n_parts, const Corner* part, intp_t n_part,
                             intp_t k) noexcept nogil:
    """Extend the kept combinations of parts 0 .. c-1 by an answer of part c; keep the k
    with the largest summed scores (ties: the earlier first) in the first halves of
    ``combos`` (2, k, n_parts) and ``sums`` (2, k); returns how many are kept."""
    cdef intp_t* nxt = combos + k * n_parts
    cdef float64_t* nxt_sum = sums + k
    cdef intp_t a, b, j, q, n_next = 0
    cdef float64_t value
    for a in range(n_kept):
        for b in range(n_part):
            value = sums[a] + part[b].score
            if n_next == k and not value > nxt_sum[n_next - 1]:
                continue
            j = n_next if n_next < k else k - 1     # insertion, dropping the last if full
            while j > 0 and value > nxt_sum[j - 1]:
                nxt_sum[j] = nxt_sum[j - 1]
                for q in range(c):
                    nxt[j * n_parts + q] = nxt[(j - 1) * n_parts + q]
                nxt[j * n_parts + c] = nxt[(j - 1) * n_parts + c]
                j -= 1
            nxt_sum[j] = value
            for q in range(c):
                nxt[j * n_parts + q] = combos[a * n_parts + q]
            nxt[j * n_parts + c] = b
            if n_next < k:
                n_next += 1
    for j in range(n_next):
        sums[j] = nxt_sum[j]
        for q in range(c + 1):
            combos[j * n_parts + q] = nxt[j * n_parts + q]
    return n_next


cdef tuple _oracles_of(oracles):
    if isinstance(oracles, MaxOracle) or not hasattr(oracles, "__len__") or len(oracles) == 0:
        raise ValueError("give a non-empty sequence of oracles")
    return tuple(as_oracle(o) for o in oracles)


cdef class _Composite(MaxOracle):
    """Holds several oracles; ``_parts`` are borrowed pointers kept alive by ``oracles``
    so that the parts can be called without the GIL (no reference counting)."""
    cdef readonly tuple oracles
    cdef PyObject** _parts
    cdef intp_t k

    cdef _hold(self, oracles):
        self.oracles = _oracles_of(oracles)
        self.k = len(self.oracles)
        self._parts = <PyObject**> checked_malloc(self.k * sizeof(PyObject*), "oracle parts")
        for c in range(self.k):
            self._parts[c] = <PyObject*> self.oracles[c]

    def __dealloc__(self):
        free(self._parts)

    @property
    def exact(self) -> bool:
        """Exact when every part is."""
        return all(o.exact for o in self.oracles)


@cython.final
cdef class ProductOracle(_Composite):
    """Product of independent structures: one block holds one block of every part.

    For parts o_1 .. o_k with the same ``n_blocks``, block i's labelling is
    ``[n_1, .., n_k, y_1, .., y_k]`` (the k part lengths, then the part
    labellings concatenated), psi is the concatenation of the parts' psi
    (part c's features shifted by d_1 + .. + d_{c-1}), the loss is the sum of
    the losses and the score the sum of the scores.  Because the parts share
    no variables, the max of the sum is the sum of the maxes: exact when the
    parts are.

    ``solve_many(i, w, k)`` asks every part for k answers and returns the k
    combinations with the largest summed scores, best first (the parts'
    argmaxes first): the exact k best labellings of the product when every
    part returns its exact k best.

    When every part offers compact blocks, so does the product: block i's
    basis is block-diagonal, the coordinates of part 1's block, then part
    2's, and so on (the k-best combinations of ``solve_many`` are then not
    offered: it returns ``solve``'s answer only).

    Parameters
    ----------
    oracles : sequence of MaxOracle or Python oracles
        The parts, all with the same ``n_blocks``.
    """
    cdef intp_t[::1] _feat_off

    def __init__(self, oracles):
        self._hold(oracles)
        n_blocks = {o.n_blocks for o in self.oracles}
        if len(n_blocks) != 1:
            raise ValueError(f"the parts of a product must have equal n_blocks, got "
                             f"{[o.n_blocks for o in self.oracles]}")
        d = [o.n_features for o in self.oracles]
        self._feat_off = np.concatenate([[0], np.cumsum(d)]).astype(np.intp)
        self.n_blocks = n_blocks.pop()
        self.n_features = int(sum(d))
        self.max_labels = self.k + sum(o.max_labels for o in self.oracles)
        self.dense_psi = all(o.dense_psi for o in self.oracles)
        self.max_psi_nnz = int(sum(o.n_features if o.dense_psi else o.max_psi_nnz
                                   for o in self.oracles))
        if self.dense_psi:
            self.max_psi_nnz = self.n_features
        self.needs_gil = any(o.needs_gil for o in self.oracles)
        if all(o.max_coords > 0 for o in self.oracles):     # compact when every part is
            self.max_coords = sum(o.max_coords for o in self.oracles)
            self.max_coord_nnz = sum(o.max_coord_nnz for o in self.oracles)
            self.max_expand = sum(o.max_expand for o in self.oracles)

    def __reduce__(self):
        return (ProductOracle, (self.oracles,))

    cdef void prefetch(self, intp_t i) noexcept nogil:
        cdef intp_t c
        for c in range(self.k):
            (<MaxOracle> self._parts[c]).prefetch(i)

    cdef intp_t block_coords(self, intp_t i) noexcept nogil:
        cdef intp_t c, total = 0
        if self.max_coords <= 0:
            return 0
        for c in range(self.k):
            total += (<MaxOracle> self._parts[c]).block_coords(i)
        return total

    cdef int coord_scores(self, intp_t i, const float64_t* w,
                          float64_t* theta) except -1 nogil:
        cdef intp_t c, off = 0
        for c in range(self.k):
            (<MaxOracle> self._parts[c]).coord_scores(i, w + self._feat_off[c], theta + off)
            off += (<MaxOracle> self._parts[c]).block_coords(i)
        return 0

    cdef intp_t _coord_end(self, intp_t i, intp_t c, const int32_t* idx, intp_t nnz,
                           intp_t start, intp_t off) noexcept nogil:
        """The end of part c's entries of sparse coordinates (idx increasing), those
        from ``start`` below its last coordinate; part c's first one is ``off``."""
        cdef intp_t end = start
        cdef intp_t stop = off + (<MaxOracle> self._parts[c]).block_coords(i)
        while end < nnz and idx[end] < stop:
            end += 1
        return end

    cdef int32_t* _local(self, const int32_t* idx, intp_t start, intp_t end,
                         intp_t off) except NULL nogil:
        """idx[start:end] - off, in new memory (free it)."""
        cdef intp_t j
        cdef int32_t* local = <int32_t*> checked_malloc((end - start) * sizeof(int32_t),
                                                        "product coordinates")
        for j in range(start, end):
            local[j - start] = <int32_t> (idx[j] - off)
        return local

    cdef float64_t coord_sqnorm(self, intp_t i, const int32_t* idx, const float64_t* val,
                                intp_t nnz) except? -1 nogil:
        # the parts' features are disjoint, so the norms add up
        cdef intp_t c, start = 0, end, off = 0
        cdef int32_t* local = NULL
        cdef float64_t total = 0.0
        for c in range(self.k):
            end = self._coord_end(i, c, idx, nnz, start, off)
            if end > start:
                local = self._local(idx, start, end, off)
                try:
                    total += (<MaxOracle> self._parts[c]).coord_sqnorm(
                        i, local, val + start, end - start)
                finally:
                    free(local)
            off += (<MaxOracle> self._parts[c]).block_coords(i)
            start = end
        return total

    cdef intp_t coord_expand(self, intp_t i, const int32_t* idx, const float64_t* val,
                             intp_t nnz, int32_t* out_idx, float64_t* out_val) except -1 nogil:
        cdef intp_t c, start = 0, end, off = 0, written = 0, got, f
        cdef int32_t* local = NULL
        for c in range(self.k):
            end = self._coord_end(i, c, idx, nnz, start, off)
            if end > start:
                local = self._local(idx, start, end, off)
                try:
                    got = (<MaxOracle> self._parts[c]).coord_expand(
                        i, local, val + start, end - start, out_idx + written,
                        out_val + written)
                finally:
                    free(local)
                for f in range(written, written + got):
                    out_idx[f] += <int32_t> self._feat_off[c]
                written += got
            off += (<MaxOracle> self._parts[c]).block_coords(i)
            start = end
        return written

    cdef int coord_add(self, intp_t i, const int32_t* idx, const float64_t* val, intp_t nnz,
                       float64_t* out, float64_t* out2, float64_t c2) except -1 nogil:
        cdef intp_t c, start = 0, end, off = 0
        cdef int32_t* local = NULL
        for c in range(self.k):
            end = self._coord_end(i, c, idx, nnz, start, off)
            if end > start:
                local = self._local(idx, start, end, off)
                try:
                    (<MaxOracle> self._parts[c]).coord_add(
                        i, local, val + start, end - start, out + self._feat_off[c],
                        NULL if out2 == NULL else out2 + self._feat_off[c], c2)
                finally:
                    free(local)
            off += (<MaxOracle> self._parts[c]).block_coords(i)
            start = end
        return 0

    @property
    def feature_offsets(self):
        """Start of each part's features in w (and the total at the end)."""
        return np.asarray(self._feat_off).copy()

    def block_support(self, i):
        supports = [o.block_support(i) for o in self.oracles]
        if all(s is None for s in supports):
            return None
        off = np.asarray(self._feat_off)
        return np.concatenate([
            off[c] + (np.arange(o.n_features) if s is None else np.asarray(s))
            for c, (o, s) in enumerate(zip(self.oracles, supports))]).astype(np.int32)

    cdef int _each(self, intp_t i, const int32_t* labels, const float64_t* w,
                   Corner* out) except -1 nogil:
        """Solve (labels NULL) or evaluate every part into out, laid out as documented."""
        cdef intp_t c, lab_off = self.k, nnz = 0, d, f, cnnz = 0, coff = 0
        cdef Corner part
        cdef bint dense, coords = out.coord_idx != NULL
        part.coord_idx = NULL
        part.coord_val = NULL
        part.theta = NULL
        part.coords_only = False         # the psi offsets below need every part's psi_nnz
        out.loss = 0.0
        out.score = 0.0
        for c in range(self.k):
            if coords:                   # part c's coordinates follow those of parts < c
                part.coord_idx = out.coord_idx + cnnz
                part.coord_val = out.coord_val + cnnz
                part.theta = NULL if out.theta == NULL else out.theta + coff
            d = (<MaxOracle> self._parts[c]).n_features
            dense = (<MaxOracle> self._parts[c]).dense_psi
            part.labels = out.labels + lab_off
            if self.dense_psi:
                part.psi_idx = NULL
                part.psi_val = out.psi_val + self._feat_off[c]
            else:
                part.psi_idx = NULL if dense else out.psi_idx + nnz
                part.psi_val = out.psi_val + nnz
            if labels == NULL:
                (<MaxOracle> self._parts[c]).solve(i, w + self._feat_off[c], &part)
            else:
                (<MaxOracle> self._parts[c]).evaluate(i, labels + lab_off, labels[c],
                                                      w + self._feat_off[c], &part)
            out.labels[c] = <int32_t> part.n_labels
            lab_off += part.n_labels
            if coords:
                for f in range(cnnz, cnnz + part.coord_nnz):
                    out.coord_idx[f] += <int32_t> coff
                cnnz += part.coord_nnz
                coff += (<MaxOracle> self._parts[c]).block_coords(i)
            if not self.dense_psi:
                if dense:
                    _densify_indices(out, nnz, d, self._feat_off[c])
                    nnz += d
                else:
                    for f in range(nnz, nnz + part.psi_nnz):
                        out.psi_idx[f] += <int32_t> self._feat_off[c]
                    nnz += part.psi_nnz
            out.loss += part.loss
            out.score += part.score
        out.n_labels = lab_off
        out.psi_nnz = self.n_features if self.dense_psi else nnz
        out.coord_nnz = cnnz
        return 0

    cdef int solve(self, intp_t i, const float64_t* w, Corner* out) except -1 nogil:
        return self._each(i, NULL, w, out)

    cdef intp_t solve_many(self, intp_t i, const float64_t* w, intp_t k,
                           Corner* outs) except -1 nogil:
        cdef Corner* answers = NULL         # (parts, k): each part's answers
        cdef intp_t* got = NULL             # answers per part
        cdef intp_t* combos = NULL          # (2, k, parts): kept and next combinations
        cdef float64_t* sums = NULL         # (2, k): their summed scores
        cdef intp_t c, j, n_alloc = 0, n_kept = 1
        if k <= 1 or outs[0].coord_idx != NULL:      # compact answers: the argmax only
            self.solve(i, w, &outs[0])
            return 1
        try:
            answers = <Corner*> checked_malloc(self.k * k * sizeof(Corner), "product answers")
            got = <intp_t*> checked_malloc(self.k * sizeof(intp_t), "product answers")
            combos = <intp_t*> checked_malloc(2 * k * self.k * sizeof(intp_t),
                                              "product combinations")
            sums = <float64_t*> checked_malloc(2 * k * sizeof(float64_t),
                                               "product combinations")
            for c in range(self.k):
                for j in range(k):
                    _alloc_corner(<MaxOracle> self._parts[c], &answers[c * k + j])
                    n_alloc += 1
                got[c] = (<MaxOracle> self._parts[c]).solve_many(
                    i, w + self._feat_off[c], k, &answers[c * k])
            sums[0] = 0.0
            for c in range(self.k):
                n_kept = _best_extensions(combos, sums, n_kept, c, self.k, &answers[c * k],
                                          got[c], k)
            for j in range(n_kept):
                self._place_combination(&combos[j * self.k], answers, k, &outs[j])
        finally:
            for j in range(n_alloc):
                _free_corner(&answers[j])
            free(answers)
            free(got)
            free(combos)
            free(sums)
        return n_kept

    cdef void _place_combination(self, const intp_t* combo, const Corner* answers, intp_t k,
                                 Corner* out) noexcept nogil:
        """Write answer combo[c] of every part c (answers (parts, k)) as one product answer."""
        cdef intp_t c, f, lab_off = self.k, nnz = 0, d
        cdef const Corner* part
        out.loss = 0.0
        out.score = 0.0
        for c in range(self.k):
            part = &answers[c * k + combo[c]]
            d = (<MaxOracle> self._parts[c]).n_features
            if part.n_labels > 0:
                memcpy(out.labels + lab_off, part.labels, part.n_labels * sizeof(int32_t))
            out.labels[c] = <int32_t> part.n_labels
            lab_off += part.n_labels
            if self.dense_psi:
                memcpy(out.psi_val + self._feat_off[c], part.psi_val, d * sizeof(float64_t))
            elif part.psi_idx == NULL:
                memcpy(out.psi_val + nnz, part.psi_val, d * sizeof(float64_t))
                _densify_indices(out, nnz, d, self._feat_off[c])
                nnz += d
            else:
                for f in range(part.psi_nnz):
                    out.psi_idx[nnz + f] = <int32_t> (part.psi_idx[f] + self._feat_off[c])
                    out.psi_val[nnz + f] = part.psi_val[f]
                nnz += part.psi_nnz
            out.loss += part.loss
            out.score += part.score
        out.n_labels = lab_off
        out.psi_nnz = self.n_features if self.dense_psi else nnz

    cdef int evaluate(self, intp_t i, const int32_t* labels, intp_t n_labels,
                      const float64_t* w, Corner* out) except -1 nogil:
        cdef intp_t c, total = self.k
        if n_labels < self.k:
            with gil:
                raise ValueError(f"a product labelling starts with the {self.k} part "
                                 f"lengths; got only {n_labels} entries")
        for c in range(self.k):
            if not 0 <= labels[c] <= (<MaxOracle> self._parts[c]).max_labels:
                with gil:
                    raise ValueError(f"part {c} length {labels[c]} outside "
                                     f"[0, {(<MaxOracle> self._parts[c]).max_labels}]")
            total += labels[c]
        if total != n_labels:
            with gil:
                raise ValueError(f"product labelling of {n_labels} entries, but its part "
                                 f"lengths add up to {total - self.k} + {self.k}")
        return self._each(i, labels, w, out)


@cython.final
cdef class DispatchOracle(_Composite):
    """Blocks served by different oracles over one feature space.

    Block i is block ``blocks[i, 1]`` of oracle ``blocks[i, 0]``; labellings,
    psi, loss and score pass through unchanged (a dense part's psi is written
    with explicit indices when another part is sparse), the answers of
    ``solve_many`` too.
    When every part offers compact blocks, so does the dispatch (block i's
    basis is that of its part's block); otherwise it offers none.

    Parameters
    ----------
    oracles : sequence of MaxOracle or Python oracles
        The parts, all with the same ``n_features``.
    blocks : array (n, 2) of int, optional
        (part, block of that part) of every block; default: all blocks of
        the first part, then of the second, and so on.
    """
    cdef intp_t[:, ::1] _blocks

    def __init__(self, oracles, blocks=None):
        self._hold(oracles)
        d = {o.n_features for o in self.oracles}
        if len(d) != 1:
            raise ValueError(f"dispatched oracles must have equal n_features, got "
                             f"{[o.n_features for o in self.oracles]}")
        if blocks is None:
            blocks = [(c, b) for c, o in enumerate(self.oracles) for b in range(o.n_blocks)]
        blocks = np.asarray(blocks)
        if blocks.ndim != 2 or blocks.shape[1] != 2 or blocks.shape[0] == 0:
            raise ValueError(f"blocks must be a non-empty (n, 2) array, got shape {blocks.shape}")
        if not np.issubdtype(blocks.dtype, np.integer):
            raise ValueError(f"blocks must hold integers, got dtype {blocks.dtype}")
        for i, (c, b) in enumerate(blocks):
            if not 0 <= c < len(self.oracles) or not 0 <= b < self.oracles[c].n_blocks:
                raise ValueError(f"blocks[{i}] = ({c}, {b}) names no block of the oracles")
        self._blocks = np.ascontiguousarray(blocks, dtype=np.intp)
        self.n_blocks = blocks.shape[0]
        self.n_features = d.pop()
        self.max_labels = max(o.max_labels for o in self.oracles)
        self.dense_psi = all(o.dense_psi for o in self.oracles)
        self.max_psi_nnz = max(o.n_features if o.dense_psi else o.max_psi_nnz
                               for o in self.oracles)
        self.needs_gil = any(o.needs_gil for o in self.oracles)
        if all(o.max_coords > 0 for o in self.oracles):     # compact when every part is
            self.max_coords = max(o.max_coords for o in self.oracles)
            self.max_coord_nnz = max(o.max_coord_nnz for o in self.oracles)
            self.max_expand = max(o.max_expand for o in self.oracles)

    def __reduce__(self):
        return (DispatchOracle, (self.oracles, np.asarray(self._blocks)))

    @property
    def blocks(self):
        return np.asarray(self._blocks).copy()

    def block_support(self, i):
        c, b = self._blocks[i, 0], self._blocks[i, 1]
        return self.oracles[c].block_support(b)

    cdef inline bint _dense_part(self, intp_t i) noexcept nogil:
        return (<MaxOracle> self._parts[self._blocks[i, 0]]).dense_psi

    cdef void prefetch(self, intp_t i) noexcept nogil:
        (<MaxOracle> self._parts[self._blocks[i, 0]]).prefetch(self._blocks[i, 1])

    cdef intp_t block_coords(self, intp_t i) noexcept nogil:
        if self.max_coords <= 0:
            return 0
        return (<MaxOracle> self._parts[self._blocks[i, 0]]).block_coords(self._blocks[i, 1])

    cdef int coord_scores(self, intp_t i, const float64_t* w,
                          float64_t* theta) except -1 nogil:
        return (<MaxOracle> self._parts[self._blocks[i, 0]]).coord_scores(
            self._blocks[i, 1], w, theta)

    cdef float64_t coord_sqnorm(self, intp_t i, const int32_t* idx, const float64_t* val,
                                intp_t nnz) except? -1 nogil:
        return (<MaxOracle> self._parts[self._blocks[i, 0]]).coord_sqnorm(
            self._blocks[i, 1], idx, val, nnz)

    cdef intp_t coord_expand(self, intp_t i, const int32_t* idx, const float64_t* val,
                             intp_t nnz, int32_t* out_idx, float64_t* out_val) except -1 nogil:
        return (<MaxOracle> self._parts[self._blocks[i, 0]]).coord_expand(
            self._blocks[i, 1], idx, val, nnz, out_idx, out_val)

    cdef int coord_add(self, intp_t i, const int32_t* idx, const float64_t* val, intp_t nnz,
                       float64_t* out, float64_t* out2, float64_t c2) except -1 nogil:
        return (<MaxOracle> self._parts[self._blocks[i, 0]]).coord_add(
            self._blocks[i, 1], idx, val, nnz, out, out2, c2)

    cdef int _finish(self, intp_t i, Corner* part, Corner* out) noexcept nogil:
        if self._dense_part(i) and not self.dense_psi:
            _densify_indices(out, 0, self.n_features, 0)
        out.n_labels = part.n_labels
        out.psi_nnz = part.psi_nnz
        out.coord_nnz = part.coord_nnz
        out.loss = part.loss
        out.score = part.score
        return 0

    cdef int solve(self, intp_t i, const float64_t* w, Corner* out) except -1 nogil:
        cdef Corner part = out[0]
        if self._dense_part(i):
            part.psi_idx = NULL
        (<MaxOracle> self._parts[self._blocks[i, 0]]).solve(self._blocks[i, 1], w, &part)
        return self._finish(i, &part, out)

    cdef intp_t solve_many(self, intp_t i, const float64_t* w, intp_t k,
                           Corner* outs) except -1 nogil:
        cdef Corner* parts = NULL
        cdef intp_t j, got = 0
        try:
            parts = <Corner*> checked_malloc(k * sizeof(Corner), "dispatched answers")
            for j in range(k):
                parts[j] = outs[j]
                if self._dense_part(i):
                    parts[j].psi_idx = NULL
            got = (<MaxOracle> self._parts[self._blocks[i, 0]]).solve_many(
                self._blocks[i, 1], w, k, parts)
            for j in range(got):
                self._finish(i, &parts[j], &outs[j])
        finally:
            free(parts)
        return got

    cdef int evaluate(self, intp_t i, const int32_t* labels, intp_t n_labels,
                      const float64_t* w, Corner* out) except -1 nogil:
        cdef Corner part = out[0]
        cdef intp_t limit = (<MaxOracle> self._parts[self._blocks[i, 0]]).max_labels
        if n_labels > limit:
            with gil:
                raise ValueError(f"labelling of length {n_labels} for block {i}, longer than "
                                 f"its oracle's max_labels={limit}")
        if self._dense_part(i):
            part.psi_idx = NULL
        (<MaxOracle> self._parts[self._blocks[i, 0]]).evaluate(
            self._blocks[i, 1], labels, n_labels, w, &part)
        return self._finish(i, &part, out)
