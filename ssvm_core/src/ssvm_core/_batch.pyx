"""Oracle answers of a mini-batch round, and the oracle that replays them.

Mini-batch BCFW (Wang et al., 2016) makes the oracle calls of tau blocks at
one w, possibly elsewhere (threads, Dask workers), and then applies the tau
block steps one after the other.  ``solve_blocks`` makes the calls and packs
the answers (``Answers``: labellings, losses and sparse psi in CSR layout);
``AnswerOracle`` serves them to the existing one-pass kernels, with each
score H_i(y; w) = L_i(y) - <w, psi_i(y)> recomputed at the w the kernel
passes, i.e. the up-to-date iterate, so every step's line search is exact.
With blocks kept in coordinates (``CompactStore``) the replayed answer's block coordinates and
theta = A_i^T w are recomputed at that w too (``evaluate`` and
``coord_scores`` of the wrapped oracle).
"""

import numpy as np

from libc.stdint cimport uint8_t
from libc.stdlib cimport calloc, free, malloc, qsort, realloc
from libc.math cimport fabs, isnan
from libc.string cimport memcpy

from ssvm_core._typedefs cimport float64_t, int32_t, intp_t
from ssvm_core._oracle cimport Corner, CornerBuffer, DelegatingOracle, MaxOracle
from ssvm_core._atoms cimport ActiveSets, BlockAtoms, atom_dot
from ssvm_core._blocks cimport (Ledger, Primal, below_ground_truth, step_size,
                                use_ground_truth)
from ssvm_core._fw cimport bcfw_steps
from ssvm_core._linesearch cimport LINE_WORK
from ssvm_core._sampling cimport Sampler, init_sampler
from ssvm_core._storage cimport BlockStore, Direction, Formed
from ssvm_core._vector cimport dot_gather
from ssvm_core._view cimport StateView
from ssvm_core._pthread cimport (
    pthread_cond_broadcast,
    pthread_cond_destroy,
    pthread_cond_init,
    pthread_cond_signal,
    pthread_cond_t,
    pthread_cond_wait,
    pthread_mutex_destroy,
    pthread_mutex_init,
    pthread_mutex_lock,
    pthread_mutex_t,
    pthread_mutex_unlock,
)

from ssvm_core.step_counts import StepCounts


class Answers:
    """Oracle answers for some blocks at one w (one round of a mini-batch pass).

    Block ``blocks[b]`` has the answers ``ans_ptr[b]:ans_ptr[b + 1]`` (the
    argmax first, then any further ``solve_many`` samples).  Answer ``a`` is
    the labelling ``labels[lab_ptr[a]:lab_ptr[a + 1]]``, the loss ``loss[a]``
    and psi with indices ``psi_idx[psi_ptr[a]:psi_ptr[a + 1]]`` and values
    ``psi_val[...]`` (repeated indices add up).  ``ground[a] == 1`` marks an
    answer that scored below the ground truth at the w of the call (an
    inexact oracle): it stands for the ground-truth corner (psi = 0, L = 0);
    ``replaced`` counts them.  ``score`` is H_i(y; w) at the w of the call.
    """

    __slots__ = ("blocks", "ans_ptr", "lab_ptr", "labels", "psi_ptr", "psi_idx",
                 "psi_val", "loss", "score", "ground", "replaced")

    def __init__(self, blocks, ans_ptr, lab_ptr, labels, psi_ptr, psi_idx, psi_val, loss,
                 score, ground, replaced=0):
        self.blocks = np.ascontiguousarray(blocks, dtype=np.intp)
        self.ans_ptr = np.ascontiguousarray(ans_ptr, dtype=np.intp)
        self.lab_ptr = np.ascontiguousarray(lab_ptr, dtype=np.intp)
        self.labels = np.ascontiguousarray(labels, dtype=np.int32)
        self.psi_ptr = np.ascontiguousarray(psi_ptr, dtype=np.intp)
        self.psi_idx = np.ascontiguousarray(psi_idx, dtype=np.int32)
        self.psi_val = np.ascontiguousarray(psi_val, dtype=np.float64)
        self.loss = np.ascontiguousarray(loss, dtype=np.float64)
        self.score = np.ascontiguousarray(score, dtype=np.float64)
        self.ground = np.ascontiguousarray(ground, dtype=np.uint8)
        self.replaced = int(replaced)
        n_ans = self.loss.shape[0]
        if (self.ans_ptr.shape[0] != self.blocks.shape[0] + 1
                or self.ans_ptr[-1] != n_ans or self.lab_ptr.shape[0] != n_ans + 1
                or self.psi_ptr.shape[0] != n_ans + 1 or self.score.shape[0] != n_ans
                or self.ground.shape[0] != n_ans or self.lab_ptr[-1] != self.labels.shape[0]
                or self.psi_ptr[-1] != self.psi_idx.shape[0]
                or self.psi_val.shape[0] != self.psi_idx.shape[0]):
            raise ValueError("inconsistent Answers arrays")

    def __reduce__(self):
        return (Answers, (self.blocks, self.ans_ptr, self.lab_ptr, self.labels, self.psi_ptr,
                          self.psi_idx, self.psi_val, self.loss, self.score, self.ground,
                          self.replaced))

    @property
    def n_answers(self) -> int:
        return self.loss.shape[0]

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays (what a transfer of the answers costs)."""
        return sum(getattr(self, k).nbytes for k in self.__slots__[:-1])

    def answers_of(self, b):
        """The answers of ``blocks[b]`` as ``(labels, (psi_idx, psi_val), loss)`` tuples."""
        out = []
        for a in range(self.ans_ptr[b], self.ans_ptr[b + 1]):
            out.append((self.labels[self.lab_ptr[a]:self.lab_ptr[a + 1]],
                        (self.psi_idx[self.psi_ptr[a]:self.psi_ptr[a + 1]],
                         self.psi_val[self.psi_ptr[a]:self.psi_ptr[a + 1]]),
                        float(self.loss[a])))
        return out

    @staticmethod
    def concat(parts):
        """The answers of several disjoint sets of blocks, in the order given."""
        parts = list(parts)
        if len(parts) == 1:
            return parts[0]

        def offsets(ptrs):
            shift = np.cumsum([0] + [p[-1] for p in ptrs[:-1]])
            return np.concatenate([ptrs[0][:1]] + [p[1:] + s for p, s in zip(ptrs, shift)])
        return Answers(
            np.concatenate([p.blocks for p in parts]),
            offsets([p.ans_ptr for p in parts]), offsets([p.lab_ptr for p in parts]),
            np.concatenate([p.labels for p in parts]), offsets([p.psi_ptr for p in parts]),
            np.concatenate([p.psi_idx for p in parts]),
            np.concatenate([p.psi_val for p in parts]),
            np.concatenate([p.loss for p in parts]), np.concatenate([p.score for p in parts]),
            np.concatenate([p.ground for p in parts]), sum(p.replaced for p in parts))


cdef struct _Pack:
    # Growing C buffers behind one Answers (filled without the GIL).
    intp_t* ans_ptr               # n_blocks + 1 entries (capacity blk_cap + 1)
    intp_t* lab_ptr
    intp_t* psi_ptr
    int32_t* labels
    int32_t* psi_idx
    float64_t* psi_val
    float64_t* loss
    float64_t* score
    uint8_t* ground
    intp_t n_blocks, blk_cap, n_ans, ans_cap, lab_cap, psi_cap, replaced


cdef int _grow(void** ptr, intp_t n_items, size_t item_size) except -1 nogil:
    cdef void* new = realloc(ptr[0], (n_items if n_items > 0 else 1) * item_size)
    if new == NULL:
        with gil:
            raise MemoryError()
    ptr[0] = new
    return 0


cdef int _pack_open(_Pack* pk, MaxOracle oracle, intp_t n_blocks,
                    intp_t n_ans) except -1:
    """Buffers for ``n_blocks`` blocks and about ``n_ans`` answers (grown on demand)."""
    pk.n_blocks = pk.n_ans = pk.replaced = 0
    pk.blk_cap = n_blocks
    pk.ans_cap = n_ans + 1
    pk.lab_cap = max(1, pk.ans_cap * min(oracle.max_labels, 64))
    pk.psi_cap = max(1, pk.ans_cap * min(oracle.max_psi_nnz, 256))
    pk.ans_ptr = <intp_t*> malloc((pk.blk_cap + 1) * sizeof(intp_t))
    pk.lab_ptr = <intp_t*> malloc((pk.ans_cap + 1) * sizeof(intp_t))
    pk.psi_ptr = <intp_t*> malloc((pk.ans_cap + 1) * sizeof(intp_t))
    pk.loss = <float64_t*> malloc(pk.ans_cap * sizeof(float64_t))
    pk.score = <float64_t*> malloc(pk.ans_cap * sizeof(float64_t))
    pk.ground = <uint8_t*> malloc(pk.ans_cap * sizeof(uint8_t))
    pk.labels = <int32_t*> malloc(pk.lab_cap * sizeof(int32_t))
    pk.psi_idx = <int32_t*> malloc(pk.psi_cap * sizeof(int32_t))
    pk.psi_val = <float64_t*> malloc(pk.psi_cap * sizeof(float64_t))
    if (pk.ans_ptr == NULL or pk.lab_ptr == NULL or pk.psi_ptr == NULL
            or pk.loss == NULL or pk.score == NULL or pk.ground == NULL
            or pk.labels == NULL or pk.psi_idx == NULL or pk.psi_val == NULL):
        _pack_close(pk)
        raise MemoryError()
    _pack_reset(pk)
    return 0


cdef void _pack_reset(_Pack* pk) noexcept nogil:
    """Empty the pack (its buffers stay)."""
    pk.n_blocks = pk.n_ans = pk.replaced = 0
    pk.ans_ptr[0] = pk.lab_ptr[0] = pk.psi_ptr[0] = 0


cdef void _pack_close(_Pack* pk) noexcept nogil:
    free(pk.ans_ptr)
    free(pk.lab_ptr)
    free(pk.psi_ptr)
    free(pk.loss)
    free(pk.score)
    free(pk.ground)
    free(pk.labels)
    free(pk.psi_idx)
    free(pk.psi_val)
    pk.ans_ptr = pk.lab_ptr = pk.psi_ptr = NULL
    pk.loss = pk.score = pk.psi_val = NULL
    pk.labels = pk.psi_idx = NULL
    pk.ground = NULL


cdef int _reserve(_Pack* pk, intp_t n_ans, intp_t n_lab, intp_t n_psi) except -1 nogil:
    """Room for ``n_ans`` more answers with ``n_lab`` labels and ``n_psi`` psi entries."""
    cdef intp_t a = pk.n_ans + n_ans
    cdef intp_t n_l = pk.lab_ptr[pk.n_ans] + n_lab, n_p = pk.psi_ptr[pk.n_ans] + n_psi
    if a >= pk.ans_cap:
        pk.ans_cap = 2 * a + 2
        _grow(<void**> &pk.lab_ptr, pk.ans_cap + 1, sizeof(intp_t))
        _grow(<void**> &pk.psi_ptr, pk.ans_cap + 1, sizeof(intp_t))
        _grow(<void**> &pk.loss, pk.ans_cap, sizeof(float64_t))
        _grow(<void**> &pk.score, pk.ans_cap, sizeof(float64_t))
        _grow(<void**> &pk.ground, pk.ans_cap, sizeof(uint8_t))
    if n_l > pk.lab_cap:
        pk.lab_cap = 2 * n_l
        _grow(<void**> &pk.labels, pk.lab_cap, sizeof(int32_t))
    if n_p > pk.psi_cap:
        pk.psi_cap = 2 * n_p
        _grow(<void**> &pk.psi_idx, pk.psi_cap, sizeof(int32_t))
        _grow(<void**> &pk.psi_val, pk.psi_cap, sizeof(float64_t))
    return 0


cdef int _push(_Pack* pk, const Corner* c, bint ground) except -1 nogil:
    """Append one answer (the ground-truth corner when ``ground``)."""
    cdef intp_t a = pk.n_ans, k, nl = 0 if ground else c.n_labels, nnz = 0
    if not ground:
        nnz = c.psi_nnz
    _reserve(pk, 1, nl, nnz)
    cdef intp_t p0 = pk.psi_ptr[a], l0 = pk.lab_ptr[a]
    if nl > 0:
        memcpy(pk.labels + l0, c.labels, nl * sizeof(int32_t))
    if nnz > 0:
        if c.psi_idx == NULL:                # dense psi: keep its nonzeros
            nnz = 0
            for k in range(c.psi_nnz):
                if c.psi_val[k] != 0.0:
                    pk.psi_idx[p0 + nnz] = <int32_t> k
                    pk.psi_val[p0 + nnz] = c.psi_val[k]
                    nnz += 1
        else:
            memcpy(pk.psi_idx + p0, c.psi_idx, nnz * sizeof(int32_t))
            memcpy(pk.psi_val + p0, c.psi_val, nnz * sizeof(float64_t))
    pk.lab_ptr[a + 1] = l0 + nl
    pk.psi_ptr[a + 1] = p0 + nnz
    pk.loss[a] = 0.0 if ground else c.loss
    pk.score[a] = 0.0 if ground else c.score
    pk.ground[a] = ground
    pk.n_ans = a + 1
    return 0


cdef int _append(_Pack* dst, const _Pack* src) except -1 nogil:
    """Append the blocks and answers of ``src`` to ``dst`` (room for the blocks needed)."""
    cdef intp_t a0 = dst.n_ans, l0 = dst.lab_ptr[a0], p0 = dst.psi_ptr[a0], k
    cdef intp_t m = src.n_ans, nl = src.lab_ptr[m], nnz = src.psi_ptr[m]
    _reserve(dst, m, nl, nnz)
    for k in range(src.n_blocks):
        dst.ans_ptr[dst.n_blocks + k + 1] = a0 + src.ans_ptr[k + 1]
    for k in range(m):
        dst.lab_ptr[a0 + k + 1] = l0 + src.lab_ptr[k + 1]
        dst.psi_ptr[a0 + k + 1] = p0 + src.psi_ptr[k + 1]
    memcpy(dst.labels + l0, src.labels, nl * sizeof(int32_t))
    memcpy(dst.psi_idx + p0, src.psi_idx, nnz * sizeof(int32_t))
    memcpy(dst.psi_val + p0, src.psi_val, nnz * sizeof(float64_t))
    memcpy(dst.loss + a0, src.loss, m * sizeof(float64_t))
    memcpy(dst.score + a0, src.score, m * sizeof(float64_t))
    memcpy(dst.ground + a0, src.ground, m * sizeof(uint8_t))
    dst.n_blocks += src.n_blocks
    dst.n_ans += m
    dst.replaced += src.replaced
    return 0


cdef int _solve_into(MaxOracle oracle, const float64_t* w, const intp_t* blocks, intp_t nb,
                     intp_t k, Corner* outs, _Pack* pk) except -1 nogil:
    """Append the answers of ``blocks`` at ``w`` (``k`` per block) to ``pk``."""
    cdef intp_t b, j, got
    for b in range(nb):
        if k > 1:
            got = oracle.solve_many(blocks[b], w, k, outs)
        else:
            oracle.solve(blocks[b], w, outs)
            got = 1
        for j in range(got):
            if below_ground_truth(&outs[j]):
                if j > 0:                    # an extra sample worse than the truth: drop it
                    continue
                pk.replaced += 1
                _push(pk, &outs[j], True)
            else:
                _push(pk, &outs[j], False)
        pk.n_blocks += 1
        pk.ans_ptr[pk.n_blocks] = pk.n_ans
    return 0


def solve_blocks(MaxOracle oracle, const float64_t[::1] w, blocks, intp_t n_samples=1):
    """Oracle answers of ``blocks`` at ``w``: one ``solve`` (or ``solve_many``) per block.

    Parameters
    ----------
    oracle : MaxOracle
        The bound oracle; the calls run without the GIL unless it needs it.
    w : float64 array (n_features,)
        The weights of every call.
    blocks : int array
        Distinct block indices, in the order the answers are stored.
    n_samples : int, default 1
        Labellings asked per block (``MaxOracle.solve_many`` when > 1).

    Returns
    -------
    Answers
    """
    cdef const intp_t[::1] bv = _check_blocks(blocks, oracle.n_blocks)
    if w.shape[0] != oracle.n_features:
        raise ValueError(f"w has {w.shape[0]} entries, the oracle {oracle.n_features} features")
    if n_samples < 1:
        raise ValueError(f"n_samples must be >= 1, got {n_samples}")
    cdef intp_t nb = bv.shape[0], j
    buffers = [CornerBuffer(oracle) for _ in range(n_samples)]
    cdef Corner* outs = <Corner*> malloc(n_samples * sizeof(Corner))
    if outs == NULL:
        raise MemoryError()
    cdef _Pack pk
    try:
        _pack_open(&pk, oracle, nb, nb * n_samples)
    except MemoryError:
        free(outs)
        raise
    try:
        for j in range(n_samples):
            outs[j] = (<CornerBuffer> buffers[j]).corner
        if nb:
            if oracle.needs_gil:
                _solve_into(oracle, &w[0], &bv[0], nb, n_samples, outs, &pk)
            else:
                with nogil:
                    _solve_into(oracle, &w[0], &bv[0], nb, n_samples, outs, &pk)
        return _pack_answers(&pk, bv)
    finally:
        free(outs)
        _pack_close(&pk)


cdef object _pack_answers(const _Pack* pk, bv):
    """The ``Answers`` of a pack (copies), for the blocks ``bv``."""
    m, nl, nnz = pk.n_ans, pk.lab_ptr[pk.n_ans], pk.psi_ptr[pk.n_ans]
    return Answers(
        np.asarray(bv).copy(), _copy_intp(pk.ans_ptr, pk.n_blocks + 1),
        _copy_intp(pk.lab_ptr, m + 1), _copy_int32(pk.labels, nl),
        _copy_intp(pk.psi_ptr, m + 1), _copy_int32(pk.psi_idx, nnz),
        _copy_float64(pk.psi_val, nnz), _copy_float64(pk.loss, m),
        _copy_float64(pk.score, m),
        np.array(<uint8_t[:m]> pk.ground if m else np.zeros(0, np.uint8)),
        pk.replaced)


cdef object _copy_intp(intp_t* p, intp_t n):
    return np.array(<intp_t[:n]> p) if n else np.zeros(0, np.intp)


cdef object _copy_int32(int32_t* p, intp_t n):
    return np.array(<int32_t[:n]> p) if n else np.zeros(0, np.int32)


cdef object _copy_float64(float64_t* p, intp_t n):
    return np.array(<float64_t[:n]> p) if n else np.zeros(0)


def _check_blocks(blocks, intp_t n_blocks):
    arr = np.asarray(blocks)
    if arr.ndim != 1 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
        raise ValueError("blocks must be a 1-D array of block indices")
    if arr.size and (arr.min() < 0 or arr.max() >= n_blocks):
        raise IndexError(f"block indices must lie in [0, {n_blocks})")
    if np.unique(arr).shape[0] != arr.shape[0]:
        raise ValueError("blocks must be distinct")
    return np.ascontiguousarray(arr, dtype=np.intp)


cdef int _max_scores_into(MaxOracle oracle, const float64_t* w, const intp_t* blocks,
                          intp_t nb, float64_t* out, Corner* c) except -1 nogil:
    cdef intp_t b
    for b in range(nb):
        oracle.solve(blocks[b], w, c)
        out[b] = 0.0 if below_ground_truth(c) else c.score    # max_y H_i >= H_i(y_i) = 0
    return 0


def max_scores(MaxOracle oracle, const float64_t[::1] w, blocks):
    """max_y H_i(y; w) of each block in ``blocks`` (an answer below the truth counts 0)."""
    cdef const intp_t[::1] bv = _check_blocks(blocks, oracle.n_blocks)
    if w.shape[0] != oracle.n_features:
        raise ValueError(f"w has {w.shape[0]} entries, the oracle {oracle.n_features} features")
    out = np.zeros(bv.shape[0])
    cdef float64_t[::1] ov = out
    cdef CornerBuffer buf = CornerBuffer(oracle)
    if bv.shape[0] == 0:
        return out
    if oracle.needs_gil:
        _max_scores_into(oracle, &w[0], &bv[0], bv.shape[0], &ov[0], &buf.corner)
    else:
        with nogil:
            _max_scores_into(oracle, &w[0], &bv[0], bv.shape[0], &ov[0], &buf.corner)
    return out


cdef class AnswerOracle(DelegatingOracle):
    """A bound oracle whose ``solve`` replays one round's ``Answers``.

    ``solve(i, w)`` returns the stored answer of block i with its score
    recomputed at the given ``w`` (the kernels pass the up-to-date iterate);
    a stored answer that scores below the ground truth there is replaced by
    the ground-truth corner, a vertex at least as good.  ``solve_many``
    returns up to k stored answers; ``evaluate`` and blocks without stored
    answers go to the wrapped oracle (``fallbacks`` counts such ``solve``
    calls), as does the rest of the protocol (``DelegatingOracle``: the
    compact-block methods, ``prefetch``, ``exact``, ...).  Needs the GIL only
    if the wrapped oracle does.

    Parameters
    ----------
    oracle : MaxOracle
        The real oracle.
    answers : Answers
        Its answers for some blocks (at any w).
    """
    cdef readonly object answers
    cdef readonly intp_t fallbacks
    cdef object _arrays                     # the arrays behind the pointers below
    cdef intp_t _n_stored
    cdef const intp_t* _keys                # stored blocks, sorted,
    cdef const intp_t* _slots               # and their positions in the answers
    cdef const intp_t* _ans_ptr
    cdef const intp_t* _lab_ptr
    cdef const intp_t* _psi_ptr
    cdef const int32_t* _labels
    cdef const int32_t* _psi_idx
    cdef const float64_t* _psi_val
    cdef const float64_t* _loss
    cdef const uint8_t* _ground

    def __init__(self, MaxOracle oracle, answers):
        if not isinstance(answers, Answers):
            raise TypeError(f"answers must be Answers, got {type(answers).__name__}")
        blocks = np.asarray(answers.blocks)
        _check_blocks(blocks, oracle.n_blocks)
        if answers.psi_idx.size and (answers.psi_idx.min() < 0
                                     or answers.psi_idx.max() >= oracle.n_features):
            raise ValueError(f"answer psi indices outside [0, {oracle.n_features})")
        if np.any(np.diff(answers.lab_ptr) > oracle.max_labels):
            raise ValueError(f"an answer has more than max_labels={oracle.max_labels} labels")
        if (not oracle.dense_psi) and np.any(np.diff(answers.psi_ptr) > oracle.max_psi_nnz):
            raise ValueError(f"an answer has more than max_psi_nnz={oracle.max_psi_nnz} "
                             "psi entries")
        super().__init__(oracle)
        self.answers = answers
        # O(tau) memory: a round stores few blocks of many.
        order = np.argsort(blocks, kind="stable").astype(np.intp)

        def pad(a, dtype):
            return np.ascontiguousarray(a if a.shape[0] else np.zeros(1, dtype), dtype=dtype)

        cdef const intp_t[::1] keys = pad(blocks[order], np.intp)
        cdef const intp_t[::1] slots = pad(order, np.intp)
        cdef const intp_t[::1] ans_ptr = answers.ans_ptr
        cdef const intp_t[::1] lab_ptr = answers.lab_ptr
        cdef const intp_t[::1] psi_ptr = answers.psi_ptr
        cdef const int32_t[::1] labels = pad(answers.labels, np.int32)
        cdef const int32_t[::1] psi_idx = pad(answers.psi_idx, np.int32)
        cdef const float64_t[::1] psi_val = pad(answers.psi_val, np.float64)
        cdef const float64_t[::1] loss = pad(answers.loss, np.float64)
        cdef const uint8_t[::1] ground = pad(answers.ground, np.uint8)
        self._arrays = (keys, slots, ans_ptr, lab_ptr, psi_ptr, labels, psi_idx, psi_val,
                        loss, ground)
        self._n_stored = blocks.shape[0]
        self._keys, self._slots = &keys[0], &slots[0]
        self._ans_ptr, self._lab_ptr, self._psi_ptr = &ans_ptr[0], &lab_ptr[0], &psi_ptr[0]
        self._labels, self._psi_idx, self._psi_val = &labels[0], &psi_idx[0], &psi_val[0]
        self._loss, self._ground = &loss[0], &ground[0]
        self.fallbacks = 0

    cdef void _replay(self, const _Pack* pk, const intp_t* keys,
                      const intp_t* slots) noexcept nogil:
        """Serve the answers of ``pk`` (its blocks sorted in ``keys``, their positions
        in ``slots``) until the next call; the caller keeps the buffers alive."""
        self._n_stored = pk.n_blocks
        self._keys, self._slots = keys, slots
        self._ans_ptr, self._lab_ptr, self._psi_ptr = pk.ans_ptr, pk.lab_ptr, pk.psi_ptr
        self._labels, self._psi_idx, self._psi_val = pk.labels, pk.psi_idx, pk.psi_val
        self._loss, self._ground = pk.loss, pk.ground

    def __reduce__(self):
        return (AnswerOracle, (self.oracle, self.answers))

    cdef intp_t _slot(self, intp_t i) noexcept nogil:
        """Position of block i in ``answers.blocks`` (binary search), -1 if absent."""
        cdef intp_t lo = 0, hi = self._n_stored, mid
        while lo < hi:
            mid = (lo + hi) // 2
            if self._keys[mid] < i:
                lo = mid + 1
            else:
                hi = mid
        return self._slots[lo] if lo < self._n_stored and self._keys[lo] == i else -1

    cdef void _write(self, intp_t a, const float64_t* w, Corner* out) noexcept nogil:
        cdef intp_t k, p0 = self._psi_ptr[a], p1 = self._psi_ptr[a + 1]
        cdef intp_t l0 = self._lab_ptr[a], nl = self._lab_ptr[a + 1] - l0
        cdef float64_t dot = 0.0
        if self._ground[a]:
            use_ground_truth(out, self.n_features)
            return
        for k in range(nl):
            out.labels[k] = self._labels[l0 + k]
        out.n_labels = nl
        if out.psi_idx == NULL:
            for k in range(self.n_features):
                out.psi_val[k] = 0.0
            for k in range(p0, p1):
                out.psi_val[self._psi_idx[k]] += self._psi_val[k]
            out.psi_nnz = self.n_features
        else:
            for k in range(p0, p1):
                out.psi_idx[k - p0] = self._psi_idx[k]
                out.psi_val[k - p0] = self._psi_val[k]
            out.psi_nnz = p1 - p0
        for k in range(p0, p1):
            dot += self._psi_val[k] * w[self._psi_idx[k]]
        out.loss = self._loss[a]
        out.score = out.loss - dot
        if below_ground_truth(out):         # stale: the truth is a better corner at w
            use_ground_truth(out, self.n_features)

    cdef int _write_compact(self, intp_t i, intp_t a, const float64_t* w,
                            Corner* out) except -1 nogil:
        """``_write`` for a corner with compact buffers: the answer's labelling
        re-evaluated (psi and block coordinates) and theta at w."""
        cdef intp_t l0 = self._lab_ptr[a]
        if out.theta != NULL:
            self.oracle.coord_scores(i, w, out.theta)
        if self._ground[a]:
            use_ground_truth(out, self.n_features)
            return 0
        self.oracle.evaluate(i, &self._labels[l0], self._lab_ptr[a + 1] - l0, w, out)
        if below_ground_truth(out):
            use_ground_truth(out, self.n_features)
        return 0

    cdef int solve(self, intp_t i, const float64_t* w, Corner* out) except -1 nogil:
        cdef intp_t b = self._slot(i)
        if b < 0:
            self.fallbacks += 1
            return self.oracle.solve(i, w, out)
        if out.coord_idx != NULL:
            return self._write_compact(i, self._ans_ptr[b], w, out)
        self._write(self._ans_ptr[b], w, out)
        return 0

    cdef intp_t solve_many(self, intp_t i, const float64_t* w, intp_t k,
                           Corner* outs) except -1 nogil:
        cdef intp_t b = self._slot(i), j, got
        if b < 0:
            self.fallbacks += 1
            return self.oracle.solve_many(i, w, k, outs)
        got = min(k, self._ans_ptr[b + 1] - self._ans_ptr[b])
        for j in range(got):
            if outs[j].coord_idx != NULL:
                self._write_compact(i, self._ans_ptr[b] + j, w, &outs[j])
            else:
                self._write(self._ans_ptr[b] + j, w, &outs[j])
        return got


def predict_cache_hits(state, const intp_t[::1] blocks, float64_t cache_factor,
                       float64_t cache_nu, MaxOracle oracle=None):
    """Which of ``blocks`` the caching rule (Osokin et al. (2016), Alg. 5) serves from the cache at
    ``state.w``.

    The rule of ``_active.active_pass``, evaluated at the start of a round:
    the best stored labelling's FW gap is >= max(F g_i, nu g / n) (and > 0),
    with g_i the block's gap at its last oracle call.  Blocks before it in
    the round move w, so a prediction can be wrong either way; the kernel
    decides with the current w (a predicted hit that misses calls the oracle).
    A state whose blocks are kept in coordinates needs its ``oracle`` (the atoms' scores read
    A_i^T w).
    """
    cdef ActiveSets atoms = state.atoms
    if atoms is None:
        raise ValueError("cache predictions need a state with active sets")
    cdef const float64_t[::1] w = state.w
    cdef const float64_t[::1] oracle_gaps = state.block_oracle_gaps
    cdef intp_t n = state.n_blocks, b, k, i
    cdef float64_t gg = state.last_exact_gap
    cdef float64_t thr_global = cache_nu * (0.0 if isnan(gg) else gg) / n
    cdef float64_t H, h_best, sum_aH, g_fw
    cdef const BlockAtoms* blk
    cdef const float64_t* at
    cdef BlockStore store = state.blocks
    store.check_basis(oracle)
    cdef float64_t[::1] theta = (store.frame_scratch(oracle) if oracle is not None
                                 else np.zeros(1))
    hits = np.zeros(blocks.shape[0], dtype=bool)
    cdef uint8_t[::1] hv = hits.view(np.uint8)
    for b in range(blocks.shape[0]):
        i = blocks[b]
        if not 0 <= i < n:
            raise IndexError(f"block index {i} outside [0, {n})")
        if isnan(oracle_gaps[i]):
            continue
        blk = &atoms.blocks[i]
        at = store.atom_frame(oracle, i, &w[0], &theta[0])
        sum_aH = 0.0
        h_best = -1e308
        for k in range(blk.n):
            H = blk.loss[k] - atom_dot(blk, k, at)
            if blk.alpha[k] > 0.0:
                sum_aH += blk.alpha[k] * H
            if H > h_best:
                h_best = H
        g_fw = (h_best - sum_aH) / n
        hv[b] = g_fw > 0.0 and g_fw >= cache_factor * oracle_gaps[i] and g_fw >= thr_global
    return hits


# ---------------------------------------------------------------------------
# Whole passes of mini-batch FW rounds in C: the oracle calls of a round
# (split over a crew of threads), then its block steps on the replayed answers,
# without returning to Python between rounds.

cdef struct _Key:
    intp_t block, slot


cdef int _by_block(const void* a, const void* b) noexcept nogil:
    cdef intp_t x = (<const _Key*> a).block, y = (<const _Key*> b).block
    return (x > y) - (x < y)


# ---------------------------------------------------------------------------
# Parallel replay of a round's block steps (see ``replay_rounds``).  Step j of
# a round moves block i_j along -e_j, e_j = E_j = w_i - v_s in features, or
# e_j = G_j = w_i when its answer falls below the ground truth at the current
# point.  The blocks are distinct, so E_j, G_j and P_j = psi_i(y_j) are fixed at
# the round's w_0, and every scalar a step needs is an inner product among them
# and with w_0: <E_j, w_{j-1}> and the re-scored answer's <P_j, w_{j-1}> from the
# rows <E_j, e_k>, <P_j, e_k> (k < j); G_j only when step j takes the truth.

cdef class _Replay:
    """Directions, Gram rows, step sizes and moves of one round, for ``n_threads`` threads.

    E_j, and G_j for the steps that take the ground truth, are ``Formed`` directions
    of the block store, which keeps them, takes their inner products and applies
    their moves (``BlockStore.replay_*``).  P_j is the answer's psi (COO).  Each
    thread makes its calls with its own corner (``BlockStore.corner_buffer``: with
    what a step on these blocks reads), so no answer is packed or re-evaluated.
    The G directions are formed by ``steps`` for the steps that take the ground
    truth (few: stale or inexact answers).
    """
    cdef MaxOracle oracle
    cdef BlockStore st
    cdef intp_t tau, d, n_threads, nb
    cdef float64_t scale
    cdef Primal* p
    cdef const float64_t* w0
    cdef const intp_t* blocks
    cdef object _arrays
    # per step j of the round
    cdef float64_t* loss
    cdef uint8_t* use_g              # decided by ``steps``: move along G_j
    cdef float64_t* gamma
    cdef float64_t* avgc
    cdef float64_t* ew               # <E_j, w_0>, <P_j, w_0>
    cdef float64_t* pw
    cdef float64_t* gg               # ||G_j||^2 (steps that take the truth)
    cdef float64_t* EE               # [j * tau + k] = <E_j, E_k> (k < j; k == j: squared norm)
    cdef float64_t* PE               # <P_j, E_k> (k < j)
    cdef float64_t* EG               # <E_j, G_k>, <P_j, G_k> (k < j, when step k takes the truth)
    cdef float64_t* PG
    cdef const int32_t** p_idx       # P_j (COO, repeats add up) ...
    cdef const float64_t** p_val
    cdef intp_t* p_nnz
    cdef int32_t* ps_idx             # ... in these slabs (mp entries per step)
    cdef float64_t* ps_val
    cdef intp_t mp
    cdef intp_t* replaced            # per thread: answers below the truth at w_0
    cdef Formed* fe                  # E_j and G_j (slots from ``replay_slots``)
    cdef Formed* fg
    # per thread
    cdef float64_t* x                # 2 d zeros between uses
    cdef float64_t* frames           # frame scratch (zeros between uses)
    cdef intp_t frame_len
    cdef list corner_buffers
    cdef Corner* corners
    cdef object scratch              # the array behind x (``_take_scratch``)

    def __cinit__(self, MaxOracle oracle, BlockStore st, intp_t tau, intp_t n_threads,
                  float64_t lam):
        cdef intp_t k, j, dl, mc, mx
        self.oracle, self.st, self.tau, self.n_threads = oracle, st, tau, n_threads
        self.d = oracle.n_features
        self.scale = 1.0 / (lam * oracle.n_blocks)
        dl, mc, mx, self.frame_len = st.replay_slots(oracle)
        f64 = [np.zeros(tau) for _ in range(6)]
        gram = [np.zeros(tau * tau) for _ in range(4)]
        p_nnz = np.zeros(tau, dtype=np.intp)
        use_g = np.zeros(tau, dtype=np.uint8)
        dense_e = np.zeros(tau * dl)
        cidx = [np.zeros(tau * mc, dtype=np.int32) for _ in range(2)]
        cval = [np.zeros(tau * mc) for _ in range(2)]
        xidx = [np.zeros(tau * mx, dtype=np.int32) for _ in range(2)]
        xval = [np.zeros(tau * mx) for _ in range(2)]
        scratch = _take_scratch(n_threads * 2 * max(self.d, 1))
        self.scratch = scratch
        frames = np.zeros(n_threads * self.frame_len)
        self.mp = max(self.d if oracle.dense_psi else oracle.max_psi_nnz, 1)
        ps_idx = np.zeros(tau * self.mp, dtype=np.int32)
        ps_val = np.zeros(tau * self.mp)
        replaced = np.zeros(n_threads, dtype=np.intp)
        self._arrays = (f64, gram, p_nnz, use_g, dense_e, cidx, cval, xidx, xval, scratch,
                        frames, ps_idx, ps_val, replaced)
        self.ps_idx, self.ps_val, self.replaced = _i32(ps_idx), _f64(ps_val), _ip(replaced)
        self.loss, self.gamma, self.avgc = _f64(f64[0]), _f64(f64[1]), _f64(f64[2])
        self.ew, self.pw, self.gg = _f64(f64[3]), _f64(f64[4]), _f64(f64[5])
        self.EE, self.PE, self.EG, self.PG = (_f64(gram[0]), _f64(gram[1]), _f64(gram[2]),
                                              _f64(gram[3]))
        self.use_g, self.p_nnz = _u8(use_g), _ip(p_nnz)
        self.x, self.frames = _f64(scratch), _f64(frames)
        # the answers' psi in features and what steps on these blocks read
        self.corner_buffers = [st.corner_buffer(oracle, True) for _ in range(n_threads)]
        self.corners = <Corner*> malloc(n_threads * sizeof(Corner))
        self.p_idx = <const int32_t**> malloc(tau * sizeof(int32_t*))
        self.p_val = <const float64_t**> malloc(tau * sizeof(float64_t*))
        self.fe = <Formed*> malloc(tau * sizeof(Formed))
        self.fg = <Formed*> malloc(tau * sizeof(Formed))
        if (self.corners == NULL or self.p_idx == NULL or self.p_val == NULL
                or self.fe == NULL or self.fg == NULL):
            raise MemoryError()
        for j in range(tau):
            self.fe[j] = Formed(-1, _f64(dense_e) + j * dl, _i32(cidx[0]) + j * mc,
                                _f64(cval[0]) + j * mc, 0, _i32(xidx[0]) + j * mx,
                                _f64(xval[0]) + j * mx, 0)
            self.fg[j] = Formed(-1, NULL, _i32(cidx[1]) + j * mc, _f64(cval[1]) + j * mc, 0,
                                _i32(xidx[1]) + j * mx, _f64(xval[1]) + j * mx, 0)
        for k in range(n_threads):
            self.corners[k] = (<CornerBuffer> self.corner_buffers[k]).corner
            self.corners[k].theta = NULL          # A_i^T w is not read

    def __dealloc__(self):
        free(self.corners)
        free(self.p_idx)
        free(self.p_val)
        free(self.fe)
        free(self.fg)

    cdef int directions(self, intp_t k, intp_t start, intp_t count) except -1 nogil:
        """The calls of steps start .. start + count - 1 at w_0 and their E_j and P_j,
        with ||E_j||^2, <E_j, w_0> and <P_j, w_0>.  An answer below the ground truth
        at w_0 (an inexact oracle) stands for the truth: P_j = 0, so E_j = G_j."""
        cdef intp_t b, j, i, g, nnz, d = self.d
        cdef float64_t* s = self.frames + k * self.frame_len
        cdef int32_t* pi
        cdef float64_t* pv
        cdef Corner* c = &self.corners[k]
        cdef bint ground
        self.replaced[k] = 0
        for b in range(count):
            j = start + b
            i = self.blocks[j]
            self.oracle.solve(i, self.w0, c)
            ground = below_ground_truth(c)
            if ground:
                self.replaced[k] += 1
            self.loss[j] = 0.0 if ground else c.loss
            pi, pv = self.ps_idx + j * self.mp, self.ps_val + j * self.mp
            nnz = 0
            if ground:
                pass
            elif c.psi_idx == NULL:                  # dense psi: keep its nonzeros
                for g in range(d):
                    if c.psi_val[g] != 0.0:
                        pi[nnz] = <int32_t> g
                        pv[nnz] = c.psi_val[g]
                        nnz += 1
            else:
                nnz = c.psi_nnz
                memcpy(pi, c.psi_idx, nnz * sizeof(int32_t))
                memcpy(pv, c.psi_val, nnz * sizeof(float64_t))
            self.p_idx[j], self.p_val[j], self.p_nnz[j] = pi, pv, nnz
            self.pw[j] = dot_gather(self.w0, pi, pv, nnz)
            # e = 1 w_i + (-scale) psi, as ``stats``
            self.st.replay_form(self.oracle, i, NULL if ground else c, -self.scale, pi, pv,
                                nnz, s, self.w0, &self.fe[j], &self.EE[j * self.tau + j],
                                &self.ew[j])
        return 0

    cdef int gram(self, intp_t k, intp_t parts) except -1 nogil:
        """Rows j = k, k + parts, ... of <E_j, E_m> and <P_j, E_m> (m < j)."""
        cdef intp_t j, r, t = self.tau
        cdef float64_t* x = self.x + 2 * k * self.d
        for r in range((self.nb - k + parts - 1) // parts):
            j = k + r * parts
            self.st.replay_gram_row(self.fe, j, self.p_idx[j], self.p_val[j], self.p_nnz[j],
                                    &self.EE[j * t], &self.PE[j * t], x)
        return 0

    cdef float64_t _truth(self, intp_t j) except? -1e308 nogil:
        """G_j for step j, which takes the ground truth: ||G_j||^2 into ``gg``, the
        column <E_m, G_j>, <P_m, G_j> (m > j), and <G_j, w_{j-1}> (returned)."""
        cdef intp_t m, t = self.tau
        cdef const float64_t* g
        cdef float64_t dot
        self.st.replay_truth(self.oracle, self.blocks[j], self.w0, &self.fg[j], &self.gg[j],
                             &dot)
        g = self.st.replay_load(&self.fg[j], self.x)
        for m in range(j):
            dot -= self.gamma[m] * self.st.replay_dot(
                g, &self.fg[m] if self.use_g[m] else &self.fe[m])
        for m in range(j + 1, self.nb):
            self.EG[m * t + j] = self.st.replay_dot(g, &self.fe[m])
            self.PG[m * t + j] = dot_gather(g, self.p_idx[m], self.p_val[m], self.p_nnz[m])
        self.st.replay_unload(&self.fg[j], self.x)
        return dot

    cdef int steps(self, Ledger* b, float64_t lam, bint line_search, float64_t* ell,
                   float64_t* ell_avg, intp_t* n_steps) except -1 nogil:
        """Every step size in draw order from the scalars: the serial step of
        ``_fw.bcfw_steps`` on the replayed answers, with <E_j, w_{j-1}> and the
        re-scored answer's <P_j, w_{j-1}> expanded over the earlier moves."""
        cdef intp_t n = self.oracle.n_blocks, t = self.tau, j, m, i, step
        cdef float64_t dot, pw, sq, ell_s, gap, gam, ell_step
        for j in range(self.nb):
            i = self.blocks[j]
            dot, pw = self.ew[j], self.pw[j]
            for m in range(j):
                if self.use_g[m]:
                    dot -= self.gamma[m] * self.EG[j * t + m]
                    pw -= self.gamma[m] * self.PG[j * t + m]
                else:
                    dot -= self.gamma[m] * self.EE[j * t + m]
                    pw -= self.gamma[m] * self.PE[j * t + m]
            # As ``AnswerOracle``: a stale answer below the truth is replaced by it
            # (not an inexact oracle: not counted in ``replaced``).
            self.use_g[j] = self.loss[j] - pw < -1e-12 * (1.0 + fabs(pw))
            if self.use_g[j]:
                dot, sq, ell_s = self._truth(j), self.gg[j], 0.0
            else:
                sq, ell_s = self.EE[j * t + j], self.loss[j] / n
            gap = lam * dot - b.ell[i] + ell_s
            b.gap_estimates[i] = gap
            if line_search:
                gam = step_size(gap, lam * sq)
            else:
                gam = 2.0 * n / (n_steps[0] + 2.0 * n)
            step = n_steps[0] + 1
            self.gamma[j] = gam
            self.avgc[j] = 0.5 * (step - 1) * step
            ell_step = gam * (ell_s - b.ell[i])
            b.ell[i] += ell_step
            ell[0] += ell_step
            ell_avg[0] = ((step - 1.0) * ell_avg[0] + 2.0 * ell[0]) / (step + 1.0)
            n_steps[0] = step
        return 0

    cdef int moves(self, intp_t k, intp_t parts) except -1 nogil:
        """Features [k d / parts, (k + 1) d / parts) of v (and the average) receive every
        move in draw order; the store moves the blocks' own values (``replay_move``:
        by the same feature range, or block j by part j % parts)."""
        cdef intp_t lo = k * self.d // parts, hi = (k + 1) * self.d // parts, j
        for j in range(self.nb):
            self.st.replay_move(&self.fg[j] if self.use_g[j] else &self.fe[j],
                                -self.gamma[j], self.avgc[j], lo, hi, j % parts == k, self.p)
        return 0


# Zeroed scratch of 2 d doubles per thread, kept between calls of ``replay_rounds`` (one
# pass each): a fresh one would fault in and zero every page it touches, every pass, which
# costs more than the pass for CoNLL's d = 7.7 M.  At most two arrays are kept.
_FREE_SCRATCH = []


def _take_scratch(intp_t n):
    """A zeroed float64 array of n entries (a kept one if its size fits)."""
    for k in range(len(_FREE_SCRATCH)):
        if _FREE_SCRATCH[k].shape[0] == n:
            return _FREE_SCRATCH.pop(k)
    return np.zeros(n)


def _give_scratch(arr):
    """Keep ``arr`` (all zeros again) for a later call."""
    _FREE_SCRATCH.insert(0, arr)
    del _FREE_SCRATCH[2:]


cdef float64_t* _f64(a):
    cdef float64_t[::1] v = a
    return &v[0]


cdef int32_t* _i32(a):
    cdef int32_t[::1] v = a
    return &v[0]


cdef intp_t* _ip(a):
    cdef intp_t[::1] v = a
    return &v[0]


cdef uint8_t* _u8(a):
    cdef uint8_t[::1] v = a
    return &v[0]


cdef class _Crew:
    """The threads that make a round's oracle calls: the caller makes part 0, helper
    k (a Python thread, in C between rounds' hand-offs) part k.

    A round's blocks are split into ``parts`` consecutive chunks as
    ``numpy.array_split`` does; part k's answers go to ``packs[k]``.
    """
    cdef MaxOracle oracle
    cdef intp_t n_threads
    cdef _Pack* packs
    cdef Corner* corners
    cdef list buffers, threads, errors
    cdef pthread_mutex_t lock
    cdef pthread_cond_t go, done
    cdef intp_t generation, pending, parts, nb, stage
    cdef bint stop
    cdef const float64_t* w
    cdef const intp_t* blocks
    cdef _Replay job                  # stages 1-3 of a parallel replay (None: calls only)

    def __cinit__(self, MaxOracle oracle, intp_t n_threads, intp_t tau):
        cdef intp_t k
        self.oracle, self.n_threads = oracle, n_threads
        self.errors, self.threads = [], []
        self.buffers = [CornerBuffer(oracle) for _ in range(n_threads)]
        self.packs = <_Pack*> calloc(n_threads, sizeof(_Pack))
        self.corners = <Corner*> malloc(n_threads * sizeof(Corner))
        if self.packs == NULL or self.corners == NULL:
            raise MemoryError()
        for k in range(n_threads):
            self.corners[k] = (<CornerBuffer> self.buffers[k]).corner
            # part 0 receives every part's answers at the end of the calls
            _pack_open(&self.packs[k], oracle, tau if k == 0 else tau // n_threads + 1,
                       tau if k == 0 else tau // n_threads + 1)
        pthread_mutex_init(&self.lock, NULL)
        pthread_cond_init(&self.go, NULL)
        pthread_cond_init(&self.done, NULL)

    def __dealloc__(self):
        cdef intp_t k
        if self.packs != NULL:
            for k in range(self.n_threads):
                _pack_close(&self.packs[k])
            free(self.packs)
        free(self.corners)
        pthread_mutex_destroy(&self.lock)
        pthread_cond_destroy(&self.go)
        pthread_cond_destroy(&self.done)

    def start(self):
        import threading
        for k in range(1, self.n_threads):
            t = threading.Thread(target=self._serve, args=(k,), daemon=True,
                                 name=f"ssvm-round-{k}")
            t.start()
            self.threads.append(t)

    def close(self):
        with nogil:
            pthread_mutex_lock(&self.lock)
            self.stop = True
            pthread_cond_broadcast(&self.go)
            pthread_mutex_unlock(&self.lock)
        for t in self.threads:
            t.join()
        self.threads = []

    def _serve(self, intp_t k):
        """Helper k: part k of each round until ``close``."""
        cdef intp_t seen = 0
        while True:
            with nogil:
                pthread_mutex_lock(&self.lock)
                while self.generation == seen and not self.stop:
                    pthread_cond_wait(&self.go, &self.lock)
                seen = self.generation
                pthread_mutex_unlock(&self.lock)
            if self.stop:
                return
            if k >= self.parts:
                continue
            try:
                with nogil:
                    self._part(k)
            except BaseException as exc:          # re-raised by the caller's thread
                self.errors.append(exc)
            finally:
                with nogil:
                    pthread_mutex_lock(&self.lock)
                    self.pending -= 1
                    if self.pending == 0:
                        pthread_cond_signal(&self.done)
                    pthread_mutex_unlock(&self.lock)

    cdef int _part(self, intp_t k) except -1 nogil:
        cdef intp_t size = self.nb // self.parts, extra = self.nb % self.parts
        cdef intp_t start = k * size + (k if k < extra else extra)
        if self.stage == 2:
            return self.job.gram(k, self.parts)
        if self.stage == 3:
            return self.job.moves(k, self.parts)
        if self.stage == 1:
            return self.job.directions(k, start, size + (1 if k < extra else 0))
        _pack_reset(&self.packs[k])
        _solve_into(self.oracle, self.w, self.blocks + start, size + (1 if k < extra else 0),
                    1, &self.corners[k], &self.packs[k])
        return 0

    cdef int calls(self, const float64_t* w, const intp_t* blocks, intp_t nb) except -1 nogil:
        """The answers of ``blocks`` at ``w``, in ``packs[0]``; 1 if a helper failed."""
        cdef intp_t k
        self.w, self.blocks, self.nb, self.stage = w, blocks, nb, 0
        if self._run(min(self.n_threads, nb)):
            return 1
        for k in range(1, self.parts):
            _append(&self.packs[0], &self.packs[k])
        return 0

    cdef int run_stage(self, intp_t stage, const float64_t* w, const intp_t* blocks,
                       intp_t nb) except -1 nogil:
        """Stage 1 (calls and directions, split as ``calls`` splits them), 2 (Gram rows)
        or 3 (moves) of ``job`` on every thread; 1 if a helper failed."""
        self.w, self.blocks, self.nb, self.stage = w, blocks, nb, stage
        return self._run(min(self.n_threads, nb) if stage == 1 else self.n_threads)

    cdef int _run(self, intp_t parts) except -1 nogil:
        """Parts 0..parts-1 of the current stage, part 0 here; 1 if a helper failed."""
        self.parts = parts
        if self.parts > 1:
            pthread_mutex_lock(&self.lock)
            self.pending = self.parts - 1
            self.generation += 1
            pthread_cond_broadcast(&self.go)
            pthread_mutex_unlock(&self.lock)
        try:
            self._part(0)
        finally:
            if self.parts > 1:
                pthread_mutex_lock(&self.lock)
                while self.pending > 0:
                    pthread_cond_wait(&self.done, &self.lock)
                pthread_mutex_unlock(&self.lock)
        if self.parts > 1 and self.errors_seen():
            return 1
        return 0

    cdef bint errors_seen(self) noexcept nogil:
        with gil:
            return len(self.errors) > 0


cdef int _fw_rounds(_Crew crew, AnswerOracle replay, BlockStore st, Ledger* b, Primal* p,
                    float64_t* s,
                    const intp_t* order, const intp_t* round_ptr, intp_t n_rounds,
                    float64_t lam, bint line_search, float64_t* ell, float64_t* ell_avg,
                    intp_t* n_steps, intp_t* n_replaced, intp_t* n_calls, _Key* keys,
                    intp_t* key_blocks, intp_t* key_slots, Corner* c, Direction* e,
                    float64_t* line_work) except -1 nogil:
    """Rounds ``order[round_ptr[r]:round_ptr[r + 1]]``: their calls at the round's w,
    then their block steps in that order on the answers (``AnswerOracle``)."""
    cdef intp_t r, k, nb
    cdef const intp_t* blocks
    cdef const _Pack* pk = &crew.packs[0]
    cdef Sampler smp
    for r in range(n_rounds):
        blocks = order + round_ptr[r]
        nb = round_ptr[r + 1] - round_ptr[r]
        if crew.calls(p.w, blocks, nb):
            return 1
        n_calls[0] += nb
        n_replaced[0] += pk.replaced
        for k in range(nb):
            keys[k].block = blocks[k]
            keys[k].slot = k
        qsort(keys, nb, sizeof(_Key), _by_block)
        for k in range(nb):
            key_blocks[k] = keys[k].block
            key_slots[k] = keys[k].slot
        replay._replay(pk, key_blocks, key_slots)
        init_sampler(&smp, blocks, nb, NULL, 0, NULL, 0)
        bcfw_steps(replay, st, b, p, s, &smp, lam, line_search, ell, ell_avg, n_steps,
                   n_replaced, c, e, line_work)
    return 0


def _round_size(MaxOracle oracle, const intp_t[::1] order, const intp_t[::1] round_ptr):
    """The largest round of ``order``/``round_ptr``; ``ValueError`` on bad rounds."""
    cdef intp_t n_rounds = round_ptr.shape[0] - 1, r, tau = 0
    if n_rounds < 0 or round_ptr[0] != 0 or round_ptr[n_rounds] != order.shape[0]:
        raise ValueError("round_ptr must start at 0 and end at len(order)")
    for r in range(n_rounds):
        if round_ptr[r + 1] < round_ptr[r]:
            raise ValueError("round_ptr must be nondecreasing")
        tau = max(tau, round_ptr[r + 1] - round_ptr[r])
        _check_blocks(np.asarray(order[round_ptr[r]:round_ptr[r + 1]]), oracle.n_blocks)
    return tau


def fw_rounds(MaxOracle oracle, state, const intp_t[::1] order, const intp_t[::1] round_ptr,
              bint line_search, intp_t n_threads=1):
    """Mini-batch FW rounds (Wang et al. (2016)) in one compiled loop; returns the calls.

    Round r is the blocks ``order[round_ptr[r]:round_ptr[r + 1]]`` (distinct):
    their oracle calls at the round's w, split over ``n_threads`` threads as
    ``ThreadExecutor`` splits them, then their block steps in that order, each
    with the answer's score recomputed at the up-to-date iterate
    (``AnswerOracle``) and the step of ``_fw.bcfw_pass``.  The iterates are
    those of ``minibatch_pass`` with a serial or thread executor and plain FW
    steps, bit for bit.  Books its ``StepCounts`` into ``state``.

    Parameters
    ----------
    oracle : MaxOracle
        The bound oracle (one thread if it needs the GIL).
    state : SolverState
        Without active sets; updated in place.
    order : intp array
        The blocks of every round, round after round.
    round_ptr : intp array (n_rounds + 1,)
        Round boundaries in ``order``: 0, increasing, ending at ``len(order)``.
    line_search : bool
        False: the predefined step 2n / (k + 2n).
    n_threads : int, default 1
        Threads making each round's calls.

    Returns
    -------
    int
        Oracle calls made.
    """
    if state.atoms is not None:
        raise ValueError("this state keeps active sets; use minibatch_pass(active_sets=True)")
    if n_threads < 1:
        raise ValueError(f"n_threads must be >= 1, got {n_threads}")
    cdef intp_t n_rounds = round_ptr.shape[0] - 1
    cdef intp_t tau = _round_size(oracle, order, round_ptr)
    if oracle.needs_gil:
        n_threads = 1
    if tau == 0:
        return 0
    state.invalidate_gaps()              # the iterate moves
    cdef StateView view = StateView(state, None, None, oracle)
    cdef float64_t[::1] s = view.store.frame_scratch(oracle)
    cdef float64_t ell = state.ell, ell_avg = state.ell_avg
    cdef intp_t n_steps = state.n_steps, n_replaced = 0, n_calls = 0
    cdef CornerBuffer buf = view.store.corner_buffer(oracle)
    cdef float64_t lam = state.lam
    cdef float64_t[::1] line_work = np.zeros(LINE_WORK * oracle.n_features
                                             if state.has_box else 1)
    cdef intp_t[::1] key_blocks = np.zeros(tau, dtype=np.intp)
    cdef intp_t[::1] key_slots = np.zeros(tau, dtype=np.intp)
    cdef _Key* keys = <_Key*> malloc(tau * sizeof(_Key))
    if keys == NULL:
        raise MemoryError()
    cdef AnswerOracle replay = AnswerOracle(oracle, solve_blocks(oracle, state.w, []))
    cdef _Crew crew = _Crew(oracle, n_threads, tau)
    cdef int failed = 0
    crew.start()
    try:
        if oracle.needs_gil:
            failed = _fw_rounds(crew, replay, view.store, &view.ledger, &view.primal, &s[0],
                                &order[0], &round_ptr[0], n_rounds, lam, line_search, &ell,
                                &ell_avg, &n_steps, &n_replaced, &n_calls, keys,
                                &key_blocks[0], &key_slots[0], &buf.corner,
                                &view.direction.d, &line_work[0])
        else:
            with nogil:
                failed = _fw_rounds(crew, replay, view.store, &view.ledger, &view.primal,
                                    &s[0], &order[0], &round_ptr[0], n_rounds, lam,
                                    line_search, &ell, &ell_avg, &n_steps, &n_replaced,
                                    &n_calls, keys, &key_blocks[0], &key_slots[0],
                                    &buf.corner, &view.direction.d, &line_work[0])
        if failed:
            raise crew.errors[0]
    finally:
        crew.close()
        free(keys)
        # As in bcfw_pass: the steps completed before a failure are booked.
        steps = n_steps - state.n_steps
        state.record_steps(StepCounts(ell=ell, ell_avg=ell_avg, steps=steps,
                                      oracle_calls=n_calls, replaced=n_replaced, fw=steps))
    return n_calls


cdef int _replay_rounds(_Crew crew, _Replay job, Ledger* b, Primal* p,
                        const intp_t* order, const intp_t* round_ptr, intp_t n_rounds,
                        float64_t lam, bint line_search, float64_t* ell, float64_t* ell_avg,
                        intp_t* n_steps, intp_t* n_replaced,
                        intp_t* n_calls) except -1 nogil:
    """The rounds of ``replay_rounds``: per round, calls and directions (stage 1), Gram
    rows (stage 2), step sizes here, moves (stage 3); 1 if a helper failed."""
    cdef intp_t r, k, nb
    cdef const intp_t* blocks
    for r in range(n_rounds):
        blocks = order + round_ptr[r]
        nb = round_ptr[r + 1] - round_ptr[r]
        if nb == 0:
            continue
        job.blocks, job.nb, job.w0, job.p = blocks, nb, p.w, p
        if crew.run_stage(1, p.w, blocks, nb):
            return 1
        n_calls[0] += nb
        for k in range(crew.parts):
            n_replaced[0] += job.replaced[k]
        if nb > 1 and crew.run_stage(2, p.w, blocks, nb):
            return 1
        job.steps(b, lam, line_search, ell, ell_avg, n_steps)
        if crew.run_stage(3, p.w, blocks, nb):
            return 1
    return 0


def replay_fallback(MaxOracle oracle, state):
    """Why ``replay_rounds`` falls back to ``fw_rounds`` for ``oracle`` and ``state``
    (None: it does not).

    - a box (``lower``/``upper``): the exact step is a search over the clipped
      features (``_linesearch.box_search``), not a function of inner products;
    - a storage the block store says the replay does not cover
      (``BlockStore.replay_problem``; dense, sparse and compact blocks are covered);
    - active sets (and so every step but "fw", caching and ``n_samples > 1``) never
      reach the compiled rounds (``minibatch_pass`` replays them in Python).
    """
    if state.atoms is not None:
        return "the state keeps active sets"
    if state.has_box:
        return "a box: the exact step along a direction is a search over clipped features"
    return state.blocks.replay_problem


def replay_rounds(MaxOracle oracle, state, const intp_t[::1] order,
                  const intp_t[::1] round_ptr, bint line_search, intp_t n_threads=1):
    """``fw_rounds`` with the block steps of every round off the master: exact parallel replay.

    A round's blocks are distinct, so step j's direction e_j = w_i - v_s (or w_i when
    the answer falls below the ground truth at the current point) is fixed at the
    round's w_0, and w_{j-1} = w_0 - sum_{k<j} gamma_k e_k.  The threads make the
    calls and form, for their answers, both candidate directions in features with
    their inner products with w_0 and with every other direction of the round (a
    tau x tau Gram per pair of candidates); the master then takes every step in draw
    order from those scalars (O(tau^2), the re-scored answer deciding the ground-truth
    replacement as ``AnswerOracle`` does); the moves are applied over a fixed
    partition of the features, each feature receiving them in draw order, so the
    result does not depend on ``n_threads``.  The iterates equal ``fw_rounds``'s up
    to rounding, and every step keeps its exact line search, so the dual never
    decreases.  Cases ``replay_fallback`` names run ``fw_rounds`` instead; an oracle
    that needs the GIL runs on one thread (as in ``fw_rounds``).

    Parameters and returns as ``fw_rounds``.
    """
    if n_threads < 1:
        raise ValueError(f"n_threads must be >= 1, got {n_threads}")
    if replay_fallback(oracle, state) is not None:
        return fw_rounds(oracle, state, order, round_ptr, line_search, n_threads)
    cdef intp_t tau = _round_size(oracle, order, round_ptr)
    if tau == 0:
        return 0
    if oracle.needs_gil:
        n_threads = 1
    state.invalidate_gaps()              # the iterate moves
    cdef StateView view = StateView(state, None, None, oracle)
    cdef float64_t ell = state.ell, ell_avg = state.ell_avg
    cdef intp_t n_steps = state.n_steps, n_replaced = 0, n_calls = 0
    cdef intp_t n_rounds = round_ptr.shape[0] - 1
    cdef float64_t lam = state.lam
    cdef _Crew crew = _Crew(oracle, n_threads, tau)
    crew.job = _Replay(oracle, view.store, tau, n_threads, state.lam)
    cdef int failed = 0
    crew.start()
    try:
        if oracle.needs_gil:
            failed = _replay_rounds(crew, crew.job, &view.ledger, &view.primal, &order[0],
                                    &round_ptr[0], n_rounds, lam, line_search, &ell, &ell_avg,
                                    &n_steps, &n_replaced, &n_calls)
        else:
            with nogil:
                failed = _replay_rounds(crew, crew.job, &view.ledger, &view.primal,
                                        &order[0], &round_ptr[0], n_rounds, lam, line_search,
                                        &ell, &ell_avg, &n_steps, &n_replaced, &n_calls)
        if failed:
            raise crew.errors[0]
        _give_scratch(crew.job.scratch)     # zeros again after every completed stage
    finally:
        crew.close()
        steps = n_steps - state.n_steps
        state.record_steps(StepCounts(ell=ell, ell_avg=ell_avg, steps=steps,
                                      oracle_calls=n_calls, replaced=n_replaced, fw=steps))
    return n_calls
