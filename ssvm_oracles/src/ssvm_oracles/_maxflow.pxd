# The max-flow kernel shared by the graph-cut oracles (see _maxflow.pyx).
from ssvm_core._typedefs cimport float64_t, int32_t, intp_t


cdef int min_cut_arcs(intp_t n, intp_t m, const float64_t* D, const float64_t* c,
                      const int32_t* to, const int32_t* rev, const int32_t* edge,
                      const intp_t* arc_ptr, intp_t base, int32_t* labels) except -1 nogil
