"""Chain (linear-chain CRF) max oracle: Viterbi decoding without the GIL.

Joint feature map (Osokin et al. (2016), App. I.1), for K states and F token features, with
phi = [emission (F x K) | transition (K x K) | bias (K) | start (K) | end (K)]:
emission[f, k] sums x_t[f] over tokens labelled k, transition[a, b] counts
a -> b, bias[k] counts tokens labelled k, start/end flag the first/last label.
Task loss: normalised Hamming, (1/T) #{t : y_t != y'_t}.

Token features are stored once as CSR rows (only nonzeros, so binary OCR
pixels cost their active count, and sparse attribute vectors such as
CoNLL's cost their active attributes): the unary score of state k at token
t is the sum of w[f, k] * x_t[f] over the token's nonzero features f.  When
every value is 1 (binary pixels, indicator attributes) the oracle never
reads the values, which spares a step as many cache lines.  psi
is emitted sparse, skipping the tokens where the two labellings agree.

Weight layout, with K states and F token features (d = F K + K K + 3 K):
``w[f * K + k]`` emission of feature f in state k, ``w[F K + a K + b]``
transition a -> b, then ``bias[k]``, ``start[k]`` and ``end[k]`` at offsets
F K + K K, F K + K K + K and F K + K K + 2 K.

With ``sparse_blocks`` the oracle reports per-block supports: psi_i(y) of
any labelling y touches only the emission rows of the features active in
sequence i, the transitions (when T_i >= 2), and bias, start and end, so the
solvers store each block's w_i on that support.

With ``compact_blocks`` the oracle offers compact blocks (``MaxOracle``):
psi_i(y) = A_i q_i(y) with q_i(y) = e(x_i, y_i) - e(x_i, y) for the
sufficient statistic e(x, y) = [token-label indicators (T x K) | transition
counts (K x K, when T >= 2)].  Column (t, k) of A_i is token t's features in
state k's emission row plus bias[k] (and start[k] at t = 0, end[k] at
t = T - 1); a transition column is its own entry of w.  So a block's dual
vector is kept in T K + K K numbers instead of d, A_i^T w is the unary table
Viterbi computes anyway plus the transitions, and ||A_i e||^2 needs only the
T x T Gram matrix G[t, s] = <x_t, x_s> + 1 + [t = s = 0] + [t = s = T - 1],
computed once per sequence of at most ``GRAM_MAX_TOKENS`` tokens (so the Grams
take at most 8 GRAM_MAX_TOKENS bytes per token); a longer sequence's norms are
summed from its token rows instead, in time and memory linear in the rows the
direction touches (``_sqnorm_by_rows``).
"""

cimport cython
from libc.stdlib cimport free
from libc.string cimport memcpy, memset

import numpy as np

from ssvm_core._typedefs cimport float64_t, int32_t, intp_t
from ssvm_core._oracle cimport Corner, MaxOracle
from ssvm_core._vector cimport checked_malloc, dot_gather, ssvm_prefetch


cdef extern from "_maxsum.h" nogil:
    void ssvm_maxsum_step(const float64_t* prev, const float64_t* trans, float64_t* best,
                          intp_t K)
    void ssvm_axpy(float64_t alpha, const float64_t* x, float64_t* y, intp_t K)
    intp_t ssvm_maxsum_argmax(const float64_t* prev, const float64_t* trans, intp_t b,
                              intp_t K)
    void ssvm_chain_scatter(const int32_t* feats, const float64_t* vals, intp_t n, intp_t K,
                            const int32_t* idx, intp_t shift, const float64_t* a, intp_t m,
                            float64_t* out, float64_t* out2, float64_t c2)


cdef struct _Layout:
    intp_t K, F, off_trans, off_bias, off_start, off_end


cdef _Layout _layout(intp_t K, intp_t F):
    cdef _Layout L
    L.K = K
    L.F = F
    L.off_trans = F * K
    L.off_bias = L.off_trans + K * K
    L.off_start = L.off_bias + K
    L.off_end = L.off_start + K
    return L


def chain_size(intp_t n_states, intp_t n_features):
    """Dimension F K + K K + 3 K of the chain's joint feature map."""
    return n_features * n_states + n_states * n_states + 3 * n_states


cdef struct _Tokens:
    # CSR rows of one sequence: token t has features idx[ptr[t]:ptr[t+1]] with
    # values val[...], or all values 1 when val is NULL (binary features).
    const intp_t* ptr
    const int32_t* idx
    const float64_t* val
    intp_t T


cdef inline float64_t _value(const _Tokens* x, intp_t p) noexcept nogil:
    """The value of the token features' entry p."""
    return 1.0 if x.val == NULL else x.val[p]


cdef void _unaries(const _Layout* L, const _Tokens* x, const float64_t* w,
                   float64_t* u) noexcept nogil:
    """u[t, k] = <w, phi> contributions of token t with label k (no transitions)."""
    cdef intp_t K = L.K, t, k, p
    cdef float64_t* ut
    for t in range(x.T):
        ut = u + t * K
        for k in range(K):
            ut[k] = w[L.off_bias + k]
        if t == 0:
            for k in range(K):
                ut[k] += w[L.off_start + k]
        if t == x.T - 1:
            for k in range(K):
                ut[k] += w[L.off_end + k]
        if x.val == NULL:                   # binary features: add the rows
            for p in range(x.ptr[t], x.ptr[t + 1]):
                ssvm_axpy(1.0, w + x.idx[p] * K, ut, K)
        else:
            for p in range(x.ptr[t], x.ptr[t + 1]):
                ssvm_axpy(x.val[p], w + x.idx[p] * K, ut, K)


cdef float64_t _path_score(const _Layout* L, const float64_t* u, const float64_t* w,
                           const int32_t* y, intp_t T) noexcept nogil:
    """<w, phi(x, y)> from the unary table."""
    cdef intp_t t
    cdef float64_t total = u[y[0]]
    for t in range(1, T):
        total += u[t * L.K + y[t]] + w[L.off_trans + y[t - 1] * L.K + y[t]]
    return total


cdef int _viterbi(const _Layout* L, float64_t* u, const float64_t* w, intp_t T,
                  int32_t* out) except -1 nogil:
    """Overwrite u with max-sum messages and write the argmax labelling to out.

    Ties go to the smallest state.
    """
    cdef intp_t K = L.K, t, b
    cdef const float64_t* trans = w + L.off_trans
    cdef float64_t* cur
    cdef float64_t* best = <float64_t*> checked_malloc(K * sizeof(float64_t),
                                                       "Viterbi workspace")
    try:
        for t in range(1, T):
            cur = u + t * K
            ssvm_maxsum_step(u + (t - 1) * K, trans, best, K)
            for b in range(K):
                cur[b] += best[b]
    finally:
        free(best)
    cur = u + (T - 1) * K
    out[T - 1] = 0
    for b in range(1, K):
        if cur[b] > cur[out[T - 1]]:
            out[T - 1] = <int32_t> b
    for t in range(T - 1, 0, -1):
        out[t - 1] = <int32_t> ssvm_maxsum_argmax(u + (t - 1) * K, trans, out[t], K)
    return 0


cdef void _backward(const _Layout* L, const float64_t* u, const float64_t* w, intp_t T,
                    float64_t* g) noexcept nogil:
    """g[t, a] = max over the labels after t of their score, given y_t = a.

    g[T-1] = 0 and g[t, a] = max_b trans[a, b] + u[t+1, b] + g[t+1, b]; u is the
    (loss-augmented) unary table before the forward pass.
    """
    cdef intp_t K = L.K, t, a, b
    cdef const float64_t* trans = w + L.off_trans
    cdef float64_t best, cand
    for a in range(K):
        g[(T - 1) * K + a] = 0.0
    for t in range(T - 2, -1, -1):
        for a in range(K):
            best = trans[a * K] + u[(t + 1) * K] + g[(t + 1) * K]
            for b in range(1, K):
                cand = trans[a * K + b] + u[(t + 1) * K + b] + g[(t + 1) * K + b]
                if cand > best:
                    best = cand
            g[t * K + a] = best


cdef void _decode_through(const _Layout* L, const float64_t* f, const float64_t* u,
                          const float64_t* g, const float64_t* w, intp_t T, intp_t t0,
                          intp_t s, int32_t* z) noexcept nogil:
    """The best labelling with z[t0] = s, from forward messages f, the unary
    table u and backward messages g (its score is f[t0, s] + g[t0, s])."""
    cdef intp_t K = L.K, t, b, arg
    cdef const float64_t* trans = w + L.off_trans
    cdef float64_t best, cand
    z[t0] = <int32_t> s
    for t in range(t0, 0, -1):
        z[t - 1] = <int32_t> ssvm_maxsum_argmax(f + (t - 1) * K, trans, z[t], K)
    for t in range(t0 + 1, T):
        arg = 0
        best = trans[z[t - 1] * K] + u[t * K] + g[t * K]
        for b in range(1, K):
            cand = trans[z[t - 1] * K + b] + u[t * K + b] + g[t * K + b]
            if cand > best:
                best, arg = cand, b
        z[t] = <int32_t> arg


cdef intp_t _write_psi(const _Layout* L, const _Tokens* x, const int32_t* y,
                       const int32_t* z, Corner* c) noexcept nogil:
    """psi = phi(x, y) - phi(x, z) as COO entries in c; returns #{t: y_t != z_t}."""
    cdef intp_t K = L.K, T = x.T, t, p, nnz = 0, wrong = 0
    for t in range(T):
        if y[t] != z[t]:
            wrong += 1
            for p in range(x.ptr[t], x.ptr[t + 1]):
                c.psi_idx[nnz] = <int32_t> (x.idx[p] * K + y[t])
                c.psi_val[nnz] = _value(x, p)
                c.psi_idx[nnz + 1] = <int32_t> (x.idx[p] * K + z[t])
                c.psi_val[nnz + 1] = -c.psi_val[nnz]
                nnz += 2
            c.psi_idx[nnz] = <int32_t> (L.off_bias + y[t])
            c.psi_val[nnz] = 1.0
            c.psi_idx[nnz + 1] = <int32_t> (L.off_bias + z[t])
            c.psi_val[nnz + 1] = -1.0
            nnz += 2
    if y[0] != z[0]:
        c.psi_idx[nnz] = <int32_t> (L.off_start + y[0])
        c.psi_val[nnz] = 1.0
        c.psi_idx[nnz + 1] = <int32_t> (L.off_start + z[0])
        c.psi_val[nnz + 1] = -1.0
        nnz += 2
    if y[T - 1] != z[T - 1]:
        c.psi_idx[nnz] = <int32_t> (L.off_end + y[T - 1])
        c.psi_val[nnz] = 1.0
        c.psi_idx[nnz + 1] = <int32_t> (L.off_end + z[T - 1])
        c.psi_val[nnz + 1] = -1.0
        nnz += 2
    for t in range(T - 1):
        if y[t] != z[t] or y[t + 1] != z[t + 1]:
            c.psi_idx[nnz] = <int32_t> (L.off_trans + y[t] * K + y[t + 1])
            c.psi_val[nnz] = 1.0
            c.psi_idx[nnz + 1] = <int32_t> (L.off_trans + z[t] * K + z[t + 1])
            c.psi_val[nnz + 1] = -1.0
            nnz += 2
    c.psi_nnz = nnz
    return wrong


cdef intp_t _mismatches(const int32_t* y, const int32_t* z, intp_t T) noexcept nogil:
    """#{t : y_t != z_t} (what ``_write_psi`` returns, without writing psi)."""
    cdef intp_t t, wrong = 0
    for t in range(T):
        wrong += y[t] != z[t]
    return wrong


cdef void _write_answer(const _Layout* L, const _Tokens* x, const int32_t* y,
                        Corner* c) noexcept nogil:
    """The loss of the labelling c.labels, with psi and the block coordinates the
    caller asked for (psi is skipped when only the coordinates are read)."""
    if c.coord_idx != NULL and c.coords_only:
        c.loss = _mismatches(y, c.labels, x.T) / <float64_t> x.T
    else:
        c.loss = _write_psi(L, x, y, c.labels, c) / <float64_t> x.T
    if c.coord_idx != NULL:
        _write_coords(L.K, x.T, y, c.labels, c)


cdef void _write_coords(intp_t K, intp_t T, const int32_t* y, const int32_t* z,
                        Corner* c) noexcept nogil:
    """q = e(x, y) - e(x, z) in block coordinates (token t, state k at t K + k;
    transition a -> b at T K + a K + b) as COO entries in c."""
    cdef intp_t t, nnz = 0
    for t in range(T):
        if y[t] != z[t]:
            c.coord_idx[nnz] = <int32_t> (t * K + y[t])
            c.coord_val[nnz] = 1.0
            c.coord_idx[nnz + 1] = <int32_t> (t * K + z[t])
            c.coord_val[nnz + 1] = -1.0
            nnz += 2
    for t in range(T - 1):
        if y[t] != z[t] or y[t + 1] != z[t + 1]:
            c.coord_idx[nnz] = <int32_t> (T * K + y[t] * K + y[t + 1])
            c.coord_val[nnz] = 1.0
            c.coord_idx[nnz + 1] = <int32_t> (T * K + z[t] * K + z[t + 1])
            c.coord_val[nnz + 1] = -1.0
            nnz += 2
    c.coord_nnz = nnz


cdef void _write_theta(const _Layout* L, const float64_t* u, const float64_t* w, intp_t T,
                       float64_t* theta) noexcept nogil:
    """theta = A_i^T w: the unary table u (before loss augmentation), then the
    transitions when T >= 2."""
    memcpy(theta, u, T * L.K * sizeof(float64_t))
    if T >= 2:
        memcpy(theta + T * L.K, w + L.off_trans, L.K * L.K * sizeof(float64_t))


cdef enum:
    # Workspace of coord_sqnorm kept on the stack, in intp_t: 2 per token-label
    # entry of the direction and 1 per state (more: malloc)
    _SQNORM_STACK = 256
    # Longest sequence whose Gram is precomputed (see the module docstring)
    _GRAM_MAX_TOKENS = 256

GRAM_MAX_TOKENS = _GRAM_MAX_TOKENS


cdef inline intp_t _token_of(intp_t c, intp_t K, intp_t t) noexcept nogil:
    """The token of token-label coordinate c = t' K + k, searching up from token t
    (t <= t'): sparse coordinates come in increasing order, so a sweep stays O(T + nnz)."""
    while c >= (t + 1) * K:
        t += 1
    return t


def sequence_grams(const intp_t[::1] tok_ptr, const int32_t[::1] feat_idx,
                   const float64_t[::1] feat_val, const intp_t[::1] seq_ptr,
                   intp_t n_features):
    """Per sequence of at most ``GRAM_MAX_TOKENS`` tokens the T x T matrix
    <x_t, x_s> + 1 + [t = s = 0] + [t = s = T - 1], flattened row-major into one
    array, with the offsets ``ptr`` (``(ptr, grams)``).  Longer sequences get
    none, and neither do sequences whose Gram overflows (features of magnitude
    1e155 and more): their norms are summed from the token rows."""
    cdef intp_t n = seq_ptr.shape[0] - 1, i, T, t, s, p, t0
    ptr = np.zeros(n + 1, dtype=np.intp)
    cdef intp_t[::1] pv = ptr
    for i in range(n):
        T = seq_ptr[i + 1] - seq_ptr[i]
        pv[i + 1] = pv[i] + (T * T if T <= _GRAM_MAX_TOKENS else 0)
    grams = np.zeros(pv[n])
    cdef float64_t[::1] g = grams
    cdef float64_t[::1] row = np.zeros(max(n_features, 1))
    cdef float64_t acc
    with nogil:
        for i in range(n):
            t0 = seq_ptr[i]
            T = seq_ptr[i + 1] - t0
            if T > _GRAM_MAX_TOKENS:
                continue
            for t in range(T):
                for p in range(tok_ptr[t0 + t], tok_ptr[t0 + t + 1]):
                    row[feat_idx[p]] += feat_val[p]
                for s in range(t, T):
                    acc = 1.0
                    for p in range(tok_ptr[t0 + s], tok_ptr[t0 + s + 1]):
                        acc = acc + row[feat_idx[p]] * feat_val[p]
                    if s == t and (t == 0 or t == T - 1):
                        acc = acc + (2.0 if T == 1 else 1.0)
                    g[pv[i] + t * T + s] = acc
                    g[pv[i] + s * T + t] = acc
                for p in range(tok_ptr[t0 + t], tok_ptr[t0 + t + 1]):
                    row[feat_idx[p]] = 0.0
    sizes = np.diff(ptr)
    finite = np.isfinite(grams)
    if not finite.all():                # keep only the Grams without overflow
        owner = np.repeat(np.arange(n), sizes)
        bad = np.zeros(n, dtype=bool)
        bad[owner[~finite]] = True
        keep = ~bad[owner]
        sizes[bad] = 0
        ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.intp)
        grams = grams[keep]
    return ptr, grams


def max_psi_entries(const intp_t[::1] tok_ptr, const intp_t[::1] seq_ptr):
    """Per sequence, the most COO entries ``_write_psi`` can emit."""
    cdef intp_t n = seq_ptr.shape[0] - 1, i, T, nnz
    out = np.empty(n, dtype=np.intp)
    cdef intp_t[::1] o = out
    for i in range(n):
        T = seq_ptr[i + 1] - seq_ptr[i]
        nnz = tok_ptr[seq_ptr[i + 1]] - tok_ptr[seq_ptr[i]]
        o[i] = 2 * nnz + 2 * T + 4 + 2 * (T - 1)
    return out


def sequence_features(tok_ptr, feat_idx, seq_ptr):
    """The distinct features of each sequence as CSR ``(ptr, features)``, sorted."""
    tok_ptr, seq_ptr = np.asarray(tok_ptr), np.asarray(seq_ptr)
    feat_idx = np.asarray(feat_idx)[:tok_ptr[-1]]
    n_features = int(feat_idx.max()) + 1 if feat_idx.size else 1
    counts = np.diff(tok_ptr[seq_ptr])
    keys = np.repeat(np.arange(len(counts), dtype=np.int64), counts) * n_features + feat_idx
    keys.sort()                                 # faster than np.unique's hashing here
    keys = keys[np.concatenate([[True], keys[1:] != keys[:-1]])] if keys.size else keys
    ptr = np.searchsorted(keys // n_features, np.arange(len(counts) + 1)).astype(np.intp)
    return ptr, (keys % n_features).astype(np.int32)


@cython.final
cdef class ChainOracle(MaxOracle):
    """Loss-augmented Viterbi for a chain model bound to n sequences.

    Built by ``ChainModel.bind``; the arrays are CSR token rows (``tok_ptr``,
    ``feat_idx``, ``feat_val``), sequence boundaries in tokens (``seq_ptr``)
    and the ground-truth labels of all tokens.  With ``sparse_blocks``,
    ``block_support(i)`` returns the features any psi_i(y) can touch (see the
    module docstring); otherwise None (blocks stored densely).
    """
    cdef _Layout L
    cdef readonly intp_t[::1] tok_ptr, seq_ptr
    cdef readonly int32_t[::1] feat_idx, labels
    cdef readonly float64_t[::1] feat_val
    cdef readonly bint sparse_blocks
    cdef bint _binary                     # every feature value is 1: feat_val is not read
    cdef object _block_features           # (ptr, features): distinct features per sequence
    cdef const intp_t[::1] _gram_ptr      # compact blocks: per-sequence Gram matrices
    cdef const float64_t[::1] _grams

    def __init__(self, intp_t n_states, intp_t n_features, tok_ptr, feat_idx, feat_val,
                 seq_ptr, labels, bint sparse_blocks=False, bint compact_blocks=False):
        if sparse_blocks and compact_blocks:
            raise ValueError("choose sparse_blocks or compact_blocks, not both")
        self.L = _layout(n_states, n_features)
        self.sparse_blocks = sparse_blocks
        self._block_features = (sequence_features(tok_ptr, feat_idx, seq_ptr)
                                if sparse_blocks else None)
        if len(feat_idx) == 0:              # keep &feat_idx[0] valid
            feat_idx, feat_val = np.zeros(1, np.int32), np.zeros(1)
        self.tok_ptr = tok_ptr
        self.feat_idx = feat_idx
        self.feat_val = feat_val
        self._binary = bool(np.all(np.asarray(feat_val)[:np.asarray(tok_ptr)[-1]] == 1.0))
        self.seq_ptr = seq_ptr
        self.labels = labels
        lengths = np.diff(np.asarray(seq_ptr))
        self.n_blocks = lengths.shape[0]
        self.n_features = chain_size(n_states, n_features)
        self.max_labels = int(lengths.max())
        self.max_psi_nnz = int(np.max(max_psi_entries(self.tok_ptr, self.seq_ptr)))
        self.dense_psi = False
        self.needs_gil = False
        if compact_blocks:
            self._gram_ptr, self._grams = sequence_grams(self.tok_ptr, self.feat_idx,
                                                         self.feat_val, self.seq_ptr,
                                                         n_features)
            K = n_states
            self.max_coords = self.max_labels * K + K * K
            self.max_coord_nnz = 4 * self.max_labels
            token_nnz = np.diff(np.asarray(self.tok_ptr)[np.asarray(self.seq_ptr)])
            self.max_expand = int(np.max((token_nnz + lengths + 2) * K)) + K * K

    cdef int coord_add(self, intp_t i, const int32_t* idx, const float64_t* val, intp_t nnz,
                       float64_t* out, float64_t* out2, float64_t c2) except -1 nogil:
        """out += A_i e (and out2 += c2 A_i e), token by token: the entries of one
        token (a run of e's increasing indices) add to their states' emission rows
        in one sweep over the token's features (``ssvm_chain_scatter``), so a
        feature's row is found once for all of them; then bias (start, end), then
        the transitions.  Every entry of out receives the same terms in the same
        order as entry by entry."""
        cdef _Tokens x = self._tokens(i)
        cdef intp_t K = self.L.K, TK = x.T * self.L.K, t = 0, j = 0, j1, q, k, g, p0
        cdef float64_t a
        while j < nnz and idx[j] < TK:
            t = _token_of(idx[j], K, t)
            j1 = j + 1
            while j1 < nnz and idx[j1] < (t + 1) * K:
                j1 += 1
            p0 = x.ptr[t]
            ssvm_chain_scatter(x.idx + p0, NULL if x.val == NULL else x.val + p0,
                               x.ptr[t + 1] - p0, K, idx + j, t * K, val + j, j1 - j, out,
                               out2, c2)
            for q in range(j, j1):
                k = idx[q] - t * K
                a = val[q]
                out[self.L.off_bias + k] += a
                if t == 0:
                    out[self.L.off_start + k] += a
                if t == x.T - 1:
                    out[self.L.off_end + k] += a
                if out2 != NULL:
                    out2[self.L.off_bias + k] += c2 * a
                    if t == 0:
                        out2[self.L.off_start + k] += c2 * a
                    if t == x.T - 1:
                        out2[self.L.off_end + k] += c2 * a
            j = j1
        for q in range(j, nnz):                 # transitions: their own entries of w
            g = self.L.off_trans + idx[q] - TK
            out[g] += val[q]
            if out2 != NULL:
                out2[g] += c2 * val[q]
        return 0

    def __reduce__(self):
        return (ChainOracle, (self.L.K, self.L.F, np.asarray(self.tok_ptr),
                              np.asarray(self.feat_idx), np.asarray(self.feat_val),
                              np.asarray(self.seq_ptr), np.asarray(self.labels),
                              self.sparse_blocks, self.max_coords > 0))

    cdef void prefetch(self, intp_t i) noexcept nogil:
        """The start of the sequence's feature indices (the hardware's stream
        prefetcher brings the rest as they are read in order), its feature values
        unless all are 1, its labels, and its Gram with compact blocks."""
        cdef intp_t t0 = self.seq_ptr[i], T = self.seq_ptr[i + 1] - t0
        cdef intp_t p0 = self.tok_ptr[t0], p1 = self.tok_ptr[t0 + T]
        ssvm_prefetch(&self.tok_ptr[t0], (T + 1) * sizeof(intp_t))
        # 64 indices, 4 cache lines: hinting all of them measured 2-3% slower passes,
        # serial and pipelined, on OCR-large (binary features; real-valued ones keep
        # the whole hint for their values, not measured)
        ssvm_prefetch(&self.feat_idx[p0], min(p1 - p0, 64) * sizeof(int32_t))
        if not self._binary:
            ssvm_prefetch(&self.feat_val[p0], (p1 - p0) * sizeof(float64_t))
        ssvm_prefetch(&self.labels[t0], T * sizeof(int32_t))
        if self.max_coords > 0 and self._gram_ptr[i + 1] > self._gram_ptr[i]:
            ssvm_prefetch(&self._grams[self._gram_ptr[i]], T * T * sizeof(float64_t))

    cdef intp_t block_coords(self, intp_t i) noexcept nogil:
        cdef intp_t T = self.seq_ptr[i + 1] - self.seq_ptr[i]
        if self.max_coords <= 0:
            return 0
        return T * self.L.K + (self.L.K * self.L.K if T >= 2 else 0)

    cdef int coord_scores(self, intp_t i, const float64_t* w,
                          float64_t* theta) except -1 nogil:
        cdef _Tokens x = self._tokens(i)
        _unaries(&self.L, &x, w, theta)
        if x.T >= 2:
            memcpy(theta + x.T * self.L.K, w + self.L.off_trans,
                   self.L.K * self.L.K * sizeof(float64_t))
        return 0

    cdef float64_t coord_sqnorm(self, intp_t i, const int32_t* idx, const float64_t* val,
                                intp_t nnz) except? -1 nogil:
        """sum over token-label entries (t, k), (s, k) of one state of
        G[t, s] e[t, k] e[s, k], plus the transitions' squares (``_sqnorm_by_rows``
        for a sequence without a stored Gram).  Each entry is linked to the next
        entry of its state, so the pairs cost O(n_tok + K + same-state pairs) for
        the n_tok token-label entries, not O(n_tok^2)."""
        cdef intp_t T = self.seq_ptr[i + 1] - self.seq_ptr[i], K = self.L.K, TK = T * K
        cdef intp_t j, j2, k, t = 0, n_tok = 0
        cdef const float64_t* G
        cdef const float64_t* Gt
        cdef float64_t total = 0.0, cross = 0.0, row
        cdef intp_t small[_SQNORM_STACK]
        cdef intp_t* work = small
        cdef intp_t* tok                        # the token of entry j
        cdef intp_t* nxt                        # the next entry of its state (-1: none)
        cdef intp_t* last                       # per state, its first entry seen from the end
        if self._gram_ptr[i + 1] == self._gram_ptr[i]:      # no stored Gram
            return self._sqnorm_by_rows(i, idx, val, nnz)
        while n_tok < nnz and idx[n_tok] < TK:
            n_tok += 1
        if 2 * n_tok + K > _SQNORM_STACK:
            work = <intp_t*> checked_malloc((2 * n_tok + K) * sizeof(intp_t),
                                            "Gram norm workspace")
        tok, nxt, last = work, work + n_tok, work + 2 * n_tok
        for k in range(K):
            last[k] = -1
        for j in range(n_tok):
            t = _token_of(idx[j], K, t)
            tok[j] = t
        for j in range(n_tok - 1, -1, -1):
            k = idx[j] - tok[j] * K
            nxt[j] = last[k]
            last[k] = j
        G = &self._grams[self._gram_ptr[i]]
        for j in range(n_tok):
            Gt = G + tok[j] * T
            total += Gt[tok[j]] * val[j] * val[j]
            row = 0.0
            j2 = nxt[j]
            while j2 >= 0:                      # the same state at a later token
                row += Gt[tok[j2]] * val[j2]
                j2 = nxt[j2]
            cross += row * val[j]
        if work != small:
            free(work)
        total += 2.0 * cross
        for j in range(n_tok, nnz):
            total += val[j] * val[j]
        return total

    cdef float64_t _sqnorm_by_rows(self, intp_t i, const int32_t* idx, const float64_t* val,
                                   intp_t nnz) except? -1 nogil:
        """||A_i e||^2 in time and memory linear in the direction's token rows (for
        sequences without a stored Gram, see ``sequence_grams``): per state k,
        ||sum_t e[t, k] x_t||^2 summed in an F-vector, plus (sum_t e[t, k])^2
        (bias) and the squares of the start and end entries, plus the
        transitions' squares."""
        cdef _Tokens x = self._tokens(i)
        cdef intp_t T = x.T, K = self.L.K, TK = x.T * self.L.K, F = self.L.F
        cdef intp_t j, q, k, p, t = 0, n_tok = 0
        cdef float64_t total = 0.0, bias, a
        while n_tok < nnz and idx[n_tok] < TK:
            n_tok += 1
        # the token-label entries grouped by state (a counting sort)
        cdef intp_t* first = <intp_t*> checked_malloc(
            (K + 1) * sizeof(intp_t), "Gram norm workspace")
        cdef intp_t* order = <intp_t*> checked_malloc(
            (n_tok + 1) * sizeof(intp_t), "Gram norm workspace")
        cdef intp_t* token = <intp_t*> checked_malloc(
            (n_tok + 1) * sizeof(intp_t), "Gram norm workspace")
        cdef float64_t* u = <float64_t*> checked_malloc(
            (F + 1) * sizeof(float64_t), "Gram norm workspace")
        memset(first, 0, (K + 1) * sizeof(intp_t))
        memset(u, 0, (F + 1) * sizeof(float64_t))
        for j in range(n_tok):
            t = _token_of(idx[j], K, t)
            token[j] = t
            first[idx[j] - t * K + 1] += 1
        for k in range(K):
            first[k + 1] += first[k]
        for j in range(n_tok):
            k = idx[j] - token[j] * K
            order[first[k]] = j
            first[k] += 1
        q = 0
        for k in range(K):                      # first[k] is now where state k ends
            bias = 0.0
            for j in range(q, first[k]):
                a = val[order[j]]
                t = token[order[j]]
                bias += a
                if t == 0:
                    total += a * a
                if t == T - 1:
                    total += a * a
                for p in range(x.ptr[t], x.ptr[t + 1]):
                    u[x.idx[p]] += a * _value(&x, p)
            total += bias * bias
            for j in range(q, first[k]):        # the squares of u, zeroed for the next state
                t = token[order[j]]
                for p in range(x.ptr[t], x.ptr[t + 1]):
                    total += u[x.idx[p]] * u[x.idx[p]]
                    u[x.idx[p]] = 0.0
            q = first[k]
        free(first)
        free(order)
        free(token)
        free(u)
        for j in range(n_tok, nnz):
            total += val[j] * val[j]
        return total

    cdef intp_t coord_expand(self, intp_t i, const int32_t* idx, const float64_t* val,
                             intp_t nnz, int32_t* out_idx, float64_t* out_val) except -1 nogil:
        cdef _Tokens x = self._tokens(i)
        cdef intp_t T = x.T, K = self.L.K, TK = x.T * self.L.K, t = 0, j, k, p, m = 0
        cdef float64_t a
        for j in range(nnz):
            a = val[j]
            if idx[j] >= TK:
                out_idx[m] = <int32_t> (self.L.off_trans + idx[j] - TK)
                out_val[m] = a
                m += 1
                continue
            t = _token_of(idx[j], K, t)
            k = idx[j] - t * K
            for p in range(x.ptr[t], x.ptr[t + 1]):
                out_idx[m] = <int32_t> (x.idx[p] * K + k)
                out_val[m] = a * _value(&x, p)
                m += 1
            out_idx[m] = <int32_t> (self.L.off_bias + k)
            out_val[m] = a
            m += 1
            if t == 0:
                out_idx[m] = <int32_t> (self.L.off_start + k)
                out_val[m] = a
                m += 1
            if t == T - 1:
                out_idx[m] = <int32_t> (self.L.off_end + k)
                out_val[m] = a
                m += 1
        return m

    cdef float64_t coord_dot(self, intp_t i, const int32_t* idx, const float64_t* val,
                             intp_t nnz, const float64_t* w, int32_t* work_idx,
                             float64_t* work_val) except? -1 nogil:
        """<A_i e, w>: coord_expand's entries read from w as they are made (no scratch)."""
        cdef _Tokens x = self._tokens(i)
        cdef intp_t T = x.T, K = self.L.K, TK = x.T * self.L.K, t = 0, j, k, p
        cdef float64_t total = 0.0, s
        for j in range(nnz):
            if idx[j] >= TK:
                total += val[j] * w[self.L.off_trans + idx[j] - TK]
                continue
            t = _token_of(idx[j], K, t)
            k = idx[j] - t * K
            s = w[self.L.off_bias + k]
            if t == 0:
                s += w[self.L.off_start + k]
            if t == T - 1:
                s += w[self.L.off_end + k]
            if x.val == NULL:
                for p in range(x.ptr[t], x.ptr[t + 1]):
                    s += w[x.idx[p] * K + k]
            else:
                for p in range(x.ptr[t], x.ptr[t + 1]):
                    s += x.val[p] * w[x.idx[p] * K + k]
            total += val[j] * s
        return total

    def block_support(self, i):
        """Sorted feature indices psi_i(y) can touch for any y (None: dense blocks).

        Emission entries ``f * K + k`` of every feature f active in sequence i
        and every state k, the K x K transitions if the sequence has two
        tokens or more, and the 3 K bias, start and end entries.
        """
        i = self._check_block(i)
        if not self.sparse_blocks:
            return None
        ptr, features = self._block_features
        cdef intp_t K = self.L.K
        emission = (features[ptr[i]:ptr[i + 1], None].astype(np.int32) * K
                    + np.arange(K, dtype=np.int32)).ravel()
        first = self.L.off_trans if self.seq_ptr[i + 1] - self.seq_ptr[i] > 1 else self.L.off_bias
        return np.concatenate([emission, np.arange(first, self.n_features, dtype=np.int32)])

    cdef inline _Tokens _tokens(self, intp_t i) noexcept nogil:
        cdef _Tokens x
        cdef intp_t t0 = self.seq_ptr[i]
        x.ptr = &self.tok_ptr[t0]
        x.idx = &self.feat_idx[0]
        x.val = NULL if self._binary else &self.feat_val[0]
        x.T = self.seq_ptr[i + 1] - t0
        return x

    cdef int solve(self, intp_t i, const float64_t* w, Corner* out) except -1 nogil:
        cdef _Tokens x = self._tokens(i)
        cdef const int32_t* y = &self.labels[self.seq_ptr[i]]
        cdef intp_t T = x.T, t, k, K = self.L.K
        cdef float64_t truth, best
        cdef float64_t* u = <float64_t*> checked_malloc(T * K * sizeof(float64_t),
                                                        "Viterbi unary table")
        try:
            _unaries(&self.L, &x, w, u)
            if out.theta != NULL:
                _write_theta(&self.L, u, w, T, out.theta)
            truth = _path_score(&self.L, u, w, y, T)
            for t in range(T):                  # loss augmentation, 1/T per error
                for k in range(K):
                    if k != y[t]:
                        u[t * K + k] += 1.0 / T
            _viterbi(&self.L, u, w, T, out.labels)
            best = u[(T - 1) * K + out.labels[T - 1]]
        finally:
            free(u)
        out.n_labels = T
        out.score = best - truth
        _write_answer(&self.L, &x, y, out)
        return 0

    cdef intp_t solve_many(self, intp_t i, const float64_t* w, intp_t k,
                           Corner* outs) except -1 nogil:
        """The argmax, then distinct labellings by decreasing max-marginal.

        The max-marginal of (t, s) is the best loss-augmented score of a
        labelling with y_t = s (forward plus backward messages); the second
        answer is the exact second-best labelling, the later ones the best
        labellings through the next-best (t, s) pairs that give new labellings.
        """
        cdef _Tokens x = self._tokens(i)
        cdef const int32_t* y = &self.labels[self.seq_ptr[i]]
        cdef intp_t T = x.T, K = self.L.K, t, s, j, q, got = 1, bt = 0, bs = 0
        cdef float64_t truth, best, mm
        cdef bint dup
        if k <= 1 or T * K <= 1:
            self.solve(i, w, &outs[0])
            return 1
        cdef float64_t* mem = NULL
        cdef char* used = NULL
        cdef float64_t *u, *f, *g               # the three tables of mem
        try:
            mem = <float64_t*> checked_malloc(3 * T * K * sizeof(float64_t),
                                              "max-marginal tables")
            used = <char*> checked_malloc(T * K, "max-marginal tables")
            u = mem
            f = mem + T * K
            g = mem + 2 * T * K
            _unaries(&self.L, &x, w, u)
            for j in range(k):
                if outs[j].theta != NULL:
                    _write_theta(&self.L, u, w, T, outs[j].theta)
            truth = _path_score(&self.L, u, w, y, T)
            for t in range(T):
                for s in range(K):
                    if s != y[t]:
                        u[t * K + s] += 1.0 / T
            for q in range(T * K):
                f[q] = u[q]
                used[q] = 0
            _viterbi(&self.L, f, w, T, outs[0].labels)
            _backward(&self.L, u, w, T, g)
            self._finish(&x, y, T, f[(T - 1) * K + outs[0].labels[T - 1]] - truth, &outs[0])
            for t in range(T):
                used[t * K + outs[0].labels[t]] = 1
            while got < k:
                best = -1e308
                bt = -1
                for t in range(T):
                    for s in range(K):
                        mm = f[t * K + s] + g[t * K + s]
                        if not used[t * K + s] and (bt < 0 or mm > best):
                            best, bt, bs = mm, t, s
                if bt < 0:
                    break
                _decode_through(&self.L, f, u, g, w, T, bt, bs, outs[got].labels)
                for t in range(T):
                    used[t * K + outs[got].labels[t]] = 1
                dup = False
                for j in range(got):
                    dup = True
                    for t in range(T):
                        if outs[j].labels[t] != outs[got].labels[t]:
                            dup = False
                            break
                    if dup:
                        break
                if not dup:
                    self._finish(&x, y, T, best - truth, &outs[got])
                    got += 1
        finally:
            free(mem)
            free(used)
        return got

    cdef void _finish(self, const _Tokens* x, const int32_t* y, intp_t T, float64_t score,
                      Corner* out) noexcept nogil:
        out.n_labels = T
        out.score = score
        _write_answer(&self.L, x, y, out)

    cdef int evaluate(self, intp_t i, const int32_t* labels, intp_t n_labels,
                      const float64_t* w, Corner* out) except -1 nogil:
        cdef _Tokens x = self._tokens(i)
        cdef intp_t t
        if n_labels != x.T:
            with gil:
                raise ValueError(f"labelling of length {n_labels} for sequence {i} "
                                 f"of length {x.T}")
        for t in range(n_labels):
            if labels[t] < 0 or labels[t] >= self.L.K:
                with gil:
                    raise ValueError(f"label {labels[t]} outside [0, {self.L.K})")
            out.labels[t] = labels[t]
        out.n_labels = n_labels
        out.loss = _write_psi(&self.L, &x, &self.labels[self.seq_ptr[i]], labels,
                              out) / <float64_t> x.T
        out.score = out.loss - dot_gather(w, out.psi_idx, out.psi_val, out.psi_nnz)
        if out.coord_idx != NULL:
            _write_coords(self.L.K, x.T, &self.labels[self.seq_ptr[i]], labels, out)
        return 0


def decode(const float64_t[::1] w, intp_t n_states, intp_t n_features,
           const intp_t[::1] tok_ptr, const int32_t[::1] feat_idx,
           const float64_t[::1] feat_val, const intp_t[::1] seq_ptr):
    """argmax_y <w, phi(x, y)> for every sequence; labels of all tokens."""
    cdef _Layout L = _layout(n_states, n_features)
    cdef intp_t n = seq_ptr.shape[0] - 1, i, T_max = 1
    cdef intp_t n_tokens = seq_ptr[n]
    out = np.zeros(n_tokens, dtype=np.int32)
    cdef int32_t[::1] o = out
    cdef _Tokens x
    cdef float64_t* u
    if n_tokens == 0:
        return out
    for i in range(n):
        T_max = max(T_max, seq_ptr[i + 1] - seq_ptr[i])
    u = <float64_t*> checked_malloc(T_max * n_states * sizeof(float64_t), "Viterbi unary table")
    x.idx = &feat_idx[0] if feat_idx.shape[0] else NULL
    x.val = &feat_val[0] if feat_val.shape[0] else NULL
    try:
        with nogil:
            for i in range(n):
                x.ptr = &tok_ptr[seq_ptr[i]]
                x.T = seq_ptr[i + 1] - seq_ptr[i]
                _unaries(&L, &x, &w[0], u)
                _viterbi(&L, u, &w[0], x.T, &o[seq_ptr[i]])
    finally:
        free(u)
    return out
