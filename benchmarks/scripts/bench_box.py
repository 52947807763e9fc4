#!/usr/bin/env python
"""Exact duality gap of box-constrained training after a fixed number of passes.

The box of the graph-cut oracle (pairwise weights w_P >= 0, Osokin et al. (2016), App. H and
I.3) on synthetic HorseSeg, for each step type: the exact gap P(w) - D(alpha) after
``--passes`` passes, median [min, max] over seeds.

``--iterate`` says which w is measured:

- ``plain`` (default): ``solve`` with ``averaging=False``; w is the last iterate and alpha
  its dual point.
- ``returned``: ``solve`` with the library's own default ``averaging`` and ``sampling``
  (whatever the installed build uses; neither is passed); w is the iterate ``solve``
  returns (``SolveResult.w``) and alpha the dual point it comes from (the weighted average
  when ``SolveResult.iterate`` is "average").  The gap is recomputed here with
  ``primal_objective`` and ``dual_objective``, not read from the result; the table also
  counts how often the returned iterate was the plain one.

``--compare PYTHON`` also runs the same measurement in another interpreter (e.g. the
virtual environment of another build of ssvm-core) and prints both side by side, with
the ratio of the medians (this build / the other).  This is how the exact box line
search (``ssvm_core._linesearch``) is compared with the closed-form step that uses the
full curvature lam ||e||^2.

Examples::

    python benchmarks/scripts/bench_box.py --passes 20 --seeds 3
    python benchmarks/scripts/bench_box.py --iterate returned --compare ../main/.venv/bin/python
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
from ssvm_core import dual_objective, primal_objective, solve

STEPS = ("fw", "pairwise")
ITERATES = ("plain", "returned")


def measure(dataset: str, n: int | None, lam: float, steps: list[str], passes: int,
            seeds: int, iterate: str = "plain") -> dict[str, dict[str, list]]:
    """Exact gaps after ``passes`` passes, one run per seed and step type.

    Parameters
    ----------
    dataset : str
        An ``ssvm_data`` dataset whose model has ``weight_bounds()``.
    n : int or None
        Use the first ``n`` training examples (None: all).
    lam : float
        Regularisation strength.
    steps : list of str
        Step types (``solve``'s ``step``).
    passes : int
        Passes per run; the only scheduled gap check is after the last one.
    seeds : int
        Runs per step type, with ``random_state`` 0, ..., seeds - 1.
    iterate : {"plain", "returned"}, default "plain"
        The last iterate of a run without averaging, or the iterate ``solve`` returns
        with its default averaging and sampling (see the module docstring).

    Returns
    -------
    dict
        ``{"gaps": {step: [P(w) - D(alpha) per seed]},
        "iterates": {step: ["plain" or "average" per seed]}}``.
    """
    if iterate not in ITERATES:
        raise ValueError(f"iterate must be one of {ITERATES}, got {iterate!r}")
    X, Y, _, Y_test = ssvm_data.load_dataset(dataset, random_state=0)
    model = ssvm_data.model_for(dataset, Y, Y_test)
    if n is not None:
        X, Y = X[:n], Y[:n]
    oracle = model.bind(X, Y)
    box = model.weight_bounds()
    # "returned" leaves averaging (and sampling) to each build's default
    options = {"averaging": False} if iterate == "plain" else {}
    gaps: dict[str, list[float]] = {}
    iterates: dict[str, list[str]] = {}
    for step in steps:
        gaps[step], iterates[step] = [], []
        for seed in range(seeds):
            result = solve(oracle, lam, step=step, box=box, tol=0, max_passes=passes,
                           gap_check_every=passes, random_state=seed, **options)
            averaged = result.iterate == "average"
            gap = (primal_objective(oracle, lam, result.w)
                   - dual_objective(result.state, averaged=averaged))
            gaps[step].append(gap)
            iterates[step].append(result.iterate)
    return {"gaps": gaps, "iterates": iterates}


def cell(gaps: list[float]) -> str:
    """``median [min, max]`` of a list of gaps."""
    return f"{statistics.median(gaps):.3e} [{min(gaps):.2e}, {max(gaps):.2e}]"


def plain_count(iterates: list[str]) -> str:
    """How many runs returned the plain iterate, as ``k/N``."""
    return f"{iterates.count('plain')}/{len(iterates)}"


def main(argv: list[str] | None = None) -> int:
    """Run the measurement and print the table (or the JSON, with ``--json``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="synthetic-horseseg",
                        help="a dataset whose model has weight_bounds()")
    parser.add_argument("--n", type=int, default=20, help="use the first n examples")
    parser.add_argument("--lam", type=float, default=1.0)
    parser.add_argument("--passes", type=int, default=20)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", nargs="+", default=list(STEPS),
                        help="step types (see ssvm_core.options)")
    parser.add_argument("--iterate", choices=ITERATES, default="plain",
                        help="the last iterate without averaging, or the one solve returns "
                             "with its default averaging and sampling")
    parser.add_argument("--compare", default=None, metavar="PYTHON",
                        help="also run in this interpreter and print both side by side")
    parser.add_argument("--json", action="store_true",
                        help="print only the gaps and iterates as JSON (used by --compare)")
    args = parser.parse_args(argv)
    ours = measure(args.dataset, args.n, args.lam, args.steps, args.passes, args.seeds,
                   args.iterate)
    if args.json:
        print(json.dumps(ours))
        return 0
    print_header("bench_box.py", argv)
    what = ("plain iterate (averaging=False)" if args.iterate == "plain"
            else "iterate solve returns (default averaging and sampling)")
    print(f"{args.dataset} (first {args.n}), lam={args.lam}, box of weight_bounds(), "
          f"exact gap after {args.passes} passes, {args.seeds} seeds, {what}")
    other = None
    if args.compare:
        cmd = [args.compare, os.path.abspath(__file__), "--json", "--dataset", args.dataset,
               "--n", str(args.n), "--lam", str(args.lam), "--passes", str(args.passes),
               "--seeds", str(args.seeds), "--steps", *args.steps,
               "--iterate", args.iterate]
        other = json.loads(subprocess.run(cmd, check=True, capture_output=True,
                                          text=True).stdout)
    counts = args.iterate == "returned"      # which iterate solve returned
    header = f"{'step':>10}{'this build':>36}" + (f"{'plain':>7}" if counts else "")
    if other is not None:
        header += f"{'--compare build':>36}" + (f"{'plain':>7}" if counts else "")
        header += f"{'ratio':>8}"
    print(header)
    for step in args.steps:
        line = f"{step:>10}{cell(ours['gaps'][step]):>36}"
        if counts:
            line += f"{plain_count(ours['iterates'][step]):>7}"
        if other is not None:
            line += f"{cell(other['gaps'][step]):>36}"
            if counts:
                line += f"{plain_count(other['iterates'][step]):>7}"
            ratio = (statistics.median(ours["gaps"][step])
                     / statistics.median(other["gaps"][step]))
            line += f"{ratio:>8.3f}"
        print(line)
    print("(median [min, max] over seeds of P(w) - D(alpha)"
          + ("; plain: runs whose returned iterate was the plain one)" if counts else ")"))
    if other is not None:
        print(f"--compare build: {args.compare}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
