"""Mini-batch BCFW: time per pass and exact gap against passes, by tau and executor.

Three problems: the pose oracle (``ssvm_data.lsp_like`` on a ``--pose-grid``
square grid, tree max-sum with distance transforms, box of the model), graph
cuts (``ssvm_data.horseseg_like``, box w_P >= 0) and OCR-large (the real file
from ``$SSVM_DATA_HOME/ocr``; synthetic ``ocr_like`` words of the same size
without it, and the report says so).  For each problem:

- **time per pass** for every tau in ``--taus`` and every executor in
  ``--executors`` (``serial``; ``threads``: ``ThreadExecutor(2)``; ``replay``: the
  same threads making the steps too, ``minibatch_pass(parallel_steps=True)``,
  exact parallel replay (``_batch.replay_rounds``); ``dask``:
  a ``LocalCluster`` of 2 worker processes, one thread each): wall seconds
  of a pass of n block steps from a state warmed by one BCFW pass, median
  of ``--timing-passes``; for Dask split into the time waiting for answers
  (the executor) and the rest (the steps, in this process), with the bytes
  of answers moved (serial and threads run whole passes in compiled code,
  ``_batch.fw_rounds``, where calls and steps interleave).  tau = 1 with the
  serial executor is plain BCFW (``_fw.bcfw_pass``, the path ``solve`` takes).
- **exact gap against passes** for every tau (``solve(batch_blocks=tau)``,
  serial executor, exact gap checks every ``--check-every`` passes) over the
  seeds ``--seeds`` (pose: the first seed only, ``--pose-seeds``).  The
  executors give the same iterates up to rounding (``tests/test_minibatch.py``,
  ``tests/test_dask.py``), so the curves are measured once.  A pass is n
  block steps, i.e. n oracle calls (the effective passes of Lacoste-Julien
  et al. (2013), gap checks not counted).

- **bytes of w per round** (``--w-bytes R``, on a ``LocalCluster`` of ``--workers``
  processes): ``R`` rounds of tau = ``--w-bytes-tau`` from the warm state with
  ``DaskExecutor(sparse_w=False)`` (w sent whole to every shard every round) and
  ``sparse_w=True`` (each shard keeps a copy of w and gets the entries that changed,
  after a first whole copy), counted by ``DaskExecutor.bytes_sent``.  Bytes are not
  timings: they can be measured on a loaded machine.  ``conll`` (CoNLL-2000 from
  ``$SSVM_DATA_HOME``, the registry's model, d = 7.7 M) is a problem for this mode.

- **pipelined BCFW** (``--lags L ...``, ``ssvm_core.pipeline``): for each lag L the
  time per pass of ``Pipeline(oracle, state, L, --workers)`` from the warm state
  (executor ``pipeline-c`` where the compiled passes run, compact blocks of a
  compiled oracle: OCR, CoNLL; with each thread's CPU seconds and idle spinning;
  ``pipeline`` for the Python passes, also timed beside the compiled ones with
  ``--python-pipeline``; the lag in column ``lag``) and the exact gap against
  passes of ``solve(pipeline_lag=L, n_jobs=--workers)`` over the same seeds; the
  summary gives the pass time of serial BCFW over the pipelined one and the passes
  the pipelined run needs to reach the gap serial BCFW (tau = 1) reaches in
  ``--target-passes`` passes (interpolated in log(gap) between the checks every
  ``--check-every`` passes).  Pipelined iterates do not depend on the number of
  threads (``tests/test_pipeline.py``).
  ``--pipeline-cache-steps C`` (> 0) runs them with caching and C master cache
  steps per answer (``pipeline_cache_steps``; "fw" steps, or ``--pipeline-step``).
  ``--pairs N`` also times N interleaved pairs of a serial BCFW pass and a pipelined
  pass per lag, each run continuing its own state: the median (and range) of the
  pairs' speed-ups (``paired_speedup_vs_bcfw``; with the curves,
  ``paired_time_to_bcfw_gap_vs_bcfw``) is robust to a drift of the machine's speed,
  which moves the side-by-side medians.

- **tau chosen by the run** (``--auto``, ``ssvm_core.autotau``): for each seed, serial
  BCFW and ``solve(batch_blocks="auto", executor="threads", n_jobs=--workers)`` one
  after the other (gap checks every ``--check-every`` passes on ``--workers`` threads
  in both), ``--passes`` passes each; the time each takes to the gap serial BCFW
  reaches after ``--target-passes`` passes (solver seconds, gap checks included), the
  tau of every pass of the auto run, and in the summary the median ratio
  ``time_to_bcfw_gap_vs_bcfw`` (the issue asks <= 1.10 on the synthetic HorseSeg).

Writes a CSV (one row per measurement), a PNG (time per pass against tau;
median gap against passes) and, with ``--json``, the report with the
machine header.  Timings on a shared machine are noisy: the executors are
timed side by side, tau by tau.

Example::

    SSVM_DATA_HOME=/work/shared/data python benchmarks/scripts/bench_parallel.py \\
        --csv parallel.csv --png parallel.png --json parallel.json
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import math
import os
import statistics
import time

import numpy as np
from _report import print_header, reach, write_json

from ssvm_core import SolverState, _fw, solve
from ssvm_core.executors import Executor, SerialExecutor, ThreadExecutor, resolve_executor
from ssvm_core.files import atomic_write
from ssvm_core.minibatch import minibatch_pass
from ssvm_core.pipeline import Pipeline

PROBLEMS = ("pose", "horseseg", "ocr", "conll")
DEFAULT_PROBLEMS = ("pose", "horseseg", "ocr")
EXECUTORS = ("serial", "threads", "replay", "dask")


class _Metered(Executor):
    """Wraps an executor: wall seconds spent in ``solve_blocks`` and bytes of answers."""

    def __init__(self, inner: Executor):
        self.inner, self.seconds, self.bytes, self.rounds = inner, 0.0, 0, 0

    @property
    def n_workers(self) -> int:
        return self.inner.n_workers

    def solve_blocks(self, oracle, w, blocks, n_samples=1):
        start = time.perf_counter()
        answers = self.inner.solve_blocks(oracle, w, blocks, n_samples)
        self.seconds += time.perf_counter() - start
        self.bytes += answers.nbytes
        self.rounds += 1
        return answers

    def max_scores(self, oracle, w):
        return self.inner.max_scores(oracle, w)


def _problem(name: str, args) -> dict:
    """``oracle``, ``lam``, ``box`` and a description of one problem."""
    if name == "pose":
        from ssvm_data import lsp_like
        from ssvm_data.lsp import POSE_TREE_PARENTS, SCALE_PARTS
        from ssvm_oracles import PoseModel
        X, Y = lsp_like(args.pose_images, grid=(args.pose_grid, args.pose_grid), random_state=0)
        model = PoseModel(POSE_TREE_PARENTS, SCALE_PARTS)
        return {"oracle": model.bind(X, Y), "lam": args.pose_lam, "box": model.weight_bounds(),
                "data": f"lsp_like({args.pose_images}, grid={args.pose_grid}x{args.pose_grid})"}
    if name == "horseseg":
        from ssvm_data import horseseg_like
        from ssvm_oracles import GraphCutModel
        X, Y = horseseg_like(args.horse_images, random_state=0)
        model = GraphCutModel()
        return {"oracle": model.bind(X, Y), "lam": args.horse_lam,
                "box": model.weight_bounds(), "data": f"horseseg_like({args.horse_images})"}
    import ssvm_data
    if name == "conll":
        X, Y, X_test, Y_test = ssvm_data.load_dataset("conll")
        return {"oracle": ssvm_data.model_for("conll", Y, Y_test).bind(X, Y),
                "lam": args.conll_lam, "box": None, "data": "conll (CoNLL-2000, real)"}
    from ssvm_oracles import ChainModel
    home = os.environ.get("SSVM_DATA_HOME")
    if home:
        X, Y, _, _ = ssvm_data.load_ocr(split="large", data_home=home, download=False)
        data = "ocr-large (real)"
    else:
        n = args.ocr_words or 6251
        X, Y = ssvm_data.synthetic.ocr_like(n, random_state=0)
        data = f"ocr_like({n}) (synthetic: SSVM_DATA_HOME unset)"
    if args.ocr_words:
        X, Y, data = X[:args.ocr_words], Y[:args.ocr_words], f"{data}[:{args.ocr_words}]"
    return {"oracle": ChainModel(n_states=26).bind(X, Y), "lam": args.ocr_lam, "box": None,
            "data": data}


def _worker_cpu(executor) -> float:
    """CPU seconds used so far by the busiest Dask worker process (0 for other executors)."""
    client = getattr(executor, "client", None)
    if client is None:
        return 0.0
    return max(client.run(time.process_time).values())


def _time_passes(prob: dict, executor, tau: int, passes: int, warm: SolverState,
                 parallel_steps: bool = False) -> dict:
    """Median wall seconds per pass (and its split) from copies of ``warm``.

    ``cpu_s`` is this process's CPU time (all its threads); ``worker_cpu_s`` the
    CPU time of the busiest Dask worker.  On an oversubscribed machine they show
    the work done when wall times only show the share of the CPU the run got.
    """
    oracle = prob["oracle"]
    rows = []
    for k in range(passes):
        state = warm.copy()
        rng = np.random.default_rng(100 + k)
        compiled = executor is not None and executor.local_threads(oracle) is not None
        meter = _Metered(executor) if executor is not None and not compiled else None
        cpu, worker_cpu = time.process_time(), _worker_cpu(executor)
        start = time.perf_counter()
        if executor is None:           # BCFW's own path: what solve runs for tau = 1
            order = rng.integers(0, oracle.n_blocks, size=oracle.n_blocks).astype(np.intp)
            _fw.bcfw_pass(oracle, state, order, True)
        else:
            minibatch_pass(oracle, state, meter or executor, rng, tau,
                           parallel_steps=parallel_steps)
        wall = time.perf_counter() - start
        # In-process executors run whole passes in compiled code (``_batch.fw_rounds``):
        # the calls and the steps interleave there and are not timed apart.
        rows.append({"pass_s": wall, "cpu_s": time.process_time() - cpu,
                     "worker_cpu_s": _worker_cpu(executor) - worker_cpu,
                     "answers_s": meter.seconds if meter else (wall if executor is None
                                                                else ""),
                     "steps_s": wall - meter.seconds if meter else (0.0 if executor is None
                                                                    else ""),
                     "bytes": meter.bytes if meter else 0,
                     "rounds": meter.rounds if meter else -(-oracle.n_blocks // tau)})
    best = sorted(rows, key=lambda r: r["pass_s"])[len(rows) // 2]
    return best


def _pipeline_options(args) -> dict:
    """The solver options of the pipelined runs (besides the lag and the threads)."""
    if not args.pipeline_cache_steps:
        return {}
    return {"step": args.pipeline_step, "cache": True,
            "pipeline_cache_steps": args.pipeline_cache_steps}


def _time_pipeline(prob: dict, lag: int, args, warm: SolverState,
                   compiled: bool = True) -> dict:
    """Median wall seconds of a pipelined pass (lag ``lag``, ``--workers`` threads).

    ``--timing-passes`` passes run one after the other on one ``Pipeline`` from a copy
    of ``warm`` (with caching, of a state warmed by one pass with caching, which keeps
    active sets), after one untimed pass: the compiled path balances the calls the
    master makes against the helper's from each pass's measured work.  ``cpu_s`` as
    in ``_time_passes``; on the compiled path also each thread's CPU seconds
    (``master_cpu_s``, ``helper_cpu_s``), the part of them spent waiting for the other
    thread (``*_idle_s``) and the master's share of the calls (``master_share``).
    ``compiled=False`` times the Python passes (``Pipeline(compiled=False)``).
    """
    options = _pipeline_options(args)
    kw = {"compiled": compiled}
    if options:
        kw.update(step=options["step"], cache=True, cache_steps=options["pipeline_cache_steps"])
        warm = solve(prob["oracle"], prob["lam"], box=prob["box"], step=options["step"],
                     cache=True, max_passes=1, tol=0, gap_check_every=1,
                     random_state=0).state
    rows, state = [], warm.copy()
    with Pipeline(prob["oracle"], state, lag, args.workers, **kw) as pipe:
        pipe.one_pass(np.random.default_rng(99))
        for k in range(args.timing_passes):
            share = pipe._compiled.master_share if pipe.path == "compiled" else None
            cpu, start = time.process_time(), time.perf_counter()
            pipe.one_pass(np.random.default_rng(100 + k))
            row = {"pass_s": time.perf_counter() - start, "cpu_s": time.process_time() - cpu,
                   "executor": "pipeline-c" if pipe.path == "compiled" else "pipeline"}
            if pipe.path == "compiled":
                (cm, ch), (im, ih) = pipe.cpu_seconds, pipe._compiled.idle_seconds
                row.update(master_cpu_s=cm, helper_cpu_s=ch, master_idle_s=im,
                           helper_idle_s=ih, master_share=share)
            rows.append(row)
    return sorted(rows, key=lambda r: r["pass_s"])[len(rows) // 2]


def _time_pairs(prob: dict, lag: int, args, warm: SolverState) -> dict:
    """``--pairs`` interleaved pairs of a serial BCFW pass and a pipelined pass (lag
    ``lag``, ``--workers`` threads): the median, min and max of each pair's ratio of
    serial over pipelined wall seconds (``paired_speedup``), and the median seconds of
    each kind.

    Each run continues its own copy of ``warm`` pass after pass, after one untimed pass
    each (the compiled path then balances its threads); the pair's two passes swap
    places every pair, so a slow drift of the machine's speed, which moves the
    side-by-side medians of ``_time_passes`` and ``_time_pipeline``, moves both
    passes of a pair alike.
    """
    oracle, n = prob["oracle"], prob["oracle"].n_blocks
    serial, ratios, serial_s, pipe_s = warm.copy(), [], [], []

    def serial_pass(seed: int) -> float:
        order = np.random.default_rng(seed).integers(0, n, size=n).astype(np.intp)
        start = time.perf_counter()
        _fw.bcfw_pass(oracle, serial, order, True)
        return time.perf_counter() - start

    with Pipeline(oracle, warm.copy(), lag, args.workers) as pipe:

        def pipelined_pass(seed: int) -> float:
            start = time.perf_counter()
            pipe.one_pass(np.random.default_rng(seed))
            return time.perf_counter() - start

        serial_pass(98)
        pipelined_pass(99)
        for k in range(args.pairs):
            if k % 2:
                p_s = pipelined_pass(100 + k)
                s_s = serial_pass(100 + k)
            else:
                s_s = serial_pass(100 + k)
                p_s = pipelined_pass(100 + k)
            serial_s.append(s_s)
            pipe_s.append(p_s)
            ratios.append(s_s / p_s)
        executor = "pipeline-c" if pipe.path == "compiled" else "pipeline"
    return {"executor": executor, "lag": lag, "kind": "pairs", "pairs": args.pairs,
            "paired_speedup": statistics.median(ratios), "paired_min": min(ratios),
            "paired_max": max(ratios), "serial_s": statistics.median(serial_s),
            "pass_s": statistics.median(pipe_s)}


def _passes_to(curve: list[tuple[int, float]], target: float) -> float | None:
    """The passes where the checked gaps first reach ``target``, interpolated in
    log(gap) between checks (``_report.reach``; None if never): the first checked
    pass would round every design but serial BCFW (whose own gap is the target) up
    to its next check."""
    points = sorted(curve)
    return reach([float(p) for p, _ in points], [gap for _, gap in points], target)


def _w_bytes(prob: dict, client, tau: int, rounds: int, warm: SolverState) -> list[dict]:
    """Bytes of w sent per round, whole (``sparse_w=False``) and as changes (True).

    ``rounds`` rounds of ``minibatch_pass`` from copies of ``warm`` (the same draws
    for both, the same iterates: checked); a row per mode with the first round's
    bytes (a whole copy per shard either way) and the median of the later rounds.
    """
    runs = [_w_bytes_run(prob, client, tau, rounds, warm, sparse) for sparse in (False, True)]
    if not np.array_equal(runs[0][1], runs[1][1]):
        raise AssertionError("sparse changes of w gave other iterates than w whole")
    return [row for row, _ in runs]


def _w_bytes_run(prob: dict, client, tau: int, rounds: int, warm: SolverState,
                 sparse: bool) -> tuple[dict, np.ndarray]:
    """One mode of ``_w_bytes``: its row and the iterate it reached."""
    from ssvm_core.executors import DaskExecutor

    state, per_round = warm.copy(), []
    with DaskExecutor(client, sparse_w=sparse) as executor:
        def count() -> bool:
            per_round.append(executor.bytes_sent - sum(per_round))
            return len(per_round) >= rounds

        minibatch_pass(prob["oracle"], state, executor, np.random.default_rng(7), tau,
                       should_stop=count)
    later = per_round[1:] or [0]
    row = {"kind": "w_bytes", "executor": "dask-sparse" if sparse else "dask-dense",
           "tau": tau, "rounds": len(per_round), "bytes": executor.bytes_sent,
           "first_round_bytes": per_round[0], "bytes_per_round": statistics.median(later),
           "max_bytes_per_round": max(later), "dense_messages": executor.dense_messages,
           "w_messages": executor.w_messages}
    return row, state.w.copy()


def _executor(name: str, stack: contextlib.ExitStack, workers: int):
    if name == "serial":
        return SerialExecutor()
    if name in ("threads", "replay"):
        return stack.enter_context(ThreadExecutor(workers))
    import distributed

    from ssvm_core.dask_cluster import local_cluster
    cluster = stack.enter_context(local_cluster(workers, silence_logs=40))
    client = stack.enter_context(distributed.Client(cluster))
    return stack.enter_context(resolve_executor(client))


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", nargs="+", choices=PROBLEMS,
                        default=list(DEFAULT_PROBLEMS))
    parser.add_argument("--taus", type=int, nargs="+", default=[1, 4, 16, 64])
    parser.add_argument("--executors", nargs="+", choices=EXECUTORS, default=list(EXECUTORS))
    parser.add_argument("--workers", type=int, default=2, help="threads / Dask processes")
    parser.add_argument("--timing-passes", type=int, default=1)
    parser.add_argument("--passes", type=int, default=20, help="passes of the gap curves")
    parser.add_argument("--check-every", type=int, default=5)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--pose-seeds", type=int, default=1, help="seeds used for pose")
    parser.add_argument("--no-curves", action="store_true", help="timings only")
    parser.add_argument("--pose-images", type=int, default=32)
    parser.add_argument("--pose-grid", type=int, default=32)
    parser.add_argument("--pose-lam", type=float, default=10.0)
    parser.add_argument("--horse-images", type=int, default=50)
    parser.add_argument("--horse-lam", type=float, default=0.01)
    parser.add_argument("--ocr-lam", type=float, default=0.01)
    parser.add_argument("--ocr-words", type=int, default=None, help="first N words only")
    parser.add_argument("--conll-lam", type=float, default=0.01)
    parser.add_argument("--lags", type=int, nargs="*", default=[], metavar="L",
                        help="also pipelined BCFW with these lags on --workers threads")
    parser.add_argument("--target-passes", type=int, default=10,
                        help="pipelined runs: reach the gap serial BCFW reaches in these "
                        "passes (a multiple of --check-every)")
    parser.add_argument("--pipeline-cache-steps", type=int, default=0, metavar="C",
                        help="pipelined runs with caching and C master cache steps per answer")
    parser.add_argument("--python-pipeline", action="store_true",
                        help="also time the Python pipelined passes where the compiled ones "
                        "run (executor 'pipeline' beside 'pipeline-c')")
    parser.add_argument("--pairs", type=int, default=0, metavar="N",
                        help="also time N interleaved pairs of a serial BCFW pass and a "
                        "pipelined pass for every lag (each pair's speed-up; median and "
                        "range)")
    parser.add_argument("--pipeline-step", default="fw",
                        help="block step of the pipelined runs with caching")
    parser.add_argument("--w-bytes", type=int, default=0, metavar="ROUNDS",
                        help="measure the bytes of w per round over ROUNDS rounds on Dask "
                        "(whole w against its changes) instead of timings and curves")
    parser.add_argument("--w-bytes-tau", type=int, default=16)
    parser.add_argument("--auto", action="store_true",
                        help="time to serial BCFW's gap after --target-passes passes of "
                             "batch_blocks='auto' on --workers threads against serial BCFW "
                             "(gap checks on --workers threads in both), interleaved by seed")
    parser.add_argument("--csv", default=None)
    parser.add_argument("--png", default=None)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    command, machine = print_header("bench_parallel.py", argv)
    if args.w_bytes and "dask" not in args.executors:
        parser.error("--w-bytes measures the Dask executor: keep dask in --executors")
    timing_rows, curve_rows, w_rows, pair_rows, problems = [], [], [], [], {}
    with contextlib.ExitStack() as stack:
        executors = {name: _executor(name, stack, args.workers) for name in args.executors}
        for pname in args.problems:
            prob = _problem(pname, args)
            oracle = prob["oracle"]
            problems[pname] = {"data": prob["data"], "n": oracle.n_blocks,
                               "d": oracle.n_features, "lam": prob["lam"]}
            print(f"\n{pname}: {prob['data']}, n = {oracle.n_blocks}, d = {oracle.n_features},"
                  f" lam = {prob['lam']}")
            warm = solve(oracle, prob["lam"], box=prob["box"], max_passes=1, tol=0,
                         gap_check_every=1, random_state=0).state
            if args.w_bytes:
                for row in _w_bytes(prob, executors["dask"].client, args.w_bytes_tau,
                                    args.w_bytes, warm):
                    row["problem"] = pname
                    w_rows.append(row)
                    print(f"  {row['executor']}: {row['rounds']} rounds of tau "
                          f"{row['tau']} on {args.workers} workers: first round "
                          f"{row['first_round_bytes']:,} bytes, then median "
                          f"{row['bytes_per_round']:,.0f} (max {row['max_bytes_per_round']:,})"
                          f" per round; {row['dense_messages']} of {row['w_messages']} "
                          "messages whole")
                continue
            for ex in executors.values():             # scatter shards, start threads
                ex.solve_blocks(oracle, warm.w, np.arange(min(2, oracle.n_blocks)))
            for tau in args.taus:
                line = f"  tau {tau:3d}:"
                for ename, ex in executors.items():
                    plain = ename == "serial" and tau == 1
                    row = _time_passes(prob, None if plain else ex, tau, args.timing_passes,
                                       warm, parallel_steps=ename == "replay")
                    row.update(problem=pname, executor=ename, tau=tau, kind="time")
                    timing_rows.append(row)
                    line += f"  {ename} {row['pass_s']:.3f}s (cpu {row['cpu_s']:.3f})"
                print(line + "  (s per pass)")
            for lag in args.lags:
                for compiled in (True, False) if args.python_pipeline else (True,):
                    row = _time_pipeline(prob, lag, args, warm, compiled)
                    if not compiled and row["executor"] != "pipeline":
                        continue
                    row.update(problem=pname, lag=lag, kind="time")
                    timing_rows.append(row)
                    line = (f"  {row['executor']} L={lag} on {args.workers} threads: "
                            f"{row['pass_s']:.3f}s (cpu {row['cpu_s']:.3f}")
                    if "master_cpu_s" in row:
                        line += (f"; master {row['master_cpu_s']:.4f} of which idle "
                                 f"{row['master_idle_s']:.4f}, helper {row['helper_cpu_s']:.4f}"
                                 f" of which idle {row['helper_idle_s']:.4f}, master's share "
                                 f"of calls {row['master_share']:.3f}")
                    print(line + ")  (s per pass)")
                if args.pairs > 0:
                    row = _time_pairs(prob, lag, args, warm)
                    row["problem"] = pname
                    pair_rows.append(row)
                    print(f"  {row['executor']} L={lag}: {row['pairs']} interleaved pairs "
                          f"with serial BCFW: speed-up {row['paired_speedup']:.3f} (min "
                          f"{row['paired_min']:.3f}, max {row['paired_max']:.3f}); median "
                          f"pass {row['serial_s']:.4f} s serial, {row['pass_s']:.4f} s "
                          "pipelined")
            seeds = args.seeds[:args.pose_seeds] if pname == "pose" else args.seeds
            if args.auto:
                for row in _auto_runs(prob, seeds, args):
                    row["problem"] = pname
                    curve_rows.append(row)
                    reached = "not reached" if row["auto_s"] is None else \
                        f"{row['auto_s']:.3f} s"
                    print(f"  auto, seed {row['seed']}: time to BCFW's gap after "
                          f"{args.target_passes} passes {reached} against "
                          f"{row['bcfw_s']:.3f} s; tau by pass {row['taus']}")
            if args.no_curves:
                continue
            for tau in args.taus:
                finals = []
                for seed in seeds:
                    res = solve(oracle, prob["lam"], box=prob["box"], batch_blocks=tau,
                                max_passes=args.passes, gap_check_every=args.check_every,
                                tol=0, random_state=seed)
                    for rec in res.history:
                        if rec["gap"] is not None:
                            curve_rows.append({"problem": pname, "tau": tau, "seed": seed,
                                               "kind": "gap", "pass": rec["pass"],
                                               "gap": rec["gap"], "gap_avg": rec["gap_avg"],
                                               "time": rec["time"]})
                    finals.append(res.gap)
                print(f"  tau {tau:3d}: gap after {args.passes} passes (median of "
                      f"{len(seeds)} seeds) {statistics.median(finals):.4g}")
            for lag in args.lags:
                finals = []
                for seed in seeds:
                    res = solve(oracle, prob["lam"], box=prob["box"], pipeline_lag=lag,
                                n_jobs=args.workers, **_pipeline_options(args),
                                max_passes=args.passes,
                                gap_check_every=args.check_every, tol=0, random_state=seed)
                    curve_rows.extend({"problem": pname, "lag": lag, "seed": seed,
                                       "kind": "gap", "pass": rec["pass"], "gap": rec["gap"],
                                       "gap_avg": rec["gap_avg"], "time": rec["time"]}
                                      for rec in res.history if rec["gap"] is not None)
                    finals.append(res.gap)
                print(f"  pipeline L={lag}: gap after {args.passes} passes (median of "
                      f"{len(seeds)} seeds) {statistics.median(finals):.4g}")
    report = {"command": command, "machine": machine, "problems": problems,
              "timings": timing_rows, "curves": curve_rows, "w_bytes": w_rows,
              "pairs": pair_rows,
              "load_average": os.getloadavg()}
    _summarise(report, args)
    if args.csv:
        keys = ["problem", "kind", "executor", "tau", "lag", "seed", "pass", "pass_s", "cpu_s",
                "worker_cpu_s", "master_cpu_s", "master_idle_s", "helper_cpu_s",
                "helper_idle_s", "master_share", "answers_s",
                "steps_s", "bytes", "rounds", "first_round_bytes", "bytes_per_round",
                "max_bytes_per_round", "dense_messages", "w_messages", "gap",
                "gap_avg", "time", "pairs", "paired_speedup", "paired_min", "paired_max",
                "serial_s"]
        with atomic_write(args.csv, "w") as f:
            writer = csv.DictWriter(f, fieldnames=keys)
            writer.writeheader()
            for row in timing_rows + curve_rows + w_rows + pair_rows:
                writer.writerow({k: row.get(k, "") for k in keys})
        print(f"wrote {args.csv}")
    if args.png:
        _plot(report, args.png)
    write_json(args.json, report)
    return report


def _time_to(history: list[dict], target: float) -> float | None:
    """Solver seconds at the first gap check whose returned iterate's gap is <= target."""
    for rec in history:
        gap = rec["gap_avg"] if rec["iterate"] == "average" else rec["gap"]
        if gap is not None and gap <= target:
            return rec["time"]
    return None


def _auto_runs(prob: dict, seeds, args) -> list[dict]:
    """Serial BCFW and ``batch_blocks="auto"`` on ``--workers`` threads, seed by seed: the
    time each takes to the gap serial BCFW reaches after ``--target-passes`` passes."""
    rows = []
    for seed in seeds:
        runs = {name: solve(prob["oracle"], prob["lam"], box=prob["box"],
                            batch_blocks=1 if name == "bcfw" else "auto",
                            executor=None if name == "bcfw" else "threads",
                            n_jobs=args.workers, max_passes=args.passes,
                            gap_check_every=args.check_every, tol=0, random_state=seed)
                for name in ("bcfw", "auto")}
        bcfw = runs["bcfw"].history
        target = next(r["gap_avg"] for r in bcfw if r["pass"] == args.target_passes)
        rows.append({"kind": "auto", "seed": seed, "pass": args.target_passes,
                     "gap_avg": target, "bcfw_s": _time_to(bcfw, target),
                     "auto_s": _time_to(runs["auto"].history, target),
                     "taus": [r["batch_blocks"] for r in runs["auto"].history[1:]]})
    return rows


def _summarise(report: dict, args) -> None:
    """Speed-ups against serial BCFW and gaps at tau = 16 against tau = 1."""
    by = {(r["problem"], r["executor"], r["tau"]): r["pass_s"] for r in report["timings"]
          if "lag" not in r}
    summary = {}
    for pname in report["problems"]:
        base = by.get((pname, "serial", 1))
        for (p, ename, tau), seconds in sorted(by.items()):
            if p == pname and base:
                summary[f"{pname}/{ename}/tau={tau}/speedup_vs_bcfw"] = base / seconds
        for tau in args.taus:
            same = by.get((pname, "serial", tau))
            for ename in ("threads", "replay", "dask"):
                if same and (pname, ename, tau) in by:
                    summary[f"{pname}/{ename}/tau={tau}/speedup_vs_serial"] = \
                        same / by[(pname, ename, tau)]
        _summarise_pipeline(report, pname, base, args, summary)
        auto = [r for r in report["curves"] if r["problem"] == pname and r["kind"] == "auto"]
        if auto:
            ratios = [math.inf if r["auto_s"] is None else r["auto_s"] / r["bcfw_s"]
                      for r in auto]
            summary[f"{pname}/auto/time_to_bcfw_gap_vs_bcfw"] = statistics.median(ratios)
        finals = {}
        for r in report["curves"]:
            if (r["problem"] == pname and r["pass"] == args.passes and "lag" not in r
                    and r["kind"] == "gap"):
                finals.setdefault(r["tau"], []).append(r["gap_avg"])
        for tau, gaps in finals.items():
            summary[f"{pname}/tau={tau}/median_gap_after_{args.passes}"] = \
                statistics.median(gaps)
        if 1 in finals and 16 in finals:
            summary[f"{pname}/tau=16/gap_ratio_vs_bcfw"] = \
                statistics.median(finals[16]) / statistics.median(finals[1])
    for pname in report["problems"]:
        per_round = {r["executor"]: r["bytes_per_round"] for r in report["w_bytes"]
                     if r["problem"] == pname}
        for ename, value in per_round.items():
            summary[f"{pname}/{ename}/w_bytes_per_round"] = value
        if per_round.get("dask-sparse"):
            summary[f"{pname}/w_bytes_dense_over_sparse"] = \
                per_round["dask-dense"] / per_round["dask-sparse"]
    report["summary"] = summary
    print("\nsummary")
    for key, value in summary.items():
        print(f"  {key}: {value:.4g}")


def _summarise_pipeline(report: dict, pname: str, bcfw_pass_s: float | None, args,
                        summary: dict) -> None:
    """Pipelined runs: pass time against serial BCFW's, passes to BCFW's gap and, from
    both, the time to BCFW's gap over serial BCFW's (``time_to_bcfw_gap_vs_bcfw``; the
    issue's targets are <= 0.70 on OCR-large, <= 0.60 on CoNLL), and the same from the
    interleaved pairs of ``--pairs`` (``paired_*``).  The curves are the same for the
    compiled (``pipeline-c``) and the Python passes (``pipeline``)."""
    curves = [r for r in report["curves"] if r["problem"] == pname]
    target = [r["gap_avg"] for r in curves
              if r.get("tau") == 1 and r["pass"] == args.target_passes]
    for lag in args.lags:
        timed = [r for r in report["timings"] if r["problem"] == pname and r.get("lag") == lag]
        for r in timed:
            if bcfw_pass_s:
                summary[f"{pname}/{r['executor']}/L={lag}/speedup_vs_bcfw"] = \
                    bcfw_pass_s / r["pass_s"]
        paired = [r for r in report["pairs"] if r["problem"] == pname and r["lag"] == lag]
        for r in paired:
            summary[f"{pname}/{r['executor']}/L={lag}/paired_speedup_vs_bcfw"] = \
                r["paired_speedup"]
        if not target:
            continue
        mine = [r for r in curves if r.get("lag") == lag]
        needed = [_passes_to([(r["pass"], r["gap_avg"]) for r in mine if r["seed"] == seed],
                             statistics.median(target)) for seed in {r["seed"] for r in mine}]
        if needed and None not in needed:
            passes = statistics.median(needed)
            summary[f"{pname}/pipeline/L={lag}/passes_to_bcfw_gap@{args.target_passes}"] = \
                passes
            for r in timed:
                if bcfw_pass_s:
                    summary[f"{pname}/{r['executor']}/L={lag}/time_to_bcfw_gap_vs_bcfw"] = \
                        passes * r["pass_s"] / (args.target_passes * bcfw_pass_s)
            for r in paired:
                summary[f"{pname}/{r['executor']}/L={lag}/paired_time_to_bcfw_gap_vs_bcfw"] = \
                    passes / (args.target_passes * r["paired_speedup"])


def _plot(report: dict, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(report["problems"])
    fig, axes = plt.subplots(len(names), 2, figsize=(11, 3.6 * len(names)), squeeze=False)
    for row, pname in enumerate(names):
        ax = axes[row][0]
        for ename in EXECUTORS:
            pts = sorted((r["tau"], r["pass_s"]) for r in report["timings"]
                         if r["problem"] == pname and r["executor"] == ename)
            if pts:
                ax.plot(*zip(*pts), marker="o", label=ename)
        ax.set(xscale="log", yscale="log", xlabel="tau (blocks per round)",
               ylabel="seconds per pass", title=f"{pname}: time per pass")
        ax.legend()
        ax = axes[row][1]
        taus = sorted({r["tau"] for r in report["curves"]
                       if r["problem"] == pname and r["kind"] == "gap" and "lag" not in r})
        for tau in taus:
            rows = [r for r in report["curves"]
                    if r["problem"] == pname and r.get("tau") == tau and "lag" not in r]
            passes = sorted({r["pass"] for r in rows})
            med = [statistics.median(r["gap_avg"] for r in rows if r["pass"] == p)
                   for p in passes]
            ax.plot(passes, med, marker=".", label=f"tau={tau}")
        ax.set(yscale="log", xlabel="passes (n oracle calls each)",
               ylabel="exact gap (averaged iterate)", title=f"{pname}: median gap")
        if taus:
            ax.legend()
    fig.tight_layout()
    with atomic_write(path, "wb") as f:
        fig.savefig(f, format="png", dpi=90)
    plt.close(fig)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
