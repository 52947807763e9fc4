# StateView: C pointers into a SolverState's arrays for the one-pass kernels
# (_fw.pyx, _active.pyx, _batch.pyx).
from ssvm_core._typedefs cimport float64_t, intp_t
from ssvm_core._blocks cimport Ledger, Primal
from ssvm_core._sampling cimport Sampler
from ssvm_core._storage cimport BlockStore, DirectionBuffer


cdef class StateView:
    cdef BlockStore store
    cdef DirectionBuffer direction
    cdef Ledger ledger
    cdef Primal primal
    cdef Sampler sampler
    cdef float64_t[::1] _ell, _gaps, _v, _w, _lower, _upper, _avg_u, _tree
    cdef const intp_t[::1] _order
    cdef const float64_t[::1] _uniforms
