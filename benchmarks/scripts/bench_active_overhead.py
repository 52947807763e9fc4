#!/usr/bin/env python
"""Cost of a pass with explicit active sets and caching, against plain BCFW, side by side.

For each variant, runs from scratch (fresh state, seeded uniform block order)
and times passes 2..P (the first pass page-faults the block storage); prints
the median seconds per pass, microseconds per block step, the ratio to plain
BCFW (``_fw.bcfw_pass``), the stored labellings per block and the cache-hit
rate.  Variants interleave within each repeat, so machine load affects them
alike.  Caching runs get an exact gap pass every 3 passes (the global rule
of Osokin et al. (2016), Alg. 5 needs one; not timed).

Example::

    SSVM_DATA_HOME=../shared/data python benchmarks/scripts/bench_active_overhead.py \\
        --split large --lam 0.001 --passes 6 --repeat 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np
from _report import print_header

from ssvm_core import SolverState, _active, _fw, dual_objective
from ssvm_core.parallel import score_pass
from ssvm_data import load_ocr, ocr_like
from ssvm_oracles import ChainModel

VARIANTS = ("plain", "fw", "pairwise", "away", "hybrid", "corrective", "fw+cache",
            "pairwise+cache")


def one_run(oracle, lam: float, variant: str, passes: int, seed: int) -> tuple[list, object]:
    n = oracle.n_blocks
    step, _, cache = variant.partition("+")
    state = SolverState.for_oracle(oracle, lam, averaging=True, active_sets=variant != "plain")
    rng = np.random.default_rng(seed)
    times = []
    for p in range(passes):
        order = rng.integers(0, n, n).astype(np.intp)
        start = time.perf_counter()
        if variant == "plain":
            _fw.bcfw_pass(oracle, state, order, True)
        else:
            _active.active_pass(oracle, state, order, step=step, cache=bool(cache))
        if p >= 1:
            times.append(time.perf_counter() - start)
        if cache and p % 3 == 0:
            sum_h = score_pass(oracle, state.w, state)
            state.last_exact_gap = (0.5 * lam * state.w @ state.w + sum_h / n
                                    - dual_objective(state))
    return times, state


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="large", choices=["small", "large"])
    parser.add_argument("--synthetic", type=int, default=None, metavar="N",
                        help="N synthetic OCR-like words instead of the real data")
    parser.add_argument("--lam", type=float, default=0.001)
    parser.add_argument("--passes", type=int, default=6)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    args = parser.parse_args(argv)
    if args.synthetic:
        X, Y = ocr_like(args.synthetic, random_state=0)
    else:
        X, Y, _, _ = load_ocr(split=args.split)
    oracle = ChainModel(n_states=26).bind(X, Y)
    n = oracle.n_blocks
    print_header("bench_active_overhead.py", argv)
    times = {v: [] for v in args.variants}
    states = {}
    for rep in range(args.repeat):
        for variant in args.variants:
            t, states[variant] = one_run(oracle, args.lam, variant, args.passes, rep)
            times[variant] += t
    base = statistics.median(times["plain"]) if "plain" in times else None
    print(f"{'variant':>15} {'s/pass':>8} {'us/step':>8} {'vs plain':>9} {'atoms/block':>12} "
          f"{'hits/step':>10}")
    for variant in args.variants:
        med = statistics.median(times[variant])
        st = states[variant]
        atoms = st.atoms.total_atoms() / n if st.atoms is not None else 0.0
        hits = (st.cache_hits_local + st.cache_hits_global) / max(st.n_steps, 1)
        ratio = f"{med / base:9.2f}" if base else f"{'-':>9}"
        print(f"{variant:>15} {med:8.4f} {1e6 * med / n:8.1f} {ratio} {atoms:12.1f} {hits:10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
