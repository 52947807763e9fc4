"""ChainModel with sparse token features and per-block supports (CoNLL-style chains)."""

from __future__ import annotations

import itertools
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from ssvm_core import BruteForceOracle, SolverState, duality_gap, solve
from ssvm_core.testing import (
    ToyChainModel,
    check_gaps,
    check_oracle,
    enumerate_problem,
    scaled_examples,
)
from ssvm_oracles import ChainModel


def sparse_sentences(rng, n, max_length, n_states, n_features, density=0.3, binary=True):
    """Sentences as CSR token x attribute matrices (some tokens may have no attribute)."""
    lengths = rng.integers(1, max_length + 1, size=n)
    X, Y = [], []
    for T in lengths:
        mask = rng.random((T, n_features)) < density
        values = np.ones((T, n_features)) if binary else rng.normal(size=(T, n_features))
        X.append(sp.csr_array(values * mask))
        Y.append(rng.integers(0, n_states, size=T).astype(np.int32))
    return X, Y


@st.composite
def sparse_chains(draw, max_length=4, max_states=3):
    """Tiny sparse chains (T <= 4, K <= 3, F <= 6): sizes and a seed only."""
    n = draw(st.integers(1, 3))
    K = draw(st.integers(2, max_states))
    F = draw(st.integers(1, 6))
    T = draw(st.integers(1, max_length))
    binary = draw(st.booleans())
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    X, Y = sparse_sentences(rng, n, T, K, F, density=draw(st.sampled_from([0.2, 0.5])),
                            binary=binary)
    return X, Y, K, F, rng, binary


def weights(rng, d):
    return [rng.normal(size=d) * s for s in (0.1, 1.0, 5.0)]


def dense(X):
    return [x.toarray() for x in X]


@settings(max_examples=scaled_examples(60))
@given(sparse_chains())
def test_sparse_chain_equals_brute_force(data):
    """solve and evaluate against enumeration, with an independent dense Python chain."""
    X, Y, K, F, rng, binary = data
    oracle = ChainModel(K, F, blocks="sparse").bind(X, Y)
    problem = enumerate_problem(ToyChainModel(K, F).bind(dense(X), Y))
    # Binary tokens with equal attributes can tie exactly: then any maximiser is right.
    check_oracle(oracle, problem, weights(rng, oracle.n_features), atol=1e-11,
                 check_labels=not binary)
    check_oracle(oracle, enumerate_problem(BruteForceOracle(ChainModel(K, F), X, Y)),
                 weights(rng, oracle.n_features), atol=1e-11, check_labels=not binary)


@settings(max_examples=scaled_examples(40))
@given(sparse_chains())
def test_sparse_features_equal_the_dense_model(data):
    """Identical answers (bit for bit) when the same features are given densely."""
    X, Y, K, F, rng, _ = data
    sparse = ChainModel(K, F, blocks="sparse").bind(X, Y)
    dense_oracle = ChainModel(K, F, blocks="dense").bind(dense(X), Y)
    assert dense_oracle.block_support(0) is None
    for w in weights(rng, sparse.n_features):
        for i in range(sparse.n_blocks):
            for a, b in zip(sparse.solve_py(i, w), dense_oracle.solve_py(i, w)):
                np.testing.assert_array_equal(a, b)
            labels = rng.integers(0, K, size=len(Y[i]))
            for a, b in zip(sparse.evaluate_py(i, labels, w),
                            dense_oracle.evaluate_py(i, labels, w)):
                np.testing.assert_array_equal(a, b)
        for a, b in zip(ChainModel(K, F).predict(X, w), ChainModel(K, F).predict(dense(X), w)):
            np.testing.assert_array_equal(a, b)
    for x, y in zip(X, Y):
        np.testing.assert_array_equal(ChainModel(K, F).joint_feature(x, y),
                                      ToyChainModel(K, F).joint_feature(x.toarray(), y))


@settings(max_examples=scaled_examples(40))
@given(sparse_chains())
def test_evaluate_agrees_with_solve_and_ground_truth_is_zero(data):
    X, Y, K, F, rng, _ = data
    oracle = ChainModel(K, F, blocks="sparse").bind(X, Y)
    for w in weights(rng, oracle.n_features):
        for i in range(oracle.n_blocks):
            labels, psi, loss, score = oracle.solve_py(i, w)
            psi_e, loss_e, score_e = oracle.evaluate_py(i, labels, w)
            np.testing.assert_array_equal(psi_e, psi)
            assert loss_e == loss and score_e == pytest.approx(score, abs=1e-12)
            assert score >= -1e-12                     # max_y H_i >= H_i(y_i) = 0
            psi0, loss0, score0 = oracle.evaluate_py(i, Y[i], w)
            assert not psi0.any() and loss0 == 0.0 and score0 == 0.0


@settings(max_examples=scaled_examples(40))
@given(sparse_chains())
def test_block_support_is_exactly_what_labellings_touch(data):
    """The support is the union of the nonzeros of psi_i(y) over all labellings y."""
    X, Y, K, F, _rng, _ = data
    oracle = ChainModel(K, F, blocks="sparse").bind(X, Y)
    problem = enumerate_problem(ToyChainModel(K, F).bind(dense(X), Y))
    for i in range(oracle.n_blocks):
        support = oracle.block_support(i)
        assert support.dtype == np.int32 and np.all(np.diff(support) > 0)
        touched = np.flatnonzero(np.any(problem.psi[i] != 0, axis=0))
        np.testing.assert_array_equal(support, touched)


def test_block_support_by_hand():
    """K = 2, F = 4: attributes 1 and 3 occur; d = 8 + 4 + 6."""
    x = sp.csr_array(np.array([[0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 2.0]]))
    oracle = ChainModel(2, 4, blocks="sparse").bind([x, x[[0]]], [[0, 1], [1]])
    np.testing.assert_array_equal(oracle.block_support(0),
                                  [2, 3, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17])
    # one token: no transition can occur
    np.testing.assert_array_equal(oracle.block_support(1), [2, 3, 12, 13, 14, 15, 16, 17])
    with pytest.raises(IndexError):
        oracle.block_support(2)


def test_sparse_blocks_default_follows_memory():
    rng = np.random.default_rng(0)
    X, Y = sparse_sentences(rng, 20, 5, 3, 400, density=0.01)
    assert ChainModel(3, blocks="sparse").bind(X, Y).sparse_blocks
    assert ChainModel(3).bind(X, Y).compact_blocks          # "auto": compact
    assert not ChainModel(3, blocks="dense").bind(X, Y).sparse_blocks
    with pytest.raises(ValueError, match="blocks must be one of"):
        ChainModel(3, blocks="packed")


def test_sparse_blocks_survive_pickling():
    rng = np.random.default_rng(1)
    X, Y = sparse_sentences(rng, 4, 4, 3, 30, density=0.1)
    oracle = ChainModel(3, blocks="sparse").bind(X, Y)
    clone = pickle.loads(pickle.dumps(oracle))
    assert clone.sparse_blocks
    for i in range(oracle.n_blocks):
        np.testing.assert_array_equal(clone.block_support(i), oracle.block_support(i))


@pytest.mark.parametrize("sampling", ["uniform", "gap"])
def test_bcfw_with_sparse_blocks_matches_dense_blocks(sampling):
    """Same block order: the sparse and dense block storage give the same iterates."""
    rng = np.random.default_rng(2)
    X, Y = sparse_sentences(rng, 12, 6, 3, 40, density=0.1)
    runs = {}
    for sparse_blocks in (True, False):
        oracle = ChainModel(3, blocks="sparse" if sparse_blocks else "dense").bind(X, Y)
        result = solve(oracle, 0.1, max_passes=6, gap_check_every=3, sampling=sampling,
                       random_state=0, tol=0)
        runs[sparse_blocks] = (oracle, result)
    (sparse_oracle, a), (_, b) = runs[True], runs[False]
    assert not a.state.dense_blocks and b.state.dense_blocks
    assert a.state.block_values.size < b.state.block_values.size
    np.testing.assert_allclose(a.w, b.w, rtol=1e-10, atol=1e-12)
    gaps = check_gaps(sparse_oracle, a.state)
    assert gaps.sum() == pytest.approx(duality_gap(sparse_oracle, a.state, averaged=False),
                                       abs=1e-10)
    for i in range(sparse_oracle.n_blocks):      # w_i lives on the block's support
        outside = np.setdiff1d(np.arange(sparse_oracle.n_features),
                               sparse_oracle.block_support(i))
        assert not a.state.block_vector(i)[outside].any()


def test_state_layout_uses_the_supports():
    rng = np.random.default_rng(3)
    X, Y = sparse_sentences(rng, 5, 4, 2, 50, density=0.05)
    oracle = ChainModel(2, blocks="sparse").bind(X, Y)
    state = SolverState.for_oracle(oracle, 0.1)
    sizes = [len(oracle.block_support(i)) for i in range(oracle.n_blocks)]
    np.testing.assert_array_equal(np.diff(state.block_ptr), sizes)
    np.testing.assert_array_equal(
        state.block_support,
        np.concatenate([oracle.block_support(i) for i in range(oracle.n_blocks)]))


def test_enumerate_labellings_of_a_sparse_sentence():
    x = sp.csr_array(np.eye(3))
    labels = list(ChainModel(2, 3).enumerate_labellings(x))
    assert {tuple(c) for c in labels} == set(itertools.product(range(2), repeat=3))
