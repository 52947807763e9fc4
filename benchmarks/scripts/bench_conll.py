#!/usr/bin/env python
"""Speed and memory of BCFW on CoNLL-2000 chunking (sparse chain; dense, sparse or compact blocks).

Prints, and with ``--json`` writes:

- load and bind seconds, the dimensions (n, attributes, states, d) and the
  block storage of the solver state (``--blocks``: ``auto`` lets ``ChainModel``
  pick dense or sparse, which is sparse on CoNLL; entries and bytes of the
  values and supports);
- seconds per BCFW pass (``bcfw_pass``, uniform sampling, line search): the
  first pass of a fresh state (it page-faults in the block vectors) and the
  median of the later passes;
- microseconds per oracle call (a serial score pass at w = 0 and at the
  trained w, divided by n);
- the exact duality gap of the averaged iterate after the last pass;
- the peak resident set size of the process.

Usage (from the repository root)::

    SSVM_DATA_HOME=../shared/data python benchmarks/scripts/bench_conll.py
    SSVM_DATA_HOME=../shared/data python benchmarks/scripts/bench_conll.py --blocks compact
    python benchmarks/scripts/bench_conll.py --synthetic 8936   # conll_like, no data needed
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
from _blocks import BLOCKS, block_bytes, chain_model, peak_rss_bytes
from _report import print_header, write_json
from bench_ocr import oracle_seconds, run_passes


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--split", choices=("full", "small"), default="full",
                        help="training sentences: full = 8,936, small = the first 1,000")
    parser.add_argument("--min-count", type=int, default=1,
                        help="keep attributes active on at least this many training tokens")
    parser.add_argument("--lam", type=float, default=0.01, help="regularisation lambda")
    parser.add_argument("--passes", type=int, default=3, help="BCFW passes")
    parser.add_argument("--repeat", type=int, default=3, help="score passes per oracle timing")
    parser.add_argument("--seed", type=int, default=0, help="seed of the block sampling")
    parser.add_argument("--blocks", choices=BLOCKS, default="auto",
                        help="block storage of the solver state (auto: ChainModel's choice)")
    parser.add_argument("--synthetic", type=int, metavar="N", default=None,
                        help="use N conll_like sentences instead of the real data")
    parser.add_argument("--data-home", default=None,
                        help="folder holding conll2000/ (default: $SSVM_DATA_HOME)")
    parser.add_argument("--json", metavar="PATH", default=None, help="write the numbers here")
    args = parser.parse_args(argv)
    if args.passes < 1 or args.repeat < 1 or args.min_count < 1 or not args.lam > 0:
        parser.error("--passes, --repeat, --min-count and --lam must be positive")
    return args


def load_data(args):
    import ssvm_data

    if args.synthetic is not None:
        X, Y = ssvm_data.conll_like(args.synthetic, min_count=args.min_count, random_state=0)
        return X, Y, f"conll_like({args.synthetic}, min_count={args.min_count}, random_state=0)"
    home = args.data_home or os.environ.get("SSVM_DATA_HOME")
    X, Y, _, _ = ssvm_data.load_conll2000(args.split, data_home=home, download=False,
                                          min_count=args.min_count)
    return X, Y, (f"load_conll2000({args.split!r}, min_count={args.min_count}) "
                  f"from {home or 'the default locations'}")


def main(argv=None) -> dict:
    args = parse_args(argv)
    from ssvm_core import SolverState
    from ssvm_data.conll import CHUNK_TAGS

    _, machine = print_header("bench_conll.py", argv)
    start = time.perf_counter()
    X, Y, source = load_data(args)
    load_s = time.perf_counter() - start
    start = time.perf_counter()
    oracle = chain_model(len(CHUNK_TAGS), args.blocks).bind(X, Y)
    bind_s = time.perf_counter() - start
    n, d, n_attributes = oracle.n_blocks, oracle.n_features, X[0].shape[1]
    start = time.perf_counter()
    state = SolverState.for_oracle(oracle, args.lam)
    state_s = time.perf_counter() - start
    entries, storage = int(state.block_values.size), state.block_storage
    blocks_b = block_bytes(state)
    block_mb = blocks_b / 2 ** 20
    del state
    print(f"data: {source}: n={n} sentences, {sum(len(y) for y in Y)} tokens, "
          f"{n_attributes} attributes, {len(CHUNK_TAGS)} states, d={d}")
    print(f"load {load_s:.2f} s, bind {bind_s:.2f} s, state {state_s:.2f} s; {storage} "
          f"blocks (--blocks {args.blocks}): {entries} entries ({entries / n:.0f} per block, "
          f"{blocks_b} bytes = {block_mb:.1f} MiB; dense blocks would need "
          f"{n * d * 8 / 2 ** 30:.1f} GiB)")

    times, gaps, state = run_passes(oracle, args, args.seed, gap_at=(args.passes,))
    w = state.w
    steady = statistics.median(times[1:]) if len(times) > 1 else float("nan")
    zero_s = oracle_seconds(oracle, np.zeros(d), args.repeat)
    trained_s = oracle_seconds(oracle, w, args.repeat)
    gap = gaps[args.passes]
    print(f"BCFW pass: first {times[0]:.2f} s, later passes median {steady:.2f} s "
          f"(lam={args.lam:g}, {args.passes} passes)")
    print(f"oracle call: {zero_s * 1e6:.1f} us at w = 0, {trained_s * 1e6:.1f} us at the "
          f"trained w")
    print(f"duality gap after {args.passes} passes: averaged {gap['averaged']:.5g}, "
          f"plain {gap['plain']:.5g}")
    rss = peak_rss_bytes()
    print(f"peak RSS {rss} bytes = {rss / 2 ** 20:.0f} MiB")
    report = {
        "data": {"source": source, "n": n, "n_attributes": n_attributes, "d": d,
                 "load_s": load_s, "bind_s": bind_s, "state_s": state_s,
                 "block_storage": storage, "block_entries": entries,
                 "block_bytes": blocks_b, "block_mb": block_mb},
        "settings": {"lam": args.lam, "passes": args.passes, "seed": args.seed,
                     "blocks": args.blocks},
        "pass_s": times, "oracle_call_s": {"w_zero": zero_s, "w_trained": trained_s},
        "gap": gap, "peak_rss_bytes": rss, "peak_rss_mb": rss / 2 ** 20, "machine": machine,
    }
    write_json(args.json, report)
    return report


if __name__ == "__main__":
    main()
