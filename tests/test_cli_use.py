"""``ssvm evaluate`` and ``ssvm predict`` on models written by ``ssvm train``."""

import json
import os
from pathlib import Path

import numpy as np
import pytest

import ssvm_data
from ssvm.cli import main
from ssvm.use import read_predictions
from ssvm_core import load_model
from ssvm_data.conll import CHUNK_TAGS
from ssvm_data.metrics import chunk_scores

HOME = os.environ.get("SSVM_DATA_HOME")


def _needs(folder):
    missing = not (HOME and Path(HOME, folder).is_dir())
    return pytest.mark.skipif(missing, reason=f"set SSVM_DATA_HOME to a folder holding "
                                              f"{folder}/ to run this test")


def _train(tmp_path, dataset, *extra):
    out = tmp_path / dataset
    assert main(["train", "--dataset", dataset, "--out", str(out), "--quiet", *extra]) == 0
    summary = json.loads((out / "history.json").read_text())["summary"]
    return out / "model.npz", summary


def test_evaluate_prints_and_writes_the_metrics_of_the_test_split(tmp_path, capsys):
    model, summary = _train(tmp_path, "synthetic-chain", "--max-passes", "3", "--seed", "4")
    capsys.readouterr()
    assert main(["evaluate", "--model", str(model), "--json", str(tmp_path / "m.json")]) == 0
    printed = capsys.readouterr().out
    metrics = json.loads((tmp_path / "m.json").read_text())
    # the recorded data set and seed: the same test split ssvm train scored
    assert metrics["dataset"] == "synthetic-chain" and metrics["source"] == "test split"
    assert metrics["score"] == pytest.approx(summary["test_score"], abs=1e-12)
    assert metrics["hamming_accuracy"] == pytest.approx(metrics["score"])  # Hamming loss
    assert f"Hamming accuracy            {metrics['hamming_accuracy']:.4f}" in printed
    assert "sequence accuracy" in printed
    assert main(["evaluate", "--model", str(model), "--split", "train"]) == 0
    assert f"{summary['train_score']:.4f}" in capsys.readouterr().out


def test_predict_writes_an_npz_that_reads_back(tmp_path):
    model, _ = _train(tmp_path, "synthetic-multiclass", "--max-passes", "3")
    out = tmp_path / "preds" / "p.npz"
    assert main(["predict", "--model", str(model), "--output", str(out)]) == 0
    _, _, X_test, Y_test = ssvm_data.load_dataset("synthetic-multiclass", random_state=0)
    expected = load_model(model).predict(X_test)
    read = read_predictions(out)
    assert len(read) == len(X_test) and all(p.shape == () for p in read)
    np.testing.assert_array_equal(np.array(read), expected)


def test_multiclass_evaluation_lists_every_class(tmp_path, capsys):
    model, summary = _train(tmp_path, "synthetic-multiclass", "--max-passes", "3")
    capsys.readouterr()
    assert main(["evaluate", "--model", str(model), "--json", str(tmp_path / "m.json")]) == 0
    metrics = json.loads((tmp_path / "m.json").read_text())
    assert metrics["accuracy"] == pytest.approx(summary["test_score"])
    assert sorted(metrics["per_class"]) == ["0", "1", "2"]
    assert sum(c["support"] for c in metrics["per_class"].values()) == 300


def test_errors_are_one_line(tmp_path, capsys):
    model, _ = _train(tmp_path, "synthetic-chain", "--max-passes", "1")
    capsys.readouterr()
    # a model evaluated on data of another feature width
    assert main(["evaluate", "--model", str(model), "--dataset", "synthetic-ocr"]) == 2
    err = capsys.readouterr().err
    assert "does not fit the examples of synthetic-ocr" in err and "feature width" in err
    assert err.count("\n") == 1
    assert main(["evaluate", "--model", str(tmp_path / "none.npz")]) == 2
    assert "none.npz" in capsys.readouterr().err
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    assert main(["predict", "--model", str(tmp_path / "bad.npz"), "--output",
                 str(tmp_path / "new" / "p.npz")]) == 2
    assert "bad.npz: not a valid ssvm model file" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()               # a failed command leaves nothing
    assert main(["evaluate", "--model", str(model), "--input", str(tmp_path / "x")]) == 2
    assert "--input reads OCR and CoNLL files" in capsys.readouterr().err
    assert not (tmp_path / "p.npz").exists()


@pytest.mark.shared_data
@_needs("ocr")
def test_evaluate_and_predict_on_ocr_large(tmp_path, capsys):
    model, summary = _train(tmp_path, "ocr-large", "--max-passes", "1", "--gap-check-every",
                            "1")
    capsys.readouterr()
    assert main(["evaluate", "--model", str(model), "--json", str(tmp_path / "m.json")]) == 0
    printed = capsys.readouterr().out
    metrics = json.loads((tmp_path / "m.json").read_text())
    assert metrics["dataset"] == "ocr-large" and metrics["n_examples"] == 626
    assert metrics["hamming_accuracy"] == pytest.approx(summary["test_score"], abs=1e-12)
    assert "Hamming accuracy" in printed and "sequence accuracy" in printed
    out = tmp_path / "words.txt"
    assert main(["predict", "--model", str(model), "--output", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert len(lines) == 626
    pairs = [line.split("\t") for line in lines]
    assert all(len(p) == len(t) and p.isalpha() and p.islower() for p, t in pairs)
    per_word = [np.mean([a == b for a, b in zip(p, t)]) for p, t in pairs]
    assert np.mean(per_word) == pytest.approx(metrics["hamming_accuracy"])
    assert np.mean([p == t for p, t in pairs]) == pytest.approx(metrics["sequence_accuracy"])


@pytest.mark.shared_data
@_needs("conll2000")
def test_evaluate_and_predict_on_conll(tmp_path, capsys):
    model, summary = _train(tmp_path, "conll-small", "--max-passes", "1", "--gap-check-every",
                            "1")
    capsys.readouterr()
    assert main(["evaluate", "--model", str(model), "--json", str(tmp_path / "m.json")]) == 0
    printed = capsys.readouterr().out
    metrics = json.loads((tmp_path / "m.json").read_text())
    assert metrics["score"] == pytest.approx(summary["test_score"], abs=1e-12)
    chunk = metrics["chunk_f1"]
    assert chunk["gold"] == 23852 and 0.5 < chunk["f1"] < 1
    assert f"F1 {chunk['f1']:.4f}" in printed and "NP" in printed
    out = tmp_path / "chunks.txt"
    assert main(["predict", "--model", str(model), "--output", str(out)]) == 0
    sentences = out.read_text().split("\n\n")
    rows = [[line.split(" ") for line in s.splitlines()] for s in sentences if s.strip()]
    assert len(rows) == 2012 and all(len(r) == 4 for s in rows for r in s)
    index = {tag: k for k, tag in enumerate(CHUNK_TAGS)}
    gold = [[index[r[2]] for r in s] for s in rows]
    guess = [[index[r[3]] for r in s] for s in rows]
    assert chunk_scores(gold, guess, CHUNK_TAGS) == chunk
    # a file in the CoNLL format, read with the training attributes of conll-small
    sample = tmp_path / "sample.txt"
    lines = [" ".join(r[:3]) for r in rows[0]]
    sample.write_text("\n".join(lines) + "\n")
    assert main(["predict", "--model", str(model), "--input", str(sample), "--output",
                 str(tmp_path / "one.txt")]) == 0
    assert (tmp_path / "one.txt").read_text() == "".join(f"{' '.join(r)}\n" for r in rows[0]) \
        + "\n"
