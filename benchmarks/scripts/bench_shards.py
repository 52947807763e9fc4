"""Shard rounds, simulated: per-pass efficiency against serial BCFW for K shards on one core.

Runs ``solve(executor=ShardExecutor(K))`` (``ssvm_core.shards``: K shards
run one after the other in this process, with the iterates of a parallel
run) and serial BCFW on the pose problem (``ssvm_data.lsp_like`` on a
``--grid`` square grid, the model's box, lam ``--lam``), with an exact gap
check after every pass.  A pass is n oracle calls (gap checks not counted).
For each target gap g -- the gap serial BCFW reaches after each of
``--targets`` passes -- the efficiency of a design is

    (serial BCFW passes to reach g) / (shard-round passes to reach g),

with passes interpolated linearly in log(gap) between checks (None when the
run does not reach g in ``--passes``).  Counts, not timings: the numbers do
not depend on the machine's load.  Also reported per design: the median
master step t, the median and last sigma' and the round lengths H.

``--dask W`` also runs each design on a LocalCluster of W worker processes
and reports its speed-up in time to each target against the serial run
(wall clock, gap checks included: a quiet machine only); ``--no-simulation``
then skips the one-process runs.

Examples::

    python benchmarks/scripts/bench_shards.py --n 1000 --grid 4 --shards 8 64 512 \\
        --passes 20 --targets 5 10 20 --csv shards.csv
    python benchmarks/scripts/bench_shards.py --n 1000 --grid 8 --shards 2 --passes 11 \\
        --targets 5 10 --dask 2 --no-simulation --seed 0
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics

from _report import print_header, reach, write_json

from ssvm_core import solve
from ssvm_core.files import atomic_write
from ssvm_core.shards import ShardExecutor


def _problem(args):
    from ssvm_data import lsp_like
    from ssvm_data.lsp import POSE_TREE_PARENTS, SCALE_PARTS
    from ssvm_oracles import PoseModel
    X, Y = lsp_like(args.n, grid=(args.grid, args.grid), random_state=0)
    return PoseModel(POSE_TREE_PARENTS, SCALE_PARTS).bind(X, Y)


def _run(oracle, args, executor) -> tuple[list[float], list[float]]:
    """The exact gap and the solver's seconds (checks included) after 0, 1, ... passes."""
    result = solve(oracle, args.lam, executor=executor, max_passes=args.passes,
                   gap_check_every=1, averaging="plain", tol=0.0, random_state=args.seed,
                   box="model")
    return [rec["gap"] for rec in result.history], [rec["time"] for rec in result.history]


def passes_to(gaps: list[float], target: float) -> float | None:
    """Passes to reach ``target`` (see ``reach``)."""
    return reach(list(range(len(gaps))), gaps, target)


def _designs(args) -> list[tuple[str, int, object, object]]:
    out = []
    for k in args.shards:
        for h in args.round_steps:
            for s in args.sigma:
                out.append((f"K={k} H={h} sigma={s}", k,
                            h if h == "auto" else int(h), s if s == "auto" else float(s)))
    return out


def _time_on_dask(oracle, args, serial, serial_time, targets, rows) -> None:
    """Speed-up in time to each target of every design on a LocalCluster of worker processes."""
    if not serial_time:
        raise SystemExit("--dask needs the serial run's times: do not combine it with "
                         "--serial-from")
    import distributed
    with distributed.LocalCluster(n_workers=args.dask, processes=True, threads_per_worker=1,
                                  dashboard_address=":0", silence_logs=50) as cluster, \
            distributed.Client(cluster) as client:
        for row, (name, k, h, s) in zip(rows, _designs(args)):
            ex = ShardExecutor(k, client, sigma=s, round_steps=h)
            gaps, times = _run(oracle, args, ex)
            speedups = []
            for p, g in zip(args.targets, targets):
                mine = reach(times, gaps, g)
                speedup = None if mine is None else reach(serial_time, serial, g) / mine
                row[f"dask_speedup@{p}"] = speedup
                row[f"dask_mb_per_round@{p}"] = (
                    sum(r["bytes"] for r in ex.log) / max(len(ex.log), 1) / 1e6)
                speedups.append(speedup)
            print(f"{name:28s} on {args.dask} Dask workers: " + "  ".join(
                f"time-to-gap speed-up@{p}={'none' if v is None else f'{v:.2f}'}"
                for p, v in zip(args.targets, speedups)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="poses (blocks)")
    parser.add_argument("--grid", type=int, default=4, help="grid side")
    parser.add_argument("--lam", type=float, default=10.0)
    parser.add_argument("--shards", type=int, nargs="+", default=[8, 64])
    parser.add_argument("--round-steps", nargs="+", default=["auto"],
                        help="H per shard and round: integers or 'auto'")
    parser.add_argument("--sigma", nargs="+", default=["auto"],
                        help="sigma': numbers in [1, K] or 'auto'")
    parser.add_argument("--passes", type=int, default=20)
    parser.add_argument("--targets", type=int, nargs="+", default=[5, 10, 20],
                        help="serial BCFW passes whose gaps are the targets")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--serial-from", default=None,
                        help="reuse the serial BCFW gaps of an earlier run's --json report "
                             "(same problem, seed and passes)")
    parser.add_argument("--dask", type=int, default=0, metavar="WORKERS",
                        help="also run each design on a LocalCluster of this many worker "
                             "processes and report serial time / its time to each target "
                             "(wall, gap checks included; time on a quiet machine only)")
    parser.add_argument("--no-simulation", action="store_true",
                        help="with --dask: time the designs on the cluster only, without "
                             "their one-process simulation (no pass-efficiency columns)")
    parser.add_argument("--csv", default=None)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    if args.no_simulation and not args.dask:
        parser.error("--no-simulation needs --dask")
    command, machine = print_header("bench_shards.py", argv)
    oracle = _problem(args)
    print(f"lsp_like({args.n}, grid={args.grid}x{args.grid}), d = {oracle.n_features}, "
          f"lam = {args.lam}, box of the model; {args.passes} passes, exact gap every pass")
    problem = {key: getattr(args, key) for key in ("n", "grid", "lam", "passes", "seed")}
    if args.serial_from:
        with open(args.serial_from) as f:
            earlier = json.load(f)
        if earlier["problem"] != problem:
            raise SystemExit(f"{args.serial_from} was measured on another problem: "
                             f"{earlier['problem']}")
        serial, serial_time = earlier["serial_gaps"], []
    else:
        serial, serial_time = _run(oracle, args, None)
    targets = [serial[p] for p in args.targets if p < len(serial)]
    print("serial BCFW gaps: " + " ".join(f"{g:.3e}" for g in serial))
    rows = []
    for name, k, h, s in _designs(args):
        if args.no_simulation:
            rows.append({"design": name, "K": k})
            continue
        ex = ShardExecutor(k, sigma=s, round_steps=h)
        gaps, _ = _run(oracle, args, ex)
        log = ex.log
        eff = []
        for g in targets:
            mine = passes_to(gaps, g)
            eff.append(None if mine is None else passes_to(serial, g) / mine)
        row = {"design": name, "K": k, "rounds": len(log),
               "t_median": statistics.median(r["t"] for r in log),
               "t_min": min(r["t"] for r in log),
               "sigma_median": statistics.median(r["sigma"] for r in log),
               "sigma_last": log[-1]["sigma"],
               "H_median": statistics.median(r["H"] for r in log),
               "alignment_median": statistics.median(
                   r["alignment"] for r in log if r["alignment"] == r["alignment"]),
               "gaps": gaps}
        for p, e in zip(args.targets, eff):
            row[f"eff@{p}"] = e
        rows.append(row)
        print(f"{name:28s} " + "  ".join(
            f"eff@{p}={'none' if e is None else f'{e:.2f}'}" for p, e in zip(args.targets, eff))
            + f"  t_med={row['t_median']:.2f} sigma_med={row['sigma_median']:.2f} "
            f"H_med={row['H_median']:g} align_med={row['alignment_median']:.2f} "
            f"rounds={row['rounds']}")
        print("    gaps: " + " ".join(f"{g:.3e}" for g in gaps))
    if args.dask:
        _time_on_dask(oracle, args, serial, serial_time, targets, rows)
    if args.csv:
        keys = [k for k in rows[0] if k != "gaps"] if rows else []
        with atomic_write(args.csv, "w") as f:
            writer = csv.DictWriter(f, fieldnames=keys)
            writer.writeheader()
            for row in rows:
                writer.writerow({k: row[k] for k in keys})
        print(f"wrote {args.csv}")
    write_json(args.json, {"command": command, "machine": machine, "problem": problem,
                           "serial_gaps": serial, "rows": rows})


if __name__ == "__main__":
    main()
