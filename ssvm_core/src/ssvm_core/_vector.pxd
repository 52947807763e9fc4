# Vector kernels and checked allocation shared by the Cython kernels and oracles.
#
# Every function is inline: cimporting this file compiles them into the
# cimporting module, nothing is linked or imported at run time.  Sums use four
# partial accumulators: the latency of the additions, not the multiplies, bounds
# a loop with a single sum.
from cython cimport floating
from libc.stdint cimport uint64_t, uintptr_t
from libc.stdlib cimport free, malloc

from ssvm_core._typedefs cimport float64_t, int32_t, intp_t


# Bit and cache helpers (compiler intrinsics).
cdef extern from *:
    """
    #if defined(_MSC_VER)
    #include <intrin.h>
    static inline int ssvm_ctz64(unsigned long long x) {
        unsigned long r; _BitScanForward64(&r, x); return (int) r;
    }
    #define SSVM_PREFETCH(c) _mm_prefetch((const char*) (c), 3)
    #else
    static inline int ssvm_ctz64(unsigned long long x) { return __builtin_ctzll(x); }
    #define SSVM_PREFETCH(c) __builtin_prefetch(c)
    #endif
    /* Ask for nbytes from p in cache lines of 64 bytes, without waiting for them. */
    static inline void ssvm_prefetch(const void* p, Py_ssize_t nbytes) {
        const char* c = (const char*) p;
        for (Py_ssize_t k = 0; k < nbytes; k += 64) SSVM_PREFETCH(c + k);
    }
    """
    # Index of the lowest set bit of a nonzero word.
    int ssvm_ctz64(uint64_t x) noexcept nogil
    # A hint to bring nbytes from p into the cache (no effect on results).
    void ssvm_prefetch(const void* p, intp_t nbytes) noexcept nogil


# ---------------------------------------------------------------------------
# Vector kernels
# ---------------------------------------------------------------------------

cdef inline float64_t dot(const float64_t* a, const float64_t* b, intp_t n) noexcept nogil:
    """<a, b> over n entries."""
    cdef float64_t s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    cdef intp_t k, n4 = n - n % 4
    for k in range(0, n4, 4):
        s0 += a[k] * b[k]
        s1 += a[k + 1] * b[k + 1]
        s2 += a[k + 2] * b[k + 2]
        s3 += a[k + 3] * b[k + 3]
    for k in range(n4, n):
        s0 += a[k] * b[k]
    return (s0 + s1) + (s2 + s3)


cdef inline float64_t dot_gather(const float64_t* w, const int32_t* idx, const floating* val,
                                 intp_t nnz) noexcept nogil:
    """sum_k w[idx[k]] val[k]: <w, x> for a sparse x given as (idx, val), nnz entries.

    ``val`` may hold float64 or float32 values (a fused type: each cimporting
    module compiles the variants it calls); the sum is in float64 either way.
    """
    cdef float64_t s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    cdef intp_t k, n4 = nnz - nnz % 4
    for k in range(0, n4, 4):
        s0 += w[idx[k]] * val[k]
        s1 += w[idx[k + 1]] * val[k + 1]
        s2 += w[idx[k + 2]] * val[k + 2]
        s3 += w[idx[k + 3]] * val[k + 3]
    for k in range(n4, nnz):
        s0 += w[idx[k]] * val[k]
    return (s0 + s1) + (s2 + s3)


cdef inline float64_t total(const float64_t* x, intp_t n) noexcept nogil:
    """sum_k x[k] over n entries."""
    cdef float64_t s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    cdef intp_t k, n4 = n - n % 4
    for k in range(0, n4, 4):
        s0 += x[k]
        s1 += x[k + 1]
        s2 += x[k + 2]
        s3 += x[k + 3]
    for k in range(n4, n):
        s0 += x[k]
    return (s0 + s1) + (s2 + s3)


cdef inline void axpy(float64_t a, const float64_t* x, float64_t* y, intp_t n) noexcept nogil:
    """y += a x over n entries."""
    cdef intp_t k
    for k in range(n):
        y[k] += a * x[k]


# ---------------------------------------------------------------------------
# Checked allocation
# ---------------------------------------------------------------------------

cdef inline void* checked_malloc(size_t n_bytes, const char* what) except NULL nogil:
    """malloc(n_bytes) (at least 1 byte), or MemoryError naming ``what``.

    Pair it with ``free`` in a ``finally`` whose pointers start as NULL, so
    that a failure on the second of several allocations frees the first.
    """
    cdef void* p = malloc(n_bytes if n_bytes > 0 else 1)
    if p == NULL:
        with gil:
            raise MemoryError(f"cannot allocate {n_bytes} bytes for the "
                              f"{what.decode('utf-8', 'replace')}")
    return p


cdef enum:
    ARENA_ALIGN = 64        # every slice starts on its own cache line


cdef struct Arena:
    # One allocation cut into aligned slices by ``arena_take``, in two passes of
    # the same code: with ``base == NULL`` it only counts the bytes asked for;
    # ``arena_allocate`` then allocates that total and the second pass hands out
    # the slices; ``arena_check`` raises if it handed out more than allocated.
    # So the sizes are written once, in the carving code, never as offsets.
    char* raw               # what malloc returned (freed by arena_free)
    char* base              # raw rounded up to ARENA_ALIGN; NULL while counting
    size_t size             # bytes available from base
    size_t used             # bytes handed out (or counted) so far


cdef inline void arena_init(Arena* a) noexcept nogil:
    """An empty arena in its counting pass."""
    a.raw = NULL
    a.base = NULL
    a.size = 0
    a.used = 0


cdef inline void* arena_take(Arena* a, size_t count, size_t item) noexcept nogil:
    """The next slice of ``count`` items of ``item`` bytes, aligned to ARENA_ALIGN.

    Returns NULL while counting, and past the end of the allocation (which
    ``arena_check`` reports).
    """
    cdef size_t start = (a.used + ARENA_ALIGN - 1) // ARENA_ALIGN * ARENA_ALIGN
    a.used = start + count * item
    if a.base == NULL or a.used > a.size:
        return NULL
    return a.base + start


cdef inline int arena_allocate(Arena* a, const char* what) except -1 nogil:
    """End the counting pass: allocate what it counted; the next pass hands it out."""
    a.size = a.used
    a.raw = <char*> checked_malloc(a.size + ARENA_ALIGN, what)
    a.base = <char*> ((<uintptr_t> a.raw + ARENA_ALIGN - 1) // ARENA_ALIGN * ARENA_ALIGN)
    a.used = 0
    return 0


cdef inline int arena_check(const Arena* a) except -1 nogil:
    """Raise RuntimeError if the second pass took more than the first counted."""
    if a.base == NULL or a.used > a.size:
        with gil:
            raise RuntimeError(f"workspace arena: {a.used} bytes handed out, "
                               f"{a.size} allocated (the two carving passes differ)")
    return 0


cdef inline void arena_free(Arena* a) noexcept nogil:
    free(a.raw)
    arena_init(a)
