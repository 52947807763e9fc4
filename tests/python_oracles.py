"""Python oracles over a compiled one, importable by Dask worker processes (tests/ is on
their path): the Python-oracle and lost-worker cases of the parallel tests."""

from __future__ import annotations

import os


class PythonChain:
    """A Python oracle (it needs the GIL) answering as the compiled chain oracle."""

    def __init__(self, oracle, exact=True):
        self.oracle, self.n_blocks, self.n_features = oracle, oracle.n_blocks, oracle.n_features
        self.max_labels = oracle.max_labels
        self._exact = exact

    @property
    def exact(self):
        return self._exact

    def solve(self, i, w):
        return self.oracle.solve_py(i, w)[:3]

    def evaluate(self, i, labels, w):
        return self.oracle.evaluate_py(i, labels, w)[:2]


class KillingChain(PythonChain):
    """Kills the worker process that first solves block 3 (once: a marker file)."""

    def __init__(self, oracle, marker):
        super().__init__(oracle)
        self.marker = str(marker)

    def solve(self, i, w):
        if i == 3 and not os.path.exists(self.marker):
            try:
                from distributed import get_worker

                get_worker()
            except ValueError:                                 # in the client
                pass
            else:
                open(self.marker, "w").close()
                os._exit(1)
        return super().solve(i, w)
