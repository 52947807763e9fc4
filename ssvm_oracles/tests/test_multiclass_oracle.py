"""MulticlassModel / MulticlassOracle: brute force, costs, inputs, pickling."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ssvm_core import BruteForceOracle, primal_objective
from ssvm_core.testing import (
    ToyMulticlassModel,
    check_oracle,
    enumerate_problem,
    random_multiclass_data,
    scaled_examples,
)
from ssvm_oracles import MulticlassModel, MulticlassOracle


@st.composite
def multiclass_data(draw):
    """Random multiclass data with an optional random cost matrix: sizes and a seed."""
    n = draw(st.integers(1, 6))
    K = draw(st.integers(2, 5))
    F = draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    X, Y = random_multiclass_data(rng, n, F, K)
    if draw(st.booleans()):
        X = X * (rng.random(X.shape) < 0.5)        # exact zeros are skipped in psi
    cost = None
    if draw(st.booleans()):
        cost = rng.uniform(0.0, 3.0, size=(K, K))
        np.fill_diagonal(cost, 0.0)
    return X, Y, K, F, cost, rng


def weights(rng, d):
    return [rng.normal(size=d) * s for s in (0.1, 1.0, 5.0)]


@settings(max_examples=scaled_examples(60))
@given(multiclass_data())
def test_oracle_equals_brute_force(data):
    X, Y, K, _F, cost, rng = data
    model = MulticlassModel(K, cost=cost)
    oracle = model.bind(X, Y)
    assert isinstance(oracle, MulticlassOracle)
    problem = enumerate_problem(BruteForceOracle(model, X, Y))
    check_oracle(oracle, problem, weights(rng, oracle.n_features), atol=1e-12)


@settings(max_examples=scaled_examples(40))
@given(multiclass_data())
def test_oracle_equals_an_independent_python_model(data):
    X, Y, K, F, cost, rng = data
    oracle = MulticlassModel(K, cost=cost).bind(X, Y)
    toy = ToyMulticlassModel(K, F, cost)
    problem = enumerate_problem(toy.bind(list(X), [np.atleast_1d(y) for y in Y]))
    check_oracle(oracle, problem, weights(rng, oracle.n_features), atol=1e-12)


@settings(max_examples=scaled_examples(40))
@given(multiclass_data())
def test_predict_is_the_argmax_and_joint_feature_is_the_class_block(data):
    X, Y, K, F, cost, rng = data
    model = MulticlassModel(K, F, cost=cost)
    toy = ToyMulticlassModel(K, F, cost)
    for w in weights(rng, K * F):
        pred = model.predict(X, w)
        assert pred.dtype == np.int32 and pred.shape == (len(X),)
        for x, p in zip(X, pred):
            scores = [w @ model.joint_feature(x, k) for k in range(K)]
            assert scores[p] == max(scores)
        assert list(pred) == toy.predict(X, w)
    for x, y in zip(X, Y):
        for k in range(K):
            np.testing.assert_array_equal(model.joint_feature(x, k), toy.joint_feature(x, k))
            assert model.loss(y, k) == toy.loss(y, k)


def test_cost_matrix_drives_the_loss_augmented_argmax():
    """With w = 0 the oracle returns argmax_k cost[y_i, k] (first one on ties)."""
    cost = np.array([[0.0, 1.0, 3.0], [2.0, 0.0, 2.0], [0.5, 0.25, 0.0]])
    model = MulticlassModel(3, cost=cost)
    X = np.ones((3, 2))
    oracle = model.bind(X, [0, 1, 2])
    w = np.zeros(oracle.n_features)
    answers = [oracle.solve_py(i, w) for i in range(3)]
    assert [int(a[0][0]) for a in answers] == [2, 0, 0]
    assert [a[2] for a in answers] == [3.0, 2.0, 0.5]
    assert [a[3] for a in answers] == [3.0, 2.0, 0.5]
    assert model.mean_loss([0, 1, 2], [2, 2, 2]) == pytest.approx((3.0 + 2.0 + 0.0) / 3)
    assert model.loss([0], [2]) == 3.0
    with pytest.raises(ValueError, match="true classes but"):
        model.mean_loss([0, 1], [0])


def test_default_cost_is_zero_one():
    model = MulticlassModel(4)
    np.testing.assert_array_equal(model.cost, 1 - np.eye(4))


def test_joint_feature_layout():
    model = MulticlassModel(3, 2)
    assert model.size_joint_feature == 6
    np.testing.assert_array_equal(model.joint_feature([1.0, 2.0], 1), [0, 0, 1, 2, 0, 0])
    np.testing.assert_array_equal(model.joint_feature([1.0, 2.0], [2]), [0, 0, 0, 0, 1, 2])
    assert [list(c) for c in model.enumerate_labellings(None)] == [[0], [1], [2]]


def test_oracle_attributes_and_psi_sparsity():
    X = np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 0.0]])
    oracle = MulticlassModel(3).bind(X, [0, 1])
    assert (oracle.n_blocks, oracle.n_features, oracle.max_labels) == (2, 9, 1)
    assert oracle.max_psi_nnz == 4            # 2 x the most nonzeros of a row
    assert oracle.needs_gil is False and not oracle.dense_psi
    assert oracle.n_classes == 3 and oracle.n_inputs == 3
    w = np.zeros(9)
    labels, psi, loss, score = oracle.solve_py(0, w)
    assert labels[0] == 1
    np.testing.assert_array_equal(psi, [1, 0, 2, -1, 0, -2, 0, 0, 0])
    # An all-zero input has psi = 0 for every class.
    labels, psi, loss, score = oracle.solve_py(1, w)
    assert not psi.any() and loss == 1.0 and score == 1.0
    psi, loss, score = oracle.evaluate_py(0, [0], w)
    assert not psi.any() and loss == 0.0 and score == 0.0


@pytest.mark.parametrize("kwargs, message", [
    ({"n_classes": 1}, "n_classes must be an integer >= 2"),
    ({"n_classes": 2.5}, "n_classes must be an integer >= 2"),
    ({"n_classes": 3, "cost": np.ones((2, 2))}, r"cost has shape \(2, 2\), expected \(3, 3\)"),
    ({"n_classes": 2, "cost": [[0, 1], [1, 1]]}, "zero diagonal"),
    ({"n_classes": 2, "cost": [[0, -1], [1, 0]]}, "nonnegative"),
    ({"n_classes": 2, "cost": [[0, np.nan], [1, 0]]}, "finite"),
])
def test_model_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MulticlassModel(**kwargs)


@pytest.mark.parametrize("X, Y, message", [
    (np.ones(3), [0, 1, 0], r"X must be 2-D"),
    (np.ones((2, 2, 2)), [0, 1], r"X must be 2-D"),
    (np.ones((0, 2)), [], "X is empty"),
    (np.array([[1.0, np.nan], [0.0, 1.0]]), [0, 1], "NaN or infinite"),
    (np.array([[1.0, np.inf], [0.0, 1.0]]), [0, 1], "NaN or infinite"),
    (np.ones((2, 2)), [0], r"one class per example: 2 expected"),
    (np.ones((2, 2)), [0, 1, 1], r"one class per example: 2 expected"),
    (np.ones((2, 2)), [0, 3], r"classes outside \[0, 3\)"),
    (np.ones((2, 2)), [-1, 0], r"classes outside \[0, 3\)"),
    (np.ones((2, 2)), [0.0, 1.0], "integer classes, got dtype float64"),
    (np.ones((2, 2)), [True, False], "integer classes"),
    (np.ones((2, 2)), [], "one class per example"),
])
def test_bind_rejects_bad_input(X, Y, message):
    with pytest.raises(ValueError, match=message):
        MulticlassModel(3).bind(X, Y)


def test_feature_count_is_inferred_per_bind_and_enforced_when_given():
    model = MulticlassModel(2)
    with pytest.raises(ValueError, match="n_features is unknown"):
        _ = model.size_joint_feature
    model.bind(np.ones((2, 3)), [0, 1])
    assert model.n_features is None and model.n_features_in_ == 3
    assert model.size_joint_feature == 6
    # Another width rebinds (the constructor parameter was not overwritten) ...
    assert model.bind(np.ones((2, 4)), [0, 1]).n_features == 8
    assert model.n_features_in_ == 4
    # ... and predict names the width mismatch between inputs and weights.
    with pytest.raises(ValueError, match=r"w has shape \(8,\), expected \(10,\) for inputs "
                                         "with 2 classes and 5 features"):
        model.predict(np.ones((2, 5)), np.zeros(8))
    fixed = MulticlassModel(2, n_features=3)
    with pytest.raises(ValueError, match="X has 4 features, expected 3"):
        fixed.bind(np.ones((2, 4)), [0, 1])
    with pytest.raises(ValueError, match="X has 4 features, expected 3"):
        fixed.predict(np.ones((2, 4)), np.zeros(6))


def test_column_labels_are_accepted():
    X = np.random.default_rng(0).normal(size=(4, 2))
    a = MulticlassModel(3).bind(X, np.array([0, 1, 2, 1]))
    b = MulticlassModel(3).bind(X, np.array([[0], [1], [2], [1]]))
    np.testing.assert_array_equal(np.asarray(a.y), np.asarray(b.y))


def test_evaluate_checks_the_class():
    oracle = MulticlassModel(3).bind(np.ones((2, 2)), [0, 1])
    w = np.zeros(6)
    for labels in ([3], [-1], []):
        with pytest.raises(ValueError, match=r"one class in \[0, 3\)"):
            oracle.evaluate_py(0, labels, w)
    with pytest.raises(ValueError, match="exceeds max_labels=1"):
        oracle.evaluate_py(0, [0, 1], w)


def test_pickle_round_trip():
    rng = np.random.default_rng(2)
    X, Y = random_multiclass_data(rng, 6, 3, 4)
    cost = rng.uniform(0, 2, (4, 4))
    np.fill_diagonal(cost, 0)
    oracle = MulticlassModel(4, cost=cost).bind(X, Y)
    clone = pickle.loads(pickle.dumps(oracle))
    assert isinstance(clone, MulticlassOracle)
    np.testing.assert_array_equal(np.asarray(clone.cost), cost)
    for w in weights(rng, oracle.n_features):
        for i in range(6):
            for a, b in zip(clone.solve_py(i, w), oracle.solve_py(i, w)):
                np.testing.assert_array_equal(a, b)
            for k in range(4):
                for a, b in zip(clone.evaluate_py(i, [k], w), oracle.evaluate_py(i, [k], w)):
                    np.testing.assert_array_equal(a, b)
        assert primal_objective(clone, 0.1, w) == primal_objective(oracle, 0.1, w)


def test_labels_out_of_range_in_loss_and_score_are_errors():
    """Y = -1 used to wrap to the last class silently, Y + 50 gave a bare IndexError."""
    from ssvm_core import FrankWolfeSSVM

    rng = np.random.default_rng(3)
    X, Y = random_multiclass_data(rng, 12, 3, 3)
    model = MulticlassModel(3)
    svm = FrankWolfeSSVM(model, lam=0.1, max_passes=5, random_state=0).fit(X, Y)
    for bad in (np.full_like(Y, -1), Y + 50):
        with pytest.raises(ValueError, match=r"Y_true has classes outside \[0, 3\)"):
            svm.score(X, bad)
        with pytest.raises(ValueError, match=r"classes outside \[0, 3\)"):
            model.loss(bad[0], 0)
        with pytest.raises(ValueError, match=r"classes outside \[0, 3\)"):
            model.loss(0, bad[0])
        with pytest.raises(ValueError, match=r"classes outside \[0, 3\)"):
            model.joint_feature(X[0], bad[0])
    with pytest.raises(ValueError, match=r"Y_pred has classes outside \[0, 3\)"):
        model.mean_loss(Y, np.full_like(Y, 3))
    with pytest.raises(ValueError, match="must be one class, got 2 values"):
        model.loss([0, 1], 0)
    # In-range labels still give the cost-matrix loss.
    assert svm.score(X, Y) == pytest.approx(np.mean(svm.predict(X) == Y))


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_sparse_inputs_train_exactly_as_dense(fmt):
    """Sparse X is supported: same oracle answers, same fit, same predictions as dense X."""
    import scipy.sparse as sp

    from ssvm_core import FrankWolfeSSVM

    rng = np.random.default_rng(4)
    X, Y = random_multiclass_data(rng, 20, 6, 3)
    X = X * (rng.random(X.shape) < 0.4)
    Xs = sp.csr_matrix(X).asformat(fmt)
    model = MulticlassModel(3)
    dense, sparse = model.bind(X, Y), model.bind(Xs, Y)
    assert sparse.max_psi_nnz == 2 * int(np.max(np.count_nonzero(X, axis=1)))
    problem = enumerate_problem(BruteForceOracle(model, X, Y))
    check_oracle(sparse, problem, weights(rng, sparse.n_features), atol=1e-12)
    for w in weights(rng, dense.n_features):
        for i in range(len(Y)):
            a, b = dense.solve_py(i, w), sparse.solve_py(i, w)
            assert a[0][0] == b[0][0] and a[2:] == b[2:]
            np.testing.assert_array_equal(a[1], b[1])
    fit = {name: FrankWolfeSSVM(MulticlassModel(3), lam=0.05, max_passes=20, tol=0,
                                random_state=1).fit(data, Y) for name, data in
           (("dense", X), ("sparse", Xs))}
    np.testing.assert_array_equal(fit["dense"].w_, fit["sparse"].w_)
    np.testing.assert_array_equal(fit["dense"].predict(X), fit["sparse"].predict(Xs))
    assert fit["sparse"].score(Xs, Y) == fit["dense"].score(X, Y)
    bad = Xs.tocsr().copy()
    bad.data[0] = np.nan
    with pytest.raises(ValueError, match="NaN or infinite"):
        model.bind(bad, Y)


def test_full_rows_read_as_vectors_agree_with_the_gathered_columns():
    """Rows holding every input in order (a dense X) are read as contiguous vectors; the
    same rows with their columns listed in another order take the gathering loops."""
    rng = np.random.default_rng(9)
    n, F, K = 12, 7, 4
    X = rng.normal(size=(n, F))
    y = rng.integers(0, K, n).astype(np.int32)
    cost = 1.0 - np.eye(K)
    indptr = np.arange(0, n * F + 1, F, dtype=np.intp)
    ordered = np.tile(np.arange(F, dtype=np.int32), n)
    reverse = np.tile(np.arange(F - 1, -1, -1, dtype=np.int32), n)
    vectors = MulticlassOracle(F, indptr, ordered, X.ravel(), y, cost, "compact")
    gathered = MulticlassOracle(F, indptr, reverse, X[:, ::-1].ravel(), y, cost, "compact")
    assert vectors.dense_rows and not gathered.dense_rows
    for w in weights(rng, K * F):
        for i in range(n):
            np.testing.assert_allclose(vectors.coord_scores_py(i, w),
                                       gathered.coord_scores_py(i, w), rtol=1e-13)
            assert vectors.solve_py(i, w)[0][0] == gathered.solve_py(i, w)[0][0]
            e = rng.normal(size=K) * (rng.random(K) < 0.7)
            a, b = [np.zeros(K * F) for _ in range(2)], [np.zeros(K * F) for _ in range(2)]
            vectors.coord_add_py(i, e, a[0], a[1], 0.5)
            gathered.coord_add_py(i, e, b[0], b[1], 0.5)
            np.testing.assert_array_equal(a[0], b[0])      # one product per entry
            np.testing.assert_array_equal(a[1], b[1])
            np.testing.assert_array_equal(a[0], np.kron(e, X[i]))
