"""Oracle passes at a fixed w, run in parallel threads.

A gap pass makes n independent oracle calls at one w.  Cython oracles
(``needs_gil == False``) run them without the GIL, so contiguous block ranges
go to a thread pool; Python oracles run in the calling thread.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ssvm_core._fw import score_range
from ssvm_core._oracle import MaxOracle


def effective_n_jobs(n_jobs: int | None) -> int:
    """scikit-learn's rule: None is 1, -1 is every core, -2 all but one, ..."""
    if n_jobs is None:
        return 1
    if int(n_jobs) != n_jobs or n_jobs == 0:
        raise ValueError(f"n_jobs must be a nonzero integer or None, got {n_jobs!r}")
    cores = os.cpu_count() or 1
    return max(1, int(n_jobs) if n_jobs > 0 else cores + 1 + int(n_jobs))


def score_pass(oracle: MaxOracle, w: np.ndarray, state=None, n_jobs: int | None = None) -> float:
    """sum_i max_y H_i(y; w): one oracle call per block.

    With a ``state`` whose iterate is ``w``, the exact block gaps are stored
    in ``state.block_gap_estimates`` (see ``ssvm_core._fw.score_range``).  The
    partial sums of the ``n_jobs`` ranges are added in block order, so the
    result depends on ``n_jobs`` only through rounding.
    """
    n = oracle.n_blocks
    jobs = min(effective_n_jobs(n_jobs), n)
    if jobs == 1 or oracle.needs_gil:
        return score_range(oracle, w, state, 0, n)
    bounds = np.linspace(0, n, jobs + 1).astype(int)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        parts = pool.map(lambda k: score_range(oracle, w, state, bounds[k], bounds[k + 1]),
                         range(jobs))
        return float(sum(parts))
