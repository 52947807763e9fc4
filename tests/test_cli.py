"""The ``ssvm`` command line on generated data."""

import json

import numpy as np
import pytest

from ssvm.cli import main
from ssvm_core import SolverState


def test_train_writes_history_model_and_state_and_resumes(tmp_path, capsys):
    out = tmp_path / "run"
    args = ["train", "--dataset", "synthetic-chain", "--max-passes", "4",
            "--gap-check-every", "2", "--tol", "0", "--out", str(out), "--quiet"]
    assert main(args) == 0
    report = json.loads((out / "history.json").read_text())
    assert report["summary"]["status"] == "max_passes"
    assert report["summary"]["passes"] == 4
    records = [r for r in report["history"] if r["gap_avg"] is not None]
    assert [r["pass"] for r in records] == [0, 2, 4]
    for r in records:
        assert r["primal_avg"] - r["dual_avg"] == pytest.approx(r["gap_avg"], abs=1e-12)
    model = np.load(out / "model.npz")
    assert model["w"].shape == (int(model["w"].shape[0]),)
    assert float(model["gap"]) == pytest.approx(report["summary"]["gap"])
    state = SolverState.load(out / "state.npz")
    assert state.passes == 4
    # Resuming continues the same dual iterate for a fresh budget of passes.
    assert main(args + ["--resume", str(out / "state.npz")]) == 0
    assert SolverState.load(out / "state.npz").passes == 8
    assert "status max_passes" in capsys.readouterr().out


def test_batch_solver_and_multiclass(tmp_path):
    out = tmp_path / "fw"
    assert main(["train", "--dataset", "synthetic-multiclass", "--solver", "fw",
                 "--max-passes", "3", "--out", str(out), "--quiet"]) == 0
    assert json.loads((out / "history.json").read_text())["summary"]["solver"] == "fw"


def test_datasets_lists_every_dataset(capsys):
    assert main(["datasets"]) == 0
    listed = capsys.readouterr().out
    for name in ("ocr-small", "ocr-large", "synthetic-ocr", "synthetic-chain"):
        assert name in listed


def test_bad_arguments_are_reported(tmp_path, capsys):
    assert main(["train", "--dataset", "synthetic-chain", "--lam", "-1",
                 "--out", str(tmp_path), "--quiet"]) == 2
    assert "lam must be a finite positive number" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["train", "--dataset", "no-such-dataset"])
