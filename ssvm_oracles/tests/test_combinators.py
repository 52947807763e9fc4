"""Oracle combinators: exactness against brute force, counting, the approximation guarantee."""

from __future__ import annotations

import itertools
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import DelegatingOracle

from ssvm_core import BruteForceOracle, PythonOracle, solve
from ssvm_core.testing import (
    EnumeratedProblem,
    check_oracle,
    enumerate_problem,
    random_chain_data,
    random_multiclass_data,
    scaled_examples,
)
from ssvm_data.synthetic import matching
from ssvm_oracles import (
    ApproximateOracle,
    ChainModel,
    CountingOracle,
    DispatchOracle,
    EnumerationModel,
    MatchingModel,
    MulticlassModel,
    ProductOracle,
)


class _Part:
    """A bound tiny problem: Cython oracle, Python brute force, enumeration, truths."""

    def __init__(self, model, X, Y):
        self.model, self.X, self.Y = model, X, Y
        self.oracle = model.bind(X, Y)
        self.brute = BruteForceOracle(model, X, Y)
        self.enum = enumerate_problem(self.brute)


def _part(kind: str, n: int, rng, d_matching: int = 2) -> _Part:
    if kind == "chain":
        X, Y = random_chain_data(rng, n, 3, 2, 1)
        return _Part(ChainModel(2, 1), X, Y)
    if kind == "multiclass":
        X, Y = random_multiclass_data(rng, n, 2, 3)
        return _Part(MulticlassModel(3, 2), X, Y)
    X, Y = matching(n, length=(1, 3), n_features=max(d_matching, 3), band=1.0,
                    random_state=rng)
    if d_matching < 3:                 # keep the first features only
        X = [(a, b, e, f[:, :d_matching]) for a, b, e, f in X]
    return _Part(MatchingModel(), X, Y)


def _weights(rng, d):
    return [rng.normal(size=d) * s for s in (0.1, 1.0, 4.0)]


def _product_problem(parts: list[_Part]) -> tuple[EnumeratedProblem, list]:
    """Enumerate the product directly: every tuple of the parts' candidates."""
    psi, loss, cands = [], [], []
    for i in range(parts[0].enum.n_blocks):
        rows = list(itertools.product(*(range(len(p.enum.candidates[i])) for p in parts)))
        psi.append(np.array([np.concatenate([p.enum.psi[i][k] for p, k in zip(parts, r)])
                             for r in rows]))
        loss.append(np.array([sum(p.enum.loss[i][k] for p, k in zip(parts, r)) for r in rows]))
        cands.append([_join([p.enum.candidates[i][k] for p, k in zip(parts, r)]) for r in rows])
    truths = [_join([np.atleast_1d(p.Y[i]) for p in parts]) for i in range(len(parts[0].Y))]
    return EnumeratedProblem(psi, loss, cands), truths


def _join(labellings) -> np.ndarray:
    return np.concatenate([[len(y) for y in labellings], *labellings]).astype(np.int32)


@st.composite
def product_parts(draw):
    kinds = draw(st.lists(st.sampled_from(["chain", "multiclass", "matching"]),
                          min_size=1, max_size=3))
    n = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    python = draw(st.lists(st.booleans(), min_size=len(kinds), max_size=len(kinds)))
    return [_part(k, n, rng) for k in kinds], python, rng


@settings(max_examples=scaled_examples(40))
@given(product_parts())
def test_product_equals_brute_force_on_the_product(data):
    parts, python, rng = data
    oracles = [p.brute if py else p.oracle for p, py in zip(parts, python)]
    product = ProductOracle(oracles)
    assert product.needs_gil == any(python)
    assert product.dense_psi == all(p.oracle.dense_psi and not py
                                    for p, py in zip(parts, python))
    problem, truths = _product_problem(parts)
    check_oracle(product, problem, _weights(rng, product.n_features), ground_truth=truths,
                 atol=1e-10, check_labels=False)


@st.composite
def dispatch_parts(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    chain_a, chain_b = _part("chain", 2, rng), _part("chain", 3, rng)
    d = chain_a.oracle.n_features
    parts = [chain_a, chain_b, _part("matching", 2, rng, d_matching=d)]
    n = draw(st.integers(1, 6))
    blocks = [(c, int(rng.integers(parts[c].oracle.n_blocks)))
              for c in rng.integers(len(parts), size=n)]
    return parts, blocks, draw(st.booleans()), rng


@settings(max_examples=scaled_examples(40))
@given(dispatch_parts())
def test_dispatch_equals_the_chosen_oracle(data):
    parts, blocks, python_first, rng = data
    oracles = [p.oracle for p in parts]
    if python_first:
        oracles[0] = parts[0].brute
    dispatch = DispatchOracle(oracles, blocks)
    assert dispatch.needs_gil == python_first and not dispatch.dense_psi
    for w in _weights(rng, dispatch.n_features):
        for i, (c, b) in enumerate(blocks):
            got = dispatch.solve_py(i, w)
            want = PythonOracle(parts[c].brute).solve_py(b, w) if (python_first and c == 0) \
                else parts[c].oracle.solve_py(b, w)
            np.testing.assert_array_equal(got[0], want[0])
            np.testing.assert_allclose(got[1], want[1], atol=1e-12)
            assert got[2:] == pytest.approx(want[2:], abs=1e-12)
    problem = EnumeratedProblem([parts[c].enum.psi[b] for c, b in blocks],
                                [parts[c].enum.loss[b] for c, b in blocks],
                                [parts[c].enum.candidates[b] for c, b in blocks])
    truths = [np.atleast_1d(parts[c].Y[b]) for c, b in blocks]
    check_oracle(dispatch, problem, _weights(rng, dispatch.n_features), ground_truth=truths,
                 check_labels=False)


def test_dispatch_default_blocks_concatenate_the_parts():
    rng = np.random.default_rng(0)
    a, b = _part("chain", 2, rng), _part("chain", 3, rng)
    dispatch = DispatchOracle([a.oracle, b.oracle])
    np.testing.assert_array_equal(dispatch.blocks, [[0, 0], [0, 1], [1, 0], [1, 1], [1, 2]])
    assert dispatch.dense_psi is False and dispatch.needs_gil is False


def test_counting_counts_and_is_transparent_in_the_solver():
    rng = np.random.default_rng(1)
    part = _part("chain", 4, rng)
    counting = CountingOracle(part.oracle, timing=True)
    plain = solve(part.oracle, 0.1, max_passes=5, gap_check_every=2, random_state=3)
    counted = solve(counting, 0.1, max_passes=5, gap_check_every=2, random_state=3)
    np.testing.assert_array_equal(plain.w, counted.w)
    assert counting.n_solve == counted.history[-1]["oracle_calls"]
    assert counting.solve_calls.sum() == counting.n_solve and counting.n_evaluate == 0
    assert np.all(counting.solve_seconds >= 0) and not np.any(counting.evaluate_seconds)
    counting.reset()
    w = rng.normal(size=part.oracle.n_features)
    counting.solve_py(2, w)
    counting.solve_py(2, w)
    counting.evaluate_py(1, part.Y[1], w)
    np.testing.assert_array_equal(counting.solve_calls, [0, 0, 2, 0])
    np.testing.assert_array_equal(counting.evaluate_calls, [0, 1, 0, 0])
    untimed = CountingOracle(part.brute)
    assert untimed.needs_gil and not untimed.timing
    untimed.solve_py(0, w)
    assert untimed.n_solve == 1 and not np.any(untimed.solve_seconds)


@st.composite
def approximate_setting(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    part = _part(draw(st.sampled_from(["chain", "multiclass", "matching"])), 2, rng)
    nu = draw(st.sampled_from([1.0, 0.9, 0.5, 0.1]))
    return part, nu, draw(st.integers(1, 3)), rng


@settings(max_examples=scaled_examples(40))
@given(approximate_setting())
def test_approximate_oracle_meets_its_guarantee(data):
    part, nu, memory, rng = data
    approx = ApproximateOracle(part.oracle, nu, memory=memory)
    for _t in range(12):
        w = rng.normal(size=approx.n_features) * rng.choice([0.1, 1.0, 3.0])
        for i in range(approx.n_blocks):
            labels, psi, _loss, score = approx.solve_py(i, w)
            H = part.enum.scores(i, w)
            k = part.enum.index(i, labels)
            assert score >= nu * H.max() - 1e-10
            assert score == pytest.approx(H[k], abs=1e-10)
            np.testing.assert_allclose(psi, part.enum.psi[i][k], atol=1e-12)
            if nu == 1.0:
                assert score == pytest.approx(H.max(), abs=1e-10)
    if nu == 1.0:
        assert not approx.approximate_answers.any()
    check_oracle(approx, part.enum, _weights(rng, approx.n_features), nu=nu,
                 deterministic=False, check_labels=False, Y=part.Y)


def test_approximate_oracle_does_return_worse_answers():
    rng = np.random.default_rng(5)
    part = _part("multiclass", 3, rng)
    approx = ApproximateOracle(part.oracle, 0.5, memory=2)
    worse = 0
    for _ in range(30):
        w = rng.normal(size=approx.n_features)
        for i in range(3):
            score = approx.solve_py(i, w)[3]
            worse += score < part.enum.scores(i, w).max() - 1e-12
    assert worse == approx.approximate_answers.sum() > 0


def test_python_and_cython_parts_give_the_same_solver_result():
    rng = np.random.default_rng(2)
    parts = [_part("chain", 3, rng), _part("multiclass", 3, rng)]
    fast = ProductOracle([p.oracle for p in parts])
    slow = ProductOracle([p.brute for p in parts])
    assert not fast.needs_gil and slow.needs_gil
    a = solve(fast, 0.05, max_passes=8, gap_check_every=4, random_state=0)
    b = solve(slow, 0.05, max_passes=8, gap_check_every=4, random_state=0)
    np.testing.assert_allclose(a.w, b.w, rtol=1e-9, atol=1e-12)
    assert a.gap == pytest.approx(b.gap, rel=1e-8, abs=1e-12)


def test_pickle_round_trips():
    rng = np.random.default_rng(3)
    a, b = _part("chain", 2, rng), _part("multiclass", 2, rng)
    w = rng.normal(size=a.oracle.n_features + b.oracle.n_features)
    for oracle in (CountingOracle(a.oracle, timing=True), ApproximateOracle(a.oracle, 0.5, 2),
                   ProductOracle([a.oracle, b.brute]), DispatchOracle([a.oracle, a.brute])):
        clone = pickle.loads(pickle.dumps(oracle))
        v = w[:oracle.n_features]
        np.testing.assert_array_equal(clone.solve_py(1, v)[1], oracle.solve_py(1, v)[1])


def test_bad_combinations_raise_clear_errors():
    rng = np.random.default_rng(4)
    a, b = _part("chain", 2, rng), _part("chain", 3, rng)
    m = _part("multiclass", 2, rng)
    with pytest.raises(ValueError, match="equal n_blocks"):
        ProductOracle([a.oracle, b.oracle])
    with pytest.raises(ValueError, match="non-empty sequence"):
        ProductOracle([])
    with pytest.raises(ValueError, match="equal n_features"):
        DispatchOracle([a.oracle, m.oracle])
    with pytest.raises(ValueError, match="names no block"):
        DispatchOracle([a.oracle, b.oracle], [(0, 2)])
    with pytest.raises(ValueError, match=r"nu must be in \(0, 1\]"):
        ApproximateOracle(a.oracle, 0.0)
    product = ProductOracle([a.oracle, m.oracle])
    w = np.zeros(product.n_features)
    with pytest.raises(ValueError, match="part lengths"):
        product.evaluate_py(0, [len(a.Y[0]), 1, *a.Y[0]], w)
    with pytest.raises(ValueError, match="starts with the 2 part lengths"):
        product.evaluate_py(0, [1], w)


def test_enumeration_model():
    def phi(x, y):
        out = np.zeros(4)
        out[2 * y[0] + y[1]] = x
        return out

    cands = [[a, b] for a in range(2) for b in range(2)]
    model = EnumerationModel(phi, 4, cands, loss=lambda t, p: float(np.sum(t != p)))
    X, Y = [1.0, -2.0, 0.5], [[0, 1], [1, 1], [0, 0]]
    oracle = model.bind(X, Y)
    check_oracle(oracle, weights=_weights(np.random.default_rng(0), 4), Y=Y)
    w = np.array([0.0, 3.0, -1.0, 2.0])
    assert [list(p) for p in model.predict(X, w)] == [[0, 1], [1, 0], [0, 1]]
    assert model.loss([0, 1], [1, 1]) == 1.0
    per_input = EnumerationModel(phi, 4, lambda x: cands[:2])
    assert per_input.loss([0, 1], [0, 1]) == 0.0 and per_input.loss([0, 1], [0, 0]) == 1.0
    with pytest.raises(ValueError, match="not one of the candidate"):
        per_input.bind([1.0], [[1, 1]])
    with pytest.raises(ValueError, match="expected \\(4,\\)"):
        EnumerationModel(lambda x, y: np.zeros(3), 4, cands).bind([1.0], [[0, 0]])


# --- solve_many passes through every wrapper -------------------------------------------

class _KBest(DelegatingOracle):
    """Exact k best labellings by enumeration: a Python oracle with ``solve_many``
    (ties in the order of the enumeration, as ``BruteForceOracle.solve``)."""

    def solve_many(self, i, w, k):
        order = np.argsort(-self.inner.scores(i, w), kind="stable")[:k]
        cands = self.inner.candidates(i)
        return [(cands[j], *self.inner.evaluate(i, cands[j], w)) for j in order]


def _same_answers(got, want, atol=1e-12):
    assert len(got) == len(want)
    for g, e in zip(got, want):
        np.testing.assert_array_equal(g[0], e[0])
        np.testing.assert_allclose(g[1], e[1], atol=atol)
        assert g[2:] == pytest.approx(e[2:], abs=atol)


def _check_against(problem: EnumeratedProblem, i, w, answers, k, exact_k_best: bool):
    """Distinct candidates with the enumerated psi, loss and score; the first is the max;
    with ``exact_k_best`` the scores are the k largest of the enumeration."""
    H = problem.scores(i, w)
    rows = [problem.index(i, labels) for labels, *_ in answers]
    assert len(set(rows)) == len(rows) and 1 <= len(rows) <= k
    for (_labels, psi, loss, score), r in zip(answers, rows):
        np.testing.assert_allclose(psi, problem.psi[i][r], atol=1e-10)
        assert loss == pytest.approx(problem.loss[i][r], abs=1e-10)
        assert score == pytest.approx(H[r], abs=1e-10)
    assert answers[0][3] == pytest.approx(H.max(), abs=1e-10)
    scores = [a[3] for a in answers]
    assert all(a >= b - 1e-12 for a, b in itertools.pairwise(scores))
    if exact_k_best:
        assert len(rows) == min(k, len(H))
        np.testing.assert_allclose(scores, np.sort(H)[::-1][:len(rows)], atol=1e-10)


@pytest.mark.parametrize("kind", ["chain", "multiclass", "matching"])
def test_counting_oracle_passes_solve_many_on(kind):
    rng = np.random.default_rng(5)
    part = _part(kind, 3, rng)
    for inner, exact in ((part.oracle, False), (PythonOracle(_KBest(part.brute)), True)):
        for timing in (False, True):
            counting = CountingOracle(inner, timing=timing)
            for w in _weights(rng, counting.n_features):
                for i in range(counting.n_blocks):
                    got = counting.solve_many_py(i, w, 4)
                    _same_answers(got, inner.solve_many_py(i, w, 4))
                    _check_against(part.enum, i, w, got, 4, exact)
            assert list(counting.solve_calls) == [3] * 3 and counting.n_evaluate == 0
            assert np.any(counting.solve_seconds > 0) == timing
    # the Cython chain oracle offers more than one answer: they reach the caller
    assert max(len(CountingOracle(part.oracle).solve_many_py(i, w, 4))
               for i in range(3)) > 1 or kind != "chain"


def test_counting_oracle_gives_the_solver_every_sample():
    rng = np.random.default_rng(2)
    part = _part("chain", 4, rng)
    plain = solve(part.oracle, 0.1, max_passes=4, n_samples=3, random_state=1)
    counted = solve(CountingOracle(part.oracle), 0.1, max_passes=4, n_samples=3,
                    random_state=1)
    np.testing.assert_array_equal(plain.w, counted.w)


@pytest.mark.parametrize("nu,memory", [(1.0, 1), (0.5, 2), (0.1, 3)])
def test_approximate_oracle_passes_solve_many_on(nu, memory):
    rng = np.random.default_rng(7)
    part = _part("chain", 3, rng)
    inner = PythonOracle(_KBest(part.brute))
    many = ApproximateOracle(inner, nu, memory=memory)
    twin = ApproximateOracle(inner, nu, memory=memory)      # same history, through solve
    for _t in range(8):
        w = rng.normal(size=many.n_features) * rng.choice([0.1, 1.0, 3.0])
        for i in range(many.n_blocks):
            got = many.solve_many_py(i, w, 5)
            _same_answers(got[:1], [twin.solve_py(i, w)])
            exact = inner.solve_many_py(i, w, 5)
            rest = [a for a in exact if a[3] <= got[0][3]
                    and not np.array_equal(a[0], got[0][0])]
            _same_answers(got[1:], rest)
            H = part.enum.scores(i, w)
            assert got[0][3] >= nu * H.max() - 1e-10
            rows = [part.enum.index(i, a[0]) for a in got]
            assert len(set(rows)) == len(rows)
            if nu == 1.0:
                _check_against(part.enum, i, w, got, 5, exact_k_best=True)
    np.testing.assert_array_equal(many.approximate_answers, twin.approximate_answers)
    assert many.approximate_answers.any() == (nu < 1.0)


def test_dispatch_oracle_passes_solve_many_on():
    rng = np.random.default_rng(3)
    a, b = _part("chain", 2, rng), _part("chain", 3, rng)
    m = _part("matching", 2, rng, d_matching=a.oracle.n_features)   # dense psi
    parts = [a, b, m]
    oracles = [a.oracle, PythonOracle(_KBest(b.brute)), m.oracle]
    blocks = [(0, 1), (1, 0), (2, 1), (1, 2), (0, 0), (2, 0)]
    dispatch = DispatchOracle(oracles, blocks)
    assert not dispatch.dense_psi
    for w in _weights(rng, dispatch.n_features):
        for i, (c, blk) in enumerate(blocks):
            got = dispatch.solve_many_py(i, w, 4)
            _same_answers(got, oracles[c].solve_many_py(blk, w, 4))
            _check_against(parts[c].enum, blk, w, got, 4, exact_k_best=c == 1)


@pytest.mark.parametrize("kinds", [("chain", "multiclass"), ("matching", "chain", "chain"),
                                   ("multiclass", "matching")])
def test_product_oracle_solve_many_is_the_k_best_of_the_product(kinds):
    rng = np.random.default_rng(11)
    parts = [_part(kind, 2, rng) for kind in kinds]
    problem, _ = _product_problem(parts)
    exact = ProductOracle([PythonOracle(_KBest(p.brute)) for p in parts])
    cython = ProductOracle([p.oracle for p in parts])
    for w in _weights(rng, exact.n_features):
        for i in range(exact.n_blocks):
            for k in (1, 2, 5, 9):
                _check_against(problem, i, w, exact.solve_many_py(i, w, k), k,
                               exact_k_best=True)
                got = cython.solve_many_py(i, w, k)
                _check_against(problem, i, w, got, k, exact_k_best=False)
                # the combination of the parts' own answers: the top sums of their scores
                lists = [p.oracle.solve_many_py(i, w[off:off + p.oracle.n_features], k)
                         for p, off in zip(parts, cython.feature_offsets)]
                sums = sorted((sum(a[3] for a in combo)
                               for combo in itertools.product(*lists)), reverse=True)
                np.testing.assert_allclose([a[3] for a in got], sums[:k], atol=1e-10)
