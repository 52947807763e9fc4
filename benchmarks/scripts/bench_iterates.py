#!/usr/bin/env python
"""Test error and certified gap of the plain and the averaged iterate (which one to return).

For each data set, step and seed, one ``ssvm_core.solve`` run of the largest
pass count is made in stages (``--passes 10 50``: 10 passes, then the same
state resumed for 40 more, which continues the run exactly); at the end of
each stage it records, for the plain iterate w and for the weighted average
(Lacoste-Julien et al. 2013, Alg. 4), the exact duality gap certified by
``solve`` and the test error (``model.mean_loss``: the per-sequence Hamming
loss averaged over the test sequences, the error BCFWstruct reports).

These are accuracy measurements, not timings: the load of the machine does
not change them.  Prints a table and with ``--json`` writes every number.

Usage (from the repository root)::

    SSVM_DATA_HOME=../shared/data python benchmarks/scripts/bench_iterates.py
    SSVM_DATA_HOME=../shared/data python benchmarks/scripts/bench_iterates.py \
        --datasets conll --steps fw --passes 10 --seeds 0
"""

from __future__ import annotations

import argparse
import os
import time

from _report import print_header, write_json

DATASETS = ("ocr-large", "ocr-small", "conll")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--datasets", nargs="+", choices=DATASETS, default=["ocr-large", "conll"])
    parser.add_argument("--steps", nargs="+", choices=("fw", "away", "pairwise"),
                        default=["fw", "pairwise"])
    parser.add_argument("--passes", nargs="+", type=int, default=[10, 50],
                        help="pass counts at which both iterates are measured")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0],
                        help="seeds of the block sampling (one run each)")
    parser.add_argument("--lam", type=float, default=0.01, help="regularisation lambda")
    parser.add_argument("--data-home", default=None,
                        help="folder holding ocr/ and conll2000/ (default: $SSVM_DATA_HOME)")
    parser.add_argument("--json", metavar="PATH", default=None, help="write the numbers here")
    args = parser.parse_args(argv)
    if min(args.passes) < 1 or not args.lam > 0:
        parser.error("--passes and --lam must be positive")
    args.passes = sorted(set(args.passes))
    return args


def load(name: str, data_home):
    """``(model, X, Y, X_test, Y_test)`` of a data set, with compact chain blocks."""
    import ssvm_data
    from ssvm_oracles import ChainModel

    if name.startswith("ocr"):
        X, Y, Xt, Yt = ssvm_data.load_ocr(split=name[4:], data_home=data_home, download=False)
        n_states = 26
    else:
        from ssvm_data.conll import CHUNK_TAGS

        X, Y, Xt, Yt = ssvm_data.load_conll2000("full", data_home=data_home, download=False)
        n_states = len(CHUNK_TAGS)
    # compact blocks: the same iterates as dense storage, less memory and time
    return ChainModel(n_states, blocks="compact"), X, Y, Xt, Yt


def run(model, oracle, X_test, Y_test, lam: float, step: str, seed: int, stages) -> list[dict]:
    """One run measured at the end of every stage; a record per (stage, iterate)."""
    from ssvm_core import solve

    rows, state, done = [], None, 0
    for passes in stages:
        start = time.perf_counter()
        result = solve(oracle, lam, step=step, averaging="best", tol=0.0,
                       max_passes=passes - done, gap_check_every=10, state=state,
                       random_state=seed)
        seconds = time.perf_counter() - start
        state, done = result.state, passes
        last = result.history[-1]
        for iterate, w, gap in (("plain", state.w.copy(), last["gap"]),
                                ("average", state.averaged_w(), last["gap_avg"])):
            error = model.mean_loss(Y_test, model.predict(X_test, w))
            rows.append({"passes": passes, "iterate": iterate, "gap": float(gap),
                         "test_error": error, "best_returns": result.iterate,
                         "stage_seconds": seconds})
    return rows


def main(argv=None) -> dict:
    args = parse_args(argv)
    command, machine = print_header("bench_iterates.py", argv)
    home = args.data_home or os.environ.get("SSVM_DATA_HOME")
    records = []
    print(f"lam={args.lam:g}; test error = mean per-sequence Hamming loss on the test set")
    print(f"{'data':10} {'step':9} {'seed':>4} {'passes':>6} {'iterate':8} {'gap':>10} "
          f"{'test error':>10}  best returns")
    for name in args.datasets:
        model, X, Y, Xt, Yt = load(name, home)
        oracle = model.bind(X, Y)
        for step in args.steps:
            for seed in args.seeds:
                for row in run(model, oracle, Xt, Yt, args.lam, step, seed, args.passes):
                    row.update(data=name, step=step, seed=seed, n_train=len(X), n_test=len(Xt))
                    records.append(row)
                    print(f"{name:10} {step:9} {seed:4d} {row['passes']:6d} "
                          f"{row['iterate']:8} {row['gap']:10.4g} {row['test_error']:10.4f}  "
                          f"{row['best_returns']}", flush=True)
    report = {"command": command, "machine": machine, "lam": args.lam, "records": records}
    write_json(args.json, report)
    return report


if __name__ == "__main__":
    main()
