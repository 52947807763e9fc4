"""ssvm_core.testing.check_oracle without an explicit enumeration: what it accepts and catches."""

from __future__ import annotations

import numpy as np
import pytest
from strategies import DelegatingOracle

from ssvm_core import BruteForceOracle
from ssvm_core.testing import ToyChainModel, check_oracle, random_chain_data


@pytest.fixture
def toy():
    rng = np.random.default_rng(7)
    X, Y = random_chain_data(rng, 3, 3, 2, 2)
    model = ToyChainModel(2, 2)
    return model, X, Y, BruteForceOracle(model, X, Y)


class _SecondBest(DelegatingOracle):
    def solve(self, i, w):
        k = int(np.argsort(self.inner.scores(i, w))[-2])
        return self.inner.candidates(i)[k], self.inner.psi_matrix(i)[k], self.inner.losses(i)[k]


class _Flaky(DelegatingOracle):
    calls = 0

    def solve(self, i, w):
        self.calls += 1
        if self.calls % 2:
            return self.inner.solve(i, w)
        return _SecondBest.solve(self, i, w)


class _ShiftedTruth(DelegatingOracle):
    """Correct except for a nonzero psi of the ground truth."""

    def __init__(self, bf, Y):
        super().__init__(bf)
        self.Y = Y

    def evaluate(self, i, labels, w):
        psi, loss = self.inner.evaluate(i, labels, w)
        return (psi + 0.5, loss) if np.array_equal(labels, self.Y[i]) else (psi, loss)


def test_every_mode_accepts_a_correct_oracle(toy):
    model, X, Y, bf = toy
    check_oracle(bf)                                   # enumerates itself
    check_oracle(DelegatingOracle(bf), model=model, X=X, Y=Y)  # enumeration from the model
    check_oracle(DelegatingOracle(bf), Y=Y)                    # its own answers as references
    check_oracle(DelegatingOracle(bf), labellings=lambda i: bf.candidates(i)[::2], Y=Y)


def test_a_non_maximal_answer_is_caught_without_enumeration(toy):
    model, X, Y, bf = toy
    weights = [0.3 * np.random.default_rng(0).normal(size=bf.n_features)]
    with pytest.raises(AssertionError, match="solve is not a max"):
        check_oracle(_SecondBest(bf), weights=weights,
                     labellings=[bf.candidates(i) for i in range(3)])
    with pytest.raises(AssertionError, match="solve returned"):
        check_oracle(_SecondBest(bf), weights=weights, model=model, X=X, Y=Y)
    # within a factor nu of the max is what an approximate oracle promises
    with pytest.raises(AssertionError, match="below nu"):
        check_oracle(_SecondBest(bf), weights=weights, model=model, X=X, Y=Y, nu=0.999)


def test_unstable_answers_and_a_wrong_ground_truth_are_caught(toy):
    _model, _X, Y, bf = toy
    with pytest.raises(AssertionError, match="keys differ"):
        check_oracle(_Flaky(bf), Y=Y)
    with pytest.raises(AssertionError, match="ground truth .*: psi"):
        # at w = 0 solve maximises the loss, so its answers are never the ground truth
        check_oracle(_ShiftedTruth(bf, Y), weights=[np.zeros(bf.n_features)], Y=Y)


def test_bad_arguments(toy):
    model, X, Y, bf = toy
    with pytest.raises(ValueError, match="give X and Y"):
        check_oracle(bf, model=model, X=X)
    with pytest.raises(ValueError, match="nu must be"):
        check_oracle(bf, nu=1.5)
    with pytest.raises(ValueError, match="ground truths for 3 blocks"):
        check_oracle(DelegatingOracle(bf), Y=Y[:2])
