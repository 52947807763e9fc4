#!/usr/bin/env python
"""Regularization path against grid search: cumulative cost along lambda (Osokin et al. (2016),
Fig. 4, App. K).

Methods (``--methods``):

- ``eps-path``: the eps-approximate path (Osokin et al. (2016), Alg. 6-7, exact gaps, kappa 0.9);
- ``heuristic``: the heuristic path of App. K (stale gap estimates, kappa 0.7);
  its exact gaps are computed for the record, outside its cost;
- ``grid-cold``, ``grid-keep-duals``, ``grid-keep-primal``: the grid
  2^15, ..., 2^-15 solved to the eps-path's breakpoint tolerance kappa eps,
  from a fresh state per lambda, keeping alpha (rescaled w) or keeping w
  (rescaled alpha, Osokin et al. (2016), Prop. 1).

Every method uses the same solver variant (``--step``, ``--sampling``,
``--cache``) and counts every oracle call (effective passes = calls / n) and
wall-clock seconds.  Writes a CSV (method, index, lam, effective_passes, time,
gap, gap_bound, status) and a PNG (cumulative time and passes to reach each
lambda), and prints, at a few lambdas of the grid, the cost of each method to
reach it and the ratio path / grid.

Examples::

    SSVM_DATA_HOME=../shared/data python benchmarks/scripts/bench_paths.py \\
        --dataset ocr-small --eps 0.1 --step fw --csv paths.csv --png paths.png
    python benchmarks/scripts/bench_paths.py --dataset synthetic-horseseg --methods eps-path
"""

from __future__ import annotations

import argparse
import csv
import math
import sys

import numpy as np

import ssvm_data
from ssvm_paths import DEFAULT_GRID, grid_search, plot_costs, regularization_path

METHODS = ("eps-path", "heuristic", "grid-cold", "grid-keep-duals", "grid-keep-primal")


def run_method(method: str, model, X, Y, args) -> object:
    # box: the default "auto", the bounds the model declares (graph cuts: w_P >= 0)
    solver = {"step": args.step, "sampling": args.sampling, "cache": args.cache,
              "max_passes": args.max_passes, "gap_check_every": args.gap_check_every,
              "random_state": args.seed, "n_jobs": args.n_jobs}
    if method in ("eps-path", "heuristic"):
        heuristic = method == "heuristic"
        return regularization_path(model, X, Y, eps=args.eps,
                                   kappa=args.heuristic_kappa if heuristic else args.kappa,
                                   lam_min=args.lam_min, heuristic=heuristic, **solver)
    grid = DEFAULT_GRID[DEFAULT_GRID >= args.lam_min * (1 - 1e-12)]
    return grid_search(model, X, Y, grid, warm_start=method.removeprefix("grid-"),
                       eps=args.eps, kappa=args.kappa, **solver)


def rows_of(method: str, result) -> list[dict]:
    is_path = hasattr(result, "gap_bounds")
    bounds = result.gap_bounds if is_path else result.gaps
    statuses = [result.status] * len(result.lams) if is_path else result.statuses
    return [{"method": method, "index": j, "lam": lam, "effective_passes": p, "time": t,
             "gap": g, "gap_bound": b, "status": s}
            for j, (lam, p, t, g, b, s) in enumerate(zip(
                result.lams, result.effective_passes, result.times, result.gaps, bounds,
                statuses))]


def cost_to_reach(result, lam: float) -> tuple[float, float] | None:
    """Cumulative (passes, seconds) when ``result`` first covers ``lam``, or None."""
    if hasattr(result, "piece"):             # a path covers [lam_end, inf)
        if lam < result.lam_end:
            return None
        j = max(result.piece(lam), 0)
    else:
        hits = np.flatnonzero(np.isclose(result.lams, lam, rtol=1e-12))
        if hits.size == 0:
            return None
        j = int(hits[0])
    return float(result.effective_passes[j]), float(result.times[j])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="ocr-small")
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--eps", type=float, default=0.1)
    parser.add_argument("--kappa", type=float, default=0.9)
    parser.add_argument("--heuristic-kappa", type=float, default=0.7)
    parser.add_argument("--lam-min", type=float, default=2.0 ** -15)
    parser.add_argument("--methods", default=",".join(METHODS),
                        help=f"comma-separated subset of {', '.join(METHODS)}")
    parser.add_argument("--step", default="pairwise")
    parser.add_argument("--sampling", default="gap")
    parser.add_argument("--cache", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--max-passes", type=int, default=1000,
                        help="solver passes per breakpoint / grid point")
    parser.add_argument("--gap-check-every", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-jobs", type=int, default=None)
    parser.add_argument("--csv", default=None)
    parser.add_argument("--png", default=None)
    args = parser.parse_args(argv)
    methods = args.methods.split(",")
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        parser.error(f"unknown methods {unknown}; choose from {METHODS}")

    X, Y, _, _ = ssvm_data.load_dataset(args.dataset, data_home=args.data_home,
                                        random_state=args.seed)
    model = ssvm_data.model_for(args.dataset, Y, Y)
    variant = f"{args.sampling}:{args.step}:{'cache' if args.cache else 'nocache'}"
    print(f"{args.dataset}: n = {len(X)}, eps = {args.eps}, solver {variant}")
    results, rows = {}, []
    for method in methods:
        result = run_method(method, model, X, Y, args)
        results[method] = result
        rows += rows_of(method, result)
        worst = float(np.nanmax([r["gap_bound"] for r in rows if r["method"] == method]))
        print(f"{method:17s} {len(result.lams):4d} lambdas down to {result.lams[-1]:.4g}: "
              f"{result.effective_passes[-1]:9.1f} effective passes, {result.times[-1]:8.1f} s, "
              f"largest certified gap {worst:.4f}", flush=True)
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    if args.png:
        plot_costs(results, out=args.png,
                   title=f"{args.dataset}, eps = {args.eps}, {variant}")
    grids = [m for m in methods if m.startswith("grid-")]
    paths = [m for m in methods if not m.startswith("grid-")]
    print("\ncost to reach lambda (effective passes / seconds); ratio path / grid")
    for lam in DEFAULT_GRID[::5]:
        cells = []
        for method in methods:
            cost = cost_to_reach(results[method], lam)
            cells.append(f"{method} " + ("-" if cost is None else f"{cost[0]:.0f}/{cost[1]:.1f}s"))
        ratios = []
        for p in paths:
            for g in grids:
                cp, cg = cost_to_reach(results[p], lam), cost_to_reach(results[g], lam)
                if cp is not None and cg is not None and cg[0] > 0 and cg[1] > 0:
                    ratios.append(f"{p}/{g} {cp[0] / cg[0]:.2f}x passes {cp[1] / cg[1]:.2f}x time")
        print(f"lambda 2^{round(math.log2(lam)):+d}: " + ", ".join(cells))
        if ratios:
            print("    " + "; ".join(ratios))
    return 0


if __name__ == "__main__":
    sys.exit(main())
