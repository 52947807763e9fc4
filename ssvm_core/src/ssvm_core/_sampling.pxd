# Sum tree for sampling blocks with probability proportional to a weight
# (the last block gap estimate, Osokin et al. (2016), Alg. 2): O(log n) per draw and update.
#
# tree has 2 * size entries, size a power of two >= n; leaf i is
# tree[size + i] and every internal node holds the sum of its two children,
# recomputed from them on each update (so no rounding drift accumulates).
from ssvm_core._typedefs cimport float64_t, intp_t
from ssvm_core._atoms cimport BlockAtoms, prefetch_atom_header, prefetch_atoms
from ssvm_core._oracle cimport MaxOracle
from ssvm_core._storage cimport BlockStore


cdef inline void tree_set(float64_t* tree, intp_t size, intp_t i,
                          float64_t weight) noexcept nogil:
    cdef intp_t node = size + i
    tree[node] = weight
    node //= 2
    while node >= 1:
        tree[node] = tree[2 * node] + tree[2 * node + 1]
        node //= 2


cdef inline intp_t tree_draw(const float64_t* tree, intp_t size, intp_t n,
                             float64_t u) noexcept nogil:
    """The leaf where u * total falls, u in [0, 1); never a zero-weight leaf.

    When every weight is zero, block floor(u n) (a uniform draw).
    """
    cdef intp_t node = 1
    cdef float64_t target = u * tree[1]
    if not tree[1] > 0.0:
        return min(<intp_t> (u * n), n - 1)
    while node < size:
        if tree[2 * node + 1] <= 0.0 or (tree[2 * node] > 0.0 and target < tree[2 * node]):
            node = 2 * node
        else:
            target -= tree[2 * node]
            node = 2 * node + 1
    return node - size


cdef struct Sampler:
    # Which block each step visits: order[0..n_order) first, then one draw
    # per uniform proportional to the sum tree (gap sampling), if any.
    const intp_t* order
    intp_t n_order
    const float64_t* uniforms     # NULL without gap sampling
    intp_t n_uniforms
    float64_t* tree
    intp_t tree_size


cdef inline intp_t next_block(const Sampler* smp, intp_t t, intp_t n) noexcept nogil:
    if t < smp.n_order:
        return smp.order[t]
    return tree_draw(smp.tree, smp.tree_size, n, smp.uniforms[t - smp.n_order])


cdef inline void _prefetch_data(MaxOracle oracle, BlockStore b, const BlockAtoms* atoms,
                                intp_t i) noexcept nogil:
    """The first stage of ``prefetch_steps`` for block i: its oracle data, its
    block values (``BlockStore.prefetch``) and its atoms."""
    oracle.prefetch(i)
    b.prefetch(i)
    if atoms != NULL:
        prefetch_atoms(&atoms[i])


cdef inline void prefetch_steps(MaxOracle oracle, BlockStore b, const BlockAtoms* atoms,
                                const Sampler* smp, intp_t t, intp_t n) noexcept nogil:
    """Cache hints ahead of step t's oracle call, in two stages: the oracle's
    data, the block values and the atoms (``atoms``: the blocks' atoms, NULL
    without active sets) of step t + 1's block, the block's mask and the atoms'
    struct of step t + 2's (step 0 also asks for its own block's).

    The blocks ahead are read with ``next_block`` now: exact for a known
    order; under gap sampling a guess, since the steps in between still
    update the tree (a wrong guess costs only the hint).
    """
    cdef intp_t total = smp.n_order + smp.n_uniforms, nxt
    if t == 0:
        _prefetch_data(oracle, b, atoms, next_block(smp, 0, n))
    if t + 1 < total:
        _prefetch_data(oracle, b, atoms, next_block(smp, t + 1, n))
    if t + 2 < total:
        nxt = next_block(smp, t + 2, n)
        b.prefetch_mask(nxt)
        if atoms != NULL:
            prefetch_atom_header(&atoms[nxt])
