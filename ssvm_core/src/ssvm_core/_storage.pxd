# Block storage as a type: the per-block dual vectors w_i of a SolverState and
# the vector algebra of one block step on them.
#
# All block vectors live in one flat array; block i occupies
# values[ptr[i]:ptr[i+1]].  Three stores keep them:
# - DenseStore: entry k is feature k (every block has n_features entries);
# - SparseStore: entry k is feature support[k] (the block's feature support);
# - CompactStore: the entries are coordinates b with w_i = A_i b, A_i the
#   oracle's block basis (MaxOracle.coord_*).  A compact block is a few
#   nonzeros among its coordinates, so each block has a bitmask of the
#   coordinates that may be nonzero (mask); every coordinate a corner or atom
#   of the block brings into a frame is marked there first (``frame``,
#   ``mark``), and a step reads and writes only the marked ones.  Marks only
#   accumulate, so the mask stays a superset of the block's nonzeros; it is
#   rebuilt from the values and the atoms when a state is loaded.  Beside the
#   mask each block keeps the same coordinates as a packed increasing list
#   (CoordList), which a step walks without a branch per coordinate; the mask
#   answers "already marked?" in ``mark``.  The lists are derived from the
#   mask (rebuilt with it, never saved).
#
# A step works in the block's frame: a corner (or atom) is seen as a vector s
# of ``frame_scratch`` (dense length d for dense and sparse stores, block
# coordinates for compact ones).  A direction e = a w_i + c s is a value
# (Direction): ``form`` or ``stats`` make it, ``box_step`` searches along it,
# and ``move`` consumes it (moving a spent direction raises).  The scratch a
# direction needs is owned by its DirectionBuffer, one per kernel (one per
# thread once steps run in parallel), never by the store.
from libc.stdint cimport uint64_t

from ssvm_core._typedefs cimport float64_t, int32_t, intp_t
from ssvm_core._oracle cimport Corner, MaxOracle
from ssvm_core._atoms cimport BlockAtoms, Entries
from ssvm_core._blocks cimport Primal


cdef struct Direction:
    # e = a w_i + c s of block ``block`` (-1: spent, see BlockStore.move).
    intp_t block
    float64_t a
    const float64_t* s          # the frame vector (NULL: zero)
    float64_t c
    float64_t dot               # <e, w> after ``stats`` (NaN when not computed)
    float64_t sqnorm            # ||e||^2 in features after ``stats``
    # Compact stores: the formed nonzero entries of e in block coordinates
    # (increasing), and scratch for A_i e and for summing its repeats.
    intp_t nnz
    int32_t* idx
    float64_t* val
    int32_t* ex_idx
    float64_t* ex_val
    int32_t* pos                # n_features entries, -1 between uses (with a box)


cdef struct Formed:
    # A direction of block ``block`` formed for the exact parallel replay
    # (``_batch._Replay``) and kept for its round, in slots of the sizes
    # ``BlockStore.replay_slots`` gives.  Dense stores: its features in ``dense``
    # (the block's own values w_i point at the block).  Compact stores: its block
    # coordinates (idx, val, nnz, increasing) and their expansion to features
    # (x_idx, x_val, x_nnz; repeats add up).
    intp_t block
    float64_t* dense
    int32_t* idx
    float64_t* val
    intp_t nnz
    int32_t* x_idx
    float64_t* x_val
    intp_t x_nnz


cdef struct CoordList:
    # A compact block's marked coordinates, increasing (the mask's set bits):
    # n of them in idx, room for cap.
    int32_t* idx
    intp_t n
    intp_t cap


cdef class DirectionBuffer:
    cdef Direction d
    cdef object _arrays             # the arrays behind the pointers of d


cdef class BlockStore:
    cdef readonly intp_t n_blocks, n_features
    cdef readonly object values     # float64: block i at values[ptr[i]:ptr[i+1]]
    cdef readonly object ptr        # intp (n_blocks + 1)
    cdef readonly object support    # int32: a sparse block's features (else empty)
    cdef readonly object mask       # uint64: a compact block's bits (else empty)
    cdef readonly object mask_ptr   # intp: block i's bits at mask[mask_ptr[i]:mask_ptr[i+1]]
    cdef float64_t* _values
    cdef const intp_t* _ptr
    cdef const float64_t[::1] _values_view
    cdef const intp_t[::1] _ptr_view

    cdef void form(self, intp_t i, float64_t a, const float64_t* s, float64_t c,
                   Direction* e) noexcept nogil
    cdef int stats(self, MaxOracle oracle, intp_t i, float64_t a, const float64_t* s,
                   float64_t c, const float64_t* w, const float64_t* theta,
                   Direction* e) except -1 nogil
    cdef int move(self, MaxOracle oracle, Direction* e, float64_t factor, Primal* p,
                  float64_t avg_coef) except -1 nogil
    cdef float64_t box_step(self, MaxOracle oracle, Direction* e, float64_t factor,
                            const Primal* p, float64_t delta_ell, float64_t lam,
                            float64_t gamma_max, float64_t* work,
                            float64_t* gain) except? -1 nogil
    cdef float64_t dot(self, intp_t i, const float64_t* w,
                       const float64_t* theta) noexcept nogil
    cdef const float64_t* frame(self, const Corner* c, intp_t i,
                                float64_t* s) noexcept nogil
    cdef void clear_frame(self, const Corner* c, float64_t* s) noexcept nogil
    cdef void mark(self, intp_t i, const int32_t* idx, intp_t nnz) noexcept nogil
    cdef const float64_t* atom_frame(self, MaxOracle oracle, intp_t i, const float64_t* w,
                                     float64_t* theta) except? NULL nogil
    cdef const float64_t* answer_frame(self, const Corner* c,
                                       const float64_t* w) noexcept nogil
    cdef Entries entries(self, const Corner* c) noexcept nogil
    cdef int atom_gram(self, MaxOracle oracle, intp_t i, const BlockAtoms* blk,
                       float64_t* s, float64_t* G, Direction* e) except -1 nogil
    cdef void prefetch(self, intp_t i) noexcept nogil
    cdef void prefetch_mask(self, intp_t i) noexcept nogil
    # the exact parallel replay's algebra on formed directions (see Formed)
    cdef int replay_form(self, MaxOracle oracle, intp_t i, const Corner* c, float64_t coef,
                         const int32_t* p_idx, const float64_t* p_val, intp_t p_nnz,
                         float64_t* s, const float64_t* w0, Formed* f, float64_t* sqnorm,
                         float64_t* dot_w0) except -1 nogil
    cdef int replay_truth(self, MaxOracle oracle, intp_t i, const float64_t* w0, Formed* f,
                          float64_t* sqnorm, float64_t* dot_w0) except -1 nogil
    cdef void replay_gram_row(self, const Formed* e, intp_t j, const int32_t* p_idx,
                              const float64_t* p_val, intp_t p_nnz, float64_t* ee,
                              float64_t* pe, float64_t* x) noexcept nogil
    cdef const float64_t* replay_load(self, const Formed* f, float64_t* x) noexcept nogil
    cdef void replay_unload(self, const Formed* f, float64_t* x) noexcept nogil
    cdef float64_t replay_dot(self, const float64_t* x, const Formed* f) noexcept nogil
    cdef void replay_move(self, const Formed* f, float64_t step, float64_t avg_coef,
                          intp_t lo, intp_t hi, bint own, Primal* p) noexcept nogil


cdef class DenseStore(BlockStore):
    cdef const int32_t* _support    # NULL: entry k of a block is feature k
    cdef const int32_t[::1] _support_view


cdef class SparseStore(DenseStore):
    pass


cdef class CompactStore(BlockStore):
    cdef uint64_t* _mask
    cdef const intp_t* _mask_ptr
    cdef uint64_t[::1] _mask_view
    cdef const intp_t[::1] _mask_ptr_view
    cdef CoordList* _lists          # one per block (NULL: walk the mask's bits instead)

    cdef void _drop_lists(self) noexcept nogil
    cdef intp_t _form(self, intp_t i, float64_t a, const float64_t* s, float64_t c,
                      Direction* e) noexcept nogil
