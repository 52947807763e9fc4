"""Defaults that work: box="auto", the derived option rules, the "seq" sampling."""

from __future__ import annotations

import numpy as np
import pytest
from strategies import DelegatingOracle

from ssvm.compat.pystruct.learners import FrankWolfeSSVM as CompatFrankWolfeSSVM
from ssvm_core import BruteForceOracle, FrankWolfeSSVM, SubgradientSSVM, dual_objective, solve
from ssvm_core.minibatch import round_blocks
from ssvm_core.options import needs_active_sets, sampling_order
from ssvm_core.testing import (
    ToyChainModel,
    enumerate_problem,
    primal_by_enumeration,
    random_chain_data,
)
from ssvm_core.validation import resolve_box
from ssvm_data import horseseg_like, load_dataset, model_for
from ssvm_oracles import ChainModel, CountingOracle, GraphCutModel, PoseModel
from ssvm_paths import regularization_path

# -- box="auto" ---------------------------------------------------------------


def test_graph_cuts_train_with_the_defaults():
    X, Y, _, _ = load_dataset("synthetic-horseseg", random_state=0)
    model = model_for("synthetic-horseseg")
    svm = FrankWolfeSSVM(model, lam=0.01, max_passes=6, gap_check_every=3).fit(X, Y)
    lower, upper = model.weight_bounds()
    assert np.all(svm.w_ >= lower) and np.all(svm.w_ <= upper)
    assert svm.state_.has_box and np.array_equal(svm.state_.lower, lower)
    assert svm.gap_ >= 0.0
    # without the box the oracle refuses the first negative pairwise weight
    from ssvm_oracles import NonSubmodularError

    with pytest.raises(NonSubmodularError):
        FrankWolfeSSVM(model, lam=0.01, box=None, max_passes=6, random_state=0).fit(X, Y)


def _tiny_pose(seed=1, n=4):
    rng = np.random.default_rng(seed)
    X, Y = [], []
    for _ in range(n):
        X.append((rng.normal(size=(3, 2, 2)), rng.normal(size=(4, 2, 2, 2)),
                  rng.normal(size=(4, 2, 2))))
        pos = np.array([[0, 0], [1, 0], [1, 1]])[rng.permutation(3)]
        Y.append(np.concatenate([pos.ravel(), rng.integers(0, 2, size=4)]).astype(np.int32))
    return PoseModel([-1, 0, 1], (0, 2), n_types=2), X, Y


def test_pose_trees_train_with_the_defaults_and_certify_by_enumeration():
    model, X, Y = _tiny_pose()
    lam = 0.01
    svm = FrankWolfeSSVM(model, lam=lam, max_passes=20, gap_check_every=5, tol=0.0,
                         random_state=0).fit(X, Y)
    lower, upper = model.weight_bounds()
    assert np.all(svm.w_ >= lower) and np.all(svm.w_ <= upper)
    problem = enumerate_problem(BruteForceOracle(model, X, Y))
    primal = primal_by_enumeration(problem.psi, problem.loss, lam, svm.w_)
    averaged = svm.history_[-1]["iterate"] == "average"
    assert svm.gap_ == pytest.approx(
        primal - dual_objective(svm.state_, averaged=averaged), rel=1e-9, abs=1e-12)


def test_oracles_and_their_wrappers_declare_the_models_bounds():
    X, Y = horseseg_like(2, random_state=0)
    model = GraphCutModel()
    oracle = model.bind(X, Y)
    for source in (oracle, CountingOracle(oracle)):
        for got, expected in zip(source.weight_bounds(), model.weight_bounds()):
            np.testing.assert_array_equal(got, expected)
    pose, Xp, Yp = _tiny_pose()
    for got, expected in zip(pose.bind(Xp, Yp).weight_bounds(), pose.weight_bounds()):
        np.testing.assert_array_equal(got, expected)


def test_resolve_box_rules():
    X, Y = random_chain_data(np.random.default_rng(0), 4, 3, 2, 2)
    chain = ChainModel(2).bind(X, Y)
    assert resolve_box("auto", chain) is None and resolve_box(None, chain) is None
    with pytest.raises(ValueError, match="declare no weight_bounds"):
        resolve_box("model", chain)
    with pytest.raises(ValueError, match="box must be 'auto'"):
        resolve_box("yes", chain)
    lower, upper = resolve_box((0.0, 1.0), chain)
    assert lower.shape == (chain.n_features,) and np.all(upper == 1.0)

    class Declared(DelegatingOracle):        # a Python oracle declaring bounds
        def weight_bounds(self):
            return np.zeros(self.n_features), np.full(self.n_features, np.inf)

    python = Declared(BruteForceOracle(ToyChainModel(2, 2), X, Y))
    lower, _ = resolve_box("auto", python)
    assert np.all(lower == 0.0)
    result = solve(python, 0.1, max_passes=3, random_state=0)
    assert result.state.has_box and np.all(result.w >= 0.0)


def test_the_path_takes_the_declared_box_by_default():
    X, Y = horseseg_like(3, random_state=1)
    model = GraphCutModel()
    path = regularization_path(model, X, Y, eps=2.0, max_breakpoints=3, step="fw",
                               cache=False)
    lower, _ = model.weight_bounds()
    assert path.n_breakpoints >= 1
    for w in path.weights:
        assert np.all(w >= lower)


# -- the derived option rules --------------------------------------------------


def test_needs_active_sets():
    assert not needs_active_sets("fw", False, 1)
    assert needs_active_sets("pairwise", False, 1)
    assert needs_active_sets("fw", True, 1)
    assert needs_active_sets("fw", False, 3)


def test_regularization_path_with_fw_steps_and_several_samples():
    """The path built its first state without active sets although n_samples=3 needs them."""
    X, Y = random_chain_data(np.random.default_rng(0), 8, 4, 3, 3)
    path = regularization_path(ChainModel(3), X, Y, eps=0.5, max_breakpoints=4,
                               step="fw", cache=False, n_samples=3)
    assert path.n_breakpoints >= 1
    assert all(g <= 0.9 * 0.5 + 1e-9 for g in path.gaps)


# -- sampling="seq" ------------------------------------------------------------


class LoggingOracle(DelegatingOracle):
    """Records the block of every ``solve`` call."""

    def __init__(self, inner):
        super().__init__(inner)
        self.calls: list[int] = []

    def solve(self, i, w):
        self.calls.append(i)
        return self.inner.solve(i, w)


def _toy(seed=0, n=5):
    X, Y = random_chain_data(np.random.default_rng(seed), n, 3, 2, 2)
    return BruteForceOracle(ToyChainModel(2, 2), X, Y)


def test_seq_visits_blocks_in_data_order_every_pass():
    rng = np.random.default_rng(0)
    np.testing.assert_array_equal(sampling_order(rng, "seq", 4), [0, 1, 2, 3])
    oracle = LoggingOracle(_toy())
    n = oracle.n_blocks
    solve(oracle, 0.1, sampling="seq", max_passes=3, gap_check_every=10, tol=0.0,
          averaging="plain")
    # a gap pass (0..n-1), three passes in data order, the final gap pass
    np.testing.assert_array_equal(oracle.calls, np.tile(np.arange(n), 5))


def test_seq_rounds_and_ssg():
    from ssvm_core import SolverState

    X, Y = random_chain_data(np.random.default_rng(0), 7, 3, 2, 2)
    state = SolverState.for_oracle(ChainModel(2).bind(X, Y), 0.1)
    rounds = list(round_blocks(np.random.default_rng(0), "seq", state, 3))
    assert [r.tolist() for r in rounds] == [[0, 1, 2], [3, 4, 5], [6]]
    svm = SubgradientSSVM(ChainModel(2), lam=0.1, sampling="seq", max_passes=2).fit(X, Y)
    assert np.all(np.isfinite(svm.w_))
    with pytest.raises(ValueError, match="for SSG"):
        SubgradientSSVM(ChainModel(2), lam=0.1, sampling="gap").fit(X, Y)


@pytest.mark.parametrize("kw", [dict(), dict(step="pairwise"), dict(batch_blocks=2)],
                         ids=["bcfw", "pairwise", "minibatch"])
def test_seq_converges_with_a_certified_gap(kw):
    oracle = _toy(2, n=6)
    problem = enumerate_problem(oracle)
    lam = 1.0
    result = solve(oracle, lam, sampling="seq", tol=1e-4, max_passes=3000, **kw)
    assert result.status == "converged" and 0.0 <= result.gap <= 1e-4
    averaged = result.iterate == "average"
    primal = primal_by_enumeration(problem.psi, problem.loss, lam, result.w)
    assert result.gap == pytest.approx(
        primal - dual_objective(result.state, averaged=averaged), rel=1e-9, abs=1e-12)


def test_pystruct_seq_maps_to_seq():
    from ssvm.compat.pystruct.models import ChainCRF

    X, Y = random_chain_data(np.random.default_rng(3), 6, 3, 2, 2)
    crf = ChainCRF(n_states=2)
    learner = CompatFrankWolfeSSVM(crf, sample_method="seq", max_iter=3, C=1.0, tol=0.0)
    learner.fit(X, Y)
    ref = solve(crf.bind(X, Y), learner.lam_, sampling="seq", averaging="average",
                max_passes=3, gap_check_every=10, tol=0.0)
    np.testing.assert_allclose(learner.w, ref.w, rtol=1e-10, atol=1e-12)


@pytest.mark.shared_data
def test_cli_seq_sampling_does_not_depend_on_the_seed(tmp_path):
    """On real data (which the seed does not change) only the block order uses --seed."""
    import os
    from pathlib import Path

    from ssvm.cli import main

    home = os.environ.get("SSVM_DATA_HOME")
    if not home or not (Path(home) / "ocr").is_dir():
        pytest.skip("needs SSVM_DATA_HOME with the OCR files")

    def trained_w(sampling, seed):
        out = tmp_path / f"{sampling}-{seed}"
        assert main(["train", "--dataset", "ocr-small", "--max-passes", "1",
                     "--gap-check-every", "5", "--sampling", sampling, "--seed", str(seed),
                     "--out", str(out), "--quiet"]) == 0
        return np.load(out / "model.npz")["w"]

    np.testing.assert_array_equal(trained_w("seq", 0), trained_w("seq", 1))
    assert not np.array_equal(trained_w("uniform", 0), trained_w("uniform", 1))
