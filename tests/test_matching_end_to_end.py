"""``ssvm train`` on synthetic-matching, and the dual certificate of the matching oracle."""

import json

import numpy as np
import pytest

from ssvm.cli import main
from ssvm_core import duality_gap, primal_objective, solve
from ssvm_data.synthetic import matching
from ssvm_oracles import CountingOracle, MatchingModel


def test_cli_trains_synthetic_matching(tmp_path, capsys):
    out = tmp_path / "matching"
    assert main(["train", "--dataset", "synthetic-matching", "--max-passes", "3",
                 "--out", str(out), "--quiet"]) == 0
    summary = json.loads((out / "history.json").read_text())["summary"]
    assert summary["model"].startswith("MatchingModel(") and summary["passes"] == 3
    assert np.isfinite(summary["gap"]) and summary["gap"] >= 0
    assert np.load(out / "model.npz")["w"].shape == (82,)
    assert "synthetic-matching (200 train / 100 test examples)" in capsys.readouterr().out


def test_gap_certifies_the_primal_through_threads():
    X, Y = matching(30, length=(5, 12), random_state=5)
    oracle = CountingOracle(MatchingModel().bind(X, Y))
    assert not oracle.needs_gil
    result = solve(oracle, 0.05, max_passes=10, gap_check_every=5, random_state=1, n_jobs=2)
    gap = duality_gap(oracle, result.state, averaged=result.iterate == "average", n_jobs=2)
    assert 0 <= gap == pytest.approx(result.gap, rel=1e-9, abs=1e-12)
    assert primal_objective(oracle, 0.05, result.w, n_jobs=2) == pytest.approx(
        primal_objective(oracle, 0.05, result.w), rel=1e-12)
