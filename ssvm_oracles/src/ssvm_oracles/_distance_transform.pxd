# Generalized distance transforms (implemented in _distance_transform.pyx).
from libc.float cimport DBL_MIN

from ssvm_core._typedefs cimport float64_t, int32_t, intp_t


cdef inline bint negligible(float64_t a) noexcept nogil:
    # A quadratic weight below the smallest normal double is treated as zero
    # (the transform is then linear): the envelope's intersections divide by
    # 2 a (q - v), which must not underflow, and the score changes by less than
    # a * L^2 < 1e-300.
    return a < DBL_MIN


cdef void reciprocals(intp_t m, float64_t* inv) noexcept nogil
cdef void dt1d(const float64_t* f, intp_t n, float64_t a, float64_t b,
               float64_t* d, intp_t ds, int32_t* arg, intp_t gs, const float64_t* inv,
               intp_t* v, float64_t* z, float64_t* hv) noexcept nogil
cdef void dt2d(const float64_t* ft, intp_t H, intp_t W, float64_t ax, float64_t bx,
               float64_t ay, float64_t by, float64_t* tmp, int32_t* argy,
               float64_t* d, int32_t* argx, const char* rows, const float64_t* inv,
               intp_t* v, float64_t* z, float64_t* hv) noexcept nogil
