#!/usr/bin/env python
"""Exact duality gap of the block-coordinate variants against effective passes and time.

The protocol of Osokin et al. (2016), Sec. 5.1 / Fig. 3: the 8 combinations of sampling
{uniform, gap} x step {fw, pairwise} x {cache, no cache} (``--variants`` picks
others, e.g. ``perm:hybrid:cache``), several seeds, the plain iterate (no
averaging), gap checks of the solver every ``--gap-check-every`` passes (they
refresh the gap-sampling estimates and count as oracle calls for every
variant).  After every pass the exact gap P(w) - D(alpha) is measured outside
the solver (not counted in passes or time).

Writes a CSV (variant, seed, pass, effective_passes, time, gap, oracle_calls,
cache_hits) and, with ``--png``, a plot of the median gap with its min-max band
against effective passes and against time; prints the median [min, max] gap
per variant at a few pass counts.

Examples::

    SSVM_DATA_HOME=../shared/data python benchmarks/scripts/bench_variants.py \\
        --dataset ocr-large --lam 0.001 --passes 30 --seeds 5 \\
        --csv variants.csv --png variants.png
    python benchmarks/scripts/bench_variants.py --dataset synthetic-horseseg --lam 1
"""

from __future__ import annotations

import argparse
import csv
import itertools
import statistics
import sys

import numpy as np
from _report import print_header

import ssvm_data
from ssvm_core import SolverState, dual_objective, primal_objective, solve

DEFAULT_VARIANTS = [f"{s}:{t}:{c}" for s, t, c in
                    itertools.product(("uniform", "gap"), ("fw", "pairwise"),
                                      ("nocache", "cache"))]


def parse_variant(text: str) -> dict:
    sampling, step, cache = text.split(":")
    if cache not in ("cache", "nocache"):
        raise ValueError(f"variant {text!r}: the third field must be cache or nocache")
    return {"sampling": sampling, "step": step, "cache": cache == "cache"}


def run(oracle, lam: float, variant: dict, seed: int, passes: int, gap_check_every: int,
        box) -> list[dict]:
    """One run; a row per pass with the exact gap measured outside the solver."""
    state = SolverState.for_oracle(oracle, lam, averaging=False, box=box,
                                   active_sets=variant["step"] != "fw" or variant["cache"])
    rows = []

    def monitor(rec: dict) -> None:
        gap = primal_objective(oracle, lam, state.w) - dual_objective(state)
        rows.append({"pass": rec["pass"], "effective_passes": rec["effective_passes"],
                     "time": rec["time"], "gap": gap, "oracle_calls": rec["oracle_calls"],
                     "cache_hits": rec["cache_hits_local"] + rec["cache_hits_global"]})

    solve(oracle, lam, **variant, box=box, averaging=False, tol=0, max_passes=passes,
          gap_check_every=gap_check_every, state=state, random_state=seed,
          callback=monitor)
    return rows


def plot(rows: list[dict], variants: list[str], path: str, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for k, name in enumerate(variants):
        mine = [r for r in rows if r["variant"] == name]
        by_pass = sorted({r["pass"] for r in mine})
        for ax, key in zip(axes, ("effective_passes", "time")):
            x, med, lo, hi = [], [], [], []
            for p in by_pass:
                at = [r for r in mine if r["pass"] == p]
                x.append(statistics.median(r[key] for r in at))
                gaps = [max(r["gap"], 1e-16) for r in at]
                med.append(statistics.median(gaps))
                lo.append(min(gaps))
                hi.append(max(gaps))
            style = "-" if ":fw:" in name else "--"
            line, = ax.plot(x, med, style, label=name, color=f"C{k}")
            ax.fill_between(x, lo, hi, alpha=0.15, color=line.get_color())
    for ax, label in zip(axes, ("effective passes (oracle calls / n)", "seconds")):
        ax.set_yscale("log")
        ax.set_xlabel(label)
        ax.set_ylabel("duality gap")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="ocr-large",
                        help="a name from `ssvm datasets` (real data needs $SSVM_DATA_HOME)")
    parser.add_argument("--n", type=int, default=None, help="use the first n examples only")
    parser.add_argument("--lam", type=float, default=0.001)
    parser.add_argument("--passes", type=int, default=30)
    parser.add_argument("--gap-check-every", type=int, default=10)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--variants", nargs="+", default=DEFAULT_VARIANTS,
                        help="sampling:step:cache|nocache")
    parser.add_argument("--csv", default=None)
    parser.add_argument("--png", default=None)
    args = parser.parse_args(argv)
    variants = {name: parse_variant(name) for name in args.variants}

    X, Y, _, Y_test = ssvm_data.load_dataset(args.dataset, random_state=0)
    model = ssvm_data.model_for(args.dataset, Y, Y_test)
    if args.n is not None:
        X, Y = X[:args.n], Y[:args.n]
    oracle = model.bind(X, Y)
    box = model.weight_bounds() if hasattr(model, "weight_bounds") else None
    title = (f"{args.dataset} (n={oracle.n_blocks}, d={oracle.n_features}), lam={args.lam}, "
             f"{args.seeds} seeds")
    print_header("bench_variants.py", argv)
    print(title + f", gap checks every {args.gap_check_every} passes, plain iterate")

    rows = []
    for name, variant in variants.items():
        for seed in range(args.seeds):
            rows += [{"variant": name, "seed": seed, **r}
                     for r in run(oracle, args.lam, variant, seed, args.passes,
                                  args.gap_check_every, box)]

    marks = sorted({0, 1, args.passes // 4, args.passes // 2, args.passes})
    print(f"{'variant':>26}" + "".join(f"{'pass ' + str(p):>27}" for p in marks)
          + f"{'s/pass':>9}{'hits/step':>10}")
    for name in variants:
        cells = []
        for p in marks:
            gaps = [r["gap"] for r in rows if r["variant"] == name and r["pass"] == p]
            cells.append(f"{statistics.median(gaps):.3e} [{min(gaps):.1e},{max(gaps):.1e}]")
        last = [r for r in rows if r["variant"] == name and r["pass"] == args.passes]
        per_pass = statistics.median(r["time"] / args.passes for r in last)
        hits = statistics.median(r["cache_hits"] / (args.passes * oracle.n_blocks) for r in last)
        print(f"{name:>26}" + "".join(f"{c:>27}" for c in cells)
              + f"{per_pass:>9.3f}{hits:>10.2f}")
    print("(median [min, max] exact gap over seeds at solver passes; effective passes "
          "and time in the CSV)")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        print(f"wrote {args.csv}")
    if args.png:
        plot(rows, list(variants), args.png, title)
        print(f"wrote {args.png}")
    return 0 if all(np.isfinite(r["gap"]) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
