# Squared norms ||A_i e||^2 of node-label directions, shared by the graph oracles'
# compact blocks (``_graph``, ``_graphcut``).
#
# A block's node coordinates are U per node (node v, state k at v U + k) and
# column (v, k) of A_i is node v's feature row x_v in state k's weights, so the
# columns of different states are orthogonal and
# ||A_i e||^2 = sum_k ||sum_v e[v, k] x_v||^2.  Inline: cimporting this file
# compiles the functions into the cimporting module.
from cython cimport floating
from libc.stdlib cimport free
from libc.string cimport memset

from ssvm_core._typedefs cimport float64_t, int32_t, intp_t
from ssvm_core._vector cimport checked_malloc


cdef enum:
    # Node entries of a direction whose nodes and states gram_sqnorm keeps on the
    # stack (more: malloc)
    _SQNORM_STACK = 64


cdef inline float64_t gram_sqnorm(const float64_t* G, intp_t n, intp_t U, const int32_t* idx,
                                  const float64_t* val, intp_t nnz) except? -1 nogil:
    """The node part of ||A_i e||^2 from the graph's n x n Gram G[u, v] = <x_u, x_v>:
    sum over entries (u, k), (v, k) of one state of G[u, v] e[u, k] e[v, k], for
    the nnz node entries (idx, val) of e (distinct, increasing); O(nnz^2)."""
    cdef intp_t j, j2
    cdef const float64_t* Gv
    cdef float64_t total = 0.0, cross = 0.0
    cdef intp_t small[2 * _SQNORM_STACK]
    cdef intp_t* vk = small                 # node of entry j at 2 j, state at 2 j + 1
    if nnz > _SQNORM_STACK:
        vk = <intp_t*> checked_malloc(2 * nnz * sizeof(intp_t), "Gram norm workspace")
    for j in range(nnz):
        vk[2 * j] = idx[j] // U
        vk[2 * j + 1] = idx[j] - vk[2 * j] * U
    for j in range(nnz):
        Gv = G + vk[2 * j] * n
        total += Gv[vk[2 * j]] * val[j] * val[j]
        for j2 in range(j + 1, nnz):
            if vk[2 * j2 + 1] == vk[2 * j + 1]:
                cross += Gv[vk[2 * j2]] * val[j] * val[j2]
    if vk != small:
        free(vk)
    return total + 2.0 * cross


cdef inline float64_t rows_sqnorm(const intp_t* row_ptr, const int32_t* col, const floating* x,
                                  intp_t F, intp_t U, const int32_t* idx, const float64_t* val,
                                  intp_t nnz) except? -1 nogil:
    """The node part of ||A_i e||^2 without a Gram, in time and memory linear in the
    rows the nnz node entries (idx, val) of e touch: per state k,
    ||sum_v e[v, k] x_v||^2 summed in an F-vector.  Node v's row is
    col[row_ptr[v]:row_ptr[v + 1]] (values x), v local to the graph."""
    cdef intp_t j, q, k, p, v
    cdef float64_t total = 0.0, a
    cdef const char* what = "Gram norm workspace"
    # the entries grouped by state (a counting sort)
    cdef intp_t* first = <intp_t*> checked_malloc((U + 1) * sizeof(intp_t), what)
    cdef intp_t* order = <intp_t*> checked_malloc((nnz + 1) * sizeof(intp_t), what)
    cdef float64_t* acc = <float64_t*> checked_malloc((F + 1) * sizeof(float64_t), what)
    memset(first, 0, (U + 1) * sizeof(intp_t))
    memset(acc, 0, (F + 1) * sizeof(float64_t))
    for j in range(nnz):
        first[idx[j] % U + 1] += 1
    for k in range(U):
        first[k + 1] += first[k]
    for j in range(nnz):
        k = idx[j] % U
        order[first[k]] = j
        first[k] += 1
    q = 0
    for k in range(U):                      # first[k] is now where state k ends
        for j in range(q, first[k]):
            a = val[order[j]]
            v = idx[order[j]] // U
            for p in range(row_ptr[v], row_ptr[v + 1]):
                acc[col[p]] += a * x[p]
        for j in range(q, first[k]):        # the squares, zeroed for the next state
            v = idx[order[j]] // U
            for p in range(row_ptr[v], row_ptr[v + 1]):
                total += acc[col[p]] * acc[col[p]]
                acc[col[p]] = 0.0
        q = first[k]
    free(first)
    free(order)
    free(acc)
    return total
