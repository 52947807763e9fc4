#!/usr/bin/env python
"""Speed and certified progress of BCFW on OCR (lambda = 0.01 by default).

Prints, and with ``--json`` writes:

- seconds per BCFW pass: the first pass of a fresh state (it page-faults in
  the dense per-block vectors w_i) and the steady state (median over passes
  2..P of ``--repeat`` runs from scratch);
- microseconds per oracle call (``score_pass`` at w = 0 and at the trained w,
  median over ``--repeat`` score passes, divided by n);
- microseconds per block step (steady pass time / n) and the solver overhead
  (pass - n * oracle) / (n * oracle), with the oracle time at the trained w;
- the exact duality gap P(w) - D(alpha) of the averaged and of the plain
  iterate after 1, 5 and 10 passes (and after the last pass), from the first
  run; the same run is then replayed with ``ssvm_core.solve`` (same seed, so
  the same block order) as a check that the numbers describe the public solver;
- memory: the bytes of the solver state's block storage (``--blocks``: dense,
  sparse or compact dual blocks, see ``ChainModel``) and the process's peak RSS
  before the replay.

Usage (from the repository root)::

    SSVM_DATA_HOME=../shared/data python benchmarks/scripts/bench_ocr.py --json ocr.json
    SSVM_DATA_HOME=../shared/data python benchmarks/scripts/bench_ocr.py --blocks compact
    python benchmarks/scripts/bench_ocr.py --synthetic 6251   # no data needed
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
from _blocks import BLOCKS, block_bytes, chain_model, peak_rss_bytes
from _report import print_header, write_json

GAP_PASSES = (1, 5, 10)
N_STATES = 26


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--split", choices=("small", "large"), default="large",
                        help="OCR training split: large = 6,251 words, small = 626")
    parser.add_argument("--lam", type=float, default=0.01, help="regularisation lambda")
    parser.add_argument("--passes", type=int, default=10, help="BCFW passes per run")
    parser.add_argument("--repeat", type=int, default=5,
                        help="runs from scratch for pass times; score passes per w")
    parser.add_argument("--seed", type=int, default=0, help="seed of the block sampling")
    parser.add_argument("--blocks", choices=BLOCKS, default="auto",
                        help="block storage of the solver state (auto: ChainModel's choice)")
    parser.add_argument("--synthetic", type=int, metavar="N", default=None,
                        help="use N synthetic OCR-like words instead of the real data")
    parser.add_argument("--data-home", default=None,
                        help="folder holding ocr/ (default: $SSVM_DATA_HOME)")
    parser.add_argument("--no-solve-check", action="store_true",
                        help="skip the replay with ssvm_core.solve")
    parser.add_argument("--json", metavar="PATH", default=None, help="write the numbers here")
    args = parser.parse_args(argv)
    if args.passes < 1 or args.repeat < 1:
        parser.error("--passes and --repeat must be >= 1")
    if args.synthetic is not None and args.synthetic < 1:
        parser.error("--synthetic must be >= 1")
    if not args.lam > 0:
        parser.error("--lam must be positive")
    return args


def load_data(args) -> tuple[list, list, str]:
    import ssvm_data

    if args.synthetic is not None:
        X, Y = ssvm_data.synthetic.ocr_like(args.synthetic, random_state=0)
        return X, Y, f"ocr_like(n_words={args.synthetic}, random_state=0)"
    home = args.data_home or os.environ.get("SSVM_DATA_HOME")
    X, Y, _, _ = ssvm_data.load_ocr(split=args.split, data_home=home, download=False)
    return X, Y, f"load_ocr(split={args.split!r}) from {home or 'the default locations'}"


def timed(func, *args) -> float:
    start = time.perf_counter()
    func(*args)
    return time.perf_counter() - start


def block_order(rng, n: int) -> np.ndarray:
    # Uniform sampling with replacement, drawn exactly as ssvm_core.solve draws it.
    return rng.integers(0, n, size=n).astype(np.intp)


def run_passes(oracle, args, seed: int, gap_at=()) -> tuple[list[float], dict, object]:
    """One run from a fresh state; returns pass times, gaps at ``gap_at`` and the
    final ``SolverState``."""
    from ssvm_core import SolverState, _fw, duality_gap

    state = SolverState.for_oracle(oracle, args.lam, averaging=True)
    rng = np.random.default_rng(seed)
    times, gaps = [], {}
    for p in range(1, args.passes + 1):
        order = block_order(rng, oracle.n_blocks)
        times.append(timed(_fw.bcfw_pass, oracle, state, order, True))
        if p in gap_at:
            gaps[p] = {"averaged": duality_gap(oracle, state, averaged=True),
                       "plain": duality_gap(oracle, state, averaged=False)}
    return times, gaps, state


def gap_pass_seconds(oracle, w: np.ndarray, repeat: int, n_jobs: int = 1) -> float:
    """Median seconds of one score (gap) pass at ``w`` with ``n_jobs`` threads."""
    from ssvm_core.parallel import score_pass

    return statistics.median(timed(score_pass, oracle, w, None, n_jobs) for _ in range(repeat))


def oracle_seconds(oracle, w: np.ndarray, repeat: int) -> float:
    """Median seconds per oracle call over ``repeat`` serial score passes at ``w``."""
    return gap_pass_seconds(oracle, w, repeat) / oracle.n_blocks


def solve_check(oracle, args, gap_at) -> dict:
    from ssvm_core import solve

    result = solve(oracle, args.lam, max_passes=args.passes, gap_check_every=1, averaging=True,
                   sampling="uniform", random_state=args.seed, tol=0)
    by_pass = {rec["pass"]: rec for rec in result.history}
    return {"status": result.status, "time": result.history[-1]["time"],
            "gaps": {p: {"averaged": by_pass[p]["gap_avg"], "plain": by_pass[p]["gap"]}
                     for p in gap_at}}


def main(argv=None) -> dict:
    args = parse_args(argv)
    command, machine = print_header("bench_ocr.py", argv)

    start = time.perf_counter()
    X, Y, source = load_data(args)
    load_s = time.perf_counter() - start
    start = time.perf_counter()
    oracle = chain_model(N_STATES, args.blocks).bind(X, Y)
    bind_s = time.perf_counter() - start
    n, d = oracle.n_blocks, oracle.n_features
    n_letters = int(sum(len(y) for y in Y))
    print(f"data: {source}: n={n} words, {n_letters} letters, d={d}; "
          f"load {load_s:.2f} s, bind {bind_s:.2f} s")
    print(f"lam={args.lam:g}, passes={args.passes}, repeat={args.repeat}, seed={args.seed}, "
          f"averaging on, line search, uniform sampling, blocks={args.blocks}")

    gap_at = sorted({p for p in GAP_PASSES if p <= args.passes} | {args.passes})
    first, steady, gaps, w_trained = [], [], {}, None
    for r in range(args.repeat):
        times, run_gaps, state = run_passes(oracle, args, args.seed + r,
                                            gap_at=gap_at if r == 0 else ())
        first.append(times[0])
        steady.extend(times[1:])
        if r == 0:
            gaps, w_trained = run_gaps, state.w.copy()
            storage, blocks_b = state.block_storage, block_bytes(state)
        del state
    first_s = statistics.median(first)
    steady_s = statistics.median(steady) if steady else float("nan")

    oracle_zero_s = oracle_seconds(oracle, np.zeros(d), args.repeat)
    oracle_trained_s = oracle_seconds(oracle, w_trained, args.repeat)
    threaded_s = gap_pass_seconds(oracle, w_trained, args.repeat, n_jobs=2)
    step_s = steady_s / n
    overhead = (steady_s - n * oracle_trained_s) / (n * oracle_trained_s)

    print()
    print("BCFW pass (n block steps, bcfw_pass)")
    print(f"  first pass (fresh state)  {first_s:9.4f} s   median of {len(first)} runs "
          f"[{min(first):.4f} .. {max(first):.4f}]")
    if steady:
        print(f"  steady state (pass >= 2)  {steady_s:9.4f} s   median of {len(steady)} passes "
              f"[{min(steady):.4f} .. {max(steady):.4f}]")
    else:
        print("  steady state (pass >= 2)        n/a   (needs --passes >= 2)")
    print(f"  per block step            {step_s * 1e6:9.2f} us")
    print("oracle call (score_pass / n)")
    print(f"  at w = 0                  {oracle_zero_s * 1e6:9.2f} us")
    print(f"  at trained w (pass {args.passes:2d})    {oracle_trained_s * 1e6:9.2f} us")
    print(f"gap pass at trained w: 1 thread {n * oracle_trained_s * 1e3:.1f} ms, "
          f"2 threads {threaded_s * 1e3:.1f} ms")
    print(f"solver overhead (pass - n*oracle) / (n*oracle) = {overhead:.3f}   "
          f"({(step_s - oracle_trained_s) * 1e6:.2f} us per step outside the oracle)")
    print()
    print("exact duality gap P(w) - D(alpha), run 1")
    print(f"  {'pass':>4}  {'averaged':>12}  {'plain':>12}")
    for p in gap_at:
        print(f"  {p:>4}  {gaps[p]['averaged']:12.6g}  {gaps[p]['plain']:12.6g}")

    rss = peak_rss_bytes()
    print(f"memory: {storage} blocks {blocks_b / 1e6:.1f} MB, peak RSS {rss / 1e6:.0f} MB")

    check = None
    if not args.no_solve_check:
        check = solve_check(oracle, args, gap_at)
        diff = max(abs(check["gaps"][p][k] - gaps[p][k])
                   for p in gap_at for k in ("averaged", "plain"))
        check["max_abs_gap_difference"] = diff
        print(f"ssvm_core.solve replay (gap check every pass): status {check['status']}, "
              f"{check['time']:.2f} s incl. gap passes; max |gap difference| = {diff:.2e}")

    report = {
        "command": command,
        "machine": machine,
        "data": {"source": source, "n_words": n, "n_letters": n_letters, "n_features": d,
                 "load_s": load_s, "bind_s": bind_s},
        "settings": {"lam": args.lam, "passes": args.passes, "repeat": args.repeat,
                     "seed": args.seed, "averaging": True, "line_search": True,
                     "sampling": "uniform", "blocks": args.blocks},
        "pass_s": {"first_median": first_s, "first_all": first, "steady_median": steady_s,
                   "steady_all": steady},
        "oracle_call_s": {"w_zero": oracle_zero_s, "w_trained": oracle_trained_s},
        "gap_pass_s": {"1": n * oracle_trained_s, "2": threaded_s},
        "block_step_s": step_s,
        "solver_overhead_ratio": overhead,
        "gap": {str(p): gaps[p] for p in gap_at},
        "memory": {"block_storage": storage, "block_bytes": blocks_b, "peak_rss_bytes": rss},
        "solve_check": None if check is None else {
            "status": check["status"], "time_s": check["time"],
            "max_abs_gap_difference": check["max_abs_gap_difference"]},
    }
    write_json(args.json, report)
    return report


if __name__ == "__main__":
    main()
