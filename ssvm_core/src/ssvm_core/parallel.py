"""Oracle passes at a fixed w, run in parallel threads.

A gap pass makes n independent oracle calls at one w.  Cython oracles
(``needs_gil == False``) run them without the GIL, so contiguous block ranges
go to a thread pool; Python oracles run in the calling thread.  Every pass
returns the per-block values, and totals are summed over that array in block
order, so results do not depend on the number of threads.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ssvm_core._batch import max_scores as _block_scores
from ssvm_core._oracle import MaxOracle


def effective_n_jobs(n_jobs: int | None) -> int:
    """scikit-learn's rule: None is 1, -1 is every core, -2 all but one, ..."""
    if n_jobs is None:
        return 1
    if int(n_jobs) != n_jobs or n_jobs == 0:
        raise ValueError(f"n_jobs must be a nonzero integer or None, got {n_jobs!r}")
    cores = os.cpu_count() or 1
    return max(1, int(n_jobs) if n_jobs > 0 else cores + 1 + int(n_jobs))


def max_scores(oracle: MaxOracle, w: np.ndarray, n_jobs: int | None = None) -> np.ndarray:
    """max_y H_i(y; w) of every block, shape (n_blocks,): one oracle call per block.

    Parameters
    ----------
    oracle : MaxOracle
        The bound oracle.
    w : ndarray (n_features,)
        The weights.
    n_jobs : int, optional
        Threads (None: 1, -1: all cores); used only when the oracle runs
        without the GIL.
    """
    n = oracle.n_blocks
    w = np.ascontiguousarray(w, dtype=np.float64)
    out = np.empty(n)
    jobs = min(effective_n_jobs(n_jobs), n)
    if jobs == 1 or oracle.needs_gil:
        return _block_scores(oracle, w, np.arange(n))
    bounds = np.linspace(0, n, jobs + 1).astype(int)

    def fill(k: int) -> None:
        out[bounds[k]:bounds[k + 1]] = _block_scores(oracle, w, np.arange(bounds[k],
                                                                         bounds[k + 1]))

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(fill, range(jobs)))
    return out


def score_pass(oracle: MaxOracle, w: np.ndarray, state=None, n_jobs: int | None = None) -> float:
    """sum_i max_y H_i(y; w): one oracle call per block (see ``max_scores``).

    With a ``state`` whose primal point is ``w``, the pass is recorded as an
    exact gap pass (``SolverState.record_gap_pass``): the exact block gaps
    become the state's certified gaps and its gap estimates.  The sum does
    not depend on ``n_jobs``.
    """
    scores = max_scores(oracle, w, n_jobs)
    if state is not None:
        if not np.array_equal(w, state.w):
            raise ValueError("score_pass with a state needs w = state.w")
        state.record_gap_pass(scores, refresh=True)
    return float(np.sum(scores))
