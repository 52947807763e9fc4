# Per-block atoms: the explicit sparse dual variables (active sets) and the
# cache of labellings of Osokin et al. (2016), Sec. 3.3, kept in one store per block.
#
# Atom k of a block is a labelling y with its psi_i(y) (sparse: psi_idx /
# psi_val, repeated indices add up), its loss L_i(y) and its weight alpha_i(y).
# Atom 0 is always the ground truth (no labels, psi = 0, loss 0).  The active
# set S_i is the atoms with alpha > 0; the cache C_i is all atoms.
# With compact blocks (ActiveSets.compact) an atom's psi is kept in the block's
# coordinates, q_i(y) with psi_i(y) = A_i q_i(y) (see MaxOracle.coord_*): its
# scores then need theta = A_i^T w in place of w.
from ssvm_core._typedefs cimport float64_t, int32_t, intp_t
from ssvm_core._oracle cimport Corner
from ssvm_core._vector cimport ssvm_prefetch


ctypedef struct Entries:
    # The vector an atom keeps of a corner, in the frame of the block's storage
    # (BlockStore.entries): COO entries (repeated indices add up) or, with idx
    # NULL, nnz dense values whose nonzeros are kept.
    const int32_t* idx
    const float64_t* val
    intp_t nnz


ctypedef struct BlockAtoms:
    intp_t n              # atoms stored (>= 1: atom 0 is the ground truth)
    intp_t cap            # capacity in atoms
    float64_t* alpha      # cap
    float64_t* loss       # cap
    float64_t* score      # cap: H_i(y; w) at the last evaluation (scratch)
    intp_t* last_used     # cap: step at which the atom was last the FW corner
    intp_t* lab_off       # cap + 1
    int32_t* labels
    intp_t lab_cap
    intp_t* psi_off       # cap + 1
    int32_t* psi_idx
    void* psi_val         # float64, or float32 when ``single``
    intp_t psi_cap
    bint single


cdef class ActiveSets:
    cdef BlockAtoms* blocks
    cdef readonly intp_t n_blocks
    cdef readonly intp_t cache_size     # eviction starts above this many atoms
    cdef readonly bint single           # psi values stored as float32
    cdef readonly bint compact          # psi kept in block coordinates (the store says)

    cdef intp_t _find(self, intp_t i, const Corner* c) noexcept nogil
    cdef intp_t _add(self, intp_t i, const Corner* c, Entries x,
                     intp_t step) except -1 nogil
    cdef int _remove(self, intp_t i, intp_t k) except -1 nogil


cdef inline float64_t psi_at(const BlockAtoms* blk, intp_t p) noexcept nogil:
    """Value of psi entry p (stored in double or single precision)."""
    if blk.single:
        return (<const float*> blk.psi_val)[p]
    return (<const float64_t*> blk.psi_val)[p]


cdef float64_t atom_dot(const BlockAtoms* blk, intp_t k, const float64_t* w) noexcept nogil
cdef void atom_scatter(const BlockAtoms* blk, intp_t k, float64_t coef,
                       float64_t* s) noexcept nogil
cdef void atom_clear(const BlockAtoms* blk, intp_t k, float64_t* s) noexcept nogil


cdef inline void prefetch_atoms(const BlockAtoms* blk) noexcept nogil:
    """Ask for the cache lines of a block's atoms: weights, losses, scores, labels
    and psi (a step scores them all).  The struct itself is read here: ask for
    it a step earlier (``prefetch_atom_header``)."""
    cdef intp_t n = blk.n, width
    ssvm_prefetch(blk.alpha, n * sizeof(float64_t))
    ssvm_prefetch(blk.loss, n * sizeof(float64_t))
    ssvm_prefetch(blk.score, n * sizeof(float64_t))
    ssvm_prefetch(blk.last_used, n * sizeof(intp_t))
    ssvm_prefetch(blk.lab_off, (n + 1) * sizeof(intp_t))
    ssvm_prefetch(blk.psi_off, (n + 1) * sizeof(intp_t))
    ssvm_prefetch(blk.labels, blk.lab_cap * sizeof(int32_t))
    ssvm_prefetch(blk.psi_idx, blk.psi_cap * sizeof(int32_t))
    width = sizeof(float) if blk.single else sizeof(float64_t)
    ssvm_prefetch(blk.psi_val, blk.psi_cap * width)


cdef inline void prefetch_atom_header(const BlockAtoms* blk) noexcept nogil:
    """Ask for the cache lines of the struct of a block's atoms (see prefetch_atoms)."""
    ssvm_prefetch(blk, sizeof(BlockAtoms))
