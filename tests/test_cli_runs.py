"""Runs that are never lost: numbered folders, --overwrite, --resume histories, checks
before any work, one-generation outputs, SIGTERM, and honest budget stops."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

import ssvm.cli
from ssvm.cli import main
from ssvm_core import ConvergenceWarning, FrankWolfeSSVM, SolverState
from ssvm_core.convergence import passes_to_tol
from ssvm_core.exceptions import WorkersLostError
from ssvm_core.executors import SerialExecutor
from ssvm_core.files import FolderGeneration

TRAIN = ["train", "--dataset", "synthetic-chain", "--max-passes", "3", "--gap-check-every", "1",
         "--quiet"]


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """Run in an empty folder (the default outputs go to ./runs)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def no_data(monkeypatch):
    def load_dataset(*args, **kwargs):
        raise AssertionError("the data were loaded before the error was found")

    monkeypatch.setattr(ssvm.cli.ssvm_data, "load_dataset", load_dataset)


def history(folder) -> dict:
    return json.loads((folder / "history.json").read_text())


def snapshot(folder) -> dict:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_a_second_run_gets_a_numbered_folder_and_the_first_is_kept(workdir):
    assert main(TRAIN) == 0
    first = workdir / "runs" / "synthetic-chain-bcfw"
    assert sorted(snapshot(first)) == ["history.json", "model.npz", "state.npz", "train.png"]
    before = snapshot(first)
    assert main(TRAIN + ["--batch-blocks", "4"]) == 0
    assert main(TRAIN + ["--lam", "0.1"]) == 0
    assert snapshot(first) == before
    assert sorted(p.name for p in (workdir / "runs").iterdir()) == [
        "synthetic-chain-bcfw", "synthetic-chain-bcfw-2", "synthetic-chain-bcfw-3"]
    assert history(workdir / "runs" / "synthetic-chain-bcfw-3")["config"]["lam"] == 0.1
    # --overwrite replaces the unnumbered folder, and nothing else is left beside it.
    assert main(TRAIN + ["--overwrite", "--max-passes", "2"]) == 0
    assert history(first)["summary"]["passes"] == 2
    assert len(list((workdir / "runs").iterdir())) == 3


def test_a_pipelined_run_does_not_depend_on_the_threads(workdir):
    assert main(TRAIN + ["--pipeline-lag", "2", "--n-jobs", "2", "--out", "a"]) == 0
    assert main(TRAIN + ["--pipeline-lag", "2", "--out", "b"]) == 0
    a, b = history(workdir / "a"), history(workdir / "b")
    assert a["config"]["pipeline_lag"] == 2
    assert [r["dual"] for r in a["history"]] == [r["dual"] for r in b["history"]]


def test_an_existing_out_folder_needs_overwrite(workdir, capsys):
    out = workdir / "mine"
    assert main(TRAIN + ["--out", str(out)]) == 0
    before = snapshot(out)
    assert main(TRAIN + ["--out", str(out), "--max-passes", "2"]) == 2
    assert "exists and is not empty; pass --overwrite" in capsys.readouterr().err
    assert snapshot(out) == before
    assert main(TRAIN + ["--out", str(out), "--max-passes", "2", "--overwrite"]) == 0
    assert history(out)["summary"]["passes"] == 2
    assert [p.name for p in workdir.iterdir()] == ["mine"]


def test_resume_twice_gives_one_history_of_all_passes(workdir):
    assert main(TRAIN + ["--lam", "0.05", "--tol", "0"]) == 0
    runs = workdir / "runs"
    assert main(["train", "--resume", str(runs / "synthetic-chain-bcfw"), "--max-passes", "2",
                 "--gap-check-every", "1", "--tol", "0", "--quiet"]) == 0
    assert main(["train", "--resume", str(runs / "synthetic-chain-bcfw-2" / "state.npz"),
                 "--max-passes", "4", "--gap-check-every", "1", "--tol", "0", "--quiet"]) == 0
    report = history(runs / "synthetic-chain-bcfw-3")
    records = report["history"]
    assert [r["pass"] for r in records] == list(range(10))
    assert [r["run"] for r in records] == [1] * 4 + [2] * 2 + [3] * 4
    for key in ("oracle_calls", "time", "effective_passes"):
        values = [r[key] for r in records]
        assert values == sorted(values) and values[-1] > values[3], key
    # every record of this run came from one state: the counters match the saved one
    state = SolverState.load(runs / "synthetic-chain-bcfw-3" / "state.npz")
    assert state.passes == 9 and records[-1]["oracle_calls"] == state.oracle_calls
    for r in records:
        assert r["primal_avg"] - r["dual_avg"] == pytest.approx(r["gap_avg"], abs=1e-12)
    # the options of every run are kept, with the lambda actually used
    assert [run["config"]["lam"] for run in report["runs"]] == [0.05, 0.05, 0.05]
    assert [run["summary"]["passes"] for run in report["runs"]] == [3, 5, 9]
    assert report["config"]["dataset"] == "synthetic-chain"      # taken from the resumed run
    assert report["runs"][2]["config"]["resume"].endswith("state.npz")
    # the earlier runs' folders are untouched
    assert history(runs / "synthetic-chain-bcfw")["summary"]["passes"] == 3


def _resume_file_of_another_run(workdir):
    assert main(TRAIN + ["--out", "a"]) == 0
    return ["--resume", "a"]


@pytest.mark.parametrize("bad, message", [
    (["--lam", "-1"], "lam must be a finite positive number"),
    (["--C", "0"], "--C must be a finite positive number"),
    (["--max-passes", "0"], "max_passes must be an integer >= 1"),
    (["--solver", "fw", "--step", "pairwise"], "batch Frank-Wolfe supports neither"),
    (["--solver", "ssg", "--batch-blocks", "8"], "--solver ssg does not take --batch-blocks"),
    (["--solver", "ssg", "--dask-local", "1"], "--solver ssg does not take --dask-local"),
    (["--solver", "ssg", "--tol", "0.1"], "--solver ssg does not take --tol"),
    (["--dask-local", "0"], "--dask-local needs at least 1 worker"),
    (["--pipeline-lag", "2", "--batch-blocks", "4"], "batch_blocks > 1 do not apply"),
    (["--pipeline-lag", "2", "--sampling", "gap"], "pipeline_lag samples one of"),
    (["--pipeline-lag", "2", "--dask-local", "1"], "--pipeline-lag runs its oracle calls"),
    (["--solver", "ssg", "--pipeline-lag", "2"], "--solver ssg does not take --pipeline-lag"),
    (["--pipeline-cache-steps", "2"], "pipeline_cache_steps needs pipeline_lag"),
    (["--pipeline-lag", "2", "--pipeline-cache-steps", "2"], "needs cache=True"),
    (["--resume", "missing.npz"], "missing.npz"),
])
def test_bad_train_options_fail_before_the_data_and_leave_nothing(workdir, capsys, no_data,
                                                                   bad, message):
    assert main(TRAIN + bad) == 2
    err = capsys.readouterr().err
    assert err.startswith("ssvm: error: ") and err.count("\n") == 1 and message in err, err
    assert not any(workdir.iterdir())


def test_a_resume_on_other_data_or_a_mixed_folder_is_refused(workdir, capsys, monkeypatch):
    assert main(TRAIN + ["--out", "a"]) == 0
    monkeypatch.setattr(ssvm.cli.ssvm_data, "load_dataset", None)   # never reached
    assert main(TRAIN[:1] + ["--dataset", "synthetic-multiclass", "--resume", "a"]) == 2
    assert "it was trained on synthetic-chain, not synthetic-multiclass" in \
        capsys.readouterr().err
    # a history.json and a state.npz of different runs (what a crash used to leave)
    report = history(workdir / "a")
    report["history"] = report["history"][:-1]
    (workdir / "a" / "history.json").write_text(json.dumps(report))
    assert main(TRAIN + ["--resume", "a"]) == 2
    assert "holds 3 passes but" in capsys.readouterr().err
    assert [p.name for p in workdir.iterdir()] == ["a"]


def test_a_missing_data_set_is_one_short_line(workdir, capsys, monkeypatch, no_data):
    monkeypatch.setenv("SSVM_OFFLINE", "1")
    empty = workdir / "empty"
    empty.mkdir()
    for command in (["train", "--quiet"], ["path"]):
        assert main(command + ["--dataset", "conll", "--data-home", str(empty)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and len(err) < 250, err
        assert str(empty / "conll2000") in err and "`ssvm datasets`" in err
    assert [p.name for p in workdir.iterdir()] == ["empty"]


def test_the_quick_start_says_when_it_falls_back_to_synthetic_data(workdir, capsys,
                                                                    monkeypatch):
    monkeypatch.setenv("SSVM_OFFLINE", "1")
    empty = workdir / "empty"
    empty.mkdir()
    assert main(["train", "--data-home", str(empty), "--max-passes", "1", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "no OCR data found" in out and str(empty / "ocr") in out
    assert "training on synthetic-ocr instead" in out
    assert (workdir / "runs" / "synthetic-ocr-bcfw" / "train.png").read_bytes()[:4] == \
        b"\x89PNG"


def test_folder_generation_publishes_all_files_or_none(tmp_path):
    target = tmp_path / "run"
    with FolderGeneration(target) as out:
        (out / "a").write_text("old a")
        (out / "b").write_text("old b")
    assert snapshot(target) == {"a": b"old a", "b": b"old b"}
    with pytest.raises(RuntimeError), FolderGeneration(target, overwrite=True) as out:
        (out / "a").write_text("new a")
        raise RuntimeError("crash half-way")
    assert snapshot(target) == {"a": b"old a", "b": b"old b"}
    with FolderGeneration(target, overwrite=True) as out:
        (out / "a").write_text("new a")
    assert snapshot(target) == {"a": b"new a"}
    assert [p.name for p in tmp_path.iterdir()] == ["run"]
    with pytest.raises(FileExistsError):
        FolderGeneration(target)
    # renumbering: a folder filled while the run worked moves the outputs to the next number
    generation = FolderGeneration(tmp_path / "other", renumber=True)
    with generation as out:
        (tmp_path / "other").mkdir()
        (tmp_path / "other" / "x").write_text("someone else")
        (out / "a").write_text("mine")
    assert generation.target == tmp_path / "other-2"
    assert (tmp_path / "other-2" / "a").read_text() == "mine"


def test_a_kill_while_writing_leaves_the_old_generation(tmp_path):
    """``kill -9`` (here ``os._exit``) half-way through the writes of an overwrite."""
    target = tmp_path / "run"
    with FolderGeneration(target) as out:
        (out / "history.json").write_text("old")
        (out / "state.npz").write_text("old")
    code = ("import os, sys; from ssvm_core.files import FolderGeneration\n"
            f"with FolderGeneration({str(target)!r}, overwrite=True) as out:\n"
            "    (out / 'history.json').write_text('new')\n"
            "    os._exit(9)\n")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 9
    assert snapshot(target) == {"history.json": b"old", "state.npz": b"old"}


def _training_process(out, *extra):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.Popen(
        [sys.executable, "-m", "ssvm", "train", "--dataset", "synthetic-ocr", "--tol", "0",
         "--max-passes", "1000000", "--gap-check-every", "5", "--quiet", "--out", str(out),
         *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


@pytest.mark.skipif(os.name != "posix", reason="SIGTERM")
def test_sigterm_stops_a_training_run_after_its_pass_and_keeps_the_outputs(tmp_path):
    out = tmp_path / "run"
    proc = _training_process(out)
    assert proc.stdout.readline().startswith("ssvm train: synthetic-ocr")   # training now
    time.sleep(2.0)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    assert "status interrupted" in stdout and "interrupted by SIGTERM" in stderr
    report = history(out)
    assert report["summary"]["status"] == "interrupted"
    state = SolverState.load(out / "state.npz")
    assert state.passes >= 1 and report["history"][-1]["pass"] == state.passes
    assert np.load(out / "model.npz")["w"].shape == (state.n_features,)
    # the interrupted run resumes where it stopped
    assert main(["train", "--resume", str(out), "--max-passes", "2", "--tol", "0", "--quiet",
                 "--out", str(tmp_path / "more")]) == 0
    assert [r["pass"] for r in history(tmp_path / "more")["history"]][-3:] == [
        state.passes, state.passes + 1, state.passes + 2]


class _LosingExecutor(SerialExecutor):
    """Answers its rounds serially, then loses its (imaginary) cluster after ``rounds``."""

    def __init__(self, rounds):
        self.rounds = rounds

    def local_threads(self, oracle):
        return None                                   # every round through solve_blocks

    def solve_blocks(self, oracle, w, blocks, n_samples=1):
        if self.rounds == 0:
            raise WorkersLostError("the Dask cluster has no worker left")
        self.rounds -= 1
        return super().solve_blocks(oracle, w, blocks, n_samples)


def test_a_run_whose_cluster_is_lost_writes_its_outputs(workdir, monkeypatch, capsys):
    monkeypatch.setattr(ssvm.cli, "_enter_executor", lambda args, stack: _LosingExecutor(25))
    out = workdir / "lost"
    with pytest.warns(RuntimeWarning, match="status 'workers lost'; the model and its state"):
        assert main(["train", "--dataset", "synthetic-chain", "--batch-blocks", "4", "--tol",
                     "0", "--max-passes", "50", "--quiet", "--out", str(out)]) == 0
    assert "status workers lost" in capsys.readouterr().out
    report = history(out)
    assert report["summary"]["status"] == "workers lost"
    state = SolverState.load(out / "state.npz")
    state.check(atol=1e-12)
    assert state.n_steps == 25 * 4 and report["history"][-1]["pass"] == state.passes
    assert np.load(out / "model.npz")["w"].shape == (state.n_features,)


def _chain():
    from ssvm_core.testing import random_chain_data
    from ssvm_oracles import ChainModel

    X, Y = random_chain_data(np.random.default_rng(0), 30, 4, 3, 3)
    return ChainModel(3), X, Y


def test_a_budget_stop_above_tol_warns_with_the_gap_and_an_estimate():
    model, X, Y = _chain()
    with pytest.warns(ConvergenceWarning, match=r"stopped on max_passes after 4 passes with "
                      r"certified duality gap .* > tol 1e-06; about \d+ more passes"):
        svm = FrankWolfeSSVM(model, lam=0.01, tol=1e-6, max_passes=4, gap_check_every=1,
                             random_state=0).fit(X, Y)
    assert svm.status_ == "max_passes" and svm.gap_ > 1e-6
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        # no warning when converged, or with tol=0 (run the whole budget on purpose)
        FrankWolfeSSVM(model, lam=0.01, tol=1.0, random_state=0).fit(X, Y)
        FrankWolfeSSVM(model, lam=0.01, tol=0, max_passes=2, random_state=0).fit(X, Y)
    assert issubclass(ConvergenceWarning, UserWarning)


def test_the_estimate_extrapolates_the_fitted_rate():
    # gap = 2 / k exactly: tol 0.01 is reached at k = 200
    records = [{"pass": k, "gap": 2.0 / k, "iterate": "plain"} for k in range(10, 51, 10)]
    estimate = passes_to_tol(records, 0.01)
    assert estimate.constant == pytest.approx(2.0) and estimate.passes == 150
    assert estimate.n_checks == 3
    # the averaged iterate's gap when the check certified it; noise around 3 / k averages out
    noise = np.exp(np.array([0.1, -0.1, 0.05, -0.05]))
    records = [{"pass": 0, "gap": 1.0, "gap_avg": 1.0, "iterate": "average"}] + [
        {"pass": k, "gap_avg": 3.0 / k * e, "gap": 1.0, "iterate": "average"}
        for k, e in zip(range(10, 41, 10), noise)]
    estimate = passes_to_tol(records, 1e-3)
    assert estimate.constant == pytest.approx(3.0 * np.exp(np.mean(np.log(noise[-3:]))))
    assert estimate.passes == int(np.ceil(estimate.constant / 1e-3 - 40))
    # one check after the first pass: c = gap k
    estimate = passes_to_tol([{"pass": 0, "gap": 1.0}, {"pass": 5, "gap": 0.1}], 0.01)
    assert (estimate.n_checks, estimate.passes) == (1, 45)
    assert passes_to_tol([{"pass": 5, "gap": 1e-3}], 0.01) is None
    assert passes_to_tol([{"pass": 0, "gap": 1.0}], 0.01) is None


def test_the_cli_final_line_says_the_run_did_not_converge(workdir, capsys):
    assert main(TRAIN + ["--tol", "1e-6"]) == 0
    out = capsys.readouterr().out
    assert "not converged: the solver stopped on max_passes after 3 passes" in out
    assert "more passes would reach tol (an estimate" in out


def test_the_progress_bar_shows_the_certified_gap_or_the_labelled_estimate():
    text = ssvm.cli._progress_text
    assert text({"gap": 0.5, "gap_avg": 0.25, "iterate": "average"}) == "gap 2.500e-01"
    assert text({"gap": 0.5, "iterate": "plain"}) == "gap 5.000e-01"
    assert text({"gap": None, "gap_avg": None, "gap_estimate": 0.125}) == "gap est. 1.250e-01"


def test_ssg_runs_write_their_figure_without_a_state(workdir, capsys):
    assert main(TRAIN + ["--solver", "ssg", "--gap-check-every", "1"]) == 0
    folder = workdir / "runs" / "synthetic-chain-ssg"
    assert sorted(snapshot(folder)) == ["history.json", "model.npz", "train.png"]
    assert (folder / "train.png").read_bytes()[:4] == b"\x89PNG"
    assert "SSG has no duality gap" in capsys.readouterr().out
