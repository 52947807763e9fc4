"""Block storage as a type: ``DenseStore``, ``SparseStore`` and ``CompactStore``.

A store owns the per-block dual vectors w_i of a ``SolverState`` (see
``_storage.pxd`` for the layouts), the C algebra of a block step on them
(statistics of a direction, moves, dots, the corner frame, the box line
search's direction, cache hints) and their Python side: views
(``block_vector``, ``block_inner``), checks, conversion to and from the arrays
of a saved state, copies and pickling.  Every decision that depends on how the
blocks are kept is made here, once.
"""

import numpy as np

from libc.math cimport NAN
from libc.stdint cimport uint8_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, realloc

from ssvm_core._typedefs cimport float64_t, int32_t, intp_t
from ssvm_core._oracle cimport Corner, CornerBuffer, MaxOracle
from ssvm_core._atoms cimport ActiveSets, BlockAtoms, atom_clear, atom_scatter, psi_at
from ssvm_core._blocks cimport Primal, apply_delta, clear_psi, clip, corner_dense
from ssvm_core._linesearch cimport Breakpoint, box_search
from ssvm_core._vector cimport dot as vdot, dot_gather, ssvm_ctz64, ssvm_prefetch

cdef extern from *:
    int ssvm_popcount64 "__builtin_popcountll"(uint64_t x) noexcept nogil

STORAGES = ("dense", "sparse", "compact")


# ---------------------------------------------------------------------------
# Kernels of dense (support NULL) and sparse blocks.

cdef inline void affine_stats(const float64_t* wi, const int32_t* support, intp_t m,
                              float64_t a, const float64_t* s, float64_t c,
                              const float64_t* w, float64_t* dot_out,
                              float64_t* sqnorm) noexcept nogil:
    """For e = a w_i + c s (s dense, length d): dot_out = <e, w> and sqnorm = ||e||^2.

    Two partial sums each, so the additions pipeline.
    """
    cdef float64_t d0 = 0.0, d1 = 0.0, q0 = 0.0, q1 = 0.0, e0, e1
    cdef intp_t k, m2 = m - m % 2
    if support == NULL:
        for k in range(0, m2, 2):
            e0 = a * wi[k] + c * s[k]
            e1 = a * wi[k + 1] + c * s[k + 1]
            d0 += e0 * w[k]
            d1 += e1 * w[k + 1]
            q0 += e0 * e0
            q1 += e1 * e1
        for k in range(m2, m):
            e0 = a * wi[k] + c * s[k]
            d0 += e0 * w[k]
            q0 += e0 * e0
    else:
        for k in range(0, m2, 2):
            e0 = a * wi[k] + c * s[support[k]]
            e1 = a * wi[k + 1] + c * s[support[k + 1]]
            d0 += e0 * w[support[k]]
            d1 += e1 * w[support[k + 1]]
            q0 += e0 * e0
            q1 += e1 * e1
        for k in range(m2, m):
            e0 = a * wi[k] + c * s[support[k]]
            d0 += e0 * w[support[k]]
            q0 += e0 * e0
    dot_out[0] = d0 + d1
    sqnorm[0] = q0 + q1


cdef inline void affine_move(float64_t* wi, const int32_t* support, intp_t m,
                             float64_t a, const float64_t* s, float64_t c,
                             Primal* p, float64_t avg_coef) noexcept nogil:
    """w_i += a w_i + c s; v gets the same change, w = clip(v) follows it and
    avg_u += avg_coef * change."""
    cdef float64_t delta
    cdef intp_t k, g
    if support == NULL and p.lower == NULL:
        if p.avg_u == NULL:
            for k in range(m):
                delta = a * wi[k] + c * s[k]
                wi[k] += delta
                p.v[k] += delta
        else:
            for k in range(m):
                delta = a * wi[k] + c * s[k]
                wi[k] += delta
                p.v[k] += delta
                p.avg_u[k] += avg_coef * delta
        return
    for k in range(m):
        g = k if support == NULL else support[k]
        delta = a * wi[k] + c * s[g]
        wi[k] += delta
        p.v[g] += delta
        if p.lower != NULL:
            p.w[g] = clip(p.v[g], p.lower[g], p.upper[g])
        if p.avg_u != NULL:
            p.avg_u[g] += avg_coef * delta


cdef inline float64_t affine_box_step(const float64_t* wi, const int32_t* support, intp_t m,
                                      float64_t a, const float64_t* s, float64_t c,
                                      const Primal* p, float64_t delta_ell, float64_t lam,
                                      float64_t gamma_max, float64_t* work,
                                      float64_t* gain) noexcept nogil:
    """Exact step along e = a w_i + c s: e into work[0..m) on the block's
    features, then ``box_search`` at p.v with the breakpoints in the rest of
    ``work`` (LINE_WORK * m doubles)."""
    cdef intp_t k
    if support == NULL:
        for k in range(m):
            work[k] = a * wi[k] + c * s[k]
    else:
        for k in range(m):
            work[k] = a * wi[k] + c * s[support[k]]
    return box_search(p.v, p.lower, p.upper, support, work, m, delta_ell, lam,
                      gamma_max, <Breakpoint*> (work + m), gain)


cdef inline const int32_t* _features(const int32_t* support, intp_t start) noexcept nogil:
    """The features of a block starting at ``start`` (NULL: a dense block)."""
    if support == NULL:
        return NULL
    return support + start


cdef inline void _scatter(float64_t* x, const int32_t* idx, const float64_t* val,
                          intp_t nnz) noexcept nogil:
    cdef intp_t q
    for q in range(nnz):
        x[idx[q]] += val[q]


cdef inline void _unscatter(float64_t* x, const int32_t* idx, intp_t nnz) noexcept nogil:
    cdef intp_t q
    for q in range(nnz):
        x[idx[q]] = 0.0


cdef inline void _scatter2(float64_t* x, const int32_t* idx, const float64_t* val,
                           intp_t nnz, intp_t slot) noexcept nogil:
    cdef intp_t q
    for q in range(nnz):
        x[2 * idx[q] + slot] += val[q]


cdef inline void _unscatter2(float64_t* x, const int32_t* idx, intp_t nnz) noexcept nogil:
    cdef intp_t q
    for q in range(nnz):
        x[2 * idx[q]] = 0.0
        x[2 * idx[q] + 1] = 0.0


cdef inline void _dot2(const float64_t* x, const int32_t* idx, const float64_t* val,
                       intp_t nnz, float64_t* out0, float64_t* out1) noexcept nogil:
    """out0 = sum_q x[2 idx[q]] val[q] and out1 = sum_q x[2 idx[q] + 1] val[q]."""
    cdef float64_t a0 = 0.0, a1 = 0.0, b0 = 0.0, b1 = 0.0
    cdef intp_t q, n2 = nnz - nnz % 2
    cdef const float64_t* xq
    for q in range(0, n2, 2):
        xq = x + 2 * idx[q]
        a0 += xq[0] * val[q]
        b0 += xq[1] * val[q]
        xq = x + 2 * idx[q + 1]
        a1 += xq[0] * val[q + 1]
        b1 += xq[1] * val[q + 1]
    for q in range(n2, nnz):
        xq = x + 2 * idx[q]
        a0 += xq[0] * val[q]
        b0 += xq[1] * val[q]
    out0[0] = a0 + a1
    out1[0] = b0 + b1


# The replay's algebra on directions kept in features as COO (sparse and compact
# stores; see Formed).

cdef inline void _coo_gram_row(const Formed* e, intp_t j, const int32_t* p_idx,
                               const float64_t* p_val, intp_t p_nnz, float64_t* ee,
                               float64_t* pe, float64_t* x) noexcept nogil:
    """ee[m] = <e_j, e_m> and pe[m] = <P_j, e_m> for m < j: e_j and P_j side by side in
    ``x`` (2 d zeros, again on return), so each e_m is read once."""
    cdef intp_t m
    _scatter2(x, e[j].x_idx, e[j].x_val, e[j].x_nnz, 0)
    _scatter2(x, p_idx, p_val, p_nnz, 1)
    for m in range(j):
        _dot2(x, e[m].x_idx, e[m].x_val, e[m].x_nnz, &ee[m], &pe[m])
    _unscatter2(x, e[j].x_idx, e[j].x_nnz)
    _unscatter2(x, p_idx, p_nnz)


cdef inline void _coo_move_range(const Formed* f, float64_t step, float64_t avg_coef,
                                 intp_t lo, intp_t hi, Primal* p) noexcept nogil:
    """Features [lo, hi) of v and avg_u += step f (avg_u: times avg_coef)."""
    cdef float64_t delta
    cdef intp_t q, g
    for q in range(f.x_nnz):
        g = f.x_idx[q]
        if lo <= g < hi:
            delta = step * f.x_val[q]
            p.v[g] += delta
            if p.avg_u != NULL:
                p.avg_u[g] += avg_coef * delta


cdef class DirectionBuffer:
    """Owner of one ``Direction`` and its scratch (``BlockStore.direction_buffer``)."""

    def __cinit__(self):
        self.d.block = -1
        self.d.a = self.d.c = 0.0
        self.d.s = NULL
        self.d.dot = NAN
        self.d.sqnorm = 0.0
        self.d.nnz = 0
        self.d.idx = self.d.ex_idx = self.d.pos = NULL
        self.d.val = self.d.ex_val = NULL
        self._arrays = ()


cdef class BlockStore:
    """The blocks w_i of a dual point, in one of the storages (abstract base).

    Build one with ``store_for_oracle``, ``store_from_layout`` or
    ``store_from_arrays``.

    Attributes
    ----------
    values : ndarray (ptr[n_blocks],)
        Every block's entries, block i at ``values[ptr[i]:ptr[i+1]]``.
    ptr : ndarray (n_blocks + 1,) of intp
        Block boundaries in ``values``.
    support : ndarray of int32
        Sparse blocks: the feature of every entry (empty for other storages).
    mask, mask_ptr : ndarray of uint64, intp
        Compact blocks: block i's bitmask of the coordinates that may be
        nonzero, ``mask[mask_ptr[i]:mask_ptr[i+1]]`` (empty for other storages).
    """

    storage = None

    def __init__(self, intp_t n_blocks, intp_t n_features, values, ptr, support=None):
        self.n_blocks = n_blocks
        self.n_features = n_features
        self.ptr = np.ascontiguousarray(ptr, dtype=np.intp)
        self.support = (np.zeros(0, dtype=np.int32) if support is None
                        else np.ascontiguousarray(support, dtype=np.int32))
        self.mask = np.zeros(0, dtype=np.uint64)
        self.mask_ptr = np.zeros(0, dtype=np.intp)
        self._ptr_view = self.ptr
        self._ptr = &self._ptr_view[0]
        self.values = np.array(values, dtype=np.float64)      # owned: a copy
        self._values_view = self.values
        self._values = (<float64_t*> &self._values_view[0]) if self.values.shape[0] else NULL

    def __reduce__(self):
        return (store_from_arrays, (self.n_blocks, self.n_features, self.values, self.ptr,
                                    self.support, self.storage == "compact"),
                None if self.storage != "compact" else {"mask": self.mask})

    def __setstate__(self, state):
        """Pickles made with a mask keep it (it may hold atoms' coordinates)."""
        self.set_mask(state["mask"])

    def copy(self) -> BlockStore:
        """An independent copy (the values and the mask are copied)."""
        new = store_from_arrays(self.n_blocks, self.n_features, self.values, self.ptr,
                                self.support, self.storage == "compact")
        new.set_mask(self.mask)
        return new

    def to_arrays(self) -> dict:
        """The arrays a saved state keeps: ``block_values``, ``block_ptr``,
        ``block_support`` (the mask is derived, rebuilt on load)."""
        return {"block_values": self.values, "block_ptr": self.ptr,
                "block_support": self.support}

    def scale(self, float64_t factor) -> None:
        """w_i *= factor in every block (the zeros, hence a compact mask, stay)."""
        cdef intp_t k
        for k in range(self._ptr[self.n_blocks]):
            self._values[k] *= factor

    def layout_difference(self, layout, bint storage_only=False):
        """How an ``oracle_layout`` differs from these blocks' (None if it does not);
        ``storage_only``: only whether the oracle offers the same kind of basis."""
        ptr, support, compact = layout
        storage = "compact" if compact else ("dense" if len(support) == 0 else "sparse")
        if storage != self.storage and "compact" in (storage, self.storage):
            return (f"the state keeps {self.storage} blocks, the oracle "
                    f"{'offers' if compact else 'does not offer'} compact ones")
        if storage_only:
            return None
        if not (np.array_equal(ptr, self.ptr) and np.array_equal(support, self.support)):
            return "state's block supports differ from the oracle's"
        return None

    @property
    def needs_basis(self) -> bool:
        """Whether what involves the features needs the oracle (its block basis)."""
        return False

    def set_mask(self, mask) -> None:
        """Restore a mask kept elsewhere (a pickle); only compact stores have one."""

    @property
    def nbytes(self) -> int:
        """Bytes of the block arrays (values, layout, supports and mask)."""
        return int(self.values.nbytes + self.ptr.nbytes + self.support.nbytes
                   + self.mask.nbytes + self.mask_ptr.nbytes)

    def index(self, atoms=None) -> None:
        """Rebuild what is derived from the values (and the atoms): a compact mask."""

    def check_basis(self, oracle) -> None:
        """Raise ``ValueError`` if the kernels cannot step these blocks with ``oracle``."""

    def frame_scratch(self, MaxOracle oracle):
        """Zeroed scratch for a corner in the blocks' frame (see ``frame``)."""
        return np.zeros(max(oracle.n_features, 1))

    @property
    def frame_width(self) -> int:
        """Entries of a vector in the largest block's frame (an atom's psi bound)."""
        return self.n_features

    def corner_buffer(self, MaxOracle oracle, bint psi=True) -> CornerBuffer:
        """A corner buffer whose answers carry what steps on these blocks read."""
        return CornerBuffer(oracle, False, psi)

    def new_active_sets(self, intp_t cache_size=50, bint psi_float32=False) -> ActiveSets:
        """Empty active sets whose atoms live in the blocks' frame."""
        return ActiveSets(self.n_blocks, cache_size, psi_float32, False)

    def atoms_problem(self, ActiveSets atoms):
        """Why ``atoms`` cannot belong to these blocks (None if they can)."""
        if atoms.n_blocks != self.n_blocks or atoms.compact:
            return (f"the active sets have {atoms.n_blocks} blocks (compact: "
                    f"{atoms.compact}), the state {self.n_blocks} ({self.storage} blocks)")
        return None

    def direction_buffer(self, MaxOracle oracle, bint box) -> DirectionBuffer:
        """A direction (and its scratch) for steps on these blocks with ``oracle``."""
        return DirectionBuffer()

    def block_vector(self, intp_t i, basis=None):
        """w_i as a dense vector (compact blocks need their oracle, ``basis``)."""
        raise NotImplementedError

    def atom_vector(self, intp_t i, basis=None):
        """w_i in the frame the atoms are kept in (see ``ActiveSets``)."""
        return self.block_vector(i, basis)

    def block_inner(self, w, basis=None):
        """<w_i, w> of every block, shape (n_blocks,)."""
        raise NotImplementedError

    def total(self, basis=None):
        """sum_i w_i, a dense d-vector."""
        raise NotImplementedError

    def problems(self) -> list:
        """What is wrong with the layout or the values (empty if nothing)."""
        problems = self._layout_problems()
        if not np.all(np.isfinite(self.values)):
            problems.append("block_values has non-finite entries")
        return problems

    def _layout_problems(self) -> list:
        return []

    @property
    def replay_problem(self):
        """Why the exact parallel replay (``_batch.replay_rounds``) cannot step these
        blocks (None: it can)."""
        return f"{self.storage} blocks are not covered (dense, sparse and compact blocks are)"

    def replay_slots(self, MaxOracle oracle) -> tuple:
        """Entries per step of the replay's slots of a ``Formed`` direction: ``(dense,
        coords, expand, frame)``, features kept densely, block coordinates, their
        expansion to features, and the corner frame's scratch (every entry >= 1)."""
        raise ValueError(self.replay_problem)

    def set_block(self, intp_t i, values) -> None:
        """Block i's stored values (the layout of ``values[ptr[i]:ptr[i+1]]``)."""
        start, stop = self.ptr[i], self.ptr[i + 1]
        values = np.asarray(values, dtype=np.float64)
        if values.shape != (stop - start,):
            raise ValueError(f"block {i} holds {stop - start} values, got shape "
                             f"{values.shape}")
        np.copyto(self.values[start:stop], values)

    def add_block(self, intp_t i, values, out, basis=None) -> None:
        """out += the feature vector of block i with the stored ``values`` (its layout,
        not necessarily the block's current values); compact blocks need ``basis``."""
        raise NotImplementedError

    # C algebra (see _storage.pxd); the base class is never stepped on.
    cdef void form(self, intp_t i, float64_t a, const float64_t* s, float64_t c,
                   Direction* e) noexcept nogil:
        pass

    cdef int stats(self, MaxOracle oracle, intp_t i, float64_t a, const float64_t* s,
                   float64_t c, const float64_t* w, const float64_t* theta,
                   Direction* e) except -1 nogil:
        return 0

    cdef int move(self, MaxOracle oracle, Direction* e, float64_t factor, Primal* p,
                  float64_t avg_coef) except -1 nogil:
        return 0

    cdef float64_t box_step(self, MaxOracle oracle, Direction* e, float64_t factor,
                            const Primal* p, float64_t delta_ell, float64_t lam,
                            float64_t gamma_max, float64_t* work,
                            float64_t* gain) except? -1 nogil:
        return 0.0

    cdef float64_t dot(self, intp_t i, const float64_t* w,
                       const float64_t* theta) noexcept nogil:
        return 0.0

    cdef const float64_t* frame(self, const Corner* c, intp_t i,
                                float64_t* s) noexcept nogil:
        return s

    cdef void clear_frame(self, const Corner* c, float64_t* s) noexcept nogil:
        pass

    cdef void mark(self, intp_t i, const int32_t* idx, intp_t nnz) noexcept nogil:
        pass

    cdef const float64_t* atom_frame(self, MaxOracle oracle, intp_t i, const float64_t* w,
                                     float64_t* theta) except? NULL nogil:
        return w

    cdef const float64_t* answer_frame(self, const Corner* c,
                                       const float64_t* w) noexcept nogil:
        return w

    cdef Entries entries(self, const Corner* c) noexcept nogil:
        """The corner's vector as an atom keeps it: psi (sparse, or dense values)."""
        return Entries(c.psi_idx, c.psi_val,
                       self.n_features if c.psi_idx == NULL else c.psi_nnz)

    cdef int atom_gram(self, MaxOracle oracle, intp_t i, const BlockAtoms* blk,
                       float64_t* s, float64_t* G, Direction* e) except -1 nogil:
        return 0

    cdef void prefetch(self, intp_t i) noexcept nogil:
        pass

    cdef void prefetch_mask(self, intp_t i) noexcept nogil:
        pass

    cdef int replay_form(self, MaxOracle oracle, intp_t i, const Corner* c, float64_t coef,
                         const int32_t* p_idx, const float64_t* p_val, intp_t p_nnz,
                         float64_t* s, const float64_t* w0, Formed* f, float64_t* sqnorm,
                         float64_t* dot_w0) except -1 nogil:
        return 0

    cdef int replay_truth(self, MaxOracle oracle, intp_t i, const float64_t* w0, Formed* f,
                          float64_t* sqnorm, float64_t* dot_w0) except -1 nogil:
        return 0

    # Kept directions as coordinate lists of features (x_idx, x_val), as the sparse
    # and compact stores keep them; the dense store overrides these with its rows.
    cdef void replay_gram_row(self, const Formed* e, intp_t j, const int32_t* p_idx,
                              const float64_t* p_val, intp_t p_nnz, float64_t* ee,
                              float64_t* pe, float64_t* x) noexcept nogil:
        """ee[m] = <e_j, e_m> and pe[m] = <P_j, e_m> for m < j: e_j and P_j side by side
        in ``x`` (2 d zeros, again on return), so each e_m is read once."""
        _coo_gram_row(e, j, p_idx, p_val, p_nnz, ee, pe, x)

    cdef const float64_t* replay_load(self, const Formed* f, float64_t* x) noexcept nogil:
        """f's features scattered into ``x`` (d zeros; ``replay_unload`` clears them)."""
        _scatter(x, f.x_idx, f.x_val, f.x_nnz)
        return x

    cdef void replay_unload(self, const Formed* f, float64_t* x) noexcept nogil:
        _unscatter(x, f.x_idx, f.x_nnz)

    cdef float64_t replay_dot(self, const float64_t* x, const Formed* f) noexcept nogil:
        """<x, f> for x a loaded direction (``replay_load``)."""
        return dot_gather(x, f.x_idx, f.x_val, f.x_nnz)

    cdef void replay_move(self, const Formed* f, float64_t step, float64_t avg_coef,
                          intp_t lo, intp_t hi, bint own, Primal* p) noexcept nogil:
        pass


cdef inline int _spent(const Direction* e) except -1 nogil:
    if e.block < 0:
        with gil:
            raise RuntimeError("this direction was already moved along (a move consumes "
                               "it): form it again")
    return 0


cdef class DenseStore(BlockStore):
    """Every block keeps all n_features entries (entry k is feature k)."""

    storage = "dense"

    def __init__(self, intp_t n_blocks, intp_t n_features, values, ptr, support=None):
        super().__init__(n_blocks, n_features, values, ptr, support)
        self._support_view = self.support
        self._support = &self._support_view[0] if self.support.shape[0] else NULL

    def block_vector(self, intp_t i, basis=None):
        return np.array(self.values[self.ptr[i]:self.ptr[i + 1]])

    def block_inner(self, w, basis=None):
        return self.values.reshape(self.n_blocks, self.n_features) @ w

    def total(self, basis=None):
        return self.values.reshape(self.n_blocks, self.n_features).sum(axis=0)

    def _layout_problems(self) -> list:
        if not np.array_equal(self.ptr, np.arange(self.n_blocks + 1) * self.n_features):
            return ["dense blocks must have n_features entries each"]
        return []

    @property
    def replay_problem(self):
        return None

    def replay_slots(self, MaxOracle oracle) -> tuple:
        d = max(self.n_features, 1)
        return (d, 1, 1, d)

    def add_block(self, intp_t i, values, out, basis=None) -> None:
        out += values

    cdef void form(self, intp_t i, float64_t a, const float64_t* s, float64_t c,
                   Direction* e) noexcept nogil:
        e.block, e.a, e.s, e.c, e.nnz, e.dot = i, a, s, c, 0, NAN

    cdef int stats(self, MaxOracle oracle, intp_t i, float64_t a, const float64_t* s,
                   float64_t c, const float64_t* w, const float64_t* theta,
                   Direction* e) except -1 nogil:
        """e = a w_i + c s with <e, w> and ||e||^2 (w must be given)."""
        e.block, e.a, e.s, e.c, e.nnz = i, a, s, c, 0
        affine_stats(self._values + self._ptr[i],
                     _features(self._support, self._ptr[i]),
                     self._ptr[i + 1] - self._ptr[i], a, s, c, w, &e.dot, &e.sqnorm)
        return 0

    cdef int move(self, MaxOracle oracle, Direction* e, float64_t factor, Primal* p,
                  float64_t avg_coef) except -1 nogil:
        """w_i += factor e; v, w = clip(v) and the average follow; e is spent."""
        cdef intp_t i = e.block
        _spent(e)
        affine_move(self._values + self._ptr[i],
                    _features(self._support, self._ptr[i]),
                    self._ptr[i + 1] - self._ptr[i], factor * e.a, e.s, factor * e.c, p,
                    avg_coef)
        e.block = -1
        return 0

    cdef float64_t box_step(self, MaxOracle oracle, Direction* e, float64_t factor,
                            const Primal* p, float64_t delta_ell, float64_t lam,
                            float64_t gamma_max, float64_t* work,
                            float64_t* gain) except? -1 nogil:
        """The exact step of the box-constrained dual along factor e (``box_search``);
        ``work`` holds LINE_WORK * n_features doubles."""
        cdef intp_t i = e.block
        _spent(e)
        return affine_box_step(self._values + self._ptr[i],
                               _features(self._support, self._ptr[i]),
                               self._ptr[i + 1] - self._ptr[i], factor * e.a, e.s,
                               factor * e.c, p, delta_ell, lam, gamma_max, work, gain)

    cdef float64_t dot(self, intp_t i, const float64_t* w,
                       const float64_t* theta) noexcept nogil:
        cdef const float64_t* wi = self._values + self._ptr[i]
        cdef intp_t m = self._ptr[i + 1] - self._ptr[i]
        if self._support == NULL:
            return vdot(wi, w, m)
        return dot_gather(w, self._support + self._ptr[i], wi, m)

    cdef const float64_t* frame(self, const Corner* c, intp_t i,
                                float64_t* s) noexcept nogil:
        return corner_dense(c, s)

    cdef void clear_frame(self, const Corner* c, float64_t* s) noexcept nogil:
        if c.psi_idx != NULL:
            clear_psi(c, s)

    cdef int atom_gram(self, MaxOracle oracle, intp_t i, const BlockAtoms* blk,
                       float64_t* s, float64_t* G, Direction* e) except -1 nogil:
        """G[k, m] = <psi_k, psi_m> of the block's atoms."""
        cdef intp_t K = blk.n, k, m, q
        cdef float64_t acc
        for m in range(K):
            atom_scatter(blk, m, 1.0, s)
            for k in range(m, K):
                acc = 0.0
                for q in range(blk.psi_off[k], blk.psi_off[k + 1]):
                    acc += psi_at(blk, q) * s[blk.psi_idx[q]]
                G[k * K + m] = acc
                G[m * K + k] = acc
            atom_clear(blk, m, s)
        return 0

    # The replay: a formed direction is a dense d-vector (w_i itself for the truth).
    cdef int replay_form(self, MaxOracle oracle, intp_t i, const Corner* c, float64_t coef,
                         const int32_t* p_idx, const float64_t* p_val, intp_t p_nnz,
                         float64_t* s, const float64_t* w0, Formed* f, float64_t* sqnorm,
                         float64_t* dot_w0) except -1 nogil:
        """e = w_i + coef P (P: the answer's psi, COO ``p_*``; empty for the truth) into
        f.dense, with ||e||^2 and <e, w0>; ``s``: d zeros (again on return)."""
        cdef const float64_t* wi = self._values + self._ptr[i]
        cdef float64_t* e = f.dense
        cdef intp_t g, d = self.n_features
        cdef float64_t acc = 0.0
        f.block = i
        _scatter(s, p_idx, p_val, p_nnz)
        for g in range(d):
            e[g] = wi[g] + coef * s[g]
            acc += e[g] * e[g]
        _unscatter(s, p_idx, p_nnz)
        sqnorm[0] = acc
        dot_w0[0] = vdot(e, w0, d)
        return 0

    cdef int replay_truth(self, MaxOracle oracle, intp_t i, const float64_t* w0, Formed* f,
                          float64_t* sqnorm, float64_t* dot_w0) except -1 nogil:
        """G = w_i (f.dense points at the block), with ||G||^2 and <G, w0>."""
        cdef intp_t d = self.n_features
        f.block = i
        f.dense = self._values + self._ptr[i]
        sqnorm[0] = vdot(f.dense, f.dense, d)
        dot_w0[0] = vdot(f.dense, w0, d)
        return 0

    cdef void replay_gram_row(self, const Formed* e, intp_t j, const int32_t* p_idx,
                              const float64_t* p_val, intp_t p_nnz, float64_t* ee,
                              float64_t* pe, float64_t* x) noexcept nogil:
        """ee[m] = <e_j, e_m> and pe[m] = <P_j, e_m> for m < j."""
        cdef intp_t m, d = self.n_features
        for m in range(j):
            ee[m] = vdot(e[j].dense, e[m].dense, d)
            pe[m] = dot_gather(e[m].dense, p_idx, p_val, p_nnz)

    cdef const float64_t* replay_load(self, const Formed* f, float64_t* x) noexcept nogil:
        """f's features as a dense vector (its own; ``x`` is not used)."""
        return f.dense

    cdef float64_t replay_dot(self, const float64_t* x, const Formed* f) noexcept nogil:
        """<x, f> for x a loaded direction (``replay_load``)."""
        return vdot(x, f.dense, self.n_features)

    cdef void replay_move(self, const Formed* f, float64_t step, float64_t avg_coef,
                          intp_t lo, intp_t hi, bint own, Primal* p) noexcept nogil:
        """Features [lo, hi) of the block, v and avg_u += step f (avg_u: times
        avg_coef); the block's values move on the same range, ``own`` is not used."""
        cdef float64_t* wi = self._values + self._ptr[f.block]
        cdef const float64_t* u = f.dense
        cdef float64_t delta
        cdef intp_t g
        for g in range(lo, hi):
            delta = step * u[g]
            wi[g] += delta
            p.v[g] += delta
            if p.avg_u != NULL:
                p.avg_u[g] += avg_coef * delta


cdef class SparseStore(DenseStore):
    """Block i keeps the features ``support[ptr[i]:ptr[i+1]]`` (increasing)."""

    storage = "sparse"

    def block_vector(self, intp_t i, basis=None):
        start, stop = self.ptr[i], self.ptr[i + 1]
        out = np.zeros(self.n_features)
        out[self.support[start:stop]] = self.values[start:stop]
        return out

    def block_inner(self, w, basis=None):
        owner = np.repeat(np.arange(self.n_blocks), np.diff(self.ptr))
        return np.bincount(owner, weights=self.values * np.asarray(w)[self.support],
                           minlength=self.n_blocks)

    def total(self, basis=None):
        out = np.zeros(self.n_features)
        np.add.at(out, self.support, self.values)
        return out

    def replay_slots(self, MaxOracle oracle) -> tuple:
        return (1, 1, max(int(np.diff(self.ptr).max(initial=0)), 1),
                max(self.n_features, 1))

    def add_block(self, intp_t i, values, out, basis=None) -> None:
        out[self.support[self.ptr[i]:self.ptr[i + 1]]] += values

    def _layout_problems(self) -> list:
        if self.support.shape != self.values.shape:
            return [f"block_support has {self.support.shape[0]} entries, block_ptr "
                    f"says {self.values.shape[0]}"]
        if self.support.size and (self.support.min() < 0
                                  or self.support.max() >= self.n_features):
            return [f"block_support has feature indices outside [0, {self.n_features})"]
        return []

    # The replay: a formed direction is kept in features on the block's support
    # (x_idx points at the support; the truth is a copy of w_i, so the moves of
    # other feature ranges never read values being moved).
    cdef int replay_form(self, MaxOracle oracle, intp_t i, const Corner* c, float64_t coef,
                         const int32_t* p_idx, const float64_t* p_val, intp_t p_nnz,
                         float64_t* s, const float64_t* w0, Formed* f, float64_t* sqnorm,
                         float64_t* dot_w0) except -1 nogil:
        """e = w_i + coef P (P: the answer's psi, COO ``p_*``, within the block's
        support; empty for the truth) on the support, with ||e||^2 and <e, w0>;
        ``s``: d zeros (again on return; NULL: e = w_i)."""
        cdef const float64_t* wi = self._values + self._ptr[i]
        cdef const int32_t* sup = self._support + self._ptr[i]
        cdef intp_t k, m = self._ptr[i + 1] - self._ptr[i]
        cdef float64_t acc = 0.0, ek
        f.block = i
        f.x_idx = <int32_t*> sup
        f.x_nnz = m
        _scatter(s, p_idx, p_val, p_nnz)
        for k in range(m):
            ek = wi[k] if s == NULL else wi[k] + coef * s[sup[k]]
            f.x_val[k] = ek
            acc += ek * ek
        _unscatter(s, p_idx, p_nnz)
        sqnorm[0] = acc
        dot_w0[0] = dot_gather(w0, f.x_idx, f.x_val, m)
        return 0

    cdef int replay_truth(self, MaxOracle oracle, intp_t i, const float64_t* w0, Formed* f,
                          float64_t* sqnorm, float64_t* dot_w0) except -1 nogil:
        return self.replay_form(oracle, i, NULL, 0.0, NULL, NULL, 0, NULL, w0, f, sqnorm,
                                dot_w0)

    # its kept directions are coordinate lists, as BlockStore's (DenseStore's are rows)
    cdef void replay_gram_row(self, const Formed* e, intp_t j, const int32_t* p_idx,
                              const float64_t* p_val, intp_t p_nnz, float64_t* ee,
                              float64_t* pe, float64_t* x) noexcept nogil:
        BlockStore.replay_gram_row(self, e, j, p_idx, p_val, p_nnz, ee, pe, x)

    cdef const float64_t* replay_load(self, const Formed* f, float64_t* x) noexcept nogil:
        return BlockStore.replay_load(self, f, x)

    cdef void replay_unload(self, const Formed* f, float64_t* x) noexcept nogil:
        BlockStore.replay_unload(self, f, x)

    cdef float64_t replay_dot(self, const float64_t* x, const Formed* f) noexcept nogil:
        return BlockStore.replay_dot(self, x, f)

    cdef void replay_move(self, const Formed* f, float64_t step, float64_t avg_coef,
                          intp_t lo, intp_t hi, bint own, Primal* p) noexcept nogil:
        """Features [lo, hi) of v and avg_u += step f; with ``own`` (one call per block
        and round) the block's values += step f."""
        cdef float64_t* wi = self._values + self._ptr[f.block]
        cdef intp_t k
        _coo_move_range(f, step, avg_coef, lo, hi, p)
        if own:
            for k in range(f.x_nnz):
                wi[k] += step * f.x_val[k]


cdef class CompactStore(BlockStore):
    """Block i keeps coordinates b_i with w_i = A_i b_i in the oracle's block basis.

    The values and the mask are read-only to Python: the kernels keep them in step
    with the coordinate lists (``set_mask`` replaces a mask).  What involves the
    features (``block_vector``, ``block_inner``, ``total``) needs the oracle
    (``basis``).
    """

    storage = "compact"

    def __init__(self, intp_t n_blocks, intp_t n_features, values, ptr, support=None):
        super().__init__(n_blocks, n_features, values, ptr, None)
        self.index(None)

    def __dealloc__(self):
        self._drop_lists()

    def _set_mask(self, mask, mask_ptr):
        self.mask = np.ascontiguousarray(mask, dtype=np.uint64)
        self.mask_ptr = np.ascontiguousarray(mask_ptr, dtype=np.intp)
        self._mask_view = self.mask
        self._mask_ptr_view = self.mask_ptr
        self._mask = &self._mask_view[0]
        self._mask_ptr = &self._mask_ptr_view[0]
        self.values.flags.writeable = False
        self.mask.flags.writeable = False      # set_mask rebuilds the lists, a write would not
        self._build_lists()

    def _build_lists(self) -> None:
        """Every block's coordinate list from its mask bits (in increasing order)."""
        cdef intp_t i, q, n
        cdef uint64_t bits
        cdef CoordList* lst
        self._drop_lists()
        lists = <CoordList*> calloc(max(self.n_blocks, 1), sizeof(CoordList))
        if lists == NULL:
            raise MemoryError("no memory for the compact blocks' coordinate lists")
        self._lists = lists
        for i in range(self.n_blocks):
            lst = &self._lists[i]
            n = 0
            for q in range(self._mask_ptr[i], self._mask_ptr[i + 1]):
                n += ssvm_popcount64(self._mask[q])
            if n == 0:
                continue
            lst.idx = <int32_t*> malloc(n * sizeof(int32_t))
            if lst.idx == NULL:
                self._drop_lists()
                raise MemoryError("no memory for the compact blocks' coordinate lists")
            lst.cap = n
            for q in range(self._mask_ptr[i + 1] - self._mask_ptr[i]):
                bits = self._mask[self._mask_ptr[i] + q]
                while bits:
                    lst.idx[lst.n] = <int32_t> ((q << 6) + ssvm_ctz64(bits))
                    lst.n += 1
                    bits &= bits - 1

    cdef void _drop_lists(self) noexcept nogil:
        """Free the coordinate lists: the steps walk the mask's bits from then on
        (what ``mark`` does when a list cannot grow)."""
        cdef intp_t i
        if self._lists == NULL:
            return
        for i in range(self.n_blocks):
            free(self._lists[i].idx)
        free(self._lists)
        self._lists = NULL

    def marked(self, intp_t i):
        """Block i's marked coordinates, increasing (its list; from the mask when the
        steps walk masks)."""
        if not 0 <= i < self.n_blocks:
            raise IndexError(f"block {i} is not in [0, {self.n_blocks})")
        if self._lists == NULL:
            words = self.mask[self.mask_ptr[i]:self.mask_ptr[i + 1]]
            bits = np.unpackbits(words.view(np.uint8), bitorder="little")
            return np.flatnonzero(bits).astype(np.int32)
        return np.array(<int32_t[:self._lists[i].n]> self._lists[i].idx
                        if self._lists[i].n else np.zeros(0, np.int32))

    def _walk_masks(self) -> None:
        """Drop the coordinate lists, as ``mark`` does when one cannot grow: the
        steps walk the mask's bits from then on (same iterates; for tests)."""
        self._drop_lists()

    @property
    def walks_lists(self) -> bool:
        """Whether the steps walk the blocks' coordinate lists (False only after
        a list could not grow: they walk the mask's bits then, as fast as before)."""
        return self._lists != NULL

    @property
    def nbytes(self) -> int:
        """Bytes of the block arrays, the mask and the coordinate lists (at most
        two int32 per marked coordinate and a 24-byte header per block)."""
        cdef intp_t i, lists = 0
        if self._lists != NULL:
            lists = self.n_blocks * sizeof(CoordList)
            for i in range(self.n_blocks):
                lists += self._lists[i].cap * sizeof(int32_t)
        return BlockStore.nbytes.__get__(self) + int(lists)

    def set_mask(self, mask) -> None:
        mask = np.array(mask, dtype=np.uint64)
        if mask.shape != self.mask.shape:
            raise ValueError(f"a block mask of {mask.shape[0]} words does not fit the "
                             f"blocks' {self.mask.shape[0]}")
        self._set_mask(mask, self.mask_ptr)

    @property
    def needs_basis(self) -> bool:
        return True

    def index(self, atoms=None) -> None:
        """Rebuild the mask from the values and, with active sets, the coordinates of
        every stored atom."""
        cdef intp_t n = self.n_blocks, i, k, m
        sizes = np.diff(self.ptr)
        mask_ptr = np.zeros(n + 1, dtype=np.intp)
        np.cumsum((sizes + 63) // 64, out=mask_ptr[1:])
        mask = np.zeros(max(int(mask_ptr[n]), 1), dtype=np.uint64)
        cdef uint64_t[::1] mv = mask
        cdef const intp_t[::1] mp = mask_ptr
        cdef const uint8_t[::1] used
        for i in range(n):
            m = self._ptr[i + 1] - self._ptr[i]
            used = None
            if atoms is not None and m:
                used = np.ascontiguousarray(
                    (np.asarray(atoms.psi_matrix(i, m)) != 0.0).any(axis=0), dtype=np.uint8)
            for k in range(m):
                if self._values[self._ptr[i] + k] != 0.0 or (used is not None and used[k]):
                    mv[mp[i] + (k >> 6)] |= (<uint64_t> 1) << (k & 63)
        self._set_mask(mask, mask_ptr)

    def check_basis(self, oracle) -> None:
        if oracle is None or oracle.max_coords <= 0:
            raise ValueError("a state with compact blocks needs an oracle that offers "
                             "them (MaxOracle.max_coords > 0)")

    @staticmethod
    def _basis(basis):
        if basis is None:
            raise ValueError("this state keeps compact blocks: bind it to its oracle first "
                             "(SolverState.check_compatible(oracle))")
        return basis

    def frame_scratch(self, MaxOracle oracle):
        return np.zeros(max(oracle.max_coords, 1))

    @property
    def frame_width(self) -> int:
        return int(np.diff(self.ptr).max(initial=0))

    def corner_buffer(self, MaxOracle oracle, bint psi=True) -> CornerBuffer:
        return CornerBuffer(oracle, True, psi)

    def new_active_sets(self, intp_t cache_size=50, bint psi_float32=False) -> ActiveSets:
        return ActiveSets(self.n_blocks, cache_size, psi_float32, True)

    def atoms_problem(self, ActiveSets atoms):
        if atoms.n_blocks != self.n_blocks or not atoms.compact:
            return (f"the active sets have {atoms.n_blocks} blocks (compact: "
                    f"{atoms.compact}), the state {self.n_blocks} (compact blocks)")
        return None

    def direction_buffer(self, MaxOracle oracle, bint box) -> DirectionBuffer:
        self.check_basis(oracle)
        buf = DirectionBuffer()
        idx = np.zeros(oracle.max_coords, dtype=np.int32)
        val = np.zeros(oracle.max_coords)
        ex_idx = np.zeros(max(oracle.max_expand, 1), dtype=np.int32)
        ex_val = np.zeros(max(oracle.max_expand, 1))
        pos = np.full(oracle.n_features if box else 1, -1, dtype=np.int32)
        cdef int32_t[::1] iv = idx, xv = ex_idx, pv = pos
        cdef float64_t[::1] vv = val, yv = ex_val
        buf.d.idx, buf.d.val, buf.d.ex_idx, buf.d.ex_val = &iv[0], &vv[0], &xv[0], &yv[0]
        buf.d.pos = &pv[0] if box else NULL
        buf._arrays = (idx, val, ex_idx, ex_val, pos)
        return buf

    def block_vector(self, intp_t i, basis=None):
        return self._basis(basis).coord_expand_py(
            i, self.values[self.ptr[i]:self.ptr[i + 1]])

    def atom_vector(self, intp_t i, basis=None):
        return np.array(self.values[self.ptr[i]:self.ptr[i + 1]])

    def block_inner(self, w, basis=None):
        """<w_i, w> = <b_i, A_i^T w> (one ``coord_scores`` per block)."""
        cdef MaxOracle oracle = self._basis(basis)
        cdef const float64_t[::1] wv = np.ascontiguousarray(w, dtype=np.float64)
        cdef intp_t i
        out = np.zeros(self.n_blocks)
        cdef float64_t[::1] o = out
        cdef float64_t[::1] theta = np.zeros(max(oracle.max_coords, 1))
        for i in range(self.n_blocks):
            oracle.coord_scores(i, &wv[0], &theta[0])
            o[i] = vdot(self._values + self._ptr[i], &theta[0], self._ptr[i + 1] - self._ptr[i])
        return out

    def total(self, basis=None):
        """sum_i A_i b_i, a dense d-vector."""
        cdef MaxOracle oracle = self._basis(basis)
        cdef intp_t i, k, nnz, m
        out = np.zeros(self.n_features)
        cdef float64_t[::1] o = out
        cdef int32_t[::1] idx = np.zeros(max(oracle.max_expand, 1), dtype=np.int32)
        cdef float64_t[::1] val = np.zeros(max(oracle.max_expand, 1))
        cdef int32_t[::1] b_idx = np.zeros(max(oracle.max_coords, 1), dtype=np.int32)
        cdef float64_t[::1] b_val = np.zeros(max(oracle.max_coords, 1))
        for i in range(self.n_blocks):
            m = 0
            for k in range(self._ptr[i + 1] - self._ptr[i]):
                if self._values[self._ptr[i] + k] != 0.0:
                    b_idx[m] = <int32_t> k
                    b_val[m] = self._values[self._ptr[i] + k]
                    m += 1
            if m == 0:
                continue
            nnz = oracle.coord_expand(i, &b_idx[0], &b_val[0], m, &idx[0], &val[0])
            for k in range(nnz):
                o[idx[k]] += val[k]
        return out

    def _layout_problems(self) -> list:
        problems = []
        if self.support.shape[0]:
            problems.append("compact blocks have no block_support")
        if self.mask.shape[0] and not self._mask_covers_values():
            problems.append("block_mask misses nonzero block coordinates")
        return problems

    @property
    def replay_problem(self):
        return None

    def replay_slots(self, MaxOracle oracle) -> tuple:
        self.check_basis(oracle)
        mc = max(oracle.max_coords, 1)
        return (1, mc, max(oracle.max_expand, 1), mc)

    def set_block(self, intp_t i, values) -> None:
        """Block i's coordinates; their nonzeros are marked in the mask."""
        cdef intp_t k
        start, stop = self.ptr[i], self.ptr[i + 1]
        values = np.asarray(values, dtype=np.float64)
        if values.shape != (stop - start,):
            raise ValueError(f"block {i} holds {stop - start} values, got shape "
                             f"{values.shape}")
        nz = np.flatnonzero(values).astype(np.int32)
        cdef const int32_t[::1] nzv = nz
        cdef const float64_t[::1] vv = np.ascontiguousarray(values)
        if nz.shape[0]:
            self.mark(i, &nzv[0], nz.shape[0])
        for k in range(stop - start):
            self._values[start + k] = vv[k]

    def add_block(self, intp_t i, values, out, basis=None) -> None:
        """out += A_i values (``coord_expand_py``)."""
        out += self._basis(basis).coord_expand_py(i, np.ascontiguousarray(values,
                                                                          dtype=np.float64))

    def _mask_covers_values(self) -> bool:
        """Every nonzero coordinate has its bit in the mask."""
        sizes = np.diff(self.ptr)
        owner = np.repeat(np.arange(self.n_blocks), sizes)
        k = np.arange(self.values.shape[0]) - np.repeat(self.ptr[:-1], sizes)
        nz = self.values != 0.0
        words = self.mask[self.mask_ptr[owner[nz]] + (k[nz] >> 6)]
        return bool(np.all((words >> (k[nz] & 63).astype(np.uint64)) & np.uint64(1)))

    cdef intp_t _form(self, intp_t i, float64_t a, const float64_t* s, float64_t c,
                      Direction* e) noexcept nogil:
        """e = a b_i + c s (s NULL: zero) on the block's mask: its nonzero entries,
        at increasing coordinates, into e.idx and e.val; returns how many.

        With a = 0 (a pairwise step's direction) the block's values are not read.
        The block's coordinate list is walked without a branch per coordinate:
        every entry is written and the count advances only past nonzero ones.
        """
        cdef const float64_t* wi = self._values + self._ptr[i]
        cdef const uint64_t* words = self._mask + self._mask_ptr[i]
        cdef const int32_t* coords
        cdef intp_t q, k, n, nnz = 0
        cdef uint64_t bits
        cdef float64_t ek
        if self._lists != NULL:
            coords, n = self._lists[i].idx, self._lists[i].n
            if a == 0.0:
                if s == NULL:
                    return 0
                for q in range(n):
                    k = coords[q]
                    ek = c * s[k]
                    e.idx[nnz] = <int32_t> k
                    e.val[nnz] = ek
                    nnz += ek != 0.0
            elif s == NULL:
                for q in range(n):
                    k = coords[q]
                    ek = a * wi[k]
                    e.idx[nnz] = <int32_t> k
                    e.val[nnz] = ek
                    nnz += ek != 0.0
            else:
                for q in range(n):
                    k = coords[q]
                    ek = a * wi[k] + c * s[k]
                    e.idx[nnz] = <int32_t> k
                    e.val[nnz] = ek
                    nnz += ek != 0.0
            return nnz
        for q in range(self._mask_ptr[i + 1] - self._mask_ptr[i]):
            bits = words[q]
            while bits:
                k = (q << 6) + ssvm_ctz64(bits)
                bits &= bits - 1
                if a == 0.0:
                    ek = 0.0 if s == NULL else c * s[k]
                else:
                    ek = a * wi[k] if s == NULL else a * wi[k] + c * s[k]
                if ek != 0.0:
                    e.idx[nnz] = <int32_t> k
                    e.val[nnz] = ek
                    nnz += 1
        return nnz

    cdef void form(self, intp_t i, float64_t a, const float64_t* s, float64_t c,
                   Direction* e) noexcept nogil:
        e.block, e.a, e.s, e.c, e.dot = i, a, s, c, NAN
        e.nnz = self._form(i, a, s, c, e)

    cdef int stats(self, MaxOracle oracle, intp_t i, float64_t a, const float64_t* s,
                   float64_t c, const float64_t* w, const float64_t* theta,
                   Direction* e) except -1 nogil:
        """e = a b_i + c s formed on the mask; <e, w> = <e, theta> (theta NULL: NaN)
        and ||A_i e||^2 from the oracle."""
        e.block, e.a, e.s, e.c = i, a, s, c
        e.nnz = self._form(i, a, s, c, e)
        e.dot = NAN if theta == NULL else dot_gather(theta, e.idx, e.val, e.nnz)
        e.sqnorm = oracle.coord_sqnorm(i, e.idx, e.val, e.nnz)
        return 0

    cdef int move(self, MaxOracle oracle, Direction* e, float64_t factor, Primal* p,
                  float64_t avg_coef) except -1 nogil:
        """b_i += factor e (its formed entries); v, w = clip(v) and the average follow
        A_i e (the oracle expands only the entries it touches); e is spent."""
        cdef intp_t i = e.block, q, nnz
        cdef float64_t* wi
        _spent(e)
        wi = self._values + self._ptr[i]
        if factor != 1.0:
            for q in range(e.nnz):
                e.val[q] *= factor
        for q in range(e.nnz):
            wi[e.idx[q]] += e.val[q]
        e.block = -1
        if p.lower == NULL:                  # w is v: one fused pass over A_i e
            oracle.coord_add(i, e.idx, e.val, e.nnz, p.v, p.avg_u, avg_coef)
            return 0
        nnz = oracle.coord_expand(i, e.idx, e.val, e.nnz, e.ex_idx, e.ex_val)
        apply_delta(p, e.ex_idx, e.ex_val, nnz, avg_coef)
        return 0

    cdef float64_t box_step(self, MaxOracle oracle, Direction* e, float64_t factor,
                            const Primal* p, float64_t delta_ell, float64_t lam,
                            float64_t gamma_max, float64_t* work,
                            float64_t* gain) except? -1 nogil:
        """``box_search`` along factor A_i e: the expansion's repeated features are
        summed (e.pos marks the features seen, -1 on entry and exit) so that the
        search gets unique indices; ``work`` holds LINE_WORK * n_features doubles."""
        cdef intp_t i = e.block, k, q, nnz, u = 0
        cdef int32_t g
        _spent(e)
        nnz = oracle.coord_expand(i, e.idx, e.val, e.nnz, e.ex_idx, e.ex_val)
        for q in range(nnz):                  # in place: entry u <= q is already read
            g = e.ex_idx[q]
            if e.pos[g] < 0:
                e.pos[g] = <int32_t> u
                e.ex_idx[u] = g
                work[u] = 0.0
                u += 1
            work[e.pos[g]] += factor * e.ex_val[q]
        for k in range(u):
            e.pos[e.ex_idx[k]] = -1
        return box_search(p.v, p.lower, p.upper, e.ex_idx, work, u, delta_ell, lam,
                          gamma_max, <Breakpoint*> (work + u), gain)

    cdef float64_t dot(self, intp_t i, const float64_t* w,
                       const float64_t* theta) noexcept nogil:
        """<w_i, w> = <b_i, theta> with theta = A_i^T w, over the block's marked
        coordinates (in increasing order)."""
        cdef const float64_t* wi = self._values + self._ptr[i]
        cdef const uint64_t* words = self._mask + self._mask_ptr[i]
        cdef intp_t q, k
        cdef uint64_t bits
        cdef float64_t acc = 0.0
        if self._lists != NULL:
            for q in range(self._lists[i].n):
                k = self._lists[i].idx[q]
                acc += wi[k] * theta[k]
            return acc
        for q in range(self._mask_ptr[i + 1] - self._mask_ptr[i]):
            bits = words[q]
            while bits:
                k = (q << 6) + ssvm_ctz64(bits)
                bits &= bits - 1
                acc += wi[k] * theta[k]
        return acc

    cdef const float64_t* frame(self, const Corner* c, intp_t i,
                                float64_t* s) noexcept nogil:
        """q_i(y) scattered into s (block coordinates), its coordinates marked."""
        cdef intp_t k
        self.mark(i, c.coord_idx, c.coord_nnz)
        for k in range(c.coord_nnz):
            s[c.coord_idx[k]] += c.coord_val[k]
        return s

    cdef void clear_frame(self, const Corner* c, float64_t* s) noexcept nogil:
        cdef intp_t k
        for k in range(c.coord_nnz):
            s[c.coord_idx[k]] = 0.0

    cdef void mark(self, intp_t i, const int32_t* idx, intp_t nnz) noexcept nogil:
        """Mark block i's coordinates idx as possibly nonzero.

        The new ones are appended to the block's list, which is then put back in
        increasing order by insertion (a corner brings few new coordinates once
        the block has settled, usually none).  A list grows by doubling, up to
        the block's size; when it cannot grow, every list is dropped and the
        steps walk the mask from then on.
        """
        cdef uint64_t* words = self._mask + self._mask_ptr[i]
        cdef CoordList* lst = NULL
        cdef intp_t q, j, n0 = 0, cap
        cdef int32_t k
        cdef uint64_t bit
        cdef int32_t* grown
        if self._lists != NULL:
            lst = &self._lists[i]
            n0 = lst.n
        for q in range(nnz):
            k = idx[q]
            bit = (<uint64_t> 1) << (k & 63)
            if words[k >> 6] & bit:
                continue
            words[k >> 6] |= bit
            if self._lists == NULL:
                continue
            if lst.n == lst.cap:
                cap = min(max(2 * lst.cap, 8), self._ptr[i + 1] - self._ptr[i])
                grown = <int32_t*> realloc(lst.idx, cap * sizeof(int32_t))
                if grown == NULL:
                    self._drop_lists()
                    continue
                lst.idx, lst.cap = grown, cap
            lst.idx[lst.n] = k
            lst.n += 1
        if self._lists == NULL:
            return
        for q in range(n0, lst.n):
            k = lst.idx[q]
            j = q
            while j > 0 and lst.idx[j - 1] > k:
                lst.idx[j] = lst.idx[j - 1]
                j -= 1
            lst.idx[j] = k

    cdef const float64_t* atom_frame(self, MaxOracle oracle, intp_t i, const float64_t* w,
                                     float64_t* theta) except? NULL nogil:
        """theta = A_i^T w (``coord_scores``), what the atoms' scores read."""
        oracle.coord_scores(i, w, theta)
        return theta

    cdef const float64_t* answer_frame(self, const Corner* c,
                                       const float64_t* w) noexcept nogil:
        return c.theta

    cdef Entries entries(self, const Corner* c) noexcept nogil:
        """The corner's vector as an atom keeps it: q_i(y) in block coordinates."""
        return Entries(c.coord_idx, c.coord_val, c.coord_nnz)

    cdef int atom_gram(self, MaxOracle oracle, intp_t i, const BlockAtoms* blk,
                       float64_t* s, float64_t* G, Direction* e) except -1 nogil:
        """G[k, m] = <A_i q_k, A_i q_m> of the atoms' block coordinates, by
        polarisation: (||A_i (q_k + q_m)||^2 - ||A_i q_k||^2 - ||A_i q_m||^2) / 2."""
        cdef intp_t K = blk.n, k, m
        for k in range(K):
            atom_scatter(blk, k, 1.0, s)
            self.stats(oracle, i, 0.0, s, 1.0, NULL, NULL, e)
            G[k * K + k] = e.sqnorm
            atom_clear(blk, k, s)
        for m in range(K):
            for k in range(m + 1, K):
                atom_scatter(blk, m, 1.0, s)
                atom_scatter(blk, k, 1.0, s)
                self.stats(oracle, i, 0.0, s, 1.0, NULL, NULL, e)
                G[k * K + m] = G[m * K + k] = 0.5 * (e.sqnorm - G[k * K + k] - G[m * K + m])
                atom_clear(blk, m, s)
                atom_clear(blk, k, s)
        e.block = -1
        return 0

    cdef void prefetch(self, intp_t i) noexcept nogil:
        """Ask for the cache lines of block i's marked coordinates.

        A compact block's few nonzeros are scattered over its coordinates, so a
        step's reads of them wait on memory one line at a time; a kernel calls
        this before the block's oracle call, which then hides the wait.  The
        coordinate list is read here: ask for it a step earlier (``prefetch_mask``).
        The mask, which ``mark`` reads after the oracle call, is asked for too.
        """
        cdef const float64_t* wi = self._values + self._ptr[i]
        cdef const uint64_t* words = self._mask + self._mask_ptr[i]
        cdef intp_t q, k, line = -1
        cdef uint64_t bits
        if self._lists != NULL:
            ssvm_prefetch(words, 8 * (self._mask_ptr[i + 1] - self._mask_ptr[i]))
            for q in range(self._lists[i].n):
                k = self._lists[i].idx[q]
                if k >> 3 != line:              # 8 doubles to a 64-byte line
                    line = k >> 3
                    ssvm_prefetch(wi + k, 8)
            return
        for q in range(self._mask_ptr[i + 1] - self._mask_ptr[i]):
            bits = words[q]
            while bits:
                k = (q << 6) + ssvm_ctz64(bits)
                bits &= bits - 1
                if k >> 3 != line:              # 8 doubles to a 64-byte line
                    line = k >> 3
                    ssvm_prefetch(wi + k, 8)

    cdef void prefetch_mask(self, intp_t i) noexcept nogil:
        """Ask for block i's coordinate list (its mask when the steps walk masks)."""
        if self._lists != NULL:
            ssvm_prefetch(self._lists[i].idx, 4 * self._lists[i].n)
            return
        ssvm_prefetch(self._mask + self._mask_ptr[i],
                      8 * (self._mask_ptr[i + 1] - self._mask_ptr[i]))

    # The replay: a formed direction is its nonzero block coordinates and their
    # expansion to features.
    cdef int replay_form(self, MaxOracle oracle, intp_t i, const Corner* c, float64_t coef,
                         const int32_t* p_idx, const float64_t* p_val, intp_t p_nnz,
                         float64_t* s, const float64_t* w0, Formed* f, float64_t* sqnorm,
                         float64_t* dot_w0) except -1 nogil:
        """e = b_i + coef q_i(y) (c NULL: the truth, e = b_i) on the mask into f's
        coordinates and, expanded, its features; ||A_i e||^2 and <A_i e, w0>.  ``s``:
        the frame's zeros (again on return)."""
        cdef Direction dir
        dir.idx, dir.val = f.idx, f.val
        f.block = i
        if c == NULL:
            self.form(i, 1.0, NULL, 0.0, &dir)
        else:
            self.frame(c, i, s)
            self.form(i, 1.0, s, coef, &dir)
            self.clear_frame(c, s)
        f.nnz = dir.nnz
        f.x_nnz = oracle.coord_expand(i, f.idx, f.val, f.nnz, f.x_idx, f.x_val)
        sqnorm[0] = oracle.coord_sqnorm(i, f.idx, f.val, f.nnz)
        dot_w0[0] = dot_gather(w0, f.x_idx, f.x_val, f.x_nnz)
        return 0

    cdef int replay_truth(self, MaxOracle oracle, intp_t i, const float64_t* w0, Formed* f,
                          float64_t* sqnorm, float64_t* dot_w0) except -1 nogil:
        return self.replay_form(oracle, i, NULL, 0.0, NULL, NULL, 0, NULL, w0, f, sqnorm,
                                dot_w0)

    cdef void replay_move(self, const Formed* f, float64_t step, float64_t avg_coef,
                          intp_t lo, intp_t hi, bint own, Primal* p) noexcept nogil:
        """Features [lo, hi) of v and avg_u += step A_i f (avg_u: times avg_coef); with
        ``own`` (one call per block and round) the block's coordinates += step f."""
        cdef float64_t* wi = self._values + self._ptr[f.block]
        cdef intp_t q
        _coo_move_range(f, step, avg_coef, lo, hi, p)
        if own:
            for q in range(f.nnz):
                wi[f.idx[q]] += step * f.val[q]


# ---------------------------------------------------------------------------
# Building stores: from an oracle, a layout, or the arrays of a saved state.

def store_from_arrays(intp_t n_blocks, intp_t n_features, values, ptr, support,
                      bint compact) -> BlockStore:
    """The store of a state's arrays (``to_arrays``): compact when ``compact``, dense
    without supports, sparse with them.  The arrays are copied.

    The block boundaries are checked here (the store's C code trusts them); call
    ``problems`` for the rest (supports, finiteness, the mask).

    Raises
    ------
    ValueError
        If ``ptr`` does not have n_blocks + 1 increasing entries from 0 that end at
        the number of values, or compact blocks come with supports.
    """
    values, ptr, support = np.asarray(values), np.asarray(ptr), np.asarray(support)
    if ptr.shape != (n_blocks + 1,):
        raise ValueError(f"block_ptr has shape {ptr.shape}, expected ({n_blocks + 1},)")
    if ptr[0] != 0 or np.any(np.diff(ptr) < 0):
        raise ValueError("block_ptr does not start at 0 and increase")
    if values.shape != (int(ptr[n_blocks]),):
        raise ValueError(f"block_values has {values.shape[0]} entries, block_ptr "
                         f"says {int(ptr[n_blocks])}")
    if compact:
        if support.shape[0]:
            raise ValueError("compact blocks have no block_support")
        return CompactStore(n_blocks, n_features, values, ptr)
    if support.shape[0] == 0:
        return DenseStore(n_blocks, n_features, values, ptr)
    return SparseStore(n_blocks, n_features, values, ptr, support)


def store_from_layout(intp_t n_blocks, intp_t n_features, supports=None) -> BlockStore:
    """Zero blocks of a layout: ``supports`` per-block feature arrays, their flat form
    ``(block_ptr, block_support)``, ``(block_ptr, empty, True)`` for compact blocks of
    the sizes in block_ptr, or None (dense)."""
    compact = False
    if isinstance(supports, tuple):          # (block_ptr, block_support[, compact])
        ptr, support = supports[:2]
        compact = bool(supports[2]) if len(supports) > 2 else False
    else:
        ptr, support = _layout(n_blocks, n_features, supports)
    ptr = np.asarray(ptr, dtype=np.intp)
    return store_from_arrays(n_blocks, n_features, np.zeros(ptr[n_blocks]), ptr, support,
                             compact)


def store_for_oracle(MaxOracle oracle) -> BlockStore:
    """Zero blocks laid out for ``oracle`` (see ``oracle_layout``)."""
    return store_from_layout(oracle.n_blocks, oracle.n_features, oracle_layout(oracle))


def oracle_layout(MaxOracle oracle) -> tuple:
    """``(block_ptr, block_support, compact)`` of ``oracle``'s blocks: compact when it
    offers a block basis (``max_coords > 0``), sparse when it gives block supports,
    dense otherwise.

    The supports are checked once over their concatenation, not block by block,
    which matters for data sets with many sparse blocks (CoNLL).

    Raises
    ------
    ValueError
        If a block support is not 1-D, not integer, outside [0, n_features) or
        not strictly increasing.
    """
    n, d = oracle.n_blocks, oracle.n_features
    if oracle.max_coords > 0:
        ptr = np.zeros(n + 1, dtype=np.intp)
        np.cumsum(oracle.coord_sizes(), out=ptr[1:])
        return ptr, np.zeros(0, dtype=np.int32), True
    supports = [oracle.block_support(i) for i in range(n)]
    if all(sup is None for sup in supports):
        return (*_layout(n, d, None), False)
    arrays = [np.arange(d) if sup is None else np.asarray(sup) for sup in supports]
    bad = [i for i, a in enumerate(arrays)
           if a.ndim != 1 or (a.size and not np.issubdtype(a.dtype, np.integer))]
    if bad:
        raise ValueError(f"block_support({bad[0]}) must be a 1-D integer array")
    ptr, flat = _layout(n, d, arrays)
    if flat.size and (flat.min() < 0 or flat.max() >= d):
        i = int(np.searchsorted(ptr, np.flatnonzero((flat < 0) | (flat >= d))[0], "right")) - 1
        raise ValueError(f"block_support({i}) must be 1-D indices in [0, {d})")
    step = np.diff(flat)
    inner = np.ones(step.size, dtype=bool)
    inner[ptr[1:-1][(ptr[1:-1] > 0) & (ptr[1:-1] < flat.size)] - 1] = False
    if np.any(step[inner] <= 0):
        k = int(np.flatnonzero(inner & (step <= 0))[0])
        i = int(np.searchsorted(ptr, k, "right")) - 1
        raise ValueError(f"block_support({i}) must be strictly increasing")
    return ptr, flat, False


def _layout(n_blocks, n_features, supports):
    """``(block_ptr, block_support)`` of the flat block storage (no values allocated)."""
    if supports is None:
        return (np.arange(n_blocks + 1, dtype=np.intp) * n_features,
                np.zeros(0, dtype=np.int32))
    sizes = np.fromiter((len(sup) for sup in supports), dtype=np.intp, count=len(supports))
    ptr = np.zeros(len(supports) + 1, dtype=np.intp)
    np.cumsum(sizes, out=ptr[1:])
    support = (np.concatenate(supports).astype(np.int32, copy=False) if ptr[len(supports)]
               else np.zeros(0, np.int32))
    return ptr, support
