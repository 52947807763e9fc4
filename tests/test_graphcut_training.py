"""Graph cuts end to end: BCFW with the w_P >= 0 box on HorseSeg-like data, and the CLI."""

import importlib.util
import json

import numpy as np
import pytest
from strategies import assert_box_fit_certified, load_bench_script

from ssvm.cli import main
from ssvm_data import horseseg_like
from ssvm_oracles import GraphCutModel


@pytest.mark.parametrize("batch", [False, True])
def test_box_constrained_fit_certifies_its_gap_by_enumeration(batch):
    X, Y = horseseg_like(4, n_nodes=6, n_unary=4, n_pairwise=3, random_state=5)
    assert_box_fit_certified(GraphCutModel(), X, Y, batch)


def test_cli_trains_synthetic_horseseg_within_the_box(tmp_path, capsys):
    out = tmp_path / "hs"
    assert main(["train", "--dataset", "synthetic-horseseg", "--max-passes", "10",
                 "--gap-check-every", "5", "--out", str(out), "--quiet"]) == 0
    report = json.loads((out / "history.json").read_text())
    # The constructor's counts stay None; 1,969 + 100 come from the data (w's shape below).
    assert report["summary"]["model"].startswith("GraphCutModel(n_unary=None, n_pairwise=None,")
    assert report["summary"]["passes"] == 10
    w = np.load(out / "model.npz")["w"]
    assert w.shape == (2069,) and np.all(w[1969:] >= 0)
    # Learning happened: better than labelling every superpixel with one class (score 0.5).
    assert report["summary"]["test_score"] > 0.7
    assert "GraphCutModel" in capsys.readouterr().out


def test_bench_graphcut_script_runs(tmp_path, capsys):
    script = load_bench_script("bench_graphcut")
    out = tmp_path / "graphcut.json"
    report = script.main(["--images", "3", "--nodes", "20", "--unary", "30", "--pairwise", "5",
                          "--passes", "2", "--repeat", "2", "--train-lams", "1",
                          "--train-passes", "2", "--json", str(out)])
    assert capsys.readouterr().out.startswith("$ bench_graphcut.py --images 3")
    assert json.loads(out.read_text()) == json.loads(json.dumps(report))
    for dtype in ("float64", "float32"):
        for name in ("w_zero", "w_trained"):
            assert report["oracle_call_s"][name][dtype] > 0
            assert report["in_cache_call_s"][name][dtype] > 0
        assert report["training_call_s"]["1.0"][dtype] > 0
    if importlib.util.find_spec("maxflow") is None:          # the optional extra
        assert report["pymaxflow_call_s"] is None
    else:
        assert report["pymaxflow_call_s"] > 0
