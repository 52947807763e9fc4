"""Time per call of the graph-cut max oracle at HorseSeg's size, against Osokin et al. (2016),
Table 1.

Generates ``--images`` HorseSeg-like images (``ssvm_data.horseseg_like``: 147
superpixels, 1,969 unary and 100 pairwise features by default) and binds a
``GraphCutModel`` twice: features stored as float64 and as float32
(``feature_dtype="float32"``: features rounded once, arithmetic in float64).
Three measurements, each side by side for both storages:

1. fixed weights: one oracle call per image through
   ``ssvm_core.parallel.score_pass`` on one thread, as in the solver's gap
   passes, best of ``--repeat`` passes interleaved between the storages, at
   w = 0 and at w after ``--passes`` box-constrained BCFW passes at ``--lam``
   (nonzero pairwise weights, so the cut is not trivial); "in cache" repeats
   the calls on the first two images only, which separates compute from
   memory traffic;
2. training average, Osokin et al. (2016), Table 1's measure ("the average running times of the
   max oracle and the joint feature map"): mean seconds per oracle call over a
   box-constrained BCFW run of ``--train-passes`` passes at each of
   ``--train-lams`` (the paper's HorseSeg values are 0.1 to 1000), timed by
   ``CountingOracle(timing=True)``;
3. the PyMaxflow backend (``backend="pymaxflow"``, a Python oracle), at the
   trained w, when PyMaxflow is installed.

Osokin et al. (2016), Table 1 reports 1e-3 s per call for HorseSeg small and medium.

Example::

    python benchmarks/scripts/bench_graphcut.py --images 50 --repeat 20
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _report import print_header, write_json
from _timing import mean_call_seconds_in_training

from ssvm_core import as_oracle, solve
from ssvm_core.parallel import score_pass
from ssvm_data import horseseg_like
from ssvm_oracles import GraphCutModel

PAPER_CALL_S = 1e-3  # Osokin et al. (2016), Table 1, HorseSeg small and medium
DTYPES = ("float64", "float32")


def _per_call(fn, n_calls: int) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) / n_calls


def _best_interleaved(oracles: dict, w: np.ndarray, repeat: int) -> dict:
    """Best seconds per call of a score pass, the oracles taking turns ``repeat`` times."""
    times = {name: [] for name in oracles}
    for oracle in oracles.values():
        score_pass(oracle, w, n_jobs=1)                     # warm-up
    for _ in range(repeat):
        for name, oracle in oracles.items():
            times[name].append(_per_call(lambda o=oracle: score_pass(o, w, n_jobs=1),
                                         oracle.n_blocks))
    return {name: min(t) for name, t in times.items()}


def _speedup(seconds: float) -> str:
    return f"{seconds * 1e6:6.1f} us ({PAPER_CALL_S / seconds:4.0f}x)"


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=50)
    parser.add_argument("--nodes", type=int, default=147)
    parser.add_argument("--unary", type=int, default=1969)
    parser.add_argument("--pairwise", type=int, default=100)
    parser.add_argument("--passes", type=int, default=10, help="BCFW passes for the trained w")
    parser.add_argument("--lam", type=float, default=0.01)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--train-lams", type=float, nargs="*", default=[0.1, 1.0, 10.0])
    parser.add_argument("--train-passes", type=int, default=20)
    parser.add_argument("--json", default=None, help="also write the report here")
    args = parser.parse_args(argv)

    print_header("bench_graphcut.py", argv)
    X, Y = horseseg_like(args.images, n_nodes=args.nodes, n_unary=args.unary,
                         n_pairwise=args.pairwise, random_state=0)
    models = {dtype: GraphCutModel(feature_dtype=dtype) for dtype in DTYPES}
    oracles = {dtype: model.bind(X, Y) for dtype, model in models.items()}
    small = {dtype: model.bind(X[:2], Y[:2]) for dtype, model in models.items()}
    n_edges = np.mean([len(x.edges) for x in X])
    print(f"{args.images} images, {args.nodes} superpixels and {n_edges:.0f} edges each, "
          f"d = {args.unary} + {args.pairwise}; paper: {PAPER_CALL_S * 1e6:.0f} us per call")
    box = models["float64"].weight_bounds()
    trained = solve(oracles["float64"], args.lam, box=box, max_passes=args.passes,
                    gap_check_every=args.passes, tol=0.0, random_state=0)
    weights = {"w_zero": np.zeros(oracles["float64"].n_features), "w_trained": trained.w}
    print(f"trained w: {args.passes} BCFW passes at lam={args.lam}, gap {trained.gap:.3g}, "
          f"{int(np.sum(trained.w[args.unary:] > 0))} of {args.pairwise} pairwise weights > 0")

    report = {"data": {"n_images": args.images, "n_nodes": args.nodes,
                       "n_unary": args.unary, "n_pairwise": args.pairwise,
                       "mean_edges": float(n_edges)},
              "paper_call_s": PAPER_CALL_S, "oracle_call_s": {}, "in_cache_call_s": {},
              "training_call_s": {}, "pymaxflow_call_s": None}
    print("1. fixed w, best of --repeat passes (speed-up over the paper):")
    for name, w in weights.items():
        best = _best_interleaved(oracles, w, args.repeat)
        cached = _best_interleaved(small, w, 10 * args.repeat)
        report["oracle_call_s"][name] = best
        report["in_cache_call_s"][name] = cached
        print(f"   {name:>9}: " + "; ".join(
            f"{dtype} {_speedup(best[dtype])}, in cache {_speedup(cached[dtype])}"
            for dtype in DTYPES))
    print(f"2. training average over {args.train_passes} box-constrained BCFW passes:")
    for lam in args.train_lams:
        row = {}
        for dtype in DTYPES:
            row[dtype] = mean_call_seconds_in_training(oracles[dtype], lam, box,
                                                       args.train_passes)
        report["training_call_s"][str(lam)] = row
        print(f"   lam={lam:<8g} " + "; ".join(f"{dtype} {_speedup(row[dtype])}"
                                               for dtype in DTYPES))
    try:
        pymaxflow = GraphCutModel(backend="pymaxflow").bind(X, Y)
    except ImportError as exc:
        print(f"3. PyMaxflow backend skipped: {exc}")
    else:
        pair = {"bk": oracles["float64"], "pymaxflow": as_oracle(pymaxflow)}
        best = _best_interleaved(pair, trained.w, max(1, args.repeat // 5))
        report["pymaxflow_call_s"] = best["pymaxflow"]
        print(f"3. PyMaxflow backend at the trained w: {_speedup(best['pymaxflow'])}, "
              f"{best['pymaxflow'] / best['bk']:.1f}x the time of the built-in backend "
              f"({_speedup(best['bk'])})")
    write_json(args.json, report)
    return report


if __name__ == "__main__":
    main()
