#!/usr/bin/env python
"""Dense, sparse and compact dual blocks side by side, for every model that offers a choice.

For each block storage the model offers (its ``blocks=``): ``ChainModel`` on OCR,
CoNLL-2000 or ``--data synthetic`` words (``ocr_like``); ``MulticlassModel`` for
``--data multiclass``, scikit-learn's ``make_classification`` with ``--examples``
examples, 100 features and 10 classes; and for ``--data graph``, ``grid``,
``multilabel``, ``binary``, ``graphcut``, ``matching`` and ``pose`` the model's small
synthetic problem of ``ssvm_bench/problems.py`` (``--size`` examples, default its own
size, which the asv suites share), a fresh process binds the data, runs ``--warmup``
passes of the chosen step (graph cuts and pose trees inside the box of their
``weight_bounds()``, as ``solve`` does by default) and then alternates, ``--repeat``
times, one timed pass of steps and one timed oracle pass (``score_pass`` at the current
w: n oracle calls in block order and nothing else).  Alternating puts both under the
same machine load; the report gives the median of the per-pair ratios pass / oracle
pass, which is the quantity of the ssvm issue on compact blocks (target <= 1.6 on
OCR-large), with the median times.  It also times n oracle calls in a random order
(``_batch.max_scores`` over a permutation): a pass must visit the blocks at random, and
the ratio to that pass ("pass / shuffled") is what the steps add to the oracle calls the
pass makes.  Memory: bytes of the block storage (values and supports), of the Gram
matrices a compact oracle keeps (for the oracles that report them: graph, grid,
multi-label, binary, graph-cut, matching), of the state file written by
``SolverState.save``, and the process's peak RSS.  The report also names the storage
``blocks="auto"`` picks for the data.

``--data all`` runs the chain (``synthetic``, ``--words``), ``multiclass``
(``--examples``, there 20,000 by default) and every other model (``--size``) in turn and
ends with one summary table: per model the storage "auto" picks, and the block bytes and
median pass time of each storage.  ``PoseModel`` has no ``blocks=`` option (its oracle
offers no compact block basis), so its row has dense blocks only.

Usage (from the repository root)::

    SSVM_DATA_HOME=../shared/data python benchmarks/scripts/bench_blocks.py --data ocr-large
    SSVM_DATA_HOME=../shared/data python benchmarks/scripts/bench_blocks.py --data ocr-large \\
        --step pairwise --sampling gap
    SSVM_DATA_HOME=../shared/data python benchmarks/scripts/bench_blocks.py --data conll \\
        --storages sparse compact
    python benchmarks/scripts/bench_blocks.py --data synthetic   # no data needed
    python benchmarks/scripts/bench_blocks.py --data synthetic --words 30 --warmup 1 --repeat 1
    python benchmarks/scripts/bench_blocks.py --data multiclass --storages dense compact
    python benchmarks/scripts/bench_blocks.py --data graphcut [--size 50]
    python benchmarks/scripts/bench_blocks.py --data all --repeat 3
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
from _blocks import PROBLEMS, block_bytes, chain_model, gram_bytes, peak_rss_bytes, solver_state
from _report import print_header, write_json

STORAGES = ("dense", "sparse", "compact")
#: ``--data`` of ``ChainModel`` (real data, or ``ocr_like`` words for ``synthetic``).
CHAIN_DATA = ("ocr-large", "ocr-small", "conll", "synthetic")
#: ``--data`` of a model's problem in ``ssvm_bench.problems`` (``--size`` examples).
MODEL_DATA = tuple(name for name in PROBLEMS if name not in ("chain", "multiclass"))
#: What ``--data all`` runs, in order, with the model each stands for.
ALL_DATA = {"synthetic": "chain", "multiclass": "multiclass",
            **{name: name for name in MODEL_DATA}}
#: ``--examples`` of ``multiclass`` in ``--data all`` (its problem's size: a dense pass of
#: 50,000 examples takes over a second on a loaded 2-core machine).
MULTICLASS_ALL = PROBLEMS["multiclass"].size


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--data", choices=(*CHAIN_DATA, "multiclass", *MODEL_DATA, "all"),
                        default="ocr-large",
                        help="data set (synthetic: OCR-like words; graph ... pose: the "
                             "model's synthetic problem; all: every model in turn)")
    parser.add_argument("--words", type=int, default=PROBLEMS["chain"].size,
                        help="words of --data synthetic")
    parser.add_argument("--examples", type=int, default=None,
                        help="examples of --data multiclass (default 50,000, the size of the "
                             f"issue on compact blocks; {MULTICLASS_ALL:,} with --data all)")
    parser.add_argument("--size", type=int, default=None,
                        help="examples of --data graph ... pose (default: each problem's "
                             "own size, see ssvm_bench/problems.py)")
    parser.add_argument("--storages", nargs="+", choices=STORAGES, default=None,
                        help="block storages to compare (default: all the model offers; "
                             "with --data all, those of them each model offers)")
    parser.add_argument("--lam", type=float, default=None,
                        help="lambda (default 1 / n for CoNLL, else 0.01)")
    parser.add_argument("--step", default="fw", help="step type (see ssvm_core.solve)")
    parser.add_argument("--sampling", default="uniform", help="block sampling")
    parser.add_argument("--warmup", type=int, default=3, help="passes before timing")
    parser.add_argument("--repeat", type=int, default=5, help="timed (pass, oracle) pairs")
    parser.add_argument("--json", metavar="PATH", default=None, help="write the numbers here")
    parser.add_argument("--in-process", action="store_true",
                        help="measure every storage in this process, one after the other "
                             "(quicker, a check that everything runs; the peak RSS is then "
                             "the largest so far, and later storages find warm caches)")
    parser.add_argument("--one", choices=STORAGES, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--auto", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.examples is None:
        args.examples = MULTICLASS_ALL if args.data == "all" else 50_000
    if (args.warmup < 0 or args.repeat < 1 or args.words < 1 or args.examples < 1
            or (args.size is not None and args.size < 1)):
        parser.error("--warmup must be >= 0, --repeat, --words, --examples and --size >= 1")
    if (args.data != "all" and args.storages is not None and args.one is None
            and not args.auto):
        missing = [s for s in args.storages if s not in offered(args.data)]
        if missing:
            parser.error(f"--data {args.data} offers the storages "
                         f"{', '.join(offered(args.data))}, not {', '.join(missing)}")
    return args


def offered(data: str) -> tuple[str, ...]:
    """The block storages of the model of ``--data data``."""
    return PROBLEMS["chain" if data in CHAIN_DATA else data].storages


def load(name: str, words: int = 2000, examples: int = 50_000, size: int | None = None):
    """``(X, Y, K)`` of a data set (``K``: the chain's states or the classes; None for the
    problems of ``ssvm_bench.problems``)."""
    import ssvm_data

    if name in MODEL_DATA:
        X, Y = PROBLEMS[name].data(size)
        return X, Y, None
    if name == "multiclass":
        from sklearn.datasets import make_classification

        X, y = make_classification(examples, 100, n_informative=20, n_classes=10,
                                   random_state=0)
        return X, y, 10
    if name == "synthetic":
        X, Y = PROBLEMS["chain"].data(words)
        return X, Y, 26
    if name.startswith("ocr"):
        X, Y, _, _ = ssvm_data.load_ocr(split=name.split("-")[1], download=False)
        return X, Y, 26
    X, Y, _, _ = ssvm_data.load_conll2000("full", download=False)
    return X, Y, int(max(y.max() for y in Y)) + 1


def build_model(name: str, K: int | None, storage: str):
    """The model of ``--data name`` with ``storage`` blocks (``"auto"``: its default)."""
    if name in CHAIN_DATA:
        return chain_model(K, storage)
    return PROBLEMS[name].model(storage)


def describe(args, name: str, n: int) -> str:
    """One line on the model and the data of ``--data name``."""
    if name in MODEL_DATA or name == "synthetic":
        return PROBLEMS[name if name in MODEL_DATA else "chain"].describe.format(n=n)
    if name == "multiclass":
        return (f"MulticlassModel(10): make_classification({n}, 100 features, "
                "10 classes)")
    return f"ChainModel: {name}, {n} sequences"


def auto_storage(args, name: str) -> dict:
    """``{"auto": the storage blocks="auto" picks on --data name, "n": examples}``."""
    X, Y, K = load(name, args.words, args.examples, args.size)
    model = build_model(name, K, "auto")
    oracle = model.bind(X, Y)
    state = solver_state(model, oracle, 1.0, averaging=False)
    return {"auto": state.block_storage, "n": oracle.n_blocks}


def measure(args) -> dict:
    """The numbers of one storage, in this process."""
    from ssvm_core import _active, _batch, _fw
    from ssvm_core.parallel import score_pass

    X, Y, K = load(args.data, args.words, args.examples, args.size)
    storage = args.one
    model = build_model(args.data, K, storage)
    start = time.perf_counter()
    oracle = model.bind(X, Y)
    bind_s = time.perf_counter() - start
    n = oracle.n_blocks
    lam = args.lam if args.lam is not None else (0.01 if args.data != "conll" else 1.0 / n)
    active = args.step != "fw"
    state = solver_state(model, oracle, lam, averaging=True, active_sets=active)
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
            "gram_bytes": gram_bytes(oracle),
            "state_file_bytes": int(file_bytes), "peak_rss_bytes": peak_rss_bytes()}


def _megabytes(nbytes: int | None) -> str:
    return "n/a" if nbytes is None else f"{nbytes / 1e6:.1f} MB"


def _child(base: list[str], name: str, args, *extra: str) -> dict:
    """What a fresh process of this script prints for ``--data name`` and ``extra``.

    The data and the models live only in such processes: a process started from a large
    parent counts the parent's pages in its peak RSS (Linux keeps the high-water mark
    across fork and exec).
    """
    out = subprocess.run([sys.executable, __file__, *base, "--data", name, "--examples",
                          str(args.examples), *extra],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_data(args, name: str, base: list[str]) -> dict:
    """Every storage of ``--data name`` (each in a fresh process), printed as it comes."""
    picked = auto_storage(args, name) if args.in_process else _child(base, name, args, "--auto")
    auto, n = picked["auto"], picked["n"]
    print(f"{name}: {describe(args, name, n)}; blocks=\"auto\" picks {auto}")
    if "compact" not in offered(name):
        print("  no compact storage: the model has no blocks= option (its oracle offers no "
              "compact block basis)")
    storages = [s for s in (args.storages or STORAGES) if s in offered(name)]
    rows = []
    for storage in storages:
        if args.in_process:
            row = measure(argparse.Namespace(**{**vars(args), "data": name, "one": storage}))
        else:
            row = _child(base, name, args, "--one", storage)
        rows.append(row)
        print(f"{storage:8s} pass {row['pass_s'] * 1e3:8.1f} ms  oracle pass "
              f"{row['oracle_pass_s'] * 1e3:7.1f} ms  pass/oracle {row['ratio']:5.2f}  "
              f"pass/shuffled {row['ratio_shuffled']:5.2f}  "
              f"blocks {row['block_bytes'] / 1e6:8.1f} MB  state file "
              f"{row['state_file_bytes'] / 1e6:8.1f} MB  peak RSS "
              f"{row['peak_rss_bytes'] / 1e6:7.0f} MB  Grams "
              f"{_megabytes(row['gram_bytes'])}")
    return {"data": describe(args, name, n), "n": n, "auto": auto, "rows": rows}


def summary_rows(results: dict) -> list[dict]:
    """One row per model: what "auto" picks, block bytes and pass time by storage."""
    rows = []
    for name, result in results.items():
        by_storage = {row["storage"]: row for row in result["rows"]}
        rows.append({"model": ALL_DATA[name], "data": name, "n": result["n"],
                     "auto": result["auto"],
                     "compact_offered": "compact" in offered(name),
                     "block_bytes": {s: r["block_bytes"] for s, r in by_storage.items()},
                     "pass_s": {s: r["pass_s"] for s, r in by_storage.items()}})
    return rows


def _cell(row: dict, key: str, storage: str, scale: float) -> str:
    """One number of the summary: "none" for a storage the model lacks, "-" if not run."""
    if storage == "compact" and not row["compact_offered"]:
        return "none"
    return f"{row[key][storage] * scale:.3g}" if storage in row[key] else "-"


def print_summary(rows: list[dict]) -> None:
    """The table of ``--data all``."""
    print("\nsummary: block bytes (MB) and median pass (ms) by storage; auto = the storage "
          'blocks="auto" picks')
    print(f"{'model':11s} {'n':>6s}  {'auto':8s} | {'dense':>8s} {'sparse':>8s} "
          f"{'compact':>8s} MB | {'dense':>8s} {'sparse':>8s} {'compact':>8s} ms")
    for row in rows:
        sizes = " ".join(f"{_cell(row, 'block_bytes', s, 1e-6):>8s}" for s in STORAGES)
        times = " ".join(f"{_cell(row, 'pass_s', s, 1e3):>8s}" for s in STORAGES)
        print(f"{row['model']:11s} {row['n']:6d}  {row['auto']:8s} | {sizes}    | {times}")
    if any(not row["compact_offered"] for row in rows):
        print("none: the model has no compact storage (PoseModel: no blocks= option, its "
              "oracle offers no compact block basis)")


def main(argv=None) -> dict:
    args = parse_args(argv)
    if args.one is not None:
        print(json.dumps(measure(args)))
        return {}
    if args.auto:
        print(json.dumps(auto_storage(args, args.data)))
        return {}
    command, machine = print_header("bench_blocks.py", argv)
    print(f"data={args.data}, step={args.step}, sampling={args.sampling}, "
          f"warmup={args.warmup}, repeat={args.repeat}")
    base = list(argv if argv is not None else sys.argv[1:])
    if args.data != "all":
        result = {"command": command, "machine": machine, **run_data(args, args.data, base)}
    else:
        results = {name: run_data(args, name, base) for name in ALL_DATA}
        summary = summary_rows(results)
        print_summary(summary)
        result = {"command": command, "machine": machine, "models": results,
                  "summary": summary}
    if args.json:
        write_json(args.json, result)
    return result


if __name__ == "__main__":
    main()
