# cython: language_level=3, boundscheck=False, wraparound=False
"""A wrapper of one's own in Cython: the worked example of "Wrapping an oracle".

``ViolationMonitor(oracle)`` answers exactly as ``oracle`` does and records, per
block, the score H_i(y; w) = L_i(y) - <w, psi_i(y)> of the last answer of ``solve``
(the block's margin violation at the last w the solver asked about; NaN before the
first call).  It derives from ``DelegatingOracle``, which forwards the whole
protocol to the wrapped oracle, and overrides only ``solve`` and ``solve_many``:
a wrapped oracle with compact blocks still trains on compact blocks, and the
wrapper needs the GIL only if the wrapped oracle does.
"""

import numpy as np

from ssvm_core._oracle cimport Corner, DelegatingOracle
from ssvm_core._typedefs cimport float64_t, intp_t


cdef class ViolationMonitor(DelegatingOracle):
    """Records the score of each block's latest ``solve`` answer (``last_scores``)."""
    cdef float64_t[::1] _last                   # per block: concurrent blocks do not race

    def __init__(self, oracle):
        super().__init__(oracle)                # takes the oracle's sizes and flags
        self._last = np.full(self.n_blocks, np.nan)

    @property
    def last_scores(self):
        """H_i(y; w) of block i's latest answer (NaN: never solved)."""
        return np.asarray(self._last).copy()

    cdef int solve(self, intp_t i, const float64_t* w, Corner* out) except -1 nogil:
        self.oracle.solve(i, w, out)
        self._last[i] = out.score
        return 0

    cdef intp_t solve_many(self, intp_t i, const float64_t* w, intp_t k,
                           Corner* outs) except -1 nogil:
        cdef intp_t got = self.oracle.solve_many(i, w, k, outs)
        self._last[i] = outs[0].score           # the argmax comes first
        return got
