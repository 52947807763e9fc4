"""Max-oracle microbenchmarks: loss-augmented Viterbi on OCR words, min-cut on HorseSeg-like
images."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ssvm_core import solve
from ssvm_core.parallel import score_pass

from .common import (
    ORDER_SEED,
    OracleMixin,
    PerCallTimer,
    SSVMBenchmark,
    bound_oracle,
    default_dataset,
    graphcut_problem,
    horseseg_dataset,
)


class ViterbiSuite(OracleMixin, SSVMBenchmark):
    """Seconds per ``ChainOracle`` call (loss-augmented Viterbi, K = 26, F = 128).

    The timed function is ``ssvm_core.parallel.score_pass``: n oracle calls from C
    without the GIL, reusing one corner buffer, which is how the solver calls
    the oracle.  ``PerCallTimer`` divides the time by n, so the result is the
    mean over all training words of one call, loop overhead included (a few
    nanoseconds per call).

    ``w`` is the zero vector (H_i(y; 0) = L_i(y): the calls of the first gap
    check) or the iterate after ``trained_passes`` BCFW passes (the regime of
    a solver run).
    """

    params: ClassVar[list] = [[default_dataset()], ["zero", "trained"]]
    param_names: ClassVar[list] = ["dataset", "w"]
    trained_passes = 5
    number = 1  # required by PerCallTimer
    repeat = (3, 20, 20.0)

    def setup_cache(self):
        """Weights after a few passes, one vector per dataset (pickled by asv)."""
        weights = {}
        for dataset in self.params[0]:
            try:
                oracle = bound_oracle(dataset)
            except NotImplementedError:
                continue
            result = solve(oracle, self.lam, max_passes=self.trained_passes,
                           gap_check_every=self.trained_passes, averaging=False,
                           random_state=ORDER_SEED, tol=0)
            weights[dataset] = result.state.w.copy()
        return weights

    def setup(self, weights, dataset, w):
        self.setup_oracle(dataset)
        if w == "zero":
            self.w = np.zeros(self.n_features)
        elif dataset in weights and weights[dataset].shape == (self.n_features,):
            self.w = weights[dataset]
        else:
            raise NotImplementedError(f"no trained weights for {dataset!r} at this size")
        self.timer = PerCallTimer(self.n_blocks)

    def time_oracle_call(self, weights, dataset, w):
        score_pass(self.oracle, self.w)


class GraphCutSuite(SSVMBenchmark):
    """Seconds per ``GraphCutOracle`` call at HorseSeg's size (Osokin et al. (2016), Table 1: 1e-3
    s).

    50 ``horseseg_like`` images (147 superpixels, 1,969 unary and 100
    pairwise features), the features stored as float64 or float32
    (``GraphCutModel(feature_dtype=...)``), at w = 0 or after
    ``trained_passes`` box-constrained BCFW passes (nonzero pairwise weights:
    a non-trivial cut).  Timed like ``ViterbiSuite``: one ``score_pass``,
    divided by the number of calls.
    """

    params: ClassVar[list] = [[horseseg_dataset()], ["float64", "float32"],
                              ["zero", "trained"]]
    param_names: ClassVar[list] = ["dataset", "feature_dtype", "w"]
    trained_passes = 5
    number = 1  # required by PerCallTimer
    repeat = (3, 20, 20.0)

    def setup_cache(self):
        """Box-constrained BCFW weights per dataset (float64 features)."""
        weights = {}
        for dataset in self.params[0]:
            model, oracle = graphcut_problem(dataset, "float64")
            result = solve(oracle, self.lam, box=model.weight_bounds(),
                           max_passes=self.trained_passes, gap_check_every=self.trained_passes,
                           averaging=False, random_state=ORDER_SEED, tol=0)
            weights[dataset] = result.state.w.copy()
        return weights

    def setup(self, weights, dataset, feature_dtype, w):
        _, self.oracle = graphcut_problem(dataset, feature_dtype)
        self.w = np.zeros(self.oracle.n_features) if w == "zero" else weights[dataset]
        self.timer = PerCallTimer(self.oracle.n_blocks)

    def time_oracle_call(self, weights, dataset, feature_dtype, w):
        score_pass(self.oracle, self.w)
