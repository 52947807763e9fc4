"""A Python oracle receives a w it may keep: a read-only copy that owns its memory."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from ssvm_core import BruteForceOracle, dual_objective, solve
from ssvm_core.testing import (
    ToyMulticlassModel,
    enumerate_problem,
    primal_by_enumeration,
    random_multiclass_data,
)


def toy_oracle(seed: int = 0, n: int = 6):
    X, Y = random_multiclass_data(np.random.default_rng(seed), n, 3, 3)
    return BruteForceOracle(ToyMulticlassModel(3, 3), X, Y)


class KeepingOracle:
    """Forwards to a brute-force oracle and keeps every w it receives (no copy)."""

    def __init__(self, inner):
        self.inner = inner
        self.n_blocks, self.n_features = inner.n_blocks, inner.n_features
        self.max_labels = inner.max_labels
        self.kept: list[np.ndarray] = []
        self.copies: list[np.ndarray] = []

    def solve(self, i, w):
        self.kept.append(w)
        self.copies.append(np.array(w))
        return self.inner.solve(i, w)

    def evaluate(self, i, labels, w):
        return self.inner.evaluate(i, labels, w)


class MemoisingOracle(KeepingOracle):
    """Caches answers keyed on (i, the w it kept): wrong if w changed under it."""

    def __init__(self, inner):
        super().__init__(inner)
        self.memo: dict = {}
        self.hits = 0

    def solve(self, i, w):
        for key, (kept_w, answer) in self.memo.items():
            if key == i and np.array_equal(kept_w, w):
                self.hits += 1
                return answer
        answer = self.inner.solve(i, w)
        self.memo[i] = (w, answer)
        return answer


def test_kept_ws_stay_intact_and_equal_the_iterates_after_solve():
    oracle = KeepingOracle(toy_oracle())
    result = solve(oracle, 0.1, max_passes=5, gap_check_every=2, random_state=0)
    del result
    gc.collect()
    junk = [np.full(oracle.n_features, 7.0) for _ in range(1000)]    # reuse freed memory
    assert len(oracle.kept) > 0 and len(junk) == 1000
    for kept, copy in zip(oracle.kept, oracle.copies):
        assert not kept.flags.writeable and kept.flags.owndata
        np.testing.assert_array_equal(kept, copy)
    # distinct iterates reach the oracle as distinct arrays
    assert len({id(w) for w in oracle.kept}) == len(oracle.kept)


def test_the_last_gap_pass_sees_the_returned_plain_iterate():
    oracle = KeepingOracle(toy_oracle(1))
    result = solve(oracle, 0.1, averaging="plain", tol=0.0, max_passes=4, gap_check_every=4,
                   random_state=0)
    n = oracle.n_blocks
    for w in oracle.kept[-n:]:                  # the final gap pass: one call per block
        np.testing.assert_array_equal(w, result.w)


def test_a_memoising_oracle_gets_the_right_answers_and_a_true_certificate():
    inner = toy_oracle(2)
    problem = enumerate_problem(inner)
    lam = 0.05
    oracle = MemoisingOracle(inner)
    result = solve(oracle, lam, averaging="plain", tol=0.0, max_passes=12, gap_check_every=3,
                   random_state=0)
    # the exact gap computed independently, by enumeration
    primal = primal_by_enumeration(problem.psi, problem.loss, lam, result.w)
    exact = primal - dual_objective(result.state)
    assert result.gap == pytest.approx(exact, rel=1e-9, abs=1e-12)
    assert result.gap >= -1e-12
    # the same run with the plain oracle: identical iterates
    plain = solve(inner, lam, averaging="plain", tol=0.0, max_passes=12, gap_check_every=3,
                  random_state=0)
    np.testing.assert_array_equal(result.w, plain.w)
    assert result.gap == pytest.approx(plain.gap, rel=1e-12, abs=1e-15)

