"""Saved models: every built-in model round-trips, in a fresh process too; bad files fail."""

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from model_cases import CASES

import ssvm_core
from ssvm_core import FrankWolfeSSVM, ModelFileError, SubgradientSSVM, load_model, save_model
from ssvm_core.model_io import FORMAT_VERSION, parse_model_repr
from ssvm_oracles import ChainModel, EnumerationModel, MulticlassModel, PoseModel

TESTS = Path(__file__).parent
TRUST = ["model_cases"]         # EnumerationModel's feature function lives there


def _fit(name, solver=FrankWolfeSSVM):
    model, X, Y = CASES[name]()
    options = {"box": "model"} if hasattr(model, "weight_bounds") and solver is \
        FrankWolfeSSVM else {}
    if solver is FrankWolfeSSVM:
        options["gap_check_every"] = 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # approximate oracles say so
        est = solver(model, lam=0.1, max_passes=3, random_state=0, **options).fit(X, Y)
    return est, X, Y


def _equal_predictions(a, b) -> bool:
    return len(a) == len(b) and all(np.array_equal(np.asarray(u), np.asarray(v))
                                    for u, v in zip(a, b))


_FRESH = """
import sys
import numpy as np
import ssvm_core
assert "ssvm_oracles" not in sys.modules and "model_cases" not in sys.modules
names, folder, tests = sys.argv[1].split(","), sys.argv[2], sys.argv[3]
sys.path.insert(0, tests)               # model_cases: a trusted module of one file's model
loaded = {n: ssvm_core.load_model(f"{folder}/{n}.npz", trusted_modules=["model_cases"])
          for n in names}
from model_cases import CASES
from ssvm.use import write_predictions
for name, est in loaded.items():
    model, X, Y = CASES[name]()
    write_predictions(f"{folder}/{name}-pred.npz", est.predict(X))
    np.save(f"{folder}/{name}-w.npy", est.w_)
    with open(f"{folder}/{name}-score.txt", "w") as f:
        f.write(repr(est.score(X, Y)))
"""


def test_every_builtin_model_predicts_the_same_after_loading_in_a_fresh_process(tmp_path):
    from ssvm.use import read_predictions

    fitted = {}
    for name in CASES:
        fitted[name] = _fit(name)
    fitted["chain-ssg"] = _fit("chain", SubgradientSSVM)
    for name, (est, _, _) in fitted.items():
        est.save(tmp_path / f"{name}.npz")
    names = [n for n in fitted if n in CASES]
    os.rename(tmp_path / "chain-ssg.npz", tmp_path / "ssg.npz")
    run = subprocess.run([sys.executable, "-c", _FRESH, ",".join(names), str(tmp_path),
                          str(TESTS)], cwd=tmp_path, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr
    for name in names:
        est, X, Y = fitted[name]
        w = np.load(tmp_path / f"{name}-w.npy")
        assert w.dtype == np.float64 and w.tobytes() == est.w_.tobytes(), name   # bit-equal
        assert _equal_predictions(read_predictions(tmp_path / f"{name}-pred.npz"),
                                  est.predict(X)), name
        assert float((tmp_path / f"{name}-score.txt").read_text()) == est.score(X, Y), name
    ssg, X, Y = fitted["chain-ssg"]
    loaded = SubgradientSSVM.load(tmp_path / "ssg.npz")
    assert loaded.primal_ == ssg.primal_ and _equal_predictions(loaded.predict(X),
                                                                ssg.predict(X))
    assert loaded.iterate_ == "average" and not loaded.certified_ and not hasattr(loaded, "gap_")
    assert loaded.header_["fingerprint"] == ssg.fingerprint_
    assert ssg.fingerprint_["n_blocks"] == len(X) and ssg.fingerprint_["data"] is not None


def test_the_header_records_the_fit_the_solver_options_and_the_data(tmp_path):
    est, X, Y = _fit("chain")
    est.save(tmp_path / "m.npz", metadata={"dataset": "x", "seed": 3})
    header = load_model(tmp_path / "m.npz").header_
    assert header["metadata"] == {"dataset": "x", "seed": 3}
    assert header["format"] == "ssvm-model" and header["format_version"] == FORMAT_VERSION
    assert header["model"]["class"] == "ssvm_oracles.chain:ChainModel"
    assert header["model"]["bound"] == {"n_features_in_": 4}
    assert header["estimator"]["class"] == "ssvm_core.solvers:FrankWolfeSSVM"
    params = header["estimator"]["params"]
    assert "callback" not in params and "executor" not in params and "model" not in params
    assert params["max_passes"] == 3 and params["gap_check_every"] == 1
    fit = header["fit"]
    assert fit["lam"] == 0.1 and fit["gap"] == est.gap_ and fit["passes"] == 3
    assert fit["certified"] is True and fit["iterate"] == est.iterate_
    assert fit["status"] == est.status_
    assert header["fingerprint"] == est.state_.fingerprint       # the training data
    assert header["versions"]["ssvm-core"] == ssvm_core.__version__
    # a loaded model saved again keeps its fingerprint and metadata
    load_model(tmp_path / "m.npz").save(tmp_path / "again.npz")
    again = load_model(tmp_path / "again.npz").header_
    assert again["fingerprint"] == header["fingerprint"] and again["metadata"] == {
        "dataset": "x", "seed": 3}


@pytest.mark.parametrize("name", sorted(CASES))
def test_get_params_rebuilds_an_equal_model(name):
    model, X, Y = CASES[name]()
    params = model.get_params()
    twin = type(model)(**params)
    again = twin.get_params()
    assert params.keys() == again.keys()
    for key, value in params.items():
        if isinstance(value, np.ndarray):
            assert value.dtype == again[key].dtype and np.array_equal(value, again[key])
        else:
            assert value == again[key], key
    np.testing.assert_array_equal(twin.joint_feature(X[0], Y[0]),
                                  model.joint_feature(X[0], Y[0]))


def test_parameters_survive_the_file_exactly(tmp_path):
    cost = np.array([[0.0, 0.1 + 0.2, 1 / 3], [np.pi, 0.0, 1e-300], [2.5, 7.0, 0.0]])
    X = np.random.default_rng(0).normal(size=(9, 2))
    Y = np.arange(9) % 3
    est = FrankWolfeSSVM(MulticlassModel(3, cost=cost), lam=0.5, box=(-1.0, np.inf),
                         max_passes=2, random_state=np.int64(7)).fit(X, Y)
    est.save(tmp_path / "m.npz")
    loaded = load_model(tmp_path / "m.npz")
    assert loaded.model.cost.tobytes() == cost.tobytes()
    assert loaded.box == (-1.0, np.inf) and isinstance(loaded.box, tuple)
    assert loaded.random_state == 7
    pose = PoseModel(np.array([-1, 0, 1, 1]), (0, 2), loss="pdj", loss_scale=0.25)
    params = pose.get_params()
    assert params["scale_parts"] == (0, 2) and params["loss"] == "pdj"
    assert type(pose)(**params).get_params()["loss_scale"] == 0.25


def test_set_params_reruns_the_constructor_checks():
    model = ChainModel(n_states=3)
    assert model.set_params(n_states=5).n_states == 5
    with pytest.raises(ValueError, match="invalid parameter"):
        model.set_params(n_stats=2)
    with pytest.raises(ValueError, match="n_states must be an integer >= 2"):
        model.set_params(n_states=1)


def _rewrite(path, change):
    """Rewrite the header of a model file with ``change(header)``."""
    with np.load(path) as data:
        files = {k: data[k] for k in data.files}
    header = json.loads(str(files["header"]))
    change(header)
    files["header"] = np.array(json.dumps(header))
    np.savez(path, **files)


def test_classes_outside_the_allow_list_are_refused_before_import(tmp_path):
    est, _, _ = _fit("chain")
    path = tmp_path / "m.npz"
    est.save(path)
    assert "ssvm_never_imported_module" not in sys.modules

    def set_class(ref):
        _rewrite(path, lambda h: h["model"].__setitem__("class", ref))

    set_class("ssvm_never_imported_module:Model")
    with pytest.raises(ModelFileError, match="allow-list") as err:
        load_model(path)
    assert str(path) in str(err.value) and "ssvm_never_imported_module" not in sys.modules
    set_class("json:JSONDecoder")
    with pytest.raises(ModelFileError, match="allow-list"):
        load_model(path)
    with pytest.raises(ModelFileError, match="not a StructuredModel class"):
        load_model(path, trusted_modules=["json"])
    set_class("ssvm_corefake:Model")              # a prefix of a trusted name is not trusted
    with pytest.raises(ModelFileError, match="allow-list"):
        load_model(path)


def test_functions_load_only_from_trusted_modules(tmp_path):
    est, X, _ = _fit("enumeration")
    est.save(tmp_path / "m.npz")
    with pytest.raises(ModelFileError, match="trusted_modules=\\['model_cases'\\]"):
        load_model(tmp_path / "m.npz")
    assert _equal_predictions(load_model(tmp_path / "m.npz", trusted_modules=TRUST)
                              .predict(X), est.predict(X))


def test_a_lambda_cannot_be_saved_and_the_old_file_stays(tmp_path):
    path = tmp_path / "m.npz"
    path.write_bytes(b"previous")
    est = FrankWolfeSSVM(EnumerationModel(lambda x, y: x * (1 if y[0] else -1), 2, [[0], [1]]),
                         lam=0.1, max_passes=1).fit([np.ones(2)], [[1]])
    with pytest.raises(TypeError, match="not a module-level name"):
        save_model(est, path)
    assert path.read_bytes() == b"previous" and os.listdir(tmp_path) == ["m.npz"]


def test_unfitted_estimators_cannot_be_saved(tmp_path):
    with pytest.raises(ssvm_core.NotFittedError):
        FrankWolfeSSVM(ChainModel(3)).save(tmp_path / "m.npz")


@pytest.mark.parametrize("change, message", [
    (lambda h: h.__setitem__("format_version", FORMAT_VERSION + 1),
     f"model format version {FORMAT_VERSION + 1}; this ssvm-core reads versions up to "
     f"{FORMAT_VERSION}"),
    (lambda h: h.pop("fit"), r"misses the key\(s\) \['fit'\]"),
    (lambda h: h["fit"].pop("lam"), r"fit record misses the key\(s\) \['lam'\]"),
    (lambda h: h.__setitem__("format", "other"), "its format is 'other'"),
    (lambda h: h["model"]["params"].__setitem__("n_states", 1), "cannot rebuild"),
    (lambda h: h["model"]["params"].__setitem__("n_states", 4), "joint features"),
    (lambda h: h["model"].__setitem__("bound", {"predict": 1}), "replace a method"),
    (lambda h: h["model"].__setitem__("bound", [1]), "not a mapping"),
    (lambda h: h["estimator"]["params"].__setitem__("no_such_option", 1), "cannot rebuild"),
])
def test_bad_headers_give_one_clear_error(tmp_path, change, message):
    est, _, _ = _fit("chain")
    path = tmp_path / "m.npz"
    est.save(path)
    _rewrite(path, change)
    with pytest.raises(ModelFileError, match=message) as err:
        load_model(path)
    assert str(err.value).startswith(str(path))


def test_corrupt_and_missing_files(tmp_path):
    est, _, _ = _fit("chain")
    path = tmp_path / "m.npz"
    est.save(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelFileError, match="not a valid ssvm model file") as err:
        load_model(path)
    assert str(path) in str(err.value)
    path.write_bytes(b"\x00" * 100)
    with pytest.raises(ModelFileError, match=str(path)):
        load_model(path)
    np.savez(path, something=np.zeros(3))
    with pytest.raises(ModelFileError, match="neither a model header"):
        load_model(path)
    with pytest.raises(FileNotFoundError):
        load_model(tmp_path / "missing.npz")
    est.save(path)
    with np.load(path) as d:
        files = {k: d[k] for k in d.files}
    files["w"] = files["w"][:-1]
    np.savez(path, **files)
    with pytest.raises(ModelFileError, match="the header records"):
        load_model(path)


def test_old_model_files_of_ssvm_train_load(tmp_path):
    model, X, Y = CASES["chain"]()
    w = np.random.default_rng(1).normal(size=ChainModel(3, 4).size_joint_feature)
    path = tmp_path / "model.npz"
    np.savez(path, w=w, lam=0.01, model=repr(ChainModel(n_states=3, n_features=4)),
             gap=0.05, dataset="synthetic-chain")
    loaded = load_model(path)
    assert isinstance(loaded, FrankWolfeSSVM) and loaded.lam_ == 0.01 and loaded.gap_ == 0.05
    assert loaded.w_.tobytes() == w.tobytes()
    assert loaded.header_["metadata"] == {"dataset": "synthetic-chain"}
    assert _equal_predictions(loaded.predict(X), model.predict(X, w))
    assert loaded.score(X, Y) == 1 - model.mean_loss(Y, model.predict(X, w))
    np.savez(path, w=w, lam=0.01, model="PoseModel(n_parts=26, n_types=13, "
             "scale_parts=(9, 2), loss='truncated')", gap=0.05)
    with pytest.raises(ModelFileError, match="cannot rebuild ssvm_oracles:PoseModel"):
        load_model(path)
    np.savez(path, w=w, lam=0.01, model="ChainModel(n_states=__import__('os').getpid())")
    with pytest.raises(ModelFileError, match="not a literal"):
        load_model(path)
    np.savez(path, w=w[:-1], lam=0.01, model="ChainModel(n_states=3, n_features=4)")
    with pytest.raises(ModelFileError, match="joint features"):
        load_model(path)


def test_model_reprs_are_parsed_not_run():
    assert parse_model_repr("GridModel(n_states=2, n_features=None, neighborhood=4, "
                            "directional=True, inference='auto')") == (
        "GridModel", {"n_states": 2, "n_features": None, "neighborhood": 4,
                      "directional": True, "inference": "auto"})
    for bad in ("os.system('ls')", "ChainModel(3)", "ChainModel(**{'n_states': 3})", "1 +"):
        with pytest.raises(ModelFileError):
            parse_model_repr(bad)


def test_estimator_load_checks_the_class(tmp_path):
    est, _, _ = _fit("chain")
    est.save(tmp_path / "m.npz")
    assert isinstance(FrankWolfeSSVM.load(tmp_path / "m.npz"), FrankWolfeSSVM)
    with pytest.raises(ModelFileError, match="not a SubgradientSSVM"):
        SubgradientSSVM.load(tmp_path / "m.npz")
