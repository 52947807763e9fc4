"""Time per call of the matching max oracle at the size of the paper's alignment task.

Lacoste-Julien et al. (2013), Sec. 6 / App. F (Taskar et al. 2006): 5,000 training pairs, d = 82,
sentences of 10 to 30 words.  Generates ``--pairs`` such pairs
(``ssvm_data.synthetic.matching``), binds a ``MatchingModel`` and times one
``solve`` per pair through ``ssvm_core.parallel.score_pass`` (as the solver
calls it: compiled, without the GIL), at w = 0 and at the iterate after
``--passes`` BCFW passes, with 1 and 2 threads.  For the design choice it
also times a Python oracle doing the same loss-augmented decoding with
``scipy.optimize.linear_sum_assignment`` on the padded (n_s + n_t) square
matrix, called through the ``PythonOracle`` adapter; both must agree.

Example::

    python benchmarks/scripts/bench_matching.py --pairs 500 --repeat 5 [--band 1]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from _report import print_header, write_json
from scipy.optimize import linear_sum_assignment

from ssvm_core import as_oracle, solve
from ssvm_core.parallel import score_pass
from ssvm_data.synthetic import matching
from ssvm_oracles import MatchingModel


class ScipyMatchingOracle:
    """The same oracle in Python: scipy's assignment on a padded square matrix."""

    def __init__(self, model: MatchingModel, X, Y):
        self.model, self.X, self.Y = model, X, Y
        self.n_blocks, self.n_features = len(X), model.size_joint_feature
        self.max_labels = max(x[0] for x in X)
        self.phi_true = [model.joint_feature(x, y) for x, y in zip(X, Y)]

    def _answer(self, i, y):
        x, y_true = self.X[i], self.Y[i]
        return (self.phi_true[i] - self.model.joint_feature(x, y), self.model.loss(y_true, y))

    def solve(self, i, w):
        n_s, n_t, edges, feats = self.X[i]
        z = 1.0 / n_s
        truth = self.Y[i][edges[:, 0]] == edges[:, 1]
        big = np.zeros((n_s + n_t, n_t + n_s))
        big[:n_s, :n_t] = -1e30
        big[edges[:, 0], edges[:, 1]] = feats @ w + np.where(truth, -3.0 * z, 1.0 * z)
        big[:n_s, n_t:] = np.where(np.eye(n_s) > 0, 0.0, -1e30)
        rows, cols = linear_sum_assignment(big, maximize=True)
        y = np.full(n_s, -1, dtype=np.int32)
        keep = (rows < n_s) & (cols < n_t)
        keep[keep] = big[rows[keep], cols[keep]] > 0
        y[rows[keep]] = cols[keep]
        return (y, *self._answer(i, y))

    def evaluate(self, i, labels, w):
        return self._answer(i, labels)


def _us_per_call(oracle, w: np.ndarray, repeat: int, n_jobs: int | None = None) -> float:
    """Best of ``repeat`` gap passes, in microseconds per oracle call."""
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        score_pass(oracle, w, n_jobs=n_jobs)
        best = min(best, (time.perf_counter() - start) / oracle.n_blocks)
    return 1e6 * best


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--band", type=float, default=0.2,
                        help="candidate-edge band of the generator (1: every pair)")
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    args = parser.parse_args(argv)
    _, machine = print_header("bench_matching.py", argv)

    X, Y = matching(args.pairs, band=args.band, random_state=args.seed)
    model = MatchingModel()
    oracle = model.bind(X, Y)
    trained = solve(oracle, 0.01, max_passes=args.passes, gap_check_every=args.passes,
                    averaging=False, random_state=args.seed, tol=0).state.w.copy()
    python = as_oracle(ScipyMatchingOracle(model, X, Y))
    results = {
        "pairs": oracle.n_blocks, "n_features": oracle.n_features,
        "mean_words": float(np.mean([x[0] for x in X])),
        "mean_candidate_edges": float(np.mean([len(x[2]) for x in X])),
        "machine": machine, "us_per_call": {},
    }
    for name, w in (("zero", np.zeros(oracle.n_features)), ("trained", trained)):
        exact = score_pass(oracle, w)
        reference = score_pass(python, w)
        if not np.isclose(exact, reference, rtol=1e-9, atol=1e-9):
            raise AssertionError(f"Cython and scipy oracles disagree: {exact} vs {reference}")
        results["us_per_call"][name] = {
            "cython_1_thread": _us_per_call(oracle, w, args.repeat),
            "cython_2_threads": _us_per_call(oracle, w, args.repeat, n_jobs=2),
            "scipy_python_oracle": _us_per_call(python, w, args.repeat),
        }
    print(json.dumps(results["us_per_call"], indent=1))
    write_json(args.out, results)
    return results


if __name__ == "__main__":
    main()
