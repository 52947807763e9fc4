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
    # Step ahead_step's block, drawn by ``draw_ahead`` on the tree as it is now
    # (-1: none); ``set_gap_weight`` discards it, so it is always the exact draw.
    intp_t ahead_step
    intp_t ahead_block


cdef inline void init_sampler(Sampler* smp, const intp_t* order, intp_t n_order,
                              const float64_t* uniforms, intp_t n_uniforms,
                              float64_t* tree, intp_t tree_size) noexcept nogil:
    """A sampler of the steps ``order[:n_order]``, then one gap-sampled step per
    uniform of ``uniforms[:n_uniforms]`` on the sum tree (NULL, 0: none)."""
    smp.order, smp.n_order = order, n_order
    smp.uniforms, smp.n_uniforms = uniforms, n_uniforms
    smp.tree, smp.tree_size = tree, tree_size
    smp.ahead_step, smp.ahead_block = -1, -1


cdef inline intp_t next_block(const Sampler* smp, intp_t t, intp_t n) noexcept nogil:
    if t < smp.n_order:
        return smp.order[t]
    if t == smp.ahead_step:
        return smp.ahead_block
    return tree_draw(smp.tree, smp.tree_size, n, smp.uniforms[t - smp.n_order])


cdef inline void set_gap_weight(Sampler* smp, intp_t i, float64_t gap) noexcept nogil:
    """Block i's gap-sampling weight becomes max(gap, 0) (no-op without gap
    sampling); a block drawn ahead on the old tree is discarded."""
    if smp.uniforms == NULL:
        return
    tree_set(smp.tree, smp.tree_size, i, gap if gap > 0.0 else 0.0)
    smp.ahead_step = -1


cdef inline void _hint_lists(BlockStore b, const BlockAtoms* atoms, intp_t i) noexcept nogil:
    """The first stage of block i's cache hints: its coordinate list (or mask) and
    its atoms' struct (``atoms``: NULL without active sets), which the second
    stage reads."""
    b.prefetch_mask(i)
    if atoms != NULL:
        prefetch_atom_header(&atoms[i])


cdef inline void _hint_values(BlockStore b, const BlockAtoms* atoms, intp_t i) noexcept nogil:
    """The second stage: block i's values (``BlockStore.prefetch``) and its atoms."""
    b.prefetch(i)
    if atoms != NULL:
        prefetch_atoms(&atoms[i])


cdef inline void draw_ahead(MaxOracle oracle, BlockStore b, const BlockAtoms* atoms,
                            Sampler* smp, intp_t t, intp_t n) noexcept nogil:
    """Call after step t's ``set_gap_weight``: when step t + 1 is gap-sampled, draws its
    block now (the tree no longer changes before it, so the draw is exact and
    ``next_block`` returns it) and asks for the first stage of its cache lines,
    which the rest of step t then hides."""
    cdef intp_t j
    if t + 1 < smp.n_order or t + 1 >= smp.n_order + smp.n_uniforms:
        return
    j = tree_draw(smp.tree, smp.tree_size, n, smp.uniforms[t + 1 - smp.n_order])
    smp.ahead_step, smp.ahead_block = t + 1, j
    oracle.prefetch(j)
    _hint_lists(b, atoms, j)


cdef inline void prefetch_steps(MaxOracle oracle, BlockStore b, const BlockAtoms* atoms,
                                const Sampler* smp, intp_t t, intp_t n) noexcept nogil:
    """Cache hints at the start of step t, ahead of its oracle call.

    Steps in a known order get them in two stages: the oracle's data, the block
    values and the atoms (``atoms``: the blocks' atoms, NULL without active
    sets) of step t + 1's block, the block's mask and the atoms' struct of step
    t + 2's (step 0 also asks for its own block's).  A gap-sampled step's block
    is known only once the step before it has updated the tree (``draw_ahead``
    asks for its first stage then): its second stage is asked for here, and its
    first too when it was not drawn ahead.
    """
    cdef intp_t i
    if t >= smp.n_order:
        i = next_block(smp, t, n)
        if t != smp.ahead_step:
            oracle.prefetch(i)
            _hint_lists(b, atoms, i)
        _hint_values(b, atoms, i)
        return
    if t == 0:
        oracle.prefetch(smp.order[0])
        _hint_values(b, atoms, smp.order[0])
    if t + 1 < smp.n_order:
        oracle.prefetch(smp.order[t + 1])
        _hint_values(b, atoms, smp.order[t + 1])
    if t + 2 < smp.n_order:
        _hint_lists(b, atoms, smp.order[t + 2])
