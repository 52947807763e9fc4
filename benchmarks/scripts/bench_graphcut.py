"""Time per call of the graph-cut max oracle at HorseSeg's size, against 001 Table 1.

Generates ``--images`` HorseSeg-like images (``ssvm_data.horseseg_like``: 147
superpixels, 1,969 unary and 100 pairwise features by default), binds a
``GraphCutModel`` and times one oracle call per image, averaged over
``--repeat`` gap passes, at two weight vectors: w = 0 and w after
``--passes`` box-constrained BCFW passes (nonzero pairwise weights, so the
cut is not trivial).  Calls go through ``ssvm_core.parallel.score_pass`` on
one thread as in the solver: the Cython ``GraphCutOracle`` (unary potentials
from CSR rows, Boykov-Kolmogorov max-flow, sparse psi and loss, no GIL).  At
HorseSeg's size one image holds about 0.9 MB of features, so a pass over the
images streams them from memory; the "in cache" time repeats the calls on the
first two images only (bound as their own oracle), which separates compute
from memory traffic.  001 Table 1 reports 1e-3 s per call (max oracle plus
joint feature map) for HorseSeg small/medium.

Example::

    python benchmarks/scripts/bench_graphcut.py --images 50 --repeat 5
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

from ssvm_core import solve
from ssvm_core.parallel import score_pass
from ssvm_data import horseseg_like
from ssvm_oracles import GraphCutModel

PAPER_CALL_S = 1e-3  # 001 Table 1, HorseSeg small and medium


def _per_call(fn, n_calls: int, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) / n_calls)
    return times


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=50)
    parser.add_argument("--nodes", type=int, default=147)
    parser.add_argument("--unary", type=int, default=1969)
    parser.add_argument("--pairwise", type=int, default=100)
    parser.add_argument("--passes", type=int, default=10, help="BCFW passes for the trained w")
    parser.add_argument("--lam", type=float, default=0.01)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", default=None, help="also write the report here")
    args = parser.parse_args(argv)

    print(f"$ {' '.join(['bench_graphcut.py'] + (argv if argv is not None else sys.argv[1:]))}")
    print(f"CPU: {platform.processor() or platform.machine()}, nproc={os.cpu_count()}, "
          f"Python {platform.python_version()}, numpy {np.__version__}")
    X, Y = horseseg_like(args.images, n_nodes=args.nodes, n_unary=args.unary,
                         n_pairwise=args.pairwise, random_state=0)
    model = GraphCutModel()
    oracle = model.bind(X, Y)
    small = GraphCutModel().bind(X[:2], Y[:2])
    n_edges = np.mean([len(x.edges) for x in X])
    print(f"{args.images} images, {args.nodes} superpixels and {n_edges:.0f} edges each, "
          f"d = {args.unary} + {args.pairwise}")
    trained = solve(oracle, args.lam, box=model.weight_bounds(), max_passes=args.passes,
                    gap_check_every=args.passes, tol=0.0, random_state=0)
    weights = {"w_zero": np.zeros(oracle.n_features), "w_trained": trained.w}
    print(f"trained w: {args.passes} BCFW passes at lam={args.lam}, gap {trained.gap:.3g}, "
          f"{int(np.sum(trained.w[args.unary:] > 0))} of {args.pairwise} pairwise weights > 0")

    report = {"data": {"n_images": args.images, "n_nodes": args.nodes,
                       "n_unary": args.unary, "n_pairwise": args.pairwise,
                       "mean_edges": float(n_edges)},
              "paper_call_s": PAPER_CALL_S, "oracle_call_s": {}, "in_cache_call_s": {}}
    for name, w in weights.items():
        score_pass(oracle, w, n_jobs=1)  # warm-up
        times = _per_call(lambda w=w: score_pass(oracle, w, n_jobs=1), oracle.n_blocks,
                          args.repeat)
        best = min(times)
        report["oracle_call_s"][name] = best
        cached = min(_per_call(lambda w=w: score_pass(small, w, n_jobs=1), small.n_blocks,
                               10 * args.repeat))
        report["in_cache_call_s"][name] = cached
        print(f"{name:>9}: {best * 1e6:7.1f} us per call (best of {args.repeat} passes; "
              f"{PAPER_CALL_S / best:.0f}x faster than the paper's {PAPER_CALL_S * 1e6:.0f} us);"
              f" in cache {cached * 1e6:.1f} us ({PAPER_CALL_S / cached:.0f}x)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return report


if __name__ == "__main__":
    main()
