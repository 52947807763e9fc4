"""``StateView``: the C view of a ``SolverState`` that the one-pass kernels step on,
and the sum tree of gap sampling (Osokin et al. (2016), Alg. 2) it builds."""

import numpy as np

from ssvm_core._typedefs cimport float64_t, intp_t
from ssvm_core._oracle cimport MaxOracle
from ssvm_core._sampling cimport init_sampler, tree_draw


cdef inline float64_t* _ptr_or_null(float64_t[::1] a) noexcept:
    return NULL if a.shape[0] == 0 else &a[0]


cdef class StateView:
    """C pointers into a ``SolverState`` (and a pass's block order) for a kernel.

    The memoryviews keep the arrays alive and the kernels write through the
    pointers, so the Python side sees the changes in place.  The blocks are
    the state's store (``state.blocks``), stepped on with ``oracle``; the view
    owns the one ``Direction`` a kernel forms its steps in.
    """

    def __cinit__(self, state, order=None, gap_uniforms=None, MaxOracle oracle=None):
        self.store = state.blocks
        self.store.check_basis(oracle)
        self.direction = self.store.direction_buffer(oracle, state.has_box)
        self._ell = state.block_ell
        self._gaps = state.block_gap_estimates
        self.ledger.ell = &self._ell[0]
        self.ledger.gap_estimates = &self._gaps[0]
        self._w = state.w
        self._v = state.v
        self._lower = state.lower
        self._upper = state.upper
        self._avg_u = state.avg_u
        self.primal.w = &self._w[0]
        self.primal.v = &self._v[0]
        self.primal.lower = _ptr_or_null(self._lower)
        self.primal.upper = _ptr_or_null(self._upper)
        self.primal.avg_u = _ptr_or_null(self._avg_u)
        cdef const intp_t* order_ptr = NULL
        cdef const float64_t* uniforms_ptr = NULL
        cdef float64_t* tree_ptr = NULL
        cdef intp_t n_order = 0, n_uniforms = 0, tree_size = 0
        if order is not None:
            self._order = order
            n_order = self._order.shape[0]
            if n_order:
                order_ptr = &self._order[0]
        if gap_uniforms is not None:
            self._uniforms = gap_uniforms
            tree, tree_size = _sum_tree(state.block_gap_estimates)
            self._tree = tree
            tree_ptr = &self._tree[0]
            n_uniforms = self._uniforms.shape[0]
            if n_uniforms:
                uniforms_ptr = &self._uniforms[0]
        init_sampler(&self.sampler, order_ptr, n_order, uniforms_ptr, n_uniforms, tree_ptr,
                     tree_size)


def _sum_tree(const float64_t[::1] weights):
    """Sum tree over weights (NaN and negative entries count as zero)."""
    cdef intp_t n = weights.shape[0], size = 1, i
    while size < n:
        size *= 2
    tree = np.zeros(2 * size)
    cdef float64_t[::1] tv = tree
    for i in range(n):
        tv[size + i] = weights[i] if weights[i] > 0.0 else 0.0   # NaN > 0 is false
    for i in range(size - 1, 0, -1):
        tv[i] = tv[2 * i] + tv[2 * i + 1]
    return tree, size


def sample_proportional(const float64_t[::1] weights, const float64_t[::1] uniforms):
    """Test hook: the blocks the gap sampler draws for ``uniforms`` (no updates)."""
    tree, size = _sum_tree(weights)
    cdef float64_t[::1] tv = tree
    out = np.empty(uniforms.shape[0], dtype=np.intp)
    cdef intp_t k
    for k in range(uniforms.shape[0]):
        out[k] = tree_draw(&tv[0], size, weights.shape[0], uniforms[k])
    return out
