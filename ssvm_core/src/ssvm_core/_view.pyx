"""``StateView``: the C view of a ``SolverState`` that the one-pass kernels step on,
and the sum tree of gap sampling (Osokin et al. (2016), Alg. 2) it builds."""

import numpy as np

from libc.stdint cimport uint8_t, uint64_t

from ssvm_core._typedefs cimport float64_t, int32_t, intp_t
from ssvm_core._oracle cimport MaxOracle
from ssvm_core._sampling cimport tree_draw
from ssvm_core._vector cimport dot


cdef inline float64_t* _ptr_or_null(float64_t[::1] a) noexcept:
    return NULL if a.shape[0] == 0 else &a[0]


cdef class StateView:
    """C pointers into a ``SolverState`` (and a pass's block order) for a kernel.

    The memoryviews keep the arrays alive; a kernel writes through the
    pointers and the Python side sees the changes in place (a compact state's
    ``block_values`` too, which are read-only to Python because the kernels
    keep their mask of possibly nonzero coordinates, ``block_mask``, in step
    with them).  A state with compact blocks needs its ``oracle``, which
    sizes the step scratch.
    """

    def __cinit__(self, state, order=None, gap_uniforms=None, MaxOracle oracle=None):
        self._values = state.block_values
        self._ptr = state.block_ptr
        self._support = state.block_support
        self._ell = state.block_ell
        self._gaps = state.block_gap_estimates
        self.blocks.values = <float64_t*> &self._values[0] if self._values.shape[0] else NULL
        self.blocks.ptr = &self._ptr[0]
        self.blocks.support = NULL if self._support.shape[0] == 0 else &self._support[0]
        self.blocks.ell = &self._ell[0]
        self.blocks.gap_estimates = &self._gaps[0]
        self.blocks.compact = state.compact_blocks
        self.blocks.mask = NULL
        self.blocks.mask_ptr = NULL
        self.blocks.e_idx = NULL
        self.blocks.e = NULL
        self.blocks.ex_idx = NULL
        self.blocks.ex_val = NULL
        self.blocks.pos = NULL
        if self.blocks.compact:
            if oracle is None or oracle.max_coords <= 0:
                raise ValueError("a state with compact blocks needs an oracle that offers "
                                 "them (MaxOracle.max_coords > 0)")
            self._mask = state.block_mask
            self._mask_ptr = state.block_mask_ptr
            self.blocks.mask = &self._mask[0]
            self.blocks.mask_ptr = &self._mask_ptr[0]
            self._e_idx = np.zeros(oracle.max_coords, dtype=np.int32)
            self._e = np.zeros(oracle.max_coords)
            self._ex_idx = np.zeros(max(oracle.max_expand, 1), dtype=np.int32)
            self._ex_val = np.zeros(max(oracle.max_expand, 1))
            self.blocks.e_idx = &self._e_idx[0]
            self.blocks.e = &self._e[0]
            self.blocks.ex_idx = &self._ex_idx[0]
            self.blocks.ex_val = &self._ex_val[0]
            if state.has_box:
                self._pos = np.full(oracle.n_features, -1, dtype=np.int32)
                self.blocks.pos = &self._pos[0]
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
        self.sampler.order = NULL
        self.sampler.n_order = 0
        self.sampler.uniforms = NULL
        self.sampler.n_uniforms = 0
        self.sampler.tree = NULL
        self.sampler.tree_size = 0
        if order is not None:
            self._order = order
            self.sampler.n_order = self._order.shape[0]
            if self.sampler.n_order:
                self.sampler.order = &self._order[0]
        if gap_uniforms is not None:
            self._uniforms = gap_uniforms
            tree, self.sampler.tree_size = _sum_tree(state.block_gap_estimates)
            self._tree = tree
            self.sampler.tree = &self._tree[0]
            self.sampler.n_uniforms = self._uniforms.shape[0]
            if self.sampler.n_uniforms:
                self.sampler.uniforms = &self._uniforms[0]


def frame_scratch(MaxOracle oracle, state):
    """Zeroed scratch for a corner in the state's block frame: length d, or the
    oracle's ``max_coords`` for compact blocks."""
    return np.zeros(max(oracle.max_coords if state.compact_blocks else oracle.n_features, 1))


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


def compact_inner(MaxOracle oracle, const float64_t[::1] values, const intp_t[::1] ptr,
                  const float64_t[::1] w):
    """<v_i, w> = <b_i, A_i^T w> of every compact block (one ``coord_scores`` each)."""
    cdef intp_t n = ptr.shape[0] - 1, i
    out = np.zeros(n)
    cdef float64_t[::1] o = out
    cdef float64_t[::1] theta = np.zeros(max(oracle.max_coords, 1))
    for i in range(n):
        oracle.coord_scores(i, &w[0], &theta[0])
        o[i] = dot(&values[ptr[i]], &theta[0], ptr[i + 1] - ptr[i])
    return out


def compact_total(MaxOracle oracle, const float64_t[::1] values, const intp_t[::1] ptr):
    """sum_i A_i b_i of the compact blocks, a dense d-vector."""
    cdef intp_t n = ptr.shape[0] - 1, i, k, nnz, m
    out = np.zeros(oracle.n_features)
    cdef float64_t[::1] o = out
    cdef int32_t[::1] idx = np.zeros(max(oracle.max_expand, 1), dtype=np.int32)
    cdef float64_t[::1] val = np.zeros(max(oracle.max_expand, 1))
    cdef int32_t[::1] b_idx = np.zeros(max(oracle.max_coords, 1), dtype=np.int32)
    cdef float64_t[::1] b_val = np.zeros(max(oracle.max_coords, 1))
    for i in range(n):
        m = 0
        for k in range(ptr[i + 1] - ptr[i]):
            if values[ptr[i] + k] != 0.0:
                b_idx[m] = <int32_t> k
                b_val[m] = values[ptr[i] + k]
                m += 1
        if m == 0:
            continue
        nnz = oracle.coord_expand(i, &b_idx[0], &b_val[0], m, &idx[0], &val[0])
        for k in range(nnz):
            o[idx[k]] += val[k]
    return out


def coord_masks(const float64_t[::1] values, const intp_t[::1] ptr, atoms=None):
    """The mask of compact blocks (see ``_blocks.pxd``) rebuilt from the values and,
    with active sets, the coordinates of every stored atom: ``(mask, mask_ptr)``,
    block i's bits in ``mask[mask_ptr[i]:mask_ptr[i + 1]]`` (uint64 words)."""
    cdef intp_t n = ptr.shape[0] - 1, i, k, m
    sizes = np.diff(np.asarray(ptr))
    mask_ptr = np.zeros(n + 1, dtype=np.intp)
    np.cumsum((sizes + 63) // 64, out=mask_ptr[1:])
    mask = np.zeros(max(int(mask_ptr[n]), 1), dtype=np.uint64)
    cdef uint64_t[::1] mv = mask
    cdef const intp_t[::1] mp = mask_ptr
    cdef const uint8_t[::1] used
    for i in range(n):
        m = ptr[i + 1] - ptr[i]
        if atoms is not None and m:
            used = np.ascontiguousarray(
                (np.asarray(atoms.psi_matrix(i, m)) != 0.0).any(axis=0), dtype=np.uint8)
        else:
            used = None
        for k in range(m):
            if values[ptr[i] + k] != 0.0 or (used is not None and used[k]):
                mv[mp[i] + (k >> 6)] |= (<uint64_t> 1) << (k & 63)
    return mask, mask_ptr
