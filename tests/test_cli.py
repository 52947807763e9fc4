"""The ``ssvm`` command line on generated data."""

import json

import numpy as np
import pytest

from ssvm.cli import main
from ssvm_core import SolverState, load_model


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
    model = load_model(out / "model.npz")
    assert model.header_["metadata"] == {"dataset": "synthetic-chain", "seed": 0}
    assert model.gap_ == pytest.approx(report["summary"]["gap"])
    assert model.n_passes_ == 4 and model.status_ == "max_passes"
    state = SolverState.load(out / "state.npz")
    assert state.passes == 4
    # Resuming continues the same dual iterate for a fresh budget of passes, and the
    # history (rewritten in place with --overwrite) holds all of them.
    assert main(args + ["--resume", str(out / "state.npz"), "--overwrite"]) == 0
    assert SolverState.load(out / "state.npz").passes == 8
    resumed = json.loads((out / "history.json").read_text())
    assert [r["pass"] for r in resumed["history"]] == list(range(9))
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


@pytest.mark.shared_data
def test_train_on_conll_small(tmp_path):
    """CoNLL-2000 end to end: sparse token attributes, per-block supports, 23 tags."""
    import os
    from pathlib import Path

    home = os.environ.get("SSVM_DATA_HOME")
    if not (home and Path(home, "conll2000").is_dir()):
        pytest.skip("set SSVM_DATA_HOME to a folder holding conll2000/ to run this test")
    out = tmp_path / "conll"
    assert main(["train", "--dataset", "conll-small", "--max-passes", "2", "--gap-check-every",
                 "1", "--data-home", home, "--out", str(out), "--quiet"]) == 0
    report = json.loads((out / "history.json").read_text())
    n_attributes, K = 70083, 23           # attributes of the first 1,000 training sentences
    assert np.load(out / "model.npz")["w"].shape == (n_attributes * K + K * K + 3 * K,)
    state = SolverState.load(out / "state.npz")
    assert not state.dense_blocks and state.block_values.size < 0.05 * 1000 * state.n_features
    gaps = [r["gap_avg"] for r in report["history"] if r["gap_avg"] is not None]
    assert len(gaps) == 3 and gaps[0] == pytest.approx(1.0) and gaps[-1] < gaps[0]


def test_train_blocks_picks_the_storage(tmp_path):
    """--blocks sets the registry model's storage; compact (auto) and dense reach the
    same gap up to rounding, and a model without a basis refuses compact."""
    base = ["train", "--dataset", "synthetic-multiclass", "--max-passes", "3", "--quiet"]
    for blocks in ("auto", "dense"):
        assert main(base + ["--blocks", blocks, "--out", str(tmp_path / blocks)]) == 0
    storages = {b: SolverState.load(tmp_path / b / "state.npz").block_storage
                for b in ("auto", "dense")}
    assert storages == {"auto": "compact", "dense": "dense"}
    gaps = [json.loads((tmp_path / b / "history.json").read_text())["summary"]["gap"]
            for b in ("auto", "dense")]
    assert gaps[0] == pytest.approx(gaps[1], rel=1e-9)
    assert main(["train", "--dataset", "synthetic-lsp", "--max-passes", "1", "--quiet",
                 "--blocks", "compact", "--out", str(tmp_path / "pose")]) == 2
    assert not (tmp_path / "pose").exists()
