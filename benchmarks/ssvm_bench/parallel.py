"""Mini-batch BCFW (``solve(batch_blocks=tau)``) on OCR-large: one pass by tau and executor.

``scripts/bench_parallel.py`` has the full grid (pose, graph cuts, Dask); this
suite tracks the per-round overhead on the cheap chain oracle, where it
shows most: tau in {1, 16, 64}, serial or 2 threads.
"""

from __future__ import annotations

import functools
from typing import ClassVar

import numpy as np

from ssvm_core import SolverState, _fw
from ssvm_core.executors import SerialExecutor, ThreadExecutor
from ssvm_core.minibatch import minibatch_pass

from .common import LAM, ORDER_SEED, SSVMBenchmark, block_order, bound_oracle, data_home


@functools.lru_cache(maxsize=2)
def _warm_state(dataset: str, home: str | None):
    """The oracle and a state after one BCFW pass (the first pass page-faults)."""
    oracle = bound_oracle(dataset)
    state = SolverState.for_oracle(oracle, LAM, averaging=True)
    _fw.bcfw_pass(oracle, state, block_order(oracle.n_blocks, ORDER_SEED), True)
    return oracle, state


def warm_state(dataset: str):
    return _warm_state(dataset, data_home())


class MiniBatchSuite(SSVMBenchmark):
    """One pass of n block steps in rounds of tau blocks (``minibatch.minibatch_pass``).

    Each sample continues the same run from the warm state.  tau = 1 with the
    serial executor is timed on the replay path too, so its difference from
    ``BCFWSuite.time_one_pass`` is the cost of the rounds themselves.
    """

    params: ClassVar[list] = [SSVMBenchmark.params[0], [1, 16, 64], ["serial", "threads"]]
    param_names: ClassVar[list] = ["dataset", "tau", "executor"]

    def setup(self, dataset, tau, executor):
        self.oracle, self.state = warm_state(dataset)
        self.executor = SerialExecutor() if executor == "serial" else ThreadExecutor(2)
        self.rng = np.random.default_rng(ORDER_SEED)

    def teardown(self, dataset, tau, executor):
        self.executor.close()

    def time_one_pass(self, dataset, tau, executor):
        minibatch_pass(self.oracle, self.state, self.executor, self.rng, tau)
