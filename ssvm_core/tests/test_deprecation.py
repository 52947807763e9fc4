"""The old spelling "labeling" still works, with a DeprecationWarning, and gives the same."""

import numpy as np
import pytest
from strategies import DelegatingOracle

from ssvm_core import BruteForceOracle, StructuredModel
from ssvm_core.testing import ToyChainModel, ToyMulticlassModel, check_oracle, random_chain_data


class _OldSpelling(StructuredModel):
    """A user model written before the rename: it defines only enumerate_labelings."""

    def __init__(self, n_classes, n_features):
        self._toy = ToyMulticlassModel(n_classes, n_features)
        self.n_classes = n_classes

    @property
    def size_joint_feature(self):
        return self._toy.size_joint_feature

    def joint_feature(self, x, y):
        return self._toy.joint_feature(x, y)

    def loss(self, y_true, y_pred):
        return self._toy.loss(y_true, y_pred)

    def bind(self, X, Y):
        return BruteForceOracle(self, X, Y)

    def predict(self, X, w):
        return self._toy.predict(X, w)

    def enumerate_labelings(self, x):
        return [np.array([k], dtype=np.int32) for k in range(self.n_classes)][::-1]


def _keys(cands):
    return [np.asarray(c).tobytes() for c in cands]


def test_enumerate_labelings_alias_warns_and_matches():
    model = ToyChainModel(2, 1)
    x = np.zeros((3, 1))
    with pytest.warns(DeprecationWarning, match="enumerate_labellings"):
        old = model.enumerate_labelings(x)
    assert _keys(old) == _keys(model.enumerate_labellings(x))
    assert len(old) == 2 ** 3


def test_a_model_of_the_old_spelling_is_still_enumerated():
    model = _OldSpelling(3, 2)
    with pytest.warns(DeprecationWarning, match="_OldSpelling.enumerate_labelings"):
        cands = model.enumerate_labellings(None)
    assert [int(c[0]) for c in cands] == [2, 1, 0]
    X = np.eye(2)[[0, 1]]
    with pytest.warns(DeprecationWarning):
        oracle = BruteForceOracle(model, list(X), [[0], [1]])
    assert [int(c[0]) for c in oracle.candidates(0)] == [2, 1, 0]


def test_duck_typed_model_of_the_old_spelling():
    class Duck:
        size_joint_feature = 1

        def joint_feature(self, x, y):
            return np.array([float(y[0])])

        def loss(self, y_true, y_pred):
            return float(y_true[0] != y_pred[0])

        def enumerate_labelings(self, x):
            return [[0], [1]]

    with pytest.warns(DeprecationWarning, match="Duck.enumerate_labelings"):
        oracle = BruteForceOracle(Duck(), [None], [[1]])
    assert oracle.solve(0, np.array([-1.0]))[0].tolist() == [0]
    with pytest.raises(TypeError, match="enumerate_labellings"):
        BruteForceOracle(object(), [None], [[1]])


def test_labelings_keyword_is_a_deprecated_alias():
    model = ToyMulticlassModel(3, 2)
    X, Y = np.eye(2)[[0, 1]], [[0], [2]]

    def only_two(x):
        return [np.array([0], np.int32), np.array([2], np.int32)]

    new = BruteForceOracle(model, list(X), Y, labellings=only_two)
    with pytest.warns(DeprecationWarning, match="labellings"):
        old = BruteForceOracle(model, list(X), Y, labelings=only_two)
    assert _keys(old.candidates(1)) == _keys(new.candidates(1)) == _keys(only_two(None))
    with pytest.raises(TypeError, match="not both"):
        BruteForceOracle(model, list(X), Y, labellings=only_two, labelings=only_two)


def test_check_oracle_labelings_keyword_still_checks():
    rng = np.random.default_rng(0)
    X, Y = random_chain_data(rng, 3, 3, 2, 2)
    bf = BruteForceOracle(ToyChainModel(2, 2), X, Y)
    with pytest.warns(DeprecationWarning, match="labellings"):
        check_oracle(DelegatingOracle(bf), labelings=bf.candidates, Y=Y)
    with pytest.warns(DeprecationWarning), pytest.raises(AssertionError, match="not a max"):
        check_oracle(_ArgMin(bf), labelings=bf.candidates, weights=[rng.normal(size=bf.n_features)])


class _ArgMin(DelegatingOracle):
    """Returns the worst labelling: not a max oracle."""

    def solve(self, i, w):
        worst = self.inner.candidates(i)[int(np.argmin(self.inner.scores(i, w)))]
        return (worst, *self.inner.evaluate(i, worst, w))
