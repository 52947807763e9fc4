#!/usr/bin/env python
"""pystruct 0.3.2's examples run twice: under pystruct itself and under ``ssvm.compat.pystruct``.

For each example of pystruct's sdist (``tests/pystruct_upstream.py`` fetches and caches it; the
examples the conformance test leaves out, ``NOT_RUN`` of
``tests/test_pystruct_examples_upstream.py``, are listed with its reason) this script runs, one
after the other so that both see the same machine load:

1. the unchanged example under ``--pystruct-python`` (a Python with pystruct 0.3.2 installed);
2. the example with only its imports rewritten (``pystruct_upstream.rewrite_source``) under this
   Python, i.e. on ``ssvm.compat.pystruct``; only when pystruct ran it or printed a score
   before it failed (``--always-ours`` runs it anyway).

Each run is a fresh process in a scratch folder holding a copy of every example (some import
their siblings), with matplotlib on Agg, ``plt.show`` a no-op, numpy's global generator seeded
with 0 and ``pystruct_upstream.legacy_shims`` in force. The script records how each run ended,
its printed scores (``label: value`` lines whose label names a score or an accuracy), the fit
times the examples print (``(took X seconds)``), its wall seconds (from the start of the
example to its end, imports included, interpreter start-up excluded), its CPU seconds (of the
example's process, and of its whole process tree, which counts joblib's worker processes that
pystruct's ``n_jobs=-1`` starts) and, for ours, the inner duality gaps of every fitted
``LatentSSVM``'s CCCP rounds. It prints a markdown table (example, what, pystruct, ours,
ratio ours / pystruct of the CPU seconds) with the load average before and after: on a shared
machine the ratios are indicative only. ``--json`` keeps the raw results (written after each
example) and ``--from-json`` rebuilds the table from one or several such files.
``--py3-fixes`` changes, on both sides, the one Python 2 expression (:data:`PY3_FIXES`) that
stops ``plot_latent_node`` before its latent model.

Building pystruct 0.3.2 (Python 3.11; nothing of it belongs in this repository)::

    python3.11 -m venv /tmp/pystruct-venv
    /tmp/pystruct-venv/bin/pip install "numpy==1.23.5" "scipy==1.10.1" "scikit-learn==1.2.2" \\
        "matplotlib==3.7.5" cvxopt joblib "Cython<3" "setuptools<58" wheel
    # sklearn >= 0.23 has no sklearn.externals.joblib, which pystruct 0.3.2 imports:
    SK=$(/tmp/pystruct-venv/bin/python -c "import sklearn, os; print(os.path.dirname(
        sklearn.__file__))")/externals/joblib
    mkdir -p $SK && printf 'from joblib import *\\nfrom joblib import cpu_count\\n' \\
        > $SK/__init__.py
    # the sdist's C files were made by Cython 0.21 and do not compile on Python 3.11, and it
    # ships no .pyx: take them from pystruct's git repository (they match the C files' embedded
    # source, up to xrange -> range) and regenerate the C with Cython 0.29
    mkdir /tmp/pystruct-build && tar xzf ~/.cache/ssvm/pystruct/pystruct-0.3.2.tar.gz \\
        -C /tmp/pystruct-build && cd /tmp/pystruct-build/pystruct-0.3.2
    git clone https://github.com/pystruct/pystruct /tmp/pystruct-git   # 957193a, master
    git -C /tmp/pystruct-git show 957193a:src/utils.pyx > src/utils.pyx
    git -C /tmp/pystruct-git show 957193a:pystruct/inference/_viterbi.pyx \\
        > pystruct/inference/_viterbi.pyx
    /tmp/pystruct-venv/bin/cython -3 src/utils.pyx -o src/utils.c
    /tmp/pystruct-venv/bin/cython -3 pystruct/inference/_viterbi.pyx \\
        -o pystruct/inference/_viterbi.c
    /tmp/pystruct-venv/bin/pip install --no-deps --no-build-isolation .

Our side on pystruct's generation of NumPy, SciPy and scikit-learn (the import of
scikit-learn 1.9 alone takes longer than some of these scripts; ``docs/pystruct_migration.rst``
has both tables): wheels of this repository, built with its build tools, in a second
environment, which then runs this script::

    for p in ssvm_data ssvm_core ssvm_oracles ssvm_paths .; do   # ssvm-core installed first
        pip wheel --no-deps --no-build-isolation -w /tmp/wheels ./$p; done
    python3.11 -m venv /tmp/oldenv
    /tmp/oldenv/bin/pip install "numpy==1.26.4" "scipy==1.10.1" "scikit-learn==1.2.2" \\
        "matplotlib==3.7.5" "networkx>=3.0" pooch threadpoolctl tqdm highspy pytest
    /tmp/oldenv/bin/pip install --no-deps /tmp/wheels/*.whl
    env -u PYTHONPATH /tmp/oldenv/bin/python benchmarks/scripts/bench_pystruct_examples.py \\
        --pystruct-python /tmp/pystruct-venv/bin/python --py3-fixes

pystruct's optional packages (ad3, pyqpbo, opengm) have no wheels for Python 3.11, so pystruct
runs there with ``get_installed() == ['max-product', 'lp']``: its CRFs' default inference is
max-product (loopy belief propagation on loopy graphs) where it would be AD3 with ad3 installed.

Usage (from the repository root; the pystruct side needs no ssvm source, so ``PYTHONPATH`` is
dropped for it)::

    SSVM_DATA_HOME=../shared/data python benchmarks/scripts/bench_pystruct_examples.py \\
        --pystruct-python /tmp/pystruct-venv/bin/python --json /tmp/examples.json
    python benchmarks/scripts/bench_pystruct_examples.py --pystruct-python \\
        /tmp/pystruct-venv/bin/python --examples plot_binary_svm.py svm_as_crf.py
    python benchmarks/scripts/bench_pystruct_examples.py --pystruct-python \\
        /tmp/pystruct-venv/bin/python --examples plot_latent_node.py --py3-fixes
    python benchmarks/scripts/bench_pystruct_examples.py --from-json /tmp/a.json /tmp/b.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[2] / "tests"
#: the two sides of the comparison, in the order they run
FLAVOURS = ("pystruct", "ours")
#: seconds after which a run is stopped
TIMEOUT = 1800
#: a printed score: "label: value" (a number, possibly followed by text)
VALUE_LINE = re.compile(r"^\s*(?P<label>[^:\n]*[A-Za-z][^:\n]*):\s*(?P<value>-?\d+(?:\.\d*)?)"
                        r"(?:\s*\(took (?P<took>[0-9.]+) seconds\))?", re.MULTILINE)
#: with --py3-fixes, the text replaced in both sides' copies of an example whose own code
#: needs Python 2 before it prints all its scores (the same change on both sides)
PY3_FIXES = {"plot_latent_node.py": [("reshape(size / 2, size / 2)",
                                      "reshape(size // 2, size // 2)")]}
#: what makes a printed value a score
SCORE_WORD = re.compile(r"score|accuracy", re.IGNORECASE)
#: a header line introducing the scores under it ("Score with latent SVM:")
HEADER_LINE = re.compile(r"^\s*(?P<header>[^:\n]*[A-Za-z][^:\n]*):\s*$")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pystruct-python", required=False,
                        help="path of a Python interpreter with pystruct 0.3.2 installed")
    parser.add_argument("--examples", nargs="+", default=None,
                        help="example file names (default: every example the conformance "
                             "test runs)")
    parser.add_argument("--flavours", nargs="+", choices=FLAVOURS, default=list(FLAVOURS),
                        help="which sides to run (default: both)")
    parser.add_argument("--always-ours", action="store_true",
                        help="run ours also where pystruct fails before printing a score "
                             "(default: such examples are listed with pystruct's error only)")
    parser.add_argument("--py3-fixes", action="store_true",
                        help="apply PY3_FIXES (Python 2 integer division in plot_latent_node's "
                             "plotting, which stops it before its latent model) on both sides")
    parser.add_argument("--timeout", type=float, default=TIMEOUT,
                        help=f"seconds before a run is stopped (default {TIMEOUT})")
    parser.add_argument("--json", default=None, help="write the raw results to this file")
    parser.add_argument("--output", default=None, help="write the markdown table to this file")
    parser.add_argument("--from-json", nargs="+", default=None, metavar="PATH",
                        help="print the table of the raw results of earlier runs (their "
                             "--json files, merged in order: a later file's example replaces "
                             "an earlier one's) without running anything")
    parser.add_argument("--child", nargs=3, metavar=("FLAVOUR", "EXAMPLE", "RESULT"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if (args.child is None and args.from_json is None and "pystruct" in args.flavours
            and not args.pystruct_python):
        parser.error("--pystruct-python is required to run the pystruct side")
    return args


# -- one run, in a fresh process ----------------------------------------------------------------

def run_child(flavour: str, example: str, result_path: str) -> None:
    """Run `example` in the current folder (its copies are there) and write how it went."""
    sys.path.insert(0, str(TESTS))
    import matplotlib
    import pystruct_upstream

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.show = lambda *args, **kwargs: None
    sys.path.insert(0, os.getcwd())
    outcome = {"flavour": flavour, "example": example, "error": None}
    # run as a script (what runpy.run_path does) in a namespace kept when it fails, so that
    # the learners it made can be read afterwards
    namespace = {"__name__": "__main__", "__file__": os.path.abspath(example)}
    start, cpu_start = time.perf_counter(), cpu_seconds()
    try:
        code = compile(Path(example).read_text(encoding="utf-8"), example, "exec")
        with pystruct_upstream.legacy_shims(), pystruct_upstream.seeded_global_random(0):
            exec(code, namespace)  # noqa: S102 (the example script itself)
    except BaseException as err:  # noqa: BLE001 (every ending is recorded, then reported)
        outcome["error"] = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
    outcome["seconds"] = time.perf_counter() - start
    outcome["cpu_seconds"] = cpu_seconds() - cpu_start
    outcome["startup_cpu_seconds"] = cpu_start      # interpreter, numpy and matplotlib imports
    outcome["latent"] = latent_rounds(namespace)
    sys.stdout.flush()
    Path(result_path).write_text(json.dumps(outcome))


def cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and of the child processes it waited for:
    on a loaded machine a steadier measure than wall time."""
    import resource

    return sum(usage.ru_utime + usage.ru_stime
               for usage in (resource.getrusage(resource.RUSAGE_SELF),
                             resource.getrusage(resource.RUSAGE_CHILDREN)))


def children_cpu_seconds() -> float:
    """CPU seconds of the finished child processes of this one and of theirs (a run's whole
    process tree once it has ended: joblib's worker processes, which pystruct's ``n_jobs=-1``
    starts and the example's own process does not wait for before it measures itself)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def latent_rounds(namespace: dict) -> dict[str, dict]:
    """For each fitted latent learner of the example's namespace (``inner_gaps_``, ours), its
    CCCP rounds: the inner duality gap in pystruct's scale and divided by C n (the scale of the
    cutting-plane learners' ``tol``), the inner learner's ``tol`` and whether its oracle is
    exact (a gap is then a certificate)."""
    found = {}
    for name, value in namespace.items():
        gaps = getattr(value, "inner_gaps_", None)
        base = getattr(value, "base_ssvm", None)
        if gaps is None or base is None or not hasattr(base, "lam_"):
            continue
        found[name] = {"learner": type(base).__name__, "tol": float(base.tol),
                       "exact": bool(getattr(base, "exact_", False)),
                       "gaps": [None if g is None else float(g) for g in gaps],
                       "gaps_over_Cn": [None if g is None else float(g) * base.lam_
                                        for g in gaps],
                       "changes": [int(c) for c in getattr(value, "changes_", [])]}
    return found


def copy_examples(source: Path, workdir: Path, rewrite: bool, py3_fixes: bool) -> None:
    """Put every example of `source` into `workdir`, import-rewritten when `rewrite`, with
    :data:`PY3_FIXES` applied when `py3_fixes`."""
    import pystruct_upstream

    for path in source.glob("*.py"):
        target = workdir / path.name
        if rewrite:
            pystruct_upstream.write_rewritten(path, target)
        else:
            shutil.copy(path, target)
        if py3_fixes and path.name in PY3_FIXES:
            text = target.read_text(encoding="utf-8")
            for old, new in PY3_FIXES[path.name]:
                if old not in text:
                    raise ValueError(f"{path.name} does not contain {old!r}")
                text = text.replace(old, new)
            target.write_text(text, encoding="utf-8")


def run_one(flavour: str, example: str, python: str, source: Path, timeout: float,
            py3_fixes: bool = False) -> dict:
    """Run `example` on `flavour` in a fresh process and scratch folder; what it printed."""
    with tempfile.TemporaryDirectory(prefix=f"pystruct-{flavour}-") as scratch:
        workdir = Path(scratch)
        copy_examples(source, workdir, rewrite=flavour == "ours", py3_fixes=py3_fixes)
        result = workdir / "result.json"
        env = dict(os.environ, MPLBACKEND="Agg")
        if flavour == "pystruct":
            env.pop("PYTHONPATH", None)  # no ssvm sources on pystruct's side
        command = [python, str(Path(__file__).resolve()), "--child", flavour, example,
                   str(result)]
        start, tree_start = time.perf_counter(), children_cpu_seconds()
        try:
            done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True,
                                  timeout=timeout)
            printed, errors = done.stdout, done.stderr
            outcome = (json.loads(result.read_text()) if result.exists() else
                       {"error": f"exit {done.returncode}: {errors.strip().splitlines()[-1:]}",
                        "seconds": None})
        except subprocess.TimeoutExpired as err:
            printed = err.stdout.decode() if isinstance(err.stdout, bytes) else err.stdout or ""
            errors = ""
            outcome = {"error": f"stopped after {timeout:.0f} s", "seconds": None}
        outcome.update(flavour=flavour, example=example, stdout=printed,
                       tree_cpu_seconds=children_cpu_seconds() - tree_start,
                       stderr_tail=errors[-2000:], process_seconds=time.perf_counter() - start,
                       scores=parse_scores(printed))
    return outcome


def parse_scores(printed: str) -> dict[str, dict]:
    """Printed scores -> {label: {"value": v, "took": seconds or None}}.

    A score is a ``label: value`` line whose label names a score or an accuracy; a label
    printed in the lines right under a header line ("Score with latent SVM:" then
    "Test: 0.95") is prefixed with the header; a label printed again gets a ``#2`` suffix.
    """
    scores: dict[str, dict] = {}
    header = ""
    for line in printed.splitlines():
        top = HEADER_LINE.match(line)
        if top:
            header = top["header"].strip()
            continue
        match = VALUE_LINE.match(line)
        if match is None:
            header = ""  # a header covers the value lines right under it
            continue
        label = match["label"].strip()
        if header and not SCORE_WORD.search(label):
            label = f"{header} {label}"
        if not SCORE_WORD.search(label):
            continue  # a learner's progress output (pystruct's verbose learners print a lot)
        key, n = label, 1
        while key in scores:
            n += 1
            key = f"{label} #{n}"
        scores[key] = {"value": float(match["value"].rstrip(".")),
                       "took": float(match["took"]) if match["took"] else None}
    return scores


# -- the table ----------------------------------------------------------------------------------

def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _ratio(ours: float | None, theirs: float | None) -> str:
    return "-" if not ours or not theirs else f"{ours / theirs:.2f}"


def _short(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def _cpu(run: dict) -> float | None:
    """The CPU seconds of a run: its whole process tree when measured (less the child's
    start-up before the example began), else its own."""
    tree = run.get("tree_cpu_seconds")
    if not tree:
        return run.get("cpu_seconds")
    return tree - run.get("startup_cpu_seconds", 0.0)


def _times(run: dict) -> str:
    return f"{_seconds(run.get('seconds'))} / {_seconds(_cpu(run))}"


def markdown_table(results: dict[str, dict[str, dict]], not_run: dict[str, str]) -> str:
    """The comparison as a markdown table.

    Per example, one row with how each side ended, its seconds (wall / CPU, the whole script)
    and the ratio ours / pystruct of the CPU seconds (of the wall seconds where a CPU time is
    missing); then one row per printed score, with the fit seconds the example printed beside
    it (wall); then, for ours, the inner duality gaps of each latent learner's CCCP rounds.
    """
    lines = ["| example | what | pystruct | ours | pystruct s | ours s | ours / pystruct |",
             "|---|---|---|---|---|---|---|"]
    for example, runs in results.items():
        theirs, ours = runs.get("pystruct", {}), runs.get("ours", {})
        ending = {flavour: ("ran" if not run.get("error") else _short(run["error"]))
                  for flavour, run in runs.items()}
        compared = bool(theirs.get("scores")) or (bool(theirs) and not theirs.get("error"))
        cpu = _cpu(theirs) and _cpu(ours)
        lines.append(f"| {example} | script: ending; s wall / CPU | "
                     f"{ending.get('pystruct', 'not run')} | {ending.get('ours', 'not run')} | "
                     f"{_times(theirs)} | {_times(ours)} | "
                     + ("- |" if not compared else
                        f"{_ratio(_cpu(ours), _cpu(theirs))} (CPU) |" if cpu else
                        f"{_ratio(ours.get('seconds'), theirs.get('seconds'))} (wall) |"))
        labels = list(theirs.get("scores", {}))
        labels += [label for label in ours.get("scores", {}) if label not in labels]
        for label in labels:
            a = theirs.get("scores", {}).get(label, {})
            b = ours.get("scores", {}).get(label, {})
            took = "; fit s (wall)" if a.get("took") or b.get("took") else ""
            lines.append(f"| | {label}{took} | {a.get('value', '-')} | {b.get('value', '-')} | "
                         f"{_seconds(a.get('took'))} | {_seconds(b.get('took'))} | "
                         f"{_ratio(b.get('took'), a.get('took'))} |")
        for name, rounds in ours.get("latent", {}).items():
            gaps = ", ".join("-" if g is None else f"{g:.2g}" for g in rounds["gaps_over_Cn"])
            lines.append(f"| | CCCP ``{name}``: inner gaps / C n ({rounds['learner']}, "
                         f"tol {rounds['tol']:g}, {'exact' if rounds['exact'] else 'inexact'} "
                         f"oracle) | | {gaps} | | | |")
    for example, reason in not_run.items():
        lines.append(f"| {example} | not run | {reason} | | | | |")
    return "\n".join(lines)


def summary_line(report: dict) -> str:
    """Machine, load and date of a run, to print under its table."""
    before, after, machine = report["load_before"], report["load_after"], report["machine"]
    return (f"load average before {before[0]:.2f} / {before[1]:.2f} / {before[2]:.2f}, after "
            f"{after[0]:.2f} / {after[1]:.2f} / {after[2]:.2f} (1 / 5 / 15 min); "
            f"{machine['nproc']} cores, {machine['cpu_model']}; {report['date']}")


def run_all(args: argparse.Namespace, argv: list[str] | None) -> dict:
    """Run the examples, both sides interleaved; the raw report (written after each example
    to ``--json`` when given, so an interrupted run keeps what it measured)."""
    import test_pystruct_examples_upstream as conformance
    from _report import print_header

    command, machine = print_header("benchmarks/scripts/bench_pystruct_examples.py", argv)
    source = conformance.ROOT / "examples"
    examples = args.examples or list(conformance.EXAMPLES)
    pythons = {"pystruct": args.pystruct_python, "ours": sys.executable}
    report = {"command": command, "machine": machine, "load_before": os.getloadavg(),
              "not_run": {} if args.examples else dict(conformance.NOT_RUN), "results": {}}
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*report["load_before"]), flush=True)
    for example in examples:
        fixed = args.py3_fixes and example in PY3_FIXES
        key = f"{example} (with PY3_FIXES)" if fixed else example
        runs = report["results"][key] = {}
        for flavour in args.flavours:
            theirs = runs.get("pystruct")
            if (flavour == "ours" and theirs and theirs["error"] and not theirs["scores"]
                    and not args.always_ours):
                print(f"{key} [ours]: not run (pystruct does not run it here)", flush=True)
                continue
            run = runs[flavour] = run_one(flavour, example, pythons[flavour], source,
                                          args.timeout, fixed)
            print(f"{key} [{flavour}]: {_seconds(run['seconds'])} s, "
                  f"{run['error'] or 'ran'}; " +
                  ", ".join(f"{k}={v['value']}" for k, v in run["scores"].items()), flush=True)
        report["load_after"] = os.getloadavg()
        report["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    return report


def merge_reports(reports: list[dict]) -> dict:
    """One report from several runs' reports: their results in order (a later run of an
    example replaces an earlier one), scores parsed again, the widest load range."""
    merged = dict(reports[0], results={}, not_run={})
    for report in reports:
        merged["results"].update(report["results"])
        merged["not_run"].update(report.get("not_run", {}))
    for key, pick in (("load_before", min), ("load_after", max)):
        merged[key] = [pick(r[key][i] for r in reports) for i in range(3)]
    merged["date"] = " / ".join(sorted({r.get("date", "?") for r in reports}))
    for runs in merged["results"].values():
        for run in runs.values():
            run["scores"] = parse_scores(run["stdout"])
    return merged


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        run_child(*args.child)
        return 0
    sys.path.insert(0, str(TESTS))
    if args.from_json:
        report = merge_reports([json.loads(Path(path).read_text()) for path in args.from_json])
    else:
        report = run_all(args, argv)
    table = markdown_table(report["results"], report["not_run"])
    print()
    print(table)
    print()
    print(summary_line(report))
    if args.output:
        Path(args.output).write_text(table + "\n\n" + summary_line(report) + "\n")
    if args.json and not args.from_json:
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
