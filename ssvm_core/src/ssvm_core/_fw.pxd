# Shared views of a SolverState for the one-pass kernels (_fw.pyx, _active.pyx).
from ssvm_core._typedefs cimport float64_t, int32_t, intp_t
from ssvm_core._blocks cimport Primal
from ssvm_core._sampling cimport _tree_draw


cdef struct Blocks:
    # Raw view of a SolverState's block arrays.
    float64_t* values
    const intp_t* ptr
    const int32_t* support      # NULL for dense blocks
    float64_t* ell
    float64_t* gap_estimates


cdef inline const int32_t* _block_support(const Blocks* b, intp_t i) noexcept nogil:
    return NULL if b.support == NULL else b.support + b.ptr[i]


cdef struct Sampler:
    # Which block each step visits: order[0..n_order) first, then one draw
    # per uniform proportional to the sum tree (gap sampling), if any.
    const intp_t* order
    intp_t n_order
    const float64_t* uniforms     # NULL without gap sampling
    intp_t n_uniforms
    float64_t* tree
    intp_t tree_size


cdef inline intp_t _next_block(const Sampler* smp, intp_t t, intp_t n) noexcept nogil:
    if t < smp.n_order:
        return smp.order[t]
    return _tree_draw(smp.tree, smp.tree_size, n, smp.uniforms[t - smp.n_order])


cdef class StateView:
    # Pointers into a SolverState's arrays, kept alive by the memoryviews.
    cdef Blocks blocks
    cdef Primal primal
    cdef Sampler sampler
    cdef float64_t[::1] _values, _ell, _gaps, _v, _w, _lower, _upper, _avg_u, _tree
    cdef const intp_t[::1] _ptr, _order
    cdef const int32_t[::1] _support
    cdef const float64_t[::1] _uniforms
