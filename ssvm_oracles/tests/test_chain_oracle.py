"""ChainModel / ChainOracle: Viterbi against brute force, layout, inputs, pickling."""

from __future__ import annotations

import itertools
import pickle
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from ssvm_core import BruteForceOracle, primal_objective
from ssvm_core.testing import (
    ToyChainModel,
    check_oracle,
    enumerate_problem,
    random_chain_data,
    scaled_examples,
)
from ssvm_oracles import ChainModel, ChainOracle


@st.composite
def chains(draw, max_length=4, max_states=3):
    """Random chain data (T <= 4, K <= 3): sizes and a seed only."""
    n = draw(st.integers(1, 3))
    K = draw(st.integers(2, max_states))
    F = draw(st.integers(1, 3))
    T = draw(st.integers(1, max_length))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    X, Y = random_chain_data(rng, n, T, K, F)
    binary = draw(st.booleans())
    if binary:                                    # sparse-ish, binary OCR-like tokens
        X = [(x > 0.3).astype(float) for x in X]
    return X, Y, K, F, rng, binary


def random_weights(rng, d, count=3):
    return [rng.normal(size=d) * s for s in (0.1, 1.0, 5.0)[:count]]


# ---------------------------------------------------------------------------
# Against enumeration
# ---------------------------------------------------------------------------


@settings(max_examples=scaled_examples(60))
@given(chains())
def test_viterbi_equals_brute_force(data):
    """Labels, psi, loss and score of solve; psi, loss, H of evaluate for every labelling."""
    X, Y, K, F, rng, binary = data
    model = ChainModel(K, F)
    oracle = model.bind(X, Y)
    assert isinstance(oracle, ChainOracle)
    problem = enumerate_problem(BruteForceOracle(model, X, Y))
    # Identical (e.g. all-zero) binary tokens can make labellings tie exactly;
    # then any maximiser is right (its score must still be the maximum).
    check_oracle(oracle, problem, random_weights(rng, oracle.n_features), atol=1e-11,
                 check_labels=not binary)


@settings(max_examples=scaled_examples(40))
@given(chains())
def test_chain_oracle_equals_an_independent_python_chain(data):
    """The same answers as a chain model written independently in Python."""
    X, Y, K, F, rng, binary = data
    oracle = ChainModel(K, F).bind(X, Y)
    problem = enumerate_problem(ToyChainModel(K, F).bind(X, Y))
    check_oracle(oracle, problem, random_weights(rng, oracle.n_features), atol=1e-11,
                 check_labels=not binary)


@settings(max_examples=scaled_examples(40))
@given(chains())
def test_predict_is_the_argmax_by_enumeration(data):
    X, _Y, K, F, rng, _ = data
    model = ChainModel(K, F)
    toy = ToyChainModel(K, F)
    for w in random_weights(rng, model.size_joint_feature):
        pred = model.predict(X, w)
        assert len(pred) == len(X)
        for x, p in zip(X, pred):
            assert p.dtype == np.int32 and p.shape == (x.shape[0],)
            scores = {c: w @ toy.joint_feature(x, c)
                      for c in itertools.product(range(K), repeat=x.shape[0])}
            assert scores[tuple(p)] == pytest.approx(max(scores.values()), abs=1e-10)


@settings(max_examples=scaled_examples(30))
@given(chains())
def test_joint_feature_equals_the_independent_python_chain(data):
    X, Y, K, F, rng, _ = data
    model, toy = ChainModel(K, F), ToyChainModel(K, F)
    for x, y in zip(X, Y):
        for c in [y, rng.integers(0, K, size=len(y))]:
            np.testing.assert_allclose(model.joint_feature(x, c), toy.joint_feature(x, c),
                                       rtol=1e-15, atol=1e-15)
            assert model.loss(y, c) == toy.loss(y, c)


def test_primal_of_the_chain_oracle_matches_brute_force():
    rng = np.random.default_rng(0)
    X, Y = random_chain_data(rng, 4, 4, 3, 2)
    model = ChainModel(3, 2)
    oracle = model.bind(X, Y)
    bf = BruteForceOracle(model, X, Y)
    for w in random_weights(rng, oracle.n_features):
        assert primal_objective(oracle, 0.1, w) == pytest.approx(primal_objective(bf, 0.1, w),
                                                                 rel=1e-12)


# ---------------------------------------------------------------------------
# Layout
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("K, F, d", [(26, 128, 4082), (2, 1, 12), (3, 2, 24), (5, 7, 75)])
def test_joint_feature_dimension(K, F, d):
    assert ChainModel(K, F).size_joint_feature == d == F * K + K * K + 3 * K


def test_joint_feature_layout_by_hand():
    """phi = [emission (F x K, row-major) | transition (K x K) | bias | start | end]."""
    model = ChainModel(3, 2)
    x = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    y = np.array([2, 0, 2])
    phi = model.joint_feature(x, y)
    K, F = 3, 2
    emission = np.zeros((F, K))
    emission[:, 2] = x[0] + x[2]
    emission[:, 0] = x[1]
    np.testing.assert_array_equal(phi[:F * K], emission.ravel())
    transition = np.zeros((K, K))
    transition[2, 0] = transition[0, 2] = 1.0
    np.testing.assert_array_equal(phi[F * K:F * K + K * K], transition.ravel())
    np.testing.assert_array_equal(phi[F * K + K * K:][:K], [1, 0, 2])          # bias
    np.testing.assert_array_equal(phi[F * K + K * K + K:][:K], [0, 0, 1])      # start
    np.testing.assert_array_equal(phi[F * K + K * K + 2 * K:], [0, 0, 1])      # end
    # single-token sequences have start and end on the same state and no transition
    phi1 = model.joint_feature(x[:1], [1])
    np.testing.assert_array_equal(phi1[F * K:F * K + K * K], 0)
    np.testing.assert_array_equal(phi1[-2 * K:], [0, 1, 0, 0, 1, 0])


def test_loss_is_normalised_hamming():
    model = ChainModel(3, 1)
    assert model.loss([0, 1, 2, 0], [0, 1, 2, 0]) == 0.0
    assert model.loss([0, 1, 2, 0], [1, 1, 2, 0]) == 0.25
    assert model.loss([0, 1], [1, 0]) == 1.0
    with pytest.raises(ValueError, match="labellings of shapes"):
        model.loss([0, 1], [0, 1, 2])


def test_enumerate_labellings_counts():
    model = ChainModel(3, 2)
    labels = list(model.enumerate_labellings(np.zeros((4, 2))))
    assert len(labels) == 3 ** 4
    assert len({tuple(c) for c in labels}) == 3 ** 4
    assert all(c.dtype == np.int32 for c in labels)


def test_oracle_attributes():
    rng = np.random.default_rng(0)
    X, Y = random_chain_data(rng, 3, 4, 3, 2)
    oracle = ChainModel(3).bind(X, Y)
    assert oracle.n_blocks == 3
    assert oracle.n_features == 2 * 3 + 9 + 9
    assert oracle.max_labels == max(len(y) for y in Y)
    assert not oracle.dense_psi
    assert oracle.needs_gil is False
    assert oracle.block_support(0) is None


def test_n_features_is_inferred_per_bind_and_enforced_when_given():
    rng = np.random.default_rng(0)
    X, Y = random_chain_data(rng, 2, 3, 2, 4)
    model = ChainModel(2)
    with pytest.raises(ValueError, match="n_features is unknown"):
        _ = model.size_joint_feature
    model.bind(X, Y)
    assert model.n_features is None and model.n_features_in_ == 4
    assert model.size_joint_feature == 8 + 4 + 6
    # Data of another width binds too (the constructor parameter is not overwritten).
    assert model.bind([np.zeros((2, 3))], [np.array([0, 1])]).n_features == 6 + 4 + 6
    assert model.n_features_in_ == 3
    with pytest.raises(ValueError, match=r"w has shape \(18,\), expected \(16,\) for inputs "
                                         "with 2 states and 3 features per token"):
        model.predict([np.zeros((2, 3))], np.zeros(18))
    fixed = ChainModel(2, n_features=4)
    with pytest.raises(ValueError, match="3 features per token, expected 4"):
        fixed.bind([np.zeros((2, 3))], [np.array([0, 1])])


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, message", [
    ({"n_states": 1}, "n_states must be an integer >= 2"),
    ({"n_states": 2.5}, "n_states must be an integer >= 2"),
    ({"n_states": 3, "n_features": 0}, "n_features must be a positive integer"),
    ({"n_states": 3, "n_features": 1.5}, "n_features must be a positive integer"),
])
def test_model_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ChainModel(**kwargs)


def _ok():
    return [np.ones((3, 2)), np.zeros((2, 2))], [np.array([0, 1, 2]), np.array([1, 1])]


@pytest.mark.parametrize("X, Y, error, message", [
    ([np.ones((3, 2)), np.ones((2, 3))], None, ValueError,
     r"X\[1\] has 3 features per token, expected 2"),
    ([np.ones((3, 2)), np.ones(2)], None, ValueError, r"X\[1\] must be 2-D"),
    ([np.ones((3, 2)), np.ones((2, 2, 1))], None, ValueError, r"X\[1\] must be 2-D"),
    ([np.ones((3, 2)), np.zeros((0, 2))], None, ValueError, r"X\[1\] has no tokens"),
    ([np.ones((3, 2)), np.array([[1.0, np.nan], [0, 0]])], None, ValueError,
     r"X\[1\] has NaN or infinite features"),
    ([np.ones((3, 2)), np.array([[1.0, np.inf], [0, 0]])], None, ValueError,
     r"X\[1\] has NaN or infinite features"),
    ([np.ones((3, 2)), sp.csr_matrix(np.array([[1.0, np.nan], [0, 0]]))], None, ValueError,
     r"X\[1\] has NaN or infinite features"),
    ([], [], ValueError, "X is empty"),
    (np.ones((3, 2)), None, TypeError, "X must be a list of"),
    ("abc", None, TypeError, "X must be a list of"),
    (None, [np.array([0, 1, 2])], ValueError, "X has 2 sequences but Y has 1"),
    (None, [np.array([0, 1, 2]), np.array([1, 1]), np.array([0])], ValueError,
     "X has 2 sequences but Y has 3"),
    (None, [np.array([0, 1, 2]), np.array([1, 1, 0])], ValueError,
     r"Y\[1\] has shape \(3,\), expected \(2,\) to match X\[1\]"),
    (None, [np.array([0, 1, 2]), np.array([[1, 1]])], ValueError, r"Y\[1\] has shape"),
    (None, [np.array([0, 1, 3]), np.array([1, 1])], ValueError,
     r"Y\[0\] has labels outside \[0, 3\): min 0, max 3"),
    (None, [np.array([0, 1, 2]), np.array([-1, 1])], ValueError,
     r"Y\[1\] has labels outside \[0, 3\)"),
    (None, [np.array([0.0, 1.0, 2.0]), np.array([1, 1])], ValueError,
     r"Y\[0\] must hold integer labels, got dtype float64"),
])
def test_bind_rejects_bad_input_with_clear_messages(X, Y, error, message):
    X0, Y0 = _ok()
    X = X0 if X is None else X
    Y = Y0 if Y is None else Y
    with pytest.raises(error, match=message):
        ChainModel(3).bind(X, Y)


def test_ragged_token_lists_are_rejected():
    with pytest.raises(ValueError):
        ChainModel(3).bind([[[1.0, 2.0], [3.0]]], [np.array([0, 1])])


def test_predict_checks_inputs():
    rng = np.random.default_rng(0)
    X, _Y = random_chain_data(rng, 2, 3, 2, 2)
    model = ChainModel(2, 2)
    with pytest.raises(ValueError, match=r"w has shape \(3,\), expected \(14,\)"):
        model.predict(X, np.zeros(3))
    with pytest.raises(ValueError, match="expected 2"):
        model.predict([np.zeros((2, 5))], np.zeros(14))
    with pytest.raises(ValueError, match="X is empty"):
        model.predict([], np.zeros(14))


def test_evaluate_and_solve_check_their_arguments():
    rng = np.random.default_rng(0)
    X, Y = random_chain_data(rng, 2, 3, 2, 2)
    X = [rng.normal(size=(3, 2)), rng.normal(size=(2, 2))]
    Y = [np.array([0, 1, 1]), np.array([1, 0])]
    oracle = ChainModel(2, 2).bind(X, Y)
    w = np.zeros(oracle.n_features)
    with pytest.raises(ValueError, match="labelling of length 2 for sequence 0 of length 3"):
        oracle.evaluate_py(0, [0, 1], w)
    with pytest.raises(ValueError, match=r"label 2 outside \[0, 2\)"):
        oracle.evaluate_py(0, [0, 2, 1], w)
    with pytest.raises(ValueError, match=r"label -1 outside \[0, 2\)"):
        oracle.evaluate_py(1, [-1, 0], w)
    with pytest.raises(ValueError, match="exceeds max_labels=3"):
        oracle.evaluate_py(0, [0, 1, 1, 0], w)
    with pytest.raises(IndexError, match="outside"):
        oracle.solve_py(2, w)
    with pytest.raises(ValueError, match="w has shape"):
        oracle.solve_py(0, np.zeros(3))


_NONFINITE_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    from ssvm_oracles import ChainModel
    K = 5
    rng = np.random.default_rng(0)
    X = [rng.normal(size=(40, 2)) for _ in range(20)]
    Y = [rng.integers(0, K, 40) for _ in range(20)]
    model = ChainModel(K)
    oracle = model.bind(X, Y)
    w = rng.normal(size=oracle.n_features)
    if sys.argv[2] == "nan":
        w[:] = np.nan
    else:                                     # forbid every transition
        w[2 * K:2 * K + K * K] = -np.inf
    try:
        if sys.argv[1] == "predict":
            labels = model.predict(X, w)
        else:
            labels = [oracle.solve_py(i, w)[0] for i in range(len(X))]
    except ValueError as exc:
        print("ValueError", exc)
    else:
        for y in labels:
            assert y.min() >= 0 and y.max() < K, y
        print("labels")
""")


@pytest.mark.parametrize("weights", ["nan", "neg_inf_transitions"])
@pytest.mark.parametrize("entry", ["predict", "solve_py"])
def test_non_finite_weights_do_not_crash(entry, weights):
    """Non-finite w must give a ValueError or valid labels, never a crash.

    Regression (commit 0acfca0): ``_viterbi`` wrote a back-pointer only when
    ``cand > best[b]``; with NaN (or all -inf) scores no comparison is true,
    ``back`` kept uninitialised ``malloc`` memory and the labels read from it
    indexed out of bounds (garbage labels from ``predict``, segmentation fault
    in ``solve``).  Runs in a subprocess.
    """
    proc = subprocess.run([sys.executable, "-c", _NONFINITE_SCRIPT, entry, weights],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert proc.stdout.startswith(("ValueError", "labels"))


# ---------------------------------------------------------------------------
# Sparse inputs, pickling, the GIL
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["csr_matrix", "csc_matrix", "coo_matrix", "csr_array",
                                 "lil_matrix"])
def test_sparse_sequences_give_the_same_oracle(fmt):
    rng = np.random.default_rng(3)
    X, Y = random_chain_data(rng, 4, 4, 3, 5)
    X = [x * (rng.random(x.shape) < 0.4) for x in X]
    dense = ChainModel(3).bind(X, Y)
    to_sparse = getattr(sp, fmt)
    mixed = [to_sparse(x) if k % 2 == 0 else x for k, x in enumerate(X)]
    for Xs in ([to_sparse(x) for x in X], mixed):
        sparse = ChainModel(3).bind(Xs, Y)
        for name in ("tok_ptr", "feat_idx", "feat_val", "seq_ptr", "labels"):
            np.testing.assert_array_equal(np.asarray(getattr(sparse, name)),
                                          np.asarray(getattr(dense, name)), err_msg=name)
        for w in random_weights(rng, dense.n_features):
            for i in range(dense.n_blocks):
                for a, b in zip(sparse.solve_py(i, w), dense.solve_py(i, w)):
                    np.testing.assert_array_equal(a, b)
        w = rng.normal(size=dense.n_features)
        for a, b in zip(ChainModel(3, 5).predict(Xs, w), ChainModel(3, 5).predict(X, w)):
            np.testing.assert_array_equal(a, b)


def test_explicit_zeros_and_duplicates_in_sparse_input():
    x = np.array([[0.0, 2.0], [1.0, 0.0]])
    coo = sp.coo_matrix((np.array([1.0, 1.0, 0.0, 1.0]),
                         (np.array([0, 0, 1, 1]), np.array([1, 1, 1, 0]))), shape=(2, 2))
    Y = [np.array([0, 1])]
    a, b = ChainModel(2).bind([x], Y), ChainModel(2).bind([coo], Y)
    w = np.random.default_rng(0).normal(size=a.n_features)
    for u, v in zip(a.solve_py(0, w), b.solve_py(0, w)):
        np.testing.assert_allclose(u, v, rtol=1e-15)


def test_three_dimensional_array_input():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3, 4, 2))
    Y = [rng.integers(0, 2, 4) for _ in range(3)]
    a, b = ChainModel(2).bind(X, Y), ChainModel(2).bind(list(X), Y)
    w = rng.normal(size=a.n_features)
    for i in range(3):
        for u, v in zip(a.solve_py(i, w), b.solve_py(i, w)):
            np.testing.assert_array_equal(u, v)


def test_pickle_round_trip():
    rng = np.random.default_rng(4)
    X, Y = random_chain_data(rng, 4, 4, 3, 3)
    oracle = ChainModel(3).bind(X, Y)
    clone = pickle.loads(pickle.dumps(oracle))
    assert isinstance(clone, ChainOracle)
    assert (clone.n_blocks, clone.n_features, clone.max_labels, clone.max_psi_nnz,
            clone.needs_gil) == (oracle.n_blocks, oracle.n_features, oracle.max_labels,
                                 oracle.max_psi_nnz, oracle.needs_gil)
    for w in random_weights(rng, oracle.n_features):
        for i in range(oracle.n_blocks):
            for a, b in zip(clone.solve_py(i, w), oracle.solve_py(i, w)):
                np.testing.assert_array_equal(a, b)
            labels = rng.integers(0, 3, len(Y[i]))
            for a, b in zip(clone.evaluate_py(i, labels, w), oracle.evaluate_py(i, labels, w)):
                np.testing.assert_array_equal(a, b)


def test_pickle_round_trip_with_all_zero_features():
    X = [np.zeros((2, 3)), np.zeros((1, 3))]
    Y = [np.array([0, 1]), np.array([1])]
    oracle = ChainModel(2).bind(X, Y)
    clone = pickle.loads(pickle.dumps(oracle))
    w = np.random.default_rng(0).normal(size=oracle.n_features)
    for i in range(2):
        for a, b in zip(clone.solve_py(i, w), oracle.solve_py(i, w)):
            np.testing.assert_array_equal(a, b)
    problem = enumerate_problem(BruteForceOracle(ChainModel(2, 3), X, Y))
    check_oracle(oracle, problem, [w])


def test_the_oracle_runs_without_the_gil():
    """A long oracle call lets another Python thread run meanwhile.

    ``primal_objective`` makes one ``score_pass`` call, which releases the GIL
    for oracles with ``needs_gil == False``: here one Viterbi pass over a long
    sequence.  The main thread keeps time-stamping meanwhile; a kernel holding
    the GIL would freeze it for the whole call, leaving one gap as long as the
    call between consecutive stamps.
    """
    rng = np.random.default_rng(0)
    T, K = 400_000, 12
    X = [rng.normal(size=(T, 1))]
    Y = [rng.integers(0, K, T)]
    oracle = ChainModel(K).bind(X, Y)
    assert oracle.needs_gil is False
    w = rng.normal(size=oracle.n_features)
    window = {}

    def worker():
        window["start"] = time.perf_counter()
        primal_objective(oracle, 0.1, w)
        window["stop"] = time.perf_counter()

    thread = threading.Thread(target=worker)
    ticks = []
    thread.start()
    while thread.is_alive():
        ticks.append(time.perf_counter())
    thread.join()
    start, stop = window["start"], window["stop"]
    inside = np.array([start] + [t for t in ticks if start < t < stop] + [stop])
    longest_freeze = np.diff(inside).max()
    assert longest_freeze < 0.5 * (stop - start), (stop - start, longest_freeze)
