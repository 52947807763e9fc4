"""MatchingModel / MatchingOracle: brute force over all matchings, scipy at full size, inputs."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment

from ssvm_core import BruteForceOracle, as_oracle, solve
from ssvm_core.subgradient import subgradient_steps
from ssvm_core.testing import check_oracle, enumerate_problem, scaled_examples
from ssvm_data.synthetic import matching
from ssvm_oracles import MatchingModel, MatchingOracle


def _random_pair(rng, n_s, n_t, d, dense):
    if dense:
        return rng.normal(size=(n_s, n_t, d))
    mask = rng.random((n_s, n_t)) < 0.6
    edges = np.argwhere(mask)
    perm = rng.permutation(len(edges))             # any edge order is accepted
    return (n_s, n_t, edges[perm], rng.normal(size=(len(edges), d)))


@st.composite
def matching_data(draw):
    """Up to 3 tiny pairs (<= 4 x 4 nodes), dense or sparse candidates, random costs."""
    n = draw(st.integers(1, 3))
    d = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    model = MatchingModel(precision_cost=draw(st.sampled_from([1.0, 0.0, 2.5])),
                          recall_cost=draw(st.sampled_from([3.0, 1.0, 0.0])),
                          normalize=draw(st.booleans()))
    X, Y = [], []
    for _ in range(n):
        x = _random_pair(rng, draw(st.integers(1, 4)), draw(st.integers(1, 4)), d,
                         draw(st.booleans()))
        cands = list(model.enumerate_labellings(x))
        X.append(x)
        Y.append(cands[rng.integers(len(cands))])
    return model, X, Y, rng


def _weights(rng, d):
    return [np.zeros(d)] + [rng.normal(size=d) * s for s in (0.1, 1.0, 5.0)]


@settings(max_examples=scaled_examples(60))
@given(matching_data())
def test_oracle_equals_brute_force_over_all_matchings(data):
    model, X, Y, rng = data
    oracle = model.bind(X, Y)
    assert isinstance(oracle, MatchingOracle) and not oracle.needs_gil
    problem = enumerate_problem(BruteForceOracle(model, X, Y))
    check_oracle(oracle, problem, _weights(rng, oracle.n_features), Y=Y, atol=1e-10,
                 check_labels=False)       # ties between matchings are possible


def _matching_count(a, b):
    return sum(math.comb(a, k) * math.comb(b, k) * math.factorial(k) for k in range(min(a, b) + 1))


@settings(max_examples=scaled_examples(30))
@given(st.integers(1, 4), st.integers(1, 4), st.integers(0, 2 ** 32 - 1))
def test_enumeration_feature_map_and_loss_against_direct_formulas(n_s, n_t, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n_s, n_t, 2))
    model = MatchingModel(precision_cost=1.0, recall_cost=3.0)
    cands = list(model.enumerate_labellings(x))
    assert len(cands) == len({c.tobytes() for c in cands}) == _matching_count(n_s, n_t)
    y_true = cands[rng.integers(len(cands))]
    for y in cands:
        expected = sum((x[j, y[j]] for j in range(n_s) if y[j] >= 0), np.zeros(2))
        np.testing.assert_allclose(model.joint_feature(x, y), expected, atol=1e-12)
        true_edges = {(j, int(k)) for j, k in enumerate(y_true) if k >= 0}
        pred_edges = {(j, int(k)) for j, k in enumerate(y) if k >= 0}
        loss = (len(pred_edges - true_edges) + 3 * len(true_edges - pred_edges)) / n_s
        assert model.loss(y_true, y) == pytest.approx(loss, abs=1e-15)


@settings(max_examples=scaled_examples(30))
@given(matching_data())
def test_predict_is_the_maximum_weight_matching(data):
    model, X, Y, rng = data
    model.bind(X, Y)                           # infers n_features
    for w in _weights(rng, model.size_joint_feature):
        for x, y in zip(X, model.predict(X, w)):
            best = max(w @ model.joint_feature(x, c) for c in model.enumerate_labellings(x))
            assert w @ model.joint_feature(x, y) == pytest.approx(best, abs=1e-10)
            for j in np.flatnonzero(y >= 0):     # only edges with a positive score are kept
                single = np.where(np.arange(len(y)) == j, y, -1)
                assert w @ model.joint_feature(x, single) > 0


def _scipy_max_loss_augmented(model, x, y_true, w):
    """max_y H(y; w) by scipy's assignment on the padded square matrix."""
    n_s, n_t, edges, feats = x
    z = 1.0 / n_s
    gain = np.full((n_s, n_t), -np.inf)
    truth = y_true[edges[:, 0]] == edges[:, 1]
    gain[edges[:, 0], edges[:, 1]] = feats @ w + np.where(truth, -3.0 * z, 1.0 * z)
    # sources x (targets + one "unmatched" column per source), targets' dummies padded
    big = np.zeros((n_s + n_t, n_t + n_s))
    big[:n_s, :n_t] = np.where(np.isfinite(gain), gain, -1e9)
    big[:n_s, n_t:] = np.where(np.eye(n_s) > 0, 0.0, -1e9)
    rows, cols = linear_sum_assignment(big, maximize=True)
    best = big[rows, cols].sum()
    phi_true = model.joint_feature(x, y_true)
    return best + 3.0 * z * np.count_nonzero(y_true >= 0) - w @ phi_true


def test_oracle_matches_scipy_assignment_at_paper_size():
    X, Y = matching(12, random_state=3)        # 10-30 words, d = 82
    model = MatchingModel()
    oracle = model.bind(X, Y)
    rng = np.random.default_rng(0)
    for scale in (0.0, 0.3, 1.0, 3.0):
        w = scale * rng.normal(size=82)
        for i, (x, y) in enumerate(zip(X, Y)):
            labels, psi, loss, score = oracle.solve_py(i, w)
            assert score == pytest.approx(_scipy_max_loss_augmented(model, x, y, w), abs=1e-9)
            assert loss == pytest.approx(model.loss(y, labels))
            np.testing.assert_allclose(
                psi, model.joint_feature(x, y) - model.joint_feature(x, labels), atol=1e-12)
    check_oracle(oracle, Y=Y, check_labels=False)


def test_python_and_cython_oracles_give_the_same_solver_result():
    X, Y = matching(8, length=(3, 6), n_features=5, random_state=1)
    model = MatchingModel()
    runs = [solve(o, 0.1, max_passes=6, gap_check_every=3, random_state=4)
            for o in (model.bind(X, Y), BruteForceOracle(model, X, Y))]
    np.testing.assert_allclose(runs[0].w, runs[1].w, rtol=1e-9, atol=1e-12)
    assert runs[0].gap == pytest.approx(runs[1].gap, rel=1e-8, abs=1e-12)


def test_pickle_round_trip():
    X, Y = matching(3, length=(2, 5), n_features=4, random_state=2)
    oracle = MatchingModel(precision_cost=2.0, normalize=False).bind(X, Y)
    clone = pickle.loads(pickle.dumps(oracle))
    w = np.random.default_rng(0).normal(size=4)
    for i in range(3):
        a, b = oracle.solve_py(i, w), clone.solve_py(i, w)
        np.testing.assert_array_equal(a[0], b[0])
        assert a[2:] == b[2:]
    assert (clone.precision_cost, clone.recall_cost, clone.normalize) == (2.0, 3.0, False)


def test_unnormalised_loss_counts_edges():
    model = MatchingModel(normalize=False)
    assert model.loss(np.array([0, 1, -1]), np.array([1, -1, 2])) == 1 * 2 + 3 * 2


def test_bad_inputs_raise_clear_errors():
    model = MatchingModel()
    x = np.zeros((2, 3, 2))
    with pytest.raises(ValueError, match="one entry per source"):
        model.bind([x], [np.array([0])])
    with pytest.raises(ValueError, match="matched to two sources"):
        model.bind([x], [np.array([1, 1])])
    with pytest.raises(ValueError, match=r"in \[-1, 3\)"):
        model.bind([x], [np.array([0, 3])])
    with pytest.raises(ValueError, match="NaN"):
        MatchingModel().bind([np.full((2, 2, 1), np.nan)], [np.array([0, 1])])
    sparse = (2, 2, np.array([[0, 0], [1, 1]]), np.ones((2, 1)))
    with pytest.raises(ValueError, match=r"\(0, 1\) is not a candidate edge"):
        MatchingModel().bind([sparse], [np.array([1, -1])])
    with pytest.raises(ValueError, match="listed twice"):
        MatchingModel().bind([(2, 2, np.array([[0, 0], [0, 0]]), np.ones((2, 1)))],
                             [np.array([-1, -1])])
    with pytest.raises(ValueError, match="edges must join"):
        MatchingModel().bind([(2, 2, np.array([[0, 2]]), np.ones((1, 1)))], [np.array([-1, -1])])
    with pytest.raises(ValueError, match="feature array"):
        MatchingModel().bind([np.zeros((2, 2))], [np.array([-1, -1])])
    with pytest.raises(ValueError, match="expected 2"):
        MatchingModel(n_features=2).bind([np.zeros((1, 1, 3))], [np.array([-1])])
    oracle = MatchingModel().bind([sparse], [np.array([0, 1])])
    w = np.zeros(1)
    with pytest.raises(ValueError, match="2 entries"):
        oracle.evaluate_py(0, [0], w)
    with pytest.raises(ValueError, match="not a candidate edge"):
        oracle.evaluate_py(0, [1, -1], w)
    with pytest.raises(ValueError, match="matched twice"):
        MatchingModel().bind([x], [np.array([0, 1])]).evaluate_py(0, [2, 2], np.zeros(2))
    with pytest.raises(ValueError, match="outside"):
        oracle.evaluate_py(0, [0, 7], w)


def test_paper_scale_generator_is_learnable():
    X, Y = matching(60, random_state=0)
    model = MatchingModel()
    result = solve(model.bind(X, Y), 0.01, max_passes=20, gap_check_every=10, random_state=0)
    zero = model.mean_loss(Y, model.predict(X, np.zeros(82)))
    learned = model.mean_loss(Y, model.predict(X, result.w))
    assert learned < 0.5 * zero


def test_online_subgradient_steps_read_the_dense_psi_as_the_sparse_one():
    """The matching oracle's psi is dense (``dense_psi``): ``subgradient_steps`` on it makes
    the steps it makes on the same problem's brute force oracle (sparse psi, whose steps
    ``ssvm_core``'s tests check against the rule written out)."""
    rng = np.random.default_rng(5)
    model = MatchingModel(precision_cost=1.0, recall_cost=2.0)
    X = [rng.normal(size=(3, 3, 2)) for _ in range(4)]
    Y = [list(model.enumerate_labellings(x))[rng.integers(10)] for x in X]
    dense = model.bind(X, Y)
    assert dense.dense_psi and not dense.needs_gil
    runs = []
    for oracle in (dense, as_oracle(BruteForceOracle(model, X, Y))):
        d = oracle.n_features
        w, w_avg, velocity, clock = rng_start(d), np.zeros(d), np.zeros(d), np.array([1.0])
        positive = subgradient_steps(oracle, [0, 1, 2, 3, 1, 0, 2], 0.3, w, w_avg, velocity,
                                     clock, learning_rate=0.5, decay_exponent=1.0,
                                     decay_t0=2.0, momentum=0.4, averaging="squared")
        runs.append((w, w_avg, velocity, positive))
    for got, want in zip(runs[0][:3], runs[1][:3]):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert runs[0][3] == runs[1][3]


def rng_start(d):
    """The same nonzero starting w for both runs."""
    return np.random.default_rng(9).normal(size=d)
