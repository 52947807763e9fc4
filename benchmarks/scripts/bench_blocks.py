#!/usr/bin/env python
"""Dense, sparse and compact dual blocks side by side on a chain or multiclass data set.

For each block storage (the model's ``blocks=``: ``ChainModel``, or ``MulticlassModel``
for ``--data multiclass``, scikit-learn's ``make_classification`` with ``--examples``
examples, 100 features and 10 classes)
a fresh process binds the data, runs ``--warmup`` passes of the chosen step
and then alternates, ``--repeat`` times, one timed pass of steps and one
timed oracle pass (``score_pass`` at the current w: n oracle calls in
block order and nothing else).  Alternating puts both under the same
machine load; the report gives the median of the per-pair ratios pass /
oracle pass, which is the quantity of the ssvm issue on compact blocks
(target <= 1.6 on OCR-large), with the median times.  It also times n
oracle calls in a random order (``_batch.max_scores`` over a permutation):
a pass must visit the blocks at random, and the ratio to that pass ("pass /
shuffled") is what the steps add to the oracle calls the pass makes.
Memory: bytes of the block storage (values and supports), of the state file
written by ``SolverState.save``, and the process's peak RSS.

Usage (from the repository root)::

    SSVM_DATA_HOME=../shared/data python benchmarks/scripts/bench_blocks.py --data ocr-large
    SSVM_DATA_HOME=../shared/data python benchmarks/scripts/bench_blocks.py --data ocr-large \\
        --step pairwise --sampling gap
    SSVM_DATA_HOME=../shared/data python benchmarks/scripts/bench_blocks.py --data conll \\
        --storages sparse compact
    python benchmarks/scripts/bench_blocks.py --data synthetic   # no data needed
    python benchmarks/scripts/bench_blocks.py --data synthetic --words 30 --warmup 1 --repeat 1
    python benchmarks/scripts/bench_blocks.py --data multiclass --storages dense compact
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from _blocks import block_bytes, chain_model, peak_rss_bytes
from _report import print_header, write_json

STORAGES = ("dense", "sparse", "compact")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--data", choices=("ocr-large", "ocr-small", "conll", "synthetic",
                                           "multiclass"),
                        default="ocr-large", help="data set (synthetic: OCR-like words)")
    parser.add_argument("--words", type=int, default=2000,
                        help="words of --data synthetic")
    parser.add_argument("--examples", type=int, default=50_000,
                        help="examples of --data multiclass")
    parser.add_argument("--storages", nargs="+", choices=STORAGES, default=list(STORAGES))
    parser.add_argument("--lam", type=float, default=None,
                        help="lambda (default 0.01 for OCR, 1 / n for CoNLL)")
    parser.add_argument("--step", default="fw", help="step type (see ssvm_core.solve)")
    parser.add_argument("--sampling", default="uniform", help="block sampling")
    parser.add_argument("--warmup", type=int, default=3, help="passes before timing")
    parser.add_argument("--repeat", type=int, default=5, help="timed (pass, oracle) pairs")
    parser.add_argument("--json", metavar="PATH", default=None, help="write the numbers here")
    parser.add_argument("--one", choices=STORAGES, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.warmup < 0 or args.repeat < 1 or args.words < 1 or args.examples < 1:
        parser.error("--warmup must be >= 0, --repeat, --words and --examples >= 1")
    return args


def load(name: str, words: int = 2000, examples: int = 50_000):
    """``(X, Y, K)`` of a data set."""
    import ssvm_data

    if name == "multiclass":
        from sklearn.datasets import make_classification

        X, y = make_classification(examples, 100, n_informative=20, n_classes=10,
                                   random_state=0)
        return X, y, 10
    if name == "synthetic":
        X, Y = ssvm_data.synthetic.ocr_like(words, random_state=0)
        return X, Y, 26
    if name.startswith("ocr"):
        X, Y, _, _ = ssvm_data.load_ocr(split=name.split("-")[1], download=False)
        return X, Y, 26
    X, Y, _, _ = ssvm_data.load_conll2000("full", download=False)
    return X, Y, int(max(y.max() for y in Y)) + 1


def measure(args) -> dict:
    """The numbers of one storage, in this process."""
    from ssvm_core import SolverState, _active, _batch, _fw
    from ssvm_core.parallel import score_pass

    X, Y, K = load(args.data, args.words, args.examples)
    storage = args.one
    if args.data == "multiclass":
        from ssvm_oracles import MulticlassModel

        model = MulticlassModel(K, blocks=storage)
    else:
        model = chain_model(K, storage)
    start = time.perf_counter()
    oracle = model.bind(X, Y)
    bind_s = time.perf_counter() - start
    n = oracle.n_blocks
    lam = args.lam if args.lam is not None else (0.01 if args.data != "conll" else 1.0 / n)
    active = args.step != "fw"
    state = SolverState.for_oracle(oracle, lam, averaging=True, active_sets=active)
    rng = np.random.default_rng(0)

    def one_pass() -> float:
        if args.sampling == "gap" and state.passes > 0:
            order, uniforms = np.zeros(0, np.intp), rng.random(n)
        else:
            order, uniforms = rng.integers(0, n, size=n).astype(np.intp), None
        begin = time.perf_counter()
        if active:
            _active.active_pass(oracle, state, order, step=args.step, gap_uniforms=uniforms)
        else:
            _fw.bcfw_pass(oracle, state, order, True, uniforms)
        state.passes += 1
        return time.perf_counter() - begin

    for _ in range(args.warmup):
        one_pass()
    pairs, shuffled = [], []
    for _ in range(args.repeat):
        step_s = one_pass()
        begin = time.perf_counter()
        score_pass(oracle, state.w, None, 1)
        pairs.append((step_s, time.perf_counter() - begin))
        blocks = rng.permutation(n).astype(np.intp)
        begin = time.perf_counter()
        _batch.max_scores(oracle, state.w, blocks)
        shuffled.append(time.perf_counter() - begin)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "state.npz")
        state.save(path)
        file_bytes = os.path.getsize(path)
    return {"storage": storage, "n": n, "d": oracle.n_features, "lam": lam,
            "bind_s": bind_s,
            "pass_s": statistics.median(p for p, _ in pairs),
            "oracle_pass_s": statistics.median(o for _, o in pairs),
            "ratio": statistics.median(p / o for p, o in pairs),
            "shuffled_oracle_pass_s": statistics.median(shuffled),
            "ratio_shuffled": statistics.median(p / o for (p, _), o in zip(pairs, shuffled)),
            "block_storage": state.block_storage, "block_bytes": block_bytes(state),
            "state_file_bytes": int(file_bytes), "peak_rss_bytes": peak_rss_bytes()}


def main(argv=None) -> dict:
    args = parse_args(argv)
    if args.one is not None:
        print(json.dumps(measure(args)))
        return {}
    command, machine = print_header("bench_blocks.py", argv)
    print(f"data={args.data}, step={args.step}, sampling={args.sampling}, "
          f"warmup={args.warmup}, repeat={args.repeat}")
    rows = []
    base = [a for a in (argv if argv is not None else sys.argv[1:])]
    for storage in args.storages:
        out = subprocess.run([sys.executable, __file__, *base, "--one", storage],
                             check=True, capture_output=True, text=True)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(f"{storage:8s} pass {row['pass_s'] * 1e3:8.1f} ms  oracle pass "
              f"{row['oracle_pass_s'] * 1e3:7.1f} ms  pass/oracle {row['ratio']:5.2f}  "
              f"pass/shuffled {row['ratio_shuffled']:5.2f}  "
              f"blocks {row['block_bytes'] / 1e6:8.1f} MB  state file "
              f"{row['state_file_bytes'] / 1e6:8.1f} MB  peak RSS "
              f"{row['peak_rss_bytes'] / 1e6:7.0f} MB")
    result = {"command": command, "machine": machine, "rows": rows}
    if args.json:
        write_json(args.json, result)
    return result


if __name__ == "__main__":
    main()
