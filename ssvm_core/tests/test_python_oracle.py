"""The Python-oracle adapter: validation, sparse psi forms, block supports.

Everything runs through pure-Python models (``ssvm_core.testing`` toy models
bound with ``BruteForceOracle``, or small oracles defined here).
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.sparse as sp

from ssvm_core import (
    BruteForceOracle,
    MaxOracle,
    PythonOracle,
    SolverState,
    as_oracle,
    labelling_key,
    primal_objective,
    solve,
)
from ssvm_core.testing import (
    ToyChainModel,
    ToyMulticlassModel,
    enumerate_problem,
    random_chain_data,
    random_multiclass_data,
)

# ---------------------------------------------------------------------------
# Small Python oracles
# ---------------------------------------------------------------------------


class FixedAnswer:
    """An oracle returning whatever it is told to (for validation tests)."""

    n_blocks = 2
    n_features = 4
    max_labels = 3

    def __init__(self, solve_answer=None, evaluate_answer=None, **attrs):
        self.solve_answer = solve_answer
        self.evaluate_answer = evaluate_answer
        for name, value in attrs.items():
            setattr(self, name, value)

    def solve(self, i, w):
        return self.solve_answer

    def evaluate(self, i, labels, w):
        return self.evaluate_answer


GOOD_PSI = np.array([1.0, 0.0, -2.0, 0.5])


def good_solve():
    return (np.array([1, 0], dtype=np.int32), GOOD_PSI, 0.5)


def multiclass_oracle(seed=0, n=4, F=3, K=3):
    rng = np.random.default_rng(seed)
    X, Y = random_multiclass_data(rng, n, F, K)
    return ToyMulticlassModel(K, F).bind(X, Y)


class PsiForm:
    """Wrap a Python oracle and return psi in another accepted form."""

    def __init__(self, inner, form):
        self.inner, self.form = inner, form
        self.n_blocks = inner.n_blocks
        self.n_features = inner.n_features
        self.max_labels = inner.max_labels
        if form == "tuple_duplicates":
            self.max_psi_nnz = 2 * inner.n_features

    def _convert(self, psi):
        psi = np.asarray(psi, dtype=float)
        idx = np.flatnonzero(psi)
        if self.form == "dense":
            return psi
        if self.form == "tuple":
            return (idx, psi[idx])
        if self.form == "tuple_list":
            return (idx.tolist(), psi[idx].tolist())
        if self.form == "csr_row":
            return sp.csr_matrix(psi[None, :])
        if self.form == "csr_array_row":
            return sp.csr_array(psi[None, :])
        if self.form == "csc_column":
            return sp.csc_matrix(psi[:, None])
        if self.form == "coo_row":
            return sp.coo_matrix(psi[None, :])
        if self.form == "tuple_reversed":        # indices in decreasing order
            return (idx[::-1], psi[idx][::-1])
        if self.form == "tuple_duplicates":      # every value split in two halves
            return (np.concatenate([idx, idx]), np.concatenate([psi[idx] / 2, psi[idx] / 2]))
        if self.form == "tuple_with_zeros":      # explicit zeros are allowed
            all_idx = np.arange(self.n_features)
            return (all_idx, psi)
        raise AssertionError(self.form)

    def solve(self, i, w):
        labels, psi, loss = self.inner.solve(i, w)
        return labels, self._convert(psi), loss

    def evaluate(self, i, labels, w):
        psi, loss = self.inner.evaluate(i, labels, w)
        return self._convert(psi), loss


# ---------------------------------------------------------------------------
# Construction and attributes
# ---------------------------------------------------------------------------


def test_as_oracle_wraps_python_objects_and_passes_max_oracles_through():
    bf = multiclass_oracle()
    wrapped = as_oracle(bf)
    assert isinstance(wrapped, PythonOracle)
    assert isinstance(wrapped, MaxOracle)
    assert wrapped.obj is bf
    assert as_oracle(wrapped) is wrapped
    assert wrapped.needs_gil
    assert not wrapped.dense_psi
    assert (wrapped.n_blocks, wrapped.n_features, wrapped.max_labels) == (4, 9, 1)
    assert wrapped.max_psi_nnz == wrapped.n_features


@pytest.mark.parametrize("missing", ["n_blocks", "n_features", "max_labels"])
def test_missing_integer_attribute_is_a_type_error(missing):
    class Broken(FixedAnswer):
        pass

    obj = Broken()
    setattr(Broken, missing, None)
    with pytest.raises(TypeError, match=f"integer attribute '{missing}'"):
        PythonOracle(obj)


def test_non_integer_attribute_is_a_type_error():
    with pytest.raises(TypeError, match="integer attribute 'n_features'"):
        PythonOracle(FixedAnswer(n_features=4.0))


@pytest.mark.parametrize("missing", ["solve", "evaluate"])
def test_missing_method_is_a_type_error(missing):
    class Broken:
        n_blocks, n_features, max_labels = 1, 2, 1

        def solve(self, i, w):
            return None

        def evaluate(self, i, labels, w):
            return None

    setattr(Broken, missing, None)
    with pytest.raises(TypeError, match=f"no method '{missing}'"):
        PythonOracle(Broken())


@pytest.mark.parametrize("attrs", [{"n_blocks": 0}, {"n_features": 0}, {"max_labels": -1}])
def test_empty_dimensions_are_rejected(attrs):
    with pytest.raises(ValueError, match="n_blocks >= 1, n_features >= 1"):
        PythonOracle(FixedAnswer(**attrs))


def test_numpy_integer_attributes_are_accepted():
    oracle = PythonOracle(FixedAnswer(n_blocks=np.int64(2), n_features=np.int32(4),
                                      solve_answer=good_solve()))
    assert oracle.n_blocks == 2 and oracle.n_features == 4


# ---------------------------------------------------------------------------
# Validation of every answer
# ---------------------------------------------------------------------------

W = np.array([0.5, -1.0, 0.25, 2.0])


def test_valid_answer_round_trips_through_solve_py():
    labels, psi, loss, score = PythonOracle(FixedAnswer(solve_answer=good_solve())).solve_py(0, W)
    np.testing.assert_array_equal(labels, [1, 0])
    assert labels.dtype == np.int32
    np.testing.assert_array_equal(psi, GOOD_PSI)
    assert loss == 0.5
    assert score == pytest.approx(0.5 - GOOD_PSI @ W, abs=1e-15)


@pytest.mark.parametrize("answer, message", [
    ((np.array([1]), np.ones(3), 0.5), r"psi has shape \(3,\), expected \(4,\)"),
    ((np.array([1]), np.ones((1, 4)), 0.5), r"psi has shape \(1, 4\), expected \(4,\)"),
    ((np.array([1]), np.array([1.0, np.nan, 0, 0]), 0.5), "non-finite"),
    ((np.array([1]), np.array([1.0, np.inf, 0, 0]), 0.5), "non-finite"),
    ((np.array([1]), GOOD_PSI, -0.1), "losses must be finite and >= 0"),
    ((np.array([1]), GOOD_PSI, np.nan), "losses must be finite and >= 0"),
    ((np.array([1]), GOOD_PSI, np.inf), "losses must be finite and >= 0"),
    ((np.array([0, 1, 2, 0]), GOOD_PSI, 0.5), "exceeds max_labels=3"),
    ((np.array([[0, 1]]), GOOD_PSI, 0.5), "must be 1-D"),
    ((np.array([0.0, 1.0]), GOOD_PSI, 0.5), "must hold integers"),
])
def test_invalid_solve_answers_raise_value_error_naming_the_problem(answer, message):
    oracle = PythonOracle(FixedAnswer(solve_answer=answer))
    with pytest.raises(ValueError, match=message) as info:
        oracle.solve_py(0, W)
    if "psi" in message or "losses" in message:
        assert "FixedAnswer.solve" in str(info.value)


@pytest.mark.parametrize("psi, message", [
    ((np.array([0, 4]), np.ones(2)), r"psi indices must be integers in \[0, 4\)"),
    ((np.array([-1, 2]), np.ones(2)), r"psi indices must be integers in \[0, 4\)"),
    ((np.array([0.0, 2.0]), np.ones(2)), r"psi indices must be integers in \[0, 4\)"),
    ((np.array([0, 1]), np.ones(3)), "1-D of equal length"),
    ((np.array([[0, 1]]), np.ones((1, 2))), "1-D of equal length"),
    ((np.array([0]), np.ones(1), np.ones(1)), r"\(indices, values\) pair"),
    ((np.array([0, 1]), np.array([1.0, np.nan])), "non-finite"),
    (sp.csr_matrix(np.ones((1, 5))), r"sparse psi has shape \(1, 5\)"),
    (sp.csr_matrix(np.ones((2, 4))), r"sparse psi has shape \(2, 4\)"),
    (sp.csr_matrix(np.array([[1.0, np.nan, 0, 0]])), "non-finite"),
])
def test_invalid_sparse_psi_forms(psi, message):
    oracle = PythonOracle(FixedAnswer(solve_answer=(np.array([1]), psi, 0.5)))
    with pytest.raises(ValueError, match=message):
        oracle.solve_py(0, W)


def test_too_many_nonzeros_for_declared_max_psi_nnz():
    oracle = PythonOracle(FixedAnswer(solve_answer=good_solve(), max_psi_nnz=2))
    assert oracle.max_psi_nnz == 2
    with pytest.raises(ValueError, match="3 nonzeros, more than max_psi_nnz=2"):
        oracle.solve_py(0, W)


@pytest.mark.parametrize("answer", [
    (np.array([1]), GOOD_PSI),
    (np.array([1]), GOOD_PSI, 0.5, 1.0),
    [np.array([1]), GOOD_PSI, 0.5],
    None,
])
def test_solve_must_return_a_triple(answer):
    oracle = PythonOracle(FixedAnswer(solve_answer=answer))
    with pytest.raises(ValueError, match=r"FixedAnswer.solve must return \(labels, psi, loss\)"):
        oracle.solve_py(0, W)


@pytest.mark.parametrize("answer", [(GOOD_PSI,), (GOOD_PSI, 0.5, 0.0), [GOOD_PSI, 0.5], 0.5])
def test_evaluate_must_return_a_pair(answer):
    oracle = PythonOracle(FixedAnswer(evaluate_answer=answer))
    with pytest.raises(ValueError, match=r"FixedAnswer.evaluate must return \(psi, loss\)"):
        oracle.evaluate_py(0, [1, 0], W)


def test_evaluate_validates_like_solve():
    oracle = PythonOracle(FixedAnswer(evaluate_answer=(np.ones(2), 0.5)))
    with pytest.raises(ValueError, match=r"FixedAnswer.evaluate: psi has shape \(2,\)"):
        oracle.evaluate_py(0, [1, 0], W)
    oracle = PythonOracle(FixedAnswer(evaluate_answer=(GOOD_PSI, -1.0)))
    with pytest.raises(ValueError, match="losses must be finite and >= 0"):
        oracle.evaluate_py(0, [1, 0], W)


def test_evaluate_py_passes_the_labelling_through():
    seen = []

    class Recorder(FixedAnswer):
        def evaluate(self, i, labels, w):
            seen.append((i, labels.copy(), np.array(w)))
            return GOOD_PSI, 1.5

    psi, loss, score = PythonOracle(Recorder()).evaluate_py(1, [2, 0, 1], W)
    (i, labels, w), = seen
    assert i == 1
    np.testing.assert_array_equal(labels, [2, 0, 1])
    assert labels.dtype == np.int32
    np.testing.assert_array_equal(w, W)
    np.testing.assert_array_equal(psi, GOOD_PSI)
    assert (loss, score) == (1.5, pytest.approx(1.5 - GOOD_PSI @ W, abs=1e-15))


def test_weights_reach_the_python_oracle_read_only():
    captured = {}

    class Capture(FixedAnswer):
        def solve(self, i, w):
            captured["writeable"] = w.flags.writeable
            captured["w"] = np.array(w)
            return good_solve()

    PythonOracle(Capture()).solve_py(0, W)
    assert captured["writeable"] is False
    np.testing.assert_array_equal(captured["w"], W)


@pytest.mark.parametrize("i", [-1, 2, 1.0, "0"])
def test_block_index_is_checked(i):
    oracle = PythonOracle(FixedAnswer(solve_answer=good_solve()))
    with pytest.raises(IndexError, match="outside"):
        oracle.solve_py(i, W)


def test_weight_shape_is_checked():
    oracle = PythonOracle(FixedAnswer(solve_answer=good_solve()))
    with pytest.raises(ValueError, match=r"w has shape \(3,\), expected \(4,\)"):
        oracle.solve_py(0, np.ones(3))


def test_exceptions_of_the_python_oracle_propagate_unchanged():
    class Boom(FixedAnswer):
        def solve(self, i, w):
            raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        PythonOracle(Boom()).solve_py(0, W)
    with pytest.raises(KeyError, match="boom"):
        solve(Boom(), 0.1, max_passes=1)


def test_failure_in_the_middle_of_a_pass_keeps_completed_steps_consistent():
    bf = multiclass_oracle(seed=3, n=5)
    calls = {"count": 0}

    class FailsLater:
        n_blocks, n_features, max_labels = bf.n_blocks, bf.n_features, bf.max_labels

        def solve(self, i, w):
            calls["count"] += 1
            if calls["count"] == bf.n_blocks + 3:      # after the initial gap pass + 2 steps
                raise RuntimeError("oracle failed")
            return bf.solve(i, w)

        def evaluate(self, i, labels, w):
            return bf.evaluate(i, labels, w)

    state = SolverState.for_oracle(as_oracle(bf), 0.1)
    with pytest.raises(RuntimeError, match="oracle failed"):
        solve(FailsLater(), 0.1, state=state, averaging=False, random_state=0)
    assert state.n_steps == 2
    blocks = sum(state.block_vector(i) for i in range(state.n_blocks))
    np.testing.assert_allclose(state.w, blocks, rtol=0, atol=1e-14)
    assert state.ell == pytest.approx(state.block_ell.sum(), abs=1e-15)
    # The state is still a valid starting point.
    result = solve(bf, 0.1, state=state, max_passes=5, tol=0, averaging=False)
    assert result.status == "max_passes"
    assert result.gap >= -1e-12


def test_python_oracle_pickles_with_its_object():
    bf = multiclass_oracle()
    oracle = as_oracle(bf)
    clone = pickle.loads(pickle.dumps(oracle))
    assert isinstance(clone, PythonOracle)
    w = np.linspace(-1, 1, bf.n_features)
    for i in range(bf.n_blocks):
        for a, b in zip(oracle.solve_py(i, w), clone.solve_py(i, w)):
            np.testing.assert_array_equal(a, b)


def test_labelling_key_is_the_int32_bytes():
    assert labelling_key([1, 2, 3]) == np.array([1, 2, 3], np.int32).tobytes()
    assert labelling_key(np.array([1, 2, 3], np.int64)) == labelling_key([1, 2, 3])
    assert labelling_key([1, 2]) != labelling_key([2, 1])


# ---------------------------------------------------------------------------
# BruteForceOracle
# ---------------------------------------------------------------------------


def test_brute_force_oracle_enumerates_and_decodes():
    rng = np.random.default_rng(5)
    X, Y = random_chain_data(rng, 3, 3, 2, 2)
    model = ToyChainModel(2, 2)
    bf = BruteForceOracle(model, X, Y)
    assert bf.n_blocks == 3 and bf.n_features == model.size_joint_feature
    assert bf.max_labels == max(len(y) for y in Y)
    w = rng.normal(size=bf.n_features)
    for i, (x, y) in enumerate(zip(X, Y)):
        cands = bf.candidates(i)
        assert len(cands) == 2 ** len(y)
        psi = bf.psi_matrix(i)
        np.testing.assert_allclose(psi, [model.joint_feature(x, y) - model.joint_feature(x, c)
                                         for c in cands])
        np.testing.assert_array_equal(bf.losses(i), [model.loss(y, c) for c in cands])
        np.testing.assert_allclose(bf.scores(i, w), bf.losses(i) - psi @ w)
        labels, psi_s, loss = bf.solve(i, w)
        k = int(np.argmax(bf.scores(i, w)))
        np.testing.assert_array_equal(labels, cands[k])
        psi_e, loss_e = bf.evaluate(i, cands[k], w)
        np.testing.assert_array_equal(psi_e, psi_s)
        assert loss_e == loss
        # the matrices are copies
        bf.psi_matrix(i)[:] = 99
        assert not np.any(bf.psi_matrix(i) == 99)


def test_brute_force_oracle_ties_go_to_the_first_labelling():
    X = [np.zeros((2, 1))]
    bf = BruteForceOracle(ToyChainModel(2, 1), X, [np.array([0, 0])])
    labels, _, loss = bf.solve(0, np.zeros(bf.n_features))
    np.testing.assert_array_equal(labels, [1, 1])     # loss 1, the only maximiser
    assert loss == 1.0
    bf = BruteForceOracle(ToyChainModel(3, 1), X, [np.array([0, 0])])
    labels, _, loss = bf.solve(0, np.zeros(bf.n_features))
    np.testing.assert_array_equal(labels, [1, 1])     # first of the four with loss 1
    assert loss == 1.0


def test_brute_force_oracle_errors():
    model = ToyMulticlassModel(2, 1)
    with pytest.raises(ValueError, match="X has 2 examples but Y has 1"):
        BruteForceOracle(model, [[1.0], [2.0]], [[0]])
    with pytest.raises(ValueError, match="empty"):
        BruteForceOracle(model, [], [])
    bf = BruteForceOracle(model, [[1.0]], [[0]])
    with pytest.raises(ValueError, match="not a candidate of block 0"):
        bf.evaluate(0, np.array([5], np.int32), np.zeros(2))
    with pytest.raises(ValueError, match="not a candidate"):
        as_oracle(bf).evaluate_py(0, [5], np.zeros(2))


def test_brute_force_oracle_with_custom_labellings():
    model = ToyMulticlassModel(3, 2)
    only_two = BruteForceOracle(model, [[1.0, 2.0]], [[0]],
                                labellings=lambda x: [np.array([0]), np.array([2])])
    assert len(only_two.candidates(0)) == 2
    labels, _, _ = only_two.solve(0, np.zeros(6))
    np.testing.assert_array_equal(labels, [2])


# ---------------------------------------------------------------------------
# Sparse psi forms give the same answers and the same solver runs
# ---------------------------------------------------------------------------

EXACT_FORMS = ["dense", "tuple", "tuple_list", "csr_row", "csr_array_row", "csc_column",
               "coo_row", "tuple_with_zeros"]
ROUNDED_FORMS = ["tuple_reversed", "tuple_duplicates"]


@pytest.mark.parametrize("form", EXACT_FORMS + ROUNDED_FORMS)
def test_psi_forms_give_the_same_oracle_answers(form):
    rng = np.random.default_rng(11)
    X, Y = random_chain_data(rng, 3, 3, 3, 2)
    bf = ToyChainModel(3, 2).bind(X, Y)
    reference, other = as_oracle(bf), as_oracle(PsiForm(bf, form))
    for _ in range(3):
        w = rng.normal(size=bf.n_features)
        for i in range(bf.n_blocks):
            ref, got = reference.solve_py(i, w), other.solve_py(i, w)
            np.testing.assert_array_equal(got[0], ref[0])
            np.testing.assert_allclose(got[1], ref[1], rtol=0, atol=1e-15)
            assert got[2] == ref[2]
            assert got[3] == pytest.approx(ref[3], rel=0, abs=1e-13)
            ref_e, got_e = reference.evaluate_py(i, ref[0], w), other.evaluate_py(i, ref[0], w)
            np.testing.assert_allclose(got_e[0], ref_e[0], rtol=0, atol=1e-15)
            assert got_e[1] == ref_e[1]
            assert got_e[2] == pytest.approx(ref_e[2], rel=0, abs=1e-13)


@pytest.mark.parametrize("batch", [False, True])
@pytest.mark.parametrize("form", EXACT_FORMS)
def test_psi_forms_give_identical_solver_runs(form, batch):
    bf = multiclass_oracle(seed=2, n=5, F=3, K=3)
    kwargs = {"batch": batch, "max_passes": 6, "tol": 0, "random_state": 4, "gap_check_every": 2}
    ref = solve(bf, 0.05, **kwargs)
    got = solve(PsiForm(bf, form), 0.05, **kwargs)
    np.testing.assert_array_equal(got.state.w, ref.state.w)
    np.testing.assert_array_equal(got.state.block_values, ref.state.block_values)
    np.testing.assert_array_equal(got.w, ref.w)
    assert got.gap == ref.gap
    assert [h["dual"] for h in got.history] == [h["dual"] for h in ref.history]


@pytest.mark.parametrize("form", ROUNDED_FORMS)
def test_reordered_or_duplicated_psi_entries_give_the_same_run_up_to_rounding(form):
    bf = multiclass_oracle(seed=2, n=5, F=3, K=3)
    kwargs = {"max_passes": 6, "tol": 0, "random_state": 4}
    ref = solve(bf, 0.05, **kwargs)
    got = solve(PsiForm(bf, form), 0.05, **kwargs)
    np.testing.assert_allclose(got.state.w, ref.state.w, rtol=1e-12, atol=1e-14)
    assert got.gap == pytest.approx(ref.gap, rel=1e-9, abs=1e-13)


# ---------------------------------------------------------------------------
# Block supports: sparse storage of w_i gives the same iterates as dense
# ---------------------------------------------------------------------------


class SupportedOracle(BruteForceOracle):
    """Brute force plus ``block_support``: the features any psi_i(y) can touch."""

    def __init__(self, *args, pad=0, **kwargs):
        super().__init__(*args, **kwargs)
        self.pad = pad

    def block_support(self, i):
        touched = np.flatnonzero(np.any(self._psi[i] != 0, axis=0))
        if self.pad:       # a superset of the touched features is fine too
            touched = np.union1d(touched, np.arange(min(self.pad, self.n_features)))
        return touched.astype(np.int32)


def sparse_multiclass(seed, n=5, F=4, K=3, density=0.5):
    rng = np.random.default_rng(seed)
    X, Y = random_multiclass_data(rng, n, F, K)
    X = X * (rng.random(X.shape) < density)
    X[:, 0] = np.where(np.all(X == 0, axis=1), 1.0, X[:, 0])    # no empty rows
    model = ToyMulticlassModel(K, F)
    return model, list(X), [np.atleast_1d(y) for y in Y]


@pytest.mark.parametrize("pad", [0, 3])
@pytest.mark.parametrize("options", [
    {}, {"sampling": "perm"}, {"batch": True}, {"line_search": False},
    {"averaging": False}, {"batch": True, "line_search": False},
])
def test_block_supports_give_the_same_iterates_as_dense_storage(options, pad):
    model, X, Y = sparse_multiclass(seed=7)
    dense = BruteForceOracle(model, X, Y)
    sparse = SupportedOracle(model, X, Y, pad=pad)
    supports = [sparse.block_support(i) for i in range(sparse.n_blocks)]
    assert sum(len(s) for s in supports) < sparse.n_blocks * sparse.n_features

    kwargs = dict(max_passes=8, tol=0, random_state=1, gap_check_every=3, **options)
    ref = solve(dense, 0.03, **kwargs)
    got = solve(sparse, 0.03, **kwargs)

    st = got.state
    assert not st.dense_blocks
    np.testing.assert_array_equal(st.block_ptr, np.concatenate([[0], np.cumsum(
        [len(s) for s in supports])]))
    np.testing.assert_array_equal(st.block_support, np.concatenate(supports))
    np.testing.assert_allclose(st.w, ref.state.w, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(got.w, ref.w, rtol=1e-13, atol=1e-15)
    for i in range(st.n_blocks):
        np.testing.assert_allclose(st.block_vector(i), ref.state.block_vector(i),
                                   rtol=1e-13, atol=1e-15)
        outside = np.setdiff1d(np.arange(st.n_features), supports[i])
        assert np.all(st.block_vector(i)[outside] == 0)
    np.testing.assert_allclose(st.block_ell, ref.state.block_ell, rtol=1e-13, atol=1e-15)
    assert got.gap == pytest.approx(ref.gap, rel=1e-10, abs=1e-14)
    for a, b in zip(got.history, ref.history):
        for key in ("dual", "gap", "primal", "gap_estimate"):
            if a.get(key) is not None:
                assert a[key] == pytest.approx(b[key], rel=1e-10, abs=1e-14)


def test_state_layout_must_match_the_oracle_supports():
    model, X, Y = sparse_multiclass(seed=7)
    dense = as_oracle(BruteForceOracle(model, X, Y))
    sparse = as_oracle(SupportedOracle(model, X, Y))
    state = SolverState.for_oracle(sparse, 0.1)
    state.check_compatible(sparse)
    with pytest.raises(ValueError, match="block supports differ|cannot continue on this oracle"):
        state.check_compatible(dense)
    with pytest.raises(ValueError, match="block supports differ|cannot continue on this oracle"):
        solve(dense, 0.1, state=state)
    with pytest.raises(ValueError, match="block supports differ|cannot continue on this oracle"):
        SolverState.for_oracle(dense, 0.1).check_compatible(sparse)


@pytest.mark.parametrize("support, message", [
    (np.array([2, 1]), "strictly increasing"),
    (np.array([1, 1]), "strictly increasing"),
    (np.array([0, 99]), r"indices in \[0, 12\)"),
    (np.array([-1, 0]), r"indices in \[0, 12\)"),
    (np.array([[0, 1]]), "1-D"),
])
def test_invalid_block_supports_are_rejected(support, message):
    model, X, Y = sparse_multiclass(seed=7)

    class BadSupport(BruteForceOracle):
        def block_support(self, i):
            return support if i == 1 else None

    with pytest.raises(ValueError, match=message):
        solve(BadSupport(model, X, Y), 0.1, max_passes=1)


def test_mixed_none_and_explicit_supports():
    model, X, Y = sparse_multiclass(seed=8)

    class Mixed(SupportedOracle):
        def block_support(self, i):
            return None if i % 2 else super().block_support(i)

    mixed = Mixed(model, X, Y)
    state = SolverState.for_oracle(as_oracle(mixed), 0.1)
    for i in range(state.n_blocks):
        size = state.block_ptr[i + 1] - state.block_ptr[i]
        assert size == (state.n_features if i % 2 else len(mixed.block_support(i)))
    ref = solve(BruteForceOracle(model, X, Y), 0.1, max_passes=5, tol=0, random_state=0)
    got = solve(mixed, 0.1, max_passes=5, tol=0, random_state=0)
    np.testing.assert_allclose(got.w, ref.w, rtol=1e-13, atol=1e-15)


def test_primal_objective_matches_enumeration_for_python_oracles():
    bf = multiclass_oracle(seed=4)
    problem = enumerate_problem(bf)
    rng = np.random.default_rng(0)
    for _ in range(5):
        w = rng.normal(size=bf.n_features)
        lam = float(rng.uniform(0.01, 1))
        expected = 0.5 * lam * w @ w + np.mean([problem.scores(i, w).max()
                                                for i in range(bf.n_blocks)])
        assert primal_objective(bf, lam, w) == pytest.approx(expected, rel=1e-13)
    with pytest.raises(ValueError, match="non-finite"):
        primal_objective(bf, 0.1, np.full(bf.n_features, np.nan))
    with pytest.raises(ValueError, match="w has shape"):
        primal_objective(bf, 0.1, np.zeros(2))
    with pytest.raises(ValueError, match="lam must be a finite positive number"):
        primal_objective(bf, 0.0, np.zeros(bf.n_features))
