"""Tests of ssvm_data.available_datasets and ssvm_data.load_dataset."""

import os
from pathlib import Path

import numpy as np
import pytest

import ssvm_data
from ssvm_data import _io

NAMES = ["ocr-small", "ocr-large", "conll", "conll-small", "synthetic-ocr", "synthetic-chain",
         "synthetic-multiclass", "synthetic-horseseg", "synthetic-matching", "synthetic-lsp"]
REAL_HOME = os.environ.get("SSVM_DATA_HOME")


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    """No data home from the environment, no downloads, an empty private cache."""
    monkeypatch.delenv("SSVM_DATA_HOME", raising=False)
    monkeypatch.setenv("SSVM_OFFLINE", "1")
    monkeypatch.setattr(_io, "cache_dir", lambda: tmp_path / "cache")


def write_tiny_npz(folder):
    """Two words of two letters, word 0 in fold 0, word 1 in fold 1."""
    folder.mkdir(parents=True)
    pixels = np.zeros((4, 128), dtype=np.int8)
    pixels[:, 0] = 1
    np.savez(folder / "letters.npz", pixels=pixels, labels=np.array([0, 1, 2, 3], np.int8),
             word_offsets=np.array([0, 2, 4]), word_fold=np.array([0, 1], np.int8))
    return folder / "letters.npz"


def test_names_and_keys():
    datasets = ssvm_data.available_datasets()
    assert [d["name"] for d in datasets] == NAMES
    for d in datasets:
        assert set(d) == {"name", "kind", "available", "path", "searched", "source",
                          "description"}
        assert d["kind"] in ("real", "synthetic") and d["description"]
        # real data sets say where they were looked for and how to get them
        assert bool(d["searched"]) == bool(d["source"]) == (d["kind"] == "real")


def test_real_datasets_unavailable_without_files(tmp_path):
    for d in ssvm_data.available_datasets(data_home=tmp_path):
        assert d["available"] == (d["kind"] == "synthetic")
        assert d["path"] is None


def test_real_datasets_found_in_data_home(tmp_path, monkeypatch):
    path = write_tiny_npz(tmp_path / "ocr")
    monkeypatch.setenv("SSVM_DATA_HOME", str(tmp_path))
    real = [d for d in ssvm_data.available_datasets()
            if d["kind"] == "real" and d["name"].startswith("ocr")]
    assert [d["name"] for d in real] == ["ocr-small", "ocr-large"]
    assert all(d["available"] and d["path"] == str(path) for d in real)


def test_load_real_dataset_by_name(tmp_path):
    write_tiny_npz(tmp_path / "ocr")
    _, Y, _, Y_test = ssvm_data.load_dataset("ocr-small", data_home=tmp_path)
    assert [y.tolist() for y in Y] == [[0, 1]] and [y.tolist() for y in Y_test] == [[2, 3]]
    _, Y, _, Y_test = ssvm_data.load_dataset("ocr-large", data_home=tmp_path)
    assert [y.tolist() for y in Y] == [[2, 3]] and [y.tolist() for y in Y_test] == [[0, 1]]


def test_missing_real_dataset_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="letters.npz"):
        ssvm_data.load_dataset("ocr-small", data_home=tmp_path)


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(ValueError) as info:
        ssvm_data.load_dataset("mnist")
    assert all(name in str(info.value) for name in NAMES)


@pytest.mark.parametrize("name, sizes", [
    ("synthetic-ocr", (600, 200)),
    ("synthetic-chain", (200, 200)),
    ("synthetic-multiclass", (300, 300)),
])
def test_synthetic_datasets(name, sizes):
    X, Y, X_test, Y_test = ssvm_data.load_dataset(name)
    assert (len(X), len(Y), len(X_test), len(Y_test)) == (sizes[0], sizes[0], sizes[1], sizes[1])
    again = ssvm_data.load_dataset(name, random_state=0)
    other = ssvm_data.load_dataset(name, random_state=1)
    for a, b in zip(X, again[0]):
        np.testing.assert_array_equal(a, b)
    assert not all(np.array_equal(a, c) for a, c in zip(X, other[0]))
    assert not np.array_equal(np.concatenate(X[:5]), np.concatenate(X_test[:5]))


@pytest.mark.shared_data
@pytest.mark.skipif(not (REAL_HOME and Path(REAL_HOME, "ocr").is_dir()),
                    reason="set SSVM_DATA_HOME to a folder holding ocr/ to run the real-data tests")
def test_real_ocr_is_available():
    real = [d for d in ssvm_data.available_datasets(data_home=REAL_HOME)
            if d["name"].startswith("ocr")]
    assert all(d["available"] and d["path"].endswith("letters.npz") for d in real)


# --- the model each data set is trained with -------------------------------------------

MODELS = {"ocr-small": "ChainModel", "ocr-large": "ChainModel", "conll": "ChainModel",
          "conll-small": "ChainModel", "synthetic-ocr": "ChainModel",
          "synthetic-chain": "ChainModel", "synthetic-multiclass": "MulticlassModel",
          "synthetic-horseseg": "GraphCutModel", "synthetic-matching": "MatchingModel",
          "synthetic-lsp": "PoseModel"}


def test_every_dataset_names_its_model():
    assert set(MODELS) == set(NAMES)
    for name, cls in MODELS.items():
        spec = ssvm_data.model_spec(name)
        assert (spec.module, spec.name) == ("ssvm_oracles", cls)
        assert str(spec).startswith(f"ssvm_oracles.{cls}(")


def test_unknown_name_raises_listing_the_known_ones():
    for call in (ssvm_data.model_spec, ssvm_data.model_for, ssvm_data.load_dataset):
        with pytest.raises(ValueError, match="unknown data set 'ocr'") as err:
            call("ocr")
        assert all(name in str(err.value) for name in NAMES)


def test_ssvm_data_does_not_import_ssvm_oracles():
    import subprocess
    import sys

    code = ("import sys, ssvm_data; ssvm_data.model_spec('synthetic-lsp'); "
            "assert 'ssvm_oracles' not in sys.modules, 'imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_model_for_builds_the_models():
    oracles = pytest.importorskip("ssvm_oracles")
    from ssvm_data.conll import CHUNK_TAGS
    from ssvm_data.lsp import POSE_TREE_PARENTS

    for name in ("ocr-small", "ocr-large", "synthetic-ocr"):
        model = ssvm_data.model_for(name)
        assert isinstance(model, oracles.ChainModel) and model.n_states == 26
    for name in ("conll", "conll-small"):
        assert ssvm_data.model_for(name).n_states == len(CHUNK_TAGS) == 23
    assert isinstance(ssvm_data.model_for("synthetic-matching"), oracles.MatchingModel)
    assert isinstance(ssvm_data.model_for("synthetic-horseseg"), oracles.GraphCutModel)
    pose = ssvm_data.model_for("synthetic-lsp")
    assert isinstance(pose, oracles.PoseModel)
    assert np.array_equal(pose.parents, POSE_TREE_PARENTS)


def test_label_counts_come_from_the_data():
    oracles = pytest.importorskip("ssvm_oracles")
    _, Y, _, Y_test = ssvm_data.load_dataset("synthetic-chain", random_state=0)
    model = ssvm_data.model_for("synthetic-chain", Y, Y_test)
    top = max(int(y.max()) for y in list(Y) + list(Y_test))
    assert isinstance(model, oracles.ChainModel) and model.n_states == top + 1 == 4
    # a label seen only in the test set counts too
    model = ssvm_data.model_for("synthetic-chain", [np.array([0, 1])], [np.array([5])])
    assert model.n_states == 6
    _, y, _, y_test = ssvm_data.load_dataset("synthetic-multiclass", random_state=0)
    model = ssvm_data.model_for("synthetic-multiclass", y, y_test)
    assert isinstance(model, oracles.MulticlassModel)
    assert model.n_classes == int(max(y.max(), y_test.max())) + 1 == 3
    # at least two labels, even when the data show one
    assert ssvm_data.model_for("synthetic-multiclass", np.zeros(4, int)).n_classes == 2
    with pytest.raises(ValueError, match="no label"):
        ssvm_data.model_for("synthetic-chain")


def test_model_spec_build_names_a_missing_package():
    spec = ssvm_data.ModelSpec("ssvm_no_such_package", "Model")
    with pytest.raises(ImportError, match="needs the package ssvm_no_such_package"):
        spec.build()
