"""Pose trees end to end: planted LSP-like data, box-constrained BCFW, the CLI, the benchmark."""

import json

import numpy as np
import pytest
from strategies import assert_box_fit_certified, load_bench_script

from ssvm.cli import main
from ssvm_core import FrankWolfeSSVM
from ssvm_data import lsp_like
from ssvm_data.lsp import POSE_TREE_PARENTS, SCALE_PARTS
from ssvm_oracles import PoseModel


def tiny_pose_data(seed, n=3):
    """Three parts in a chain, two types, a 2 x 2 grid: 4^3 * 2^4 = 1,024 labellings."""
    rng = np.random.default_rng(seed)
    X, Y = [], []
    for _ in range(n):
        X.append((rng.normal(size=(3, 2, 2)), rng.normal(size=(4, 2, 2, 2)),
                  rng.normal(size=(4, 2, 2))))
        pos = np.array([[0, 0], [1, 0], [1, 1]])[rng.permutation(3)]
        Y.append(np.concatenate([pos.ravel(), rng.integers(0, 2, size=4)]).astype(np.int32))
    return PoseModel([-1, 0, 1], (0, 2), n_types=2), X, Y


@pytest.mark.parametrize("batch", [False, True])
def test_box_constrained_fit_certifies_its_gap_by_enumeration(batch):
    model, X, Y = tiny_pose_data(0)
    assert_box_fit_certified(model, X, Y, batch)


def test_without_the_box_the_oracle_names_the_sign_constraint():
    model, X, Y = tiny_pose_data(1, n=4)
    with pytest.raises(ValueError, match=r"negative quadratic deformation weight .*"
                                         r"model\.weight_bounds\(\)"):
        FrankWolfeSSVM(model, lam=0.01, box=None, max_passes=20, random_state=0).fit(X, Y)


def test_planted_weights_decode_lsp_like_poses():
    """The generator is learnable: the planted model beats the unaries by far."""
    X, Y = lsp_like(10, random_state=3)
    model = PoseModel(POSE_TREE_PARENTS, SCALE_PARTS)
    model.bind(X, Y)
    lower, _ = model.weight_bounds()
    unary_only = np.zeros(model.size_joint_feature)
    unary_only[:26] = 1.0
    planted = unary_only.copy()
    planted[26:76] = 1.0                        # type maps
    planted[lower == 0] = 0.5                   # quadratic deformations around the offsets
    loss = {name: model.mean_loss(Y, model.predict(X, w))
            for name, w in (("unary", unary_only), ("planted", planted))}
    assert loss["planted"] < 0.05 and loss["unary"] > 0.2


def test_cli_trains_synthetic_lsp_within_the_box(tmp_path, capsys):
    out = tmp_path / "lsp"
    assert main(["train", "--dataset", "synthetic-lsp", "--max-passes", "3",
                 "--gap-check-every", "3", "--out", str(out), "--quiet"]) == 0
    report = json.loads((out / "history.json").read_text())
    # The constructor's n_types stays None; T = 13 comes from the data (w's length below).
    assert report["summary"]["model"].startswith("PoseModel(n_parts=26, n_types=None")
    assert report["summary"]["passes"] == 3
    w = np.load(out / "model.npz")["w"]
    assert w.shape == (2676,)
    assert np.all(w[76:].reshape(50, 13, 4)[:, :, [1, 3]] >= 0)
    # Learning happened: far better than the unaries alone (mean loss above 0.2).
    assert report["summary"]["test_score"] > 0.9
    assert "PoseModel" in capsys.readouterr().out


def test_bench_tree_script_runs(tmp_path, capsys):
    script = load_bench_script("bench_tree")
    out = tmp_path / "tree.json"
    report = script.main(["--grid", "4", "5", "--types", "2", "--images", "2", "--repeat", "1",
                          "--train-lams", "10", "--train-images", "2", "--train-passes", "1",
                          "--json", str(out)])
    assert capsys.readouterr().out.startswith("$ bench_tree.py --grid 4 5")
    assert json.loads(out.read_text()) == json.loads(json.dumps(report))
    assert report["n_features"] == 26 + 50 + 50 * 2 * 4
    for grid in ("4", "5"):
        for name in ("w_zero", "w_positive", "training_lam_10"):
            assert report["grids"][grid][name]["call_wall_s"] > 0
