# StateView: C pointers into a SolverState's arrays for the one-pass kernels
# (_fw.pyx, _active.pyx, _batch.pyx).
from libc.stdint cimport uint64_t

from ssvm_core._typedefs cimport float64_t, int32_t, intp_t
from ssvm_core._blocks cimport Blocks, Primal
from ssvm_core._sampling cimport Sampler


cdef class StateView:
    cdef Blocks blocks
    cdef Primal primal
    cdef Sampler sampler
    cdef const float64_t[::1] _values     # read-only to Python for compact states
    cdef float64_t[::1] _ell, _gaps, _v, _w, _lower, _upper, _avg_u, _tree
    cdef float64_t[::1] _e, _ex_val
    cdef int32_t[::1] _e_idx, _ex_idx, _pos
    cdef uint64_t[::1] _mask
    cdef const intp_t[::1] _ptr, _order, _mask_ptr
    cdef const int32_t[::1] _support
    cdef const float64_t[::1] _uniforms
