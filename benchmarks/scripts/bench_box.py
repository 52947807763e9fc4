#!/usr/bin/env python
"""Exact duality gap of box-constrained training after a fixed number of passes.

The box of the graph-cut oracle (pairwise weights w_P >= 0, Osokin et al. (2016), App. H and
I.3) on synthetic HorseSeg, the plain iterate (no averaging), for each step type: the
exact gap P(w) - D(alpha) after ``--passes`` passes, median [min, max] over seeds.

``--compare PYTHON`` also runs the same measurement in another interpreter (e.g. the
virtual environment of another build of ssvm-core) and prints both side by side, with
the ratio of the medians (this build / the other).  This is how the exact box line
search (``ssvm_core._linesearch``) is compared with the closed-form step that uses the
full curvature lam ||e||^2.

Examples::

    python benchmarks/scripts/bench_box.py --passes 20 --seeds 3
    python benchmarks/scripts/bench_box.py --compare ../main/.venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

from _report import print_header

import ssvm_data
from ssvm_core import SolverState, dual_objective, primal_objective, solve

STEPS = ("fw", "pairwise")


def measure(dataset: str, n: int | None, lam: float, steps, passes: int,
            seeds: int) -> dict[str, list[float]]:
    """``{step: [exact gap after `passes` passes, one per seed]}``."""
    X, Y, _, Y_test = ssvm_data.load_dataset(dataset, random_state=0)
    model = ssvm_data.model_for(dataset, Y, Y_test)
    if n is not None:
        X, Y = X[:n], Y[:n]
    oracle = model.bind(X, Y)
    box = model.weight_bounds()
    out = {}
    for step in steps:
        out[step] = []
        for seed in range(seeds):
            state = SolverState.for_oracle(oracle, lam, averaging=False, box=box,
                                           active_sets=step != "fw")
            solve(oracle, lam, step=step, box=box, averaging=False, tol=0,
                  max_passes=passes, gap_check_every=passes, state=state,
                  random_state=seed)
            out[step].append(primal_objective(oracle, lam, state.w) - dual_objective(state))
    return out


def cell(gaps: list[float]) -> str:
    return f"{statistics.median(gaps):.3e} [{min(gaps):.2e}, {max(gaps):.2e}]"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="synthetic-horseseg",
                        help="a dataset whose model has weight_bounds()")
    parser.add_argument("--n", type=int, default=20, help="use the first n examples")
    parser.add_argument("--lam", type=float, default=1.0)
    parser.add_argument("--passes", type=int, default=20)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", nargs="+", default=list(STEPS),
                        help="step types (see ssvm_core.options)")
    parser.add_argument("--compare", default=None, metavar="PYTHON",
                        help="also run in this interpreter and print both side by side")
    parser.add_argument("--json", action="store_true",
                        help="print only the gaps as JSON (used by --compare)")
    args = parser.parse_args(argv)
    gaps = measure(args.dataset, args.n, args.lam, args.steps, args.passes, args.seeds)
    if args.json:
        print(json.dumps(gaps))
        return 0
    print_header("bench_box.py", argv)
    print(f"{args.dataset} (first {args.n}), lam={args.lam}, box of weight_bounds(), "
          f"exact gap after {args.passes} passes, {args.seeds} seeds, plain iterate")
    other = None
    if args.compare:
        cmd = [args.compare, os.path.abspath(__file__), "--json", "--dataset", args.dataset,
               "--n", str(args.n), "--lam", str(args.lam), "--passes", str(args.passes),
               "--seeds", str(args.seeds), "--steps", *args.steps]
        other = json.loads(subprocess.run(cmd, check=True, capture_output=True,
                                          text=True).stdout)
    header = f"{'step':>10}{'this build':>36}"
    if other is not None:
        header += f"{'--compare build':>36}{'ratio':>8}"
    print(header)
    for step in args.steps:
        line = f"{step:>10}{cell(gaps[step]):>36}"
        if other is not None:
            ratio = statistics.median(gaps[step]) / statistics.median(other[step])
            line += f"{cell(other[step]):>36}{ratio:>8.3f}"
        print(line)
    print("(median [min, max] over seeds of P(w) - D(alpha))")
    if other is not None:
        print(f"--compare build: {args.compare}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
